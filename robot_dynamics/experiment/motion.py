"""The motions of the closed-loop experiment: start pose, workspace, the tracked motion and its efforts.

* **Start pose** ``q0``: given, or the middle of each joint's limits (0 for a joint without limits).
* **Workspace**: every joint within ``± reach`` of ``q0`` and inside its limits less a margin of 5 % of
  its range. The excitation is designed for the robot file with these limits
  (:func:`restricted_model`): a real arm's excitation is kept inside a collision-free box the same way,
  and MuJoCo's plant has the stock collision meshes (whose convex hulls touch in some poses of a UR5).
* **The tracked motion** (:func:`planned_motion`): as a planner would send it — rest at ``q0``, then
  way points every ``segment`` seconds drawn uniformly in the workspace (seeded), back to rest at
  ``q0``; at the way points the velocity is the Catmull–Rom tangent ``(q_{k+1} - q_{k-1}) / 2T`` and
  the acceleration zero, and between them the quintic segments every node uses
  (:class:`~robot_dynamics.trajectory.JointTrajectorySampler`: they may pass a way point at the
  workspace's edge by a little; the joint and velocity limits are checked); sent as points every 10 ms
  (:data:`POINTS_RATE`) with their positions, velocities and accelerations. Between two points the node's
  quintic segment is the plan's own quintic (it has the same end values), so every joint state meets the
  plan exactly; efforts attached to the points are interpolated linearly (a 10 ms step leaves ~1e-3 N m
  of the stock file's inverse dynamics out on these motions). A planner sends about as many points;
  one per control period (10 001 for 10 s at 1 kHz) took the node seconds to parse on a busy machine.
* **Efforts** of the points: the stock file's inverse dynamics (a batch, :func:`model_efforts`), a fit's
  torques (:func:`fitted_efforts`: identified parameters that need not make a robot file) or the
  plant's own exact inverse dynamics (:func:`plant_efforts`, MuJoCo's ``mj_inverse``) as the plant's drive
  must be commanded to apply them: with a sensor profile, divided by each joint's torque-constant factor
  ``1 + e_j`` (:class:`~robot_dynamics.plant.sensors.SensedPlant` applies ``(1 + e_j) u``); on a joint
  whose drive closes a torque loop on its link-side sensor, the link-side torques of the motion (the
  rigid links' inverse dynamics: the loop supplies the joint's friction, damping and rotor inertia)
  times ``1 + s_j``, the sensor's scale, plus its offset ``o_j`` (the loop makes the reading
  ``(1 + s_j) tau_J + o_j`` equal the command).
* :func:`first_contact`: whether the plant's links touch anywhere along a motion.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
import numpy.typing as npt

from robot_dynamics.dynamics import inverse_dynamics
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.friction import friction_parameters
from robot_dynamics.identification.parameters import ParameterSet, check_offset_use
from robot_dynamics.identification.regressor import fixed_torques, predict
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.trajectory import JointTrajectorySampler

LIMIT_MARGIN = 0.05  # fraction of a joint's range kept free at each end
POINTS_RATE = 100.0  # Hz: trajectory points of the tracked motion


class ExperimentError(RobotDynamicsError):
    """The experiment cannot run as asked (a motion outside the limits, a node that did not start, ...)."""


@dataclass(frozen=True)
class Motion:
    """Trajectory points: ``times`` ``(K,)`` s from the start, ``positions``/``velocities``/
    ``accelerations`` ``(K, n)``, ``efforts`` ``(K, n)`` or None; joints named ``names``."""

    names: tuple[str, ...]
    times: FloatArray
    positions: FloatArray
    velocities: FloatArray
    accelerations: FloatArray
    efforts: FloatArray | None = None

    @property
    def duration(self) -> float:
        return float(self.times[-1])

    def with_efforts(self, efforts: FloatArray | None) -> Motion:
        return replace(self, efforts=efforts)

    def approach(self, move: float, hold: float) -> Motion:
        """From wherever the arm is, to the first point in ``move`` s (its first point is at ``move`` s, so
        the node starts it from the measured state), then held there at rest for ``hold`` s with the first
        point's efforts: how a run is brought to its start."""
        twice = np.repeat(self.positions[:1], 2, axis=0)
        zeros = np.zeros_like(twice)
        efforts = None if self.efforts is None else np.repeat(self.efforts[:1], 2, axis=0)
        return Motion(self.names, np.array([move, move + hold]), twice, zeros, zeros, efforts)

    def sampler(self) -> JointTrajectorySampler:
        return JointTrajectorySampler(self.times, self.positions, self.velocities, self.accelerations, self.efforts)


