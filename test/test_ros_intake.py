"""Latest-state intake of the feed-forward node: after a stall it answers the newest joint state,
never the backlog, and counts every state it skipped (DDS publication sequence numbers).

The node is not spun while the states arrive (a stall, as on a busy machine), then spun by hand.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from ros_harness import unique_name, wait_until  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from robot_dynamics.ros.feedforward_node import FeedforwardNode  # noqa: E402
from robot_dynamics.ros.intake import SequenceGaps  # noqa: E402
from robot_dynamics.ros.messages import ns_to_stamp, stamp_to_ns  # noqa: E402

pytestmark = pytest.mark.ros
STALLED = 40


@pytest.fixture
def context() -> Iterator[Any]:
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=[])
    yield ctx
    rclpy.try_shutdown(context=ctx)


def stall_then_spin(context: Any, qos: str) -> tuple[FeedforwardNode, list[JointState], list[int]]:
    """One state answered, ``STALLED`` more published while the node does not spin, then the node
    spins until it has nothing left: what it answered (its outputs) and the stamps that were sent."""
    ns = "/" + unique_name("intake")
    node = FeedforwardNode(
        namespace=ns,
        context=context,
        parameter_overrides=[
            rclpy.parameter.Parameter("robot_config", value="fu_two_link"),
            rclpy.parameter.Parameter("backend", value="python"),
            rclpy.parameter.Parameter("joint_states_qos", value=qos),
            rclpy.parameter.Parameter("diagnostics_period", value=100.0),  # its summary would reset the window
        ],
    )
    peer = Node("intake_peer", namespace=ns, context=context)
    outputs: list[JointState] = []
    peer.create_subscription(JointState, "feedforward/efforts", outputs.append, QoSProfile(depth=1000))
    pub = peer.create_publisher(
        JointState, "joint_states", QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    )
    node_executor, peer_executor = SingleThreadedExecutor(context=context), SingleThreadedExecutor(context=context)
    node_executor.add_node(node)
    peer_executor.add_node(peer)

    def spin_both(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            node_executor.spin_once(timeout_sec=0.01)
            peer_executor.spin_once(timeout_sec=0.01)

    wait_until(
        lambda: (spin_both(0.05), pub.get_subscription_count() and node.efforts_pub.get_subscription_count())[1],
        "discovery",
    )
    sent: list[int] = []

    def send(k: int) -> None:
        stamp = 1_000_000_000 + k
        sent.append(stamp)
        msg = JointState(name=["joint1", "joint2"], position=[0.01 * k, -0.02 * k], velocity=[0.0, 0.0])
        msg.header.stamp = ns_to_stamp(stamp)
        pub.publish(msg)

    send(0)
    wait_until(lambda: (spin_both(0.05), outputs)[1], "the first answer")
    for k in range(1, STALLED + 1):  # the node is stalled: nothing spins it
        send(k)
    time.sleep(0.5)  # delivered to its reader meanwhile
    spin_both(1.0)
    node_executor.shutdown()
    peer_executor.shutdown()
    peer.destroy_node()
    return node, outputs, sent


def test_latest_answers_the_newest_state_after_a_stall_and_counts_the_skipped_ones(context: Any) -> None:
    node, outputs, sent = stall_then_spin(context, "latest")
    try:
        answered = [stamp_to_ns(o.header.stamp) for o in outputs]
        assert answered == [sent[0], sent[-1]]  # the newest, not the backlog
        np.testing.assert_allclose(outputs[-1].position, [0.01 * STALLED, -0.02 * STALLED])
        assert node.intake.skipped == STALLED - 1 and node.intake.received == 2
        values = dict(node.diagnostic_values())
        assert values["joint_states_skipped"] == str(STALLED - 1)
        assert float(values["state_age_max_us"]) > 0.0
    finally:
        node.destroy_node()


def test_reliable_answers_every_state_in_order(context: Any) -> None:
    """The other choice, for a replay check that compares every message: the whole backlog, in order."""
    node, outputs, sent = stall_then_spin(context, "reliable")
    try:
        assert [stamp_to_ns(o.header.stamp) for o in outputs] == sent and node.intake.skipped == 0
    finally:
        node.destroy_node()


def test_sequence_gaps_per_publisher() -> None:
    gaps = SequenceGaps()
    a, b = {"data": [1] * 16}, {"data": [2] * 16}
    assert gaps.see({"publication_sequence_number": 7, "publisher_gid": a}) == 0  # a publisher's first sample
    assert gaps.see({"publication_sequence_number": 8, "publisher_gid": a}) == 0
    assert gaps.see({"publication_sequence_number": 3, "publisher_gid": b}) == 0
    assert gaps.see({"publication_sequence_number": 12, "publisher_gid": a}) == 3
    assert gaps.see({"publication_sequence_number": 5, "publisher_gid": b}) == 1
    assert gaps.see({"publication_sequence_number": 1, "publisher_gid": b}) == 0  # a restarted publisher
    assert gaps.see({"publication_sequence_number": 0, "publisher_gid": None}) == 0  # no sequence numbers
    assert (gaps.skipped, gaps.received) == (4, 7)
