"""The simulator node on the MuJoCo engine over real DDS: lock-step time answered by a node of the test.

The answering node stands for a controller: it answers every ``joint_states`` message with a
``joint_commands`` JointState stamped like the state (as the feed-forward node stamps its outputs).
"""

from __future__ import annotations

import math
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from engine_reference import EXAMPLE_ROBOTS  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from ros_harness import Spinner, client_node, private_context, spinner_in_namespace, wait_until  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from test_ros_processes import executable_path, output_lines  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.plant import MujocoPlant, PlantOptions, SensedPlant, make_plant, plant_source  # noqa: E402
from robot_dynamics.ros.messages import DATA_QOS, StartupError, stamp_to_ns  # noqa: E402
from robot_dynamics.ros.simulator_node import SimulatorNode  # noqa: E402

pytestmark = pytest.mark.ros

UR5 = str(EXAMPLE_ROBOTS / "ur_description/urdf/ur5_robot.urdf")
START = np.array([0.0, -1.2, 1.4, -1.6, -1.57, 0.3])
PERIOD_NS = 1_000_000
CLAMPED_STEPS = 5  # the first answers ask the shoulder pan joint for 160 N m (its limit: 150 N m)


@pytest.fixture(scope="module")
def context() -> Iterator[Any]:
    yield from private_context()


@pytest.fixture
def ros(context: Any) -> Iterator[tuple[Spinner, str]]:
    yield from spinner_in_namespace(context, "plant")


@pytest.fixture(scope="module")
def ur5() -> rd.RobotModel:
    model = rd.load_robot(UR5)
    rd.prepare(model, "python")
    return model


def start_simulator(context: Any, spinner: Spinner, ns: str, **params: Any) -> SimulatorNode:
    overrides = {
        "robot_config": UR5,
        "engine": "mujoco",
        "lockstep": True,
        "lockstep_timeout": 0.1,
        "rate": 1000.0,
        "backend": "python",
        "initial_position": START.tolist(),
        **params,
    }
    node = SimulatorNode(
        namespace=ns, context=context, parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()]
    )
    return spinner.add(node)  # type: ignore[return-value]


class Controller:
    """Answers each state (until ``stop_after`` answers) with gravity compensation and a PD to START."""

    def __init__(self, node: Any, model: rd.RobotModel, stop_after: int | None = None) -> None:
        self.model, self.stop_after = model, stop_after
        self.lock = threading.Lock()
        self.sent: dict[int, np.ndarray] = {}  # stamp -> command
        self.order: list[int] = []
        self.states: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []  # stamp, q, qd, effort
        self.clock: list[int] = []
        self.pub = node.create_publisher(JointState, "joint_commands", DATA_QOS)
        node.create_subscription(JointState, "joint_states", self.on_state, DATA_QOS)
        node.create_subscription(
            Clock, "/clock", self.on_clock, QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        )

    def on_clock(self, msg: Clock) -> None:
        with self.lock:
            self.clock.append(stamp_to_ns(msg.clock))

    def on_state(self, msg: JointState) -> None:
        stamp = stamp_to_ns(msg.header.stamp)
        q, qd, effort = (np.array(a) for a in (msg.position, msg.velocity, msg.effort))
        with self.lock:
            self.states.append((stamp, q, qd, effort))
            if stamp in self.sent or (self.stop_after is not None and len(self.sent) >= self.stop_after):
                return
            tau = rd.gravity_torques(self.model, q) + 50.0 * (START - q) - 5.0 * qd
            if len(self.sent) < CLAMPED_STEPS:
                tau[0] = 160.0
            self.sent[stamp] = tau
            self.order.append(stamp)
        out = JointState(name=list(msg.name), effort=tau.tolist())
        out.header.stamp = msg.header.stamp
        self.pub.publish(out)

    def answers(self) -> int:
        with self.lock:
            return len(self.sent)


