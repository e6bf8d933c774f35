"""Feed-forward torque node: joint states (+ desired trajectory) → joint torques, on every joint state.

Subscribes
    ``joint_states`` (sensor_msgs/JointState): measured state, matched by joint name (any order, extra
    joints ignored, empty velocity = zero);
    ``joint_trajectory`` (trajectory_msgs/JointTrajectory): desired motion, every model joint named;
    ``collision`` (robot_dynamics_interfaces/CollisionEvent): the contact node's collision events
    (remap it onto ``contact_node/collision``), which trigger the ``reaction`` (:mod:`robot_dynamics.reaction`).
    ``header.stamp`` zero = start on receipt; otherwise start at that time (a later trajectory replaces
    the current one when it starts). If the first point is after ``t = 0`` the motion starts from the
    measured state (ROS semantics). A trajectory with no points cancels the active and pending ones
    (the node holds again), as an empty message on a joint_trajectory_controller's topic does.
Publishes, for each accepted joint state
    ``feedforward/commands`` (std_msgs/Float64MultiArray): torques in model joint order (layout one dim
    ``joints``), ready for ros2_control's ``effort_controllers/JointGroupEffortController``;
    ``feedforward/efforts`` (sensor_msgs/JointState): the same with joint names, ``effort`` = torques,
    ``position``/``velocity`` = the state they were computed for, ``header.stamp`` = the sample time.
    ``feedforward/reaction`` (robot_dynamics_interfaces/ReactionEvent): each reaction as it starts (the
    strategy, the collision's stamp, the stamp of the reaction's first command, the time between them,
    the joints in collision) and as it ends (re-armed by a new trajectory after the contact cleared).
    The command outputs are serialised once per model and published as bytes (:mod:`.serialized`: only the stamp and
    the arrays change per message); an output with no matched subscriber is not published at all (a
    volatile topic's message would reach nobody).
Serves
    ``~/set_payload`` (robot_dynamics_interfaces/SetPayload): the payload held by the tool, changed at
    run time without interrupting the joint-state loop (:mod:`.payload_service`).

Torques (``control_law: feedforward``, the default): while a trajectory is active, the inverse
dynamics (Newton–Euler, Fu 3.3-50..58) at the desired ``q, qd, qdd`` sampled at the joint state's
stamp (node clock if zero), plus friction at the desired or measured velocity (parameter
``friction_velocity``); otherwise gravity + friction compensation at the measured state,
``c(q) + b(qd)``. Friction uses the smooth model by default. ``pd_feedforward`` adds
``Kp e + Kd ė`` (parameters ``kp``, ``kd``; ``e = q_d - q``), ``pd`` is that feedback alone,
``computed_torque`` commands ``D(q)(qdd_d + Kp e + Kd ė) + h + c + b``; at rest the desired state is
the hold position. With ``feedforward_source: trajectory`` the feed-forward while tracking is the
trajectory's own ``effort`` (interpolated; a trajectory without efforts is then refused). The
command may be clamped to the robot file's effort limits (``limit_efforts``), and with
``state_timeout > 0`` a watchdog on the node's clock stops the command (``stale_action``: zero torque
or gravity hold) when no joint state arrived for that long. The law and the activation rules are
:mod:`robot_dynamics.control` and :mod:`robot_dynamics.feedforward` (ROS-free, shared with the
offline bag evaluation). Every time the node uses (a zero stamp, a zero-stamped trajectory's start,
a state's age) is its ROS clock's: simulated time under ``use_sim_time``.

Diagnostics: the law in force, clamped commands (and per joint), stale episodes and stop commands;
per accepted joint state: ``compute_*_us`` from the callback's entry to the torques
checked — matching, the trajectory step, the law; ``publish_*_us`` the DDS writes of the outputs that
have subscribers (each fills the serialised template and writes it; a write to a subscriber in
another process wakes it, which costs what a bare relay's ``publish()`` costs; absent while no output
has a subscriber, when the subscriber checks count as compute); ``callback_*_us`` the two together.
Not included: the executor's wait and its deserialisation of the incoming message before the callback.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from rclpy.subscription import MessageInfo
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory

from robot_dynamics.errors import StateError
from robot_dynamics.feedforward import FRICTION_VELOCITY_CHOICES, FeedforwardLaw, TrajectorySchedule
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.reaction import ReactingController
from robot_dynamics.ros.control_parameters import ControlParameters
from robot_dynamics.ros.intake import SequenceGaps
from robot_dynamics.ros.messages import (
    DATA_QOS,
    QOS_CHOICES,
    StartupError,
    all_finite,
    as_double_array,
    ns_to_stamp,
    qos_from_name,
    stamp_to_ns,
    trajectory_from_msg,
)
from robot_dynamics.ros.messages import JointStateMatcher as _Matcher
from robot_dynamics.ros.payload_service import PayloadSwitch, SetPayload
from robot_dynamics.ros.process import run_nodes
from robot_dynamics.ros.reaction_messages import CollisionEvent, ReactionEvent, collision_report, reaction_message
from robot_dynamics.ros.realtime import LatencyRecord
from robot_dynamics.ros.robot_node import RobotNode, check_bool, check_choice
from robot_dynamics.ros.serialized import SerializedTemplate
from robot_dynamics.trajectory import JointTrajectorySampler


class FeedforwardNode(RobotNode):
    def __init__(self, node_name: str = "feedforward_node", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.friction = True
        self.smooth = True
        self.use_measured_velocity = False
        self.control = ControlParameters(self, self._publish)  # control_law, kp, kd, limits, stale rule
        self.declare_dynamic("friction", True, "add friction compensation", check_bool, self._set_friction)
        self.declare_dynamic(
            "smooth_friction", True, "chatter-free (smooth) friction model", check_bool, self._set_smooth
        )
        self.declare_dynamic(
            "friction_velocity",
            "desired",
            "velocity for friction compensation while tracking: desired | measured",
            check_choice(FRICTION_VELOCITY_CHOICES),
            self._set_friction_velocity,
        )
        self.declare(
            "joint_states_qos",
            "latest",
            "QoS of joint_states: latest (answer the newest state, count the skipped ones) | reliable (every "
            "state in order, depth 100) | sensor_data (best effort)",
            read_only=True,
            check=check_choice(QOS_CHOICES),
        )
        self.declare("publish_commands", True, "publish feedforward/commands", read_only=True)
        self.declare("publish_efforts", True, "publish feedforward/efforts", read_only=True)
        self.law: FeedforwardLaw | None = None
        self.matcher: _Matcher | None = None
        self.schedule = TrajectorySchedule()
        self.trajectories_accepted = 0
        self.trajectories_finished = 0
        self.trajectories_cancelled = 0
        self._commands = Float64MultiArray()
        self._efforts = JointState()
        self._commands_raw: SerializedTemplate | None = None
        self._efforts_raw: SerializedTemplate | None = None
        self.payload_switch = PayloadSwitch(self, self._install_payload_model, _warm_law)
        # The model first (compiling the native backend may take a moment): no message is queued meanwhile.
        self.start_robot()
        self.commands_pub = (
            self.create_publisher(Float64MultiArray, "feedforward/commands", DATA_QOS)
            if self.param("publish_commands")
            else None
        )
        self.efforts_pub = (
            self.create_publisher(JointState, "feedforward/efforts", DATA_QOS)
            if self.param("publish_efforts")
            else None
        )
        self.intake = SequenceGaps()
        self.state_ages = LatencyRecord(4096)  # over one diagnostics period
        self.create_subscription(
            JointState, "joint_states", self._on_joint_state_info, qos_from_name(str(self.param("joint_states_qos")))
        )
        self.create_subscription(JointTrajectory, "joint_trajectory", self._on_trajectory, DATA_QOS)
        self.reaction_pub = self.create_publisher(ReactionEvent, "feedforward/reaction", DATA_QOS)
        self.create_subscription(CollisionEvent, "collision", self._on_collision, DATA_QOS)
        self.create_service(SetPayload, "~/set_payload", self.payload_switch.serve)

    @property
    def pending(self) -> tuple[JointTrajectorySampler, int] | None:
        """The trajectory waiting for its start: ``(sampler, start ns)`` or None."""
        return self.schedule.pending

    @property
    def active(self) -> tuple[JointTrajectorySampler, int] | None:
        """The trajectory being tracked: ``(sampler, start ns)`` or None."""
        return self.schedule.active

    # -- parameters -------------------------------------------------------------------------------
    def _set_friction(self, value: bool) -> None:
        self.friction = bool(value)
        self.control.update(friction=self.friction)

    def _set_smooth(self, value: bool) -> None:
        self.smooth = bool(value)
        self.control.update(smooth=self.smooth)

    def _set_friction_velocity(self, value: str) -> None:
        self.use_measured_velocity = value == "measured"
        self.control.update(friction_velocity="measured" if self.use_measured_velocity else "desired")

    def on_model(self, model: RobotModel) -> None:
        self.law = FeedforwardLaw(model)
        self.control.on_model(model, self.law)
        self.matcher = _Matcher(model.joint_names)
        self.schedule = TrajectorySchedule()
        n = model.dof
        self._commands = Float64MultiArray()
        self._commands.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
        self._efforts = JointState()
        self._efforts.name = list(model.joint_names)
        # the outputs serialised once; per message only their stamp and arrays are overwritten
        self._commands_raw = SerializedTemplate.build(self._commands, ("data",), n, stamped=False)
        self._efforts_raw = SerializedTemplate.build(self._efforts, ("position", "velocity", "effort"), n, stamped=True)
        self.payload_switch.on_model(model)

    def _install_payload_model(self, model: RobotModel) -> None:
        """set_payload's swap: the same joints, so the trajectories and messages stay."""
        law = FeedforwardLaw(model)
        with self._model_lock:
            self.law = law  # what the next joint-state callback reads
            self.control.on_payload(model, law)
            self.model = model

    # -- trajectories -----------------------------------------------------------------------------
    def _on_trajectory(self, msg: JointTrajectory) -> None:
        model = self.model
        if model is None:
            self.reject("trajectory", "no robot model yet")
            return
        if not msg.points:  # no points: stop tracking (ros_controllers' topic convention)
            cancelled = self.schedule.cancel()
            if "active" in cancelled:
                self.control.release_hold()  # hold where the arm is (joint_trajectory_controller)
            self.trajectories_cancelled += 1
            what = " and ".join(cancelled) or "nothing"
            self.get_logger().info(f"empty trajectory: cancelled {what}; holding (gravity + friction compensation)")
            return
        now = self.get_clock().now().nanoseconds
        if now == 0 and stamp_to_ns(msg.header.stamp) == 0:
            self.reject("trajectory", "zero stamp (start on receipt) but the node's clock is at zero: no /clock yet")
            return
        try:
            sampler = trajectory_from_msg(msg, model.joint_names)
            problem = self.control.trajectory_problem(sampler)
            if problem:
                raise StateError(problem)
            start = self.schedule.submit(sampler, stamp_to_ns(msg.header.stamp), now)
        except StateError as exc:
            self.reject("trajectory", exc)
            return
        self.trajectories_accepted += 1
        self.control.trajectory_accepted()
        self.get_logger().info(
            f"trajectory accepted: {len(sampler.times)} points, {sampler.kind} interpolation, "
            f"{sampler.end_time:.3f} s, starts in {max(start - now, 0) * 1e-9:.3f} s"
        )

    # -- collision events -------------------------------------------------------------------------
    def _on_collision(self, msg: Any) -> None:
        controller, model = self.control.controller, self.model
        if controller is None or model is None:
            return
        try:
            report = collision_report(msg, model.joint_names, self.control.now())
        except StateError as exc:
            self.reject("collision", exc)
            return
        controller.collision(report)

    # -- joint states -----------------------------------------------------------------------------
    def _on_joint_state_info(self, msg: JointState, info: MessageInfo) -> None:
        """The intake: count the states skipped before this one (sequence numbers), answer it, and
        record the age of the state answered (now − its publisher's timestamp)."""
        self.intake.see(info)
        published = self.stats.published
        self._on_joint_state(msg)
        if self.stats.published != published:
            self.state_ages.add(time.time_ns() - int(info["source_timestamp"]))

    def _on_joint_state(self, msg: JointState) -> None:
        t0 = time.perf_counter()
        self.stats.received += 1
        controller, matcher = self.control.controller, self.matcher
        if controller is None or matcher is None:
            return  # waiting for robot_description (shown in diagnostics)
        try:
            q, qd = matcher.match(msg)
        except StateError as exc:
            self.reject("joint_states", exc)
            return
        now = self.control.now()
        stamp = stamp_to_ns(msg.header.stamp) or now
        if stamp == 0:
            self.reject("joint_states", "zero stamp but the node's clock is at zero: no /clock yet (use_sim_time)")
            return
        try:
            tau, q_out, qd_out = self._command(controller, stamp, now, q, qd)
        except (ValueError, FloatingPointError) as exc:  # the engine refused the state
            self.reject("joint_states", exc)
            return
        if not all_finite(tau.tolist()):
            self.reject("joint_states", f"non-finite torque {tau.tolist()} at q={q.tolist()}")
            return
        t1 = time.perf_counter()
        written = self._publish(stamp, q_out, qd_out, tau)
        self.stats.published += 1
        t2 = time.perf_counter()
        if written:
            self.stats.record_compute(t1 - t0, t2 - t1)
        else:  # nothing to write: the subscriber checks count as compute
            self.stats.record_compute(t2 - t0)

    def _command(
        self, controller: ReactingController, stamp: int, now: int, q: FloatArray, qd: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """The control law at a joint state: the trajectory step, then ``(tau, q_d, qd_d)``."""
        tau, q_d, qd_d, finished = controller.step(self.schedule, stamp, now, q, qd)
        if controller.reaction.reports:  # a reaction started or ended at this joint state
            self._report_reactions(controller)
        if finished:
            self.trajectories_finished += 1
            self.get_logger().info("trajectory finished; holding (gravity + friction compensation)")
        return tau, q_d, qd_d

    def _report_reactions(self, controller: ReactingController) -> None:
        names = self.matcher.joint_names if self.matcher is not None else list(controller.law.model.joint_names)
        for record in controller.reaction.reports:
            self.reaction_pub.publish(reaction_message(record, names))
            what = "started" if record.active else "ended (re-armed)"
            joints = [names[j] for j in record.joints]
            self.get_logger().warning(
                f"collision reaction {record.strategy} {what}: joints {joints}, {record.latency * 1e3:.1f} ms "
                "from the detection to the first command"
            )
        controller.reaction.reports.clear()

    def _publish(self, stamp: int, q_out: FloatArray, qd_out: FloatArray, tau: FloatArray) -> bool:
        """Both outputs (those with a subscriber); whether anything was written."""
        # A topic nobody subscribes to is skipped: DDS would drop the message (volatile durability, no
        # matched reader), but converting and serialising it costs as much as the torque law.
        commands_pub, efforts_pub = self.commands_pub, self.efforts_pub
        written = False
        if commands_pub is not None and commands_pub.get_subscription_count():
            written = True
            if self._commands_raw is not None:
                commands_pub.publish(self._commands_raw.fill(None, tau))
            else:
                self._commands.data = as_double_array(tau)
                commands_pub.publish(self._commands)
        if efforts_pub is not None and efforts_pub.get_subscription_count():
            written = True
            if self._efforts_raw is not None:
                efforts_pub.publish(self._efforts_raw.fill(divmod(stamp, 1_000_000_000), q_out, qd_out, tau))
            else:
                out = self._efforts
                out.header.stamp = ns_to_stamp(stamp)
                out.position = as_double_array(q_out)
                out.velocity = as_double_array(qd_out)
                out.effort = as_double_array(tau)
                efforts_pub.publish(out)
        return written

    def _state_age_values(self) -> list[tuple[str, str]]:
        """``state_age_{mean,p99,max}_us`` over the diagnostics period (then cleared)."""
        figures = self.state_ages.figures(1e3)
        self.state_ages.clear()
        return [(f"state_age_{k}_us", f"{figures[k]:.1f}") for k in ("mean", "p99", "max") if figures]

    def diagnostic_level(self) -> tuple[bytes, str] | None:
        return self.control.diagnostic_level()

    def diagnostic_values(self) -> list[tuple[str, str]]:
        return [
            ("joint_states_skipped", str(self.intake.skipped)),
            *self._state_age_values(),
            ("mode", "tracking" if self.schedule.active is not None else "holding"),
            ("friction", str(self.friction).lower()),
            ("smooth_friction", str(self.smooth).lower()),
            ("friction_velocity", "measured" if self.use_measured_velocity else "desired"),
            *self.control.diagnostic_values(),
            ("trajectories_accepted", str(self.trajectories_accepted)),
            ("trajectories_finished", str(self.trajectories_finished)),
            ("trajectories_cancelled", str(self.trajectories_cancelled)),
            *(
                (f"subscribers[{pub.topic}]", str(pub.get_subscription_count()))
                for pub in (self.commands_pub, self.efforts_pub)
                if pub is not None
            ),
            *self.payload_switch.diagnostic_values(),
        ]


def _warm_law(model: RobotModel) -> None:
    """Trace (or load) the programs the torque law runs, before the model serves joint states."""
    law, z = FeedforwardLaw(model), np.zeros(model.dof)
    for friction in (False, True):
        law.holding(z, z, friction, True)
        law.holding(z, z, friction, False)
        law.tracking(z, z, z, friction, True)
        law.tracking(z, z, z, friction, False, z)


def main(args: list[str] | None = None) -> int:
    return run_nodes([("feedforward_node", FeedforwardNode)], args)


__all__ = ["FeedforwardNode", "StartupError", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
