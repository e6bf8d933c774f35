"""Simulator node: effort commands in, ``joint_states`` out, on one of two physics engines.

Subscribes
    ``commands`` (std_msgs/Float64MultiArray): joint torques in model joint order (ros2_control's
    ``JointGroupEffortController``'s, the feed-forward node's ``feedforward/commands``); ``joint_commands``
    (sensor_msgs/JointState): the same by name in ``effort`` (extra joints ignored); the latest is held
    until the next one or ``command_timeout`` (real time: taken by the stepping thread at each tick,
    :class:`~.realtime.CommandIntake`). ``~/external_wrench`` (geometry_msgs/WrenchStamped): a push
    on the tool, world axes, scheduled by its stamp (:mod:`.simulator_plant`).
Publishes
    ``joint_states`` (sensor_msgs/JointState): position, velocity and effort: ``torque_sensing`` ``motor``
    the torque applied (limited to the effort limits), ``link`` what the joints pass on (after friction);
    ``/clock`` (rosgraph_msgs/Clock) with ``lockstep``; with a ``sensor_profile`` the measured signals,
    and the truth on ``~/true_joint_states`` (:class:`~.simulator_plant.PlantOutputs`).
Services
    ``reset_simulation`` (robot_dynamics_interfaces/ResetSimulation);
    ``~/set_payload`` (robot_dynamics_interfaces/SetPayload): the payload held by the tool, changed at
    run time; the simulated state carries on (:mod:`.payload_service`).

The physics is a :class:`robot_dynamics.plant.Plant` (``engine``: ``model``, the robot file's own
forward dynamics, or ``mujoco``, MuJoCo built from the robot file or ``mjcf`` with ``plant_deviations``;
docs/plant.md). Time (docs/ros.md):

* real time (default): a loop at ``rate`` on a thread of its own (:mod:`.realtime`) advances the plant
  by the elapsed time (at most 4 periods) under the held command;
* ``lockstep``: the simulator is the time source (``/clock``; :mod:`.lockstep`): it publishes ``/clock``
  = t_k and ``joint_states`` stamped t_k, and steps one period when answered, or after
  ``lockstep_timeout`` wall seconds (a **missed command**: the previous one held), at most
  ``lockstep_max_speed`` times as fast as the wall clock. ``reset_simulation`` resets the plant, not
  the clock: an answer to the state before the reset is late. ``command_timeout`` is simulated time.
  ``lockstep_observers``: topics on which nodes that only read the states (the contact node) answer
  them; the steps wait for those too (:mod:`.lockstep`).

With ``wait_for_command`` the robot stays at its start pose until the first command (lockstep: the
state at t_0 published again every ``lockstep_timeout``, no miss counted).

The module is longer than 400 lines because it is where the two time modes meet the plant, the commands,
the reset and the payload swap under one lock; what stands alone is in :mod:`.simulator_plant` (parameters,
outputs, the push input), :mod:`.lockstep` (the lock-step bookkeeping) and :mod:`.realtime` (the thread).
"""

from __future__ import annotations

import time
from functools import partial
from importlib import import_module
from typing import Any

import numpy as np
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from robot_dynamics.errors import RobotDynamicsError, StateError
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.models import DEFAULT_ROBOT
from robot_dynamics.payload import payload_of
from robot_dynamics.plant import ENGINES, ModelPlant, Plant, make_plant, start_state
from robot_dynamics.ros import simulator_plant
from robot_dynamics.ros.lockstep import LockstepClock
from robot_dynamics.ros.messages import (
    DATA_QOS,
    StartupError,
    as_double_array,
    name_index,
    ns_to_stamp,
    one_line,
    ordered_arrays,
    stamp_to_ns,
)
from robot_dynamics.ros.payload_service import PayloadSwitch, SetPayload
from robot_dynamics.ros.process import run_nodes
from robot_dynamics.ros.realtime import CommandIntake, RealTimeStepping
from robot_dynamics.ros.robot_node import RobotNode, check_bool, check_non_negative
from robot_dynamics.ros.serialized import header_stamp
from robot_dynamics.user_input import non_finite_message

# The interface package's folder in the source tree hides the built package from mypy: import by name.
ResetSimulation: Any = import_module("robot_dynamics_interfaces.srv").ResetSimulation


