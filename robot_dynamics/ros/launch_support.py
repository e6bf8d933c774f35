"""What the launch files start, as plain data (no rclpy, no launch imports: testable without ROS).

``launch/dynamics.launch.py`` and ``launch/simulation.launch.py`` declare :data:`DYNAMICS_ARGUMENTS`
(+ :data:`SIMULATION_ARGUMENTS`), resolve them and turn the :class:`NodeSpec` list of
:func:`dynamics_nodes` / :func:`simulation_nodes` into ``launch_ros`` nodes
(:mod:`.launch_actions`); ``robot_dynamics_bringup`` takes the same ``NAME:=VALUE`` arguments and
builds the same nodes in one process from the same specs. So both start the same nodes with the same
parameters, remappings and log level.

Rules (what a ROS 2 user expects of a launch file):

* an argument that sets a node parameter (``friction``, ``use_sim_time``, ...) is passed **only when
  given**: its default is empty, and the parameter file's value (else the node's default) holds;
* the parameter file must exist, a ``urdf`` (``.urdf`` or ``.xacro``, expanded with ``xacro``) must
  load, lists must parse, booleans must be booleans, the log level must be one: every error is raised
  (as ``LaunchArgumentError``) before any node starts;
* ``commands_topic`` renames the feed-forward output ``feedforward/commands`` (and the simulator's
  ``commands`` input with it), e.g. to ``/effort_controller/commands``;
* ``contact:=true`` adds the contact node (its own ``contact_params_file`` after ``params_file``);
* the simulator's plant (``engine``, ``plant_deviations``, ``mjcf``) and ``lockstep`` are checked as
  the node would check them (an engine it knows, files that exist, deviations only for MuJoCo,
  ``lockstep:=true`` only with ``use_sim_time:=true``, since the other nodes must run on its ``/clock``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PACKAGE = "robot_dynamics"
NODE_EXECUTABLES = {
    "feedforward_node": "feedforward_node",
    "dynamics_service_node": "dynamics_service_node",
    "simulator_node": "simulator_node",
    "contact_node": "contact_node",
}
COMMANDS_TOPIC = "feedforward/commands"
CONTACT_ANSWER = "contact_node/external_torque"
"""The contact node's answer to each state: with ``lockstep`` and ``contact`` the simulator waits for it."""
LOG_LEVELS = ("debug", "info", "warn", "error", "fatal")


class LaunchArgumentError(ValueError):
    """A launch argument that cannot be used (the message names it); raised before any node starts."""


def default_params_file(name: str = "robot_dynamics.yaml") -> str:
    """``share/robot_dynamics/config/<name>`` when installed, else the source tree's."""
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        try:
            installed = Path(get_package_share_directory(PACKAGE)) / "config" / name
            if installed.is_file():
                return str(installed)
        except (PackageNotFoundError, OSError):  # OSError: AMENT_PREFIX_PATH is not set
            pass
    except ImportError:
        pass
    return str(Path(__file__).resolve().parents[2] / "config" / name)


