"""Helpers of the launch files in ``launch/`` (no rclpy, no launch imports: testable without ROS).

The launch files resolve their arguments with an ``OpaqueFunction`` and call these to build the nodes'
parameters, so ``ros2 launch`` and ``robot_dynamics_bringup`` end up with the same parameters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PACKAGE = "robot_dynamics"
NODE_EXECUTABLES = {
    "feedforward_node": "feedforward_node",
    "dynamics_service_node": "dynamics_service_node",
    "simulator_node": "simulator_node",
}


def parse_bool(text: str, name: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"launch argument {name}: expected true or false, got {text!r}")


def default_params_file() -> str:
    """``share/robot_dynamics/config/robot_dynamics.yaml`` when installed, else the source tree's."""
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        try:
            installed = Path(get_package_share_directory(PACKAGE)) / "config" / "robot_dynamics.yaml"
            if installed.is_file():
                return str(installed)
        except (PackageNotFoundError, OSError):  # OSError: AMENT_PREFIX_PATH is not set
            pass
    except ImportError:
        pass
    return str(Path(__file__).resolve().parents[2] / "config" / "robot_dynamics.yaml")


def read_urdf(path: str) -> str:
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"launch argument urdf: no such file {path!r}")
    return p.read_text()


def _items(text: str) -> list[str]:
    return [item for item in (part.strip() for part in text.split(",")) if item]


def robot_parameters(
    robot_config: str,
    urdf: str,
    friction: str,
    base_link: str = "",
    tip_link: str = "",
    locked_joints: str = "",
    joint_map: str = "",
) -> dict[str, Any]:
    """Parameters shared by the nodes for the launch arguments ``robot_config``, ``urdf``, ``friction``,
    ``base_link``, ``tip_link``, ``locked_joints`` (``"NAME=POS,NAME"``) and ``joint_map``
    (``"TOPIC_NAME=MODEL_NAME,..."``); the two lists are checked here and passed as string arrays."""
    from robot_dynamics.user_input import parse_joint_map, parse_locked_joints

    params: dict[str, Any] = {"friction": parse_bool(friction, "friction")}
    if urdf.strip():
        params["robot_description"] = read_urdf(urdf)
    elif robot_config.strip():
        params["robot_config"] = robot_config.strip()
    for name, value in (("base_link", base_link), ("tip_link", tip_link)):
        if value.strip():
            params[name] = value.strip()
    locks, mapping = _items(locked_joints), _items(joint_map)
    parse_locked_joints(locks, "launch argument locked_joints")
    parse_joint_map(mapping, "launch argument joint_map")
    if locks:
        params["locked_joints"] = locks
    if mapping:
        params["joint_map"] = mapping
    return params


def exported_urdf(robot_config: str, urdf: str) -> str:
    """URDF text for robot_state_publisher: the given file, or the robot config exported to URDF."""
    if urdf.strip():
        return read_urdf(urdf)
    from robot_dynamics.models import DEFAULT_ROBOT, load_robot, model_to_urdf

    return model_to_urdf(load_robot(robot_config.strip() or DEFAULT_ROBOT))
