"""Entry points of the robot_dynamics executables (``ros2 run robot_dynamics <name>``).

A top-level module on purpose: importing anything inside ``robot_dynamics`` first imports the package
(NumPy, SciPy, the engine; then rclpy), ~0.3-1 s during which Python's default handler would turn a
Ctrl-C into a ``KeyboardInterrupt`` traceback. Here the first statement of the process's own code
makes SIGINT and SIGTERM end the start-up quietly with status 0; the executable's ``main()``
(``robot_dynamics.ros.process.run_nodes``) then installs the nodes' own stop handler.
"""

from __future__ import annotations

import signal
from importlib import import_module
from typing import Any


def _stop_during_startup(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def _run(module: str) -> int:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _stop_during_startup)
    return int(import_module(module).main())


def feedforward_node() -> int:
    return _run("robot_dynamics.ros.feedforward_node")


def dynamics_service_node() -> int:
    return _run("robot_dynamics.ros.service_node")


def simulator_node() -> int:
    return _run("robot_dynamics.ros.simulator_node")


def robot_dynamics_bringup() -> int:
    return _run("robot_dynamics.ros.bringup")


def contact_node() -> int:
    return _run("robot_dynamics.ros.contact_node")
