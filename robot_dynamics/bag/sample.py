"""The sample bag: the default PUMA 560 simulated on an exciting trajectory, deterministic.

What is simulated (all with the project's own engine):

* **reference**: per joint a sum of three sines around the nominal pose ``qn``,
  ``q_d,j(t) = qn_j + a_j sum_k sin(2 pi f_k t + phi_jk) / 3``, ``f = (0.35, 0.8, 1.3)`` Hz, amplitudes
  0.4–0.9 rad: every joint moves and reverses several times, so friction and inertia both show;
* **controller**: computed torque with PD, ``tau = ID(q, qd, qdd_d + Kp e + Kd e')`` with the model's
  smooth friction compensation, ``Kp = 400 s^-2``, ``Kd = 40 s^-1``;
* **plant**: the engine's ``simulate(..., friction=True)``, i.e. the stick-slip-correct integrator
  (exact Coulomb/viscous motor friction of the PUMA data), driven by the applied torque;
* **sampling**: ``rate`` Hz with the sample instants jittered by ±``jitter`` of the period (a real
  driver's timing); the simulator is evaluated *at* those instants, so the stamps are right and
  non-uniform;
* **sensor noise** (seeded ``numpy.random.default_rng``): position σ = 1e-5 rad, velocity σ = 5e-4
  rad/s, effort σ per joint :data:`EFFORT_NOISE` N·m; receive times 0.2–0.6 ms after the stamps.

Topics: ``/joint_states`` (``sensor_msgs/JointState`` with position, velocity, effort) and
``/joint_trajectory`` (one ``trajectory_msgs/JointTrajectory``, positions/velocities/accelerations of
the reference at 50 Hz; received 0.2 s before the first joint state, starting ``trajectory_delay``
after it and ending ``trajectory_delay`` before the end, so a feed-forward node replaying the bag
holds, tracks, then holds again). Same arguments, same bag, byte for byte, on one machine; on another
CPU or BLAS build the last bits of the arithmetic differ and the adaptive integrator takes other steps,
so the data agree to a small fraction of the sensor noise (~1e-7 rad), not bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robot_dynamics.bag.writer import BagWriter
from robot_dynamics.dynamics import inverse_dynamics, simulate
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.models import load_robot
from robot_dynamics.user_input import check_joint_map, external_names

DEFAULT_PATH = Path("data") / "puma560_sample"
START_NS = 1_700_000_000_000_000_000  # 2023-11-14T22:13:20Z: a fixed, realistic epoch
FREQUENCIES_HZ = (0.35, 0.8, 1.3)
AMPLITUDES = (0.6, 0.4, 0.5, 0.8, 0.6, 0.9)  # rad, per joint (repeated for robots with more joints)
KP, KD = 400.0, 40.0
RTOL, ATOL = 1e-7, 1e-9  # integration tolerances (errors far below the sensor noise)
POSITION_NOISE = 1e-5
VELOCITY_NOISE = 5e-4
EFFORT_NOISE = (0.2, 0.2, 0.2, 0.02, 0.02, 0.02)  # N m per joint


@dataclass(frozen=True)
class SampleSettings:
    robot: str = "puma560"
    duration: float = 4.0
    rate: float = 200.0
    jitter: float = 0.1  # fraction of the period
    trajectory_rate: float = 50.0
    trajectory_delay: float = 0.5
    seed: int = 560
    storage: str = "mcap"


@dataclass(frozen=True)
class SampleData:
    """The simulated truth and the noisy measurements (model joint order)."""

    model: RobotModel
    t: FloatArray  # (N,) s, sample instants
    q: FloatArray
    qd: FloatArray
    qdd: FloatArray
    tau: FloatArray  # applied torques (noise-free)
    q_meas: FloatArray
    qd_meas: FloatArray
    tau_meas: FloatArray
    stamps: np.ndarray  # (N,) int64 header stamps
    timestamps: np.ndarray  # (N,) int64 receive times
    traj_t: FloatArray  # (K,) time_from_start
    traj_q: FloatArray
    traj_qd: FloatArray
    traj_qdd: FloatArray
    traj_stamp: int
    traj_timestamp: int


class Reference:
    """``q_d(t)`` and its derivatives (module docstring)."""

    def __init__(self, center: FloatArray) -> None:
        n = center.size
        self.center = center
        self.amplitude = np.array([AMPLITUDES[j % len(AMPLITUDES)] for j in range(n)]) / len(FREQUENCIES_HZ)
        self.omega = 2.0 * math.pi * np.array(FREQUENCIES_HZ)  # (K,)
        j, k = np.meshgrid(np.arange(n), np.arange(len(FREQUENCIES_HZ)), indexing="ij")
        self.phase = 2.0 * math.pi * ((0.37 * j + 0.61 * k * (j + 1)) % 1.0)  # (n, K), fixed

    def __call__(self, t: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        ts = np.atleast_1d(np.asarray(t, dtype=float))[:, None, None]  # (T, 1, 1)
        arg = self.omega * ts + self.phase  # (T, n, K)
        a = self.amplitude[:, None]
        q = self.center + np.sum(a * np.sin(arg), axis=-1)
        qd = np.sum(a * self.omega * np.cos(arg), axis=-1)
        qdd = -np.sum(a * self.omega**2 * np.sin(arg), axis=-1)
        return q, qd, qdd


def simulate_sample(settings: SampleSettings = SampleSettings(), model: RobotModel | None = None) -> SampleData:
    """Simulates the sample (no file written); ``model``: ``settings.robot`` already loaded (e.g. with
    a chain or locked joints chosen)."""
    model = model if model is not None else load_robot(settings.robot)
    n = model.dof
    rng = np.random.default_rng(settings.seed)
    center = np.asarray(model.named_poses.get("qn", np.zeros(n)), dtype=float)
    ref = Reference(center)
    count = round(settings.duration * settings.rate) + 1
    period = 1.0 / settings.rate
    jitter = rng.uniform(-settings.jitter, settings.jitter, count) * period
    jitter[0] = 0.0
    t = np.arange(count) * period + jitter

    def torque(time: float, q: FloatArray, qd: FloatArray) -> FloatArray:
        qr, qdr, qddr = (x[0] for x in ref(np.array([time])))
        command = qddr + KP * (qr - q) + KD * (qdr - qd)  # computed torque + PD
        return np.asarray(inverse_dynamics(model, q, qd, command, friction=True, smooth=True), dtype=float)

    q0, qd0, _ = (x[0] for x in ref(np.array([0.0])))
    sim = simulate(model, q0, qd0, torque, float(t[-1]), t_eval=t, friction=True, rtol=RTOL, atol=ATOL)
    ts, q, qd, qdd, tau = sim.t, sim.q, sim.qd, sim.qdd, sim.tau
    effort_sigma = np.array([EFFORT_NOISE[j % len(EFFORT_NOISE)] for j in range(n)])
    q_meas = q + POSITION_NOISE * rng.standard_normal(q.shape)
    qd_meas = qd + VELOCITY_NOISE * rng.standard_normal(qd.shape)
    tau_meas = tau + effort_sigma * rng.standard_normal(tau.shape)
    stamps = START_NS + np.round(ts * 1e9).astype(np.int64)
    timestamps = stamps + rng.integers(200_000, 600_000, count)

    delay = settings.trajectory_delay
    span = settings.duration - 2.0 * delay
    k = round(span * settings.trajectory_rate) + 1
    traj_t: FloatArray = np.linspace(0.0, span, k, dtype=np.float64)
    traj_q, traj_qd, traj_qdd = ref(traj_t + delay)
    return SampleData(
        model=model,
        t=ts,
        q=q,
        qd=qd,
        qdd=qdd,
        tau=tau,
        q_meas=q_meas,
        qd_meas=qd_meas,
        tau_meas=tau_meas,
        stamps=stamps,
        timestamps=timestamps,
        traj_t=traj_t,
        traj_q=traj_q,
        traj_qd=traj_qd,
        traj_qdd=traj_qdd,
        traj_stamp=START_NS + round(delay * 1e9),
        traj_timestamp=int(timestamps[0]) - 200_000_000,
    )


def write_sample_bag(
    path: str | Path = DEFAULT_PATH,
    settings: SampleSettings = SampleSettings(),
    *,
    overwrite: bool = False,
    model: RobotModel | None = None,
    joint_map: Mapping[str, str] | None = None,
) -> SampleData:
    """Simulates and writes the sample bag; returns the data.

    ``joint_map`` (``{bag name: model name}``): the joints are written with their bag names, as a
    driver that names them differently would publish them.
    """
    data = simulate_sample(settings, model)
    if joint_map:
        check_joint_map(data.model, joint_map, "joint map")
    names = external_names(data.model.joint_names, joint_map or {})
    with BagWriter(path, storage=settings.storage, overwrite=overwrite) as w:
        w.write_joint_trajectory(
            "joint_trajectory",
            data.traj_timestamp,
            names,
            data.traj_t,
            data.traj_q,
            data.traj_qd,
            data.traj_qdd,
            stamp=data.traj_stamp,
        )
        w.write_joint_states(
            "joint_states",
            data.timestamps,
            names,
            data.q_meas,
            data.qd_meas,
            data.tau_meas,
            stamps=data.stamps,
        )
    return data