#: ``name: (default, description)`` of the arguments of ``dynamics.launch.py``. An empty default of
#: a parameter argument means "not given": the parameter file decides.
DYNAMICS_ARGUMENTS: dict[str, tuple[str, str]] = {
    "robot_config": ("", "bundled robot name, DH YAML path or URDF path (empty = the parameter file's, puma560)"),
    "urdf": ("", "URDF or xacro file of the robot (used instead of robot_config when given)"),
    "xacro_args": ("", "xacro arguments of a .xacro urdf, 'NAME:=VALUE NAME:=VALUE'"),
    "base_link": ("", "first link of the chain (empty = the parameter file's, else the model's root)"),
    "tip_link": ("", "last link of the chain (empty = the parameter file's, else the model's tip)"),
    "locked_joints": ("", "joints made rigid, NAME=POSITION,NAME (rad or m; NAME alone = 0)"),
    "joint_map": ("", "topic joint names of model joints, TOPIC_NAME=MODEL_NAME,..."),
    "friction": ("", "friction compensation true/false (empty = the parameter file's, true)"),
    "use_sim_time": ("", "nodes on the /clock topic's time, true/false (empty = the parameter file's, false)"),
    "use_robot_description_topic": (
        "",
        "take the URDF from the robot_description topic, true/false (empty = the parameter file's, false)",
    ),
    "log_level": ("", "log level of the nodes: debug, info, warn, error or fatal (empty = info)"),
    "commands_topic": (
        "",
        "topic of the feed-forward torques, e.g. /effort_controller/commands (empty = feedforward/commands)",
    ),
    "namespace": ("", "namespace of the nodes"),
    "params_file": (default_params_file(), "node parameter file (must exist)"),
    "contact": ("false", "also start contact_node: external joint torques, tool wrench, collision events"),
    "contact_params_file": (
        default_params_file("contact.yaml"),
        "contact_node's parameter file, applied after params_file (must exist)",
    ),
}
#: The extra arguments of ``simulation.launch.py``.
SIMULATION_ARGUMENTS: dict[str, tuple[str, str]] = {
    "robot_state_publisher": ("false", "also start robot_state_publisher with the robot's URDF"),
    "engine": ("", "simulator physics: model or mujoco (empty = the parameter file's, model)"),
    "plant_deviations": ("", "mujoco engine: YAML of the plant's deviations from the robot file (must exist)"),
    "mjcf": ("", "mujoco engine: an MJCF file instead of the robot file (must exist)"),
    "torque_sensing": ("", "joint_states effort: motor (the torque applied) or link (joint torque sensors)"),
    "lockstep": (
        "",
        "simulator as the clock (/clock; a step per answered state), true/false; needs use_sim_time:=true",
    ),
}


@dataclass(frozen=True)
class NodeSpec:
    """One node to start: ``parameters`` are applied in order (a file path, then a dict of values
    that override it), ``log_level`` empty = the default."""

    name: str
    executable: str
    namespace: str = ""
    parameters: list[str | dict[str, Any]] = field(default_factory=list)
    remappings: list[tuple[str, str]] = field(default_factory=list)
    log_level: str = ""
    package: str = PACKAGE


