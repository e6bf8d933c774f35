"""Synthetic-truth data for identification: exciting motions and the torques a known model needs.

Used by the tests, the benchmark and the documentation to check the pipeline against known
parameters. A motion is, per joint, a random polynomial of degree ``degree`` in time (a sum of
Chebyshev polynomials on the record's span, drawn until it reverses at least twice, within
``amplitude`` of its centre): its derivatives are exact, and a Savitzky–Golay filter of degree
``>= degree - 1`` differentiates the velocity without error, so noise-free data give the parameters
to rounding. The torque is the engine's inverse dynamics of the ``truth`` model with its (smooth)
friction, plus an optional constant offset (sensor bias) and Gaussian noise.

:func:`perturbed_model` makes a "truth" from a nominal model: physically plausible changes of the
link masses, centres of mass and inertias, the armature and the friction.

:func:`stick_slip_record` makes recordings shaped like real ones: joints that stick at their velocity
reversals. Every joint follows a sine whose velocity is held at zero while it would be below a
fraction ``dwell`` of its peak (``v = sgn(v0) max(|v0| - dwell V, 0) / (1 - dwell)``, ``v0 = V sin(w t
+ phi)``): it stops with a jump of its acceleration, rests, and breaks away with another, as a joint
held by static friction does under a controller that tracks a motion through the reversal (``v0``
is a sum of two sines per joint, so the joints' motions are not proportional). The
torque is the stick-slip equation of motion of the ``truth`` model
(:mod:`robot_dynamics.dynamics.stick_slip`): a moving joint's friction is its exact law (Coulomb,
viscous, static and Stribeck levels: ``inverse_dynamics(..., smooth=False)``), a resting joint's is a
constraint torque inside its static band, ramped across the rest from ``0.95`` of the static level
of the direction it stopped from to ``0.95`` of that of the coming direction (a controller's torque
building up until the joint breaks away). The motion is prescribed rather than integrated, so a
recording of minutes costs a second; the test suite checks that the engine's stick-slip solver
keeps the resting joints at rest under the recorded torques and moves the others with the recorded
accelerations.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from numpy.polynomial import chebyshev

from robot_dynamics.model import FloatArray, Inertial, JointFriction, RobotModel

START_NS = 1_700_000_000_000_000_000


@dataclass(frozen=True)
class Recording:
    """Sampled motion and torques, model joint order."""

    t: FloatArray  # (N,) s
    q: FloatArray
    qd: FloatArray
    qdd: FloatArray
    tau: FloatArray  # measured (truth + offset + noise)
    stamps: np.ndarray  # (N,) int64 ns


def exciting_motion(
    model: RobotModel, duration: float, rate: float, *, seed: int = 0, degree: int = 7, amplitude: float = 0.8
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, np.ndarray]:
    """``t, q, qd, qdd, stamps``: per joint a random polynomial motion (module docstring).

    Times are whole nanoseconds (``t`` equals the stamps' offsets exactly); the motion stays within
    the joint limits where they are finite (centred between them).
    """
    rng = np.random.default_rng(seed)
    count = round(duration * rate) + 1
    stamps = START_NS + np.round(np.arange(count) * (1e9 / rate)).astype(np.int64)
    t = (stamps - stamps[0]).astype(np.float64) * 1e-9
    span = float(t[-1])
    x = 2.0 * t / span - 1.0  # in [-1, 1]
    n = model.dof
    q = np.empty((count, n))
    qd = np.empty((count, n))
    qdd = np.empty((count, n))
    for j, joint in enumerate(model.joints):
        lim = joint.limits
        centre = 0.0
        half_range = amplitude
        if np.isfinite(lim.lower) and np.isfinite(lim.upper):
            centre = 0.5 * (lim.lower + lim.upper)
            half_range = min(amplitude, 0.45 * (lim.upper - lim.lower))
        if joint.is_prismatic:
            half_range = min(half_range, 0.2)
        scale = 2.0 / span  # dx/dt
        for _ in range(100):  # until the joint reverses at least twice (friction needs both directions)
            coef = rng.normal(size=degree + 1) / np.sqrt(np.arange(1, degree + 2))
            coef[0] = 0.0
            coef *= half_range / max(np.sum(np.abs(coef)), 1e-12)  # |sum c_k T_k| <= sum |c_k| on [-1, 1]
            velocity = chebyshev.chebval(x, chebyshev.chebder(coef))
            if np.count_nonzero(np.diff(np.sign(velocity))) >= 2:
                break
        q[:, j] = centre + chebyshev.chebval(x, coef)
        qd[:, j] = chebyshev.chebval(x, chebyshev.chebder(coef)) * scale
        qdd[:, j] = chebyshev.chebval(x, chebyshev.chebder(coef, 2)) * scale**2
    return t, q, qd, qdd, stamps


def record(
    truth: RobotModel,
    duration: float = 3.0,
    rate: float = 250.0,
    *,
    seed: int = 0,
    effort_noise: float | FloatArray = 0.0,
    offset: FloatArray | None = None,
    degree: int = 7,
    amplitude: float = 0.8,
) -> Recording:
    """An exciting motion of ``truth`` and its measured torques (module docstring)."""
    from robot_dynamics.dynamics import inverse_dynamics

    t, q, qd, qdd, stamps = exciting_motion(truth, duration, rate, seed=seed, degree=degree, amplitude=amplitude)
    tau = np.asarray(inverse_dynamics(truth, q, qd, qdd, friction=True, smooth=True), dtype=float)
    if offset is not None:
        tau = tau + np.asarray(offset, dtype=float)
    sigma = np.broadcast_to(np.asarray(effort_noise, dtype=float), (truth.dof,))
    if np.any(sigma > 0.0):
        tau = tau + sigma * np.random.default_rng(seed + 1_000_003).standard_normal(tau.shape)
    return Recording(t, q, qd, qdd, tau, stamps)


def stick_slip_record(
    truth: RobotModel,
    duration: float = 6.0,
    rate: float = 1000.0,
    *,
    seed: int = 0,
    dwell: float = 0.1,
    amplitude: float = 0.5,
    frequency: tuple[float, float] = (0.2, 0.5),
    effort_noise: float | FloatArray = 0.0,
    velocity_noise: float = 0.0,
) -> Recording:
    """A recording with stiction at every velocity reversal (module docstring).

    Per joint two sines with frequencies drawn from ``frequency`` (Hz), the motion scaled to
    ``amplitude`` (rad or m, at most 0.4 of a finite range, about its centre); ``dwell``: the fraction of
    the peak velocity below which the joint rests. Noise (seeded) on the efforts and the velocities
    (``Recording.qdd`` is exact).
    """
    from robot_dynamics.dynamics import inverse_dynamics
    from robot_dynamics.friction.parameters import friction_parameters

    if not 0.0 <= dwell < 1.0:
        raise ValueError(f"dwell must be in [0, 1), got {dwell}")
    rng = np.random.default_rng(seed)
    n = truth.dof
    count = round(duration * rate) + 1
    stamps = START_NS + np.round(np.arange(count) * (1e9 / rate)).astype(np.int64)
    t = (stamps - stamps[0]).astype(np.float64) * 1e-9
    centre, half = np.zeros(n), np.full(n, float(amplitude))
    for j, joint in enumerate(truth.joints):
        lim = joint.limits
        if np.isfinite(lim.lower) and np.isfinite(lim.upper):
            centre[j] = 0.5 * (lim.lower + lim.upper)
            half[j] = min(half[j], 0.4 * (lim.upper - lim.lower))
    omega = 2.0 * np.pi * rng.uniform(frequency[0], frequency[1], (2, n))
    phase = rng.uniform(0.0, 2.0 * np.pi, (2, n))
    weight = np.vstack([np.ones(n), rng.uniform(0.3, 0.7, n)])  # velocity amplitudes, scaled below
    # q: the velocity integrated on a grid 20 times finer
    fine: FloatArray = np.linspace(0.0, float(t[-1]), 20 * (count - 1) + 1, dtype=np.float64)

    def sines(time: FloatArray) -> tuple[FloatArray, FloatArray]:
        arg = time[:, None, None] * omega + phase  # (T, 2, n)
        return np.sum(weight * np.sin(arg), axis=1), np.sum(weight * omega * np.cos(arg), axis=1)

    v0_fine, _ = sines(fine)
    peak = np.max(np.abs(v0_fine), axis=0)

    def velocity(time: FloatArray) -> tuple[FloatArray, FloatArray]:
        v0, a0 = sines(time)
        moving = np.abs(v0) > dwell * peak
        v = np.where(moving, v0 - np.sign(v0) * dwell * peak, 0.0) / (1.0 - dwell)
        return v, np.where(moving, a0, 0.0) / (1.0 - dwell)

    v_fine, _ = velocity(fine)
    q_fine = np.concatenate([np.zeros((1, n)), np.cumsum(0.5 * (v_fine[1:] + v_fine[:-1]) * np.diff(fine)[:, None], 0)])
    scale = half / np.maximum(0.5 * np.ptp(q_fine, axis=0), 1e-12)  # the motion spans +-half about the centre
    q = centre + scale * (q_fine[::20] - 0.5 * (q_fine.max(0) + q_fine.min(0)))
    qd, qdd = velocity(t)
    qd, qdd = qd * scale, qdd * scale
    tau = np.asarray(inverse_dynamics(truth, q, qd, qdd, friction=True, smooth=False), dtype=float)
    fp = friction_parameters(truth)
    for j, joint in enumerate(truth.joints):
        odd, even = float(fp.level_odd[j]), float(fp.level_even[j])
        band = joint.friction.static or (even + odd, even - odd)  # (T+ >= 0, T- <= 0): what holds it at rest
        resting = qd[:, j] == 0.0
        edges = np.flatnonzero(np.diff(np.concatenate([[0], resting.astype(np.int8), [0]])))
        for start, stop in zip(edges[::2], edges[1::2], strict=True):
            before = np.sign(qd[start - 1, j]) if start > 0 else -np.sign(qd[stop, j]) if stop < count else 1.0
            held, coming = (band[0], band[1]) if before > 0 else (band[1], band[0])
            tau[start:stop, j] += 0.95 * (held + (coming - held) * np.linspace(0.0, 1.0, stop - start))
    sigma = np.broadcast_to(np.asarray(effort_noise, dtype=float), (n,))
    noise = np.random.default_rng(seed + 1_000_003)
    tau_meas = tau + sigma * noise.standard_normal(tau.shape) if np.any(sigma > 0.0) else tau
    qd_meas = qd + velocity_noise * noise.standard_normal(qd.shape) if velocity_noise > 0.0 else qd
    return Recording(t, q, qd_meas, qdd, tau_meas, stamps)


def write_bag(
    path: str | Path,
    rec: Recording,
    joint_names: list[str],
    *,
    effort: bool = True,
    velocity: bool = True,
    topic: str = "joint_states",
    storage: str = "mcap",
) -> Path:
    """A rosbag2 bag with the recording's joint states (receive times 0.3 ms after the stamps)."""
    from robot_dynamics.bag.writer import BagWriter

    with BagWriter(path, storage=storage, overwrite=True) as writer:
        writer.write_joint_states(
            topic,
            rec.stamps + 300_000,
            joint_names,
            rec.q,
            rec.qd if velocity else None,
            rec.tau if effort else None,
            stamps=rec.stamps,
        )
    return Path(path)


def perturbed_model(model: RobotModel, *, seed: int = 0, scale: float = 0.2, smoothing: float = 0.01) -> RobotModel:
    """A "truth" near ``model`` (module docstring).

    Masses and inertias scaled by ``1 +- scale``, centres of mass moved by up to ``0.1 scale`` m (each
    inertia is first moved strictly inside the physical set by adding ``delta E``: the PUMA's link 3
    violates the triangle inequality as published, the textbook rods are on its boundary; uniform
    scaling keeps the inequality), motor
    inertias scaled; friction moved to the joint side with the viscous level and the symmetric
    Coulomb level ``(Tc+ - Tc-)/2`` scaled (random where the model has none) and the asymmetric part
    ``(Tc+ + Tc-)/2`` kept (it is indistinguishable from an offset while a joint moves, so the
    default parameter set keeps it at its model value); tanh width ``smoothing``.
    """
    from robot_dynamics.friction.parameters import friction_parameters

    rng = np.random.default_rng(seed)
    fp = friction_parameters(model)
    joints = []
    for j, joint in enumerate(model.joints):
        link = joint.link
        if link.mass > 0.0:
            link = Inertial(
                link.mass * (1.0 + rng.uniform(-scale, scale)),
                link.com + rng.uniform(-0.1 * scale, 0.1 * scale, 3),
                _rigid(link.inertia) * (1.0 + rng.uniform(-scale, scale)),
            )
        motor = joint.motor
        if motor is not None:
            factor = 1.0 + rng.uniform(-scale, scale)
            motor = replace(motor, inertia=motor.inertia * factor, viscous=0.0, coulomb=(0.0, 0.0))
        size = 1.0 if joint.link.mass > 1.0 else 0.1
        viscous = float(fp.total_viscous[j]) or float(rng.uniform(0.5, 5.0)) * size
        odd = float(fp.level_odd[j]) or float(rng.uniform(0.5, 3.0)) * size
        even = float(fp.level_even[j])
        viscous *= 1.0 + rng.uniform(-scale, scale)
        odd = max(odd * (1.0 + rng.uniform(-scale, scale)), abs(even))
        friction = JointFriction(viscous=viscous, coulomb=(odd + even, even - odd), smoothing_velocity=smoothing)
        joints.append(replace(joint, link=link, motor=motor, friction=friction))
    return model.with_changes(joints=tuple(joints), name=f"{model.name}_truth")


def _rigid(inertia: FloatArray) -> FloatArray:
    """``inertia + delta E``: the smallest ``delta >= 0`` meeting the triangle inequality, plus 5 % of the
    largest moment, so the body is strictly inside the physical set (no thin rods or flat plates)."""
    moments = np.sort(np.linalg.eigvalsh(inertia))
    delta = max(moments[2] - moments[0] - moments[1], 0.0)
    return inertia + (delta + 0.05 * moments[2]) * np.eye(3)
