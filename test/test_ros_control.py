"""The feed-forward node's control law over real DDS: laws, run-time gains, clamping, stale state, sim time.

Each test runs a ``FeedforwardNode`` on an executor thread in a namespace of its own and talks to it
through a client node (joint states and trajectories in, ``feedforward/*`` and ``/diagnostics`` out,
parameters through the parameter services), as a controller would. References: the ROS-free law
(:mod:`robot_dynamics.control`, itself checked against Pinocchio in ``test_control.py``) and the
feed-forward law the node ran before the control law existed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.parameter_client import AsyncParameterClient  # noqa: E402
from ros_harness import Collector, Spinner, client_node, private_context, spinner_in_namespace, wait_until  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from test_ros_live import by_stamp, connect, joint_state, send_parameters, start_feedforward, trajectory_msg  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from robot_dynamics.control import ControlLaw, ControlSettings  # noqa: E402
from robot_dynamics.feedforward import FeedforwardLaw  # noqa: E402
from robot_dynamics.models import load_robot  # noqa: E402
from robot_dynamics.ros.messages import DATA_QOS, diagnostic_dict, ns_to_stamp, stamp_to_ns  # noqa: E402
from robot_dynamics.trajectory import JointTrajectorySampler, TrajectorySample  # noqa: E402

pytestmark = pytest.mark.ros

PUMA = load_robot("puma560")
RNG = np.random.default_rng(1818)
ZEROS = np.zeros(6)


@pytest.fixture(scope="module")
def context() -> Iterator[Any]:
    yield from private_context()


@pytest.fixture
def ros(context: Any) -> Iterator[tuple[Spinner, str]]:
    yield from spinner_in_namespace(context, "c")


def refused(client: Any, node_name: str, **values: Any) -> str:
    """Set one parameter; it must be refused: the reason."""
    params = AsyncParameterClient(client, node_name)
    wait_until(params.services_are_ready, f"parameter services of {node_name}")
    future = params.set_parameters([Parameter(k, value=v) for k, v in values.items()])
    wait_until(future.done, "set_parameters")
    (result,) = future.result().results
    assert not result.successful
    return str(result.reason)


class Talk:
    """A client publishing joint states and trajectories and collecting the node's outputs."""

    def __init__(self, context: Any, spinner: Spinner, ns: str) -> None:
        self.client = spinner.add(client_node(context, ns))
        self.efforts = Collector(self.client, JointState, "feedforward/efforts")
        self.commands = Collector(self.client, Float64MultiArray, "feedforward/commands")
        self.js = self.client.create_publisher(JointState, "joint_states", DATA_QOS)
        self.traj = self.client.create_publisher(JointTrajectory, "joint_trajectory", DATA_QOS)
        connect(self.js, self.efforts, self.commands)
        wait_until(lambda: self.traj.get_subscription_count() >= 1, "trajectory subscriber")

    def torque(self, q: np.ndarray, qd: np.ndarray, stamp: int) -> JointState:
        self.js.publish(joint_state(q, qd, stamp))
        wait_until(lambda: stamp in by_stamp(self.efforts.snapshot()), f"the torque at {stamp}")
        return by_stamp(self.efforts.snapshot())[stamp]