# ------------------------------------------------------------------------------------------------
# argument parsing
# ------------------------------------------------------------------------------------------------
def parse_bool(text: str, name: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise LaunchArgumentError(f"launch argument {name}: expected true or false, got {text!r}")


def resolve_arguments(given: Mapping[str, str], declared: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """Every declared argument's value: the given one, else the default; an unknown name is refused."""
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise LaunchArgumentError(f"unknown launch arguments {unknown} (known: {sorted(declared)})")
    return {name: str(given.get(name, default)) for name, (default, _) in declared.items()}


def parse_assignments(items: list[str], what: str) -> dict[str, str]:
    """``NAME:=VALUE`` items (the ``ros2 launch`` syntax) as a dict; LaunchArgumentError if malformed."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition(":=")
        if not sep or not name.strip():
            raise LaunchArgumentError(f"{what}: expected NAME:=VALUE, got {item!r}")
        out[name.strip()] = value
    return out


def _items(text: str) -> list[str]:
    return [item for item in (part.strip() for part in text.split(",")) if item]


def read_urdf(path: str, xacro_args: str = "") -> str:
    """The URDF text of a file; a ``.xacro`` file is expanded with ``xacro`` (``xacro_args``:
    ``NAME:=VALUE`` mappings, as on xacro's command line)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise LaunchArgumentError(f"launch argument urdf: no such file {path!r}")
    mappings = parse_assignments(shlex.split(xacro_args), "launch argument xacro_args")
    if p.suffix != ".xacro":
        if mappings:
            raise LaunchArgumentError(f"launch argument xacro_args: {path!r} is not a .xacro file")
        return p.read_text()
    import xacro

    try:
        return str(xacro.process_file(str(p), mappings=mappings).toprettyxml(indent="  "))
    except Exception as exc:  # xacro raises its own XacroException, XML errors, KeyError for args...
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise LaunchArgumentError(f"launch argument urdf: cannot expand xacro file {path!r}: {text}") from None


def check_file(path: str, name: str) -> str:
    """``path`` (``~`` expanded) if it is a file, else LaunchArgumentError naming the argument."""
    p = Path(path.strip()).expanduser()
    if not p.is_file():
        raise LaunchArgumentError(f"launch argument {name}: no such file {path!r}")
    return str(p)


def check_log_level(text: str) -> str:
    level = text.strip().lower()
    if level and level not in LOG_LEVELS:
        raise LaunchArgumentError(f"launch argument log_level: expected one of {list(LOG_LEVELS)}, got {text!r}")
    return level


# ------------------------------------------------------------------------------------------------
# the nodes
# ------------------------------------------------------------------------------------------------
def robot_parameters(args: Mapping[str, str]) -> dict[str, Any]:
    """The node parameters the arguments give (only those given): robot source, chain, locks, joint
    map and the booleans ``friction``, ``use_sim_time``, ``use_robot_description_topic``."""
    from robot_dynamics.user_input import parse_joint_map, parse_locked_joints

    params: dict[str, Any] = {}
    for name in ("friction", "use_sim_time", "use_robot_description_topic"):
        if args.get(name, "").strip():
            params[name] = parse_bool(args[name], name)
    urdf = args.get("urdf", "").strip()
    if urdf:
        if not params.get("use_robot_description_topic", False):
            params["robot_description"] = read_urdf(urdf, args.get("xacro_args", ""))
    elif args.get("xacro_args", "").strip():
        raise LaunchArgumentError("launch argument xacro_args: given without a urdf:=FILE.xacro")
    elif args.get("robot_config", "").strip():
        params["robot_config"] = args["robot_config"].strip()
    for name in ("base_link", "tip_link"):
        if args.get(name, "").strip():
            params[name] = args[name].strip()
    locks, mapping = _items(args.get("locked_joints", "")), _items(args.get("joint_map", ""))
    try:
        parse_locked_joints(locks, "launch argument locked_joints")
        parse_joint_map(mapping, "launch argument joint_map")
    except ValueError as exc:
        raise LaunchArgumentError(str(exc)) from None
    if locks:
        params["locked_joints"] = locks
    if mapping:
        params["joint_map"] = mapping
    return params


def _common(
    args: Mapping[str, str], extra: Mapping[str, Any] | None = None
) -> tuple[list[str | dict[str, Any]], str, str]:
    params_file = check_file(args["params_file"], "params_file")
    overrides = {**robot_parameters(args), **(extra or {})}
    parameters: list[str | dict[str, Any]] = [params_file, overrides] if overrides else [params_file]
    return parameters, args.get("namespace", "").strip(), check_log_level(args.get("log_level", ""))


def dynamics_nodes(given: Mapping[str, str]) -> list[NodeSpec]:
    """The nodes of ``dynamics.launch.py``: feed-forward and service nodes (+ the contact node)."""
    args = resolve_arguments(given, DYNAMICS_ARGUMENTS)
    parameters, ns, level = _common(args)
    commands = args["commands_topic"].strip()
    remap = [(COMMANDS_TOPIC, commands)] if commands else []
    nodes = [
        NodeSpec("feedforward_node", "feedforward_node", ns, parameters, remap, level),
        NodeSpec("dynamics_service_node", "dynamics_service_node", ns, parameters, [], level),
    ]
    if parse_bool(args["contact"], "contact"):
        contact_file = check_file(args["contact_params_file"], "contact_params_file")
        contact_parameters = [parameters[0], contact_file, *parameters[1:]]  # the given arguments still win
        nodes.append(NodeSpec("contact_node", "contact_node", ns, contact_parameters, [], level))
    return nodes


def plant_parameters(args: Mapping[str, str]) -> dict[str, Any]:
    """The simulator's plant and clock parameters the arguments give (only those given), checked."""
    from robot_dynamics.plant import ENGINES, TORQUE_SENSING

    params: dict[str, Any] = {}
    engine = args.get("engine", "").strip()
    if engine:
        if engine not in ENGINES:
            raise LaunchArgumentError(f"launch argument engine: expected one of {list(ENGINES)}, got {engine!r}")
        params["engine"] = engine
    for name in ("plant_deviations", "mjcf"):
        if args.get(name, "").strip():
            if engine and engine != "mujoco":
                raise LaunchArgumentError(f"launch argument {name}: only for engine:=mujoco, not engine:={engine}")
            params[name] = check_file(args[name], name)
    sensing = args.get("torque_sensing", "").strip()
    if sensing:
        if sensing not in TORQUE_SENSING:
            raise LaunchArgumentError(
                f"launch argument torque_sensing: expected one of {list(TORQUE_SENSING)}, got {sensing!r}"
            )
        params["torque_sensing"] = sensing
    if args.get("lockstep", "").strip():
        params["lockstep"] = parse_bool(args["lockstep"], "lockstep")
        sim_time = args.get("use_sim_time", "").strip()
        if params["lockstep"] and not (sim_time and parse_bool(sim_time, "use_sim_time")):
            raise LaunchArgumentError(
                "launch argument lockstep: lockstep:=true needs use_sim_time:=true "
                "(the other nodes must run on the simulator's /clock)"
            )
    return params


def simulation_nodes(given: Mapping[str, str]) -> list[NodeSpec]:
    """The nodes ``simulation.launch.py`` adds to ``dynamics.launch.py``'s: the simulator (its
    ``commands`` input on the feed-forward output) and optionally robot_state_publisher."""
    args = resolve_arguments(given, {**DYNAMICS_ARGUMENTS, **SIMULATION_ARGUMENTS})
    # the included dynamics.launch.py's own arguments (contact, ...) are checked here too: before any node
    dynamics_nodes({name: value for name, value in given.items() if name in DYNAMICS_ARGUMENTS})
    plant = plant_parameters(args)
    if plant.get("lockstep") and parse_bool(args["contact"], "contact"):
        plant["lockstep_observers"] = [CONTACT_ANSWER]  # its events are out before the next state
    parameters, ns, level = _common(args, plant)
    commands = args["commands_topic"].strip() or COMMANDS_TOPIC
    nodes = [NodeSpec("simulator_node", "simulator_node", ns, parameters, [("commands", commands)], level)]
    if parse_bool(args["robot_state_publisher"], "robot_state_publisher"):
        check_package("robot_state_publisher", "launch argument robot_state_publisher")
        rsp_params: dict[str, Any] = {"robot_description": exported_urdf(args)}
        if args["use_sim_time"].strip():
            rsp_params["use_sim_time"] = parse_bool(args["use_sim_time"], "use_sim_time")
        rsp = "robot_state_publisher"
        nodes.append(NodeSpec(rsp, rsp, ns, [rsp_params], [], level, package=rsp))
    return nodes


def check_package(package: str, what: str) -> None:
    """LaunchArgumentError unless ``package`` is installed (in the ament index)."""
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    except ImportError:
        raise LaunchArgumentError(f"{what}: package {package!r} not found (no ament index)") from None
    try:
        get_package_prefix(package)
    except (PackageNotFoundError, OSError, ValueError):
        raise LaunchArgumentError(f"{what}: package {package!r} is not installed (or not sourced)") from None


def exported_urdf(args: Mapping[str, str]) -> str:
    """URDF text for robot_state_publisher: the ``urdf`` file (xacro expanded), or the robot config
    exported to URDF."""
    if args.get("urdf", "").strip():
        return read_urdf(args["urdf"].strip(), args.get("xacro_args", ""))
    from robot_dynamics.models import DEFAULT_ROBOT, load_robot, model_to_urdf

    try:
        return model_to_urdf(load_robot(args.get("robot_config", "").strip() or DEFAULT_ROBOT))
    except (ValueError, KeyError, OSError) as exc:
        raise LaunchArgumentError(f"launch argument robot_config: {' '.join(str(exc).split())}") from None
