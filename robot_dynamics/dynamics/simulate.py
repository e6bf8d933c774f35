"""Simulation: integrate ``qdd = forward_dynamics(q, qd, tau(t, q, qd))`` with SciPy's ``solve_ivp``.

The state is ``y = [q, qd]``; the right-hand side is the compiled single-state forward dynamics
(:mod:`.forward`). With friction (``friction=True`` and a model with friction) the friction package's
stick–slip integrator (:func:`robot_dynamics.dynamics.stick_slip.integrate`) takes over: it stops at
every stick/slip transition, which a plain ODE solver cannot do.

The applied torque is a constant ``(n,)``, a callable ``torque(t, q, qd) -> (n,)`` or a sampled
profile (:class:`TorqueProfile`, or a ``(times (M,), values (M, n))`` pair) interpolated linearly in
time and held at its end values outside.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..errors import StateError
from ..model import FloatArray, RobotModel
from ._state import states
from .forward import forward_dynamics
from .stick_slip import integrate

TorqueFunction = Callable[[float, FloatArray, FloatArray], ArrayLike]


@dataclass(frozen=True, eq=False)
class TorqueProfile:
    """Torques sampled at ascending ``times`` (M,), ``values`` (M, n); linear in between."""

    times: FloatArray
    values: FloatArray

    def __call__(self, t: float, q: FloatArray | None = None, qd: FloatArray | None = None) -> FloatArray:
        return np.array([np.interp(t, self.times, column) for column in self.values.T])


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """Sampled trajectory: ``t`` (T,), ``q``, ``qd``, ``qdd``, ``tau`` (T, n) (``tau`` the applied torque)."""

    t: FloatArray
    q: FloatArray
    qd: FloatArray
    qdd: FloatArray
    tau: FloatArray


Torque = ArrayLike | TorqueFunction | TorqueProfile | tuple[ArrayLike, ArrayLike] | None
"""A constant ``(n,)``, a callable ``torque(t, q, qd)``, a profile or ``(times, values)``; ``None``: zero."""


def _torque_function(model: RobotModel, torque: Torque) -> TorqueFunction:
    n = model.dof
    if torque is None:
        zero = np.zeros(n)
        return lambda t, q, qd: zero
    if isinstance(torque, tuple) and len(torque) == 2 and np.ndim(torque[1]) == 2:
        torque = TorqueProfile(np.asarray(torque[0], dtype=float), np.asarray(torque[1], dtype=float))
    if isinstance(torque, TorqueProfile):
        times, values = np.asarray(torque.times, dtype=float), np.asarray(torque.values, dtype=float)
        if times.ndim != 1 or values.shape != (times.size, n) or times.size < 1:
            raise StateError(
                f"torque profile: expected times (M,) and values (M, {n}), got {times.shape} and {values.shape}"
            )
        if not (np.isfinite(times).all() and np.isfinite(values).all()) or np.any(np.diff(times) <= 0):
            raise StateError("torque profile: times must be finite and strictly ascending, values finite")
        return TorqueProfile(times, values)
    if callable(torque):
        function: TorqueFunction = torque
        return function
    _, (constant,) = states(model, torque=torque)
    if np.ndim(constant) != 1:
        raise StateError(f"torque: expected a constant ({n},), a callable (t, q, qd) or a profile, got a batch")
    fixed = np.array(constant, dtype=float)
    return lambda t, q, qd: fixed


def _applied(function: TorqueFunction, t: float, q: FloatArray, qd: FloatArray, n: int) -> FloatArray:
    value = np.asarray(function(t, q, qd), dtype=float)
    if value.shape != (n,) or not np.isfinite(value).all():
        raise StateError(f"torque({t:g}, q, qd): expected {n} finite values, got {value!r:.120}")
    return value


def simulate(
    model: RobotModel,
    q0: ArrayLike,
    qd0: ArrayLike,
    torque: Torque,
    duration: float,
    *,
    dt: float = 0.01,
    t_eval: ArrayLike | None = None,
    friction: bool = True,
    method: str = "DOP853",
    rtol: float = 1e-9,
    atol: float = 1e-9,
    max_step: float = np.inf,
    backend: str | None = None,
) -> SimulationResult:
    """Integrate the motion from ``(q0, qd0)`` for ``duration`` seconds under ``torque``.

    Samples at ``t_eval`` (ascending, from 0) or every ``dt`` (``0, dt, ..., duration``). ``method``,
    ``rtol``, ``atol`` and ``max_step`` go to ``solve_ivp``. ``backend`` ("python", "native" or
    ``None``, see :mod:`._dispatch`) evaluates the frictionless forward dynamics; the stick–slip
    integrator uses the model's prepared backend.
    """
    from scipy.integrate import solve_ivp  # SciPy's integrators load in ~0.2 s: only when simulating

    n = model.dof
    batch, (q_start, qd_start) = states(model, q0=q0, qd0=qd0)
    if batch:
        raise StateError("q0, qd0: simulate takes one initial state (n,), not a batch")
    if not (np.isfinite(duration) and duration > 0):
        raise StateError(f"duration: expected a positive number of seconds, got {duration!r}")
    times: FloatArray
    if t_eval is None:
        if not (np.isfinite(dt) and dt > 0):
            raise StateError(f"dt: expected a positive step, got {dt!r}")
        grid = np.arange(0.0, duration + 0.5 * dt, dt)
        times = np.asarray(grid[grid <= duration], dtype=float)
    else:
        times = np.asarray(t_eval, dtype=float)
        if times.ndim != 1 or times.size < 1 or not np.isfinite(times).all() or np.any(np.diff(times) < 0):
            raise StateError("t_eval: expected finite ascending times")
        if times[0] < 0 or times[-1] > duration * (1.0 + 1e-9):  # rounding of k * period is tolerated
            raise StateError(f"t_eval: times must lie in [0, duration={duration}]")
        duration = max(float(duration), float(times[-1]))
    function = _torque_function(model, torque)

    if friction and model.has_friction:
        t, q, qd, qdd, tau = integrate(
            model,
            np.array(q_start),
            np.array(qd_start),
            lambda t, q, qd: _applied(function, t, q, qd, n),
            times,
            method=method,
            rtol=rtol,
            atol=atol,
            max_step=max_step,
        )
        return SimulationResult(*(np.asarray(a, dtype=float) for a in (t, q, qd, qdd, tau)))

    def rhs(t: float, y: FloatArray) -> FloatArray:
        q, qd = y[:n], y[n:]
        qdd = forward_dynamics(model, q, qd, _applied(function, t, q, qd, n), friction=False, backend=backend)
        return np.concatenate([qd, qdd])

    y0 = np.concatenate([q_start, qd_start])
    solution = solve_ivp(
        rhs, (0.0, float(duration)), y0, method=method, t_eval=times, rtol=rtol, atol=atol, max_step=max_step
    )
    if not solution.success:
        raise StateError(f"simulation failed at t = {solution.t[-1]:g} s: {solution.message}")
    q = solution.y[:n].T.copy()
    qd = solution.y[n:].T.copy()
    tau = np.array([_applied(function, t, a, b, n) for t, a, b in zip(solution.t, q, qd, strict=True)]).reshape(-1, n)
    qdd = forward_dynamics(model, q, qd, tau, friction=False, backend=backend) if len(q) else np.zeros((0, n))
    return SimulationResult(solution.t.copy(), q, qd, qdd, tau)
