"""Launch files, what they start (launch_support), the bringup that starts the same, the parameter file.

Without ``launch``/``launch_ros`` (no PyPI wheels) the launch files are compiled and everything they
decide is tested through :mod:`robot_dynamics.ros.launch_support`, which they and the bringup share.
With both importable (``test_under_launch_*``), the launch files are run for real by
``launch.LaunchService`` with the executables found through a temporary ament prefix.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from robot_dynamics.models import load_robot
from robot_dynamics.ros.launch_support import (
    DYNAMICS_ARGUMENTS,
    SIMULATION_ARGUMENTS,
    LaunchArgumentError,
    default_params_file,
    dynamics_nodes,
    parse_bool,
    robot_parameters,
    simulation_nodes,
)

REPO = Path(__file__).resolve().parent.parent
LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.py"))
XACRO = """<?xml version="1.0"?>
<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="xarm">
  <xacro:arg name="mass" default="1.0"/>
  <xacro:macro name="arm_link" params="name z">
    <link name="${name}">
      <inertial><origin xyz="0 0 ${z}"/><mass value="$(arg mass)"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    </link>
  </xacro:macro>
  <link name="base"/>
  <xacro:arm_link name="l1" z="0.1"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
</robot>
"""


def test_there_are_the_two_launch_files() -> None:
    assert [p.name for p in LAUNCH_FILES] == ["dynamics.launch.py", "simulation.launch.py"]


def _names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
    }


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_files_compile_and_build_on_launch_support(path: Path) -> None:
    source = path.read_text()
    tree = ast.parse(source)
    compile(source, str(path), "exec")
    assert "generate_launch_description" in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    names = _names(tree)
    assert {"node_actions", "resolved_arguments", "DYNAMICS_ARGUMENTS"} <= names  # required nodes, shared specs
    if path.name == "simulation.launch.py":  # built on dynamics.launch.py, not a copy of it
        assert {"IncludeLaunchDescription", "simulation_nodes", "SIMULATION_ARGUMENTS"} <= names
        assert "dynamics.launch.py" in source and "dynamics_nodes" not in names


def test_the_launch_arguments() -> None:
    assert set(DYNAMICS_ARGUMENTS) == {
        "robot_config",
        "urdf",
        "xacro_args",
        "base_link",
        "tip_link",
        "locked_joints",
        "joint_map",
        "friction",
        "use_sim_time",
        "use_robot_description_topic",
        "log_level",
        "commands_topic",
        "namespace",
        "params_file",
        "contact",
        "contact_params_file",
    }
    assert set(SIMULATION_ARGUMENTS) == {
        "robot_state_publisher",
        "engine",
        "plant_deviations",
        "mjcf",
        "torque_sensing",
        "lockstep",
    }
    # a parameter argument is passed only when given: its default is "not given"
    for name in ("friction", "use_sim_time", "use_robot_description_topic", "robot_config", "log_level"):
        assert DYNAMICS_ARGUMENTS[name][0] == ""
    for name in ("engine", "plant_deviations", "mjcf", "torque_sensing", "lockstep"):
        assert SIMULATION_ARGUMENTS[name][0] == ""


def test_contact_adds_the_contact_node_with_its_own_parameter_file(tmp_path: Path) -> None:
    assert [n.name for n in dynamics_nodes({})] == ["feedforward_node", "dynamics_service_node"]
    ff, _, contact = dynamics_nodes({"contact": "true", "friction": "false", "namespace": "arm"})
    assert contact.executable == "contact_node" and contact.namespace == "arm"
    assert contact.parameters == [default_params_file(), default_params_file("contact.yaml"), {"friction": False}]
    assert ff.parameters == [default_params_file(), {"friction": False}]  # the others do not read it
    assert Path(contact.parameters[1]).name == "contact.yaml" and Path(contact.parameters[1]).is_file()
    mine = tmp_path / "mine_contact.yaml"
    mine.write_text("/**/contact_node:\n  ros__parameters:\n    observer_gain: 80.0\n")
    assert dynamics_nodes({"contact": "on", "contact_params_file": str(mine)})[2].parameters[1] == str(mine)
    with pytest.raises(LaunchArgumentError, match=r"launch argument contact_params_file: no such file '/nope\.yaml'"):
        dynamics_nodes({"contact": "true", "contact_params_file": "/nope.yaml"})
    with pytest.raises(LaunchArgumentError, match="launch argument contact: expected true or false"):
        dynamics_nodes({"contact": "maybe"})


def test_the_simulators_plant_and_lockstep_arguments(tmp_path: Path) -> None:
    deviations = REPO / "config" / "plant_deviations.yaml"
    (simulator,) = simulation_nodes(
        {
            "engine": "mujoco",
            "plant_deviations": str(deviations),
            "torque_sensing": "link",
            "lockstep": "true",
            "use_sim_time": "true",
        }
    )
    assert simulator.parameters[1] == {
        "use_sim_time": True,
        "engine": "mujoco",
        "plant_deviations": str(deviations),
        "torque_sensing": "link",
        "lockstep": True,
    }
    assert simulation_nodes({})[0].parameters == [default_params_file()]  # not given: the file decides
    # with the contact node in lock-step, each step waits for its answer too (its events come first)
    given = {"lockstep": "true", "use_sim_time": "true", "contact": "true"}
    assert simulation_nodes(given)[0].parameters[1]["lockstep_observers"] == ["contact_node/external_torque"]
    assert "lockstep_observers" not in simulation_nodes({**given, "lockstep": "false"})[0].parameters[1]
    ff = dynamics_nodes({"use_sim_time": "true"})[0]
    assert "engine" not in ff.parameters[1]  # plant parameters only for the simulator
    for given, message in (
        ({"engine": "bullet"}, r"launch argument engine: expected one of \['model', 'mujoco'\], got 'bullet'"),
        ({"engine": "mujoco", "plant_deviations": "/no/dev.yaml"}, "launch argument plant_deviations: no such file"),
        ({"engine": "model", "plant_deviations": str(deviations)}, "only for engine:=mujoco, not engine:=model"),
        ({"mjcf": str(tmp_path / "arm.xml")}, "launch argument mjcf: no such file"),
        ({"lockstep": "true"}, r"lockstep:=true needs use_sim_time:=true"),
        ({"torque_sensing": "joint"}, r"torque_sensing: expected one of \['motor', 'link'\], got 'joint'"),
        ({"lockstep": "true", "use_sim_time": "false"}, r"lockstep:=true needs use_sim_time:=true"),
        ({"lockstep": "sometimes"}, "launch argument lockstep: expected true or false"),
        # the included file's arguments too, before the simulator is started
        ({"contact": "true", "contact_params_file": "/no/contact.yaml"}, "contact_params_file: no such file"),
    ):
        with pytest.raises(LaunchArgumentError, match=message):
            simulation_nodes(given)


def test_parameter_arguments_override_the_params_file_only_when_given(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("/**/feedforward_node:\n  ros__parameters:\n    friction: false\n")
    ff, service = dynamics_nodes({"params_file": str(mine)})
    assert ff.parameters == [str(mine)] and service.parameters == [str(mine)]  # the file decides
    ff, _ = dynamics_nodes({"params_file": str(mine), "friction": "true", "use_sim_time": "True"})
    assert ff.parameters == [str(mine), {"friction": True, "use_sim_time": True}]  # given: after the file
    assert dynamics_nodes({})[0].parameters == [default_params_file()]


def test_use_sim_time_log_level_and_the_commands_topic() -> None:
    given = {"use_sim_time": "true", "log_level": "DEBUG", "commands_topic": "/effort_controller/commands"}
    ff, service = dynamics_nodes(given)
    assert ff.parameters[1] == {"use_sim_time": True} and ff.log_level == service.log_level == "debug"
    assert ff.remappings == [("feedforward/commands", "/effort_controller/commands")] and service.remappings == []
    (simulator,) = simulation_nodes(given)
    assert simulator.remappings == [("commands", "/effort_controller/commands")]  # the loop stays closed
    assert simulation_nodes({})[0].remappings == [("commands", "feedforward/commands")]
    with pytest.raises(LaunchArgumentError, match="launch argument log_level: expected one of"):
        dynamics_nodes({"log_level": "loud"})
    with pytest.raises(LaunchArgumentError, match=r"unknown launch arguments \['frction'\]"):
        dynamics_nodes({"frction": "false"})


def test_a_xacro_urdf_is_expanded_with_its_arguments(tmp_path: Path) -> None:
    path = tmp_path / "arm.urdf.xacro"
    path.write_text(XACRO)
    params = robot_parameters({"urdf": str(path), "xacro_args": "mass:=2.5"})
    model = load_robot(params["robot_description"])
    assert model.joint_names == ["j1"] and model.joints[0].link.mass == 2.5
    assert load_robot(robot_parameters({"urdf": str(path)})["robot_description"]).joints[0].link.mass == 1.0
    broken = tmp_path / "broken.urdf.xacro"
    broken.write_text(XACRO.replace("${z}", "${undefined_z}"))
    with pytest.raises(LaunchArgumentError, match=r"launch argument urdf: cannot expand xacro file .*broken"):
        robot_parameters({"urdf": str(broken)})


def test_bad_arguments_are_refused_before_any_node(tmp_path: Path) -> None:
    with pytest.raises(LaunchArgumentError, match=r"launch argument params_file: no such file '/nonexistent\.yaml'"):
        dynamics_nodes({"params_file": "/nonexistent.yaml"})
    # robot_state_publisher is checked before a node starts (the included nodes are not spawned yet)
    with pytest.raises(LaunchArgumentError, match="robot_state_publisher: package 'robot_state_publisher'"):
        simulation_nodes({"robot_state_publisher": "true"})
    with pytest.raises(LaunchArgumentError, match="launch argument friction: expected true or false, got 'maybe'"):
        dynamics_nodes({"friction": "maybe"})
    assert parse_bool("True", "x") is True and parse_bool("off", "x") is False


def test_launch_argument_helpers(tmp_path: Path) -> None:
    assert robot_parameters({"robot_config": "stanford", "friction": "false"}) == {
        "friction": False,
        "robot_config": "stanford",
    }
    urdf = tmp_path / "r.urdf"
    urdf.write_text("<robot name='r'/>")
    assert robot_parameters({"robot_config": "stanford", "urdf": str(urdf)}) == {
        "robot_description": "<robot name='r'/>"
    }
    topic = robot_parameters({"urdf": str(urdf), "use_robot_description_topic": "true"})
    assert topic == {"use_robot_description_topic": True}  # the URDF comes from the topic then
    chain = robot_parameters(
        {"base_link": " l0 ", "tip_link": "tcp", "locked_joints": "f1, f2=0.04", "joint_map": "fer_joint1=panda_joint1"}
    )
    assert chain == {
        "base_link": "l0",
        "tip_link": "tcp",
        "locked_joints": ["f1", "f2=0.04"],
        "joint_map": ["fer_joint1=panda_joint1"],
    }
    with pytest.raises(LaunchArgumentError, match="launch argument joint_map: expected BAG_NAME=MODEL_NAME, got 'fer'"):
        robot_parameters({"joint_map": "fer"})
    with pytest.raises(LaunchArgumentError, match="launch argument locked_joints f=x: 'x' is not a number"):
        robot_parameters({"locked_joints": "f=x"})
    with pytest.raises(LaunchArgumentError, match="launch argument urdf: no such file"):
        robot_parameters({"urdf": str(tmp_path / "missing.urdf")})
    assert Path(default_params_file()).is_file()


def _parameter_file() -> dict[str, Any]:
    data = yaml.safe_load((REPO / "config" / "robot_dynamics.yaml").read_text())
    assert isinstance(data, dict)
    return data


def test_parameter_file_sections() -> None:
    data = _parameter_file()
    assert set(data) == {"/**", "/**/feedforward_node", "/**/dynamics_service_node", "/**/simulator_node"}
    for section in data.values():
        assert set(section) == {"ros__parameters"}


@pytest.mark.ros
def test_every_parameter_in_the_file_is_declared_by_its_node() -> None:
    rclpy = pytest.importorskip("rclpy")
    from robot_dynamics.ros.feedforward_node import FeedforwardNode
    from robot_dynamics.ros.service_node import DynamicsServiceNode
    from robot_dynamics.ros.simulator_node import SimulatorNode

    data = _parameter_file()
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=["--ros-args", "--params-file", str(REPO / "config" / "robot_dynamics.yaml")])
    try:
        for cls, name in (
            (FeedforwardNode, "feedforward_node"),
            (DynamicsServiceNode, "dynamics_service_node"),
            (SimulatorNode, "simulator_node"),
        ):
            node = cls(namespace="/param_file_check", context=ctx)
            try:
                expected = {**data["/**"]["ros__parameters"], **data[f"/**/{name}"]["ros__parameters"]}
                for key, value in expected.items():
                    assert node.has_parameter(key), f"{name} does not declare {key}"
                    assert node.get_parameter(key).value == value, (name, key)
            finally:
                node.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)


# ------------------------------------------------------------------------------------------------
# the bringup starts what the launch files start
# ------------------------------------------------------------------------------------------------
@pytest.mark.ros
def test_the_bringup_builds_the_launch_files_nodes(tmp_path: Path) -> None:
    """Same arguments, same nodes: parameters (file, then the given arguments), remappings, sim time."""
    rclpy = pytest.importorskip("rclpy")
    from robot_dynamics.ros.bringup import init_arguments, node_factory, node_specs

    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "/**:\n  ros__parameters:\n    robot_config: fu_two_link\n    backend: python\n"
        "/**/feedforward_node:\n  ros__parameters:\n    friction: false\n"
    )
    ns = f"/bringup_specs_{os.getpid()}"
    cases = [
        ({}, {"friction": False, "use_sim_time": False}, "feedforward/commands"),
        (
            {"friction": "true", "use_sim_time": "true", "commands_topic": "/effort_controller/commands"},
            {"friction": True, "use_sim_time": True},
            "/effort_controller/commands",
        ),
    ]
    for extra, expected, commands in cases:
        given = {"params_file": str(mine), "namespace": ns, **extra}
        specs = node_specs(given, simulator=True)
        assert [s.name for s in specs] == ["feedforward_node", "dynamics_service_node", "simulator_node"]
        ctx = rclpy.Context()
        rclpy.init(context=ctx, args=init_arguments(specs, [], params_file=True))
        nodes: list[Any] = []
        try:
            nodes = [node_factory(spec, ctx)() for spec in specs]
            ff, _, simulator = nodes
            assert ff.get_namespace() == ns and ff.model.name == "fu_two_link"
            for name, value in expected.items():
                assert ff.get_parameter(name).value == value, (extra, name)
            topic = commands if commands.startswith("/") else f"{ns}/{commands}"
            assert ff.commands_pub.topic_name == topic
            # real time: the commands are taken by the stepping thread, from its companion node's subscriptions
            assert simulator.realtime.intake is not None and topic in {
                sub.topic_name for sub, _ in simulator.realtime.intake.inputs
            }
        finally:
            for node in nodes:
                node.destroy_node()
            rclpy.try_shutdown(context=ctx)


def test_the_bringup_passes_the_parameter_files_that_were_given(tmp_path: Path) -> None:
    from robot_dynamics.ros.bringup import init_arguments, node_specs

    mine = tmp_path / "contact.yaml"
    mine.write_text("/**/contact_node:\n  ros__parameters:\n    observer_gain: 80.0\n")
    defaults = node_specs({"contact": "true"}, simulator=False)
    assert init_arguments(defaults, [], params_file=False, contact_params_file=False) == ["robot_dynamics_bringup"]
    given = node_specs({"contact": "true", "contact_params_file": str(mine)}, simulator=False)
    assert init_arguments(given, ["-p", "x:=1"], params_file=False, contact_params_file=True) == [
        "robot_dynamics_bringup", "--ros-args", "--params-file", str(mine), "-p", "x:=1",
    ]  # fmt: skip
    both = init_arguments(given, [], params_file=True, contact_params_file=True)
    assert both[2:] == ["--params-file", default_params_file(), "--params-file", str(mine)]  # params_file first


@pytest.mark.ros
def test_the_bringup_builds_the_contact_node_and_a_lockstep_mujoco_simulator(tmp_path: Path) -> None:
    rclpy = pytest.importorskip("rclpy")
    from robot_dynamics.ros.bringup import init_arguments, node_factory, node_specs

    mine = tmp_path / "mine.yaml"
    mine.write_text("/**:\n  ros__parameters:\n    robot_config: fu_two_link\n    backend: python\n")
    deviations = tmp_path / "two_link_plant.yaml"
    deviations.write_text("damping: 0.5\nfriction: [0.2, 0.1]\narmature: 0.01\n")
    contact_file = tmp_path / "contact.yaml"
    contact_file.write_text("/**/contact_node:\n  ros__parameters:\n    observer_gain: 80.0\n")
    given = {
        "params_file": str(mine),
        "namespace": f"/bringup_contact_{os.getpid()}",
        "contact": "true",
        "contact_params_file": str(contact_file),
        "engine": "mujoco",
        "plant_deviations": str(deviations),
        "lockstep": "true",
        "use_sim_time": "true",
    }
    specs = node_specs(given, simulator=True, service=False)
    assert [s.name for s in specs] == ["feedforward_node", "contact_node", "simulator_node"]
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=init_arguments(specs, [], params_file=True))
    nodes: list[Any] = []
    try:
        nodes = [node_factory(spec, ctx)() for spec in specs]
        _, contact, simulator = nodes
        assert contact.get_parameter("observer_gain").value == 80.0  # from the given contact file
        assert contact.get_parameter("use_sim_time").value is True
        assert simulator.get_parameter("engine").value == "mujoco" and simulator.get_parameter("lockstep").value
        assert simulator.get_parameter("plant_deviations").value == str(deviations)
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)


# ------------------------------------------------------------------------------------------------
# under the real launch / launch_ros (not installable from PyPI: run by hand with them on PYTHONPATH)
# ------------------------------------------------------------------------------------------------
def _launch_ros_available() -> bool:
    # The repository's own launch/ folder is a namespace package named "launch": ask for launch_ros.
    return importlib.util.find_spec("launch_ros") is not None


under_launch = pytest.mark.skipif(
    not _launch_ros_available(), reason="launch_ros is not installable from PyPI on this machine"
)

RUN_LAUNCH = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from launch import LaunchDescription, LaunchService
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
path, *args = sys.argv[1:]
service = LaunchService(argv=args, noninteractive=True)
arguments = [tuple(a.split(":=", 1)) for a in args]
source = PythonLaunchDescriptionSource(path)
service.include_launch_description(LaunchDescription([IncludeLaunchDescription(source, launch_arguments=arguments)]))
sys.exit(service.run())
"""


