"""The simulator node's plant settings and its external-wrench input (the node is thin: it calls these).

* :func:`declare_plant_parameters` / :func:`plant_options`: the parameters that choose and configure
  the plant (``engine``, ``integrator``, ``mjcf``, ``plant_deviations``, ``timestep``,
  ``model_timestep``, ``mujoco_integrator``, ``torque_sensing``, ``sensor_profile``,
  ``sensor_overrides``), read into a :class:`robot_dynamics.plant.PlantOptions`;
* :class:`PlantOutputs`: ``joint_states`` and, with a sensor profile, ``~/true_joint_states`` beside
  it (the plant's true position and velocity, the torque really applied), with ``obstacles``
  ``~/obstacle_wrench`` (geometry_msgs/WrenchStamped, ``frame_id`` ``world``): the obstacles' total
  force on the arm over the step into each state and its moment about the world origin, stamped like
  the state — the ground truth of a collision; the plant's notes;
* :class:`ExternalWrenchInput`: ``~/external_wrench`` (geometry_msgs/WrenchStamped), the force and
  moment the environment exerts on the tool, at the tool-frame origin, in world axes (``frame_id`` empty
  or ``world``); held until the next message (zeros = none). ``header.stamp`` zero applies it from the
  next step; a later stamp from the first step that starts at or after that time (simulated time in
  lock-step, the node clock in real time), so an experiment can schedule pushes ahead. Bad messages
  (non-finite values, another frame) are dropped with the node's throttled warning.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from geometry_msgs.msg import Vector3, Wrench, WrenchStamped
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState

from robot_dynamics.model import FloatArray
from robot_dynamics.plant import ENGINES, Plant, PlantOptions
from robot_dynamics.ros.messages import DATA_QOS, as_double_array, stamp_to_ns
from robot_dynamics.ros.parameters import check_non_negative, check_positive


def declare_plant_parameters(node: Any) -> None:
    """Declare the plant parameters on a :class:`robot_dynamics.ros.robot_node.RobotNode` (read-only)."""
    for name, default, description in (
        ("engine", "model", f"physics engine: {' | '.join(ENGINES)}"),
        ("integrator", "fixed_step", "model engine: fixed_step | adaptive (slow)"),
        ("mjcf", "", "mujoco engine: an MJCF file instead of the robot file"),
        ("plant_deviations", "", "mujoco engine: plant deviation YAML file"),
        ("timestep", 0.001, "mujoco engine: largest physics timestep, s"),
        ("mujoco_integrator", "implicitfast", "mujoco engine: implicitfast | implicit | euler | rk4"),
        ("torque_sensing", "motor", "joint_states effort: motor (the torque applied) | link (after friction)"),
        ("model_timestep", 0.0, "model engine, fixed_step: largest physics timestep, s (0 = one per control period)"),
        ("sensor_profile", "", "sensors and actuators of a real arm: a bundled profile or a YAML file ('' = ideal)"),
        ("sensor_overrides", "", "sensor profile keys on top of sensor_profile, as YAML text (e.g. '{seed: 3}')"),
        ("obstacles", "", "mujoco engine: obstacle YAML file (boxes, cylinders; the arm's only contacts)"),
    ):
        node.declare(name, default, description, read_only=True)


def declare_lockstep_parameters(node: Any, set_max_speed: Callable[[float], None]) -> None:
    """Declare the lock-step parameters (:mod:`.lockstep`) on the simulator node."""
    node.declare("lockstep", False, "simulated time: publish /clock, step when each state is answered", read_only=True)
    node.declare("lockstep_timeout", 1.0, "lockstep: wall s to wait for an answer", check=check_positive("s"))
    node.declare_optional(
        "lockstep_observers",
        "lockstep: topics of nodes that answer each state without commanding (messages stamped with "
        "the state's stamp); the steps wait for them too, e.g. ['contact_node/external_torque']",
        Parameter.Type.STRING_ARRAY,
        read_only=True,
    )
    speed = "lockstep: simulated seconds per wall second at most (0 = as fast as answered)"
    node.declare_dynamic("lockstep_max_speed", 0.0, speed, check_non_negative("x"), set_max_speed)


def plant_options(node: Any, friction: bool, locks: dict[str, float], joint_map: dict[str, str]) -> PlantOptions:
    """The declared plant parameters of ``node`` with its chain options."""
    return PlantOptions(
        engine=str(node.param("engine")),
        integrator=str(node.param("integrator")),
        friction=friction,
        mjcf=str(node.param("mjcf")),
        deviations=str(node.param("plant_deviations")),
        timestep=float(node.param("timestep")),
        mujoco_integrator=str(node.param("mujoco_integrator")),
        torque_sensing=str(node.param("torque_sensing")),
        locked_joints=locks,
        joint_map=joint_map,
        model_timestep=float(node.param("model_timestep")),
        sensor_profile=str(node.param("sensor_profile")),
        sensor_overrides=str(node.param("sensor_overrides")),
        obstacles=str(node.param("obstacles")),
    )


class PlantOutputs:
    """What the node reports of its plant: ``joint_states`` (what a driver publishes: with a sensor
    profile the measured signals); with a sensor profile (``sensor_profile`` or ``sensor_overrides``
    set) ``~/true_joint_states`` beside it, stamped like it: the plant's true position and velocity, effort
    = the torque really applied; the plant's notes at start-up; the profile's name in the diagnostics."""

    def __init__(self, node: Any) -> None:
        self.node = node
        self.states = node.create_publisher(JointState, "joint_states", DATA_QOS)
        sensed = bool(node.param("sensor_profile") or node.param("sensor_overrides"))
        self.truth = node.create_publisher(JointState, "~/true_joint_states", DATA_QOS) if sensed else None
        obstacles = bool(node.param("obstacles"))
        self.obstacles = node.create_publisher(WrenchStamped, "~/obstacle_wrench", DATA_QOS) if obstacles else None
        self.msg = JointState()
        self.peak_force = 0.0  # N, the largest obstacle force so far

    def log_plant(self, plant: Plant | None, period: float) -> None:
        """The plant's notes as warnings; a sensor profile for another rate than the node's as information."""
        logger = self.node.get_logger()
        for note in getattr(plant, "notes", ()):
            logger.warning(f"plant: {note}")
        profile = getattr(plant, "profile", None)
        if profile is not None and profile.rate is not None and abs(profile.rate * period - 1.0) > 1e-9:
            logger.info(
                f"sensor profile {profile.name!r} is for {profile.rate:g} Hz; its delays count this node's "
                f"periods (rate {1.0 / period:g} Hz)"
            )

    def publish(self, states: JointState, plant: Plant) -> None:
        """``states`` on ``joint_states``; with a sensor profile the truth beside it; the obstacles' wrench."""
        self.states.publish(states)
        if self.obstacles is not None:
            self._publish_obstacles(states, plant)
        if self.truth is None:
            return
        msg = self.msg
        msg.name, msg.header.stamp = states.name, states.header.stamp
        msg.position, msg.velocity = as_double_array(plant.true_q), as_double_array(plant.true_qd)
        msg.effort = as_double_array(plant.applied)
        self.truth.publish(msg)

    def _publish_obstacles(self, states: JointState, plant: Plant) -> None:
        physics = plant.physics
        force = np.asarray(getattr(physics, "obstacle_force", np.zeros((0, 3)))).sum(axis=0)
        moment = np.asarray(getattr(physics, "obstacle_moment", np.zeros((0, 3)))).sum(axis=0)
        self.peak_force = max(self.peak_force, float(np.linalg.norm(force)))
        msg = WrenchStamped()
        msg.header.stamp, msg.header.frame_id = states.header.stamp, "world"
        msg.wrench = Wrench(force=Vector3(x=force[0], y=force[1], z=force[2]))
        msg.wrench.torque = Vector3(x=moment[0], y=moment[1], z=moment[2])
        self.obstacles.publish(msg)  # type: ignore[union-attr]

    def diagnostic_values(self, plant: Plant | None) -> list[tuple[str, str]]:
        profile = getattr(plant, "profile", None)
        values = [("sensor_profile", profile.name if profile is not None else "ideal")]
        if self.obstacles is not None:
            values.append(("obstacle_force_peak", f"{self.peak_force:.6g}"))
        return values


