"""Collision detection on the external-torque estimate: per-joint thresholds with hysteresis (ROS-free).

The contact node (:mod:`robot_dynamics.ros.contact_node`, one joint state at a time) and the offline
``robot-dynamics contact`` command (:mod:`robot_dynamics.bag.contact`, a whole recording at once)
both detect collisions here, on the momentum observer's residual ``r``
(:mod:`robot_dynamics.dynamics.momentum_observer`):

* joint ``j`` enters **collision** at the first sample where ``|r_j| > threshold_j``;
* it leaves it at the first later sample where ``|r_j| < clear_ratio * threshold_j`` (hysteresis:
  ``0 < clear_ratio <= 1``, 1 = none), so a residual hovering at the threshold raises one event,
  not a burst;
* the arm is in collision while any joint is.

A first-order observer of gain ``K`` crosses ``threshold`` after a step of external torque ``T``
(``|T| > threshold``) in ``-ln(1 - threshold / |T|) / K`` seconds.

**Reversal-aware thresholds.** Where a joint is slow or reverses, its friction is not a function of
its velocity: it sticks, and static friction holds whatever it must, anywhere in ``[-F_c, F_c]``,
while the model's friction ``b(qd)`` passes through 0. That mismatch ``m_j`` enters ``r_j`` like an
external torque, through the observer's low-pass; away from reversals the model's error is much
smaller. With a per-joint allowance ``Δ_j`` (``reversal_thresholds``) the threshold becomes::

    θ_j(t) = θ_j + Δ_j z_j(t),    z_j = the indicator "joint j near a reversal" through the observer's filter

where an interval ``[t_k, t_{k+1}]`` is near a reversal when ``|qd_j| < v_j`` (``reversal_velocity``)
at either end or ``qd_j`` changes sign within it, and ``z`` follows the observer's discrete form (3)
with that indicator as input: ``z_{k+1} = a_k z_k + (1 - a_k) s_k``, ``a_k = exp(-K_j dt_k)``,
``z_0 = 0``. If ``|m_j| <= Δ_j`` near reversals and 0 elsewhere, its share of ``r_j`` is at most
``Δ_j z_j`` at every sample (the filter is positive and linear): the threshold grows exactly as far as
the mismatch can reach into ``r``, and decays after the reversal as the mismatch decays in ``r``. A
joint at rest is "near a reversal" (``z -> 1``): static friction can hold a push there, which no
estimate from the motors' torques can see.

**Thresholds from free motion**: with no contact, ``r`` is the model's error (and the measurement's
noise) seen through the observer. :func:`calibrate_thresholds`: the largest ``|r_j|`` over a recording
of free motion that covers the arm's working speeds, times a margin, is a threshold that this motion
never crosses. :func:`calibrate_reversal`: per joint ``e_j`` = the largest ``|r_j|`` away from
reversals (``z_j <= e^-4``: four time constants after one) and ``F_j`` = the least allowance with
``|r_j| <= e_j + F_j z_j`` at every sample; then ``θ_j = margin * max(e_j, REVERSAL_FLOOR * F_j)``
and ``Δ_j = margin * F_j``, so the recording stays below ``1 / margin`` of its thresholds. The
floor keeps the threshold away from reversals at least a tenth of the reversal allowance: the
model's error at speed varies between motions more than its maximum over one recording shows
(measured: up to 2.4 x between two excitation trajectories, docs/contact.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.dynamics.momentum_observer import decay, observer_gain, scan_recurrence
from robot_dynamics.errors import StateError
from robot_dynamics.model import FloatArray
from robot_dynamics.user_input import per_joint

#: Default clear level as a fraction of the threshold, and default calibration margin.
DEFAULT_CLEAR_RATIO = 0.5
DEFAULT_MARGIN = 2.0
#: Default speed below which a joint is near a reversal, rad/s (m/s).
DEFAULT_REVERSAL_VELOCITY = 0.05
#: Calibration: the threshold away from reversals is at least this share of the reversal allowance.
REVERSAL_FLOOR = 0.1
#: Calibration: a sample is away from reversals where ``z <= FAR`` (four time constants after one).
FAR = float(np.exp(-4.0))


def check_thresholds(values: ArrayLike, n: int, what: str = "thresholds") -> FloatArray:
    """``(n,)`` thresholds (N·m or N): one per joint, or one for all; each > 0 (``inf`` = never)."""
    th = per_joint(values, n, what)
    if np.isnan(th).any() or not (th > 0.0).all():
        raise StateError(f"{what}: every value must be > 0 (N·m or N; inf = never), got {th.tolist()}")
    return th


def check_reversal(values: ArrayLike, n: int, what: str) -> FloatArray:
    """``(n,)`` reversal thresholds (N·m, N) or velocities (rad/s, m/s): one per joint or one for all,
    each finite and ``>= 0`` (0 = no allowance / no band)."""
    v = per_joint(values, n, what)
    if not (np.isfinite(v).all() and (v >= 0.0).all()):
        raise StateError(f"{what}: every value must be finite and >= 0, got {v.tolist()}")
    return v


def check_clear_ratio(value: float, what: str = "clear_ratio") -> float:
    """The clear level's fraction of the threshold: ``0 < ratio <= 1``."""
    ratio = float(value)
    if not (0.0 < ratio <= 1.0):
        raise StateError(f"{what}: must be > 0 and <= 1 (the clear level / the threshold), got {value!r}")
    return ratio