@pytest.fixture(scope="module")
def ament_prefix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An ament prefix where launch_ros finds ``robot_dynamics``'s executables (an editable install has none)."""
    prefix = tmp_path_factory.mktemp("ament_prefix")
    index = prefix / "share" / "ament_index" / "resource_index" / "packages"
    index.mkdir(parents=True)
    (index / "robot_dynamics").write_text("")
    (prefix / "lib").mkdir()
    (prefix / "lib" / "robot_dynamics").symlink_to(Path(sys.prefix) / "lib" / "robot_dynamics")
    yield f"{prefix}{os.pathsep}{os.environ.get('AMENT_PREFIX_PATH', sys.prefix)}"


def _node_processes(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


class Launch:
    """A launch file run by ``launch.LaunchService`` in its own process."""

    def __init__(self, prefix: str, file: str, *args: str) -> None:
        env = {**os.environ, "AMENT_PREFIX_PATH": prefix, "PYTHONUNBUFFERED": "1"}
        self.marker = f"launch_test_{os.getpid()}_{time.monotonic_ns()}"
        argv = [sys.executable, "-c", RUN_LAUNCH, str(REPO / "launch" / file), f"namespace:=/{self.marker}", *args]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)

    def wait(self, timeout: float = 60.0) -> tuple[int, str]:
        out, _ = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out

    def stop(self) -> tuple[int, str]:
        self.proc.send_signal(2)
        return self.wait()

    def leftovers(self) -> list[int]:
        return _node_processes(self.marker)


