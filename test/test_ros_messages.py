"""Message validation and conversion helpers of robot_dynamics.ros.messages (no DDS traffic)."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from builtin_interfaces.msg import Duration
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.errors import StateError
from robot_dynamics.ros.messages import (
    ComputeStats,
    JointStateMatcher,
    ThrottledWarnings,
    all_finite,
    from_multiarray,
    one_line,
    ordered_arrays,
    to_multiarray,
    trajectory_from_msg,
)

JOINTS = ["a", "b", "c"]


def joint_state(names: list[str], position: list[float], velocity: list[float] | None = None) -> JointState:
    msg = JointState()
    msg.name = names
    msg.position = position
    msg.velocity = velocity or []
    return msg


def test_joint_states_matched_by_name_in_any_order_extra_joints_ignored() -> None:
    m = JointStateMatcher(JOINTS)
    q, qd = m.match(joint_state(["gripper", "c", "a", "b"], [9.0, 3.0, 1.0, 2.0], [9.0, 0.3, 0.1, 0.2]))
    np.testing.assert_array_equal(q, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(qd, [0.1, 0.2, 0.3])
    q, qd = m.match(joint_state(["b", "a", "c"], [2.0, 1.0, 3.0]))  # empty velocity = zero
    np.testing.assert_array_equal(q, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(qd, [0.0, 0.0, 0.0])
    # a non-finite value in an ignored joint does not matter
    q, _ = m.match(joint_state(["a", "b", "c", "x"], [1.0, 2.0, 3.0, math.nan]))
    np.testing.assert_array_equal(q, [1.0, 2.0, 3.0])


def test_finiteness_is_decided_per_model_joint_whatever_the_sum_of_the_message() -> None:
    """The matcher's fast check (a finite sum of the message) must never hide or invent a bad value."""
    m = JointStateMatcher(JOINTS)
    big = 1.5e308  # finite, but any two of them overflow a sum
    q, qd = m.match(joint_state(["a", "b", "c"], [big, big, -big], [big, big, big]))
    np.testing.assert_array_equal(q, [big, big, -big])
    np.testing.assert_array_equal(qd, [big, big, big])
    # inf and -inf in ignored joints (their sum is undefined): still accepted
    q, _ = m.match(joint_state(["x", "a", "b", "c", "y"], [math.inf, 1.0, 2.0, 3.0, -math.inf]))
    np.testing.assert_array_equal(q, [1.0, 2.0, 3.0])
    rng = np.random.default_rng(7)
    for _ in range(300):  # a bad value in a model joint is always caught, whatever else the message holds
        position = rng.choice([big, -big, 1.0, math.inf, -math.inf, math.nan], size=5)
        velocity = rng.choice([big, -big, 0.5, math.inf, math.nan], size=5)
        names = ["a", "x", "b", "y", "c"]
        model = [0, 2, 4]
        bad = not (np.isfinite(position[model]).all() and np.isfinite(velocity[model]).all())
        if bad:
            with pytest.raises(StateError, match="non-finite"):
                m.match(joint_state(names, position.tolist(), velocity.tolist()))
        else:
            q, qd = m.match(joint_state(names, position.tolist(), velocity.tolist()))
            np.testing.assert_array_equal(q, position[model])
            np.testing.assert_array_equal(qd, velocity[model])


def test_all_finite_agrees_with_numpy_whatever_the_sum() -> None:
    rng = np.random.default_rng(3)
    pool = [1.5e308, -1.5e308, 1e-300, -2.0, 0.0, math.inf, -math.inf, math.nan]
    for size in range(8):
        for _ in range(300):
            values = rng.choice(pool, size=size)
            assert all_finite(values.tolist()) == bool(np.isfinite(values).all()), values


NON_FINITE = "non-finite values (nan or inf)"  # the engine's wording (robot_dynamics.user_input)