class SimulatorNode(RobotNode):
    def __init__(self, node_name: str = "simulator_node", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.friction = True
        self.plant: Plant | None = None
        self.declare_dynamic(
            "friction", True, "model engine: simulate friction (stick-slip)", check_bool, self._set_friction
        )
        self.declare("rate", 200.0, "control rate: joint_states and plant steps per second, Hz", read_only=True)
        self.declare("initial_pose", "", "named pose of the model to start from (empty: initial_position)")
        for name, what in (("initial_position", "position"), ("initial_velocity", "velocity")):
            self.declare_optional(
                name, f"start {what} in model joint order (unset = zeros)", Parameter.Type.DOUBLE_ARRAY
            )
        simulator_plant.declare_plant_parameters(self)
        simulator_plant.declare_lockstep_parameters(self, self._set_max_speed)
        self.realtime = RealTimeStepping(self)  # thread_priority; the stepping thread (real time)
        self.declare("wait_for_command", True, "hold the start state until the first command", read_only=True)
        self.declare(
            "command_timeout",
            0.0,
            "s after which a stale command becomes zero torque (0 = never)",
            check=check_non_negative("s"),
        )
        rate = float(self.param("rate"))
        if not (np.isfinite(rate) and rate > 0.0):
            raise StartupError(f"parameter rate must be > 0 Hz, got {rate}")
        self.period_ns = max(1, round(1e9 / rate))
        self.period = self.period_ns * 1e-9
        self.engine = str(self.param("engine"))
        if self.engine not in ENGINES:
            raise StartupError(f"parameter engine must be one of {list(ENGINES)}, got {self.engine!r}")
        self.lockstep = bool(self.param("lockstep"))
        self._next_plant: Plant | None = None
        self.tau: FloatArray = np.zeros(0)  # the command held
        self.effort: FloatArray = np.zeros(0)  # the joints' torque reading after the last step
        self.start_q: FloatArray = np.zeros(0)
        self.start_qd: FloatArray = np.zeros(0)
        self.commanded = False
        self.last_command = 0.0  # wall (real time) or simulated (lockstep) seconds
        self.steps = self.step_errors = self.resets = 0
        observers = tuple(self.optional_param("lockstep_observers") or ())
        if observers and not self.lockstep:
            raise StartupError("parameter lockstep_observers needs lockstep: true")
        self.clock = LockstepClock(self.period_ns, observers=observers)
        self._last_tick: float | None = None
        self._index_cache: dict[tuple[str, ...], np.ndarray | str] = {}
        self.payload_switch = PayloadSwitch(self, self._install_payload_model, ModelPlant.warm)
        self.outputs = simulator_plant.PlantOutputs(self)  # joint_states (+ the truth with a sensor profile)
        # The model first (compiling the native backend may take a moment): no message is queued meanwhile.
        self.start_robot()
        self.clock_pub = self.create_publisher(Clock, "/clock", 10) if self.lockstep else None
        commands = [
            (Float64MultiArray, "commands", self._on_array_command),
            (JointState, "joint_commands", self._on_joint_command),
        ]
        self.wrench_input = simulator_plant.ExternalWrenchInput(self)
        self.create_service(ResetSimulation, "reset_simulation", self._on_reset)
        self.create_service(SetPayload, "~/set_payload", self.payload_switch.serve)
        if self.lockstep:  # the answers drive the loop; this timer only notices a missing one
            for msg_type, topic, handler in commands:
                self.create_subscription(msg_type, topic, handler, DATA_QOS)
            for topic in observers:  # read as raw bytes: only the stamp matters
                self.create_subscription(JointState, topic, partial(self._on_observer, topic), DATA_QOS, raw=True)
            self.create_timer(0.005, self._lockstep_watch, clock=self.steady_clock)
        else:  # a thread of its own that also takes the commands, not the executor (.realtime says why)
            self.realtime.start(self.period, self._tick, CommandIntake(self, DATA_QOS, commands))

    def _set_max_speed(self, value: float) -> None:
        self.max_speed = float(value)  # kept here: read at every lock-step step

    def _set_friction(self, value: bool) -> None:
        self.friction = bool(value)
        if isinstance(physics := getattr(self.plant, "physics", None), ModelPlant):
            physics.friction = self.friction

    @property
    def q(self) -> FloatArray:
        return self.plant.q if self.plant is not None else np.zeros(0)

    @property
    def qd(self) -> FloatArray:
        return self.plant.qd if self.plant is not None else np.zeros(0)

    # -- model, plant and start state ---------------------------------------------------------------
    def _load_model(self, description: str, config: str) -> RobotModel:
        """The model, and the plant built from the same robot (a bad plant fails like a bad robot)."""
        model = super()._load_model(description, config)
        robot = description if description.strip() else (config.strip() or DEFAULT_ROBOT)
        options = simulator_plant.plant_options(self, self.friction, self._locks, self._joint_map)
        try:
            self._next_plant = make_plant(
                options, model, self.period, robot, self.param("base_link") or None, self.param("tip_link") or None
            )
        except (RobotDynamicsError, ValueError, OSError) as exc:
            raise StartupError(f"cannot build the {self.engine} plant: {one_line(exc)}") from None
        self.outputs.log_plant(self._next_plant, self.period)
        return model

    def on_model(self, model: RobotModel) -> None:
        n = model.dof
        try:
            q0, qd0 = start_state(
                model,
                str(self.param("initial_pose")),
                self.optional_param("initial_position"),
                self.optional_param("initial_velocity"),
            )
        except ValueError as exc:
            raise StartupError(str(exc)) from None
        assert self._next_plant is not None
        self.plant, self._next_plant = self._next_plant, None
        self.start_q, self.start_qd = q0, qd0
        self.plant.reset(q0, qd0)
        self.tau, self.effort = np.zeros(n), np.zeros(n)
        self.commanded = False
        self._index_cache.clear()
        self._out = JointState()
        self._out.name = list(model.joint_names)
        self.payload_switch.on_model(model)

    def _install_payload_model(self, model: RobotModel) -> None:
        """set_payload's swap: the same joints and friction, so the state and the command carry on."""
        with self._model_lock:
            if self.plant is not None:
                self.plant.set_payload(payload_of(model), model)
            self.model = model

    # -- commands -----------------------------------------------------------------------------------
    def _accept(self, topic: str, what: str, tau: FloatArray, stamp: Any = None, received: int | None = None) -> None:
        """A command's torques, refused if not finite; in lock-step only the answer to the state published
        (``stamp`` None: any answers); in real time its latency recorded (``received``: the receipt, ns)."""
        assert self.model is not None
        problem = non_finite_message(what, tau, self.model.joint_names)
        if problem:
            self.reject(topic, problem)
            return
        if self.lockstep and not self.clock.answers(None if stamp is None else stamp_to_ns(stamp)):
            return
        if not self.lockstep and stamp is not None:
            self.realtime.record(stamp, received)
        self.tau, self.commanded, self.last_command = tau, True, self._now()
        if self.lockstep and self.clock.ready:
            self._step_and_publish(answered=True)

    def _on_observer(self, topic: str, raw: bytes) -> None:
        """Lockstep: an observer's answer (see the module docstring); the step when it was the last awaited."""
        if len(raw) < 12:
            self.reject(topic, "a message too short to hold a header stamp")
            return
        self.clock.observe(topic, header_stamp(raw))
        if self.clock.ready:
            self._step_and_publish(answered=True)

    def _on_array_command(self, msg: Float64MultiArray, received_ns: int | None = None) -> None:
        self.stats.received += 1
        model = self.model
        if model is None:
            return
        data = np.asarray(msg.data, dtype=np.float64)[int(msg.layout.data_offset) :]
        if data.size != model.dof:
            self.reject("commands", f"{data.size} values for {model.dof} joints {model.joint_names}")
            return
        self._accept("commands", "commands", data.copy())

    def _on_joint_command(self, msg: JointState, received_ns: int | None = None) -> None:
        self.stats.received += 1
        model = self.model
        if model is None:
            return
        key = tuple(msg.name)
        index = self._index_cache.get(key)
        if index is None:
            try:
                index = name_index(model.joint_names, key, allow_extra=True, what="joint_commands")
            except StateError as exc:
                index = str(exc)
            self._index_cache[key] = index
        if isinstance(index, str):
            self.reject("joint_commands", index)
            return
        effort = np.asarray(msg.effort, dtype=np.float64)
        if effort.size != len(key):
            self.reject("joint_commands", f"{effort.size} efforts for {len(key)} joint names")
            return
        self._accept("joint_commands", "joint_commands: effort", effort[index], msg.header.stamp, received_ns)

    # -- reset --------------------------------------------------------------------------------------
    def _on_reset(self, request: Any, response: Any) -> Any:
        model, plant = self.model, self.plant
        if model is None or plant is None:
            response.success, response.message = False, "no robot model yet (waiting for robot_description)"
            return response
        try:
            a = ordered_arrays(
                model.joint_names, request.joint_names, {"position": request.position, "velocity": request.velocity}
            )
        except StateError as exc:
            response.success, response.message = False, one_line(exc)
            self.reject("reset_simulation", exc)
            return response
        with self._model_lock:  # real time: not in the middle of the stepper's tick
            plant.reset(a["position"] if len(request.position) else self.start_q.copy(), a["velocity"])
            self.tau, self.effort = np.zeros(model.dof), np.zeros(model.dof)
            self.commanded = False
            self._last_tick = None
            self.resets += 1
            self.realtime.latency.clear()
            response.success, response.message = True, f"reset to q = {plant.q.tolist()}"
            if self.lockstep:  # the reset state gets a stamp of its own: an answer to the state before is late
                self.clock.restamp()
            self._publish()
        return response

    # -- stepping -----------------------------------------------------------------------------------
    def _now(self) -> float:
        return self.clock.seconds if self.lockstep else time.monotonic()

    def _advance(self, duration: float) -> None:
        """Step the plant ``duration`` s under the held command (command_timeout applied)."""
        plant = self.plant
        if plant is None:
            return
        timeout = float(self.param("command_timeout"))
        if self.commanded and timeout > 0.0 and self._now() - self.last_command > timeout:
            self.tau = np.zeros(plant.model.dof)
        t0 = time.perf_counter()
        try:
            now_ns = self.clock.now_ns if self.lockstep else self.get_clock().now().nanoseconds
            wrench = self.wrench_input.due(now_ns)
            if wrench is not None:
                plant.external_wrench = wrench
            plant.step(self.tau, duration)
            self.effort = plant.effort
            self.steps += 1
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            self.step_errors += 1
            self.reject("simulation step", exc)
        self.stats.record_compute(time.perf_counter() - t0)

    def _tick(self) -> None:
        """Real time (the stepper's thread): advance by the elapsed wall time, publish."""
        if not self.context.ok():  # rclpy shut down under a node nobody destroyed
            self.realtime.stop()
            return
        with self._model_lock:  # against a reset, a payload swap or a new model from the executor
            if self.plant is None:
                return
            self.realtime.take_commands()
            now = time.monotonic()
            last, self._last_tick = self._last_tick, now
            if (self.commanded or not self.param("wait_for_command")) and last is not None:
                self._advance(min(now - last, 4.0 * self.period))
            self._publish()

    def destroy_node(self) -> None:
        realtime = getattr(self, "realtime", None)  # None: a start-up error came before it
        if realtime is not None:
            realtime.stop()
        super().destroy_node()

    def _step_and_publish(self, answered: bool) -> None:
        """Lockstep: step one period, advance the clock, publish the next state (no sooner than
        ``lockstep_max_speed`` allows)."""
        delay = self.clock.pace(self.max_speed)
        if delay > 0.0:
            time.sleep(delay)
        self._advance(self.period)
        self.clock.step(answered)
        self._publish()

    def _lockstep_watch(self) -> None:
        """Lockstep: publish the first state; step on a missing answer after lockstep_timeout."""
        if self.plant is None:
            return
        if not self.clock.published_at:
            self._publish()
        if not self.clock.overdue(float(self.param("lockstep_timeout"))):
            return
        if not self.commanded and self.param("wait_for_command"):
            self._publish()  # the start state again (a controller may have started late)
        else:  # answered: an observer is missing (counted by the clock); not: a missed command
            self._step_and_publish(answered=self.clock.answered)

    def _publish(self) -> None:
        plant = self.plant
        if plant is None:
            return
        out = self._out
        if self.lockstep:
            stamp = ns_to_stamp(self.clock.now_ns)
            assert self.clock_pub is not None
            self.clock_pub.publish(Clock(clock=stamp))
            out.header.stamp = stamp
        else:
            out.header.stamp = self.get_clock().now().to_msg()
        out.position = as_double_array(plant.q)
        out.velocity = as_double_array(plant.qd)
        out.effort = as_double_array(self.effort)
        if self.lockstep:
            self.clock.published()
        self.outputs.publish(out, plant)
        self.stats.published += 1

    def diagnostic_values(self) -> list[tuple[str, str]]:
        plant = self.plant
        values = [
            ("engine", self.engine),
            ("friction", str(self.friction).lower()),
            ("lockstep", str(self.lockstep).lower()),
            ("simulated_time_s", f"{plant.time if plant else 0.0:.3f}"),
            ("steps", str(self.steps)),
            ("step_errors", str(self.step_errors)),
            ("resets", str(self.resets)),
            ("state", "running" if (self.commanded or not self.param("wait_for_command")) else "waiting for command"),
        ]
        if plant is not None:
            values.append(("clamped_steps", str(plant.clamped_steps)))
            names = plant.model.joint_names
            values += [(f"clamped[{names[i]}]", str(int(c))) for i, c in enumerate(plant.clamped_joints) if c]
        if self.lockstep:
            values += self.clock.diagnostic_values()
        values += [*self.realtime.diagnostic_values(), *self.outputs.diagnostic_values(plant)]
        return [*values, *self.wrench_input.diagnostic_values(), *self.payload_switch.diagnostic_values()]


def main(args: list[str] | None = None) -> int:
    return run_nodes([("simulator_node", SimulatorNode)], args)


if __name__ == "__main__":
    raise SystemExit(main())