def _get_parameters(node: Any, target: str, names: list[str]) -> list[Any]:
    from rcl_interfaces.srv import GetParameters
    from rclpy.parameter import parameter_value_to_python
    from ros_harness import call

    client = node.create_client(GetParameters, f"{target}/get_parameters")
    response = call(client, GetParameters.Request(names=names), timeout=60.0)
    return [parameter_value_to_python(v) for v in response.values]


@under_launch
@pytest.mark.ros
def test_under_launch_a_failing_node_fails_the_launch_and_stops_the_others(ament_prefix: str, tmp_path: Path) -> None:
    launch = Launch(ament_prefix, "dynamics.launch.py", "robot_config:=does_not_exist")
    status, out = launch.wait()
    assert status != 0 and "required node" in out, out
    assert launch.leftovers() == [], out
    bad = tmp_path / "bad_integrator.yaml"
    bad.write_text("/**/simulator_node:\n  ros__parameters:\n    integrator: bogus\n")
    launch = Launch(ament_prefix, "simulation.launch.py", f"params_file:={bad}", "robot_config:=fu_two_link")
    status, out = launch.wait()
    assert status != 0 and "required node simulator_node exited with status 1" in out, out
    time.sleep(1.0)
    assert launch.leftovers() == [], out


@under_launch
@pytest.mark.ros
@pytest.mark.parametrize(
    "args, message",
    [
        (["robot_state_publisher:=true"], "package 'robot_state_publisher' is not installed"),
        (["params_file:=/nonexistent.yaml"], "launch argument params_file: no such file"),
        (["engine:=mujoco", "lockstep:=true"], "lockstep:=true needs use_sim_time:=true"),
        (["contact:=true", "contact_params_file:=/nonexistent.yaml"], "contact_params_file: no such file"),
    ],
    ids=["robot_state_publisher_missing", "params_file_missing", "lockstep_without_sim_time", "contact_file_missing"],
)
def test_under_launch_a_bad_argument_fails_before_any_node(ament_prefix: str, args: list[str], message: str) -> None:
    launch = Launch(ament_prefix, "simulation.launch.py", *args)
    status, out = launch.wait()
    assert status != 0 and message in out and "process started" not in out, out
    assert launch.leftovers() == [], out