def test_lockstep_advances_one_period_per_answered_state(context: Any, ros: tuple[Spinner, str], ur5: Any) -> None:
    spinner, ns = ros
    client = spinner.add(client_node(context, ns))
    controller = Controller(client, ur5)
    sim = start_simulator(context, spinner, ns)
    wait_until(lambda: controller.answers() >= 1, "the first answer")
    sim.set_parameters([Parameter("lockstep_timeout", value=10.0)])  # started: from now on a miss would be a stall
    # a 20 N push on the tool, scheduled from simulated time 1.2 s (the step that starts at t_200)
    push = client.create_publisher(WrenchStamped, "simulator_node/external_wrench", DATA_QOS)
    wait_until(lambda: push.get_subscription_count() >= 1, "the simulator's external_wrench subscription")
    wrench = WrenchStamped()
    wrench.header.stamp.sec, wrench.header.stamp.nanosec = 1, 200_000_000
    wrench.wrench.force.z, wrench.wrench.torque.x = -20.0, 0.5
    push.publish(wrench)
    wait_until(lambda: controller.answers() >= 300, "300 answered states", timeout=60)
    with controller.lock:
        states, sent, order, clock = (
            list(controller.states),
            dict(controller.sent),
            list(controller.order),
            list(controller.clock),
        )
    stamps = [s[0] for s in states]
    distinct = sorted(set(stamps))
    assert distinct[0] == 1_000_000_000 and np.all(np.diff(distinct) == PERIOD_NS)  # exactly one period each
    assert np.all(np.diff(stamps) >= 0) and set(stamps) <= set(clock)  # /clock = t_k before the state at t_k
    assert np.all(np.diff(sorted(set(clock))) == PERIOD_NS)
    diagnostics = dict(sim.diagnostic_values())
    assert diagnostics["missed_commands"] == "0" and diagnostics["late_commands"] == "0", diagnostics
    assert diagnostics["engine"] == "mujoco" and diagnostics["clamped_steps"] == str(CLAMPED_STEPS)
    assert diagnostics["clamped[shoulder_pan_joint]"] == str(CLAMPED_STEPS)
    # effort of the state at t_k+1 = the answer to t_k, limited to the effort limits
    limit = np.array([j.limits.effort for j in ur5.joints])
    by_stamp = {s[0]: s for s in states}
    for t in order[:-1]:
        assert np.array_equal(by_stamp[t + PERIOD_NS][3], np.clip(sent[t], -limit, limit))
    assert by_stamp[order[1]][3][0] == 150.0
    # deterministic: the same commands (and the push from t = 1.2 s) on a plant of our own give the same
    # states, bit for bit
    assert order[-1] > 1_200_000_000 and sim.plant is not None and sim.plant.external_wrench[2] == -20.0
    plant = MujocoPlant(plant_source(UR5), ur5, 1e-3)
    plant.reset(START, np.zeros(6))
    for t in order[:-1]:
        if t == 1_200_000_000:
            plant.external_wrench = np.array([0.0, 0.0, -20.0, 0.5, 0.0, 0.0])
        plant.step(sent[t])
        assert np.array_equal(plant.q, by_stamp[t + PERIOD_NS][1]) and np.array_equal(
            plant.qd, by_stamp[t + PERIOD_NS][2]
        )


