"""The set_payload service over real DDS: the feed-forward, dynamics service and simulator nodes.

After a payload is set, the node's torques / D, h, c are the engine's on ``with_payload(model, ...)``
(1e-12), first on the Python backend and again once the native library of the loaded model is built in
the background; a bad request is refused (model unchanged); mass 0 restores the original model.
"""

from __future__ import annotations

import itertools
import math
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from builtin_interfaces.msg import Duration  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import Inertia, Vector3  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from ros_harness import (  # noqa: E402
    Collector,
    NodeProcess,
    Spinner,
    call,
    client_node,
    private_context,
    spinner_in_namespace,
    wait_until,
)
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from robot_dynamics.dynamics import (  # noqa: E402
    coriolis_centrifugal,
    forward_dynamics,
    gravity_torques,
    inertia_matrix,
    inverse_dynamics,
)
from robot_dynamics.errors import ModelError  # noqa: E402
from robot_dynamics.friction import friction_torques  # noqa: E402
from robot_dynamics.model import RobotModel, axis_angle_matrix  # noqa: E402
from robot_dynamics.models import load_robot  # noqa: E402
from robot_dynamics.payload import payload_of, with_payload  # noqa: E402
from robot_dynamics.ros.feedforward_node import FeedforwardNode  # noqa: E402
from robot_dynamics.ros.messages import DATA_QOS, diagnostic_dict, from_multiarray, ns_to_stamp, stamp_to_ns  # noqa: E402
from robot_dynamics.ros.payload_service import payload_from_msg  # noqa: E402
from robot_dynamics.ros.service_node import DynamicsServiceNode  # noqa: E402
from robot_dynamics.ros.simulator_node import SimulatorNode  # noqa: E402
from robot_dynamics_interfaces.srv import GetDynamicsCoefficients, InverseDynamics, SetPayload  # noqa: E402

pytestmark = pytest.mark.ros

PUMA = load_robot("puma560")
NAMES = PUMA.joint_names
RNG = np.random.default_rng(77)
# a tool frame off the flange, so the payload's frame matters: 12 cm out, turned
TOOL = np.eye(4)
TOOL[:3, :3] = axis_angle_matrix(np.array([0.0, 0.6, 0.8]), 0.9)
TOOL[:3, 3] = (0.02, -0.01, 0.12)
MASS, COM = 2.5, np.array([0.03, -0.02, 0.08])
INERTIA = np.array([[0.012, 0.001, -0.002], [0.001, 0.015, 0.0005], [-0.002, 0.0005, 0.009]])


@pytest.fixture(scope="module")
def context() -> Iterator[Any]:
    yield from private_context()


@pytest.fixture
def ros(context: Any) -> Iterator[tuple[Spinner, str]]:
    yield from spinner_in_namespace(context, "p")


def inertia_msg(mass: float, com: np.ndarray, inertia: np.ndarray) -> Inertia:
    return Inertia(
        m=float(mass),
        com=Vector3(x=float(com[0]), y=float(com[1]), z=float(com[2])),
        ixx=float(inertia[0, 0]),
        ixy=float(inertia[0, 1]),
        ixz=float(inertia[0, 2]),
        iyy=float(inertia[1, 1]),
        iyz=float(inertia[1, 2]),
        izz=float(inertia[2, 2]),
    )


def robot_urdf() -> str:
    """The PUMA as URDF text with the tool frame above (the node loads it as robot_description)."""
    from robot_dynamics.models import model_to_urdf

    return model_to_urdf(PUMA.with_changes(tool=TOOL))


