"""A run of a plant under the control law, with pushes at the tool, recorded as a real arm records it.

:func:`run_plant` steps a :class:`~robot_dynamics.plant.base.Plant` one control period at a time (no
ROS, deterministic), as the simulator node does in lock-step with the feed-forward node:

* at ``t_k = k * period`` the controller (:class:`robot_dynamics.control.Controller`: feed-forward, PD
  + feed-forward or computed torque, with the node's hold rules) answers the state ``(q_k, qd_k)``,
  tracking an optional trajectory with the node's activation rules
  (:class:`robot_dynamics.feedforward.TrajectorySchedule`; it starts at ``trajectory_start``);
* the **pushes** active at ``t_k`` (:class:`Push`: a constant wrench on the tool from ``start`` for
  ``duration`` s, in world axes at the tool point, the force and moment the environment exerts; pushes
  that overlap add up) are the plant's external wrench for that period;
* the plant applies the command (limited to the effort limits) for one period.

The :class:`PlantRun` holds what a real arm's driver publishes — ``joint_states`` with position,
velocity and **effort = the joints' torque reading over the period that ended at the sample** (as the
simulator node publishes: :attr:`Plant.effort`, the torque applied, or with link-side torque sensing
the torque the joints passed on to their links; the first sample carries the first period's) — and, for checking an
estimator, the truth: the wrench applied over the same period and its joint torque ``J(q)^T F``
(``J`` the tool-point Jacobian in world axes of the plant's own model at the pose where the period
began, where the plant applied it). With a sensor model around the plant
(:class:`~robot_dynamics.plant.sensors.SensedPlant`) ``q``, ``qd``, ``effort`` are the measured signals
the controller answered, and the run also holds the truth: ``true_q``, ``true_qd``, ``applied`` (the
torque really applied over the period ending at the sample) and ``true_link_torque`` (where the plant
computes it); on a bare plant the truth equals the state. :func:`write_run_bag` writes the joint states
as a rosbag2 bag (:class:`robot_dynamics.bag.BagWriter`), which every command reads as it reads a real
recording, and with ``truth_topic`` the truth beside them (position, velocity, effort = the torque
really applied).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.bag.sample import START_NS
from robot_dynamics.bag.writer import BagWriter
from robot_dynamics.control import Controller
from robot_dynamics.dynamics import jacobian
from robot_dynamics.errors import StateError
from robot_dynamics.feedforward import TrajectorySchedule
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.plant.base import Plant
from robot_dynamics.trajectory import JointTrajectorySampler


@dataclass(frozen=True)
class Push:
    """``wrench`` ``[fx, fy, fz, mx, my, mz]`` (N, N·m; world axes, at the tool point, exerted on the
    robot) from ``start`` for ``duration`` seconds of the run."""

    start: float
    duration: float
    wrench: tuple[float, float, float, float, float, float]

    def __post_init__(self) -> None:
        w = np.asarray(self.wrench, dtype=np.float64)
        if w.shape != (6,) or not np.isfinite(w).all():
            raise StateError(f"push wrench: expected 6 finite numbers [fx, fy, fz, mx, my, mz], got {self.wrench!r}")
        if not (np.isfinite(self.start) and self.start >= 0.0 and np.isfinite(self.duration) and self.duration > 0.0):
            raise StateError(f"push: start >= 0 and duration > 0 s expected, got {self.start!r}, {self.duration!r}")

    @property
    def end(self) -> float:
        return self.start + self.duration


@dataclass(frozen=True)
class PlantRun:
    """Samples ``k = 0..N-1`` at ``t`` ``(N,)`` s (from 0): the state ``q``, ``qd`` ``(N, n)``; ``effort``
    ``(N, n)`` the joints' torque reading over the period ending at ``t_k``; ``wrench`` ``(N, 6)`` the external
    wrench applied over that period (world axes) and ``tau_ext`` ``(N, n)`` its joint torque; the
    desired position ``q_desired`` ``(N, n)``; ``contacts`` ``(N,)`` the plant's contact count (MuJoCo's
    own contacts, e.g. a self-collision; 0 for an engine without contacts); the truth ``true_q``,
    ``true_qd`` ``(N, n)``, ``applied`` ``(N, n)`` the torque really applied over the period ending at
    ``t_k`` and ``true_link_torque`` ``(N, n)`` the link-side torque over it (None where the plant does not
    compute it); with obstacles in a MuJoCo plant, ``obstacle_force`` ``(N, m, 3)`` the force each exerts
    on the arm over the period ending at ``t_k`` (world axes; the ground truth of a collision) and their
    names."""

    t: FloatArray
    q: FloatArray
    qd: FloatArray
    effort: FloatArray
    wrench: FloatArray
    tau_ext: FloatArray
    q_desired: FloatArray
    contacts: np.ndarray
    joint_names: tuple[str, ...]
    period: float
    true_q: FloatArray
    true_qd: FloatArray
    applied: FloatArray
    true_link_torque: FloatArray | None = None
    obstacle_force: FloatArray | None = None  # (N, m, 3) each obstacle's force on the arm over the period
    obstacle_names: tuple[str, ...] = ()

    @property
    def contact_force(self) -> FloatArray:
        """``(N,)`` the magnitude of the obstacles' total force on the arm over each period (N; 0 without
        obstacles)."""
        if self.obstacle_force is None:
            return np.zeros(self.t.size)
        return np.asarray(np.linalg.norm(self.obstacle_force.sum(axis=1), axis=1))

    @property
    def pushed(self) -> np.ndarray:
        """``(N,)`` whether a wrench was applied over the period ending at each sample."""
        return np.asarray(np.any(self.wrench != 0.0, axis=1))


def _wrench_schedule(pushes: Sequence[Push], steps: int, period: float) -> FloatArray:
    """``(steps, 6)``: the wrench of each period, pushes rounded to whole periods (``start <= t_k < end``)."""
    out = np.zeros((steps, 6))
    for p in pushes:
        first, last = round(p.start / period), round(p.end / period)
        out[first:last] += np.asarray(p.wrench, dtype=np.float64)
    return out


def run_plant(
    plant: Plant,
    controller: Controller,
    duration: float,
    *,
    trajectory: JointTrajectorySampler | None = None,
    trajectory_start: float = 0.0,
    pushes: Sequence[Push] = (),
    reference: RobotModel | None = None,
) -> PlantRun:
    """``duration`` s of the plant (from its current state) under ``controller`` (module docstring).

    ``reference``: the model whose Jacobian gives ``tau_ext`` (default: the plant's own model, its
    ``true_model`` where it has one).
    """
    period, n = plant.period, plant.model.dof
    steps = round(duration / period)
    if steps < 1:
        raise StateError(f"duration: at least one period ({period} s) expected, got {duration!r} s")
    period_ns = round(period * 1e9)
    schedule = TrajectorySchedule()
    if trajectory is not None:
        schedule.submit(trajectory, round(trajectory_start * 1e9), 0)
    q, qd = np.empty((steps + 1, n)), np.empty((steps + 1, n))
    effort, q_desired = np.empty((steps + 1, n)), np.empty((steps + 1, n))
    true_q, true_qd, applied = np.empty((steps + 1, n)), np.empty((steps + 1, n)), np.empty((steps + 1, n))
    link: FloatArray | None = np.empty((steps + 1, n)) if plant.true_link_torque is not None else None
    wrench, contacts = np.zeros((steps + 1, 6)), np.zeros(steps + 1, dtype=np.int64)
    wrenches = _wrench_schedule(pushes, steps, period)
    data = getattr(plant, "data", None)
    physics = plant.physics
    names = tuple(getattr(getattr(physics, "obstacles", None), "names", ()))
    obstacle: FloatArray | None = np.zeros((steps + 1, len(names), 3)) if names else None
    for k in range(steps + 1):
        q[k], qd[k] = plant.q, plant.qd
        true_q[k], true_qd[k] = plant.true_q, plant.true_qd
        contacts[k] = int(data.ncon) if data is not None else 0
        if k == steps:
            break
        now = k * period_ns
        tau, q_desired[k], _, _ = controller.step(schedule, now, now, q[k], qd[k])
        plant.external_wrench = wrenches[k]
        plant.step(tau)
        effort[k + 1], applied[k + 1] = plant.effort, plant.applied
        if link is not None:
            link[k + 1] = plant.true_link_torque
        if obstacle is not None:
            obstacle[k + 1] = physics.obstacle_force  # type: ignore[attr-defined]
        wrench[k + 1] = plant.external_wrench
    effort[0], applied[0] = effort[1], applied[1]
    if link is not None:
        link[0] = link[1]
    q_desired[steps] = q_desired[steps - 1]
    plant.external_wrench = np.zeros(6)
    model = reference if reference is not None else getattr(plant, "true_model", plant.model)
    tau_ext = np.zeros((steps + 1, n))
    rows = np.flatnonzero(np.any(wrench != 0.0, axis=1))
    if rows.size:  # J at the (true) pose where each pushed period began
        J = jacobian(model, true_q[rows - 1], frame="world")
        tau_ext[rows] = np.matmul(J.transpose(0, 2, 1), wrench[rows][:, :, None])[..., 0]
    return PlantRun(
        t=np.arange(steps + 1, dtype=np.float64) * period,
        q=q,
        qd=qd,
        effort=effort,
        wrench=wrench,
        tau_ext=tau_ext,
        q_desired=q_desired,
        contacts=contacts,
        joint_names=tuple(plant.model.joint_names),
        period=period,
        true_q=true_q,
        true_qd=true_qd,
        applied=applied,
        true_link_torque=link,
        obstacle_force=obstacle,
        obstacle_names=names,
    )


def write_run_bag(
    path: str | Path,
    run: PlantRun,
    *,
    topic: str = "joint_states",
    names: Sequence[str] | None = None,
    start_ns: int = START_NS,
    overwrite: bool = False,
    truth_topic: str | None = None,
) -> Path:
    """The run's joint states (position, velocity, effort; stamps ``start_ns + t``) as a rosbag2 bag;
    with ``truth_topic`` (e.g. ``true_joint_states``) also the truth: position, velocity and effort = the
    torque really applied."""
    stamps = start_ns + np.round(run.t * 1e9).astype(np.int64)
    joints = list(names or run.joint_names)
    with BagWriter(path, overwrite=overwrite) as bag:
        bag.write_joint_states(topic, stamps, joints, run.q, run.qd, run.effort)
        if truth_topic:
            bag.write_joint_states(truth_topic, stamps, joints, run.true_q, run.true_qd, run.applied)
    return Path(path)


def push_schedule(directions: ArrayLike, force: float, first: float, spacing: float, duration: float) -> list[Push]:
    """Pushes of ``force`` N along each of ``directions`` ``(m, 3)`` (normalised; world axes), the
    ``i``-th from ``first + i * spacing`` for ``duration`` s."""
    d = np.asarray(directions, dtype=np.float64).reshape(-1, 3)
    unit = d / np.linalg.norm(d, axis=1, keepdims=True)
    pushes = []
    for i, u in enumerate(unit):
        fx, fy, fz = (force * u).tolist()
        pushes.append(Push(first + i * spacing, duration, (fx, fy, fz, 0.0, 0.0, 0.0)))
    return pushes


__all__ = ["PlantRun", "Push", "push_schedule", "run_plant", "write_run_bag"]