def test_a_missing_answer_is_counted_and_the_command_held(context: Any, ros: tuple[Spinner, str], ur5: Any) -> None:
    spinner, ns = ros
    client = spinner.add(client_node(context, ns))
    controller = Controller(client, ur5, stop_after=20)
    sim = start_simulator(context, spinner, ns, lockstep_timeout=1.0)
    wait_until(lambda: controller.answers() >= 20, "20 answers")
    assert sim.set_parameters([Parameter("lockstep_timeout", value=0.02)])[0].successful
    wait_until(lambda: sim.clock.missed >= 5, "5 missed commands")
    assert sim.clock.late == 0
    with controller.lock:
        last = controller.sent[controller.order[-1]]
        after = [s for s in controller.states if s[0] > controller.order[-1]]
    assert len(after) >= 5 and all(np.array_equal(s[3], last) for s in after)  # the last command, held
    assert np.all(np.diff([s[0] for s in after]) == PERIOD_NS)  # the clock still runs one period per step
    # an answer to an old state is late: counted, not applied
    stale = JointState(name=ur5.joint_names, effort=[0.0] * 6)
    stale.header.stamp.sec = 1  # t_0
    controller.pub.publish(stale)
    wait_until(lambda: sim.clock.late >= 1, "the late answer to be counted")
    assert np.array_equal(sim.tau, last)
    # a commands array (no stamp) answers the state waiting for an answer
    array = client.create_publisher(Float64MultiArray, "commands", DATA_QOS)
    wait_until(lambda: array.get_subscription_count() >= 1, "the simulator's commands subscription")
    missed = sim.clock.missed
    array.publish(Float64MultiArray(data=[1.0, 2.0, 3.0, 0.5, 0.5, 0.5]))
    wait_until(lambda: sim.tau.tolist() == [1.0, 2.0, 3.0, 0.5, 0.5, 0.5], "the array command")
    assert sim.clock.late == 1 and sim.clock.missed >= missed
    # command_timeout (simulated seconds): the held command becomes zero torque
    assert sim.set_parameters([Parameter("command_timeout", value=0.002)])[0].successful
    wait_until(lambda: not sim.effort.any(), "the stale command to time out")
    refused = sim.set_parameters([Parameter("lockstep_timeout", value=-1.0)])[0]
    assert not refused.successful and "lockstep_timeout: must be a finite number > 0 s" in refused.reason
    assert not sim.set_parameters([Parameter("engine", value="model")])[0].successful  # read-only


def test_lockstep_max_speed_bounds_simulated_time_by_the_wall_clock(
    context: Any, ros: tuple[Spinner, str], ur5: Any
) -> None:
    """A lock-step loop runs as fast as it is answered; ``lockstep_max_speed`` caps simulated seconds
    per wall second (a recorder beside a low-rate loop must keep up), changeable at run time."""
    spinner, ns = ros
    client = spinner.add(client_node(context, ns))
    controller = Controller(client, ur5)
    sim = start_simulator(context, spinner, ns, rate=200.0, lockstep_max_speed=0.5)
    wait_until(lambda: controller.answers() >= 5, "the first answers")

    def advance(seconds: float) -> tuple[float, float]:
        """(simulated s, wall s) over a window of about ``seconds``."""
        sim0, wall0 = sim.clock.now_ns, time.monotonic()
        time.sleep(seconds)
        return (sim.clock.now_ns - sim0) * 1e-9, time.monotonic() - wall0

    # at most half the wall clock's pace (how much less on a busy machine is the benchmark's business): a
    # loop at most 0.1 s behind its pace catches up (0.05 simulated s), plus the step in progress
    simulated, wall = advance(1.0)
    assert 0.0 < simulated <= 0.5 * wall + 0.05 + 0.005, (simulated, wall)
    assert sim.set_parameters([Parameter("lockstep_max_speed", value=0.0)])[0].successful
    wait_until(lambda: sim.clock._pace is None, "the next step unpaced")  # pace(0) is no limit
    assert advance(0.2)[0] > 0.0
    refused = sim.set_parameters([Parameter("lockstep_max_speed", value=-1.0)])[0]
    assert not refused.successful and "lockstep_max_speed" in refused.reason
    assert sim.clock.missed == 0


