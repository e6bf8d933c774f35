"""Generalized-momentum observer of the external joint torques (De Luca & Mattone 2005; Haddadin,
De Luca & Albu-Schäffer 2017, "Robot Collisions: A Survey on Detection, Isolation, and
Identification", IEEE T-RO 33(6), §IV).

The arm's dynamics with the motors' torque ``tau_m`` and the external joint torque ``tau_ext``
(``= J^T F`` for a wrench ``F`` the environment exerts on the tool)::

    D(q) qdd + C(q, qd) qd + c(q) + b(qd) = tau_m + tau_ext              (Fu 3.2-26, h = C qd)

``C`` is the Christoffel Coriolis matrix (:func:`~.coefficients.coriolis_matrix`), for which
``dD/dt = C + C^T``. The generalized momentum ``p = D(q) qd`` then changes at the rate::

    dp/dt = D qdd + (C + C^T) qd = beta + tau_ext,   beta = tau_m + C^T qd - c(q) - b(qd)      (1)

and the observer::

    r(t) = K [ p(t) - p(0) - integral_0^t (beta + r) ds ],   K = diag(K_i) > 0                  (2)

obeys ``dr/dt = K (tau_ext - r)``: each ``r_i`` is ``tau_ext,i`` through a first-order low-pass of
time constant ``1/K_i`` (after a step, ``r = tau_ext (1 - exp(-K t))``), without the acceleration.

**Discrete form.** At samples ``t_0 < t_1 < ...`` (any spacing), ``dt_k = t_{k+1} - t_k``, assume
over each interval that ``tau_ext`` is constant and ``beta`` is linear in time. By (1) the interval's
``tau_ext`` is ``(Δp_k - dt_k (beta_k + beta_{k+1}) / 2) / dt_k`` (the integral of the linear ``beta``
is the trapezoid), and the ODE of ``r`` integrates exactly over the interval::

    r_{k+1} = exp(-K dt_k) r_k + (1 - exp(-K dt_k)) [Δp_k - dt_k (beta_k + beta_{k+1}) / 2] / dt_k   (3)

with ``r_0 = 0`` (``p(0)`` is the first sample's). Under those assumptions (3) is exact for every
sample spacing, slow (30 Hz) or irregular; otherwise its errors are second order: the trapezoid's
``O(dt^2 beta'')``, and ``K dt^2 dtau_ext/dt / 12`` once settled when ``tau_ext`` changes within an
interval (the interval holds its mean).

**Effort timing.** (3) takes the measured torque as a *sample* at each state, like the other terms of
``beta``: a drive's current-based torque, a link-side torque sensor (``effort_timing="sampled"``). A
simulator (this package's ``simulator_node``, Gazebo's effort interface) instead publishes with each state
the torque it *held over the step into it*: over ``[t_k, t_{k+1}]`` the torque is ``tau_{k+1}``, exactly,
and the trapezoid's half of the previous step's torque is an error of ``dt dtau/dt / 2`` in the interval's
``tau_ext`` — with a PD loop's torque, the largest term of ``r`` in free motion. ``effort_timing="step"``
integrates it as held: (3) with ``tau_m`` of both ends replaced by ``tau_{k+1}``. The first sample's
effort then belongs to a step before the recording and is not used.

**The first torque reading.** A state at rest (every velocity exactly 0) whose efforts are all exactly 0
carries no torque reading (a simulator's first state, a delay line filling, also after a simulator's reset
in the middle of a run); taken as one, its zero is the world holding the arm against ``c(q)``, seen in
``r``. The observer starts at the first state with a reading (:func:`torque_reading`): ``r = 0`` up to
it and there; a later state without one is not observed either (``r`` held, the next interval spans it).

The module is longer than 400 lines because the batch observer (:func:`observe`) and the one-sample
observer (:class:`MomentumObserver`) are the same recurrence (3) with the same start and effort timings,
and the node is tested equal to the batch: they stay side by side.

**Friction** ``b``: the model's friction at ``qd``, from :func:`~.inverse.inverse_dynamics` at
``qdd = 0``, which gives ``h + c + b`` (so ``beta = tau_m + dD/dt qd - (h + c + b)``: one Newton–Euler
call; ``p`` and ``dD/dt qd`` come from one more, :mod:`.momentum`). Viscous, Coulomb, Stribeck and
motor friction depend on ``qd`` alone and are exact; load-dependent (bearing, transmission) friction
is loaded by the torque and reactions of zero acceleration, since the observer does not know ``qdd``.

**One sample at a time** (:class:`MomentumObserver`, for a node) applies (3) to each new sample;
**a recording** (:func:`observe`) computes ``p`` and ``beta`` for all samples at once and solves the
recurrence ``r_{k+1} = a_k r_k + u_k`` by a prefix scan over the associative composition of the
maps ``r -> a r + u`` (Hillis & Steele 1986): ``ceil(log2 N)`` vectorised passes, no division, so no
overflow however long the recording (``exp(-K t)`` products underflow harmlessly to 0). Both forms
take ``a_k = exp(-K dt_k)`` from :func:`decay` and ``u_k`` from :func:`drive`, and agree to rounding
(1e-12, tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..errors import StateError
from ..model import FloatArray, RobotModel
from ..user_input import per_joint
from ._dispatch import MOMENTUM, OBSERVER, friction_variant, general, single
from ._kernels import kernels
from .inverse import inverse_dynamics
from .observer_step import observer_drive

#: States per engine call in :func:`observe` (bounds the memory of the engine's intermediate arrays).
CHUNK = 8192
#: How a recording's efforts relate to its states (module docstring, "Effort timing").
EFFORT_TIMINGS = ("sampled", "step")


def check_effort_timing(value: object) -> str:
    """``value`` if it is one of :data:`EFFORT_TIMINGS`; StateError otherwise."""
    if value not in EFFORT_TIMINGS:
        raise StateError(f"effort timing must be one of {list(EFFORT_TIMINGS)}, got {value!r}")
    return str(value)


def torque_reading(qd: ArrayLike, tau_m: ArrayLike) -> np.ndarray:
    """Whether each state ``(..., n)`` carries a torque reading: not every effort exactly 0 at rest (every
    velocity exactly 0) — module docstring, "The first torque reading"."""
    v, tau = np.asarray(qd), np.asarray(tau_m)
    return np.asarray(np.any(tau != 0.0, axis=-1) | np.any(v != 0.0, axis=-1))


def observer_gain(gain: ArrayLike, n: int, what: str = "gain") -> FloatArray:
    """``K`` as ``(n,)``: one positive finite value per joint, or one for all; StateError otherwise."""
    k = per_joint(gain, n, what)
    if not (np.isfinite(k).all() and (k > 0.0).all()):
        raise StateError(f"{what}: every value must be finite and > 0 (1/s), got {k.tolist()}")
    return k


def momentum_terms(model: RobotModel, q: ArrayLike, qd: ArrayLike, *, backend: str | None = None) -> FloatArray:
    """``(p, dD/dt qd)`` side by side, ``(..., 2 n)``: one call of the recursion of :mod:`.momentum`
    (D with the motor inertia when the model puts it there)."""
    K = kernels(model)
    key = MOMENTUM[K.motor_inertia_in_d]
    out = single(model, K, backend, key, q, qd)
    return out if out is not None else general(model, K, backend, key, q=q, qd=qd)


def generalized_momentum(model: RobotModel, q: ArrayLike, qd: ArrayLike, *, backend: str | None = None) -> FloatArray:
    """``p = D(q) qd`` ``(..., n)`` (D with the motor inertia when the model puts it there)."""
    return np.asarray(momentum_terms(model, q, qd, backend=backend)[..., : model.dof])


def momentum_rate(
    model: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    tau_m: ArrayLike,
    *,
    friction: bool = True,
    smooth: bool = True,
    backend: str | None = None,
) -> FloatArray:
    """``beta = tau_m + C(q, qd)^T qd - c(q) - b(qd)`` ``(..., n)``: ``dp/dt`` without external torque (1).

    Computed as ``tau_m + dD/dt qd - (h + c + b)`` (``dD/dt = C + C^T``, ``h = C qd``): ``dD/dt qd`` from
    :func:`momentum_terms`, the last term the inverse dynamics at ``qdd = 0``.
    """
    return _rate(model, momentum_terms(model, q, qd, backend=backend), q, qd, tau_m, friction, smooth, backend)


def _rate(
    model: RobotModel,
    terms: FloatArray,
    q: ArrayLike,
    qd: ArrayLike,
    tau_m: ArrayLike,
    friction: bool,
    smooth: bool,
    backend: str | None,
) -> FloatArray:
    """``beta`` (1) from the :func:`momentum_terms` of the same states."""
    v = np.asarray(qd, dtype=np.float64)
    still = inverse_dynamics(model, q, v, np.zeros_like(v), friction=friction, smooth=smooth, backend=backend)
    return np.asarray(np.asarray(tau_m, dtype=np.float64) + terms[..., terms.shape[-1] // 2 :] - still)  # h + c + b


def decay(gain: FloatArray, dt: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """``(a, w)`` of (3) for intervals ``dt`` (s; ``()`` or ``(N, 1)``): ``a = exp(-K dt)``, ``w = (1 - a) / dt``."""
    step = np.asarray(dt, dtype=np.float64)
    return np.exp(-gain * step), -np.expm1(-gain * step) / step


def drive(w: FloatArray, dt: ArrayLike, dp: FloatArray, beta0: FloatArray, beta1: FloatArray) -> FloatArray:
    """``u`` of (3): ``(1 - a) (Δp - dt (beta_k + beta_{k+1}) / 2) / dt`` with ``w = (1 - a) / dt``
    (:func:`.observer_step.observer_drive` on arrays)."""
    return np.asarray(observer_drive(w, 0.5 * np.asarray(dt, dtype=np.float64), dp, beta0, beta1))


def transition(
    gain: FloatArray, dt: ArrayLike, dp: FloatArray, beta0: FloatArray, beta1: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """``(a, u)`` of (3), ``r_{k+1} = a r_k + u``, for intervals ``dt``."""
    a, w = decay(gain, dt)
    return a, drive(w, dt, dp, beta0, beta1)


def scan_recurrence(a: FloatArray, u: FloatArray, r0: FloatArray) -> FloatArray:
    """``r`` ``(M + 1, n)`` of ``r_{k+1} = a_k r_k + u_k`` from ``r0`` for ``(M, n)`` maps, all at once.

    Inclusive prefix scan (Hillis & Steele): after the pass with stride ``s`` entry ``k`` is the
    composition of maps ``k-2s+1 .. k``; ``(a2, u2) after (a1, u1) = (a2 a1, a2 u1 + u2)``.
    """
    A, U = a.copy(), u.copy()
    stride = 1
    while stride < A.shape[0]:
        U[stride:] = A[stride:] * U[:-stride] + U[stride:]  # the right side is evaluated first
        A[stride:] = A[stride:] * A[:-stride]
        stride *= 2
    r = np.empty((A.shape[0] + 1, A.shape[1]))
    r[0] = r0
    r[1:] = A * r0 + U
    return r


@dataclass(frozen=True)
class ObserverRun:
    """The observer over a recording: ``t`` ``(N,)`` s, ``r`` (the external torque estimate), ``p`` and
    ``beta`` ``(N, n)``, the gain ``K`` ``(n,)`` 1/s; ``start``: the first sample with a torque reading, where
    the observer starts (``r = 0`` up to it; ``N`` if none has one)."""

    t: FloatArray
    r: FloatArray
    p: FloatArray
    beta: FloatArray
    gain: FloatArray
    start: int = 0
    unread: int = 0  # states without a torque reading (not observed)


def _sample_times(t: ArrayLike, count: int) -> FloatArray:
    times = np.asarray(t, dtype=np.float64).reshape(-1)
    if times.size != count:
        raise StateError(f"t: {times.size} sample times for {count} states")
    if not np.isfinite(times).all():
        raise StateError("t: non-finite sample times")
    steps = np.diff(times)
    if np.any(steps <= 0.0):
        k = int(np.argmax(steps <= 0.0)) + 1
        raise StateError(f"t: sample times must increase strictly (sample {k}: {times[k - 1]!r} -> {times[k]!r} s)")
    return times


def observe(
    model: RobotModel,
    t: ArrayLike,
    q: ArrayLike,
    qd: ArrayLike,
    tau_m: ArrayLike,
    gain: ArrayLike,
    *,
    friction: bool = True,
    smooth: bool = True,
    backend: str | None = None,
    effort_timing: str = "sampled",
) -> ObserverRun:
    """The observer (3) over a whole recording: states ``(N, n)`` at strictly increasing times ``t`` (s).

    ``tau_m`` is the measured joint torque (N·m or N), a sample at each state or, ``effort_timing="step"``,
    the torque held over the step into it (module docstring). The observer starts at the first state with a
    torque reading (``ObserverRun.start``; module docstring). Vectorised over the samples (engine calls in
    chunks of :data:`CHUNK` states, the recurrence by :func:`scan_recurrence`).
    """
    held = check_effort_timing(effort_timing) == "step"
    n = model.dof
    arrays = [np.asarray(x, dtype=np.float64) for x in (q, qd, tau_m)]
    for name, x in zip(("q", "qd", "tau_m"), arrays, strict=True):
        if x.ndim != 2 or x.shape[1] != n:
            raise StateError(f"{name}: expected shape (N, {n}) ({n} joints of robot {model.name!r}), got {x.shape}")
        if x.shape[0] != arrays[0].shape[0]:
            raise StateError(f"{name}: {x.shape[0]} samples, q has {arrays[0].shape[0]}")
        if not np.isfinite(x).all():
            raise StateError(f"{name}: non-finite values (nan or inf) in row {int(np.argmax(~np.isfinite(x).all(1)))}")
    Q, QD, TAU = arrays
    count = Q.shape[0]
    times = _sample_times(t, count)
    k = observer_gain(gain, n)
    p, beta = np.empty((count, n)), np.empty((count, n))
    for s in range(0, count, CHUNK):  # a loop over chunks of samples, each one vectorised engine call
        rows = slice(s, s + CHUNK)
        terms = momentum_terms(model, Q[rows], QD[rows], backend=backend)
        p[rows] = terms[:, :n]
        beta[rows] = _rate(model, terms, Q[rows], QD[rows], TAU[rows], friction, smooth, backend)
    if count == 0:
        return ObserverRun(times, np.zeros((0, n)), p, beta, k)
    reading = torque_reading(QD, TAU)
    first = int(np.argmax(reading)) if reading.any() else count
    read = np.flatnonzero(reading)  # the observed states: r is held over the others (module docstring)
    r = np.zeros((count, n))
    if read.size:
        tr, br = TAU[read], beta[read]
        begin = br[:-1] + (tr[1:] - tr[:-1]) if held else br[:-1]  # held: the step's torque at both ends
        a, u = transition(k, np.diff(times[read])[:, None], np.diff(p[read], axis=0), begin, br[1:])
        observed = scan_recurrence(a, u, np.zeros(n))
        r[first:] = observed[np.cumsum(reading[first:]) - 1]  # each state: r of the last observed one
    return ObserverRun(times, r, p, beta, k, first, count - read.size)


class MomentumObserver:
    """The observer (3) one sample at a time (a node's joint-state callback).

    :meth:`update` takes a sample at a time later than the previous one and returns ``r``; a sample that
    is refused (StateError: wrong shape, non-finite values, time not increasing) leaves the observer as
    it was, so the next good sample continues correctly. A sample without a torque reading is not observed:
    :meth:`update` returns the held ``r`` (0 before the first reading; :attr:`unread` counts them).
    Intervals equal to the nanosecond share their
    ``exp(-K dt)`` (computed once at a fixed rate). :meth:`reset` starts over (``r = 0``, the next sample
    is the new ``p(0)``); :meth:`set_model` swaps the model (a payload) and carries on from the last
    sample; :attr:`gain` may change between samples. :attr:`decay` is ``exp(-K dt)`` of the last
    interval (the collision detector's reversal weights use it).

    A step is one call of the compiled observer program (:mod:`.observer_step`) when the model's native
    library holds it (the model's own friction, smooth or not as asked); otherwise the same formulas by
    :func:`momentum_terms`, the inverse dynamics and :func:`drive`.
    """

    def __init__(
        self,
        model: RobotModel,
        gain: ArrayLike,
        *,
        friction: bool = True,
        smooth: bool = True,
        effort_timing: str = "sampled",
    ) -> None:
        self.gain = observer_gain(gain, model.dof)
        self.friction, self.smooth = friction, smooth
        self.effort_timing = check_effort_timing(effort_timing)  # may change between samples
        self.samples = 0
        self.unread = 0  # samples without a torque reading (not observed)
        self._last: tuple[float, FloatArray, FloatArray, FloatArray] | None = None
        self._decay: tuple[int, FloatArray, FloatArray, FloatArray] | None = None  # dt in ns, gain, a, coef
        self.decay: FloatArray | None = None  # exp(-K dt) of the last interval (None: no interval yet)
        self._use(model)
        self._state: FloatArray = np.zeros(3 * model.dof)  # p, beta, r of the last sample
        self._first: FloatArray = np.zeros(2 * model.dof + 1)  # a = w = 0: r stays 0 at the first sample

    def _use(self, model: RobotModel) -> None:
        self.model = model
        self._b = self.friction and model.has_friction  # friction terms to compute
        variant = friction_variant(self.smooth, model.smooth_kind) if self._b else None
        self._kernels = kernels(model)
        self._key = OBSERVER[(self._kernels.motor_inertia_in_d, variant)]

    @property
    def r(self) -> FloatArray:
        """The external torque estimate after the last sample (a copy)."""
        n = self.model.dof
        return self._state[2 * n :].copy()

    def set_gain(self, gain: ArrayLike) -> None:
        self.gain = observer_gain(gain, self.model.dof)

    def reset(self) -> None:
        self._state = np.zeros(3 * self.model.dof)
        self._last = None
        self.decay = None
        self.samples = 0
        self.unread = 0

    def set_model(self, model: RobotModel, *, friction: bool | None = None, smooth: bool | None = None) -> None:
        """Observe with ``model`` (same joints; and a new friction model) from the next sample on; ``p`` and
        ``beta`` of the last sample are recomputed with them, so ``r`` does not jump at the change."""
        if model.dof != self.model.dof:
            raise StateError(f"model: {model.dof} joints, the observer has {self.model.dof}")
        self.friction = self.friction if friction is None else friction
        self.smooth = self.smooth if smooth is None else smooth
        self._use(model)
        if self._last is not None:
            _, q, qd, tau = self._last
            p, beta = self._terms(q, qd, tau)
            self._state = np.concatenate([p, beta, self._state[2 * model.dof :]])

    def update(self, t: float, q: ArrayLike, qd: ArrayLike, tau_m: ArrayLike) -> FloatArray:
        """``r`` after the sample ``(q, qd, tau_m)`` at time ``t`` (s); the first sample gives ``r = 0``."""
        n = self.model.dof
        tau = np.array(tau_m, dtype=np.float64)  # copies: the observer keeps the last sample
        total = sum(tau.tolist()) if tau.shape == (n,) else np.nan
        if total - total != 0.0 and not (tau.shape == (n,) and np.isfinite(tau).all()):
            raise StateError(f"tau_m: expected {n} finite values, got {tau.tolist()}")
        last = self._last
        if last is not None and not t > last[0]:
            raise StateError(f"t: sample time {t!r} s does not follow the previous one ({last[0]!r} s)")
        qa, qda = np.array(q, dtype=np.float64), np.array(qd, dtype=np.float64)
        if not torque_reading(qda, tau):  # no reading: not observed, r held (0 before the first reading)
            self._terms(qa, qda, tau)  # validates q, qd as an observed sample would be
            self.unread += 1
            return self._state[2 * n :].copy()
        prev = self._state
        if last is None:
            a, coef, dt = None, self._first, 0.0
        else:
            if self.effort_timing == "step":  # the interval's torque is this sample's, at both ends of (3)
                prev = prev.copy()
                prev[n : 2 * n] += tau - last[3]
            dt = t - last[0]
            cached, key = self._decay, round(dt * 1e9)
            if cached is None or cached[0] != key or cached[1] is not self.gain:  # a fixed rate: computed once
                a, w = decay(self.gain, dt)
                cached = self._decay = (key, self.gain, a, np.concatenate([a, w, [0.5 * dt]]))
            a, coef = cached[2], cached[3]
            coef[-1] = 0.5 * dt  # the exact interval (the cache is keyed to the nanosecond)
        state = single(self.model, self._kernels, None, self._key, qa, qda, tau, prev, coef)
        if state is None:  # not compiled (or a state the compiled call does not take): the same by parts
            p, beta = self._terms(qa, qda, tau)  # validates q, qd; nothing is changed before this succeeds
            r = prev[2 * n :]
            if a is not None:
                r = a * r + drive(coef[n : 2 * n], dt, p - prev[:n], prev[n : 2 * n], beta)  # (3)
            state = np.concatenate([p, beta, r])
        self._state = state
        self.decay = a
        self._last = (float(t), qa, qda, tau)
        self.samples += 1
        return state[2 * n :].copy()

    def _terms(self, q: FloatArray, qd: FloatArray, tau_m: FloatArray) -> tuple[FloatArray, FloatArray]:
        terms = momentum_terms(self.model, q, qd)
        return terms[: terms.shape[0] // 2], _rate(self.model, terms, q, qd, tau_m, self._b, self.smooth, None)


__all__ = [
    "CHUNK",
    "EFFORT_TIMINGS",
    "MomentumObserver",
    "ObserverRun",
    "check_effort_timing",
    "decay",
    "drive",
    "generalized_momentum",
    "momentum_rate",
    "momentum_terms",
    "observe",
    "observer_gain",
    "scan_recurrence",
    "torque_reading",
    "transition",
]