@dataclass(frozen=True)
class Transition:
    """Joint ``joint`` (index) entered (``raised``) or left collision at ``sample``/``time``; ``magnitude``
    is its ``|r|`` there."""

    sample: int
    time: float
    joint: int
    raised: bool
    magnitude: float
    threshold: float
    clear_level: float


class CollisionDetector:
    """The hysteresis of the module doc, one residual ``r`` ``(n,)`` at a time (Python floats: a node's
    few joints cost less than array operations); with ``reversal_thresholds`` > 0 the thresholds grow
    near reversals (:meth:`update` then needs the velocities and the observer's decay factors)."""

    def __init__(
        self,
        thresholds: ArrayLike,
        clear_ratio: float = DEFAULT_CLEAR_RATIO,
        reversal_thresholds: ArrayLike = 0.0,
        reversal_velocity: ArrayLike = DEFAULT_REVERSAL_VELOCITY,
    ) -> None:
        self.thresholds = check_thresholds(thresholds, np.size(thresholds))
        n = self.thresholds.size
        self.clear_ratio = check_clear_ratio(clear_ratio)
        self.reversal_thresholds = check_reversal(reversal_thresholds, n, "reversal_thresholds")
        self.reversal_velocity = check_reversal(reversal_velocity, n, "reversal_velocity")
        self._active = [False] * n
        self.raised = 0
        self.reset()
        self._configured()

    def _configured(self) -> None:
        self._base = self.thresholds.tolist()
        self._extra = self.reversal_thresholds.tolist()
        self._band = self.reversal_velocity.tolist()
        self._reversals = bool((self.reversal_thresholds > 0.0).any())

    def configure(
        self,
        thresholds: ArrayLike | None = None,
        clear_ratio: float | None = None,
        reversal_thresholds: ArrayLike | None = None,
        reversal_velocity: ArrayLike | None = None,
    ) -> None:
        """New thresholds / clear ratio / reversal allowances and band (checked first; the joints'
        states and the reversal weights are kept)."""
        n = self.thresholds.size
        th = self.thresholds if thresholds is None else check_thresholds(thresholds, n)
        ratio = self.clear_ratio if clear_ratio is None else check_clear_ratio(clear_ratio)
        extra = (
            self.reversal_thresholds
            if reversal_thresholds is None
            else check_reversal(reversal_thresholds, n, "reversal_thresholds")
        )
        band = (
            self.reversal_velocity
            if reversal_velocity is None
            else check_reversal(reversal_velocity, n, "reversal_velocity")
        )
        self.thresholds, self.clear_ratio, self.reversal_thresholds, self.reversal_velocity = th, ratio, extra, band
        self._configured()

    def reset(self) -> None:
        """The joints out of collision, the reversal weights at 0."""
        self._active = [False] * self.thresholds.size
        self.restart()

    def restart(self) -> None:
        """The observer starts over (``r = 0``): the reversal weights at 0, no previous velocity; the
        joints' collision states are kept (the next residuals clear them)."""
        self._z = [0.0] * self.thresholds.size
        self._qd: list[float] | None = None

    @property
    def active(self) -> np.ndarray:
        """Whether each joint is in collision, ``(n,)`` bool."""
        return np.array(self._active, dtype=bool)

    @property
    def in_collision(self) -> bool:
        return any(self._active)

    @property
    def weights(self) -> FloatArray:
        """The reversal weights ``z`` ``(n,)`` after the last residual."""
        return np.array(self._z)

    def current_thresholds(self) -> FloatArray:
        """``θ + Δ z`` ``(n,)`` after the last residual."""
        return np.array([b + d * z for b, d, z in zip(self._base, self._extra, self._z, strict=True)])

    def _weigh(self, qd: FloatArray | None, a: FloatArray | None) -> None:
        """``z`` over the interval that ends at this residual (module docstring)."""
        if qd is None:
            raise StateError("reversal thresholds need the joint velocities of every residual")
        now = qd.tolist()
        before, self._qd = self._qd, now
        if before is None or a is None:  # the first sample of the observer: no interval yet
            return
        z = self._z
        for j, (v0, v1, aj, band) in enumerate(zip(before, now, a.tolist(), self._band, strict=True)):
            near = band > 0.0 and (abs(v0) < band or abs(v1) < band or v0 * v1 < 0.0)
            z[j] = aj * z[j] + (1.0 - aj) * near

    def update(
        self,
        r: FloatArray,
        sample: int = 0,
        time: float = 0.0,
        qd: FloatArray | None = None,
        decay: FloatArray | None = None,
    ) -> list[Transition]:
        """The joints whose state changes with this residual (usually none).

        ``qd``: the sample's joint velocities, ``decay``: the observer's ``exp(-K dt)`` ``(n,)`` of
        the interval that ends at it (None at the observer's first sample); both needed only with
        reversal thresholds.
        """
        out: list[Transition] = []
        active, ratio = self._active, self.clear_ratio
        if self._reversals:
            self._weigh(qd, decay)
            levels = [b + d * z for b, d, z in zip(self._base, self._extra, self._z, strict=True)]
        else:
            levels = self._base
        for j, (value, threshold) in enumerate(zip(r.tolist(), levels, strict=True)):
            magnitude = abs(value)
            if (magnitude < ratio * threshold) if active[j] else (magnitude > threshold):
                active[j] = not active[j]
                self.raised += active[j]
                out.append(Transition(sample, time, j, active[j], magnitude, threshold, ratio * threshold))
        return out


