"""Launch files, their helpers and the node parameter file."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml

from robot_dynamics.ros.launch_support import default_params_file, parse_bool, robot_parameters

REPO = Path(__file__).resolve().parent.parent
LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.py"))
COMMON_ARGUMENTS = {
    "robot_config",
    "urdf",
    "friction",
    "namespace",
    "params_file",
    "base_link",
    "tip_link",
    "locked_joints",
    "joint_map",
}


def test_there_are_the_two_launch_files() -> None:
    assert [p.name for p in LAUNCH_FILES] == ["dynamics.launch.py", "simulation.launch.py"]


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_files_compile_and_declare_their_arguments(path: Path) -> None:
    source = path.read_text()
    compile(source, str(path), "exec")
    tree = ast.parse(source)
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert "generate_launch_description" in functions
    arguments = next(
        n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "ARGUMENTS"
    )
    assert isinstance(arguments, ast.Dict)
    names = {k.value for k in arguments.keys if isinstance(k, ast.Constant)}
    assert names >= COMMON_ARGUMENTS, names
    executables = {
        kw.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for kw in node.keywords
        if kw.arg == "executable" and isinstance(kw.value, ast.Constant)
    }
    assert {"feedforward_node", "dynamics_service_node"} <= executables
    if path.name == "simulation.launch.py":
        assert {"simulator_node", "robot_state_publisher"} <= executables
        assert "feedforward/commands" in source


def _launch_ros_available() -> bool:
    # The repository's own launch/ folder is a namespace package named "launch": ask for launch_ros.
    return importlib.util.find_spec("launch_ros") is not None


@pytest.mark.skipif(not _launch_ros_available(), reason="launch_ros is not installable from PyPI on this machine")
@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_generate_launch_description(path: Path) -> None:
    from launch import LaunchDescription

    spec = importlib.util.spec_from_file_location(path.stem.replace(".", "_"), path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    assert isinstance(description, LaunchDescription)
    declared = {a.name for a in description.get_launch_arguments()}
    assert declared >= COMMON_ARGUMENTS


def test_launch_argument_helpers(tmp_path: Path) -> None:
    assert parse_bool("True", "x") is True and parse_bool("off", "x") is False
    with pytest.raises(ValueError, match="launch argument friction: expected true or false, got 'maybe'"):
        parse_bool("maybe", "friction")
    assert robot_parameters("stanford", "", "false") == {"friction": False, "robot_config": "stanford"}
    urdf = tmp_path / "r.urdf"
    urdf.write_text("<robot name='r'/>")
    assert robot_parameters("stanford", str(urdf), "true") == {
        "friction": True,
        "robot_description": "<robot name='r'/>",
    }
    chain = robot_parameters("", "", "true", " l0 ", "tcp", "f1, f2=0.04", "fer_joint1=panda_joint1")
    assert chain == {
        "friction": True,
        "base_link": "l0",
        "tip_link": "tcp",
        "locked_joints": ["f1", "f2=0.04"],
        "joint_map": ["fer_joint1=panda_joint1"],
    }
    with pytest.raises(ValueError, match="launch argument joint_map: expected BAG_NAME=MODEL_NAME, got 'fer'"):
        robot_parameters("", "", "true", joint_map="fer")
    with pytest.raises(ValueError, match="launch argument locked_joints f=x: 'x' is not a number"):
        robot_parameters("", "", "true", locked_joints="f=x")
    with pytest.raises(FileNotFoundError, match="launch argument urdf: no such file"):
        robot_parameters("", str(tmp_path / "missing.urdf"), "true")
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
