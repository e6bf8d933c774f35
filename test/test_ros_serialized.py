"""Outputs published as bytes (robot_dynamics.ros.serialized): the bytes are the message (no DDS traffic)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from geometry_msgs.msg import WrenchStamped
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from robot_dynamics.ros.contact_node import WRENCH
from robot_dynamics.ros.serialized import SerializedTemplate

# names of every length modulo 4 and 8, so the arrays' CDR alignment padding differs between cases
NAME_SETS = [
    ["j"],
    ["joint1", "joint2", "joint3", "joint4", "joint5", "joint6"],
    ["a", "bb", "ccc", "dddd", "eeeee", "ffffff", "ggggggg"],
    ["panda_joint1", "x", "shoulder_lift_joint"],
]


@pytest.mark.parametrize("names", NAME_SETS)
def test_joint_state_bytes_deserialise_to_the_message(names: list[str]) -> None:
    n = len(names)
    template = JointState()
    template.name = list(names)
    filler = SerializedTemplate.build(template, ("position", "velocity", "effort"), n, stamped=True)
    assert filler is not None
    rng = np.random.default_rng(n)
    for _ in range(200):
        q, qd, tau = rng.normal(scale=10.0, size=(3, n))
        sec, nanosec = int(rng.integers(0, 2**31)), int(rng.integers(0, 10**9))
        got = deserialize_message(filler.fill((sec, nanosec), q, qd, tau), JointState)
        assert got.name == names
        assert (got.header.stamp.sec, got.header.stamp.nanosec, got.header.frame_id) == (sec, nanosec, "")
        # bit-exact doubles: the bytes are copied, not converted
        assert np.asarray(got.position).tobytes() == q.tobytes()
        assert np.asarray(got.velocity).tobytes() == qd.tobytes()
        assert np.asarray(got.effort).tobytes() == tau.tobytes()


@pytest.mark.parametrize("n", [1, 2, 6, 7])
def test_multiarray_bytes_deserialise_to_the_message(n: int) -> None:
    template = Float64MultiArray()
    template.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
    filler = SerializedTemplate.build(template, ("data",), n, stamped=False)
    assert filler is not None
    rng = np.random.default_rng(n)
    for _ in range(200):
        tau = rng.normal(scale=100.0, size=n)
        got = deserialize_message(filler.fill(None, tau), Float64MultiArray)
        assert got.layout == template.layout
        assert np.asarray(got.data).tobytes() == tau.tobytes()


def test_a_wrong_length_raises_and_leaves_the_bytes_intact() -> None:
    template = JointState()
    template.name = ["a", "b"]
    filler = SerializedTemplate.build(template, ("position", "velocity", "effort"), 2, stamped=True)
    assert filler is not None
    good = filler.fill((1, 2), np.ones(2), np.zeros(2), np.full(2, 3.0))
    with pytest.raises(ValueError):
        filler.fill((1, 2), np.ones(3), np.zeros(2), np.full(2, 3.0))
    msg = deserialize_message(filler.fill((1, 2), np.ones(2), np.zeros(2), np.full(2, 3.0)), JointState)
    assert msg == deserialize_message(good, JointState)
    assert len(msg.position) == 2


def test_no_template_for_empty_arrays() -> None:
    assert SerializedTemplate.build(Float64MultiArray(), ("data",), 0, stamped=False) is None


@pytest.mark.parametrize("frame", ["tool0", "base_link", ""])
def test_wrench_bytes_deserialise_to_the_message(frame: str) -> None:
    """A WrenchStamped's six fields side by side, as the contact node publishes its tool wrench."""
    template = WrenchStamped()
    template.header.frame_id = frame
    filler = SerializedTemplate.build(template, (), 0, stamped=True, groups=(WRENCH,))
    assert filler is not None
    values = np.array([1.5, -2.25, 3.0, -0.125, 0.5, 7.75])
    msg = deserialize_message(filler.fill((12, 345), values), WrenchStamped)
    f, n = msg.wrench.force, msg.wrench.torque
    assert [f.x, f.y, f.z, n.x, n.y, n.z] == values.tolist()
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (12, 345, frame)
    with pytest.raises(ValueError):
        filler.fill((12, 345), values[:5])
