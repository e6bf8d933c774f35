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

**Thresholds from free motion** (:func:`calibrate_thresholds`): with no contact, ``r`` is the model's
error (and the measurement's noise) seen through the observer; the largest ``|r_j|`` over a recording
of free motion that covers the arm's working speeds, times a margin, is a threshold that this motion
never crosses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.errors import StateError
from robot_dynamics.model import FloatArray

#: Default clear level as a fraction of the threshold, and default calibration margin.
DEFAULT_CLEAR_RATIO = 0.5
DEFAULT_MARGIN = 1.5


def check_thresholds(values: ArrayLike, n: int, what: str = "thresholds") -> FloatArray:
    """``(n,)`` thresholds (N·m or N): one per joint, or one for all; each > 0 (``inf`` = never)."""
    th = np.asarray(values, dtype=np.float64).reshape(-1)
    if th.size == 1:
        th = np.full(n, float(th[0]))
    if th.size != n:
        raise StateError(f"{what}: expected 1 or {n} values (one per joint), got {th.size}")
    if np.isnan(th).any() or not (th > 0.0).all():
        raise StateError(f"{what}: every value must be > 0 (N·m or N; inf = never), got {th.tolist()}")
    return th


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
    few joints cost less than array operations)."""

    def __init__(self, thresholds: ArrayLike, clear_ratio: float = DEFAULT_CLEAR_RATIO) -> None:
        self.thresholds = check_thresholds(thresholds, np.size(thresholds))
        self.clear_ratio = check_clear_ratio(clear_ratio)
        self._levels = self._pairs()
        self._active = [False] * self.thresholds.size
        self.raised = 0

    def _pairs(self) -> list[tuple[float, float]]:
        return [(th, self.clear_ratio * th) for th in self.thresholds.tolist()]

    def configure(self, thresholds: ArrayLike | None = None, clear_ratio: float | None = None) -> None:
        """New thresholds / clear ratio (checked first; the joints' states are kept)."""
        th = self.thresholds if thresholds is None else check_thresholds(thresholds, self.thresholds.size)
        ratio = self.clear_ratio if clear_ratio is None else check_clear_ratio(clear_ratio)
        self.thresholds, self.clear_ratio = th, ratio
        self._levels = self._pairs()

    def reset(self) -> None:
        self._active = [False] * self.thresholds.size

    @property
    def active(self) -> np.ndarray:
        """Whether each joint is in collision, ``(n,)`` bool."""
        return np.array(self._active, dtype=bool)

    @property
    def in_collision(self) -> bool:
        return any(self._active)

    def update(self, r: FloatArray, sample: int = 0, time: float = 0.0) -> list[Transition]:
        """The joints whose state changes with this residual (usually none)."""
        out: list[Transition] = []
        active = self._active
        for j, (value, (threshold, clear)) in enumerate(zip(r.tolist(), self._levels, strict=True)):
            magnitude = abs(value)
            if (magnitude < clear) if active[j] else (magnitude > threshold):
                active[j] = not active[j]
                self.raised += active[j]
                out.append(Transition(sample, time, j, active[j], magnitude, threshold, clear))
        return out


def collision_states(r: FloatArray, thresholds: ArrayLike, clear_ratio: float = DEFAULT_CLEAR_RATIO) -> np.ndarray:
    """Whether each joint is in collision at each sample, ``(N, n)`` bool, for residuals ``r`` ``(N, n)``.

    The hysteresis vectorised: a joint is in collision where its latest decisive sample (above the
    threshold, or below the clear level) was above the threshold.
    """
    th = check_thresholds(thresholds, r.shape[1])
    ratio = check_clear_ratio(clear_ratio)
    magnitude = np.abs(r)
    index = np.arange(r.shape[0])[:, None]
    last_above = np.maximum.accumulate(np.where(magnitude > th, index, -1), axis=0)
    last_below = np.maximum.accumulate(np.where(magnitude < ratio * th, index, -1), axis=0)
    return np.asarray(last_above > last_below)


def transitions(
    t: FloatArray, r: FloatArray, thresholds: ArrayLike, clear_ratio: float = DEFAULT_CLEAR_RATIO
) -> list[Transition]:
    """Every change of :func:`collision_states`, in time order (joint order within a sample)."""
    th = check_thresholds(thresholds, r.shape[1])
    ratio = check_clear_ratio(clear_ratio)
    states = collision_states(r, th, ratio)
    th = th.tolist()
    before = np.vstack([np.zeros((1, r.shape[1]), dtype=bool), states[:-1]])
    samples, joints = np.nonzero(states != before)
    return [
        Transition(int(k), float(t[k]), int(j), bool(states[k, j]), float(abs(r[k, j])), th[j], ratio * th[j])
        for k, j in zip(samples.tolist(), joints.tolist(), strict=True)
    ]


def calibrate_thresholds(r: FloatArray, margin: float = DEFAULT_MARGIN) -> FloatArray:
    """``margin * max_k |r_kj|`` per joint over residuals of free motion ``(N, n)``; StateError if empty."""
    if not (np.isfinite(margin) and margin >= 1.0):
        raise StateError(f"margin: must be finite and >= 1, got {margin!r}")
    if r.shape[0] == 0:
        raise StateError("calibration needs at least one residual sample")
    peak = np.max(np.abs(r), axis=0)
    return np.asarray(margin * np.maximum(peak, np.finfo(float).tiny))


__all__ = [
    "DEFAULT_CLEAR_RATIO",
    "DEFAULT_MARGIN",
    "CollisionDetector",
    "Transition",
    "calibrate_thresholds",
    "check_clear_ratio",
    "check_thresholds",
    "collision_states",
    "transitions",
]