def near_reversal(qd: FloatArray, velocity: FloatArray) -> np.ndarray:
    """``(N - 1, n)`` whether each interval between the samples ``qd`` ``(N, n)`` is near a reversal:
    ``|qd| < velocity`` at either end, or a change of sign (never where ``velocity`` is 0)."""
    slow = np.abs(qd) < velocity
    return np.asarray(((slow[1:] | slow[:-1]) | (qd[1:] * qd[:-1] < 0.0)) & (velocity > 0.0))


def reversal_weights(t: FloatArray, qd: FloatArray, gain: ArrayLike, velocity: ArrayLike) -> FloatArray:
    """``z`` ``(N, n)`` at samples ``t`` ``(N,)`` s, velocities ``qd`` ``(N, n)``, observer gain ``K``:
    the near-reversal indicator through the observer's discrete filter (module docstring), all at once."""
    n = qd.shape[1]
    k = observer_gain(gain, n)
    band = check_reversal(velocity, n, "reversal_velocity")
    if qd.shape[0] < 2:
        return np.zeros(qd.shape)
    a, _ = decay(k, np.diff(np.asarray(t, dtype=np.float64))[:, None])
    return scan_recurrence(a, (1.0 - a) * near_reversal(qd, band), np.zeros(n))


def _levels(thresholds: ArrayLike, n: int, extra: ArrayLike | None, weights: FloatArray | None) -> FloatArray:
    """The thresholds ``(n,)``, or ``θ + Δ z`` ``(N, n)`` with reversal allowances and weights."""
    th = check_thresholds(thresholds, n)
    if extra is None or weights is None:
        return th
    return np.asarray(th + check_reversal(extra, n, "reversal_thresholds") * weights)


