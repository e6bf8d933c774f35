"""Contact node: joint states with measured torques → external joint torque, tool wrench, collision events.

Subscribes ``joint_states`` (sensor_msgs/JointState: position, velocity (empty = zero), ``effort`` =
the joint torques the motors apply), matched by joint name. Publishes, stamped with the state's stamp
(the node clock's time if zero):

* ``~/external_torque`` (sensor_msgs/JointState), for every accepted state but one that a newer state
  had queued behind when the node got to it (observed, not answered: ``caught_up`` in diagnostics;
  ``answer_every_state`` answers it too): ``effort`` = ``r``, the
  generalized-momentum observer's estimate of the external joint torque
  (:mod:`robot_dynamics.dynamics.momentum_observer`),
  ``position``/``velocity`` = the state, the topic's joint names;
* ``~/external_wrench`` (geometry_msgs/WrenchStamped): the wrench the environment exerts on the tool
  (:mod:`robot_dynamics.dynamics.contact_wrench`), tool axes (``frame_id`` = the tip link) or base
  axes (``wrench_frame: base``); computed after the torque is out, only while it has a subscriber,
  at ``wrench_rate`` Hz of the states' time (100 by default; 0 = for every state);
* ``~/collision`` (robot_dynamics_interfaces/CollisionEvent): whenever a joint enters or leaves
  collision (``thresholds`` with hysteresis, plus ``reversal_thresholds`` near each joint's velocity
  reversals, :mod:`robot_dynamics.contact`; none while unset).

Serves ``~/set_payload`` (:mod:`.payload_service`): the observer continues with the loaded model.
Parameters, bad input (the observer never sees a refused state; time going backwards resets it) and
diagnostics (``compute_*_us``: callback entry to ``r`` and the detection; ``wrench_*_us``): see
docs/contact.md.
"""

from __future__ import annotations

import math
import time
from functools import partial
from importlib import import_module
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState

from robot_dynamics.contact import CollisionDetector, check_reversal, check_thresholds
from robot_dynamics.dynamics import jacobian
from robot_dynamics.dynamics.contact_wrench import external_wrench
from robot_dynamics.dynamics.kinematics import Frame
from robot_dynamics.dynamics.momentum_observer import (
    MomentumObserver,
    generalized_momentum,
    momentum_rate,
    observer_gain,
)
from robot_dynamics.errors import StateError
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.ros.contact_parameters import PARAMETERS, PER_JOINT, numbers, per_joint_error
from robot_dynamics.ros.messages import (
    DATA_QOS,
    ComputeStats,
    StartupError,
    name_index,
    ns_to_stamp,
    qos_from_name,
    stamp_to_ns,
    waiting_messages,
)
from robot_dynamics.ros.messages import JointStateMatcher as _Matcher
from robot_dynamics.ros.payload_service import PayloadSwitch, SetPayload
from robot_dynamics.ros.process import run_nodes
from robot_dynamics.ros.robot_node import RobotNode
from robot_dynamics.ros.serialized import SerializedTemplate

CollisionEvent: Any = import_module("robot_dynamics_interfaces.msg").CollisionEvent


WRENCH = tuple(f"wrench.{part}.{axis}" for part in ("force", "torque") for axis in "xyz")
"""The WrenchStamped fields of an estimate ``[fx, fy, fz, nx, ny, nz]``, in the order CDR holds them."""