@pytest.mark.parametrize(
    ("names", "position", "velocity", "message"),
    [
        ([], [], None, "joint_states: no joint names"),
        (["a", "b"], [1.0, 2.0], None, "missing joints ['c']"),
        (["a", "b", "c"], [1.0, 2.0], None, "2 positions for 3 joint names"),
        (["a", "b", "c"], [1.0, 2.0, 3.0], [0.0], "1 velocities for 3 joint names"),
        (
            ["a", "b", "c"],
            [1.0, math.nan, 3.0],
            None,
            "joint_states: position: non-finite values (nan or inf) at joint 'b' (nan)",
        ),
        (
            ["a", "b", "c"],
            [1.0, 2.0, 3.0],
            [0.0, 0.0, math.inf],
            "joint_states: velocity: non-finite values (nan or inf) at joint 'c' (inf)",
        ),
        (["a", "a", "b", "c"], [1.0, 1.0, 2.0, 3.0], None, "duplicate joint names ['a']"),
    ],
)
def test_bad_joint_states_are_rejected_with_the_reason(
    names: list[str], position: list[float], velocity: list[float] | None, message: str
) -> None:
    m = JointStateMatcher(JOINTS)
    for _ in range(2):  # the second time comes from the cache
        with pytest.raises(StateError) as info:
            m.match(joint_state(names, position, velocity))
        assert message in str(info.value)


