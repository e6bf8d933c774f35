"""Node parameters: types as ROS users write them, ranges, start-up errors and run-time refusals.

In-process nodes (``--ros-args`` given to a private context, as the executables' ``rclpy.init`` gets
them); what the executables print for the same errors: ``test_ros_processes.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from rclpy.parameter import Parameter  # noqa: E402

from robot_dynamics.models import load_robot  # noqa: E402
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
        "parameter backend: expected one of ['auto', 'native', 'python'], got 'fortran'",
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


def test_an_optional_parameter_is_the_empty_string_until_set_and_can_be_unset_again() -> None:
    """``''`` = unset (ROS cannot type an empty list): a concrete value rclpy's parameter service returns;
    ``[]`` (which rcl's parser turns into no value) means unset too; other parameters refuse no value."""
    from robot_dynamics.ros.contact_node import ContactNode
    from robot_dynamics.ros.parameters import UNSET

    simulator = make(SimulatorNode, "-p", "gravity:=[]", "-p", "initial_velocity:=''")
    for name in ("gravity", "initial_position", "initial_velocity", "locked_joints", "joint_map"):
        assert simulator.get_parameter(name).type_ == Parameter.Type.STRING, name
        assert simulator.param(name) == UNSET and simulator.optional_param(name) is None, name
    np.testing.assert_array_equal(simulator.model.gravity, load_robot("fu_two_link").gravity)  # the model's
    assert "'' = unset" in simulator.describe_parameter("gravity").description
    with pytest.raises(StartupError, match=r"parameter friction: got \[\] \(an empty list\), which is no value"):
        make(FeedforwardNode, "-p", "friction:=[]")
    with pytest.raises(StartupError, match=r"parameter gravity: expected a double array .*got 'up'.*'' = unset"):
        make(SimulatorNode, "-p", "gravity:=up")

    feedforward = make(FeedforwardNode, "-p", "kp:=[100, 50]", "-p", "locked_joints:=''")
    np.testing.assert_array_equal(feedforward.control.settings.kp, [100.0, 50.0])
    (result,) = feedforward.set_parameters([Parameter("kp", value=UNSET)])  # `ros2 param set ... kp "''"`
    assert result.successful and feedforward.param("kp") == UNSET
    np.testing.assert_array_equal(feedforward.control.settings.kp, [0.0, 0.0])  # unset = 0
    (result,) = feedforward.set_parameters([Parameter("kd", value=[3, 4])])
    assert result.successful
    np.testing.assert_array_equal(feedforward.control.settings.kd, [3.0, 4.0])
    (result,) = feedforward.set_parameters([Parameter("kd", Parameter.Type.NOT_SET)])  # `kd: []` by ros2 param load
    assert result.successful and feedforward.param("kd") == UNSET
    np.testing.assert_array_equal(feedforward.control.settings.kd, [0.0, 0.0])
    (result,) = feedforward.set_parameters([Parameter("friction", Parameter.Type.NOT_SET)])
    assert not result.successful and feedforward.param("friction") is True  # rclpy's own refusal
    (result,) = feedforward.set_parameters([Parameter("locked_joints", value=["joint1"])])
    assert not result.successful and "read-only" in result.reason

    contact = make(ContactNode)
    assert contact.param("thresholds") == UNSET and contact.detector is None  # no collision detection
    (result,) = contact.set_parameters([Parameter("thresholds", value=[2.0, 1.0])])
    assert result.successful and contact.detector is not None
    (result,) = contact.set_parameters([Parameter("thresholds", value="")])
    assert result.successful and contact.detector is None
    (result,) = contact.set_parameters([Parameter("observer_gain", value="")])  # not optional: no unset
    assert not result.successful and "observer_gain: expected a number" in result.reason
    (result,) = contact.set_parameters([Parameter("observer_gain", Parameter.Type.NOT_SET)])  # would undeclare it
    assert not result.successful and result.reason == "observer_gain: no value given"
    assert contact.param("observer_gain") == 50.0

    service = make(DynamicsServiceNode)
    (result,) = service.set_parameters([Parameter("gravity", value=[0, 0, -9])])  # start-up only, but typed
    assert result.successful and service.get_parameter("gravity").value == [0.0, 0.0, -9.0]
    assert service.get_parameter("gravity").type_ == Parameter.Type.DOUBLE_ARRAY
    (result,) = service.set_parameters([Parameter("gravity", value=[True])])
    assert not result.successful and "gravity: expected a double array (e.g. [0.0, 1.5]), got [True]" in result.reason
    (result,) = service.set_parameters([Parameter("gravity", value=UNSET)])
    assert result.successful and service.optional_param("gravity") is None
    service.set_parameters([Parameter("gravity", value=[0.0, 0.0, -9.0])])
    (result,) = service.set_parameters([Parameter("gravity", Parameter.Type.BOOL_ARRAY, [])])  # `ros2 param set` of []
    assert result.successful and service.param("gravity") == UNSET


# ------------------------------------------------------------------------------------------------
# as ROS tools read them: every parameter has a value, over DDS, and a dump of them reloads
# ------------------------------------------------------------------------------------------------
ROBOT_ARGS = ["-p", "robot_config:=fu_two_link", "-p", "backend:=python"]
#: executable, arguments before --ros-args, extra --ros-args, the nodes it starts
PROCESSES = {
    "feedforward_node": (
        "feedforward_node",
        [],
        ["-p", "gravity:=[0, 0, -9]", "-p", "kp:=[100, 50]", "-p", "joint_map:=a=joint1"],
        ["feedforward_node"],
    ),
    "dynamics_service_node": ("dynamics_service_node", [], [], ["dynamics_service_node"]),
    "simulator_node_model": ("simulator_node", [], ["-p", "initial_position:=[0.1, 0.2]"], ["simulator_node"]),
    "simulator_node_mujoco": ("simulator_node", [], ["-p", "engine:=mujoco"], ["simulator_node"]),
    "contact_node": ("contact_node", [], ["-p", "thresholds:=[2.0, 1.0]"], ["contact_node"]),
    "bringup": (
        "robot_dynamics_bringup",
        ["--simulator", "contact:=true", "engine:=mujoco"],
        [],
        ["feedforward_node", "dynamics_service_node", "contact_node", "simulator_node"],
    ),
}


def dump_yaml(node_name: str, names: list[str], values: list[Any]) -> str:
    """What ``ros2 param dump`` writes for a node's parameters (ros2param's ``verb/dump.py``: names
    sorted, split into nested keys at ``.``, values as rclpy converts them, ``yaml.dump``)."""
    import yaml
    from rclpy.parameter import PARAMETER_SEPARATOR_STRING, parameter_value_to_python

    def insert(tree: dict[str, Any], key: str, value: Any) -> None:
        head, _, rest = key.partition(PARAMETER_SEPARATOR_STRING)
        if rest:
            insert(tree.setdefault(head, {}), rest, value)
        else:
            tree[key] = value

    parameters: dict[str, Any] = {}
    for name, value in zip(names, values, strict=True):
        insert(parameters, name, parameter_value_to_python(value))
    return str(yaml.dump({node_name: {"ros__parameters": parameters}}, default_flow_style=False))


def read_parameters(client: Any, node_name: str) -> tuple[list[str], list[Any]]:
    """list_parameters, then get_parameters and describe_parameters of every listed name, over DDS:
    one value and one descriptor per name, none without a value."""
    from rcl_interfaces.msg import ParameterType
    from rcl_interfaces.srv import DescribeParameters, GetParameters, ListParameters
    from ros_harness import call

    def service(kind: Any, name: str) -> Any:
        return client.create_client(kind, f"{node_name}/{name}")

    listed = call(service(ListParameters, "list_parameters"), ListParameters.Request(), timeout=60.0)
    names = sorted(listed.result.names)
    assert "use_sim_time" in names, (node_name, names)
    values = list(call(service(GetParameters, "get_parameters"), GetParameters.Request(names=names)).values)
    assert len(values) == len(names), (node_name, names, values)  # rclpy answers [] if any has no value
    unset = [n for n, v in zip(names, values, strict=True) if v.type == ParameterType.PARAMETER_NOT_SET]
    assert unset == [], f"{node_name}: parameters without a value {unset}"
    described = call(service(DescribeParameters, "describe_parameters"), DescribeParameters.Request(names=names))
    assert [d.name for d in described.descriptors] == names, node_name
    assert [d.type for d in described.descriptors] == [v.type for v in values], node_name
    return names, values


@pytest.mark.parametrize("case", sorted(PROCESSES))
def test_every_parameter_has_a_value_over_dds_and_a_dump_of_them_reloads(case: str, tmp_path: Path) -> None:
    """What ``ros2 param dump`` needs (a value for every listed name) and what it writes, reloaded by
    a fresh process through rcl's parser (``--params-file``), gives the same values and types."""
    from rclpy.node import Node
    from rclpy.parameter import parameter_value_to_python
    from ros_harness import NodeProcess, Spinner, unique_name, wait_until
    from test_ros_processes import executable_path

    executable, arguments, extra, expected = PROCESSES[case]
    ns = "/" + unique_name(f"dump_{case}_")
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=[])
    spinner = Spinner(ctx)
    try:
        client = spinner.add(Node(unique_name("dump_client_"), namespace=ns, context=ctx))

        def nodes_of_the_process() -> list[str]:
            found = sorted(f"{ns}/{name}" for name, space in client.get_node_names_and_namespaces() if space == ns)
            return [name for name in found if not name.startswith(f"{ns}/dump_client_")]

        def read_all(ros_args: list[str]) -> dict[str, tuple[list[str], list[Any]]]:
            argv = [executable_path(executable), *arguments, "--ros-args", "-r", f"__ns:={ns}", *ros_args]
            process = NodeProcess(argv)
            with process:
                wanted = {f"{ns}/{name}" for name in expected}
                wait_until(lambda: wanted <= set(nodes_of_the_process()), f"the nodes {sorted(wanted)}", 60.0)
                wait_until(lambda: process.proc is not None and process.proc.poll() is None, "the process")
                # (the simulator's companion node, which only holds its command subscriptions, has no
                # parameter services: ros2 param sees none)
                read = {name: read_parameters(client, name) for name in sorted(wanted)}
            process.assert_clean_exit()
            wait_until(lambda: nodes_of_the_process() == [], "the nodes to leave the graph", 60.0)
            return read

        first = read_all([*ROBOT_ARGS, *extra])
        files = []
        for k, (name, (names, values)) in enumerate(sorted(first.items())):
            files += ["--params-file", str(tmp_path / f"dump_{k}.yaml")]
            (tmp_path / f"dump_{k}.yaml").write_text(dump_yaml(name, names, values))
        again = read_all(files)
        assert sorted(again) == sorted(first)
        for name, (names, values) in first.items():
            names2, values2 = again[name]
            assert names2 == names, name
            for key, v, v2 in zip(names, values, values2, strict=True):
                assert (v2.type, parameter_value_to_python(v2)) == (v.type, parameter_value_to_python(v)), (name, key)
    finally:
        spinner.close()
        rclpy.try_shutdown(context=ctx)
