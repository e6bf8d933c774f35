"""``robot_dynamics_bringup``: the launch files' nodes in one process (no ``launch_ros`` needed).

    robot_dynamics_bringup [--simulator] [--no-feedforward] [--no-service] [NAME:=VALUE ...] \\
        [--ros-args -p robot_config:=stanford -r __ns:=/arm ...]

``NAME:=VALUE`` are the launch files' arguments (``robot_config:=``, ``urdf:=robot.urdf.xacro``,
``friction:=``, ``use_sim_time:=``, ``log_level:=``, ``commands_topic:=``, ``params_file:=``, ...;
:mod:`.launch_support`), turned into the same nodes, parameters and remappings as
``launch/dynamics.launch.py`` starts (with ``--simulator``: ``launch/simulation.launch.py``, the
simulator's ``commands`` input on the feed-forward output). As there, an argument that sets a
parameter overrides the parameter file only when given, and a bad argument stops everything before
any node starts (one line, exit status 2); a node that cannot start (bad robot, bad parameter, a
malformed ``--ros-args`` parameter file) is one FATAL line and exit status 1.

``--ros-args`` (after the ``NAME:=VALUE`` arguments) apply to every node as with ``ros2 run``: parameter
files keyed by node name (``/**/feedforward_node:``...) on top of ``params_file``, ``-p`` for all
nodes, ``-r __ns:=/ns`` for a namespace. Each node spins in its own executor thread.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from rclpy.parameter import Parameter

from robot_dynamics.ros.launch_support import (
    DYNAMICS_ARGUMENTS,
    PACKAGE,
    SIMULATION_ARGUMENTS,
    LaunchArgumentError,
    NodeSpec,
    default_params_file,
    dynamics_nodes,
    parse_assignments,
    simulation_nodes,
)
from robot_dynamics.ros.process import NodeFactory, run_nodes

PROG = "robot_dynamics_bringup"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Start the robot_dynamics nodes in one process (what the launch files start). "
        "ROS arguments follow --ros-args.",
    )
    parser.add_argument("--simulator", action="store_true", help="also start the simulator, closing the loop")
    parser.add_argument("--no-feedforward", action="store_true", help="do not start the feed-forward node")
    parser.add_argument("--no-service", action="store_true", help="do not start the dynamics service node")
    parser.add_argument(
        "arguments",
        nargs="*",
        metavar="NAME:=VALUE",
        help=f"launch arguments: {', '.join(DYNAMICS_ARGUMENTS)}; with --simulator also "
        f"{', '.join(SIMULATION_ARGUMENTS)}",
    )
    return parser


def node_specs(
    given: dict[str, str], simulator: bool, feedforward: bool = True, service: bool = True
) -> list[NodeSpec]:
    """The nodes the launch file would start for the arguments ``given`` (LaunchArgumentError if bad)."""
    dynamics_given = {k: v for k, v in given.items() if k in DYNAMICS_ARGUMENTS or not simulator}
    skip = {"feedforward_node": not feedforward, "dynamics_service_node": not service}
    specs = [spec for spec in dynamics_nodes(dynamics_given) if not skip.get(spec.name, False)]
    if simulator:
        specs += simulation_nodes(given)
    foreign = [spec.name for spec in specs if spec.package != PACKAGE]
    if foreign:
        raise LaunchArgumentError(f"{PROG} starts only robot_dynamics nodes, not {foreign}: use ros2 launch")
    return specs


def node_factory(spec: NodeSpec, context: Any = None) -> NodeFactory:
    """The spec's node, built in this process: remappings as node arguments, the parameter values as
    overrides (they win over every parameter file, as the launch file's do)."""
    from robot_dynamics.ros.contact_node import ContactNode
    from robot_dynamics.ros.feedforward_node import FeedforwardNode
    from robot_dynamics.ros.service_node import DynamicsServiceNode
    from robot_dynamics.ros.simulator_node import SimulatorNode

    cls: Any = {
        "feedforward_node": FeedforwardNode,
        "dynamics_service_node": DynamicsServiceNode,
        "simulator_node": SimulatorNode,
        "contact_node": ContactNode,
    }[spec.executable]
    overrides = [
        Parameter(name, value=value)
        for values in spec.parameters
        if isinstance(values, dict)
        for name, value in values.items()
    ]
    remaps = [item for source, target in spec.remappings for item in ("-r", f"{source}:={target}")]
    kwargs: dict[str, Any] = {"parameter_overrides": overrides}
    if remaps:
        kwargs["cli_args"] = ["--ros-args", *remaps]
    if spec.namespace:
        kwargs["namespace"] = spec.namespace
    if context is not None:
        kwargs["context"] = context
    return lambda: cls(**kwargs)


def init_arguments(
    specs: Sequence[NodeSpec], ros_args: Sequence[str], params_file: bool = True, contact_params_file: bool = True
) -> list[str]:
    """rclpy's arguments: the parameter files (in the specs' order) and log level of the specs first,
    so the user's own ``--ros-args`` come after, as they would on ``ros2 run``. Without a
    ``params_file:=`` (``contact_params_file:=``) argument the default file is not passed: the nodes'
    defaults are its values, and its node-specific entries would otherwise take precedence over the
    user's ``-p``; a file that was given is passed."""
    defaults = {default_params_file()} if not params_file else set()
    defaults |= {default_params_file("contact.yaml")} if not contact_params_file else set()
    given = dict.fromkeys(p for spec in specs for p in spec.parameters if isinstance(p, str))
    files = [f for f in given if f not in defaults]
    levels = sorted({spec.log_level for spec in specs if spec.log_level})
    ours = [item for f in files for item in ("--params-file", f)] + [
        item for level in levels for item in ("--log-level", level)
    ]
    return [PROG, *(["--ros-args", *ours] if ours else []), *ros_args]


def main(args: Sequence[str] | None = None) -> int:
    argv = list(sys.argv if args is None else args)
    split = argv.index("--ros-args") if "--ros-args" in argv else len(argv)
    options = build_parser().parse_args(argv[1:split])
    try:
        given = parse_assignments(options.arguments, "launch arguments")
        specs = node_specs(given, options.simulator, not options.no_feedforward, not options.no_service)
    except LaunchArgumentError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    if not specs:
        print(f"{PROG}: error: nothing to start", file=sys.stderr)
        return 2
    factories = [(spec.name, node_factory(spec)) for spec in specs]
    files_given = "params_file" in given, "contact_params_file" in given
    return run_nodes(factories, init_arguments(specs, argv[split:], *files_given))


if __name__ == "__main__":
    raise SystemExit(main())
