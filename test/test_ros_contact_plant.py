"""The contact node on the MuJoCo simulator over real DDS, in lock-step time: a push is detected.

The simulator node (``engine: mujoco``, UR5, lock-step 1 kHz) is answered by the test's controller
(gravity compensation and a PD, from test_ros_simulator_plant); the contact node reads the same
``joint_states`` (effort = the torque the simulator held over the step into each state:
``effort_timing: step``), with its thresholds from the start. (Taken as samples, the simulator's first
state — which carries no effort: nothing was applied before it — and each step's torque mixed into the
next interval show as an external torque at start-up: a false collision at a 1 N·m threshold.) A 20 N
push on the tool, scheduled on ``simulator_node/external_wrench`` from simulated time 1.5 s, raises a
collision event stamped within 10 ms of it, and nothing is raised before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

import test_ros_simulator_plant  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from ros_harness import Collector, Spinner, client_node, private_context, spinner_in_namespace, wait_until  # noqa: E402
from test_ros_simulator_plant import UR5, Controller, start_simulator  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.ros.contact_node import ContactNode  # noqa: E402
from robot_dynamics.ros.messages import DATA_QOS, stamp_to_ns  # noqa: E402
from robot_dynamics_interfaces.msg import CollisionEvent  # noqa: E402

pytestmark = pytest.mark.ros

PUSH_NS = 1_500_000_000


@pytest.fixture(scope="module")
def context() -> Iterator[Any]:
    yield from private_context()


@pytest.fixture
def ros(context: Any) -> Iterator[tuple[Spinner, str]]:
    yield from spinner_in_namespace(context, "contact_plant")


def test_the_contact_node_detects_a_push_on_the_lockstep_simulator(
    context: Any, ros: tuple[Spinner, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spinner, ns = ros
    monkeypatch.setattr(test_ros_simulator_plant, "CLAMPED_STEPS", 0)  # no deliberate kick at the start
    model = rd.load_robot(UR5)
    rd.prepare(model, "python")
    client = spinner.add(client_node(context, ns))
    controller = Controller(client, model)
    events = Collector(client, CollisionEvent, "contact_node/collision")
    overrides = {"robot_config": UR5, "backend": "python", "observer_gain": 50.0, "effort_timing": "step"}
    overrides["thresholds"] = 1.0
    contact = spinner.add(
        ContactNode(
            namespace=ns, context=context, parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()]
        )
    )
    wait_until(lambda: events.subscription.get_publisher_count() >= 1, "the collision publisher")
    # the steps wait for the contact node's answer too (lockstep_observers), as the collision case runs it
    sim = start_simulator(context, spinner, ns, lockstep_observers=["contact_node/external_torque"])
    wait_until(lambda: controller.answers() >= 1, "the first answer")
    sim.set_parameters([Parameter("lockstep_timeout", value=10.0)])
    wait_until(lambda: contact.observer is not None and contact.observer.samples >= 100, "0.1 s of observer")
    push = client.create_publisher(WrenchStamped, "simulator_node/external_wrench", DATA_QOS)
    wait_until(lambda: push.get_subscription_count() >= 1, "the simulator's external_wrench subscription")
    wrench = WrenchStamped()
    wrench.header.stamp.sec, wrench.header.stamp.nanosec = divmod(PUSH_NS, 1_000_000_000)
    wrench.wrench.force.z = -20.0
    push.publish(wrench)
    wait_until(lambda: controller.answers() >= 560 and events.snapshot(), "560 states and a collision event", 60)
    raised = [e for e in events.snapshot() if e.raised]
    stamps = [stamp_to_ns(e.header.stamp) for e in raised]
    assert stamps and min(stamps) >= PUSH_NS and min(stamps) - PUSH_NS <= 10_000_000, stamps
    assert {e.joint for e in raised} <= {"shoulder_lift_joint", "elbow_joint", "wrist_1_joint"}
    assert contact.observer is not None and contact.observer.samples >= 200 and contact.resets == 0
    assert dict(sim.diagnostic_values())["observer_joined[contact_node/external_torque]"] == "true"