def holding(model: RobotModel, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    z = np.zeros_like(q)
    return inverse_dynamics(model, q, z, z, friction=False) + friction_torques(model, qd, smooth=True)


BAD_REQUESTS = [
    (inertia_msg(math.nan, COM, INERTIA), "mass: must be a finite number"),
    (inertia_msg(-1.0, COM, INERTIA), "negative mass"),
    (inertia_msg(1.0, np.array([0.0, math.inf, 0.0]), INERTIA), "com: must be finite"),
    (inertia_msg(1.0, COM, np.diag([0.1, 0.1, -0.01])), "not positive semi-definite"),
    (inertia_msg(1.0, COM, np.diag([0.01, 0.01, 0.1])), "triangle inequality"),
    (inertia_msg(0.0, COM, INERTIA), "mass 0 clears the payload"),
]


# ------------------------------------------------------------------------------------------------
# feed-forward node
# ------------------------------------------------------------------------------------------------
def test_set_payload_changes_the_feedforward_torques_and_clearing_restores_them(
    context: Any, ros: tuple[Spinner, str]
) -> None:
    spinner, ns = ros
    overrides = [Parameter("robot_description", value=robot_urdf()), Parameter("diagnostics_period", value=0.2)]
    overrides.append(Parameter("backend", value="native"))  # the tests run the Python backend by default (conftest)
    node = spinner.add(FeedforwardNode(namespace=ns, context=context, parameter_overrides=overrides))
    assert isinstance(node, FeedforwardNode) and node.model is not None
    model = node.model
    assert np.allclose(model.tool, TOOL)
    client = spinner.add(client_node(context, ns, "payload_client_"))
    efforts = Collector(client, JointState, "feedforward/efforts")
    diagnostics = Collector(client, DiagnosticArray, "/diagnostics")
    pub = client.create_publisher(JointState, "joint_states", DATA_QOS)
    set_payload = client.create_client(SetPayload, "feedforward_node/set_payload")
    wait_until(lambda: pub.get_subscription_count() >= 1, "the node's joint_states subscription")
    wait_until(lambda: efforts.subscription.get_publisher_count() >= 1, "the node's efforts publisher")
    stamps = itertools.count(1_000_000)

    def worst_error(reference: RobotModel, count: int = 8) -> float:
        """Publish ``count`` random states; the largest |torque - engine on reference|."""
        worst = 0.0
        for _ in range(count):
            q, qd = RNG.uniform(-math.pi, math.pi, 6), RNG.uniform(-1.0, 1.0, 6)
            stamp = next(stamps)
            msg = JointState(name=NAMES, position=q.tolist(), velocity=qd.tolist())
            msg.header.stamp = ns_to_stamp(stamp)
            pub.publish(msg)
            wait_until(lambda stamp=stamp: any(stamp_to_ns(m.header.stamp) == stamp for m in efforts.snapshot()), "tau")
            tau = next(np.asarray(m.effort) for m in efforts.snapshot() if stamp_to_ns(m.header.stamp) == stamp)
            worst = max(worst, float(np.max(np.abs(tau - holding(reference, q, qd)))))
        return worst

    assert worst_error(model) <= 1e-12
    loaded = with_payload(model, MASS, COM, INERTIA)
    assert worst_error(loaded, 2) > 0.1  # the payload is felt: several N m at the shoulder

    res = call(set_payload, SetPayload.Request(payload=inertia_msg(MASS, COM, INERTIA)))
    assert res.success, res.message
    assert "payload set: 2.5 kg" in res.message, res.message
    assert node.model is not model and payload_of(node.model).mass == MASS
    python_phase = worst_error(loaded)  # right away: Python backend while the native library builds
    assert node.payload_switch.wait_settled(120.0), "the loaded model's native library was not built"
    assert node.payload_switch.backend == "native", node.payload_switch.backend
    native_phase = worst_error(loaded)
    print(
        f"feed-forward after set_payload: python phase {python_phase:.2e}, native phase {native_phase:.2e}; "
        f"swap {node.payload_switch.swap_seconds * 1e3:.1f} ms, native after {node.payload_switch.native_seconds:.2f} s"
    )
    assert python_phase <= 1e-12 and native_phase <= 1e-12

    for request, words in BAD_REQUESTS:  # refused, torques unchanged
        res = call(set_payload, SetPayload.Request(payload=request))
        assert not res.success and words in res.message, res.message
        assert "set_payload request: payload:" in res.message, res.message
    assert worst_error(loaded, 3) <= 1e-12
    assert node.stats.rejected_by_reason.get("set_payload") == len(BAD_REQUESTS)

    name = f"robot_dynamics: {ns}/feedforward_node"

    def status() -> dict[str, str] | None:
        for array in reversed(diagnostics.snapshot()):
            for s in array.status:
                values = diagnostic_dict(s)
                if s.name == name and values.get("payload", "none") != "none" and values["payload_backend"] == "native":
                    return values
        return None

    wait_until(status, "diagnostics with the payload, running natively")
    values = status()
    assert values is not None and values["payload"].startswith("2.5 kg at (0.03, -0.02, 0.08) m"), values
    assert float(values["payload_native_s"]) > 0.0 and values["payload_requests_accepted"] == "1"

    res = call(set_payload, SetPayload.Request(payload=Inertia()))  # all zero: clear
    assert res.success and "payload cleared" in res.message, res.message
    assert node.model is model  # the original model object, its native library prepared at start
    assert node.payload_switch.backend == "native"
    assert worst_error(model) <= 1e-12


# ------------------------------------------------------------------------------------------------
# dynamics service node
# ------------------------------------------------------------------------------------------------
def test_set_payload_changes_the_services_d_h_c(context: Any, ros: tuple[Spinner, str]) -> None:
    spinner, ns = ros
    node = DynamicsServiceNode(
        namespace=ns,
        context=context,
        parameter_overrides=[Parameter("robot_config", value="puma560"), Parameter("backend", value="native")],
    )
    spinner.add(node)
    client = spinner.add(client_node(context, ns, "payload_client_"))
    coefficients = client.create_client(GetDynamicsCoefficients, "get_dynamics_coefficients")
    inverse = client.create_client(InverseDynamics, "inverse_dynamics")
    set_payload = client.create_client(SetPayload, "dynamics_service_node/set_payload")
    assert node.model is not None
    model = node.model

    def worst_error(reference: RobotModel) -> float:
        worst = 0.0
        for _ in range(3):
            q, qd, qdd = RNG.uniform(-2.0, 2.0, (3, 6))
            res = call(coefficients, GetDynamicsCoefficients.Request(position=q.tolist(), velocity=qd.tolist()))
            assert res.success, res.message
            inv = call(
                inverse,
                InverseDynamics.Request(
                    position=q.tolist(), velocity=qd.tolist(), acceleration=qdd.tolist(), friction=2
                ),
            )
            assert inv.success, inv.message
            worst = max(
                worst,
                float(np.max(np.abs(from_multiarray(res.inertia) - inertia_matrix(reference, q)))),
                float(np.max(np.abs(np.asarray(res.coriolis_centrifugal) - coriolis_centrifugal(reference, q, qd)))),
                float(np.max(np.abs(np.asarray(res.gravity) - gravity_torques(reference, q)))),
                float(np.max(np.abs(np.asarray(inv.effort) - inverse_dynamics(reference, q, qd, qdd, friction=False)))),
            )
        return worst

    assert worst_error(model) <= 1e-12
    mass, com = 4.0, np.array([0.0, 0.05, 0.1])
    inertia = np.diag([0.02, 0.03, 0.04])
    loaded = with_payload(model, mass, com, inertia)
    res = call(set_payload, SetPayload.Request(payload=inertia_msg(mass, com, inertia)))
    assert res.success, res.message
    assert worst_error(loaded) <= 1e-12
    assert node.payload_switch.wait_settled(120.0)
    assert worst_error(loaded) <= 1e-12
    # a bad request: refused with the reason, the loaded model stays
    res = call(set_payload, SetPayload.Request(payload=inertia_msg(1.0, com, np.diag([0.1, 0.1, -0.01]))))
    assert not res.success and "not positive semi-definite" in res.message, res.message
    assert worst_error(loaded) <= 1e-12
    # a new payload replaces the old one (never adds to it)
    res = call(set_payload, SetPayload.Request(payload=inertia_msg(MASS, COM, INERTIA)))
    assert res.success, res.message
    assert worst_error(with_payload(model, MASS, COM, INERTIA)) <= 1e-12
    res = call(set_payload, SetPayload.Request(payload=Inertia()))
    assert res.success and "cleared" in res.message
    assert node.model is model and worst_error(model) <= 1e-12
    assert node.payload_switch.wait_settled(120.0)  # the superseded build has finished or was skipped
    assert node.model is model and node.payload_switch.backend == "native"


# ------------------------------------------------------------------------------------------------
# simulator node
# ------------------------------------------------------------------------------------------------
def test_the_simulator_carries_the_payload_it_is_given(context: Any, ros: tuple[Spinner, str]) -> None:
    """The simulator stands for the real robot: with a payload set, the torque that holds the loaded
    arm keeps it at rest (it would move the unloaded one); cleared, the same torque moves the arm."""
    spinner, ns = ros
    pose = np.array([0.0, 0.8, -1.0, 0.2, 0.6, -0.3])
    sim = SimulatorNode(
        namespace=ns,
        context=context,
        parameter_overrides=[
            Parameter("robot_config", value="puma560"),
            Parameter("backend", value="native"),
            Parameter("initial_position", value=pose.tolist()),
            Parameter("friction", value=False),
            Parameter("rate", value=200.0),
        ],
    )
    spinner.add(sim)
    assert sim.model is not None
    model = sim.model
    client = spinner.add(client_node(context, ns, "payload_client_"))
    commands = client.create_publisher(Float64MultiArray, "commands", DATA_QOS)
    set_payload = client.create_client(SetPayload, "simulator_node/set_payload")
    loaded = with_payload(model, MASS, COM, INERTIA)
    tau = gravity_torques(loaded, pose)  # holds the loaded arm at rest
    z = np.zeros(6)
    assert float(np.max(np.abs(forward_dynamics(model, pose, z, tau, friction=False)))) > 0.5  # not the unloaded

    res = call(set_payload, SetPayload.Request(payload=inertia_msg(MASS, COM, INERTIA)))
    assert res.success, res.message
    assert sim.model is not model and payload_of(sim.model).mass == MASS
    wait_until(lambda: commands.get_subscription_count() >= 1, "the simulator's commands subscription")
    commands.publish(Float64MultiArray(data=tau.tolist()))
    wait_until(lambda: sim.steps >= 100, "100 simulator steps")
    assert sim.step_errors == 0, sim.stats.rejected_by_reason
    assert float(np.max(np.abs(sim.q - pose))) < 1e-9 and float(np.max(np.abs(sim.qd))) < 1e-9, sim.q - pose
    assert sim.payload_switch.wait_settled(120.0), "the loaded model's native library was not built"
    steps = sim.steps
    wait_until(lambda: sim.steps >= steps + 40, "40 more steps on the native backend")
    assert float(np.max(np.abs(sim.q - pose))) < 1e-9
    held = sim.model
    for request, words in BAD_REQUESTS:  # refused with the reason; the loaded model and the loop stay
        res = call(set_payload, SetPayload.Request(payload=request))
        assert not res.success and words in res.message, res.message
    assert sim.model is held and sim.stats.rejected_by_reason.get("set_payload") == len(BAD_REQUESTS)
    steps = sim.steps
    wait_until(lambda: sim.steps >= steps + 20, "20 more steps after the refused requests")
    assert float(np.max(np.abs(sim.q - pose))) < 1e-9

    res = call(set_payload, SetPayload.Request(payload=Inertia()))
    assert res.success and "cleared" in res.message, res.message
    assert sim.model is model
    steps = sim.steps
    wait_until(lambda: sim.steps >= steps + 40, "40 steps without the payload")
    assert float(np.max(np.abs(sim.q - pose))) > 1e-4  # the held torque now lifts the lighter arm


# ------------------------------------------------------------------------------------------------
# the message conversion
# ------------------------------------------------------------------------------------------------
def test_payload_from_msg_reads_the_full_symmetric_tensor() -> None:
    p = payload_from_msg(inertia_msg(MASS, COM, INERTIA))
    assert p.mass == MASS
    np.testing.assert_array_equal(p.com, COM)
    np.testing.assert_array_equal(p.inertia, INERTIA)
    with pytest.raises(ModelError, match=r"set_payload request: payload: mass: negative mass -2 kg"):
        payload_from_msg(inertia_msg(-2.0, COM, INERTIA))
    assert payload_from_msg(Inertia()).is_empty


# ------------------------------------------------------------------------------------------------
# Python backend, trajectories and a new robot_description
# ------------------------------------------------------------------------------------------------
def test_payload_keeps_the_trajectory_and_a_new_robot_description_clears_it(
    context: Any, ros: tuple[Spinner, str]
) -> None:
    from std_msgs.msg import String
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from robot_dynamics.ros.messages import ROBOT_DESCRIPTION_QOS

    spinner, ns = ros
    client = spinner.add(client_node(context, ns, "payload_client_"))
    description = client.create_publisher(String, "robot_description", ROBOT_DESCRIPTION_QOS)
    description.publish(String(data=robot_urdf()))
    overrides = [
        Parameter("use_robot_description_topic", value=True),
        Parameter("tip_link", value="tool"),
        Parameter("backend", value="python"),
    ]
    node = spinner.add(FeedforwardNode(namespace=ns, context=context, parameter_overrides=overrides))
    assert isinstance(node, FeedforwardNode)
    wait_until(lambda: node.model is not None, "the model from the robot_description topic")
    first = node.model
    assert first is not None
    efforts = Collector(client, JointState, "feedforward/efforts")
    pub = client.create_publisher(JointState, "joint_states", DATA_QOS)
    traj_pub = client.create_publisher(JointTrajectory, "joint_trajectory", DATA_QOS)
    set_payload = client.create_client(SetPayload, "feedforward_node/set_payload")
    wait_until(lambda: pub.get_subscription_count() >= 1 and traj_pub.get_subscription_count() >= 1, "subscribers")
    wait_until(lambda: efforts.subscription.get_publisher_count() >= 1, "the efforts publisher")

    def torque(stamp: int, q: np.ndarray) -> np.ndarray:
        msg = JointState(name=NAMES, position=q.tolist())
        msg.header.stamp = ns_to_stamp(stamp)
        pub.publish(msg)
        wait_until(lambda: any(stamp_to_ns(m.header.stamp) == stamp for m in efforts.snapshot()), "the torque")
        return next(np.asarray(m.effort) for m in efforts.snapshot() if stamp_to_ns(m.header.stamp) == stamp)

    # a long trajectory, started at once: the node is tracking when the payload changes
    traj = JointTrajectory(joint_names=NAMES)
    traj.points = [
        JointTrajectoryPoint(positions=[0.0] * 6, time_from_start=Duration(sec=0)),
        JointTrajectoryPoint(positions=[0.5] * 6, time_from_start=Duration(sec=600)),
    ]
    traj_pub.publish(traj)
    wait_until(lambda: node.pending is not None, "the trajectory accepted")
    now = node.get_clock().now().nanoseconds
    torque(now, np.zeros(6))
    active = node.active
    assert active is not None
    res = call(set_payload, SetPayload.Request(payload=inertia_msg(MASS, COM, INERTIA)))
    assert res.success and res.message.endswith("; python backend"), res.message
    assert node.payload_switch.wait_settled(0.0)  # nothing is being built on the Python backend
    assert node.active is active  # the payload changes the model, not what the node is doing
    assert node.model is not None and payload_of(node.model).mass == MASS
    # holding again (cancel), the loaded model's torques
    traj_pub.publish(JointTrajectory())
    wait_until(lambda: node.active is None and node.pending is None, "the cancellation")
    q = RNG.uniform(-2.0, 2.0, 6)
    loaded = with_payload(first, MASS, COM, INERTIA)
    np.testing.assert_allclose(torque(now + 1, q), holding(loaded, q, np.zeros(6)), rtol=0, atol=1e-12)
    # a new robot_description: a new robot, the payload is cleared
    description.publish(String(data=robot_urdf()))
    carrying = node.model
    wait_until(lambda: node.model is not carrying, "the new model")
    assert node.model is not None and node.model is not first
    assert node.payload_switch.payload.is_empty and payload_of(node.model).is_empty
    np.testing.assert_allclose(torque(now + 2, q), holding(first, q, np.zeros(6)), rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# PayloadSwitch without DDS: concurrent requests, a failing native build
# ------------------------------------------------------------------------------------------------
class _Logger:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, text: str) -> None:
        self.lines.append(text)

    warning = error = info


class _FakeNode:
    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.model: RobotModel | None = None
        self.logger = _Logger()
        self.rejected: list[str] = []

    def get_logger(self) -> _Logger:
        return self.logger

    def reject(self, reason: str, detail: object) -> None:
        self.rejected.append(str(detail))


def _switch(backend: str, build: Any) -> tuple[Any, _FakeNode]:
    from robot_dynamics.ros.payload_service import PayloadSwitch

    node = _FakeNode(backend)

    def install(model: RobotModel) -> None:
        node.model = model

    switch = PayloadSwitch(node, install, compile_native=build)
    node.model = PUMA
    switch.on_model(PUMA)
    return switch, node


def test_a_request_that_finishes_after_a_later_one_is_refused() -> None:
    switch, node = _switch("python", lambda m: None)
    first, second = switch._ticket(), switch._ticket()
    payload, model, new = switch._loaded_model(SetPayload.Request(payload=inertia_msg(MASS, COM, INERTIA)))
    switch._commit(payload, model, new, time.perf_counter(), second)
    with pytest.raises(ModelError, match="superseded by a later set_payload request"):
        switch._commit(payload, with_payload(PUMA, 1.0), True, time.perf_counter(), first)
    assert node.model is model


def test_a_failing_native_build_leaves_the_payload_on_python() -> None:
    def broken(model: RobotModel) -> None:
        raise RuntimeError("no compiler today")

    switch, node = _switch("native", broken)
    response = SetPayload.Response()
    switch.handle(SetPayload.Request(payload=inertia_msg(MASS, COM, INERTIA)), response)
    assert "python (native compiling)" in response.message
    assert switch.wait_settled(30.0)
    assert switch.backend.startswith("python (native build failed: no compiler today"), switch.backend
    q = RNG.uniform(-2.0, 2.0, (4, 6))
    loaded = with_payload(PUMA, MASS, COM, INERTIA)
    assert node.model is not None
    np.testing.assert_allclose(gravity_torques(node.model, q), gravity_torques(loaded, q), rtol=0, atol=1e-12)


def test_a_superseded_native_build_does_not_touch_the_newer_state() -> None:
    release = threading.Event()

    def slow(model: RobotModel) -> None:
        release.wait(30.0)

    switch, node = _switch("native", slow)
    before = set(threading.enumerate())  # an earlier test's builds may still run on a busy machine
    switch.handle(SetPayload.Request(payload=inertia_msg(MASS, COM, INERTIA)), SetPayload.Response())
    response = SetPayload.Response()
    switch.handle(SetPayload.Request(payload=Inertia()), response)  # clear while the first one builds
    assert "payload cleared; native backend" in response.message
    assert node.model is PUMA and switch.backend == "native"
    builders = [t for t in threading.enumerate() if t.name == "payload-native" and t not in before]
    assert builders
    release.set()
    for thread in builders:  # the first build returns and must leave the newer state alone
        thread.join(30.0)
        assert not thread.is_alive()
    assert node.model is PUMA and switch.backend == "native" and switch.payload.is_empty


# ------------------------------------------------------------------------------------------------
# the executable: Ctrl-C while a payload's native library is being built
# ------------------------------------------------------------------------------------------------
def test_ctrl_c_during_a_native_build_is_a_clean_exit(context: Any) -> None:
    """The build's child process and thread must not keep the node from stopping with status 0."""
    candidates = [
        Path(sys.prefix) / "lib" / "robot_dynamics" / "feedforward_node",
        Path(sys.executable).parent / "feedforward_node",
    ]
    exe = next((str(c) for c in candidates if c.is_file()), None) or shutil.which("feedforward_node")
    if exe is None:
        pytest.fail("the feedforward_node executable is not installed (pip install -e .)")
    ns = f"/payload_exit_{os.getpid()}"
    node = NodeProcess([exe, "--ros-args", "-r", f"__ns:={ns}", "-p", "robot_config:=puma560", "-p", "backend:=native"])
    spinner = Spinner(context)
    try:
        with node:
            client = spinner.add(Node("payload_exit_client", namespace=ns, context=context))
            cli = client.create_client(SetPayload, "feedforward_node/set_payload")
            mass = 1.0 + (os.getpid() % 1000) * 1e-3  # a payload whose library is not cached
            res = call(cli, SetPayload.Request(payload=inertia_msg(mass, COM, INERTIA)), timeout=60.0)
            assert res.success and "native compiling" in res.message, res.message
    finally:
        spinner.close()
    node.assert_clean_exit()


def _drive(coroutine: Any, timeout: float = 30.0) -> Any:
    """Run a service coroutine by hand, as an executor would (resumed until it returns)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            coroutine.send(None)
        except StopIteration as done:
            return done.value
        time.sleep(0.001)
    raise AssertionError("the coroutine did not finish")


@pytest.mark.parametrize(
    ("error", "words"),
    [(ValueError("bad numbers"), "bad numbers"), (RuntimeError("boom"), "internal error: RuntimeError('boom')")],
)
def test_the_coroutine_answers_when_preparing_the_model_fails(error: Exception, words: str) -> None:
    switch, node = _switch("python", lambda m: None)
    node.executor = None  # type: ignore[attr-defined]  # no executor: the future runs its callbacks at once

    def broken(model: RobotModel) -> None:
        raise error

    switch.warm = broken
    response = _drive(switch.serve(SetPayload.Request(payload=inertia_msg(MASS, COM, INERTIA)), SetPayload.Response()))
    assert not response.success and words in response.message, response.message
    assert node.model is PUMA and switch.payload.is_empty and node.rejected == [response.message]
    switch.warm = None
    response = _drive(switch.serve(SetPayload.Request(payload=inertia_msg(MASS, COM, INERTIA)), SetPayload.Response()))
    assert response.success and "payload set: 2.5 kg" in response.message
    assert node.model is not None and payload_of(node.model).mass == MASS
