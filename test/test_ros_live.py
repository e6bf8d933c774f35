"""Live tests of the nodes over real DDS (session ROS_DOMAIN_ID from conftest), nodes on executor threads.

Every node under test and the test's client node live in a namespace of their own, so the tests of one
session never see each other's topics.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from builtin_interfaces.msg import Duration  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.parameter_client import AsyncParameterClient  # noqa: E402
from ros_harness import Collector, Spinner, call, client_node, private_context, spinner_in_namespace, wait_until  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from robot_dynamics.dynamics import (  # noqa: E402
    coriolis_centrifugal,
    coriolis_matrix,
    coriolis_tensor,
    forward_dynamics,
    gravity_torques,
    inertia_matrix,
    inverse_dynamics,
    robmat_coefficients,
    simulate,
)
from robot_dynamics.friction import friction_torques  # noqa: E402
from robot_dynamics.models import load_robot  # noqa: E402
from robot_dynamics.ros.feedforward_node import FeedforwardNode  # noqa: E402
from robot_dynamics.ros.messages import (  # noqa: E402
    DATA_QOS,
    ROBOT_DESCRIPTION_QOS,
    diagnostic_dict,
    from_multiarray,
    ns_to_stamp,
    stamp_to_ns,
)
from robot_dynamics.ros.service_node import DynamicsServiceNode  # noqa: E402
from robot_dynamics.ros.simulator_node import SimulatorNode  # noqa: E402
from robot_dynamics.trajectory import JointTrajectorySampler  # noqa: E402
from robot_dynamics_interfaces.srv import (  # noqa: E402
    ForwardDynamics,
    GetDynamicsCoefficients,
    InverseDynamics,
    ResetSimulation,
    SimulateTrajectory,
)

pytestmark = pytest.mark.ros

PUMA = load_robot("puma560")
NAMES = PUMA.joint_names
RNG = np.random.default_rng(2024)


@pytest.fixture(scope="module")
def context() -> Iterator[Any]:
    yield from private_context()


@pytest.fixture
def ros(context: Any) -> Iterator[tuple[Spinner, str]]:
    """A spinner and a fresh namespace for one test."""
    yield from spinner_in_namespace(context, "t")


def joint_state(q: np.ndarray, qd: np.ndarray, stamp_ns: int, order: list[int] | None = None) -> JointState:
    """A JointState in a shuffled order with an extra joint the model does not have."""
    order = list(range(len(q))) if order is None else order
    msg = JointState()
    msg.header.stamp = ns_to_stamp(stamp_ns)
    msg.name = [NAMES[i] for i in order] + ["gripper_joint"]
    msg.position = [float(q[i]) for i in order] + [0.01]
    msg.velocity = [float(qd[i]) for i in order] + [0.0]
    return msg


def by_stamp(messages: list[Any]) -> dict[int, Any]:
    return {stamp_to_ns(m.header.stamp): m for m in messages}


def start_feedforward(context: Any, spinner: Spinner, ns: str, **params: Any) -> FeedforwardNode:
    overrides = [Parameter("robot_config", value="puma560"), Parameter("diagnostics_period", value=0.2)]
    # every state answered in order: these tests publish bursts and check each answer (latest: test_ros_intake.py)
    overrides += [Parameter("joint_states_qos", value="reliable")]
    overrides += [Parameter(k, value=v) for k, v in params.items()]
    return spinner.add(FeedforwardNode(namespace=ns, context=context, parameter_overrides=overrides))  # type: ignore[return-value]


def connect(pub: Any, *collectors: Collector) -> None:
    wait_until(lambda: pub.get_subscription_count() >= 1, f"a subscriber on {pub.topic_name}")
    for c in collectors:
        wait_until(lambda c=c: c.subscription.get_publisher_count() >= 1, f"a publisher on {c.subscription.topic_name}")


def holding_reference(q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """What the engine computes for gravity + smooth friction compensation at the measured state."""
    zeros = np.zeros_like(q)
    return inverse_dynamics(PUMA, q, zeros, zeros, friction=False) + friction_torques(PUMA, qd, smooth=True)


# ------------------------------------------------------------------------------------------------
# feed-forward node
# ------------------------------------------------------------------------------------------------
def test_joint_states_give_the_engines_holding_torques(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    start_feedforward(context, spinner, ns)
    client = spinner.add(client_node(context, ns))
    efforts = Collector(client, JointState, "feedforward/efforts")
    commands = Collector(client, Float64MultiArray, "feedforward/commands")
    pub = client.create_publisher(JointState, "joint_states", DATA_QOS)
    connect(pub, efforts, commands)
    states = {}
    for k in range(40):
        q = RNG.uniform(-math.pi, math.pi, 6)
        qd = RNG.uniform(-1.0, 1.0, 6) if k % 4 else np.zeros(6)  # includes states at rest
        stamp = 1_000_000_000 + k * 1_000_000
        states[stamp] = (q, qd)
        pub.publish(joint_state(q, qd, stamp, list(RNG.permutation(6))))
        # one at a time: the node's reliable depth-10 queue is not what is tested here
        wait_until(lambda k=k: len(efforts.snapshot()) > k and len(commands.snapshot()) > k, f"torque {k}")
    out = by_stamp(efforts.snapshot())
    assert sorted(out) == sorted(states)
    worst = worst_reference = 0.0
    for stamp, (q, qd) in states.items():
        msg = out[stamp]
        assert list(msg.name) == NAMES
        np.testing.assert_array_equal(msg.position, q)
        np.testing.assert_array_equal(msg.velocity, qd)
        tau = np.asarray(msg.effort)
        worst = max(worst, float(np.max(np.abs(tau - holding_reference(q, qd)))))
        # an independent route through the engine: c(q) + b(qd)
        c_plus_b = gravity_torques(PUMA, q) + friction_torques(PUMA, qd, smooth=True)
        worst_reference = max(worst_reference, float(np.max(np.abs(tau - c_plus_b))))
    print(f"holding: 40 states, max |tau - engine| = {worst:.2e}, vs c(q) + b(qd) = {worst_reference:.2e}")
    assert worst <= 1e-12, worst
    assert worst_reference <= 1e-9, worst_reference
    # the Float64MultiArray carries the same torques, model order, with a layout
    arrays = commands.snapshot()
    dims = arrays[0].layout.dim
    assert [(d.label, d.size, d.stride) for d in dims] == [("joints", 6, 6)]
    effort_set = {tuple(np.asarray(m.effort)) for m in out.values()}
    assert all(tuple(np.asarray(m.data)) in effort_set for m in arrays)


def test_an_output_without_subscriber_is_skipped_until_one_joins(context: Any, ros: tuple[Spinner, str]) -> None:
    """Only feedforward/efforts is subscribed at first; a commands subscriber joining later gets torques."""
    spinner, ns = ros
    node = start_feedforward(context, spinner, ns)
    client = spinner.add(client_node(context, ns))
    efforts = Collector(client, JointState, "feedforward/efforts")
    pub = client.create_publisher(JointState, "joint_states", DATA_QOS)
    connect(pub, efforts)
    assert node.commands_pub is not None and node.commands_pub.get_subscription_count() == 0
    states = {1_000 + k: (RNG.uniform(-1, 1, 6), RNG.uniform(-1, 1, 6)) for k in range(10)}
    for stamp, (q, qd) in states.items():
        pub.publish(joint_state(q, qd, stamp))
        wait_until(lambda stamp=stamp: stamp in by_stamp(efforts.snapshot()), "the torque")
    assert node.stats.published == len(states)  # every accepted joint state counts, published or not
    commands = Collector(client, Float64MultiArray, "feedforward/commands")
    wait_until(lambda: node.commands_pub.get_subscription_count() >= 1, "the late commands subscriber")
    connect(pub, commands)
    late = {2_000 + k: (RNG.uniform(-1, 1, 6), RNG.uniform(-1, 1, 6)) for k in range(10)}
    for k, (stamp, (q, qd)) in enumerate(late.items()):
        pub.publish(joint_state(q, qd, stamp))
        wait_until(
            lambda k=k, stamp=stamp: len(commands.snapshot()) > k and stamp in by_stamp(efforts.snapshot()), "torques"
        )
    out = by_stamp(efforts.snapshot())
    for stamp, (q, qd) in {**states, **late}.items():
        np.testing.assert_allclose(out[stamp].effort, holding_reference(q, qd), rtol=0, atol=1e-12)
    # the commands are the late states' torques, in order
    got = np.array([m.data for m in commands.snapshot()])
    np.testing.assert_array_equal(got, np.array([out[stamp].effort for stamp in late]))


def send_parameters(client: Node, node_name: str, **values: Any) -> None:
    params = AsyncParameterClient(client, node_name)
    wait_until(params.services_are_ready, f"parameter services of {node_name}")
    future = params.set_parameters([Parameter(k, value=v) for k, v in values.items()])
    wait_until(future.done, "set_parameters")
    results = future.result().results
    assert all(r.successful for r in results), [r.reason for r in results]


def test_friction_switch_and_velocity_source_change_at_run_time(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    node = start_feedforward(context, spinner, ns)
    client = spinner.add(client_node(context, ns))
    efforts = Collector(client, JointState, "feedforward/efforts")
    pub = client.create_publisher(JointState, "joint_states", DATA_QOS)
    connect(pub, efforts)
    q, qd = RNG.uniform(-1, 1, 6), RNG.uniform(-1, 1, 6)

    def torque_for(stamp: int) -> np.ndarray:
        pub.publish(joint_state(q, qd, stamp))
        wait_until(lambda: stamp in by_stamp(efforts.snapshot()), "the torque")
        return np.asarray(by_stamp(efforts.snapshot())[stamp].effort)

    with_friction = torque_for(10)
    send_parameters(client, f"{ns}/feedforward_node", friction=False)
    assert node.friction is False
    without = torque_for(20)
    np.testing.assert_allclose(with_friction, holding_reference(q, qd), rtol=0, atol=1e-12)
    np.testing.assert_allclose(without, gravity_torques(PUMA, q), rtol=0, atol=1e-9)
    assert np.max(np.abs(with_friction - without)) > 1.0  # PUMA motor friction is several N m
    # a bad value is refused by the parameter callback and the node keeps its setting
    params = AsyncParameterClient(client, f"{ns}/feedforward_node")
    future = params.set_parameters([Parameter("friction_velocity", value="sideways")])
    wait_until(future.done, "set_parameters")
    result = future.result().results[0]
    assert not result.successful and "expected one of ['desired', 'measured']" in result.reason
    assert node.use_measured_velocity is False


def trajectory_msg(
    times: list[float], q: np.ndarray, qd: np.ndarray, qdd: np.ndarray, start_ns: int
) -> JointTrajectory:
    order = [5, 3, 1, 0, 2, 4]  # any order
    msg = JointTrajectory()
    msg.header.stamp = ns_to_stamp(start_ns)
    msg.joint_names = [NAMES[i] for i in order]
    for k, t in enumerate(times):
        ns = round(t * 1e9)
        msg.points.append(
            JointTrajectoryPoint(
                positions=[float(q[k, i]) for i in order],
                velocities=[float(qd[k, i]) for i in order],
                accelerations=[float(qdd[k, i]) for i in order],
                time_from_start=Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000),
            )
        )
    return msg


def test_trajectory_tracking_matches_the_engine_at_sampled_times(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    node = start_feedforward(context, spinner, ns)
    client = spinner.add(client_node(context, ns))
    efforts = Collector(client, JointState, "feedforward/efforts")
    js_pub = client.create_publisher(JointState, "joint_states", DATA_QOS)
    traj_pub = client.create_publisher(JointTrajectory, "joint_trajectory", DATA_QOS)
    connect(js_pub, efforts)
    wait_until(lambda: traj_pub.get_subscription_count() >= 1, "trajectory subscriber")
    times = [0.0, 0.4, 1.0, 1.5]
    q, qd, qdd = RNG.normal(size=(3, 4, 6))
    start = client.get_clock().now().nanoseconds + 2_000_000_000  # starts in 2 s (stamped start time)
    traj_pub.publish(trajectory_msg(times, q, qd, qdd, start))
    wait_until(lambda: node.pending is not None, "the trajectory to be accepted")
    reference = JointTrajectorySampler(times, q, qd, qdd)
    q_meas, qd_meas = RNG.normal(size=(2, 6))
    sample_times = [0.0, 0.13, 0.4, 0.77, 1.2, 1.5]
    stamps = [start + round(t * 1e9) for t in sample_times]
    before = start - 500_000_000  # before the start: holding at the measured state
    after = start + 2_000_000_000  # after the end: holding again
    for stamp in [before, *stamps, after]:
        js_pub.publish(joint_state(q_meas, qd_meas, stamp))
    wait_until(lambda: len(efforts.snapshot()) >= len(stamps) + 2, "torques for every joint state")
    out = by_stamp(efforts.snapshot())
    worst = 0.0
    for t, stamp in zip(sample_times, stamps, strict=True):
        d = reference.sample(t)
        expected = inverse_dynamics(PUMA, d.positions, d.velocities, d.accelerations, friction=True, smooth=True)
        msg = out[stamp]
        np.testing.assert_allclose(msg.position, d.positions, rtol=0, atol=1e-12)
        np.testing.assert_allclose(msg.velocity, d.velocities, rtol=0, atol=1e-12)
        worst = max(worst, float(np.max(np.abs(np.asarray(msg.effort) - expected))))
    print(f"tracking: {len(stamps)} sample times, max |tau - engine| = {worst:.2e}")
    assert worst <= 1e-12, worst
    for stamp in (before, after):
        np.testing.assert_allclose(out[stamp].effort, holding_reference(q_meas, qd_meas), rtol=0, atol=1e-12)
    assert node.trajectories_finished == 1

    # friction at the measured velocity while tracking, switched at run time
    send_parameters(client, f"{ns}/feedforward_node", friction_velocity="measured")
    start2 = client.get_clock().now().nanoseconds + 1_000_000_000
    traj_pub.publish(trajectory_msg(times, q, qd, qdd, start2))
    wait_until(lambda: node.pending is not None, "the second trajectory")
    stamp = start2 + 700_000_000
    js_pub.publish(joint_state(q_meas, qd_meas, stamp))
    wait_until(lambda: stamp in by_stamp(efforts.snapshot()), "the torque")
    d = reference.sample(0.7)
    rigid = inverse_dynamics(PUMA, d.positions, d.velocities, d.accelerations, friction=False)
    expected = rigid + friction_torques(PUMA, qd_meas, smooth=True)
    np.testing.assert_allclose(by_stamp(efforts.snapshot())[stamp].effort, expected, rtol=0, atol=1e-12)


def test_a_late_first_point_starts_from_the_measured_state(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    node = start_feedforward(context, spinner, ns, friction=False)
    client = spinner.add(client_node(context, ns))
    efforts = Collector(client, JointState, "feedforward/efforts")
    js_pub = client.create_publisher(JointState, "joint_states", DATA_QOS)
    traj_pub = client.create_publisher(JointTrajectory, "joint_trajectory", DATA_QOS)
    connect(js_pub, efforts)
    wait_until(lambda: traj_pub.get_subscription_count() >= 1, "trajectory subscriber")
    # positions only (linear interpolation), first point at 1 s: motion starts at the measured state
    msg = JointTrajectory()
    msg.joint_names = NAMES
    target = np.full(6, 0.5)
    msg.points = [JointTrajectoryPoint(positions=target.tolist(), time_from_start=Duration(sec=1))]
    start = client.get_clock().now().nanoseconds + 1_000_000_000
    msg.header.stamp = ns_to_stamp(start)
    traj_pub.publish(msg)
    wait_until(lambda: node.pending is not None, "the trajectory")
    q0 = np.zeros(6)
    for stamp in (start, start + 250_000_000):
        js_pub.publish(joint_state(q0, np.zeros(6), stamp))
    wait_until(lambda: len(efforts.snapshot()) >= 2, "torques")
    out = by_stamp(efforts.snapshot())
    np.testing.assert_allclose(out[start].position, q0, atol=1e-15)
    np.testing.assert_allclose(out[start + 250_000_000].position, 0.25 * target, atol=1e-12)
    np.testing.assert_allclose(out[start + 250_000_000].velocity, target, atol=1e-12)


def test_an_empty_trajectory_cancels_tracking(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    node = start_feedforward(context, spinner, ns)
    client = spinner.add(client_node(context, ns))
    efforts = Collector(client, JointState, "feedforward/efforts")
    js_pub = client.create_publisher(JointState, "joint_states", DATA_QOS)
    traj_pub = client.create_publisher(JointTrajectory, "joint_trajectory", DATA_QOS)
    connect(js_pub, efforts)
    wait_until(lambda: traj_pub.get_subscription_count() >= 1, "trajectory subscriber")
    times = [0.0, 5.0, 10.0]
    q, qd, qdd = RNG.normal(size=(3, 3, 6))
    start = client.get_clock().now().nanoseconds
    q_meas, qd_meas = RNG.normal(size=(2, 6))
    reference = JointTrajectorySampler(times, q, qd, qdd)

    def torque_at(stamp: int) -> np.ndarray:
        js_pub.publish(joint_state(q_meas, qd_meas, stamp))
        wait_until(lambda: stamp in by_stamp(efforts.snapshot()), "the torque")
        return np.asarray(by_stamp(efforts.snapshot())[stamp].effort)

    # an active trajectory, then a pending one (starting later), each cancelled by a message with no points
    traj_pub.publish(trajectory_msg(times, q, qd, qdd, start))
    wait_until(lambda: node.pending is not None, "the trajectory")
    d = reference.sample(1.0)
    tracking = inverse_dynamics(PUMA, d.positions, d.velocities, d.accelerations, smooth=True)
    np.testing.assert_allclose(torque_at(start + 1_000_000_000), tracking, rtol=0, atol=1e-12)
    assert node.active is not None
    traj_pub.publish(JointTrajectory())  # no joint names either: cancels
    wait_until(lambda: node.trajectories_cancelled == 1, "the cancellation")
    assert node.active is None and node.pending is None
    holding = holding_reference(q_meas, qd_meas)
    np.testing.assert_allclose(torque_at(start + 2_000_000_000), holding, rtol=0, atol=1e-12)

    traj_pub.publish(trajectory_msg(times, q, qd, qdd, start + 3_000_000_000))
    wait_until(lambda: node.pending is not None, "the second trajectory")
    traj_pub.publish(JointTrajectory(joint_names=NAMES))
    wait_until(lambda: node.trajectories_cancelled == 2, "the second cancellation")
    assert node.pending is None and node.active is None
    np.testing.assert_allclose(torque_at(start + 4_000_000_000), holding, rtol=0, atol=1e-12)
    assert node.stats.rejected == 0 and node.trajectories_accepted == 2 and node.trajectories_finished == 0


def bad_joint_states() -> list[JointState]:
    good = joint_state(np.zeros(6), np.zeros(6), 5)
    cases = []
    for mutate in (
        lambda m: setattr(m, "position", [math.nan, *m.position[1:]]),
        lambda m: setattr(m, "velocity", [*m.velocity[:-2], math.inf, 0.0]),
        lambda m: setattr(m, "position", m.position[:-1]),
        lambda m: setattr(m, "name", [*m.name[:-2], "elbow_typo", "gripper_joint"]),
        lambda m: setattr(m, "name", []),
    ):
        m = joint_state(np.zeros(6), np.zeros(6), 5)
        mutate(m)
        cases.append(m)
    assert good.position[0] == 0.0
    return cases


def bad_trajectories() -> list[JointTrajectory]:
    backwards = JointTrajectory(
        joint_names=NAMES,
        points=[
            JointTrajectoryPoint(positions=[0.0] * 6, time_from_start=Duration(sec=2)),
            JointTrajectoryPoint(positions=[0.1] * 6, time_from_start=Duration(sec=1)),
        ],
    )
    unknown = JointTrajectory(
        joint_names=[*NAMES, "extra"],
        points=[JointTrajectoryPoint(positions=[0.0] * 7, time_from_start=Duration(sec=1))],
    )
    nan = JointTrajectory(
        joint_names=NAMES, points=[JointTrajectoryPoint(positions=[math.nan] * 6, time_from_start=Duration(sec=1))]
    )
    return [backwards, unknown, nan]


def test_bad_messages_are_dropped_counted_and_never_kill_the_node(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    node = start_feedforward(context, spinner, ns)
    client = spinner.add(client_node(context, ns))
    efforts = Collector(client, JointState, "feedforward/efforts")
    diagnostics = Collector(client, DiagnosticArray, "/diagnostics")
    js_pub = client.create_publisher(JointState, "joint_states", DATA_QOS)
    traj_pub = client.create_publisher(JointTrajectory, "joint_trajectory", DATA_QOS)
    connect(js_pub, efforts)
    wait_until(lambda: traj_pub.get_subscription_count() >= 1, "trajectory subscriber")
    for _ in range(3):
        for pub, msg in [*((js_pub, m) for m in bad_joint_states()), *((traj_pub, t) for t in bad_trajectories())]:
            count = node.stats.rejected
            pub.publish(msg)  # one at a time: the node's depth-10 queue is not what is tested here
            wait_until(lambda count=count: node.stats.rejected > count, "the rejection")
    assert node.stats.rejected_by_reason == {"joint_states": 15, "trajectory": 9}
    assert node.pending is None and node.active is None
    q, qd = RNG.uniform(-1, 1, 6), np.zeros(6)
    js_pub.publish(joint_state(q, qd, 77))
    wait_until(lambda: 77 in by_stamp(efforts.snapshot()), "a torque after the bad messages")
    np.testing.assert_allclose(by_stamp(efforts.snapshot())[77].effort, holding_reference(q, qd), atol=1e-12)
    assert len(efforts.snapshot()) == 1  # nothing was published for the bad ones
    name = f"robot_dynamics: {ns}/feedforward_node"

    def status() -> dict[str, str] | None:
        for array in reversed(diagnostics.snapshot()):
            for s in array.status:
                if s.name == name and diagnostic_dict(s).get("rejected") == "24":
                    return diagnostic_dict(s)
        return None

    wait_until(status, "a diagnostics status with 24 rejections")
    values = status()
    assert values is not None
    assert values["rejected[joint_states]"] == "15" and values["rejected[trajectory]"] == "9"
    assert values["robot"] == PUMA.name and values["mode"] == "holding"
    # matched subscribers per output, as the publishing side sees them (replay's diagnostics_ready)
    assert values["subscribers[feedforward/efforts]"] == "1" and values["subscribers[feedforward/commands]"] == "0"
    assert float(values["compute_max_us"]) >= 0.0 and "rate_hz" in values


def test_robot_from_the_robot_description_topic(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    paths = list(
        Path(sys.prefix).glob(
            "lib/python3*/site-packages/cmeel.prefix/share/example-robot-data/robots/ur_description/urdf/ur5_robot.urdf"
        )
    )
    assert paths, "example-robot-data's ur5_robot.urdf"
    urdf = paths[0].read_text()
    # published before the node exists: transient local delivers it to the late joiner
    publisher_node = spinner.add(client_node(context, ns))
    publisher_node.create_publisher(String, "robot_description", ROBOT_DESCRIPTION_QOS).publish(String(data=urdf))
    node = start_feedforward(
        context, spinner, ns, use_robot_description_topic=True, tip_link="tool0", robot_config="/not/used.yaml"
    )
    wait_until(lambda: node.model is not None, "the model from the robot_description topic")
    ur5 = load_robot(urdf, tip_link="tool0")
    assert node.model is not None and node.model.joint_names == ur5.joint_names
    efforts = Collector(publisher_node, JointState, "feedforward/efforts")
    pub = publisher_node.create_publisher(JointState, "joint_states", DATA_QOS)
    connect(pub, efforts)
    q = RNG.uniform(-2, 2, 6)
    msg = JointState(name=ur5.joint_names, position=q.tolist())
    msg.header.stamp = ns_to_stamp(99)
    pub.publish(msg)
    wait_until(lambda: 99 in by_stamp(efforts.snapshot()), "the UR5 torque")
    zeros = np.zeros(6)
    np.testing.assert_allclose(
        by_stamp(efforts.snapshot())[99].effort, inverse_dynamics(ur5, q, zeros, zeros, friction=False), atol=1e-12
    )


# ------------------------------------------------------------------------------------------------
# service node
# ------------------------------------------------------------------------------------------------
@pytest.fixture
def services(context: Any, ros: tuple[Spinner, str]) -> tuple[DynamicsServiceNode, Node]:
    spinner, ns = ros
    node = DynamicsServiceNode(
        namespace=ns, context=context, parameter_overrides=[Parameter("robot_config", value="puma560")]
    )
    spinner.add(node)
    return node, spinner.add(client_node(context, ns))


def test_dynamics_coefficients_service(services: tuple[DynamicsServiceNode, Node]) -> None:
    _, client = services
    cli = client.create_client(GetDynamicsCoefficients, "get_dynamics_coefficients")
    for _ in range(3):
        q, qd = RNG.uniform(-2, 2, 6), RNG.uniform(-1, 1, 6)
        order = list(RNG.permutation(6))
        req = GetDynamicsCoefficients.Request(
            joint_names=[NAMES[i] for i in order],
            position=[float(q[i]) for i in order],
            velocity=[float(qd[i]) for i in order],
            include_coriolis_tensor=True,
            include_coriolis_matrix=True,
            include_robmat=True,
        )
        res = call(cli, req)
        assert res.success, res.message
        assert list(res.joint_names) == NAMES
        assert [(d.label, d.size, d.stride) for d in res.inertia.layout.dim] == [("rows", 6, 36), ("cols", 6, 6)]
        np.testing.assert_allclose(from_multiarray(res.inertia), inertia_matrix(PUMA, q), rtol=0, atol=1e-12)
        np.testing.assert_allclose(res.coriolis_centrifugal, coriolis_centrifugal(PUMA, q, qd), rtol=0, atol=1e-12)
        np.testing.assert_allclose(res.gravity, gravity_torques(PUMA, q), rtol=0, atol=1e-12)
        tensor = from_multiarray(res.coriolis_tensor)
        assert [d.label for d in res.coriolis_tensor.layout.dim] == ["i", "k", "m"]
        np.testing.assert_allclose(tensor, coriolis_tensor(PUMA, q), rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.einsum("ikm,k,m->i", tensor, qd, qd), res.coriolis_centrifugal, atol=1e-10)
        np.testing.assert_allclose(from_multiarray(res.coriolis_matrix), coriolis_matrix(PUMA, q, qd), atol=1e-12)
        rm = robmat_coefficients(PUMA, q)
        np.testing.assert_allclose(from_multiarray(res.robmat_b), rm.B, rtol=0, atol=1e-12)
        np.testing.assert_allclose(from_multiarray(res.robmat_c), rm.C, rtol=0, atol=1e-12)
    # extras stay empty unless asked for; velocity may be empty (= zero)
    res = call(cli, GetDynamicsCoefficients.Request(position=[0.1] * 6))
    assert res.success and len(res.coriolis_tensor.data) == 0 and len(res.robmat_b.data) == 0
    np.testing.assert_array_equal(res.coriolis_centrifugal, np.zeros(6))


def test_inverse_and_forward_dynamics_services(services: tuple[DynamicsServiceNode, Node]) -> None:
    _, client = services
    inv = client.create_client(InverseDynamics, "inverse_dynamics")
    fwd = client.create_client(ForwardDynamics, "forward_dynamics")
    q, qd, qdd = RNG.uniform(-1.5, 1.5, (3, 6))
    wrench = np.array([1.0, -2.0, 3.0, 0.1, 0.2, -0.3])
    req = InverseDynamics.Request(position=q.tolist(), velocity=qd.tolist(), acceleration=qdd.tolist())
    req.friction = InverseDynamics.Request.FRICTION_ON
    req.use_tool_wrench = True
    req.tool_wrench.force.x, req.tool_wrench.force.y, req.tool_wrench.force.z = wrench[:3]
    req.tool_wrench.torque.x, req.tool_wrench.torque.y, req.tool_wrench.torque.z = wrench[3:]
    res = call(inv, req)
    assert res.success, res.message
    b = inverse_dynamics(PUMA, q, qd, qdd, friction=True, wrench=wrench, breakdown=True, smooth=False)
    for field, ref in (
        ("effort", b.total),
        ("inertial", b.inertial),
        ("coriolis_centrifugal", b.coriolis_centrifugal),
        ("gravity", b.gravity),
        ("friction", b.friction),
        ("motor_inertia", b.motor_inertia),
        ("tool_wrench_torque", b.tool_wrench),
    ):
        np.testing.assert_allclose(getattr(res, field), ref, rtol=0, atol=1e-12, err_msg=field)
    assert np.max(np.abs(res.friction)) > 0.1 and np.max(np.abs(res.tool_wrench_torque)) > 0.1
    req_off = InverseDynamics.Request(position=q.tolist(), velocity=qd.tolist(), acceleration=qdd.tolist())
    req_off.friction = InverseDynamics.Request.FRICTION_OFF
    res_off = call(inv, req_off)
    np.testing.assert_allclose(res_off.effort, inverse_dynamics(PUMA, q, qd, qdd, friction=False), atol=1e-12)

    tau = RNG.uniform(-20, 20, 6)
    res = call(fwd, ForwardDynamics.Request(position=q.tolist(), velocity=qd.tolist(), effort=tau.tolist()))
    assert res.success, res.message
    np.testing.assert_allclose(res.acceleration, forward_dynamics(PUMA, q, qd, tau, friction=True), atol=1e-12)
    req = ForwardDynamics.Request(position=q.tolist(), velocity=qd.tolist(), effort=tau.tolist())
    req.friction = ForwardDynamics.Request.FRICTION_OFF
    acc = np.asarray(call(fwd, req).acceleration)
    np.testing.assert_allclose(acc, forward_dynamics(PUMA, q, qd, tau, friction=False), atol=1e-12)
    # the round trip closes: inverse dynamics of the accelerations gives the torques back
    np.testing.assert_allclose(inverse_dynamics(PUMA, q, qd, acc, friction=False), tau, atol=1e-9)


def test_simulate_trajectory_service(services: tuple[DynamicsServiceNode, Node]) -> None:
    _, client = services
    cli = client.create_client(SimulateTrajectory, "simulate_trajectory")
    q0 = np.array([0.0, 0.6, -0.4, 0.0, 0.3, 0.0])
    tau = gravity_torques(PUMA, q0) + np.array([0.0, 5.0, 0.0, 0.0, 0.0, 0.0])
    req = SimulateTrajectory.Request(position=q0.tolist(), duration=0.2, sample_period=0.05, effort=tau.tolist())
    req.torque_law = SimulateTrajectory.Request.TORQUE_CONSTANT
    req.friction = SimulateTrajectory.Request.FRICTION_OFF
    res = call(cli, req)
    assert res.success, res.message
    traj = res.trajectory
    assert list(traj.joint_names) == NAMES and len(traj.points) == 5
    t = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in traj.points])
    np.testing.assert_allclose(t, [0.0, 0.05, 0.1, 0.15, 0.2], atol=1e-9)
    ref = simulate(PUMA, q0, np.zeros(6), tau, 0.2, t_eval=t, friction=False)
    np.testing.assert_allclose([p.positions for p in traj.points], ref.q, atol=1e-9)
    np.testing.assert_allclose([p.velocities for p in traj.points], ref.qd, atol=1e-9)
    np.testing.assert_allclose([p.effort for p in traj.points], np.tile(tau, (5, 1)), atol=1e-12)
    assert abs(traj.points[-1].positions[1] - q0[1]) > 1e-4  # it moved

    # gravity compensation with friction: the arm stays where it is
    req = SimulateTrajectory.Request(position=q0.tolist(), duration=0.5, sample_period=0.1)
    req.torque_law = SimulateTrajectory.Request.TORQUE_GRAVITY_COMPENSATION
    res = call(cli, req)
    assert res.success, res.message
    np.testing.assert_allclose(res.trajectory.points[-1].positions, q0, atol=1e-9)

    # PD law towards a target (frictionless: PUMA's stiction would hold small PD torques)
    req = SimulateTrajectory.Request(position=q0.tolist(), duration=0.1, sample_period=0.05)
    req.torque_law = SimulateTrajectory.Request.TORQUE_PD
    req.friction = SimulateTrajectory.Request.FRICTION_OFF
    target, kp, kd = q0 + 0.1, np.full(6, 100.0), np.full(6, 10.0)
    req.target_position, req.kp, req.kd = target.tolist(), kp.tolist(), kd.tolist()
    res = call(cli, req)
    assert res.success, res.message

    def pd(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        return kp * (target - q) - kd * qd + gravity_torques(PUMA, q)

    ref = simulate(PUMA, q0, np.zeros(6), pd, 0.1, t_eval=[0.0, 0.05, 0.1], friction=False)
    np.testing.assert_allclose([p.positions for p in res.trajectory.points], ref.q, atol=1e-9)
    assert np.all(np.asarray(res.trajectory.points[-1].positions) - q0 > 0.0)

    # a torque profile, linear between its points
    profile = JointTrajectory(joint_names=NAMES)
    for sec, scale in ((0, 1.0), (1, 1.2)):
        tau_k = (gravity_torques(PUMA, q0) * scale).tolist()
        profile.points.append(JointTrajectoryPoint(effort=tau_k, time_from_start=Duration(sec=sec)))
    req = SimulateTrajectory.Request(position=q0.tolist(), duration=0.5, sample_period=0.25, effort_profile=profile)
    req.torque_law = SimulateTrajectory.Request.TORQUE_PROFILE
    req.friction = SimulateTrajectory.Request.FRICTION_OFF
    res = call(cli, req)
    assert res.success, res.message
    np.testing.assert_allclose(res.trajectory.points[1].effort, gravity_torques(PUMA, q0) * 1.05, atol=1e-12)


def test_services_reject_bad_requests_with_the_reason(services: tuple[DynamicsServiceNode, Node]) -> None:
    node, client = services
    coeff = client.create_client(GetDynamicsCoefficients, "get_dynamics_coefficients")
    inv = client.create_client(InverseDynamics, "inverse_dynamics")
    fwd = client.create_client(ForwardDynamics, "forward_dynamics")
    sim = client.create_client(SimulateTrajectory, "simulate_trajectory")
    cases = [
        (coeff, GetDynamicsCoefficients.Request(position=[0.0] * 5), "position has 5 values for 6 model joints"),
        (coeff, GetDynamicsCoefficients.Request(position=[]), "position has 0 values for 6 model joints"),
        (
            coeff,
            GetDynamicsCoefficients.Request(joint_names=[*NAMES[:5], "nope"], position=[0.0] * 6),
            "unknown joints ['nope']",
        ),
        (
            coeff,
            GetDynamicsCoefficients.Request(position=[0.0] * 5 + [math.nan]),
            "request: position: non-finite values (nan or inf) at joint 'joint6' (nan)",
        ),
        (
            coeff,
            GetDynamicsCoefficients.Request(position=[0.0] * 6, velocity=[1.0] * 3),
            "velocity has 3 values for 6 model joints",
        ),
        (inv, InverseDynamics.Request(position=[0.0] * 6, friction=7), "friction must be 0 (node default), 1 (on)"),
        (
            inv,
            InverseDynamics.Request(position=[0.0] * 6, acceleration=[math.inf] * 6),
            "acceleration: non-finite values (nan or inf) at joint 'joint1' (inf)",
        ),
        (fwd, ForwardDynamics.Request(position=[0.0] * 6, effort=[1.0] * 7), "effort has 7 values"),
        (sim, SimulateTrajectory.Request(position=[0.0] * 6, duration=0.0, sample_period=0.1), "duration must be > 0"),
        (sim, SimulateTrajectory.Request(position=[0.0] * 6, duration=1.0, sample_period=0.0), "sample_period must"),
        (
            sim,
            SimulateTrajectory.Request(position=[0.0] * 6, duration=100.0, sample_period=1e-5),
            "exceed max_simulation_samples",
        ),
        (
            sim,
            SimulateTrajectory.Request(position=[0.0] * 6, duration=1.0, sample_period=0.1, torque_law=9),
            "torque_law must be",
        ),
        (
            sim,
            SimulateTrajectory.Request(position=[0.0] * 6, duration=1.0, sample_period=0.1, effort=[1.0]),
            "effort has 1 values",
        ),
        (
            sim,
            SimulateTrajectory.Request(position=[0.0] * 6, duration=1.0, sample_period=0.1, torque_law=1),
            "effort_profile has no points",
        ),
    ]
    for client_, request, message in cases:
        res = call(client_, request)
        assert not res.success, message
        assert message in res.message, (message, res.message)
    assert node.stats.rejected == len(cases)
    # still serving
    res = call(coeff, GetDynamicsCoefficients.Request(position=[0.0] * 6))
    assert res.success


# ------------------------------------------------------------------------------------------------
# simulator
# ------------------------------------------------------------------------------------------------
def test_simulator_holds_its_pose_under_feedforward_compensation(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    start_pose = [0.0, 0.8, -1.0, 0.2, 0.6, -0.3]
    sim = SimulatorNode(
        namespace=ns,
        context=context,
        cli_args=["--ros-args", "-r", "commands:=feedforward/commands"],
        parameter_overrides=[
            Parameter("robot_config", value="puma560"),
            Parameter("initial_position", value=start_pose),
            Parameter("rate", value=200.0),
        ],
    )
    spinner.add(sim)
    start_feedforward(context, spinner, ns)
    client = spinner.add(client_node(context, ns))
    states = Collector(client, JointState, "joint_states")
    wait_until(lambda: sim.steps >= 20, "the loop to close (20 simulator steps)")
    q_start = sim.q.copy()
    t_start = time.monotonic()
    wait_until(lambda: time.monotonic() - t_start >= 5.0 and sim.steps >= 200, "5 s of closed loop", timeout=60)
    drift = float(np.max(np.abs(sim.q - np.asarray(start_pose))))
    print(f"closed loop: {sim.steps} steps, {time.monotonic() - t_start:.1f} s, drift {drift:.2e} rad")
    assert sim.step_errors == 0, sim.stats.rejected_by_reason
    assert drift < 1e-3, (drift, sim.q.tolist(), sim.tau.tolist())
    assert float(np.max(np.abs(sim.q - q_start))) < 1e-3
    # joint_states carry names, positions, velocities and the applied effort c(q) (+ friction at rest = 0)
    msg = states.snapshot()[-1]
    assert list(msg.name) == NAMES
    np.testing.assert_allclose(msg.effort, gravity_torques(PUMA, np.asarray(msg.position)), atol=1e-6)

    # reset to another pose via the service; the loop holds there too
    reset = client.create_client(ResetSimulation, "reset_simulation")
    new_pose = [0.3, 0.2, -0.5, 0.0, 0.1, 0.0]
    res = call(reset, ResetSimulation.Request(joint_names=NAMES, position=new_pose))
    assert res.success, res.message
    steps = sim.steps
    wait_until(lambda: sim.steps >= steps + 100, "100 more steps")
    drift = float(np.max(np.abs(sim.q - np.asarray(new_pose))))
    assert drift < 1e-3, (drift, sim.q.tolist(), sim.tau.tolist())
    bad = call(reset, ResetSimulation.Request(joint_names=["x"], position=[0.0]))
    assert not bad.success and "missing joints" in bad.message


def test_simulator_falls_without_compensation_and_rejects_bad_commands(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    sim = SimulatorNode(
        namespace=ns,
        context=context,
        parameter_overrides=[
            Parameter("robot_config", value="puma560"),
            Parameter("initial_position", value=[0.0, 0.8, -1.0, 0.0, 0.0, 0.0]),
            Parameter("friction", value=False),
        ],
    )
    spinner.add(sim)
    client = spinner.add(client_node(context, ns))
    array_pub = client.create_publisher(Float64MultiArray, "commands", DATA_QOS)
    js_pub = client.create_publisher(JointState, "joint_commands", DATA_QOS)
    wait_until(lambda: array_pub.get_subscription_count() >= 1 and js_pub.get_subscription_count() >= 1, "sim inputs")
    for bad in ([0.0] * 5, [math.nan] * 6):
        array_pub.publish(Float64MultiArray(data=bad))
    js_pub.publish(JointState(name=NAMES[:5], effort=[0.0] * 5))
    js_pub.publish(JointState(name=NAMES, effort=[0.0] * 5))
    wait_until(lambda: sim.stats.rejected >= 4, "4 rejected commands")
    assert sim.steps == 0 and not sim.commanded  # waits for a valid command
    js_pub.publish(JointState(name=[*reversed(NAMES), "extra"], effort=[0.0] * 7))  # zero torque, by name
    wait_until(lambda: sim.steps >= 40, "40 steps")
    assert sim.q[1] - 0.8 < -1e-3 or abs(sim.q[2] + 1.0) > 1e-3  # it falls under gravity
