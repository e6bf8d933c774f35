"""The contact node over real DDS: external torque, wrench and collision events for fed joint states.

The joint states are a PUMA 560 simulated by the engine's forward dynamics, pushed by a known
external joint torque for 0.1 s: the node's ``~/external_torque`` must be the engine's batch observer
on the same samples (1e-12) and reach the push; ``~/collision`` must raise each joint once during the
push and clear it once after (hysteresis); bad states are skipped without corrupting the observer;
run-time parameter changes are checked.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import (  # noqa: E402
    Inertia,
    Vector3,
    WrenchStamped,
)
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.parameter_client import AsyncParameterClient  # noqa: E402
from ros_harness import (  # noqa: E402
    Collector,
    Spinner,
    call,
    client_node,
    private_context,
    spinner_in_namespace,
    wait_until,
)
from sensor_msgs.msg import JointState  # noqa: E402

from robot_dynamics.contact import reversal_weights, transitions  # noqa: E402
from robot_dynamics.dynamics import gravity_torques, prepare, simulate  # noqa: E402
from robot_dynamics.dynamics.contact_wrench import external_wrench  # noqa: E402
from robot_dynamics.dynamics.momentum_observer import MomentumObserver, observe  # noqa: E402
from robot_dynamics.models import load_robot  # noqa: E402
from robot_dynamics.payload import payload_of, with_payload  # noqa: E402
from robot_dynamics.ros.contact_node import ContactNode  # noqa: E402
from robot_dynamics.ros.messages import DATA_QOS, diagnostic_dict, ns_to_stamp, stamp_to_ns  # noqa: E402
from robot_dynamics_interfaces.msg import CollisionEvent  # noqa: E402
from robot_dynamics_interfaces.srv import SetPayload  # noqa: E402

pytestmark = pytest.mark.ros

PUMA = load_robot("puma560")
NAMES = PUMA.joint_names
PUSH = np.array([6.0, -9.0, 5.0, 1.0, -0.8, 0.6])  # N·m, on from 0.1 s to 0.2 s
GAIN = 50.0
THRESHOLDS = [3.0, 4.5, 2.5, 0.5, 0.4, 0.3]
T0 = 5_000_000_000  # ns, the first stamp


@pytest.fixture(scope="module")
def context() -> Iterator[Any]:
    yield from private_context()


@pytest.fixture
def ros(context: Any) -> Iterator[tuple[Spinner, str]]:
    yield from spinner_in_namespace(context, "c")


@pytest.fixture(scope="module")
def pushed() -> tuple[np.ndarray, ...]:
    """0.3 s at 1 kHz of a PUMA 560 swaying under a torque law (no friction), pushed from 0.1 to 0.2 s."""
    q0, qd0 = PUMA.named_poses["qn"], np.zeros(6)
    parts = []
    for k, push in enumerate((np.zeros(6), PUSH, np.zeros(6))):

        def applied(t: float, q: np.ndarray, qd: np.ndarray, k: int = k, push: np.ndarray = push) -> np.ndarray:
            return gravity_torques(PUMA, q) + 2.0 * np.sin(4.0 * (t + 0.1 * k) + np.arange(6)) + push

        grid = np.arange(101) * 1e-3
        run = simulate(PUMA, q0, qd0, applied, 0.1, t_eval=grid, friction=False, rtol=1e-9, atol=1e-9)
        parts.append((run.q[:-1], run.qd[:-1], run.tau[:-1] - push))
        q0, qd0 = run.q[-1], run.qd[-1]
    q, qd, tau = (np.vstack([p[i] for p in parts]) for i in range(3))
    stamps = T0 + np.arange(len(q)) * 1_000_000
    return stamps, q, qd, tau


def joint_state(q: np.ndarray, qd: np.ndarray, tau: np.ndarray | None, stamp: int, order: list[int]) -> JointState:
    msg = JointState()
    msg.header.stamp = ns_to_stamp(int(stamp))
    msg.name = [NAMES[i] for i in order] + ["gripper_joint"]
    msg.position = [float(q[i]) for i in order] + [0.0]
    msg.velocity = [float(qd[i]) for i in order] + [0.0]
    if tau is not None:
        msg.effort = [float(tau[i]) for i in order] + [0.0]
    return msg


def start(context: Any, spinner: Spinner, ns: str, **params: Any) -> ContactNode:
    params.setdefault("answer_every_state", True)  # the tests below look at each state's estimate
    overrides = [
        Parameter("robot_config", value="puma560"),
        Parameter("diagnostics_period", value=0.2),
        Parameter("friction", value=False),
        Parameter("observer_gain", value=GAIN),
        *(Parameter(k, value=v) for k, v in params.items()),
    ]
    return spinner.add(ContactNode(namespace=ns, context=context, parameter_overrides=overrides))  # type: ignore[return-value]


TORQUE = (JointState, "contact_node/external_torque")
WRENCH = (WrenchStamped, "contact_node/external_wrench")
EVENTS = (CollisionEvent, "contact_node/collision")


def wired(client: Any, *outputs: tuple[type, str]) -> tuple[Any, list[Collector]]:
    """A ``joint_states`` publisher the node has matched, and a Collector per ``(type, topic)`` of the
    node's outputs, each once the node's publisher is seen."""
    collectors = [Collector(client, msg_type, topic) for msg_type, topic in outputs]
    pub = client.create_publisher(JointState, "joint_states", DATA_QOS)
    wait_until(lambda: pub.get_subscription_count() >= 1, "the node's joint_states subscription")
    for c in collectors:
        wait_until(lambda c=c: c.subscription.get_publisher_count() >= 1, f"a publisher on {c.subscription.topic_name}")
    return pub, collectors


def test_the_wrench_comes_at_wrench_rate_of_the_states_time(
    context: Any, ros: tuple[Spinner, str], pushed: Any
) -> None:
    """Default 100 Hz: of 1 kHz states, the one every 10 ms of their stamps (the engine's estimate there);
    a change at run time applies from the next wrench; time going back starts the schedule again."""
    spinner, ns = ros
    node = start(context, spinner, ns)
    assert node.settings["wrench_rate"] == 100.0
    client = spinner.add(client_node(context, ns))
    pub, (torques, wrenches) = wired(client, TORQUE, WRENCH)
    stamps, q, qd, tau = pushed

    def feed(rows: range) -> None:
        for k in rows:
            pub.publish(joint_state(q[k], qd[k], tau[k], stamps[k], list(range(6))))
        wait_until(lambda: len(torques.snapshot()) >= rows.stop, f"{rows.stop} external torques")
        time.sleep(0.2)  # any wrench in flight

    feed(range(0, 45))
    got = {stamp_to_ns(m.header.stamp): m for m in torques.snapshot()}
    r = {s: np.array(m.effort) for s, m in got.items()}
    seen = [stamp_to_ns(m.header.stamp) for m in wrenches.snapshot()]
    assert seen == [int(stamps[k]) for k in (0, 10, 20, 30, 40)], seen
    for m in wrenches.snapshot():
        k = int(np.flatnonzero(stamps == stamp_to_ns(m.header.stamp))[0])
        f = [
            m.wrench.force.x,
            m.wrench.force.y,
            m.wrench.force.z,
            m.wrench.torque.x,
            m.wrench.torque.y,
            m.wrench.torque.z,
        ]
        np.testing.assert_allclose(f, external_wrench(PUMA, q[k], r[int(stamps[k])]).wrench, rtol=0, atol=1e-9)
    assert set_parameters(client, "contact_node", wrench_rate=250.0)[0].successful
    refused = set_parameters(client, "contact_node", wrench_rate=-1.0)[0]
    assert not refused.successful and ">= 0" in refused.reason
    feed(range(45, 60))
    seen = [stamp_to_ns(m.header.stamp) for m in wrenches.snapshot()]
    assert seen[5:] == [int(stamps[k]) for k in (50, 54, 58)], seen


def set_parameters(client: Any, node_name: str, **values: Any) -> list[Any]:
    params = AsyncParameterClient(client, node_name)
    wait_until(params.services_are_ready, f"parameter services of {node_name}")
    future = params.set_parameters([Parameter(k, value=v) for k, v in values.items()])
    wait_until(future.done, "set_parameters")
    return list(future.result().results)


def test_external_torque_wrench_and_collisions_for_a_push(context: Any, ros: tuple[Spinner, str], pushed: Any) -> None:
    spinner, ns = ros
    start(context, spinner, ns, thresholds=THRESHOLDS, clear_ratio=0.5, wrench_rate=0.0)  # a wrench per state
    client = spinner.add(client_node(context, ns))
    pub, (torques, wrenches, events) = wired(client, TORQUE, WRENCH, EVENTS)
    stamps, q, qd, tau = pushed
    rng = np.random.default_rng(8)
    for k in range(len(stamps)):
        pub.publish(joint_state(q[k], qd[k], tau[k], stamps[k], list(rng.permutation(6))))
        wait_until(lambda k=k: len(torques.snapshot()) > k, f"external torque {k}")
    got = {stamp_to_ns(m.header.stamp): m for m in torques.snapshot()}
    assert sorted(got) == stamps.tolist()
    assert all(list(m.name) == NAMES for m in got.values())
    r = np.array([got[s].effort for s in stamps.tolist()])
    np.testing.assert_array_equal(np.array([got[s].position for s in stamps.tolist()]), q)
    # the engine's batch observer on the same samples, and the physics: the push, filtered
    t = (stamps - stamps[0]) * 1e-9
    expected = observe(PUMA, t, q, qd, tau, GAIN, friction=False).r
    assert np.max(np.abs(r - expected)) <= 1e-12 * np.abs(expected).max()
    assert np.max(np.abs(r[:100])) <= 1e-4  # no push, the exact model: nothing
    np.testing.assert_allclose(r[199], PUSH * (1 - math.exp(-GAIN * 0.099)), rtol=1e-4)
    # collisions: each joint raised once in the push, cleared once after, when the batch says so
    wait_until(lambda: len(events.snapshot()) >= 12, "12 collision events")
    seen = [(stamp_to_ns(e.header.stamp), e.joint, e.raised) for e in events.snapshot()]
    batch = transitions(t, r, THRESHOLDS, 0.5)
    assert seen == [(int(stamps[e.sample]), NAMES[e.joint], e.raised) for e in batch]
    for name in NAMES:
        mine = [(s, raised) for s, joint, raised in seen if joint == name]
        assert [raised for _, raised in mine] == [True, False], (name, mine)
        assert stamps[100] < mine[0][0] <= stamps[199] < mine[1][0]
    last = events.snapshot()[-1]
    assert not last.in_collision and list(last.joint_names) == NAMES
    # the wrench: the engine's estimate at each state, tool frame, the tip link's name
    wait_until(lambda: len(wrenches.snapshot()) >= len(stamps), "the wrenches")
    w = {stamp_to_ns(m.header.stamp): m for m in wrenches.snapshot()}
    for k in (150, 199, 250):
        m = w[int(stamps[k])]
        assert m.header.frame_id == PUMA.tip_link
        force, torque = m.wrench.force, m.wrench.torque
        f = [force.x, force.y, force.z, torque.x, torque.y, torque.z]
        np.testing.assert_allclose(f, external_wrench(PUMA, q[k], r[k]).wrench, rtol=0, atol=1e-9)


def test_the_node_starts_at_the_first_torque_reading_as_the_batch(
    context: Any, ros: tuple[Spinner, str], pushed: Any
) -> None:
    """Three states at rest reporting no torque, 10 ms apart (a driver before its first reading), then the
    pushed recording: the node answers 0 for them, then the batch observer's estimate of the whole recording
    (which starts at the first reading, 1e-12); no collision at start-up, and with reversal allowances its
    events are those of the batch weighing reversals from the observer's start. Taken as readings, those
    zeros would be the world holding the arm: a collision at start-up."""
    spinner, ns = ros
    extra, band = [1.0, 1.5, 1.0, 0.2, 0.2, 0.1], 0.05
    node = start(
        context, spinner, ns, thresholds=THRESHOLDS, reversal_thresholds=extra, reversal_velocity=band, clear_ratio=0.5
    )
    client = spinner.add(client_node(context, ns))
    pub, (torques, events) = wired(client, TORQUE, EVENTS)
    stamps, q, qd, tau = pushed
    stamps = np.r_[stamps[0] - np.array([30, 20, 10]) * 1_000_000, stamps]
    q, qd, tau = (
        np.vstack([np.tile(q[0], (3, 1)), q]),
        np.vstack([np.zeros((3, 6)), qd]),
        np.vstack([np.zeros((3, 6)), tau]),
    )
    for k in range(len(stamps)):
        pub.publish(joint_state(q[k], qd[k], tau[k], stamps[k], list(range(6))))
        wait_until(lambda k=k: len(torques.snapshot()) > k, f"external torque {k}")
    got = {stamp_to_ns(m.header.stamp): m for m in torques.snapshot()}
    r = np.array([got[s].effort for s in stamps.tolist()])
    t = (stamps - stamps[0]) * 1e-9
    run = observe(PUMA, t, q, qd, tau, GAIN, friction=False)
    assert run.start == 3 and not r[:4].any()
    assert np.max(np.abs(r - run.r)) <= 1e-12 * np.abs(run.r).max()
    weights = np.zeros(r.shape)
    weights[run.start :] = reversal_weights(t[run.start :], qd[run.start :], GAIN, band)
    batch = transitions(t, run.r, THRESHOLDS, 0.5, extra, weights)
    assert batch and all(t[103] < t[e.sample] for e in batch)  # none before the push
    wait_until(lambda: len(events.snapshot()) >= len(batch), "the collision events")
    time.sleep(0.2)
    seen = [(stamp_to_ns(e.header.stamp), e.joint, e.raised) for e in events.snapshot()]
    assert seen == [(int(stamps[e.sample]), NAMES[e.joint], e.raised) for e in batch]
    assert dict(node.diagnostic_values())["unread"] == "3"
    read = observe(PUMA, t, q, qd, np.where(tau == 0.0, 1e-300, tau), GAIN, friction=False)  # the zeros as readings
    assert read.start == 0 and transitions(t, read.r, THRESHOLDS, 0.5)[0].sample < 3


def test_states_queued_behind_a_newer_one_are_observed_and_the_newest_answered(
    context: Any, ros: tuple[Spinner, str], pushed: Any
) -> None:
    """The default (``answer_every_state`` false): 100 states wait in the subscription before the node is
    spun; every one goes through the observer and the detection, only the newest is answered, with the
    batch observer's estimate of the same samples; every collision event is published."""
    spinner, ns = ros
    overrides = [
        Parameter("robot_config", value="puma560"),
        Parameter("friction", value=False),
        Parameter("observer_gain", value=GAIN),
        Parameter("thresholds", value=THRESHOLDS),
    ]
    node = ContactNode(namespace=ns, context=context, parameter_overrides=overrides)  # not spun yet
    assert node.settings["answer_every_state"] is False
    client = spinner.add(client_node(context, ns))
    pub, (torques, events) = wired(client, TORQUE, EVENTS)
    stamps, q, qd, tau = (a[100:200] for a in pushed)  # the push on: every joint rises into collision
    for k in range(len(stamps)):
        pub.publish(joint_state(q[k], qd[k], tau[k], stamps[k], list(range(6))))
    time.sleep(0.5)  # all delivered, waiting in the subscription
    spinner.add(node)
    wait_until(lambda: node.observer is not None and node.observer.samples == len(stamps), "100 observed states")
    wait_until(lambda: len(torques.snapshot()) >= 1, "an answer")
    time.sleep(0.2)
    answers = torques.snapshot()
    assert 1 <= len(answers) < len(stamps) and node.caught_up == len(stamps) - len(answers)
    assert stamp_to_ns(answers[-1].header.stamp) == int(stamps[-1])
    expected = observe(PUMA, (stamps - stamps[0]) * 1e-9, q, qd, tau, GAIN, friction=False).r
    np.testing.assert_allclose(answers[-1].effort, expected[-1], rtol=1e-12, atol=1e-12)
    batch = transitions((stamps - stamps[0]) * 1e-9, expected, THRESHOLDS, 0.5)
    assert len(batch) == 6
    wait_until(lambda: len(events.snapshot()) >= len(batch), "the collision events")
    seen = [(stamp_to_ns(e.header.stamp), e.joint, e.raised) for e in events.snapshot()]
    assert seen == [(int(stamps[e.sample]), NAMES[e.joint], e.raised) for e in batch]
    for event, change in zip(events.snapshot(), batch, strict=True):  # each with r at its own state
        np.testing.assert_allclose(event.external_torque, expected[change.sample], rtol=1e-12, atol=1e-12)
    assert dict(node.diagnostic_values())["caught_up"] == str(node.caught_up)


def test_bad_states_are_skipped_and_parameters_refused_with_the_reason(
    context: Any, ros: tuple[Spinner, str], pushed: Any
) -> None:
    spinner, ns = ros
    node = start(context, spinner, ns)
    client = spinner.add(client_node(context, ns))
    diagnostics = Collector(client, DiagnosticArray, "/diagnostics")
    pub, (torques,) = wired(client, TORQUE)
    stamps, q, qd, tau = pushed
    order = list(range(6))
    good = list(range(0, 60))
    for k in good:
        if k == 30:  # bad ones in the middle: NaN effort, no effort, short effort, a repeated stamp
            nan = tau[k].copy()
            nan[3] = math.nan
            short = joint_state(q[k], qd[k], tau[k], stamps[k], order)
            short.effort = short.effort[:3]
            for msg in (
                joint_state(q[k], qd[k], nan, stamps[k], order),
                joint_state(q[k], qd[k], None, stamps[k], order),
                short,
                joint_state(q[k - 1], qd[k - 1], tau[k - 1], stamps[k - 1], order),
            ):
                count = node.stats.rejected
                pub.publish(msg)
                wait_until(lambda count=count: node.stats.rejected > count, "the rejection")
        pub.publish(joint_state(q[k], qd[k], tau[k], stamps[k], order))
        wait_until(lambda k=k: len(torques.snapshot()) > good.index(k), f"torque {k}")
    assert node.stats.rejected_by_reason == {"joint_states": 4}
    r = np.array([m.effort for m in torques.snapshot()])
    expected = observe(PUMA, (stamps[good] - stamps[0]) * 1e-9, q[good], qd[good], tau[good], GAIN, friction=False).r
    assert np.max(np.abs(r - expected)) <= 1e-12 * max(1.0, np.abs(expected).max())
    # run-time parameters: refused with the reason, or applied
    name = f"{ns}/contact_node"
    for values, reason in (
        ({"thresholds": [1.0, 2.0]}, "expected 1 or 6 values"),
        ({"thresholds": [1.0, 1.0, -1.0, 1.0, 1.0, 1.0]}, "> 0"),
        ({"observer_gain": math.nan}, "finite and > 0"),
        ({"observer_gain": "fast"}, "expected a number"),
        ({"clear_ratio": 1.5}, "clear_ratio"),
        ({"wrench_frame": "world"}, "expected one of"),
        ({"wrench_damping": -0.1}, ">= 0"),
        ({"reversal_thresholds": [1.0, 2.0]}, "expected 1 or 6 values"),
        ({"reversal_velocity": -0.05}, "finite and >= 0"),
    ):
        (result,) = set_parameters(client, name, **values)
        assert not result.successful and reason in result.reason, (values, result.reason)
    assert node.detector is None and node.observer is not None and node.observer.gain[0] == GAIN
    (ok,) = set_parameters(client, name, thresholds=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert ok.successful and node.detector is not None
    np.testing.assert_array_equal(node.detector.thresholds, [1, 2, 3, 4, 5, 6])
    (ok,) = set_parameters(client, name, observer_gain=[20.0, 20.0, 20.0, 30.0, 30.0, 30.0])
    assert ok.successful and node.observer.gain.tolist() == [20.0] * 3 + [30.0] * 3
    results = set_parameters(client, name, reversal_thresholds=2.0, reversal_velocity=[0.1] * 6)
    assert all(ok.successful for ok in results) and node.detector.reversal_thresholds.tolist() == [2.0] * 6
    assert node.detector.reversal_velocity.tolist() == [0.1] * 6
    # time going backwards: the observer starts over (r = 0) with a warning
    count = len(torques.snapshot())
    pub.publish(joint_state(q[5], qd[5], tau[5], stamps[5], order))
    wait_until(lambda: len(torques.snapshot()) > count, "the torque after the reset")
    assert not np.any(torques.snapshot()[-1].effort) and node.resets == 1

    def status() -> dict[str, str] | None:
        for array in reversed(diagnostics.snapshot()):
            for s in array.status:
                if s.name == f"robot_dynamics: {name}" and diagnostic_dict(s).get("observer_resets") == "1":
                    return diagnostic_dict(s)
        return None

    wait_until(status, "diagnostics after the reset")
    values = status()
    assert values is not None
    assert values["threshold[joint6]"] == "6" and values["observer_gain"] == "20,20,20,30,30,30"
    assert "residual[joint1]" in values and float(values["compute_p99_us"]) > 0.0


def test_a_payload_continues_the_observer_with_the_loaded_model(
    context: Any, ros: tuple[Spinner, str], pushed: Any
) -> None:
    """set_payload mid-stream: the node's r is a local observer's that switches model at the same state."""
    spinner, ns = ros
    node = start(context, spinner, ns, backend="python")  # (no native build of the loaded model)
    client = spinner.add(client_node(context, ns))
    pub, (torques,) = wired(client, TORQUE)
    set_payload = client.create_client(SetPayload, "contact_node/set_payload")
    stamps, q, qd, tau = pushed
    mass, com = 2.5, np.array([0.0, 0.02, 0.08])
    loaded = with_payload(PUMA, mass, com, np.diag([0.01, 0.012, 0.008]))
    prepare(loaded, "python")  # the test's own copy: no C build either
    local = MomentumObserver(PUMA, GAIN, friction=False)
    expected = []
    for k in range(40):
        if k == 20:
            request = Inertia(m=mass, com=Vector3(x=com[0], y=com[1], z=com[2]), ixx=0.01, iyy=0.012, izz=0.008)
            assert call(set_payload, SetPayload.Request(payload=request)).success
            assert node.observer is not None and payload_of(node.observer.model).mass == mass
            local.set_model(loaded)
        expected.append(local.update((stamps[k] - stamps[0]) * 1e-9, q[k], qd[k], tau[k]))
        pub.publish(joint_state(q[k], qd[k], tau[k], stamps[k], list(range(6))))
        wait_until(lambda k=k: len(torques.snapshot()) > k, f"torque {k}")
    r = np.array([m.effort for m in torques.snapshot()])
    np.testing.assert_allclose(r, np.array(expected), rtol=0, atol=1e-12)
    assert np.abs(r[20:] - r[19]).max() > 0.1  # the load shows: the model without it would be wrong now


def test_thresholds_of_the_wrong_length_stop_the_node_with_one_fatal_line() -> None:
    exe = Path(sys.prefix) / "lib" / "robot_dynamics" / "contact_node"
    result = subprocess.run(
        [str(exe), "--ros-args", "-p", "robot_config:=puma560", "-p", "thresholds:=[1.0, 2.0]"],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip() and "INFO" not in line]
    assert result.returncode == 1 and len(lines) == 1, lines
    assert "FATAL" in lines[0] and "thresholds: expected 1 or 6 values" in lines[0], lines
