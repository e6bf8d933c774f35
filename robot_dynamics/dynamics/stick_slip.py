"""Forward dynamics and integration with friction that sticks: the stick-slip (hybrid) simulator.

Equation of motion with friction (docs/references.md, Conventions; all friction terms compensating):

    D(q) qdd + h(q, qd) + c(q) = tau_link,   tau_link_i = T_i^{-1}(tau_i) - b_i(qd_i, load)

``tau`` is the applied (input, joint-side) torque, ``T_i^{-1}`` the inverse of the transmission's
Table 3.2 relation (identity without a transmission), ``b_i`` the joint + motor + bearing friction.

**Moving joints** (``qd_i != 0``, or leaving rest in a known direction ``sigma_i``) use the friction
of their direction of motion. **Joints at rest** with friction that is discontinuous at zero velocity
("sticky": Coulomb, static, motor Coulomb, bearing or transmission) are either *stuck*
(``qdd_i = 0``, their link torque ``lambda_i`` is a constraint torque) or *break away*. A stuck
joint holds while ``lo_i <= lambda_i <= hi_i`` where ``lo_i = T_+^{-1}(tau_i) - phi_i^+`` is the link
torque it would get moving forward and ``hi_i = T_-^{-1}(tau_i) - phi_i^-`` moving backward
(``phi^+ >= 0 >= phi^-`` the static friction levels: static/Coulomb + motor Coulomb + bearing
magnitude). ``lambda_i < lo_i`` means the joint accelerates forward with link torque ``lo_i``,
``lambda_i > hi_i`` backward with ``hi_i``. For several joints at rest the modes are coupled through
D: this is a box-constrained linear complementarity problem with a unique solution (D is symmetric
positive definite; it is the optimality condition of a strictly convex problem), solved exactly by
single-pivot active-set iterations with Murty's least-index rule (finite for P-matrix problems):
start with every resting joint stuck, solve the constrained system (rows of stuck joints replaced by
``qdd_i = 0``), flip the lowest-index joint whose constraint torque leaves its interval or whose
break-away acceleration has the wrong sign, repeat.

**Load-dependent friction** (bearings) is implicit: the reactions depend on qdd. It is solved by a
fixed-point iteration on the frictionless reactions (Gogoussis & Donath premise, Dhanaraj (1990) §3.2):
``qdd_0`` without bearing friction (or the integrator's previous value), then reactions at ``qdd_k``
-> bearing friction -> ``qdd_{k+1}``, until the bearing torques change by at most
``1e-12 (1 + |bearing| + |h + c|)``. The reactions are affine in qdd
(``f = f(q, qd, 0) + sum_k f_k(q) qdd_k``), so ``n + 1`` Newton-Euler passes give them for every
iterate and the iterations cost no further dynamics evaluations. The map's Lipschitz constant is about
``mu r / d`` times the ratio of reaction to inertial torque, far below 1 for real bearings; a
non-converging model raises an error. The transmission needs no iteration: ``T^{-1}`` depends only
on the input torque and the direction of motion, and is computed in closed form.

**Integration** (:func:`integrate`) is event-driven: the discrete mode (stuck, or moving in direction
``sigma_i``) is fixed within a segment, so the right-hand side is smooth and ``scipy.integrate.solve_ivp``
keeps its accuracy; terminal events end a segment when a moving sticky joint's velocity returns to
0 (``sigma_i qd_i`` falls through 0) or a stuck joint's constraint torque reaches ``lo_i`` or ``hi_i``.
At the event the stopping joint's velocity is set to exactly 0 and the modes of all resting joints
are decided again by the active set. Stuck joints have ``qd_i = qdd_i = 0`` exactly: there is no
chattering and no stiff regularisation. Events are armed a negligible ``1e-10 (1 + |t|)`` after a
segment starts so a degenerate decision (torque exactly at a limit) cannot stall the integrator.

One module, longer than 400 lines because the batch solver (``_System``) and the event-driven integrator
(``_Segment``, :func:`integrate`) share the mode state (stuck set, directions, stick interval) and its
tolerances; split in two, each half would import the other's private names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from robot_dynamics.dynamics.coefficients import inertia_matrix
from robot_dynamics.dynamics.inverse import rnea_with_reactions
from robot_dynamics.errors import RobotDynamicsError, StateError
from robot_dynamics.friction.combine import _joint_side, _motor_side, bearing_magnitude
from robot_dynamics.friction.parameters import FrictionParameters, friction_parameters
from robot_dynamics.friction.transmission import output_torque
from robot_dynamics.model import FloatArray, RobotModel

BoolArray = NDArray[np.bool_]
TorqueFunction = Callable[[float, FloatArray, FloatArray], ArrayLike]

_FIXED_POINT_TOL = 1e-12
_FIXED_POINT_MAX = 100


@dataclass(frozen=True, eq=False)
class StickSlipState:
    """Result of the stick-slip forward dynamics at a batch of states, all ``(N, n)``.

    ``stuck``: joints held at rest; ``sigma``: direction used for the friction of moving joints
    (+1/-1; 0 for stuck joints and for frictionless joints at rest); ``link_torque``: the torque that
    acts on each link (for stuck joints the constraint torque lambda); ``lower``/``upper``: the stick
    interval ``[lo, hi]`` of resting joints (NaN elsewhere).
    """

    qdd: FloatArray
    stuck: BoolArray
    sigma: FloatArray
    link_torque: FloatArray
    lower: FloatArray
    upper: FloatArray
    bearing: FloatArray  # bearing-friction magnitudes used (0 without bearings)


class _System:
    """The model's rigid-body dynamics (from the engine) and friction, for batched states."""

    def __init__(self, model: RobotModel) -> None:
        self.model = model
        self.p: FrictionParameters = friction_parameters(model)
        self.n = model.dof
        self.sticky = self.p.sticky
        self._inertia_matrix = inertia_matrix
        self._rnea = rnea_with_reactions
        # static levels at rest (break-away): static (= Coulomb without Stribeck) + motor Coulomb, shifted by
        # the constant offset (a torque the drive applies at rest too: the interval of the link torque moves)
        self.phi_pos = self.p.ts_pos + self.p.motor_tc_pos + self.p.offset
        self.phi_neg = self.p.ts_neg + self.p.motor_tc_neg + self.p.offset
        self._fixed_inverse: FloatArray | None = None

    def inertia(self, q: FloatArray) -> FloatArray:
        return np.asarray(self._inertia_matrix(self.model, q), dtype=float)

    def rnea(
        self, q: FloatArray, qd: FloatArray, qdd: FloatArray, gravity: bool = True, wrench: FloatArray | None = None
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        tau, force, moment = self._rnea(self.model, q, qd, qdd, wrench=wrench, gravity=gravity)
        return np.asarray(tau, dtype=float), np.asarray(force, dtype=float), np.asarray(moment, dtype=float)

    def unit_reactions(self, q: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``d(force)/d(qdd_k)``, ``d(moment)/d(qdd_k)``: ``(N, n_k, n, 3)``; the reactions are affine in qdd."""
        N, n = q.shape
        _, force, moment = self.rnea(
            np.repeat(q, n, axis=0), np.zeros((N * n, n)), np.tile(np.eye(n), (N, 1)), gravity=False
        )
        return force.reshape(N, n, n, 3), moment.reshape(N, n, n, 3)

    def transmission_out(self, tau: FloatArray, sigma: FloatArray) -> FloatArray:
        """``T_sigma^{-1}(tau)`` per joint (identity without a transmission)."""
        out = tau.copy()
        for t in self.p.transmissions:
            i = t.index
            out[:, i] = output_torque(tau[:, i], sigma[:, i], t.curve, t.breakaway, t.max_torque)
        return out

    def solve(
        self,
        q: FloatArray,
        qd: FloatArray,
        tau: FloatArray,
        stuck: BoolArray,
        sigma: FloatArray,
        rest: BoolArray,
        *,
        decide: bool,
        force_slip: FloatArray | None = None,
        wrench: FloatArray | None = None,
        bearing_guess: FloatArray | None = None,
    ) -> StickSlipState:
        """Accelerations for batch states ``(N, n)``.

        ``rest``: sticky joints at rest; ``stuck``/``sigma``: the modes (initial guess if ``decide``).
        ``force_slip``: per joint +1/-1 to release a stuck joint that is within ``1e-9`` of that
        limit (a break-away event), 0 otherwise. ``wrench`` ``(N, 6)``: tool load (tool frame, as
        ``rnea_with_reactions``); it enters the bias torques and the reactions. ``bearing_guess``:
        start of the fixed-point iteration (the integrator passes the previous evaluation's).
        """
        p = self.p
        n = q.shape[1]
        D = self.inertia(q)
        zeros = np.zeros_like(q)
        # h + c (+ J^T w) and the reactions at qdd = 0
        bias, force0, moment0 = self.rnea(q, qd, zeros, wrench=wrench)
        if p.has_bearing:
            force_k, moment_k = self.unit_reactions(q)
        ones = np.ones_like(q)
        # load-independent friction and transmission output for each direction
        b_pos = _joint_side(p, qd, ones) + _motor_side(p, qd, ones)
        b_neg = _joint_side(p, qd, -ones) + _motor_side(p, qd, -ones)
        if p.has_transmission:
            out_pos = self.transmission_out(tau, ones)
            out_neg = self.transmission_out(tau, -ones)
        else:
            out_pos = out_neg = tau
        link_pos = out_pos - b_pos  # link torque moving forward (before bearing friction)
        link_neg = out_neg - b_neg
        stat_lo = out_pos - self.phi_pos  # stick interval before bearing friction
        stat_hi = out_neg - self.phi_neg
        stuck = stuck & rest
        sigma = np.where(stuck, 0.0, sigma)
        eye = np.eye(n)
        self._fixed_inverse = None
        bearing = np.zeros_like(q) if bearing_guess is None or not p.has_bearing else bearing_guess.copy()
        qdd = np.zeros_like(q)
        for _ in range(_FIXED_POINT_MAX):
            lo = stat_lo - bearing
            hi = stat_hi + bearing
            link = np.where(
                sigma > 0, link_pos - bearing, np.where(sigma < 0, link_neg + bearing, 0.5 * (link_pos + link_neg))
            )
            qdd_new, lam, stuck, sigma = self._active_set(
                D,
                bias,
                link,
                link_pos - bearing,
                link_neg + bearing,
                lo,
                hi,
                stuck,
                sigma,
                rest,
                decide,
                force_slip,
                eye,
            )
            qdd = qdd_new
            if not p.has_bearing:
                break
            force = force0 + np.einsum("Nk,Nkjc->Njc", qdd, force_k)
            moment = moment0 + np.einsum("Nk,Nkjc->Njc", qdd, moment_k)
            new_bearing = bearing_magnitude(p, force, moment)
            change = float(np.max(np.abs(new_bearing - bearing), initial=0.0))
            scale = 1.0 + float(np.max(np.abs(new_bearing), initial=0.0)) + float(np.max(np.abs(bias), initial=0.0))
            bearing = new_bearing
            if change <= _FIXED_POINT_TOL * scale:
                break
        else:
            raise RobotDynamicsError(
                f"robot {self.model.name!r}: the load-dependent (bearing) friction fixed point did not converge in "
                f"{_FIXED_POINT_MAX} iterations (last change {change:.3g} N m); the bearing friction is too large "
                "relative to the inertia (mu r / d)"
            )
        lo = np.where(rest, stat_lo - bearing, np.nan)
        hi = np.where(rest, stat_hi + bearing, np.nan)
        return StickSlipState(qdd, stuck, sigma, lam, lo, hi, bearing)

    def _active_set(
        self,
        D: FloatArray,
        bias: FloatArray,
        link: FloatArray,
        link_pos: FloatArray,
        link_neg: FloatArray,
        lo: FloatArray,
        hi: FloatArray,
        stuck: BoolArray,
        sigma: FloatArray,
        rest: BoolArray,
        decide: bool,
        force_slip: FloatArray | None,
        eye: FloatArray,
    ) -> tuple[FloatArray, FloatArray, BoolArray, FloatArray]:
        stuck = stuck.copy()
        sigma = sigma.copy()
        n = D.shape[-1]
        max_pivots = max(4 * n + 8, 2 ** min(n, 12)) if decide else 0
        tol_tau = 1e-9 * (1.0 + np.abs(lo) + np.abs(hi))
        for _ in range(max_pivots + 1):
            link = np.where(sigma > 0, link_pos, np.where(sigma < 0, link_neg, link))
            rhs = np.where(stuck, 0.0, link - bias)
            if decide or self._fixed_inverse is None:
                A = np.where(stuck[..., :, None], eye, D)  # stuck rows: qdd_i = 0
                if decide:
                    qdd = np.linalg.solve(A, rhs[..., None])[..., 0]
                else:  # modes fixed: the same matrix for every fixed-point iteration
                    self._fixed_inverse = np.linalg.inv(A)
            if not decide:
                assert self._fixed_inverse is not None
                qdd = np.einsum("...ij,...j->...i", self._fixed_inverse, rhs)
            lam = np.where(stuck, np.einsum("...ij,...j->...i", D, qdd) + bias, link)
            if not decide:
                return qdd, lam, stuck, sigma
            # violations (Murty's least-index rule: flip the first violating joint of each state)
            lo_eff, hi_eff = lo, hi
            if force_slip is not None:
                lo_eff = np.where(force_slip > 0, lo + tol_tau, lo)
                hi_eff = np.where(force_slip < 0, hi - tol_tau, hi)
            go_pos = stuck & (lam < lo_eff)
            go_neg = stuck & (lam > hi_eff)
            qtol = 1e-12 * (1.0 + np.max(np.abs(qdd), axis=-1, keepdims=True))
            if force_slip is not None:  # a forced break-away may start with qdd ~ -tol_tau / D_ii
                qtol = qtol + np.where(force_slip != 0, 2.0 * tol_tau / np.einsum("...ii->...i", D), 0.0)
            back = rest & ~stuck & (sigma * qdd < -qtol)
            violated = go_pos | go_neg | back
            rows = np.flatnonzero(violated.any(axis=-1))
            if len(rows) == 0:
                return qdd, lam, stuck, sigma
            cols = np.argmax(violated[rows], axis=-1)
            flip_pos = go_pos[rows, cols]
            flip_neg = go_neg[rows, cols]
            stuck[rows, cols] = ~(flip_pos | flip_neg)
            sigma[rows, cols] = np.where(flip_pos, 1.0, np.where(flip_neg, -1.0, 0.0))
        raise RobotDynamicsError(
            f"robot {self.model.name!r}: the stick-slip mode decision did not settle after {max_pivots} pivots"
        )


def _as_batch(name: str, value: ArrayLike, n: int) -> FloatArray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim not in (1, 2) or arr.shape[-1] != n:
        raise StateError(f"{name}: expected shape ({n},) or (N, {n}), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise StateError(f"{name}: contains non-finite values")
    return arr.reshape(-1, n)


def solve_stick_slip(
    model: RobotModel, q: ArrayLike, qd: ArrayLike, tau: ArrayLike, wrench: ArrayLike | None = None
) -> StickSlipState:
    """Stick-slip forward dynamics at states ``(N, n)`` (see the module docstring); with the modes."""
    n = model.dof
    qb, qdb, taub = _as_batch("q", q, n), _as_batch("qd", qd, n), _as_batch("tau", tau, n)
    if not (qb.shape == qdb.shape == taub.shape):
        raise StateError(f"q, qd, tau: shapes differ: {np.shape(q)}, {np.shape(qd)}, {np.shape(tau)}")
    load = None
    if wrench is not None:
        load = _as_batch("wrench", wrench, 6)
        if load.shape[0] not in (1, qb.shape[0]):
            raise StateError(f"wrench: expected shape (6,) or ({qb.shape[0]}, 6), got {np.shape(wrench)}")
        load = np.ascontiguousarray(np.broadcast_to(load, (qb.shape[0], 6)))
    system = _System(model)
    rest = (qdb == 0.0) & system.sticky
    return system.solve(qb, qdb, taub, rest.copy(), np.sign(qdb), rest, decide=True, wrench=load)


def forward_dynamics_with_friction(
    model: RobotModel, q: ArrayLike, qd: ArrayLike, tau: ArrayLike, wrench: ArrayLike | None = None
) -> FloatArray:
    """``qdd`` with friction opposing motion and stiction at rest; ``(n,)`` or ``(N, n)`` like ``q``.

    ``tau`` is the applied (input) torque referred to the joint side. A joint with ``qd_i == 0``
    stays at rest (``qdd_i = 0``) while its holding torque is within its static friction, otherwise
    it breaks away; see the module docstring. ``wrench``: the tool load ``[f, n]`` the tool exerts on
    the environment, in the tool frame (as ``rnea_with_reactions``), ``(6,)`` or ``(N, 6)``; it acts
    on the link torques and on the reactions that drive bearing friction (the transmission sees it
    in its output torque).
    """
    state = solve_stick_slip(model, q, qd, tau, wrench)
    return state.qdd.reshape(np.shape(q))


# ----------------------------------------------------------------------------------------------
# integration
# ----------------------------------------------------------------------------------------------
class _Segment:
    """Right-hand side and events for one mode (stuck set and directions fixed)."""

    def __init__(
        self,
        system: _System,
        torque_fn: TorqueFunction,
        stuck: BoolArray,
        sigma: FloatArray,
        rest: BoolArray,
        t_arm: float,
    ) -> None:
        self.system = system
        self.torque_fn = torque_fn
        self.stuck = stuck[None, :]
        self.sigma = sigma[None, :]
        self.rest = rest[None, :]
        self.t_arm = t_arm
        self.n = system.n
        self._key: tuple[float, bytes] | None = None
        self._value: StickSlipState | None = None
        self.evaluations = 0

    def state(self, t: float, y: FloatArray) -> StickSlipState:
        key = (t, y.tobytes())
        if key != self._key or self._value is None:
            n = self.n
            q, qd = y[:n].copy(), y[n:].copy()
            qd[self.stuck[0]] = 0.0
            tau = _torque(self.torque_fn, t, q, qd, n)
            self._value = self.system.solve(
                q[None],
                qd[None],
                tau[None],
                self.stuck,
                self.sigma,
                self.rest,
                decide=False,
                bearing_guess=None if self._value is None else self._value.bearing,
            )
            self._key = key
            self.evaluations += 1
        return self._value

    def rhs(self, t: float, y: FloatArray) -> FloatArray:
        n = self.n
        s = self.state(t, y)
        qd = np.where(self.stuck[0], 0.0, y[n:])
        return np.concatenate([qd, s.qdd[0]])

    def velocity(self, i: int) -> Callable[[float, FloatArray], float]:
        """``sigma_i qd_i``: falls through 0 when a moving joint stops."""
        sign, k = float(self.sigma[0, i]), self.n + i
        return lambda t, y: sign * float(y[k])

    def margin(self, i: int, side: int) -> Callable[[float, FloatArray], float]:
        """``lambda_i - lo_i`` (side +1) or ``hi_i - lambda_i`` (side -1): falls through 0 at break-away."""

        def g(t: float, y: FloatArray) -> float:
            s = self.state(t, y)
            if side > 0:
                return float(s.link_torque[0, i] - s.lower[0, i])
            return float(s.upper[0, i] - s.link_torque[0, i])

        return g

    def events(self) -> list[Callable[[float, FloatArray], float]]:
        out: list[Callable[[float, FloatArray], float]] = []
        moving = np.flatnonzero(self.system.sticky & ~self.stuck[0] & (self.sigma[0] != 0.0))
        for i in moving:
            out.append(self._armed(self.velocity(int(i)), ("stop", int(i))))
        for i in np.flatnonzero(self.stuck[0]):
            out.append(self._armed(self.margin(int(i), 1), ("break", int(i), 1)))
            out.append(self._armed(self.margin(int(i), -1), ("break", int(i), -1)))
        return out

    def _armed(
        self, g: Callable[[float, FloatArray], float], tag: tuple[Any, ...]
    ) -> Callable[[float, FloatArray], float]:
        t_arm = self.t_arm

        def event(t: float, y: FloatArray) -> float:
            value = g(t, y)
            return value if t >= t_arm else abs(value) + 1.0

        event.terminal = True  # type: ignore[attr-defined]
        event.direction = -1.0  # type: ignore[attr-defined]
        event.tag = tag  # type: ignore[attr-defined]
        return event


def _torque(torque_fn: TorqueFunction, t: float, q: FloatArray, qd: FloatArray, n: int) -> FloatArray:
    tau = np.asarray(torque_fn(t, q, qd), dtype=float)
    if tau.shape != (n,):
        raise StateError(f"torque_fn(t, q, qd) must return shape ({n},), got {tau.shape} at t = {t:g}")
    if not np.all(np.isfinite(tau)):
        raise StateError(f"torque_fn(t, q, qd) returned non-finite values at t = {t:g}: {tau}")
    return tau


def _decide(
    system: _System, torque_fn: TorqueFunction, t: float, q: FloatArray, qd: FloatArray, force_slip: FloatArray | None
) -> tuple[BoolArray, FloatArray, BoolArray]:
    """Modes at a state: resting sticky joints by the active set, the others by sgn(qd)."""
    n = system.n
    rest = (qd == 0.0) & system.sticky
    tau = _torque(torque_fn, t, q, qd, n)
    s = system.solve(
        q[None],
        qd[None],
        tau[None],
        rest[None].copy(),
        np.sign(qd)[None],
        rest[None],
        decide=True,
        force_slip=None if force_slip is None else force_slip[None],
    )
    return s.stuck[0], s.sigma[0], rest


def integrate(
    model: RobotModel,
    q0: ArrayLike,
    qd0: ArrayLike,
    torque_fn: TorqueFunction,
    t_eval: ArrayLike,
    **options: Any,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """Simulate with stick-slip friction; returns ``(t, q, qd, qdd, tau)`` at ``t_eval`` (``(T,)``, ``(T, n)``).

    ``torque_fn(t, q, qd) -> (n,)`` is the applied joint-side torque. ``t_eval``: ascending times,
    the first is the initial time. Options: ``method`` (solve_ivp method, default ``"RK45"``),
    ``rtol`` (1e-8), ``atol`` (1e-10), ``max_step`` (inf), ``max_events`` (10000, the number of
    stick/slip transitions allowed before giving up with an error).
    """
    from scipy.integrate import solve_ivp  # SciPy's integrators load in ~0.2 s: only when integrating

    known = {"method", "rtol", "atol", "max_step", "max_events"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"integrate: unknown options {unknown}; allowed: {sorted(known)}")
    n = model.dof
    q = _as_batch("q0", q0, n)
    qd = _as_batch("qd0", qd0, n)
    if q.shape[0] != 1 or qd.shape[0] != 1:
        raise StateError("integrate: q0 and qd0 must be single states (n,)")
    times = np.asarray(t_eval, dtype=float)
    if times.ndim != 1 or len(times) < 1 or not np.all(np.isfinite(times)) or np.any(np.diff(times) < 0):
        raise StateError(f"t_eval: expected ascending finite times (T,), got shape {times.shape}")
    method = options.get("method", "RK45")
    rtol = float(options.get("rtol", 1e-8))
    atol = float(options.get("atol", 1e-10))
    max_step = float(options.get("max_step", np.inf))
    max_events = int(options.get("max_events", 10000))

    system = _System(model)
    t = float(times[0])
    t_end = float(times[-1])
    y = np.concatenate([q[0], qd[0]])
    out_q = np.empty((len(times), n))
    out_qd = np.empty((len(times), n))
    out_qdd = np.empty((len(times), n))
    out_tau = np.empty((len(times), n))
    filled = 0
    force_slip: FloatArray | None = None
    events = 0
    while True:
        stuck, sigma, rest = _decide(system, torque_fn, t, y[:n], y[n:], force_slip)
        segment = _Segment(system, torque_fn, stuck, sigma, rest, t + 1e-10 * (1.0 + abs(t)))
        # samples at the segment start (and everything if there is nothing left to integrate)
        while filled < len(times) and (times[filled] <= t or t >= t_end):
            filled = _sample(segment, torque_fn, times, filled, t, y, out_q, out_qd, out_qdd, out_tau)
        if t >= t_end:
            break
        event_fns = segment.events()
        sol = solve_ivp(
            segment.rhs,
            (t, t_end),
            y,
            method=method,
            rtol=rtol,
            atol=atol,
            max_step=max_step,
            events=event_fns or None,
            dense_output=True,
        )
        if sol.status == -1:
            raise RobotDynamicsError(f"robot {model.name!r}: integration failed at t = {sol.t[-1]:g}: {sol.message}")
        t_new = float(sol.t[-1])
        while filled < len(times) and times[filled] < t_new:
            tk = float(times[filled])
            filled = _sample(segment, torque_fn, times, filled, tk, sol.sol(tk), out_q, out_qd, out_qdd, out_tau)
        y = sol.y[:, -1].copy()
        y[n:][stuck] = 0.0
        t = t_new
        force_slip = None
        if sol.status == 1:  # a terminal event
            events += 1
            if events > max_events:
                raise RobotDynamicsError(
                    f"robot {model.name!r}: more than {max_events} stick/slip transitions by t = {t:g} "
                    "(raise max_events if this is expected)"
                )
            force_slip = np.zeros(n)
            for fn, hits in zip(event_fns, sol.t_events, strict=True):
                if len(hits) == 0:
                    continue
                tag = fn.tag  # type: ignore[attr-defined]
                if tag[0] == "stop":
                    y[n + tag[1]] = 0.0
                else:
                    force_slip[tag[1]] = tag[2]
    return times.copy(), out_q, out_qd, out_qdd, out_tau


def _sample(
    segment: _Segment,
    torque_fn: TorqueFunction,
    times: FloatArray,
    k: int,
    t: float,
    y: FloatArray,
    out_q: FloatArray,
    out_qd: FloatArray,
    out_qdd: FloatArray,
    out_tau: FloatArray,
) -> int:
    n = segment.n
    yk = np.asarray(y, dtype=float).copy()
    yk[n:][segment.stuck[0]] = 0.0
    s = segment.state(t, yk)
    out_q[k] = yk[:n]
    out_qd[k] = yk[n:]
    out_qdd[k] = s.qdd[0]
    out_tau[k] = _torque(torque_fn, t, yk[:n], yk[n:], n)
    return k + 1