def collision_states(
    r: FloatArray,
    thresholds: ArrayLike,
    clear_ratio: float = DEFAULT_CLEAR_RATIO,
    reversal_thresholds: ArrayLike | None = None,
    weights: FloatArray | None = None,
) -> np.ndarray:
    """Whether each joint is in collision at each sample, ``(N, n)`` bool, for residuals ``r`` ``(N, n)``
    (with ``reversal_thresholds`` and the reversal ``weights`` ``(N, n)``: thresholds ``θ + Δ z``).

    The hysteresis vectorised: a joint is in collision where its latest decisive sample (above the
    threshold, or below the clear level) was above the threshold.
    """
    th = _levels(thresholds, r.shape[1], reversal_thresholds, weights)
    ratio = check_clear_ratio(clear_ratio)
    magnitude = np.abs(r)
    index = np.arange(r.shape[0])[:, None]
    last_above = np.maximum.accumulate(np.where(magnitude > th, index, -1), axis=0)
    last_below = np.maximum.accumulate(np.where(magnitude < ratio * th, index, -1), axis=0)
    return np.asarray(last_above > last_below)


def transitions(
    t: FloatArray,
    r: FloatArray,
    thresholds: ArrayLike,
    clear_ratio: float = DEFAULT_CLEAR_RATIO,
    reversal_thresholds: ArrayLike | None = None,
    weights: FloatArray | None = None,
) -> list[Transition]:
    """Every change of :func:`collision_states`, in time order (joint order within a sample); each
    with the threshold and clear level in force at its sample."""
    ratio = check_clear_ratio(clear_ratio)
    level = np.broadcast_to(_levels(thresholds, r.shape[1], reversal_thresholds, weights), r.shape)
    states = collision_states(r, thresholds, ratio, reversal_thresholds, weights)
    before = np.vstack([np.zeros((1, r.shape[1]), dtype=bool), states[:-1]])
    samples, joints = np.nonzero(states != before)
    return [
        Transition(int(k), float(t[k]), int(j), bool(states[k, j]), float(abs(r[k, j])), lv, ratio * lv)
        for k, j in zip(samples.tolist(), joints.tolist(), strict=True)
        for lv in (float(level[k, j]),)
    ]


def calibrate_thresholds(r: FloatArray, margin: float = DEFAULT_MARGIN) -> FloatArray:
    """``margin * max_k |r_kj|`` per joint over residuals of free motion ``(N, n)``; StateError if empty."""
    _check_calibration(r, margin)
    peak = np.max(np.abs(r), axis=0)
    return np.asarray(margin * np.maximum(peak, np.finfo(float).tiny))


def calibrate_reversal(
    r: FloatArray, weights: FloatArray, margin: float = DEFAULT_MARGIN
) -> tuple[FloatArray, FloatArray]:
    """``(θ, Δ)`` per joint from residuals ``r`` and reversal weights ``z`` ``(N, n)`` of free motion
    (module docstring): ``θ = margin * max(e, REVERSAL_FLOOR * F)``, ``Δ = margin * F`` with ``e`` the
    largest ``|r|`` where ``z <= FAR`` and ``F`` the least value with ``|r| <= e + F z`` everywhere.
    A joint never away from reversals (it did not move) gets ``Δ = 0`` and ``θ = margin * max |r|``."""
    _check_calibration(r, margin)
    if weights.shape != r.shape:
        raise StateError(f"weights: shape {weights.shape}, the residuals {r.shape}")
    magnitude = np.abs(r)
    far = weights <= FAR
    e = np.max(np.where(far, magnitude, 0.0), axis=0)
    excess = np.where(far, 0.0, (magnitude - e) / np.where(far, 1.0, weights))
    F = np.maximum(np.max(excess, axis=0), 0.0)
    never = ~far.any(axis=0)
    e = np.where(never, magnitude.max(axis=0), e)
    F = np.where(never, 0.0, F)
    base = np.maximum(np.maximum(e, REVERSAL_FLOOR * F), np.finfo(float).tiny)
    return np.asarray(margin * base), np.asarray(margin * F)


def _check_calibration(r: FloatArray, margin: float) -> None:
    if not (np.isfinite(margin) and margin >= 1.0):
        raise StateError(f"margin: must be finite and >= 1, got {margin!r}")
    if r.shape[0] == 0:
        raise StateError("calibration needs at least one residual sample")


__all__ = [
    "DEFAULT_CLEAR_RATIO",
    "DEFAULT_MARGIN",
    "DEFAULT_REVERSAL_VELOCITY",
    "FAR",
    "REVERSAL_FLOOR",
    "CollisionDetector",
    "Transition",
    "calibrate_reversal",
    "calibrate_thresholds",
    "check_clear_ratio",
    "check_reversal",
    "check_thresholds",
    "collision_states",
    "near_reversal",
    "reversal_weights",
    "transitions",
]
