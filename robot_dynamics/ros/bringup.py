"""``robot_dynamics_bringup``: the launch files' nodes composed in one process (no ``launch_ros`` needed).

    robot_dynamics_bringup [--simulator] [--no-feedforward] [--no-service] \\
        [--ros-args --params-file config/robot_dynamics.yaml -p robot_config:=stanford -r __ns:=/arm]

Starts the feed-forward node and the dynamics service node (``launch/dynamics.launch.py``); with
``--simulator`` also the simulator, its ``commands`` input remapped to ``feedforward/commands`` so the
feed-forward torques drive it and its ``joint_states`` feed the feed-forward node
(``launch/simulation.launch.py``). ``--ros-args`` apply to every node as with ``ros2 run``: parameter
files are keyed by node name (``/**/feedforward_node:``...), ``-p`` sets a parameter on all nodes,
``-r __ns:=/ns`` puts them all in a namespace. Each node spins in its own executor thread.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rclpy.utilities import remove_ros_args

from robot_dynamics.ros.process import NodeFactory, run_nodes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="robot_dynamics_bringup",
        description="Start the robot_dynamics nodes in one process (what the launch files start). "
        "ROS arguments follow --ros-args.",
    )
    parser.add_argument("--simulator", action="store_true", help="also start the simulator, closing the loop")
    parser.add_argument("--no-feedforward", action="store_true", help="do not start the feed-forward node")
    parser.add_argument("--no-service", action="store_true", help="do not start the dynamics service node")
    return parser


def node_factories(simulator: bool, feedforward: bool = True, service: bool = True) -> list[tuple[str, NodeFactory]]:
    from robot_dynamics.ros.feedforward_node import FeedforwardNode
    from robot_dynamics.ros.service_node import DynamicsServiceNode
    from robot_dynamics.ros.simulator_node import SimulatorNode

    factories: list[tuple[str, NodeFactory]] = []
    if feedforward:
        factories.append(("feedforward_node", FeedforwardNode))
    if service:
        factories.append(("dynamics_service_node", DynamicsServiceNode))
    if simulator:
        remap = ["--ros-args", "-r", "commands:=feedforward/commands"]
        factories.append(("simulator_node", lambda: SimulatorNode(cli_args=remap)))
    return factories


def main(args: Sequence[str] | None = None) -> int:
    argv = list(sys.argv if args is None else args)
    options = build_parser().parse_args(remove_ros_args(argv)[1:])
    factories = node_factories(options.simulator, not options.no_feedforward, not options.no_service)
    if not factories:
        print("robot_dynamics_bringup: nothing to start", file=sys.stderr)
        return 2
    return run_nodes(factories, argv)


if __name__ == "__main__":
    raise SystemExit(main())