@under_launch
@pytest.mark.ros
def test_under_launch_arguments_params_file_sim_time_and_commands_topic(ament_prefix: str, tmp_path: Path) -> None:
    rclpy = pytest.importorskip("rclpy")
    from rclpy.node import Node

    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "/**:\n  ros__parameters:\n    robot_config: fu_two_link\n    backend: python\n"
        "/**/feedforward_node:\n  ros__parameters:\n    friction: false\n"
    )
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=[])
    from ros_harness import Spinner

    spinner = Spinner(ctx)
    try:
        client = spinner.add(Node(f"launch_param_client_{os.getpid()}", context=ctx))
        for extra, friction, sim_time in (([], False, False), (["friction:=true", "use_sim_time:=true"], True, True)):
            launch = Launch(
                ament_prefix,
                "simulation.launch.py",
                f"params_file:={mine}",
                "commands_topic:=/effort_controller/commands",
                "log_level:=warn",
                *extra,
            )
            try:
                ns = f"/{launch.marker}"
                assert _get_parameters(client, f"{ns}/feedforward_node", ["friction", "use_sim_time"]) == [
                    friction,
                    sim_time,
                ]
                assert _get_parameters(client, f"{ns}/simulator_node", ["use_sim_time"]) == [sim_time]
                # the graph shows nodes and their topics a moment after their parameters answer; real time: the
                # simulator's commands are subscribed by its companion node (ros.md)
                topic, deadline, seen = "/effort_controller/commands", time.monotonic() + 10.0, {}
                while True:
                    nodes = set(client.get_node_names_and_namespaces())
                    if {("feedforward_node", ns), ("simulator_node_commands", ns)} <= nodes:
                        seen = {
                            "published": dict(client.get_publisher_names_and_types_by_node("feedforward_node", ns)),
                            "subscribed": dict(
                                client.get_subscriber_names_and_types_by_node("simulator_node_commands", ns)
                            ),
                        }
                        if all(topic in names for names in seen.values()):
                            break
                    assert time.monotonic() < deadline, (nodes, seen)
                    time.sleep(0.05)
            finally:
                status, out = launch.stop()
            assert status == 0, out
            assert "] [INFO] [" not in out, (
                out
            )  # log_level:=warn reached the nodes (launch's own lines start with [INFO])
            assert launch.leftovers() == [], out
    finally:
        spinner.close()
        rclpy.try_shutdown(context=ctx)
