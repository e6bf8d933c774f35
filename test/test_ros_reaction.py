"""The feed-forward node's collision reaction over real DDS: a CollisionEvent in, the reaction's torque and
its report out; trajectories refused until the contact clears, then re-armed; ``none`` changes nothing.

Reference: the ROS-free law (:mod:`robot_dynamics.reaction`, checked by hand in ``test_reaction.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from ros_harness import Collector, Spinner, private_context, spinner_in_namespace, wait_until  # noqa: E402
from test_ros_control import Talk  # noqa: E402
from test_ros_live import NAMES, send_parameters, start_feedforward, trajectory_msg  # noqa: E402

from robot_dynamics.control import ControlLaw, ControlSettings  # noqa: E402
from robot_dynamics.models import load_robot  # noqa: E402
from robot_dynamics.reaction import ReactionSettings, stop_torque  # noqa: E402
from robot_dynamics.ros.messages import DATA_QOS, ns_to_stamp, stamp_to_ns  # noqa: E402
from robot_dynamics.ros.reaction_messages import CollisionEvent, ReactionEvent  # noqa: E402
from robot_dynamics.user_input import as_gains  # noqa: E402

pytestmark = pytest.mark.ros

PUMA = load_robot("puma560")
RNG = np.random.default_rng(77)
KP, KD = [400.0, 300.0, 200.0, 50.0, 50.0, 20.0], [40.0, 30.0, 20.0, 5.0, 5.0, 2.0]


@pytest.fixture(scope="module")
def context() -> Iterator[Any]:
    yield from private_context()


@pytest.fixture
def ros(context: Any) -> Iterator[tuple[Spinner, str]]:
    yield from spinner_in_namespace(context, "r")


def collision(stamp: int, joint: str, raised: bool, r: np.ndarray) -> Any:
    msg = CollisionEvent()
    msg.header.stamp = ns_to_stamp(stamp)
    msg.joint, msg.raised, msg.in_collision = joint, raised, raised
    msg.magnitude, msg.threshold, msg.clear_level = float(abs(r).max()), 1.0, 0.5
    order = [3, 0, 5, 1, 4, 2]  # the topic's order is any order
    msg.joint_names = [NAMES[i] for i in order]
    msg.external_torque = [float(r[i]) for i in order]
    return msg


def test_a_collision_event_stops_the_arm_and_is_reported(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    node = start_feedforward(context, spinner, ns, control_law="pd_feedforward", kp=KP, kd=KD, reaction="stop")
    talk = Talk(context, spinner, ns)
    events = talk.client.create_publisher(CollisionEvent, "collision", DATA_QOS)
    reports = Collector(talk.client, ReactionEvent, "feedforward/reaction")
    wait_until(lambda: events.get_subscription_count() >= 1, "the node's collision subscription")
    wait_until(lambda: reports.subscription.get_publisher_count() >= 1, "the node's reaction publisher")
    start = talk.client.get_clock().now().nanoseconds + 10**9
    q_pts, qd_pts, qdd_pts = RNG.normal(size=(3, 3, 6))
    talk.traj.publish(trajectory_msg([0.0, 0.5, 1.0], q_pts, qd_pts, qdd_pts, start))
    wait_until(lambda: node.pending is not None, "the trajectory")
    q1, q2, q3 = RNG.uniform(-1, 1, (3, 6))
    talk.torque(q1, np.zeros(6), start + 100_000_000)  # tracking
    assert node.active is not None
    r = np.array([0.0, 12.0, -3.0, 0.0, 0.0, 0.0])
    detected = start + 100_000_000
    events.publish(collision(detected, NAMES[1], True, r))
    wait_until(lambda: node.control.controller is not None and node.control.controller.reaction.engaged, "the event")
    qd2 = RNG.uniform(-1, 1, 6)
    msg = talk.torque(q2, qd2, start + 102_000_000)  # the reaction's first command: hold q2
    law = ControlLaw(PUMA)
    s = ControlSettings(law="pd_feedforward", kp=as_gains(KP, 6), kd=as_gains(KD, 6))
    expected = stop_torque(law, s, ReactionSettings("stop"), q2, qd2, q2)  # braked at 50 /s
    index = [list(msg.name).index(name) for name in PUMA.joint_names]
    np.testing.assert_allclose(np.asarray(msg.effort)[index], expected, rtol=1e-12, atol=1e-10)
    assert node.active is None and node.pending is None  # the trajectory was cancelled
    msg = talk.torque(q3, np.zeros(6), start + 104_000_000)  # still holding q2
    np.testing.assert_allclose(
        np.asarray(msg.effort)[index],
        stop_torque(law, s, ReactionSettings("stop"), q3, np.zeros(6), q2),
        rtol=1e-12,
        atol=1e-10,
    )
    wait_until(lambda: len(reports.snapshot()) >= 1, "the reaction report")
    (report,) = reports.snapshot()
    assert report.strategy == "stop" and report.active
    assert stamp_to_ns(report.collision_stamp) == detected and stamp_to_ns(report.command_stamp) == start + 102_000_000
    assert report.latency == pytest.approx(0.002) and list(report.joints) == [NAMES[1]]
    np.testing.assert_allclose(report.external_torque, r)
    # a trajectory while in contact is refused; after the clear one re-arms, and takes over at its start
    accepted = node.trajectories_accepted
    talk.traj.publish(trajectory_msg([0.0, 0.5, 1.0], q_pts, qd_pts, qdd_pts, start + 200_000_000))
    wait_until(lambda: node.stats.rejected_by_reason.get("trajectory", 0) >= 1, "the refusal")
    assert node.trajectories_accepted == accepted and node.pending is None
    events.publish(collision(start + 110_000_000, NAMES[1], False, np.zeros(6)))
    wait_until(lambda: not node.control.controller.reaction.in_collision, "the clear")  # type: ignore[union-attr]
    talk.traj.publish(trajectory_msg([0.0, 0.5, 1.0], q_pts, qd_pts, qdd_pts, start + 300_000_000))
    wait_until(lambda: node.pending is not None, "the new trajectory")
    talk.torque(q3, np.zeros(6), start + 250_000_000)  # before its start: still the stop
    assert node.control.controller.reaction.engaged  # type: ignore[union-attr]
    talk.torque(q3, np.zeros(6), start + 300_000_000)  # its start: tracking again
    assert node.active is not None and not node.control.controller.reaction.engaged  # type: ignore[union-attr]
    wait_until(lambda: len(reports.snapshot()) >= 2, "the end of the reaction")
    ended = reports.snapshot()[1]
    assert not ended.active and stamp_to_ns(ended.header.stamp) == start + 300_000_000
    values = dict(node.diagnostic_values())
    assert values["reaction"] == "stop" and values["reactions"] == "1" and values["reaction_rearmed"] == "1"
    assert values["reaction_refused_trajectories"] == "1" and values["collision_events"] == "2"


def test_reaction_parameters_are_checked_and_none_ignores_events(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    node = start_feedforward(context, spinner, ns, control_law="pd_feedforward", kp=KP, kd=KD)
    talk = Talk(context, spinner, ns)
    events = talk.client.create_publisher(CollisionEvent, "collision", DATA_QOS)
    wait_until(lambda: events.get_subscription_count() >= 1, "the node's collision subscription")
    from test_ros_control import refused

    assert "reaction" in refused(talk.client, node.get_name(), reaction="brake")
    assert "float_friction" in refused(talk.client, node.get_name(), reaction_float_friction=1.5)
    assert "reflex_duration" in refused(talk.client, node.get_name(), reaction_reflex_duration=-1.0)
    q = RNG.uniform(-1, 1, 6)
    before = np.asarray(talk.torque(q, np.zeros(6), 10**12).effort)
    events.publish(collision(10**12, NAMES[2], True, np.ones(6)))
    wait_until(lambda: node.control.controller.reaction.counters.events == 1, "the event")  # type: ignore[union-attr]
    after = np.asarray(talk.torque(q, np.zeros(6), 10**12 + 2_000_000).effort)
    np.testing.assert_array_equal(before, after)  # none: the same hold, the same torque
    bad = collision(10**12, NAMES[2], True, np.ones(6))
    bad.external_torque = [1.0]
    events.publish(bad)
    wait_until(lambda: node.stats.rejected_by_reason.get("collision", 0) >= 1, "the rejection")
    send_parameters(talk.client, node.get_name(), reaction="float", reaction_float_friction=0.25)
    wait_until(lambda: node.control.reaction.strategy == "float", "the new strategy")
    assert node.control.reaction.float_friction == 0.25