def test_real_time_keeps_its_rate_on_a_thread_and_measures_the_loop_latency(
    context: Any, ros: tuple[Spinner, str], ur5: Any
) -> None:
    """Real time: the stepping loop runs on a thread of its own (not the executor), never ahead of its
    rate, and the round trip state -> answer is measured at the plant; a reset starts the record again.
    (How close to its rate it keeps depends on the machine's load: ``bench/bench_closed_loop.py`` measures
    it.)"""
    spinner, ns = ros
    client = spinner.add(client_node(context, ns))
    controller = Controller(client, ur5)
    started = time.monotonic()
    sim = start_simulator(context, spinner, ns, lockstep=False, rate=500.0, thread_priority=1)
    assert sim.realtime.stepper is not None and sim.realtime.stepper._thread.is_alive()
    wait_until(lambda: controller.answers() >= 50, "50 answers")
    # the answers sent are received and measured by the stepping thread a moment later (in flight over DDS)
    wait_until(lambda: sim.realtime.latency.count >= 50, "50 answers measured at the plant")
    stepper = sim.realtime.stepper
    deadlines = stepper.ticks + stepper.overruns  # every deadline so far: ticked or counted as skipped
    assert 50 <= deadlines <= (time.monotonic() - started) * 500.0 + 1, deadlines
    values = dict(sim.diagnostic_values())
    assert values["scheduler"] in ("SCHED_FIFO 1", sim.realtime.stepper.scheduler) and (
        values["scheduler"] == "SCHED_FIFO 1" or "refused" in values["scheduler"]
    )
    count = int(values["command_latency_count"])
    p50, p99, top = (float(values[f"command_latency_{k}_ms"]) for k in ("p50", "p99", "max"))
    assert count >= 50 and 0.0 < p50 <= p99 <= top and math.isfinite(top), values
    assert int(values["overruns"]) >= 0
    # the commands are taken by the stepping thread from a companion node's subscriptions, not the executor's
    assert not [sub.topic_name for sub in sim.subscriptions if sub.topic_name.endswith("commands")]
    assert sim.realtime.intake is not None and sim.realtime.intake.companion.get_name() == "simulator_node_commands"
    assert sorted(sub.topic_name for sub, _ in sim.realtime.intake.inputs) == [f"{ns}/commands", f"{ns}/joint_commands"]
    assert sim.stats.received >= count
    # a reset clears the record
    reset = client.create_client(rd_interfaces().ResetSimulation, "reset_simulation")
    assert reset.wait_for_service(timeout_sec=10.0)
    received = sim.stats.received
    future = reset.call_async(rd_interfaces().ResetSimulation.Request())
    wait_until(future.done, "the reset")
    # only commands received since the reset was asked for are in the record (however many a busy machine
    # let through meanwhile)
    assert future.result().success and sim.realtime.latency.count <= sim.stats.received - received
    assert (
        sim.realtime.stepper.stop() and not sim.realtime.stepper._thread.is_alive()
    )  # destroy_node stops it like this
    time.sleep(0.2)  # the last answers in
    # only commands that carry a state's stamp are measured
    from builtin_interfaces.msg import Time

    before = sim.realtime.latency.count
    sim.realtime.record(Time())  # a controller that does not stamp
    sim.realtime.record(Time(sec=2**31 - 1))  # one that stamps its own (later) time
    assert sim.realtime.latency.count == before


def rd_interfaces() -> Any:
    from importlib import import_module

    return import_module("robot_dynamics_interfaces.srv")


def unspun_simulator(context: Any, namespace: str, **more: Any) -> SimulatorNode:
    """A lock-step simulator whose handlers the test calls itself, in the order it chooses (no spinning)."""
    params = {"robot_config": UR5, "engine": "mujoco", "lockstep": True, "rate": 1000.0, "backend": "python"}
    params |= {"initial_position": START.tolist(), **more}
    return SimulatorNode(
        namespace=namespace, context=context, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()]
    )


def stamped_state(names: list[str], stamp: int, effort: np.ndarray) -> JointState:
    msg = JointState(name=names, effort=effort.tolist())
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 1_000_000_000)
    return msg


def test_a_reset_in_lockstep_gets_a_stamp_of_its_own(context: Any, ur5: Any) -> None:
    """The reset state is published one period later, so the answer to the state before the reset is
    late (counted, not applied to the reset state); the answer to the reset state steps from it."""
    from robot_dynamics_interfaces.srv import ResetSimulation

    sim = unspun_simulator(context, "/plant_reset")
    try:
        gravity = rd.gravity_torques(ur5, START)

        def answer(stamp: int, tau: np.ndarray) -> None:
            sim._on_joint_command(stamped_state(ur5.joint_names, stamp, tau))

        sim._lockstep_watch()  # the first state, t_0
        answer(1_000_000_000, gravity)  # steps: the state at t_1 is waiting
        assert sim.clock.now_ns == 1_001_000_000 and sim.clock.awaiting
        q_reset = START + 0.1
        request = ResetSimulation.Request(position=q_reset.tolist())
        assert sim._on_reset(request, ResetSimulation.Response()).success
        assert sim.clock.now_ns == 1_002_000_000 and sim.clock.awaiting and sim.clock.missed == 0
        answer(1_001_000_000, gravity + 50.0)  # the answer to t_1, after the reset: late, not applied
        assert sim.clock.late == 1 and np.array_equal(sim.q, q_reset) and not sim.qd.any()
        answer(1_002_000_000, gravity)  # the answer to the reset state: one step from it
        plant = MujocoPlant(plant_source(UR5), ur5, 1e-3)
        plant.reset(q_reset, np.zeros(6))
        plant.step(gravity)
        assert np.array_equal(sim.q, plant.q) and np.array_equal(sim.qd, plant.qd)
        assert sim.clock.now_ns == 1_003_000_000 and sim.clock.late == 1
    finally:
        sim.destroy_node()