def _limits(model: RobotModel) -> tuple[FloatArray, FloatArray]:
    lower = np.array([j.limits.lower for j in model.joints], dtype=np.float64)
    upper = np.array([j.limits.upper for j in model.joints], dtype=np.float64)
    return lower, upper


def start_pose(model: RobotModel, values: Sequence[float] | FloatArray | None = None) -> FloatArray:
    """``values`` (checked against the joint limits), or the middle of each joint's limits."""
    lower, upper = _limits(model)
    if values is None:  # the middle of the limits; a one-sided limit itself; 0 without limits
        lo = np.where(np.isfinite(lower), lower, np.where(np.isfinite(upper), upper, 0.0))
        hi = np.where(np.isfinite(upper), upper, lo)
        return 0.5 * (np.where(np.isfinite(lower), lo, hi) + hi)
    q0 = np.asarray(values, dtype=np.float64)
    if q0.shape != (model.dof,) or not np.isfinite(q0).all():
        raise ExperimentError(
            f"start pose: expected {model.dof} finite values for {model.joint_names}, got {list(values)}"
        )
    outside = [name for name, q, lo, hi in zip(model.joint_names, q0, lower, upper, strict=True) if not lo <= q <= hi]
    if outside:
        raise ExperimentError(f"start pose {q0.tolist()}: outside the joint limits of {outside}")
    return q0


def workspace(model: RobotModel, q0: FloatArray, reach: float) -> tuple[FloatArray, FloatArray]:
    """The box ``q0 ± reach`` inside the joint limits less :data:`LIMIT_MARGIN` of each range."""
    if not (math.isfinite(reach) and reach > 0.0):
        raise ExperimentError(f"reach must be > 0 (rad or m), got {reach}")
    lower, upper = _limits(model)
    span = np.where(np.isfinite(upper - lower), upper - lower, 0.0)
    lo = np.maximum(q0 - reach, lower + LIMIT_MARGIN * span)
    hi = np.minimum(q0 + reach, upper - LIMIT_MARGIN * span)
    bad = [name for name, a, b in zip(model.joint_names, lo, hi, strict=True) if not a < b]
    if bad:
        raise ExperimentError(f"the start pose leaves no room inside the joint limits of {bad}")
    return lo, hi


def restricted_model(model: RobotModel, q0: FloatArray, reach: float) -> RobotModel:
    """``model`` with its joints' position limits narrowed to :func:`workspace` (for the excitation); its
    named poses that leave the workspace are dropped (a robot file's poses lie within its limits)."""
    lo, hi = workspace(model, q0, reach)
    joints = tuple(
        replace(j, limits=replace(j.limits, lower=float(a), upper=float(b)), continuous=False)
        for j, a, b in zip(model.joints, lo, hi, strict=True)
    )
    poses = {k: v for k, v in model.named_poses.items() if bool(np.all((lo <= v) & (v <= hi)))}
    return replace(model, joints=joints, named_poses=poses)