class ContactNode(RobotNode):
    def __init__(self, node_name: str = "contact_node", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.observer: MomentumObserver | None = None
        self.detector: CollisionDetector | None = None
        self.matcher: _Matcher | None = None
        self.settings: dict[str, Any] = {}
        self.resets = 0
        self.caught_up = 0  # states observed but not answered: a newer one had queued behind them
        self.wrench_condition = math.nan
        self.wrench_stats = ComputeStats()
        self._r: FloatArray = np.zeros(0)
        self._last_stamp: int | None = None
        self._wrench_due = 0  # ns of joint-state time: the next state whose wrench is published
        self._origin = 0
        self._effort_index: dict[tuple[str, ...], np.ndarray | str] = {}
        self._torque_raw: SerializedTemplate | None = None
        self._wrench_raw: dict[str, SerializedTemplate | None] = {}  # by frame_id
        self._torque_msg = JointState()
        for name, (default, description, check) in PARAMETERS.items():
            self.declare_dynamic(name, default, description, check, partial(self._change, name))
        for name, (default, description) in PER_JOINT.items():
            check, apply = partial(self._check_per_joint, name), partial(self._change, name)
            if default is None:  # unset: no value (e.g. no collision detection)
                self.declare_optional(name, description, check=check, apply=apply)
            else:
                self.declare(name, default, description, check=check, apply=apply, dynamic_typing=True)
        self.declare("joint_states_qos", "reliable", "QoS of joint_states: reliable | sensor_data", read_only=True)
        self.payload_switch = PayloadSwitch(self, self._install_payload_model, _warm)
        self.start_robot()
        self.torque_pub = self.create_publisher(JointState, "~/external_torque", DATA_QOS)
        self.wrench_pub = self.create_publisher(WrenchStamped, "~/external_wrench", DATA_QOS)
        self.collision_pub = self.create_publisher(CollisionEvent, "~/collision", DATA_QOS)
        self._state_sub = self.create_subscription(
            JointState, "joint_states", self._on_joint_state, qos_from_name(str(self.param("joint_states_qos")))
        )
        self.create_service(SetPayload, "~/set_payload", self.payload_switch.serve)

    # -- parameters -------------------------------------------------------------------------------
    def _check_per_joint(self, name: str, value: Any) -> str | None:
        """The reason to refuse a per-joint parameter (lengths once the model is known)."""
        return per_joint_error(name, value, self.model.dof if self.model is not None else None)

    def _change(self, name: str, value: Any) -> None:
        self.settings[name] = value
        if self.model is not None and self.observer is not None:
            self._configure(self.model.dof)

    def _configure(self, n: int) -> None:
        """The settings into the observer (gain, friction model) and the detector (thresholds)."""
        observer, s = self.observer, self.settings
        assert observer is not None
        observer.set_gain(observer_gain(numbers(s["observer_gain"]), n))
        friction, smooth = bool(s["friction"]), bool(s["smooth_friction"])
        if (observer.friction, observer.smooth) != (friction, smooth):  # beta of the last sample anew: no jump
            observer.set_model(observer.model, friction=friction, smooth=smooth)
        observer.effort_timing = str(s["effort_timing"])
        thresholds, ratio = s["thresholds"], float(s["clear_ratio"])
        extra = check_reversal(numbers(s["reversal_thresholds"]), n, "reversal_thresholds")
        band = check_reversal(numbers(s["reversal_velocity"]), n, "reversal_velocity")
        if thresholds is None:
            self.detector = None
        elif self.detector is None or self.detector.thresholds.size != n:
            self.detector = CollisionDetector(check_thresholds(numbers(thresholds), n), ratio, extra, band)
        else:
            self.detector.configure(check_thresholds(numbers(thresholds), n), ratio, extra, band)

    # -- model ------------------------------------------------------------------------------------
    def on_model(self, model: RobotModel) -> None:
        s = self.settings
        try:
            self.observer = MomentumObserver(
                model, numbers(s["observer_gain"]), friction=bool(s["friction"]), smooth=bool(s["smooth_friction"])
            )
            self.detector = None
            self._configure(model.dof)
        except StateError as exc:
            raise StartupError(f"robot {model.name!r} has {model.dof} joints: {exc}") from None
        self.matcher = _Matcher(model.joint_names)
        self._effort_index = {}
        self._r = np.zeros(model.dof)
        self._last_stamp = None
        self._torque_msg = JointState()
        self._torque_msg.name = list(model.joint_names)
        fields = ("position", "velocity", "effort")
        self._torque_raw = SerializedTemplate.build(self._torque_msg, fields, model.dof, stamped=True)
        _warm(model)
        self.payload_switch.on_model(model)

    def _install_payload_model(self, model: RobotModel) -> None:
        """set_payload's swap (executor thread): the observer carries on with the loaded model."""
        with self._model_lock:
            if self.observer is not None:
                self.observer.set_model(model)
            self.model = model

    # -- joint states -----------------------------------------------------------------------------
    def _effort(self, msg: JointState) -> FloatArray:
        """The model joints' efforts of a message whose names and positions the matcher accepted."""
        names = tuple(msg.name)
        index = self._effort_index.get(names)
        if index is None:
            assert self.model is not None
            try:
                index = name_index(self.model.joint_names, names, allow_extra=True, what="joint_states")
            except StateError as exc:
                index = str(exc)
            if len(self._effort_index) > 64:
                self._effort_index.clear()
            self._effort_index[names] = index
        if isinstance(index, str):
            raise StateError(index)
        effort = msg.effort
        if len(effort) != len(names):
            what = "no effort array (the joint torques)" if len(effort) == 0 else f"{len(effort)} efforts"
            raise StateError(f"joint_states: {what} for {len(names)} joint names")
        tau = np.frombuffer(effort, dtype=np.float64)[index] if len(effort) else np.zeros(0)
        total = sum(tau.tolist())
        if total - total != 0.0 and not np.isfinite(tau).all():  # a nan or inf (or an overflowing sum)
            bad = [self.model.joint_names[j] for j in np.flatnonzero(~np.isfinite(tau))] if self.model else []
            raise StateError(f"joint_states: non-finite effort of joints {bad}")
        return tau

    def _on_joint_state(self, msg: JointState) -> None:
        """Observe the state, and every state that queued behind it meanwhile; answer the newest.

        The observer integrates every state (a skipped one would be a gap in its integral), but on a busy
        machine answering each queued state would only add to the delay of the next: the states waiting
        in the subscription are taken here and observed too (``caught_up`` in diagnostics), and only the
        newest one's ``r`` is published, as the feed-forward node answers only the newest state. Collision
        events of every observed state are published. ``answer_every_state`` answers each instead."""
        t0 = time.perf_counter()
        answer = self._observe(msg)
        changes = answer[4] if answer is not None else []
        waiting = () if self.settings["answer_every_state"] else waiting_messages(self._state_sub)
        for queued, _ in waiting:
            newer = self._observe(queued)
            if newer is not None:
                self.caught_up += answer is not None
                answer = newer
                changes += newer[4]
        if answer is None:
            return
        stamp, q, qd, r, _ = answer
        t1 = time.perf_counter()
        # the events first: the torque answers the state (a lock-step simulator steps on it), and what
        # reacts to an event must have it before the next state
        for stamped, change_list, r_then in changes:  # each with the state's own stamp and r
            self._publish_collisions(change_list, stamped, r_then)
        pub = self.torque_pub
        if self._torque_raw is not None:
            pub.publish(self._torque_raw.fill(divmod(stamp, 1_000_000_000), q, qd, r))
        else:
            out = self._torque_msg
            out.header.stamp = ns_to_stamp(stamp)
            out.position, out.velocity, out.effort = q.tolist(), qd.tolist(), r.tolist()
            pub.publish(out)
        self.stats.published += 1
        t2 = time.perf_counter()
        self.stats.record_compute(t1 - t0, t2 - t1)
        if stamp >= self._wrench_due and self.wrench_pub.get_subscription_count():
            self._publish_wrench(q, r, stamp)
            self.wrench_stats.record_compute(time.perf_counter() - t2)
            rate = float(self.settings["wrench_rate"])
            self._wrench_due = stamp + (round(1e9 / rate) if rate > 0.0 else 0)

    def _observe(self, msg: JointState) -> tuple[int, FloatArray, FloatArray, FloatArray, list[Any]] | None:
        """One state through the observer and the detection: ``(stamp, q, qd, r, [(stamp, changes, r)])``,
        or None when it is refused (a throttled warning) or no model is loaded yet."""
        self.stats.received += 1
        observer, matcher = self.observer, self.matcher
        if observer is None or matcher is None:
            return None  # waiting for robot_description (shown in diagnostics)
        try:
            q, qd = matcher.match(msg)
            tau_m = self._effort(msg)
        except StateError as exc:
            self.reject("joint_states", exc)
            return None
        stamp = stamp_to_ns(msg.header.stamp) or self.get_clock().now().nanoseconds
        last = self._last_stamp
        if last is not None and stamp <= last:
            if stamp == last:
                self.reject("joint_states", f"stamp {stamp} ns repeats the previous joint state's")
                return None
            observer.reset()
            self._wrench_due = 0
            if self.detector is not None:
                self.detector.restart()
            self.resets += 1
            self.warnings.warn("time", f"joint_states went back in time ({last} -> {stamp} ns): observer reset")
        if observer.samples == 0:
            self._origin = stamp
        try:
            r = observer.update((stamp - self._origin) * 1e-9, q, qd, tau_m)
        except (ValueError, FloatingPointError) as exc:  # the engine refused the state
            self.reject("joint_states", exc)
            return None
        self._last_stamp = stamp
        self._r = r
        detector = self.detector
        changes = detector.update(r, observer.samples, stamp * 1e-9, qd, observer.decay) if detector else []
        return stamp, q, qd, r, [(stamp, changes, r)] if changes else []

    def _publish_collisions(self, changes: list[Any], stamp: int, r: FloatArray) -> None:
        model, detector = self.model, self.detector
        assert model is not None and detector is not None
        for change in changes:
            event = CollisionEvent()
            event.header.stamp = ns_to_stamp(stamp)
            event.joint = model.joint_names[change.joint]
            event.raised = change.raised
            event.magnitude, event.threshold, event.clear_level = change.magnitude, change.threshold, change.clear_level
            event.in_collision = detector.in_collision
            event.joint_names = list(model.joint_names)
            event.external_torque = r.tolist()
            self.collision_pub.publish(event)
            what = "collision" if change.raised else "collision cleared"
            self.get_logger().info(
                f"{what}: joint {event.joint} |r| = {change.magnitude:.3g} "
                f"({'threshold' if change.raised else 'clear level'} "
                f"{change.threshold if change.raised else change.clear_level:.3g})"
            )

    def _publish_wrench(self, q: FloatArray, r: FloatArray, stamp: int) -> None:
        model = self.model
        assert model is not None
        s = self.settings
        frame: Frame = "base" if s["wrench_frame"] == "base" else "tool"
        est = external_wrench(
            model, q, r, frame=frame, damping=s["wrench_damping"], floor=s["wrench_singular_value_floor"]
        )
        self.wrench_condition = float(est.condition)
        frame_id = model.base_link if frame == "base" else model.tip_link
        if frame_id not in self._wrench_raw:  # serialised once per frame, then only stamp and values written
            template = WrenchStamped()
            template.header.frame_id = frame_id
            self._wrench_raw[frame_id] = SerializedTemplate.build(template, (), 0, stamped=True, groups=(WRENCH,))
        raw = self._wrench_raw[frame_id]
        if raw is not None:
            self.wrench_pub.publish(raw.fill(divmod(stamp, 1_000_000_000), est.wrench))
            return
        f = est.wrench.tolist()
        out = WrenchStamped()
        out.header.stamp = ns_to_stamp(stamp)
        out.header.frame_id = frame_id
        out.wrench.force.x, out.wrench.force.y, out.wrench.force.z = f[0], f[1], f[2]
        out.wrench.torque.x, out.wrench.torque.y, out.wrench.torque.z = f[3], f[4], f[5]
        self.wrench_pub.publish(out)

    # -- diagnostics ------------------------------------------------------------------------------
    def diagnostic_level(self) -> tuple[bytes, str] | None:
        detector, model = self.detector, self.model
        if detector is None or model is None or not detector.in_collision:
            return None
        joints = [model.joint_names[j] for j in np.flatnonzero(detector.active)]
        return DiagnosticStatus.WARN, f"in collision: joints {joints}"

    def diagnostic_values(self) -> list[tuple[str, str]]:
        model, detector = self.model, self.detector
        names = model.joint_names if model is not None else []
        wrench = self.wrench_stats.summary()
        values = [
            ("observer_gain", ",".join(f"{k:g}" for k in self.observer.gain) if self.observer else ""),
            *((name, str(self.settings[name]).lower()) for name in PARAMETERS),
            ("in_collision", str(bool(detector and detector.in_collision)).lower()),
            ("collisions_raised", str(detector.raised if detector else 0)),
            ("observer_resets", str(self.resets)),
            ("unread", str(self.observer.unread if self.observer else 0)),
            ("caught_up", str(self.caught_up)),
            ("wrench_condition", f"{self.wrench_condition:.3g}"),
            *((f"wrench_{s}_us", f"{wrench[f'compute_{s}_us']:.1f}") for s in ("mean", "p99", "max")),
            *((f"residual[{name}]", f"{v:.4g}") for name, v in zip(names, self._r.tolist(), strict=False)),
            *(
                (f"threshold[{name}]", f"{v:g}")  # in force now: plus the reversal allowance x its weight
                for name, v in zip(names, detector.current_thresholds().tolist() if detector else [], strict=False)
            ),
            *(
                (f"reversal_threshold[{name}]", f"{v:g}")
                for name, v in zip(names, detector.reversal_thresholds.tolist() if detector else [], strict=False)
            ),
            *self.payload_switch.diagnostic_values(),
        ]
        return values


def _warm(model: RobotModel) -> None:
    """Trace (or load) the programs the observer and the wrench run, before the model serves states."""
    z = np.zeros(model.dof)
    generalized_momentum(model, z, z)
    for friction in (False, True):
        for smooth in (False, True):
            momentum_rate(model, z, z, z, friction=friction, smooth=smooth)
    jacobian(model, z)


def main(args: list[str] | None = None) -> int:
    return run_nodes([("contact_node", ContactNode)], args)


__all__ = ["ContactNode", "StartupError", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