def test_a_lockstep_observer_holds_each_step_once_it_has_answered(context: Any, ur5: Any) -> None:
    """``lockstep_observers``: a node that answers the states without commanding (the contact node) is
    waited for once it has answered; a missing answer costs one ``lockstep_timeout``, is counted, and the
    observer is not waited for again until it answers. The handlers are called directly (no spinning):
    the order of command and observer answers is the test's."""
    from rclpy.serialization import serialize_message

    topic = "contact_node/external_torque"
    sim = unspun_simulator(context, "/plant_observer", lockstep_observers=[topic])
    try:
        gravity = rd.gravity_torques(ur5, START)

        def answer(stamp: int) -> None:
            sim._on_joint_command(stamped_state(ur5.joint_names, stamp, gravity))

        def observe(stamp: int) -> None:
            sim._on_observer(topic, serialize_message(stamped_state(ur5.joint_names, stamp, np.zeros(6))))

        t0 = 1_000_000_000
        sim._lockstep_watch()  # the first state, t_0
        answer(t0)  # the observer has not answered yet: the command alone steps
        assert sim.clock.now_ns == t0 + PERIOD_NS
        observe(t0)  # its (late) answer to t_0: it joins
        answer(t0 + PERIOD_NS)
        assert sim.clock.now_ns == t0 + PERIOD_NS and sim.steps == 1  # held for the observer
        observe(t0 + PERIOD_NS)
        assert sim.clock.now_ns == t0 + 2 * PERIOD_NS and sim.steps == 2
        observe(t0 + 2 * PERIOD_NS)  # the observer first, then the command
        assert sim.steps == 2
        answer(t0 + 2 * PERIOD_NS)
        assert sim.clock.now_ns == t0 + 3 * PERIOD_NS and sim.steps == 3
        answer(t0 + 3 * PERIOD_NS)  # the observer stops answering: the step waits for lockstep_timeout
        sim._lockstep_watch()
        assert sim.steps == 3
        assert sim.set_parameters([Parameter("lockstep_timeout", value=0.001)])[0].successful
        time.sleep(0.01)
        sim._lockstep_watch()
        assert sim.steps == 4 and sim.clock.missed == 0  # the command was there: only the observer missed
        values = dict(sim.diagnostic_values())
        assert values[f"observer_missed[{topic}]"] == "1" and values[f"observer_joined[{topic}]"] == "false"
        answer(t0 + 4 * PERIOD_NS)  # not waited for any more
        assert sim.steps == 5
        sim._on_observer(topic, b"\x00\x01")
        assert sim.stats.rejected_by_reason == {topic: 1} and sim.steps == 5  # refused, nothing else
    finally:
        sim.destroy_node()

    with pytest.raises(StartupError, match="lockstep_observers needs lockstep: true"):
        SimulatorNode(
            namespace="/plant_observer_rt",
            context=context,
            parameter_overrides=[
                Parameter("robot_config", value=UR5),
                Parameter("backend", value="python"),
                Parameter("lockstep_observers", value=[topic]),
            ],
        )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"mjcf": "/nonexistent/arm.xml"}, "cannot build the mujoco plant: arm.xml: MuJoCo cannot read it"),
        (
            {"plant_deviations": "/nonexistent/plant.yaml"},
            "cannot build the mujoco plant: /nonexistent/plant.yaml: cannot read",
        ),
        ({"plant_deviations": "SHORT"}, "plant.yaml: damping: 2 values for the 6 joints"),
        ({"plant_deviations": "NEGATIVE"}, "plant.yaml: friction[elbow_joint]: must be >= 0"),
        ({"engine": "bullet"}, "parameter engine must be one of ['model', 'mujoco'], got 'bullet'"),
        ({"thread_priority": 100}, "thread_priority: must be an integer 0 (normal scheduler) to 99, got 100"),
        ({"thread_priority": -1}, "thread_priority: must be an integer 0 (normal scheduler) to 99, got -1"),
        ({"engine": "model", "plant_deviations": "SHORT"}, "plant_deviations needs engine 'mujoco'"),
        ({"torque_sensing": "joint"}, "torque_sensing must be one of ['motor', 'link'], got 'joint'"),
    ],
)
def test_bad_plant_parameters_stop_the_start(
    context: Any, tmp_path: Path, params: dict[str, Any], message: str
) -> None:
    files = {"SHORT": "damping: [1.0, 2.0]\n", "NEGATIVE": "friction: {elbow_joint: -1.0}\n"}
    for key, value in params.items():
        if value in files:
            (tmp_path / "plant.yaml").write_text(files[value])
            params[key] = str(tmp_path / "plant.yaml")
    with pytest.raises(StartupError) as caught:
        SimulatorNode(
            namespace="/bad_plant",
            context=context,
            parameter_overrides=[
                Parameter("robot_config", value=UR5),
                Parameter("engine", value="mujoco"),
                *(Parameter(k, value=v) for k, v in params.items()),
            ],
        )
    assert message in str(caught.value), str(caught.value)