def planned_motion(
    model: RobotModel,
    q0: FloatArray,
    *,
    duration: float,
    reach: float,
    rate: float = POINTS_RATE,
    seed: int = 0,
    segment: float = 1.5,
    names: Sequence[str] | None = None,
) -> Motion:
    """The tracked motion of the module docstring as points at ``rate`` Hz (``names``: the joints' names on
    the topics, default the model's). Its duration is a whole number of segments of a whole number of
    point periods, the one nearest ``duration``, so every way point is a point."""
    if not (math.isfinite(duration) and duration > 0.0 and math.isfinite(segment) and segment > 0.0):
        raise ExperimentError(f"duration and segment must be > 0 s, got {duration} and {segment}")
    stops = max(2, round(duration / segment))
    per_segment = max(1, round(duration / stops * rate))  # point periods per segment
    count = stops * per_segment
    step = per_segment / rate
    lo, hi = workspace(model, q0, reach)
    way = np.random.default_rng(seed).uniform(lo, hi, size=(stops + 1, model.dof))
    way[0] = way[-1] = q0
    velocity = np.zeros_like(way)
    velocity[1:-1] = (way[2:] - way[:-2]) / (2.0 * step)
    plan = JointTrajectorySampler(np.arange(stops + 1) * step, way, velocity, np.zeros_like(way))
    t = np.arange(count + 1) / rate
    d = plan.sample_many(t)
    lower, upper = _limits(model)
    limit = np.array([j.limits.velocity for j in model.joints])
    bad = (
        (np.abs(d.velocities).max(axis=0) > limit)
        | (d.positions < lower).any(axis=0)
        | (d.positions > upper).any(axis=0)
    )
    if bad.any():
        joints = [name for name, b in zip(model.joint_names, bad.tolist(), strict=True) if b]
        raise ExperimentError(
            f"the planned motion leaves the velocity or position limits of {joints}: choose a smaller reach or "
            "longer segments"
        )
    return Motion(tuple(names or model.joint_names), t, d.positions, d.velocities, d.accelerations)


def model_efforts(model: RobotModel, motion: Motion, *, friction: bool = True, smooth: bool = True) -> FloatArray:
    """The robot file's inverse dynamics at every point (what its feed-forward node computes there)."""
    return np.asarray(
        inverse_dynamics(
            model, motion.positions, motion.velocities, motion.accelerations, friction=friction, smooth=smooth
        ),
        dtype=np.float64,
    )


class ExactPlant(Protocol):
    def inverse_dynamics(
        self, q: FloatArray, qd: FloatArray, qdd: FloatArray, *, link_side: bool = False
    ) -> FloatArray: ...

    def contacts(self, q: FloatArray) -> list[tuple[str, str]]: ...


def torque_loop(plant: object, dof: int) -> npt.NDArray[np.bool_]:
    """Per joint, whether the plant's drive closes a torque loop on its link-side sensor
    (:class:`~robot_dynamics.plant.sensors.SensedPlant`, step 7); none on a bare plant."""
    sensors = getattr(plant, "sensors", None)
    if sensors is None:
        return np.zeros(dof, dtype=bool)
    return np.asarray(sensors["actuator.torque_loop.bandwidth"], dtype=np.float64) > 0.0


def identify_offsets(plant: object, dof: int) -> str:
    """``identify --offsets`` for recordings of ``plant``: "torque" when its drive closes a torque loop on
    the recorded sensor (:func:`torque_loop`: the fitted offsets are torques the loop applies, deployed),
    else "reading" (a bias of the reading; docs/identification.md, "Offsets")."""
    return "torque" if torque_loop(plant, dof).any() else "reading"


def drive_factor(plant: object, dof: int) -> FloatArray:
    """Per joint, the torque a plant's drive applies per unit commanded: ``1 + e_j``, ``e_j`` the motor's
    torque-constant error of its sensor profile (:class:`~robot_dynamics.plant.sensors.SensedPlant`,
    step 2: applied ``(1 + e_j) u (1 + a_j r_j)``); with a torque loop (:func:`torque_loop`) the link-side
    torque per unit commanded, ``1 / (1 + s_j)``, ``s_j`` the link-side sensor's scale error (step 7: the
    loop makes the reading ``(1 + s_j) tau_J`` equal the command); ones for a bare plant. The ripple
    ``a_j r_j``, a function of the rotor angle hundreds of cycles per joint radian, and the sensor's
    offset and drift (which the loop turns into torque errors) are left out: no model holds them."""
    sensors = getattr(plant, "sensors", None)
    if sensors is None:
        return np.ones(dof)
    motor = 1.0 + np.asarray(sensors["actuator.constant_error"], dtype=np.float64)
    link = 1.0 / (1.0 + np.asarray(sensors["torque.scale_error"], dtype=np.float64))
    return np.where(torque_loop(plant, dof), link, motor)