class ExternalWrenchInput:
    """The ``~/external_wrench`` subscription and its schedule (see the module docstring)."""

    def __init__(self, node: Any) -> None:
        self.node = node
        self._queue: list[tuple[int, int, FloatArray]] = []  # (stamp ns, arrival, wrench), by stamp
        self._arrivals = 0
        self._lock = threading.Lock()  # real time: arrivals on the executor, steps on the stepper's thread
        self.current: FloatArray = np.zeros(6)
        node.create_subscription(WrenchStamped, "~/external_wrench", self._on_wrench, DATA_QOS)

    def _on_wrench(self, msg: WrenchStamped) -> None:
        f, m = msg.wrench.force, msg.wrench.torque
        wrench = np.array([f.x, f.y, f.z, m.x, m.y, m.z], dtype=np.float64)
        if msg.header.frame_id not in ("", "world"):
            self.node.reject("external_wrench", f"frame_id {msg.header.frame_id!r}: give it in world axes ('world')")
            return
        if not np.isfinite(wrench).all():
            self.node.reject("external_wrench", f"non-finite values {wrench.tolist()}")
            return
        with self._lock:
            self._arrivals += 1
            bisect.insort(self._queue, (stamp_to_ns(msg.header.stamp), self._arrivals, wrench))

    def due(self, now_ns: int) -> FloatArray | None:
        """The wrench to hold from a step starting at ``now_ns`` when it changes, else None."""
        with self._lock:
            if not self._queue or self._queue[0][0] > now_ns:
                return None
            k = bisect.bisect_right(self._queue, (now_ns, self._arrivals + 1))
            self.current = self._queue[k - 1][2]
            del self._queue[:k]
            return self.current

    def diagnostic_values(self) -> list[tuple[str, str]]:
        return [("external_wrench", " ".join(f"{v:.6g}" for v in self.current))]