def test_a_bad_mjcf_is_one_fatal_line_and_exit_1(tmp_path: Path) -> None:
    mjcf = tmp_path / "broken.xml"
    mjcf.write_text("<mujoco><worldbody><body name='b'><joint name='shoulder_pan_joint'/></body></worldbody>")
    result = subprocess.run(
        [
            executable_path("simulator_node"),
            "--ros-args",
            "-p",
            f"robot_config:={UR5}",
            "-p",
            "engine:=mujoco",
            "-p",
            f"mjcf:={mjcf}",
            "-p",
            "backend:=python",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    lines = output_lines(result)
    assert result.returncode == 1 and len(lines) == 1, (result.returncode, lines)
    assert "FATAL" in lines[0] and "cannot build the mujoco plant: broken.xml: MuJoCo cannot read it" in lines[0]


def test_set_payload_and_reset_on_the_mujoco_engine(context: Any, ur5: Any) -> None:
    """The node's payload swap rebuilds the MuJoCo plant (state carried on); reset returns to a state."""
    from robot_dynamics_interfaces.srv import ResetSimulation, SetPayload

    sim = SimulatorNode(
        namespace="/plant_payload",
        context=context,
        parameter_overrides=[
            Parameter("robot_config", value=UR5),
            Parameter("engine", value="mujoco"),
            Parameter("backend", value="python"),
            Parameter("initial_position", value=START.tolist()),
        ],
    )
    try:
        assert sim.plant is not None
        sim.plant.step(np.zeros(6))
        q, qd = sim.q, sim.qd
        request = SetPayload.Request()
        request.payload.m, request.payload.com.z = 2.5, 0.08
        request.payload.ixx = request.payload.iyy = request.payload.izz = 0.01
        response = SetPayload.Response()
        sim.payload_switch.handle(request, response)
        assert np.array_equal(sim.q, q) and np.array_equal(sim.qd, qd)
        loaded = rd.with_payload(ur5, 2.5, [0.0, 0.0, 0.08], np.eye(3) * 0.01)
        expected = rd.inertia_matrix(loaded, q, backend="python")
        assert np.abs(rd.inertia_matrix(sim.plant.true_model, q, backend="python") - expected).max() < 1e-12
        reset = sim._on_reset(ResetSimulation.Request(), ResetSimulation.Response())
        assert reset.success and np.array_equal(sim.q, START) and np.array_equal(sim.qd, np.zeros(6))
        assert sim.plant.time == 0.0
    finally:
        sim.destroy_node()


def test_link_side_torque_sensing_is_what_joint_states_carries(context: Any, tmp_path: Path) -> None:
    """``torque_sensing: link``: effort is the torque the joints pass on (after the plant's friction)."""
    deviations = tmp_path / "plant.yaml"
    deviations.write_text("friction: 5.0\ndamping: 2.0\n")
    sim = SimulatorNode(
        namespace="/plant_link_side",
        context=context,
        parameter_overrides=[
            Parameter("robot_config", value=UR5),
            Parameter("engine", value="mujoco"),
            Parameter("plant_deviations", value=str(deviations)),
            Parameter("torque_sensing", value="link"),
            Parameter("backend", value="python"),
            Parameter("initial_position", value=START.tolist()),
            Parameter("initial_velocity", value=[0.5, -0.4, 0.3, 0.6, -0.2, 0.4]),
        ],
    )
    try:
        assert sim.plant is not None and sim.plant.torque_sensing == "link"
        sim.tau = np.array([10.0, -40.0, -20.0, 2.0, 1.0, -1.0])
        sim._advance(sim.plant.period)
        assert np.array_equal(sim.effort, sim.plant.effort)
        # not the motors' torque: the friction (5 N m, sliding) and the damping are taken off (on the
        # heavy joints: MuJoCo takes off a light wrist's friction only as far as it stops it in a step)
        assert np.abs(sim.effort - sim.tau)[:4].min() > 4.0
    finally:
        sim.destroy_node()


def test_chain_options_and_joint_map_reach_the_mujoco_plant(context: Any, tmp_path: Path) -> None:
    """The stock Panda as franka_ros2 names it: tip, locked fingers, joint map, deviations by topic name."""
    panda = str(EXAMPLE_ROBOTS / "panda_description/urdf/panda.urdf")
    deviations = tmp_path / "plant.yaml"
    deviations.write_text("damping: {fer_joint4: 3.0}\n")
    sim = SimulatorNode(
        namespace="/plant_chain",
        context=context,
        parameter_overrides=[
            Parameter("robot_config", value=panda),
            Parameter("tip_link", value="panda_hand_tcp"),
            Parameter("locked_joints", value=["panda_finger_joint1", "panda_finger_joint2=0.02"]),
            Parameter("joint_map", value=[f"fer_joint{i}=panda_joint{i}" for i in range(1, 8)]),
            Parameter("engine", value="mujoco"),
            Parameter("plant_deviations", value=str(deviations)),
            Parameter("backend", value="python"),
        ],
    )
    try:
        assert sim.plant is not None and sim.model is not None
        true = sim.plant.true_model
        assert true.joint_names == [f"fer_joint{i}" for i in range(1, 8)] == sim.model.joint_names
        assert [j.friction.viscous for j in true.joints] == [0.003, 0.003, 0.003, 3.0, 0.003, 0.003, 0.003]
        q = np.array([0.3, -0.5, 0.2, -2.0, 0.4, 1.8, -0.6])
        expected = rd.inertia_matrix(sim.model, q, backend="python")  # fingers at 0 and 0.02 in the loader too
        assert np.abs(rd.inertia_matrix(true, q, backend="python") - expected).max() < 1e-12
    finally:
        sim.destroy_node()


def test_a_sensor_profile_publishes_the_measured_state_and_the_truth(
    context: Any, ros: tuple[Spinner, str], ur5: Any
) -> None:
    """``sensor_profile: ur_e_series`` over DDS in lock-step at its 500 Hz: ``joint_states`` carries the
    encoder's quantized angle one period late and the drive's command (two periods late: one each way),
    ``~/true_joint_states`` the plant's state and the torque really applied, (1 + e) times the command."""
    spinner, ns = ros
    period = 2_000_000
    client = spinner.add(client_node(context, ns))
    controller = Controller(client, ur5)
    lock, truth = threading.Lock(), {}

    def on_truth(msg: JointState) -> None:
        with lock:
            truth[stamp_to_ns(msg.header.stamp)] = tuple(np.array(a) for a in (msg.position, msg.velocity, msg.effort))

    client.create_subscription(JointState, "simulator_node/true_joint_states", on_truth, DATA_QOS)
    overrides = "{torque: {noise: 0.0, offset: 0.0}, actuator: {ripple: {amplitude: 0.0}}}"
    sim = start_simulator(context, spinner, ns, rate=500.0, sensor_profile="ur_e_series", sensor_overrides=overrides)
    wait_until(lambda: controller.answers() >= 1, "the first answer")
    sim.set_parameters([Parameter("lockstep_timeout", value=10.0)])
    wait_until(lambda: controller.answers() >= 150, "150 answered states", timeout=60)
    wait_until(lambda: len(truth) >= 150, "150 true states", timeout=30)
    with controller.lock, lock:
        states, sent, order, true = list(controller.states), dict(controller.sent), list(controller.order), dict(truth)
    assert dict(sim.diagnostic_values())["sensor_profile"] == "ur_e_series"
    plant = sim.plant
    assert isinstance(plant, SensedPlant)
    by_stamp = {s[0]: s for s in states}
    limit = np.array([j.limits.effort for j in ur5.joints])
    resolution = 2.0 * np.pi / (65536 * 101)  # motor-side 16-bit encoder behind the 101:1 gear
    gain = 1.0 + plant.sensors["actuator.constant_error"]
    for k in range(1, len(order) - 3):
        t = order[k]
        measured, later = by_stamp[t + period], by_stamp[t + 2 * period]
        assert np.all(np.abs(measured[1] - true[t][0]) <= resolution / 2 + 1e-12)  # one period late, quantized
        assert np.allclose(np.round(measured[1] / resolution) * resolution, measured[1], rtol=0, atol=1e-12)
        command = np.clip(sent[order[k - 1]], -limit, limit)  # the drive applies the previous answer
        assert np.array_equal(later[3], command)  # its reading, published a period late: no (1 + e)
        assert np.allclose(true[t + period][2], gain * command, rtol=1e-12, atol=1e-12)
    assert np.all(np.abs(gain - 1.0) <= 0.05) and not np.allclose(gain, 1.0)
    # the same commands on a ROS-free plant of the same options: the same measured and true states
    twin = make_plant(
        PlantOptions(engine="mujoco", sensor_profile="ur_e_series", sensor_overrides=overrides), ur5, 0.002, UR5
    )
    twin.reset(START, np.zeros(6))
    for t in order[:-1]:
        twin.step(sent[t])
        assert np.array_equal(twin.q, by_stamp[t + period][1]) and np.array_equal(twin.true_q, true[t + period][0])


def test_a_sensor_profile_in_real_time(context: Any, ros: tuple[Spinner, str], ur5: Any) -> None:
    """Real time with ``sensor_profile: franka``: the truth is published beside every measured state with
    its stamp; the measured angle is the 20-bit link encoder's, the reading the link-side sensor's
    (offsets, noise), not the torque applied."""
    spinner, ns = ros
    client = spinner.add(client_node(context, ns))
    controller = Controller(client, ur5)
    lock, truth = threading.Lock(), {}

    def on_truth(msg: JointState) -> None:
        with lock:
            truth[stamp_to_ns(msg.header.stamp)] = (np.array(msg.position), np.array(msg.effort))

    client.create_subscription(JointState, "simulator_node/true_joint_states", on_truth, DATA_QOS)
    sim = start_simulator(context, spinner, ns, lockstep=False, rate=1000.0, sensor_profile="franka")
    wait_until(lambda: controller.answers() >= 50, "50 answers")
    wait_until(lambda: len(truth) >= 50, "50 true states")
    with controller.lock, lock:
        states, true = list(controller.states), dict(truth)
    assert sim.plant is not None and sim.plant.torque_sensing == "link"
    common = [s for s in states if s[0] in true]
    assert len(common) >= 40  # the same stamps on both topics
    resolution = 2.0 * np.pi / 2**20
    for _, q, _, _ in common:
        assert np.allclose(np.round(q / resolution) * resolution, q, rtol=0, atol=1e-12)
    assert any(not np.allclose(effort, true[t][1]) for t, _, _, effort in common[5:])