def drive_offset(plant: object, dof: int) -> FloatArray:
    """Per joint, the command a plant's drive needs for no torque: behind a torque loop (:func:`torque_loop`)
    the link-side sensor's offset ``o_j`` (the loop makes the reading ``(1 + s_j) tau_J + o_j`` equal the
    command, so the offset is a torque it applies); zeros elsewhere (a reading's offset is the reading's
    alone). The sensor's drift, which the loop applies too, changes with time: no model holds it."""
    loop = torque_loop(plant, dof)
    if not loop.any():
        return np.zeros(dof)
    offset = np.asarray(plant.sensors["torque.offset"], dtype=np.float64)  # type: ignore[attr-defined]
    return np.where(loop, offset, 0.0)


def plant_efforts(plant: ExactPlant, motion: Motion) -> FloatArray:
    """The plant's exact inverse dynamics at every point as its drive must be commanded to apply them:
    ``mj_inverse / drive_factor + drive_offset``, on the joints with a torque loop the link-side torques
    of the motion (:func:`drive_factor`, :func:`drive_offset`, :func:`torque_loop`; MuJoCo's
    ``mj_inverse`` takes one state per call: one call per point, ~10 µs each)."""
    points = list(zip(motion.positions, motion.velocities, motion.accelerations, strict=True))
    dof = motion.positions.shape[1]
    loop = torque_loop(plant, dof)
    torques = np.array([plant.inverse_dynamics(q, qd, qdd) for q, qd, qdd in points])
    if loop.any():
        link = np.array([plant.inverse_dynamics(q, qd, qdd, link_side=True) for q, qd, qdd in points])
        torques = np.where(loop, link, torques)
    return torques / drive_factor(plant, dof) + drive_offset(plant, dof)


def fitted_efforts(
    model: RobotModel, motion: Motion, theta: FloatArray, pset: ParameterSet, offsets: str = "reading"
) -> FloatArray:
    """The torques of identified parameters ``theta`` (of ``pset``, fitted to ``model``'s regressor) at every
    point: ``tau = tau_fixed + Y theta``, the part outside the set at the model's values
    (:func:`~robot_dynamics.identification.regressor.fixed_torques`) plus the fitted part; the constant
    offsets as identify's ``offsets`` treats them: left out as a reading's bias ("reading"), kept as a
    torque the drive applies ("torque", a torque loop on the recorded sensor)."""
    theta = np.array(theta, dtype=np.float64)
    if check_offset_use(offsets) == "reading":
        columns = pset.layout(model).joint_column["Fo"]
        on = columns >= 0
        theta[columns[on]] = friction_parameters(model).offset[on]  # the model's own (0 unless deployed)
    q, qd, qdd = motion.positions, motion.velocities, motion.accelerations
    return np.asarray(fixed_torques(model, q, qd, qdd, pset) + predict(model, q, qd, qdd, theta, pset))


def first_contact(plant: ExactPlant, motion: Motion, every: float = 0.01) -> str | None:
    """Where the plant's links first touch along ``motion`` (sampled every ``every`` s), or None."""
    stride = max(1, round(every / max(float(np.median(np.diff(motion.times))), 1e-9))) if motion.times.size > 1 else 1
    for k in range(0, motion.times.size, stride):
        pairs = plant.contacts(motion.positions[k])
        if pairs:
            touching = ", ".join(f"{a} and {b}" for a, b in pairs)
            return f"at t = {motion.times[k]:.2f} s the plant's links {touching} touch"
    return None
