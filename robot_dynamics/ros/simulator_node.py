"""Real-time forward-dynamics simulator node: effort commands in, ``joint_states`` out.

Subscribes
    ``commands`` (std_msgs/Float64MultiArray): joint torques in model joint order (what ros2_control's
    ``JointGroupEffortController`` takes, and what the feed-forward node publishes on
    ``feedforward/commands``);
    ``joint_commands`` (sensor_msgs/JointState): the same by joint name in ``effort`` (any order, extra
    joints ignored, every model joint needed).
    The latest command is held (zero-order hold) until the next one, or until ``command_timeout``.
Publishes
    ``joint_states`` (sensor_msgs/JointState): position, velocity and the applied effort, at ``rate``.
Services
    ``reset_simulation`` (robot_dynamics_interfaces/ResetSimulation);
    ``~/set_payload`` (robot_dynamics_interfaces/SetPayload): the payload held by the tool, changed at
    run time; the simulated state carries on (:mod:`.payload_service`).

Each timer tick advances the state by the elapsed wall time (real time; at most 4 periods when the
machine lags) under the held command. ``integrator``:

* ``fixed_step`` (default): steps of at most one period with constant acceleration from the engine's
  forward dynamics ``qdd = D^-1 (tau - h - c - b)`` (``q += h qd + h^2/2 qdd``, ``qd += h qdd``), whose
  stick-slip solver decides which joints at rest stick or break away
  (``forward_dynamics(..., friction=True)``). A sticky joint whose velocity would change sign within a
  step stops where its velocity reaches zero, so the next step decides stick or break-away exactly: no
  chatter. One forward-dynamics call per step keeps it real time.
* ``adaptive``: the engine's ``simulate`` over each tick (event-driven stick-slip, solve_ivp); exact
  to its tolerances but much slower, for low rates.

With ``wait_for_command`` the robot stays at its start pose until the first command arrives.
"""

from __future__ import annotations

import time
from importlib import import_module
from typing import Any

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from robot_dynamics.dynamics import forward_dynamics, simulate
from robot_dynamics.errors import StateError
from robot_dynamics.friction import friction_parameters
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.ros.messages import DATA_QOS, StartupError, as_double_array, name_index, one_line, ordered_arrays
from robot_dynamics.ros.payload_service import PayloadSwitch, SetPayload
from robot_dynamics.ros.process import run_nodes
from robot_dynamics.ros.robot_node import RobotNode, check_bool, check_non_negative
from robot_dynamics.user_input import non_finite_message

# The interface package's folder in the source tree hides the built package from mypy: import by name.
ResetSimulation: Any = import_module("robot_dynamics_interfaces.srv").ResetSimulation


