"""Node parameters ``joint_map``, ``locked_joints``, ``base_link``/``tip_link`` over real DDS.

A driver that names the PUMA's joints ``arm_1..arm_6`` talks to nodes started with
``joint_map: [arm_1=joint1, ...]``: the nodes read, answer and publish in those names, with the
engine's torques of the model.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from builtin_interfaces.msg import Duration  # noqa: E402
from engine_reference import EXAMPLE_ROBOTS  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from ros_harness import Collector, Spinner, call, client_node, private_context, spinner_in_namespace, wait_until  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from robot_dynamics.dynamics import gravity_torques, inertia_matrix, inverse_dynamics  # noqa: E402
from robot_dynamics.friction import friction_torques  # noqa: E402
from robot_dynamics.models import load_robot  # noqa: E402
from robot_dynamics.ros.feedforward_node import FeedforwardNode  # noqa: E402
from robot_dynamics.ros.messages import DATA_QOS, StartupError, ns_to_stamp, stamp_to_ns  # noqa: E402
from robot_dynamics.ros.service_node import DynamicsServiceNode  # noqa: E402
from robot_dynamics.ros.simulator_node import SimulatorNode  # noqa: E402
from robot_dynamics_interfaces.srv import GetDynamicsCoefficients, InverseDynamics  # noqa: E402

pytestmark = pytest.mark.ros

PUMA = load_robot("puma560")
TOPIC_NAMES = [f"arm_{i}" for i in range(1, 7)]
JOINT_MAP = [f"arm_{i}=joint{i}" for i in range(1, 7)]
PANDA = EXAMPLE_ROBOTS / "panda_description" / "urdf" / "panda.urdf"
RNG = np.random.default_rng(7)


@pytest.fixture(scope="module")
def context() -> Iterator[Any]:
    yield from private_context()


@pytest.fixture
def ros(context: Any) -> Iterator[tuple[Spinner, str]]:
    yield from spinner_in_namespace(context, "jm")


def overrides(**params: Any) -> list[Parameter[Any]]:
    base = {"robot_config": "puma560", "backend": "python", "diagnostics_period": 0.2}
    return [Parameter(k, value=v) for k, v in {**base, **params}.items()]


def renamed_state(q: np.ndarray, qd: np.ndarray, stamp: int, order: list[int]) -> JointState:
    msg = JointState()
    msg.header.stamp = ns_to_stamp(stamp)
    msg.name = [TOPIC_NAMES[i] for i in order] + ["gripper"]
    msg.position = [float(q[i]) for i in order] + [0.02]
    msg.velocity = [float(qd[i]) for i in order] + [0.0]
    return msg


def by_stamp(messages: list[Any]) -> dict[int, Any]:
    return {stamp_to_ns(m.header.stamp): m for m in messages}


def test_feedforward_node_with_a_joint_map_answers_renamed_joint_states(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    node = spinner.add(
        FeedforwardNode(
            namespace=ns,
            context=context,
            parameter_overrides=overrides(joint_map=JOINT_MAP, joint_states_qos="reliable"),  # every state answered
        )
    )
    assert isinstance(node, FeedforwardNode)
    client = spinner.add(client_node(context, ns, "jm_client_"))
    efforts = Collector(client, JointState, "feedforward/efforts")
    js_pub = client.create_publisher(JointState, "joint_states", DATA_QOS)
    traj_pub = client.create_publisher(JointTrajectory, "joint_trajectory", DATA_QOS)
    wait_until(lambda: js_pub.get_subscription_count() >= 1 and traj_pub.get_subscription_count() >= 1, "the node")
    wait_until(lambda: efforts.subscription.get_publisher_count() >= 1, "feedforward/efforts")

    # holding: c(q) + b(qd) of the model, for joint states named as the driver names them
    states = {}
    for k in range(12):
        q, qd = RNG.uniform(-math.pi, math.pi, 6), RNG.uniform(-1.0, 1.0, 6)
        stamp = 1_000_000_000 + k * 1_000_000
        states[stamp] = (q, qd)
        js_pub.publish(renamed_state(q, qd, stamp, list(RNG.permutation(6))))
    wait_until(lambda: len(efforts.snapshot()) >= len(states), "a torque for every joint state")
    out = by_stamp(efforts.snapshot())
    worst = 0.0
    for stamp, (q, qd) in states.items():
        msg = out[stamp]
        assert list(msg.name) == TOPIC_NAMES  # the names the controller expects
        np.testing.assert_array_equal(msg.position, q)
        expected = gravity_torques(PUMA, q) + friction_torques(PUMA, qd, smooth=True)
        worst = max(worst, float(np.max(np.abs(np.asarray(msg.effort) - expected))))
    assert worst <= 1e-9, worst

    # tracking a trajectory given in the topic's names: the engine's inverse dynamics at the desired state
    times = [0.0, 0.5, 1.0]
    tq, tqd, tqdd = RNG.normal(size=(3, 3, 6))
    start = client.get_clock().now().nanoseconds + 1_000_000_000
    traj = JointTrajectory(joint_names=TOPIC_NAMES[::-1])
    traj.header.stamp = ns_to_stamp(start)
    for k, t in enumerate(times):
        traj.points.append(
            JointTrajectoryPoint(
                positions=tq[k, ::-1].tolist(),
                velocities=tqd[k, ::-1].tolist(),
                accelerations=tqdd[k, ::-1].tolist(),
                time_from_start=Duration(sec=int(t), nanosec=round((t % 1.0) * 1e9)),
            )
        )
    traj_pub.publish(traj)
    wait_until(lambda: node.pending is not None, "the renamed trajectory to be accepted")
    stamp = start + 500_000_000
    js_pub.publish(renamed_state(np.zeros(6), np.zeros(6), stamp, list(range(6))))
    wait_until(lambda: stamp in by_stamp(efforts.snapshot()), "the tracking torque")
    tracked = by_stamp(efforts.snapshot())[stamp]
    np.testing.assert_allclose(tracked.position, tq[1], rtol=0, atol=1e-12)
    expected = inverse_dynamics(PUMA, tq[1], tqd[1], tqdd[1], friction=True, smooth=True)
    np.testing.assert_allclose(tracked.effort, expected, rtol=0, atol=1e-9)

    # the model's own names are not the topic's any more: dropped with the throttled warning
    before = node.stats.rejected
    plain = JointState(name=PUMA.joint_names, position=[0.0] * 6)
    plain.header.stamp = ns_to_stamp(5)
    js_pub.publish(plain)
    wait_until(lambda: node.stats.rejected > before, "the rejection")
    assert node.stats.rejected_by_reason["joint_states"] >= 1


def test_service_node_speaks_the_topic_names(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    spinner.add(DynamicsServiceNode(namespace=ns, context=context, parameter_overrides=overrides(joint_map=JOINT_MAP)))
    client = spinner.add(client_node(context, ns, "jm_client_"))
    q = RNG.uniform(-1, 1, 6)
    order = [3, 0, 5, 1, 4, 2]
    request = GetDynamicsCoefficients.Request(joint_names=[TOPIC_NAMES[i] for i in order], position=q[order].tolist())
    res = call(client.create_client(GetDynamicsCoefficients, "get_dynamics_coefficients"), request)
    assert res.success, res.message
    assert list(res.joint_names) == TOPIC_NAMES
    np.testing.assert_allclose(res.gravity, gravity_torques(PUMA, q), rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.reshape(res.inertia.data, (6, 6)), inertia_matrix(PUMA, q), rtol=0, atol=1e-9)
    bad = InverseDynamics.Request(joint_names=PUMA.joint_names, position=[0.0] * 6)
    res = call(client.create_client(InverseDynamics, "inverse_dynamics"), bad)
    assert not res.success and "unknown joints ['joint1'" in res.message


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"joint_map": ["arm_1=joint9"]}, "parameter joint_map: robot 'puma560' has no joint 'joint9'"),
        ({"joint_map": ["arm_1"]}, "parameter joint_map: expected BAG_NAME=MODEL_NAME, got 'arm_1'"),
        ({"joint_map": ["a=joint1", "b=joint1"]}, "'a' and 'b' both map to model joint 'joint1'"),
        ({"joint_map": ["joint2=joint1"]}, "['joint2'] would name two joints"),
        ({"joint_map": [1, 2]}, "parameter joint_map: expected a string array"),
        ({"locked_joints": ["a=pi/x"]}, "parameter locked_joints a=pi/x: 'pi/x' is not a number"),
    ],
)
def test_a_bad_map_or_lock_stops_the_node_with_a_clear_error(
    context: Any, params: dict[str, Any], message: str
) -> None:
    for cls in (FeedforwardNode, DynamicsServiceNode, SimulatorNode):
        with pytest.raises(StartupError) as info:
            cls(namespace="/jm_bad", context=context, parameter_overrides=overrides(**params))
        assert message in str(info.value), (cls.__name__, str(info.value))


def test_a_bad_map_is_one_fatal_line_of_the_process() -> None:
    argv = [sys.executable, "-m", "robot_dynamics.ros.feedforward_node", "--ros-args", "-p", "robot_config:=puma560"]
    argv += ["-p", "joint_map:=['arm_1=joint9']"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=dict(os.environ))
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert result.returncode == 1 and len(lines) == 1, lines
    assert "FATAL" in lines[0] and "has no joint 'joint9' (did you mean 'joint6'?)" in lines[0], lines


def test_chain_parameters_choose_the_panda_arm(context: Any, ros: tuple[Spinner, str]) -> None:
    """tip_link, locked fingers and a map to the new fer_ names."""
    spinner, ns = ros
    params: dict[str, Any] = {"robot_description": PANDA.read_text(), "tip_link": "panda_hand_tcp"}
    params["joint_map"] = [f"fer_joint{i}=panda_joint{i}" for i in range(1, 8)]
    params["locked_joints"] = ["panda_finger_joint1=0.02", "panda_finger_joint2=0.02"]
    locks = {"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.02}
    node = spinner.add(DynamicsServiceNode(namespace=ns, context=context, parameter_overrides=overrides(**params)))
    panda = load_robot(PANDA, tip_link="panda_hand_tcp", locked_joints=locks)
    assert isinstance(node, DynamicsServiceNode) and node.model is not None
    assert node.model.joint_names == [f"fer_joint{i}" for i in range(1, 8)]
    client = spinner.add(client_node(context, ns, "jm_client_"))
    q = RNG.uniform(-1, 1, 7)
    res = call(
        client.create_client(GetDynamicsCoefficients, "get_dynamics_coefficients"),
        GetDynamicsCoefficients.Request(position=q.tolist()),
    )
    assert res.success, res.message
    np.testing.assert_allclose(res.gravity, gravity_torques(panda, q), rtol=0, atol=1e-9)


def test_every_node_renames_its_model_and_reports_the_map(context: Any) -> None:
    for cls in (FeedforwardNode, DynamicsServiceNode, SimulatorNode):
        node = cls(namespace="/jm_ok", context=context, parameter_overrides=overrides(joint_map=JOINT_MAP[:3]))
        try:
            assert node.model is not None
            assert node.model.joint_names == [*TOPIC_NAMES[:3], "joint4", "joint5", "joint6"], cls.__name__
            # the same robot otherwise: same dynamics under the new names
            q = RNG.uniform(-1, 1, 6)
            np.testing.assert_array_equal(gravity_torques(node.model, q), gravity_torques(PUMA, q))
        finally:
            node.destroy_node()
    sim = SimulatorNode(namespace="/jm_ok", context=context, parameter_overrides=overrides(joint_map=JOINT_MAP))
    try:
        assert list(sim._out.name) == TOPIC_NAMES  # the simulated joint_states carry the topic names
    finally:
        sim.destroy_node()
