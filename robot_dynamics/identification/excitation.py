"""Excitation trajectories for identification: a finite Fourier series with a well-conditioned regressor.

(The module is longer than 400 lines because the design is one algorithm: the objective, its analytic
gradient, the limit constraints and the multi-start driver; the series itself is in ``fourier.py``
and the trajectory files in ``excitation_files.py``.)

Swevers, Ganseman, Tükel, De Schutter & Van Brussel, "Optimal robot excitation and identification",
IEEE Trans. Robotics and Automation 13(5), 1997, eq. (8): every joint follows a periodic finite
Fourier series of base angular frequency ``w = 2 pi f``,

    q_j(t)   = q0_j + sum_k  a_jk / (w k) sin(w k t) - b_jk / (w k) cos(w k t)      (k = 1..K)
    qd_j(t)  =        sum_k  a_jk cos(w k t) + b_jk sin(w k t)
    qdd_j(t) =        sum_k -a_jk w k sin(w k t) + b_jk w k cos(w k t)

so velocities and accelerations are analytic (no differentiation noise when the measured data are
averaged over periods) and position, velocity and acceleration are *linear* in the coefficients
``x_j = (q0_j, a_j1..a_jK, b_j1..b_jK)``. The coefficients minimise the condition number of the base
regressor (:func:`robot_dynamics.identification.base.base_parameters`) stacked over one period,

    cond(W) = sigma_max(W) / sigma_min(W),   W = [Y_b(q(t_m), qd(t_m), qdd(t_m)) / s]_m,

with the base columns divided by fixed typical magnitudes ``s`` (their RMS at random states,
``BaseParameters.scale``) so the number does not depend on units. The limits are linear inequality
constraints at a grid of times (16 per period of the highest harmonic): positions within the joint
limits, ``|qd| <= v_max``, ``|qdd| <= a_max``, each reduced by ``margin``. SciPy's SLSQP minimises
``log cond`` from several random feasible starts (deterministic for a ``seed``); the gradient is
exact in the coefficients and uses forward differences of the regressor in each joint's ``q, qd,
qdd`` (one batched regressor call) with the singular-value derivative ``d sigma = u^T dW v``. The
result is then checked on a fine grid (64 samples per period of the highest harmonic) and, if the
grid constraints let it overshoot between their samples, shrunk about ``q0`` until it fits.

The series and the limits (defaults where the model has none, listed in
:attr:`ExcitationResult.notes`) are in :mod:`robot_dynamics.identification.fourier`; writing the
trajectory (YAML, rosbag2) in :mod:`robot_dynamics.identification.excitation_files`.

The series does not start at rest. The written points start at the calmest instant of the period
(least ``sum (qd/v)^2 + (qdd/a)^2``); without a ramp the controller must be at the first point when
the trajectory starts. With ``ramp > 0`` a rest point is added before and after, joined to the
series by the quintic segments :class:`~robot_dynamics.trajectory.JointTrajectorySampler` (and so
every node) uses for points with velocities and accelerations; the ramp is lengthened until it
respects the limits.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.optimize

from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.trajectory import JointTrajectorySampler

from .base import BaseParameters, base_parameters
from .fourier import (
    DEFAULT_ACCELERATION,
    DEFAULT_VELOCITY,
    ExcitationError,
    ExcitationLimits,
    FourierSeries,
    feasible_scale,
    fourier_basis,
    margins,
)
from .parameters import ParameterSet
from .regressor import regressor

CONSTRAINT_SAMPLES = 16  # per period of the highest harmonic
CHECK_SAMPLES = 64  # per period of the highest harmonic
STEP = 1e-6  # forward-difference step of the regressor in q, qd, qdd


def condition_number(
    model: RobotModel, q: FloatArray, qd: FloatArray, qdd: FloatArray, base: BaseParameters, pset: ParameterSet
) -> float:
    """Condition number of the base regressor stacked over the states ``(M, n)``, columns divided by
    ``base.scale`` (module docstring); ``inf`` if the states do not excite every base parameter."""
    w = regressor(model, q, qd, qdd, pset)[:, :, base.independent] / base.scale
    sv = np.linalg.svd(w.reshape(-1, base.rank), compute_uv=False)
    return float(sv[0] / sv[-1]) if sv[-1] > 0.0 else math.inf


class _Objective:
    """``log cond`` of the scaled base regressor and its gradient in the coefficient vector."""

    def __init__(
        self, model: RobotModel, base: BaseParameters, pset: ParameterSet, bases: tuple[FloatArray, ...]
    ) -> None:
        self.model, self.base, self.pset, self.bases = model, base, pset, bases
        self.n = model.dof
        self._cache: tuple[bytes, float, FloatArray] | None = None

    def _regressor(self, q: FloatArray, qd: FloatArray, qdd: FloatArray) -> FloatArray:
        y = regressor(self.model, q, qd, qdd, self.pset)[:, :, self.base.independent]
        return np.asarray(y / self.base.scale)

    def __call__(self, x: FloatArray) -> tuple[float, FloatArray]:
        key = x.tobytes()
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1], self._cache[2]
        n = self.n
        xs = x.reshape(n, -1).T  # (2K+1, n)
        states = [p @ xs for p in self.bases]  # q, qd, qdd (M, n)
        m = states[0].shape[0]
        # one batched call: the states, then each joint's q, qd, qdd stepped by STEP
        stacked = [np.tile(s, (1 + 3 * n, 1)) for s in states]
        for which in range(3):
            for j in range(n):
                block = 1 + which * n + j
                stacked[which][block * m : (block + 1) * m, j] += STEP
        y = self._regressor(*stacked).reshape(1 + 3 * n, m, n, self.base.rank)
        w = y[0].reshape(m * n, -1)
        # extreme singular pairs from the Gram matrix: LAPACK's SVD is far slower on a loaded machine
        ev, vecs = np.linalg.eigh(w.T @ w)
        if not ev[0] > 1e-300:
            value, grad = 1e3, np.zeros_like(x)
        else:
            sv = np.sqrt(ev[[-1, 0]])
            v_top, v_low = vecs[:, -1], vecs[:, 0]
            u_top, u_low = (w @ v_top) / sv[0], (w @ v_low) / sv[1]
            value = float(np.log(sv[0] / sv[1]))
            dy = (y[1:] - y[0]) / STEP  # (3n, M, n, p_b)
            top = np.einsum("smip,mi,p->sm", dy, u_top.reshape(m, n), v_top) / sv[0]
            low = np.einsum("smip,mi,p->sm", dy, u_low.reshape(m, n), v_low) / sv[1]
            d = (top - low).reshape(3, n, m)  # d log cond / d (q, qd, qdd)[m, j]
            grad = sum(d[k] @ self.bases[k] for k in range(3)).reshape(-1)
        self._cache = (key, value, grad)
        return value, grad

    def value(self, x: FloatArray) -> float:
        return self(x)[0]

    def gradient(self, x: FloatArray) -> FloatArray:
        return self(x)[1]


def _constraints(limits: ExcitationLimits, bases: tuple[FloatArray, ...]) -> tuple[FloatArray, FloatArray]:
    """``G x <= h`` for the grid: block-diagonal over joints, rows q <= up, -q <= -low, +-qd, +-qdd."""
    pq, pv, pa = bases
    n, width = limits.lower.size, pq.shape[1]
    rows, rhs = [], []
    for j in range(n):
        blk = np.vstack((pq, -pq, pv, -pv, pa, -pa))
        g = np.zeros((blk.shape[0], n * width))
        g[:, j * width : (j + 1) * width] = blk
        v, a = limits.velocity[j], limits.acceleration[j]
        rows.append(g)
        rhs.append(np.repeat(np.array([limits.upper[j], -limits.lower[j], v, v, a, a]), pq.shape[0]))
    return np.vstack(rows), np.concatenate(rhs)


def _random_start(
    rng: np.random.Generator, limits: ExcitationLimits, frequency: float, harmonics: int, t: FloatArray
) -> FourierSeries:
    n = limits.lower.size
    decay = 1.0 / np.arange(1, harmonics + 1)
    a, b = rng.normal(size=(n, harmonics)) * decay, rng.normal(size=(n, harmonics)) * decay
    series = FourierSeries(frequency, 0.5 * (limits.lower + limits.upper), a, b)
    return series.scaled(rng.uniform(0.6, 0.9) * feasible_scale(series, limits, t))


@dataclass(frozen=True, eq=False)
class ExcitationResult:
    """A designed excitation: the series, the points to send and how good and safe they are.

    ``times, positions, velocities, accelerations``: the trajectory's points (``rate`` Hz over
    ``duration``, after ``ramp`` seconds of ramp-in when a ramp was asked for, and a ramp-out);
    ``condition_number``: of the scaled base regressor at the series' points (module docstring);
    ``initial_condition_number``: the same for the first random feasible start (a random series of
    the same size); ``start_condition_numbers`` / ``final_condition_numbers`` per start;
    ``margins``: per joint, the smallest distance to each true limit as a fraction (position of the
    range, velocity and acceleration of the limit); ``notes``: defaults used.
    """

    model: RobotModel
    series: FourierSeries
    duration: float
    rate: float
    ramp: float
    times: FloatArray
    positions: FloatArray
    velocities: FloatArray
    accelerations: FloatArray
    condition_number: float
    initial_condition_number: float
    start_condition_numbers: tuple[float, ...]
    final_condition_numbers: tuple[float, ...]
    base: BaseParameters
    limits: ExcitationLimits
    margins: dict[str, FloatArray]
    notes: tuple[str, ...]
    seconds: float
    settings: dict[str, float | int] = field(default_factory=dict)

    def sampler(self) -> JointTrajectorySampler:
        return JointTrajectorySampler(self.times, self.positions, self.velocities, self.accelerations)

    def summary(self) -> dict[str, object]:
        """JSON-ready description (no point data)."""
        names = self.model.joint_names
        return {
            "robot": self.model.name,
            "joints": names,
            "method": "finite Fourier series, min cond of the scaled base regressor (Swevers et al. 1997)",
            **self.settings,
            "duration_s": self.duration,
            "ramp_s": self.ramp,
            "points": int(self.times.size),
            "base_parameters": self.base.rank,
            "condition_number": self.condition_number,
            "random_condition_number": self.initial_condition_number,
            "start_condition_numbers": list(self.start_condition_numbers),
            "final_condition_numbers": list(self.final_condition_numbers),
            "design_seconds": self.seconds,
            "limits": {
                "lower": self.limits.lower.tolist(),
                "upper": self.limits.upper.tolist(),
                "velocity": self.limits.velocity.tolist(),
                "acceleration": self.limits.acceleration.tolist(),
            },
            "margins": {k: dict(zip(names, v.tolist(), strict=True)) for k, v in self.margins.items()},
            "notes": list(self.notes),
            "series": {
                "base_frequency_hz": self.series.frequency,
                "q0": self.series.offset.tolist(),
                "a": self.series.a.tolist(),
                "b": self.series.b.tolist(),
            },
        }


def _check_inputs(duration: float, harmonics: int, rate: float, frequency: float, margin: float) -> int:
    """Validates the numbers (``duration > 0`` checked before); returns the periods in ``duration``."""
    if isinstance(harmonics, bool) or int(harmonics) != harmonics or harmonics < 1:
        raise ExcitationError(f"harmonics must be an integer >= 1, got {harmonics}")
    if not (math.isfinite(rate) and rate > 0.0):
        raise ExcitationError(f"rate must be a positive number of points per second, got {rate}")
    if not (math.isfinite(frequency) and frequency > 0.0):
        raise ExcitationError(f"base frequency must be a positive number of Hz, got {frequency}")
    if not 0.0 <= margin < 1.0:
        raise ExcitationError(f"margin must be in [0, 1), got {margin}")
    periods = duration * frequency
    if periods < 1.0 - 1e-9 or abs(periods - round(periods)) > 1e-6 * max(1.0, periods):
        raise ExcitationError(
            f"duration {duration:g} s must be a whole number of periods of the base frequency {frequency:g} Hz "
            f"({periods:.6g} periods): the series is periodic"
        )
    if rate * duration < 2 * harmonics + 1:
        raise ExcitationError(f"rate {rate:g} Hz gives too few points for {harmonics} harmonics over {duration:g} s")
    return round(periods)


def design_excitation(
    model: RobotModel,
    duration: float,
    harmonics: int,
    *,
    base_frequency: float | None = None,
    rate: float = 100.0,
    seed: int = 0,
    starts: int = 3,
    max_iterations: int = 150,
    margin: float = 0.05,
    velocity: float = DEFAULT_VELOCITY,
    acceleration: float = DEFAULT_ACCELERATION,
    position_range: float | None = None,
    ramp: float = 0.0,
    pset: ParameterSet | None = None,
    base: BaseParameters | None = None,
    samples: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> ExcitationResult:
    """Designs a finite-Fourier-series excitation of ``harmonics`` per joint over ``duration`` seconds.

    ``base_frequency`` defaults to ``1 / duration`` (one period); ``duration`` must hold a whole
    number of its periods. ``rate``: points per second of the written trajectory. ``seed`` and
    ``starts``: random feasible starts of SLSQP (at most ``max_iterations`` each); the best wins.
    ``margin``: fraction of each limit kept free. ``velocity``/``acceleration``: limits where the
    model has none; ``position_range``: ``+-`` range for joints without position limits.
    ``pset``/``base``: the parameters to excite (default ``ParameterSet()``, its base set);
    ``samples``: regressor samples per period for the objective (default ``max(60, 20 K)``).
    Raises :class:`ExcitationError` for bad input.
    """
    started = time.perf_counter()
    if not (math.isfinite(duration) and duration > 0.0):
        raise ExcitationError(f"duration must be a positive number of seconds, got {duration}")
    frequency = 1.0 / duration if base_frequency is None else float(base_frequency)
    periods = _check_inputs(duration, harmonics, rate, frequency, margin)
    if not (math.isfinite(ramp) and ramp >= 0.0):
        raise ExcitationError(f"ramp must be >= 0 seconds, got {ramp}")
    if starts < 1 or max_iterations < 1:
        raise ExcitationError(f"starts and max_iterations must be >= 1, got {starts} and {max_iterations}")
    harmonics = int(harmonics)
    true_limits = ExcitationLimits.of(
        model, velocity=velocity, acceleration=acceleration, position_range=position_range
    )
    design = true_limits.shrunk(margin)
    pset = pset or ParameterSet()
    base = base or base_parameters(model, pset)
    period = 1.0 / frequency
    omega = 2.0 * math.pi * frequency
    m_obj = samples or max(60, 20 * harmonics)
    t_obj = np.arange(m_obj) * period / m_obj
    t_con = np.arange(CONSTRAINT_SAMPLES * harmonics) * period / (CONSTRAINT_SAMPLES * harmonics)
    t_chk = np.arange(CHECK_SAMPLES * harmonics) * period / (CHECK_SAMPLES * harmonics)
    objective = _Objective(model, base, pset, fourier_basis(t_obj, omega, harmonics))
    g, h = _constraints(design, fourier_basis(t_con, omega, harmonics))
    constraint = {"type": "ineq", "fun": lambda x: h - g @ x, "jac": lambda x: -g}
    t_out = np.arange(round(duration * rate) + 1) / rate

    def cond_at(series: FourierSeries) -> float:
        return condition_number(model, *series.evaluate(t_out[t_out < period]), base, pset)

    rng = np.random.default_rng(seed)
    best: FourierSeries | None = None
    initial, finals = [], []
    for _k in range(starts):
        start = _random_start(rng, design, frequency, harmonics, t_chk)
        x0 = start.coefficients().reshape(-1)
        res = scipy.optimize.minimize(
            objective.value,
            x0,
            jac=objective.gradient,
            method="SLSQP",
            constraints=[constraint],
            options={"maxiter": max_iterations, "ftol": 1e-9},
        )
        x = res.x if np.all(np.isfinite(res.x)) and res.fun <= objective.value(x0) else x0
        found = FourierSeries.from_coefficients(frequency, x.reshape(model.dof, 2 * harmonics + 1))
        found = found.scaled(min(1.0, feasible_scale(found, design, t_chk)))
        initial.append(cond_at(start))
        finals.append(cond_at(found))
        if best is None or finals[-1] < min(finals[:-1], default=math.inf):
            best = found
        if progress is not None:
            progress(1)
    assert best is not None
    phase = _quiet_phase(best, design, t_chk)
    q, qd, qdd = best.evaluate(phase + t_out)
    times, points, ramp = t_out, (q, qd, qdd), float(ramp)
    if ramp > 0.0:
        times, points, ramp = _ramped(model, t_out, points, design, true_limits, ramp)
    fine = JointTrajectorySampler(times, *points).sample_many(
        np.linspace(0.0, float(times[-1]), max(2000, int(times[-1] * 1000)))
    )
    margin_now = margins(fine.positions, fine.velocities, fine.accelerations, true_limits)
    return ExcitationResult(
        model=model,
        series=best,
        duration=duration,
        rate=rate,
        ramp=ramp,
        times=times,
        positions=points[0],
        velocities=points[1],
        accelerations=points[2],
        condition_number=min(finals),
        initial_condition_number=initial[0],
        start_condition_numbers=tuple(initial),
        final_condition_numbers=tuple(finals),
        base=base,
        limits=true_limits,
        margins=margin_now,
        notes=true_limits.notes,
        seconds=time.perf_counter() - started,
        settings={
            "harmonics": harmonics,
            "base_frequency_hz": frequency,
            "periods": periods,
            "rate_hz": rate,
            "seed": seed,
            "starts": starts,
            "margin": margin,
            "start_phase_s": phase,
        },
    )


def _quiet_phase(series: FourierSeries, limits: ExcitationLimits, t: FloatArray) -> float:
    """The time in the period where the motion is calmest (least ``sum (qd/v)^2 + (qdd/a)^2``): the
    written trajectory starts there, so the controller (or the ramp) meets the series gently."""
    _, qd, qdd = series.evaluate(t)
    load = np.sum((qd / limits.velocity) ** 2 + (qdd / limits.acceleration) ** 2, axis=1)
    return float(t[int(np.argmin(load))])


def _ramped(
    model: RobotModel,
    t: FloatArray,
    points: tuple[FloatArray, FloatArray, FloatArray],
    design: ExcitationLimits,
    limits: ExcitationLimits,
    ramp: float,
) -> tuple[FloatArray, tuple[FloatArray, FloatArray, FloatArray], float]:
    """Points with a rest point before and after, joined by the sampler's quintic segments of ``ramp``
    seconds; rest at ``q -+ qd ramp / 2`` (within the limits), so the ramp moves the way the series
    does. A ramp that breaks a limit is lengthened (x1.5, up to 8 times); the ramp used is returned."""
    q, qd, qdd = points
    zero = np.zeros((1, q.shape[1]))
    for _ in range(8):
        rest_in = np.clip(q[0] - 0.5 * ramp * qd[0], design.lower, design.upper)
        rest_out = np.clip(q[-1] + 0.5 * ramp * qd[-1], design.lower, design.upper)
        times = np.concatenate(([0.0], t + ramp, [t[-1] + 2.0 * ramp]))
        out = (
            np.vstack((rest_in, q, rest_out)),
            np.vstack((zero, qd, zero)),
            np.vstack((zero, qdd, zero)),
        )
        sampler = JointTrajectorySampler(times, *out)
        s = np.linspace(0.0, ramp, 500)
        ends = sampler.sample_many(np.concatenate((s, times[-1] - s)))
        room = margins(ends.positions, ends.velocities, ends.accelerations, limits)
        if all(bool(np.all(r >= 0.0)) for r in room.values()):
            return times, out, ramp
        ramp *= 1.5
    kind, r = min(room.items(), key=lambda item: float(item[1].min()))
    raise ExcitationError(
        f"no ramp up to {ramp / 1.5:.3g} s keeps joint {model.joint_names[int(np.argmin(r))]} within its {kind} "
        "limit: give a longer ramp"
    )