class SimulatorNode(RobotNode):
    def __init__(self, node_name: str = "simulator_node", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.friction = True
        self.declare_dynamic("friction", True, "simulate friction (stick-slip)", check_bool, self._set_friction)
        self.declare("rate", 200.0, "integration and joint_states rate, Hz", read_only=True)
        self.declare("initial_pose", "", "named pose of the model to start from (empty: initial_position)")
        self.declare_parameter(
            "initial_position",
            Parameter.Type.DOUBLE_ARRAY,
            ParameterDescriptor(description="start position in model joint order (unset = zeros)"),
        )
        self.declare_parameter(
            "initial_velocity",
            Parameter.Type.DOUBLE_ARRAY,
            ParameterDescriptor(description="start velocity in model joint order (unset = zeros)"),
        )
        self.declare(
            "integrator", "fixed_step", "fixed_step (real time) | adaptive (engine simulate, slow)", read_only=True
        )
        self.declare("wait_for_command", True, "hold the start state until the first command", read_only=True)
        self.declare(
            "command_timeout",
            0.0,
            "seconds after which a stale command becomes zero torque (0 = never)",
            check=check_non_negative("s"),
        )
        rate = float(self.param("rate"))
        if not (np.isfinite(rate) and rate > 0.0):
            raise StartupError(f"parameter rate must be > 0 Hz, got {rate}")
        self.period = 1.0 / rate
        self.integrator = str(self.param("integrator"))
        if self.integrator not in ("fixed_step", "adaptive"):
            raise StartupError(f"parameter integrator must be 'fixed_step' or 'adaptive', got {self.integrator!r}")
        self.q: FloatArray = np.zeros(0)
        self.qd: FloatArray = np.zeros(0)
        self.tau: FloatArray = np.zeros(0)
        self.start_q: FloatArray = np.zeros(0)
        self.start_qd: FloatArray = np.zeros(0)
        self.commanded = False
        self.last_command = 0.0
        self.sim_time = 0.0
        self.steps = 0
        self.step_errors = 0
        self.resets = 0
        self._last_tick: float | None = None
        self._index_cache: dict[tuple[str, ...], np.ndarray | str] = {}
        self.payload_switch = PayloadSwitch(self, self._install_payload_model, _warm_forward)
        # The model first (compiling the native backend may take a moment): no message is queued meanwhile.
        self.start_robot()
        self.states_pub = self.create_publisher(JointState, "joint_states", DATA_QOS)
        self.create_subscription(Float64MultiArray, "commands", self._on_array_command, DATA_QOS)
        self.create_subscription(JointState, "joint_commands", self._on_joint_command, DATA_QOS)
        self.create_service(ResetSimulation, "reset_simulation", self._on_reset)
        self.create_service(SetPayload, "~/set_payload", self.payload_switch.serve)
        self.create_timer(self.period, self._tick)

    def _set_friction(self, value: bool) -> None:
        self.friction = bool(value)

    # -- model and start state ----------------------------------------------------------------------
    def on_model(self, model: RobotModel) -> None:
        self._simulate = simulate
        self._forward = forward_dynamics
        self._sticky = friction_parameters(model).sticky.copy() if model.has_friction else np.zeros(model.dof, bool)
        n = model.dof
        pose = str(self.param("initial_pose"))
        position = self.optional_param("initial_position")
        velocity = self.optional_param("initial_velocity")
        if pose:
            if pose not in model.named_poses:
                raise StartupError(
                    f"parameter initial_pose: robot {model.name!r} has no pose {pose!r} "
                    f"(it has {sorted(model.named_poses)})"
                )
            q0 = np.array(model.named_poses[pose], dtype=np.float64)
        elif position is not None:
            q0 = np.asarray(position, dtype=np.float64)
        else:
            q0 = np.zeros(n)
        qd0 = np.zeros(n) if velocity is None else np.asarray(velocity, dtype=np.float64)
        for what, v in (("initial_position", q0), ("initial_velocity", qd0)):
            if v.shape != (n,) or not np.isfinite(v).all():
                raise StartupError(
                    f"parameter {what}: expected {n} finite values for {model.joint_names}, got {v.tolist()}"
                )
        self.start_q, self.start_qd = q0, qd0
        self.q, self.qd, self.tau = q0.copy(), qd0.copy(), np.zeros(n)
        self.commanded = False
        self._index_cache.clear()
        self._out = JointState()
        self._out.name = list(model.joint_names)
        self.payload_switch.on_model(model)

    def _install_payload_model(self, model: RobotModel) -> None:
        """set_payload's swap: the same joints and friction, so the state and the command carry on."""
        with self._model_lock:
            self.model = model

    # -- commands -----------------------------------------------------------------------------------
    def _accept(self, tau: FloatArray) -> None:
        self.tau = tau
        self.commanded = True
        self.last_command = time.monotonic()

    def _on_array_command(self, msg: Float64MultiArray) -> None:
        self.stats.received += 1
        model = self.model
        if model is None:
            return
        data = np.asarray(msg.data, dtype=np.float64)[int(msg.layout.data_offset) :]
        if data.size != model.dof:
            self.reject("commands", f"{data.size} values for {model.dof} joints {model.joint_names}")
            return
        problem = non_finite_message("commands", data, model.joint_names)
        if problem:
            self.reject("commands", problem)
            return
        self._accept(data.copy())

    def _on_joint_command(self, msg: JointState) -> None:
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
        tau = effort[index]
        problem = non_finite_message("joint_commands: effort", tau, model.joint_names)
        if problem:
            self.reject("joint_commands", problem)
            return
        self._accept(tau)

    # -- reset --------------------------------------------------------------------------------------
    def _on_reset(self, request: Any, response: Any) -> Any:
        model = self.model
        if model is None:
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
        self.q = a["position"] if len(request.position) else self.start_q.copy()
        self.qd = a["velocity"]
        self.tau = np.zeros(model.dof)
        self.commanded = False
        self._last_tick = None
        self.resets += 1
        response.success, response.message = True, f"reset to q = {self.q.tolist()}"
        self._publish()
        return response

    # -- integration --------------------------------------------------------------------------------
    def _tick(self) -> None:
        model = self.model
        if model is None:
            return
        now = time.monotonic()
        last, self._last_tick = self._last_tick, now
        timeout = float(self.param("command_timeout"))
        if self.commanded and timeout > 0.0 and now - self.last_command > timeout:
            self.tau = np.zeros(model.dof)
        integrate = self.commanded or not self.param("wait_for_command")
        if integrate and last is not None:
            dt = min(now - last, 4.0 * self.period)
            t0 = time.perf_counter()
            try:
                q, qd = self._advance(model, dt)
                if not (np.isfinite(q).all() and np.isfinite(qd).all()):
                    raise StateError(f"the state became non-finite: q={q.tolist()} qd={qd.tolist()}")
                self.q, self.qd = q, qd
                self.sim_time += dt
                self.steps += 1
            except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
                self.step_errors += 1
                self.reject("simulation step", exc)
            self.stats.record_compute(time.perf_counter() - t0)
        self._publish()

    def _advance(self, model: RobotModel, dt: float) -> tuple[FloatArray, FloatArray]:
        """The state ``dt`` seconds later under the held torque (see the module docstring)."""
        if self.integrator == "adaptive":
            r = self._simulate(model, self.q, self.qd, self.tau, dt, t_eval=(0.0, dt), friction=self.friction)
            return np.asarray(r.q[-1], dtype=np.float64), np.asarray(r.qd[-1], dtype=np.float64)
        steps = max(1, int(np.ceil(dt / self.period - 1e-9)))
        h = dt / steps
        q, qd = self.q, self.qd
        sticky = self._sticky if self.friction else None
        for _ in range(steps):
            qdd = np.asarray(self._forward(model, q, qd, self.tau, friction=self.friction), dtype=np.float64)
            # constant acceleration over the step
            qd_next = qd + h * qdd
            q_next = q + h * qd + (0.5 * h * h) * qdd
            if sticky is not None:
                # a sticky joint that would reverse within the step stops where its velocity reaches 0
                # (after -qd/qdd); the next step's stick-slip solve decides whether it stays there
                crossed = sticky & (qd != 0.0) & (np.sign(qd_next) != np.sign(qd))
                if crossed.any():
                    q_next[crossed] = q[crossed] - 0.5 * qd[crossed] ** 2 / qdd[crossed]
                    qd_next[crossed] = 0.0
            q, qd = q_next, qd_next
        return q, qd

    def _publish(self) -> None:
        out = self._out
        out.header.stamp = self.get_clock().now().to_msg()
        out.position = as_double_array(self.q)
        out.velocity = as_double_array(self.qd)
        out.effort = as_double_array(self.tau)
        self.states_pub.publish(out)
        self.stats.published += 1

    def diagnostic_values(self) -> list[tuple[str, str]]:
        return [
            ("friction", str(self.friction).lower()),
            ("simulated_time_s", f"{self.sim_time:.3f}"),
            ("steps", str(self.steps)),
            ("step_errors", str(self.step_errors)),
            ("resets", str(self.resets)),
            ("state", "running" if (self.commanded or not self.param("wait_for_command")) else "waiting for command"),
            *self.payload_switch.diagnostic_values(),
        ]


def _warm_forward(model: RobotModel) -> None:
    """Trace (or load) the forward-dynamics programs a step runs, before the model is swapped in."""
    z = np.zeros(model.dof)
    for friction in (False, True):
        forward_dynamics(model, z, z, z, friction=friction)


def main(args: list[str] | None = None) -> int:
    return run_nodes([("simulator_node", SimulatorNode)], args)


if __name__ == "__main__":
    raise SystemExit(main())