def test_ordered_arrays_for_service_requests() -> None:
    out = ordered_arrays(JOINTS, ["c", "a", "b"], {"position": [3.0, 1.0, 2.0], "velocity": []}, ["position"])
    np.testing.assert_array_equal(out["position"], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(out["velocity"], [0.0, 0.0, 0.0])
    out = ordered_arrays(JOINTS, [], {"position": [1.0, 2.0, 3.0]}, ["position"])
    np.testing.assert_array_equal(out["position"], [1.0, 2.0, 3.0])
    cases = [
        (["a", "b", "c", "d"], {"position": [0.0] * 4}, "unknown joints ['d']"),
        (["a", "b"], {"position": [0.0] * 2}, "missing joints ['c']"),
        ([], {"position": [0.0] * 2}, "position has 2 values for 3 model joints"),
        ([], {"position": []}, "position has 0 values for 3 model joints"),
        (
            ["a", "b", "c"],
            {"position": [0.0, math.nan, 0.0]},
            f"request: position: {NON_FINITE} at joint 'b' (nan)",
        ),
    ]
    for names, arrays, message in cases:
        with pytest.raises(StateError) as info:
            ordered_arrays(JOINTS, names, arrays, ["position"])
        assert message in str(info.value)


def trajectory(names: list[str], points: list[dict[str, list[float]]], times: list[float]) -> JointTrajectory:
    msg = JointTrajectory()
    msg.joint_names = names
    for p, t in zip(points, times, strict=True):
        point = JointTrajectoryPoint(**p)
        ns = round(t * 1e9)
        point.time_from_start = Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
        msg.points.append(point)
    return msg


def test_trajectory_message_reordered_to_the_model() -> None:
    msg = trajectory(
        ["c", "a", "b"],
        [
            {"positions": [3.0, 1.0, 2.0], "velocities": [0.0, 0.0, 0.0]},
            {"positions": [6.0, 4.0, 5.0], "velocities": [0.3, 0.1, 0.2]},
        ],
        [0.0, 1.5],
    )
    sampler = trajectory_from_msg(msg, JOINTS)
    assert sampler.kind == "cubic"
    np.testing.assert_array_equal(sampler.positions, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(sampler.velocities, [[0.0, 0.0, 0.0], [0.1, 0.2, 0.3]])
    np.testing.assert_array_equal(sampler.times, [0.0, 1.5])


@pytest.mark.parametrize(
    ("names", "points", "times", "message"),
    [
        (JOINTS, [], [], "trajectory has no points"),
        (["a", "b"], [{"positions": [0.0, 0.0]}], [1.0], "missing joints ['c']"),
        (["a", "b", "c", "x"], [{"positions": [0.0] * 4}], [1.0], "unknown joints ['x']"),
        (JOINTS, [{"positions": [0.0, 0.0]}], [1.0], "point 0: 2 positions for 3 joint names"),
        (JOINTS, [{"positions": [0.0] * 3, "velocities": [0.0]}], [1.0], "point 0: 1 velocities"),
        (
            JOINTS,
            [{"positions": [0.0] * 3, "velocities": [0.0] * 3}, {"positions": [0.0] * 3}],
            [1.0, 2.0],
            "velocities given for some points but not for point 1",
        ),
        (JOINTS, [{"positions": [0.0] * 3}, {"positions": [1.0] * 3}], [1.0, 0.5], "not strictly increasing"),
        (
            JOINTS,
            [{"positions": [0.0, math.inf, 0.0]}],
            [1.0],
            f"trajectory point 0: positions: {NON_FINITE} at joint 'b'",
        ),
        (
            ["c", "a", "b"],
            [{"positions": [0.0] * 3}, {"positions": [0.0] * 3, "velocities": [1.0, math.nan, 0.0]}],
            [0.5, 1.0],
            f"trajectory point 1: velocities: {NON_FINITE} at joint 'a' (nan)",
        ),
    ],
)
def test_bad_trajectories_are_rejected_with_the_reason(
    names: list[str], points: list[dict[str, list[float]]], times: list[float], message: str
) -> None:
    with pytest.raises(StateError) as info:
        trajectory_from_msg(trajectory(names, points, times), JOINTS)
    assert message in str(info.value)


def test_multiarray_layout_round_trip() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    msg = to_multiarray(a, ("i", "k", "m"))
    assert [(d.label, d.size, d.stride) for d in msg.layout.dim] == [("i", 2, 24), ("k", 3, 12), ("m", 4, 4)]
    assert msg.layout.data_offset == 0
    np.testing.assert_array_equal(from_multiarray(msg), a)
    m = to_multiarray(np.eye(2), ("rows", "cols"))
    assert [(d.label, d.size, d.stride) for d in m.layout.dim] == [("rows", 2, 4), ("cols", 2, 2)]
    with pytest.raises(ValueError, match="2-d array but 1 dimension labels"):
        to_multiarray(np.eye(2), ("rows",))


def test_throttled_warnings_per_reason_with_suppressed_count() -> None:
    now = [0.0]
    emitted: list[str] = []
    w = ThrottledWarnings(emitted.append, 5.0, clock=lambda: now[0])
    assert w.warn("js", "bad 1")
    assert not w.warn("js", "bad 2")
    assert w.warn("traj", "bad trajectory")  # another reason is not throttled by the first
    now[0] = 4.9
    assert not w.warn("js", "bad 3")
    now[0] = 5.0
    assert w.warn("js", "bad 4")
    assert emitted == ["bad 1", "bad trajectory", "bad 4 (2 similar messages suppressed)"]


def test_one_line() -> None:
    assert one_line("a\n  b\tc ") == "a b c"


def test_compute_stats_keep_the_compute_and_the_dds_writes_apart() -> None:
    """The feed-forward node records per message its compute and, when it published, its DDS writes:
    the summary gives ``compute_*``, and over the published messages ``publish_*`` and their sum
    ``callback_*``; a node that never publishes per message has no ``publish_*``."""
    stats = ComputeStats()
    stats.record_compute(10e-6, 40e-6)
    stats.record_compute(20e-6)  # nothing subscribed: nothing written
    stats.record_compute(30e-6, 60e-6)
    s = stats.summary()
    assert s["compute_mean_us"] == pytest.approx(20.0) and s["compute_max_us"] == pytest.approx(30.0)
    assert s["publish_mean_us"] == pytest.approx(50.0) and s["publish_max_us"] == pytest.approx(60.0)
    assert s["callback_mean_us"] == pytest.approx(70.0) and s["callback_max_us"] == pytest.approx(90.0)
    assert s["computes_in_window"] == 3.0
    stats.record_compute(5e-6)
    s = stats.summary()  # a new window
    assert s["compute_mean_us"] == pytest.approx(5.0) and "publish_mean_us" not in s