def test_pd_and_computed_torque_over_dds_and_zero_gains_are_todays_torques(
    context: Any, ros: tuple[Spinner, str]
) -> None:
    spinner, ns = ros
    node = start_feedforward(context, spinner, ns, control_law="pd_feedforward")  # gains unset: zero
    talk = Talk(context, spinner, ns)
    ff, law = FeedforwardLaw(PUMA), ControlLaw(PUMA)
    times = [0.0, 0.5, 1.0]
    q_pts, qd_pts, qdd_pts = RNG.normal(size=(3, 3, 6))
    reference = JointTrajectorySampler(times, q_pts, qd_pts, qdd_pts)
    start = talk.client.get_clock().now().nanoseconds + 10**9

    def run(offset: int) -> list[tuple[int, np.ndarray, np.ndarray, JointState]]:
        """A trajectory starting at start + offset: two states before it, three during, one after."""
        talk.traj.publish(trajectory_msg(times, q_pts, qd_pts, qdd_pts, start + offset))
        wait_until(lambda: node.pending is not None, "the trajectory")
        out = []
        for t in (-0.4, -0.2, 0.1, 0.55, 0.9, 1.3):
            q, qd = RNG.uniform(-1, 1, (2, 6))
            stamp = start + offset + round(t * 1e9)
            out.append((stamp, q, qd, talk.torque(q, qd, stamp)))
        return out

    # zero gains: today's feed-forward while tracking, to the bit; holding: gravity, the friction compensated at
    # the hold's desired velocity (zero), not at the measured one
    for stamp, q, _qd, msg in run(0):
        t = (stamp - start) * 1e-9
        if 0.0 <= t <= 1.0:
            d = reference.sample(t)
            np.testing.assert_array_equal(
                msg.effort, ff.tracking(d.positions, d.velocities, d.accelerations, True, True)
            )
        else:
            np.testing.assert_array_equal(msg.effort, ff.holding(q, ZEROS, True, True))
    # gains at run time, as a ROS user writes them: integers, one per joint
    kp, kd = [400, 300, 200, 50, 50, 20], [40, 30, 20, 5, 5, 2]
    send_parameters(talk.client, f"{ns}/feedforward_node", kp=kp, kd=kd)
    s = ControlSettings(law="pd_feedforward", kp=np.array(kp, float), kd=np.array(kd, float))
    for stamp, q, qd, msg in run(2 * 10**9):
        t = (stamp - start - 2 * 10**9) * 1e-9
        tracking = 0.0 <= t <= 1.0
        # at rest: the hold began when the first trajectory finished, at its last point
        d = reference.sample(t) if tracking else TrajectorySample(q_pts[-1], ZEROS, ZEROS)
        expected = law.torque(q, qd, d, tracking, s)
        pd = s.kp * (d.positions - q) + s.kd * (d.velocities - qd)  # by hand, around today's torque
        today = (
            ff.tracking(d.positions, d.velocities, d.accelerations, True, True)
            if tracking
            else ff.holding(q, ZEROS, True, True)
        )
        np.testing.assert_allclose(msg.effort, expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(msg.effort, today + pd, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(msg.position, d.positions)  # the desired state the law used
    # computed torque at run time
    send_parameters(talk.client, f"{ns}/feedforward_node", control_law="computed_torque")
    q, qd = RNG.uniform(-1, 1, (2, 6))
    msg = talk.torque(q, qd, start + 5 * 10**9)
    s = ControlSettings(law="computed_torque", kp=np.array(kp, float), kd=np.array(kd, float))
    goal = TrajectorySample(q_pts[-1], ZEROS, ZEROS)  # a new law: the hold begins at the measured position
    np.testing.assert_allclose(msg.effort, law.torque(q, qd, TrajectorySample(q, ZEROS, ZEROS), False, s), atol=1e-12)
    assert not np.allclose(msg.effort, law.torque(q, qd, goal, False, s))


def test_delays_over_dds_and_bad_values_refused(context: Any, ros: tuple[Spinner, str]) -> None:
    """``measurement_delay``/``command_delay`` at run time: the published desired state is the one of the
    measurement's time, the torque the law with both references; negative or non-numbers refused."""
    spinner, ns = ros
    kp, kd = [400.0, 300.0, 200.0, 50.0, 50.0, 20.0], [40.0, 30.0, 20.0, 5.0, 5.0, 2.0]
    node = start_feedforward(context, spinner, ns, control_law="pd_feedforward", kp=kp, kd=kd)
    talk = Talk(context, spinner, ns)
    send_parameters(talk.client, f"{ns}/feedforward_node", measurement_delay=0.002, command_delay=0.003)
    times = [0.0, 0.5, 1.0]
    q_pts, qd_pts, qdd_pts = RNG.normal(size=(3, 3, 6))
    reference = JointTrajectorySampler(times, q_pts, qd_pts, qdd_pts)
    start = talk.client.get_clock().now().nanoseconds + 10**9
    talk.traj.publish(trajectory_msg(times, q_pts, qd_pts, qdd_pts, start))
    wait_until(lambda: node.pending is not None, "the trajectory")
    law = ControlLaw(PUMA)
    s = ControlSettings(law="pd_feedforward", kp=np.array(kp), kd=np.array(kd))
    for t in (0.1, 0.55):
        q, qd = RNG.uniform(-1, 1, (2, 6))
        msg = talk.torque(q, qd, start + round(t * 1e9))
        behind, ahead = reference.sample(t - 0.002), reference.sample(t + 0.003)
        np.testing.assert_allclose(msg.position, behind.positions, rtol=0, atol=1e-12)
        np.testing.assert_allclose(msg.effort, law.torque(q, qd, ahead, True, s, behind), rtol=0, atol=1e-9)
    name = f"{ns}/feedforward_node"
    assert "measurement_delay" in refused(talk.client, name, measurement_delay=-0.001)
    assert "Wrong parameter type" in refused(talk.client, name, command_delay="soon")  # rclpy: a double
    assert node.control.settings.measurement_delay == 0.002 and node.control.settings.command_delay == 0.003


def test_the_trajectory_source_and_pd_over_dds(context: Any, ros: tuple[Spinner, str]) -> None:
    """``feedforward_source: trajectory``: tau = the trajectory's efforts (linear between its points) + PD;
    a trajectory without efforts is refused with the reason and the node keeps what it had; ``pd`` at
    run time: the PD terms alone."""
    spinner, ns = ros
    kp, kd = np.array([300.0, 200.0, 100.0, 20.0, 20.0, 10.0]), np.array([30.0, 20.0, 10.0, 2.0, 2.0, 1.0])
    node = start_feedforward(
        context,
        spinner,
        ns,
        control_law="pd_feedforward",
        feedforward_source="trajectory",
        kp=kp.tolist(),
        kd=kd.tolist(),
    )
    talk = Talk(context, spinner, ns)
    times = [0.0, 0.5, 1.0]
    q_pts, qd_pts, qdd_pts = RNG.normal(size=(3, 3, 6))
    tau_pts = RNG.uniform(-40.0, 40.0, (3, 6))
    start = talk.client.get_clock().now().nanoseconds + 10**9
    msg = trajectory_msg(times, q_pts, qd_pts, qdd_pts, start)
    order = [PUMA.joint_names.index(name) for name in msg.joint_names]
    for point, efforts in zip(msg.points, tau_pts, strict=True):
        point.effort = [float(efforts[i]) for i in order]
    talk.traj.publish(msg)
    wait_until(lambda: node.pending is not None, "the trajectory")
    without = trajectory_msg(times, q_pts, qd_pts, qdd_pts, start + 10**9)
    talk.traj.publish(without)  # refused: the node keeps the first one
    wait_until(lambda: node.stats.rejected_by_reason.get("trajectory", 0) >= 1, "the refusal")
    assert node.pending is not None and node.pending[1] == start
    for t in (0.0, 0.3, 0.75, 1.0):
        q, qd = RNG.uniform(-1, 1, (2, 6))
        out = talk.torque(q, qd, start + round(t * 1e9))
        d = JointTrajectorySampler(times, q_pts, qd_pts, qdd_pts).sample(t)
        planned = np.array([np.interp(t, times, tau_pts[:, j]) for j in range(6)])
        np.testing.assert_allclose(out.effort, planned + kp * (d.positions - q) + kd * (d.velocities - qd), atol=1e-9)
    send_parameters(talk.client, f"{ns}/feedforward_node", control_law="pd")
    q, qd = RNG.uniform(-1, 1, (2, 6))
    out = talk.torque(q, qd, start + round(1.5e9))  # holding at the trajectory's goal
    np.testing.assert_allclose(out.effort, kp * (q_pts[-1] - q) - kd * qd, atol=1e-12)


def test_bad_gains_and_settings_are_refused_with_the_reason(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    node = start_feedforward(context, spinner, ns, control_law="pd_feedforward", kp=25.0)  # one number: every joint
    talk = Talk(context, spinner, ns)
    name = f"{ns}/feedforward_node"
    np.testing.assert_array_equal(node.control.settings.kp, np.full(6, 25.0))
    reasons = {
        "nan": refused(talk.client, name, kp=[1.0, math.nan, 1.0, 1.0, 1.0, 1.0]),
        "negative": refused(talk.client, name, kd=[1.0, 1.0, 1.0, 1.0, 1.0, -3.0]),
        "length": refused(talk.client, name, kp=[1.0, 2.0, 3.0]),
        "text": refused(talk.client, name, kd="stiff"),
        "law": refused(talk.client, name, control_law="impedance"),
        "timeout": refused(talk.client, name, state_timeout=-1.0),
        "action": refused(talk.client, name, stale_action="brake"),
        "source": refused(talk.client, name, feedforward_source="planner"),
    }
    assert reasons["nan"] == "kp: gain 1 is not finite (nan)"
    assert reasons["negative"] == "kd: gain 5 is negative (-3); gains must be >= 0"
    assert reasons["length"] == "kp: expected 6 gains (one per joint, model joint order) or one for all, got 3"
    assert reasons["text"] == "kd: expected numbers (one per joint), got 'stiff'"
    assert "expected one of ['feedforward', 'pd', 'pd_feedforward', 'computed_torque']" in reasons["law"]
    assert reasons["timeout"] == "state_timeout: expected seconds >= 0 (0 = never stale), got -1.0"
    assert "expected one of ['zero', 'hold']" in reasons["action"]
    assert "expected one of ['model', 'trajectory']" in reasons["source"]
    # the node kept its settings and keeps running
    s = node.control.settings
    assert s.law == "pd_feedforward" and s.state_timeout == 0.0 and s.stale_action == "zero"
    np.testing.assert_array_equal(s.kp, np.full(6, 25.0))
    np.testing.assert_array_equal(s.kd, ZEROS)
    q = RNG.uniform(-1, 1, 6)
    talk.torque(q, ZEROS, 10)
    msg = talk.torque(q + 0.1, ZEROS, 20)  # PD towards the first state's position
    expected = ControlLaw(PUMA).torque(q + 0.1, ZEROS, TrajectorySample(q, ZEROS, ZEROS), False, s)
    np.testing.assert_allclose(msg.effort, expected, atol=1e-12)


def limited_puma(tmp: Path, effort: float) -> Path:
    """The bundled PUMA 560 with an effort limit on every joint."""
    text = (Path(__file__).resolve().parents[1] / "config" / "robots" / "puma560.yaml").read_text()
    lines = [line.replace("}", f", effort: {effort}}}") if "limits:" in line else line for line in text.splitlines()]
    path = tmp / "puma560_limited.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def diagnostics_of(diagnostics: Collector, ns: str, when: Any) -> dict[str, str] | None:
    for array in reversed(diagnostics.snapshot()):
        for s in array.status:
            if s.name == f"robot_dynamics: {ns}/feedforward_node" and when(s, diagnostic_dict(s)):
                return diagnostic_dict(s)
    return None


def test_clamping_to_the_effort_limits_is_counted(context: Any, ros: tuple[Spinner, str], tmp_path: Path) -> None:
    spinner, ns = ros
    path = limited_puma(tmp_path, 30.0)
    node = start_feedforward(
        context, spinner, ns, robot_config=str(path), control_law="pd_feedforward", kp=[500.0] * 6, limit_efforts=True
    )
    talk = Talk(context, spinner, ns)
    diagnostics = Collector(talk.client, DiagnosticArray, "/diagnostics")
    q0 = PUMA.named_poses["qn"]
    talk.torque(q0, ZEROS, 10)  # the hold begins here
    offset = np.array([0.2, 0.0, 0.0, 0.01, 0.0, 0.0])  # joint1 far (100 N m of PD), joint4 near (5 N m)
    msg = talk.torque(q0 - offset, ZEROS, 20)
    s = node.control.settings
    unclamped = ControlLaw(PUMA).torque(q0 - offset, ZEROS, TrajectorySample(q0, ZEROS, ZEROS), False, s)
    over = np.abs(unclamped) > 30.0
    assert over[0] and not over[3]
    np.testing.assert_allclose(msg.effort, np.clip(unclamped, -30.0, 30.0), atol=1e-12)
    at_rest = ControlLaw(PUMA).torque(q0, ZEROS, TrajectorySample(q0, ZEROS, ZEROS), False, s)  # c(q0)
    expected = (np.abs(at_rest) > 30.0).astype(int) + over  # clamps per joint over the two states
    counters = node.control.controller.counters
    np.testing.assert_array_equal(counters.clamped_joints, expected)
    assert counters.clamped_commands == 2 and counters.commands == 2
    values = wait_for(lambda: diagnostics_of(diagnostics, ns, lambda _s, v: v.get("clamped_commands") == "2"))
    assert {k: v for k, v in values.items() if k.startswith("clamped[")} == {
        f"clamped[{name}]": str(k) for name, k in zip(PUMA.joint_names, expected, strict=True) if k
    }
    assert values["control_law"] == "pd_feedforward" and values["kp"] == "500,500,500,500,500,500"
    # off at run time: the law's torque unclamped
    send_parameters(talk.client, f"{ns}/feedforward_node", limit_efforts=False)
    np.testing.assert_allclose(talk.torque(q0 - offset, ZEROS, 30).effort, unclamped, atol=1e-12)


def wait_for(get: Any, what: str = "diagnostics") -> Any:
    found: list[Any] = []
    wait_until(lambda: found.append(get()) or found[-1] is not None, what)
    return found[-1]


def test_a_stale_state_stops_the_command_zero_or_hold_and_is_counted(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    node = start_feedforward(context, spinner, ns, control_law="pd_feedforward", kp=100.0, state_timeout=0.3)
    talk = Talk(context, spinner, ns)
    diagnostics = Collector(talk.client, DiagnosticArray, "/diagnostics")
    q = RNG.uniform(-1, 1, 6)
    first = talk.torque(q, ZEROS, 1_000)
    assert np.abs(first.effort).max() > 1.0
    count = len(talk.commands.snapshot())
    wait_until(lambda: len(talk.commands.snapshot()) > count, "the stop command")
    stop = talk.commands.snapshot()[count]
    np.testing.assert_array_equal(stop.data, ZEROS)
    controller = node.control.controller
    assert controller.stale and controller.counters.stale_events == 1
    values = wait_for(lambda: diagnostics_of(diagnostics, ns, lambda s, _v: s.level == DiagnosticStatus.WARN))
    assert values["joint_states"] == "stale" and values["stale_events"] == "1"
    # hold: gravity at the last measured position, at rest (no feedback on a stale measurement)
    send_parameters(talk.client, f"{ns}/feedforward_node", stale_action="hold")
    hold = FeedforwardLaw(PUMA).holding(q, ZEROS, True, True)
    wait_until(lambda: np.allclose(talk.commands.snapshot()[-1].data, hold, atol=1e-12), "the hold command")
    # fresh again: the law; stale again: a second episode
    q2 = q + 0.05
    np.testing.assert_allclose(
        talk.torque(q2, ZEROS, 2_000).effort, FeedforwardLaw(PUMA).holding(q2, ZEROS, True, True), atol=1e-12
    )  # a new hold begins at the fresh state: no PD error
    wait_until(lambda: controller.counters.stale_events == 2, "a second stale episode")
    assert controller.counters.stale_commands >= 2


def test_times_come_from_the_ros_clock_under_use_sim_time(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    node = start_feedforward(context, spinner, ns, use_sim_time=True, state_timeout=0.5)
    talk = Talk(context, spinner, ns)
    clock = talk.client.create_publisher(Clock, "/clock", 10)
    wait_until(lambda: clock.get_subscription_count() >= 1, "the node's /clock subscription")
    rejected = node.stats.rejected
    talk.js.publish(joint_state(ZEROS, ZEROS, 0))  # no /clock yet: a zero stamp has no time
    wait_until(lambda: node.stats.rejected > rejected, "the rejection")
    assert node.stats.rejected_by_reason == {"joint_states": 1}

    def tick(ns_time: int) -> None:
        clock.publish(Clock(clock=ns_to_stamp(ns_time)))
        wait_until(lambda: node.get_clock().now().nanoseconds == ns_time, f"sim time {ns_time}")

    tick(100 * 10**9)
    talk.js.publish(joint_state(ZEROS, ZEROS, 0))  # zero stamp: the node's (simulated) clock
    wait_until(lambda: 100 * 10**9 in by_stamp(talk.efforts.snapshot()), "a torque stamped with sim time")
    msg = JointTrajectory(joint_names=PUMA.joint_names)  # zero stamp: starts at the sim time of receipt
    msg.points = trajectory_msg([0.0, 1.0], np.zeros((2, 6)), np.zeros((2, 6)), np.zeros((2, 6)), 0).points
    talk.traj.publish(msg)
    wait_until(lambda: node.pending is not None, "the trajectory")
    assert node.pending is not None and node.pending[1] == 100 * 10**9
    # wall time passes, simulated time does not: the state is not stale
    count = len(talk.efforts.snapshot())
    time.sleep(0.7)
    assert not node.control.controller.stale and len(talk.efforts.snapshot()) == count
    tick(100 * 10**9 + 600_000_000)  # simulated time passes the timeout: the stop command, stamped in sim time
    wait_until(lambda: len(talk.efforts.snapshot()) > count, "the stop command")
    stop = talk.efforts.snapshot()[count]
    assert stamp_to_ns(stop.header.stamp) == 100 * 10**9 + 600_000_000 and not np.any(stop.effort)
    assert node.control.controller.counters.stale_events == 1
