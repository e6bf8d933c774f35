"""Node parameters: types as ROS users write them, ranges, start-up errors and run-time refusals.

In-process nodes (``--ros-args`` given to a private context, as the executables' ``rclpy.init`` gets
them); what the executables print for the same errors: ``test_ros_processes.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from rclpy.parameter import Parameter  # noqa: E402

from robot_dynamics.ros.feedforward_node import FeedforwardNode  # noqa: E402
from robot_dynamics.ros.messages import StartupError  # noqa: E402
from robot_dynamics.ros.parameters import as_declared_type  # noqa: E402
from robot_dynamics.ros.service_node import DynamicsServiceNode  # noqa: E402
from robot_dynamics.ros.simulator_node import SimulatorNode  # noqa: E402

pytestmark = pytest.mark.ros
ROBOT = ["-p", "robot_config:=fu_two_link", "-p", "backend:=python"]


def make(cls: Any, *args: str) -> Any:
    """A node of ``cls`` started with ``--ros-args ARGS`` (the node and its context kept for cleanup)."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=["--ros-args", *ROBOT, *args])
    try:
        node = cls(context=ctx)
    except BaseException:
        rclpy.try_shutdown(context=ctx)
        raise
    _made.append((node, ctx))
    return node


_made: list[tuple[Any, Any]] = []


@pytest.fixture(autouse=True)
def _cleanup() -> Iterator[None]:
    yield
    while _made:
        node, ctx = _made.pop()
        node.destroy_node()
        rclpy.try_shutdown(context=ctx)


START_ERRORS = [
    (SimulatorNode, ["-p", "rate:=fast"], "parameter rate: expected a double (e.g. 100.0), got 'fast' (a string)"),
    (SimulatorNode, ["-p", "use_sim_time:=1"], "parameter use_sim_time: expected a bool (true or false), got 1"),
    (FeedforwardNode, ["-p", "friction:=1"], "parameter friction: expected a bool (true or false), got 1 (an integer)"),
    (
        FeedforwardNode,
        ["-p", "diagnostics_period:=-1.0"],
        "parameter diagnostics_period: must be a finite number > 0 s",
    ),
    (FeedforwardNode, ["-p", "diagnostics_period:=0.0"], "parameter diagnostics_period: must be a finite number > 0 s"),
    (FeedforwardNode, ["-p", "warning_period:=-1.0"], "parameter warning_period: must be a finite number >= 0 s"),
    (
        DynamicsServiceNode,
        ["-p", "robot_description_timeout:=-2"],
        "robot_description_timeout: must be a finite number >= 0",
    ),
    (
        DynamicsServiceNode,
        ["-p", "max_simulation_samples:=0"],
        "parameter max_simulation_samples: must be a finite number > 0",
    ),
    (
        DynamicsServiceNode,
        ["-p", "backend:=fortran"],
        "parameter backend: expected one of ['native', 'python'], got 'fortran'",
    ),
    (
        SimulatorNode,
        ["-p", "command_timeout:=-1.0"],
        "parameter command_timeout: must be a finite number >= 0 s, got -1.0",
    ),
    (
        SimulatorNode,
        ["-p", "gravity:=[true]"],
        "parameter gravity: expected a double array (e.g. [0.0, 1.5]), got [True]",
    ),
    (FeedforwardNode, ["-p", "kp:=[1.0, .nan]"], "parameter kp: gain 1 is not finite (nan)"),
    (FeedforwardNode, ["-p", "kd:=-2.0"], "parameter kd: gain 0 is negative (-2); gains must be >= 0"),
    (FeedforwardNode, ["-p", "kp:=[1.0, 2.0, 3.0]"], "parameter kp: expected 2 gains (one per joint"),
    (
        FeedforwardNode,
        ["-p", "feedforward_source:=planner"],
        "feedforward_source: expected one of ['model', 'trajectory'], got 'planner'",
    ),
]


@pytest.mark.parametrize("cls, args, message", START_ERRORS, ids=[" ".join(a) for _, a, _ in START_ERRORS])
def test_a_bad_start_up_value_is_a_startup_error_naming_it(cls: Any, args: list[str], message: str) -> None:
    with pytest.raises(StartupError) as caught:
        make(cls, *args)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_integers_are_taken_where_doubles_are_declared() -> None:
    simulator = make(SimulatorNode, "-p", "rate:=100", "-p", "gravity:=[0,0,-9]", "-p", "command_timeout:=2")
    assert simulator.get_parameter("rate").value == 100.0 and simulator.period == 0.01
    assert simulator.get_parameter("gravity").value == [0.0, 0.0, -9.0] and simulator.model.gravity.tolist() == [
        0,
        0,
        -9,
    ]
    assert as_declared_type(3, Parameter.Type.DOUBLE) == 3.0 and isinstance(
        as_declared_type(3, Parameter.Type.DOUBLE), float
    )
    with pytest.raises(ValueError, match=r"expected an integer, got 2\.5 \(a double"):
        as_declared_type(2.5, Parameter.Type.INTEGER)


def test_run_time_changes_are_checked_and_integers_taken_as_doubles() -> None:
    service = make(DynamicsServiceNode)
    (result,) = service.set_parameters([Parameter("max_simulation_duration", value=-1.0)])
    assert not result.successful and "max_simulation_duration: must be a finite number > 0 s" in result.reason
    assert service.get_parameter("max_simulation_duration").value == 600.0  # kept
    (result,) = service.set_parameters([Parameter("max_simulation_duration", value=5)])  # `ros2 param set ... 5`
    assert result.successful and service.get_parameter("max_simulation_duration").value == 5.0
    (result,) = service.set_parameters([Parameter("friction", value=1)])
    assert not result.successful and "Wrong parameter type" in result.reason  # rclpy's own refusal
    assert service.get_parameter("friction").value is True
    feedforward = make(FeedforwardNode)
    (result,) = feedforward.set_parameters([Parameter("friction_velocity", value="sideways")])
    assert not result.successful and "expected one of ['desired', 'measured'], got 'sideways'" in result.reason
    (result,) = feedforward.set_parameters([Parameter("friction", value=False)])
    assert result.successful and feedforward.friction is False
