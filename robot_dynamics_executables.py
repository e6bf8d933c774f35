"""Entry points of the robot_dynamics executables (``ros2 run robot_dynamics <name>``).

A top-level module on purpose: importing anything inside ``robot_dynamics`` first imports the package
(NumPy, SciPy, the engine; then rclpy), ~0.3-1 s during which Python's default handler would turn a
Ctrl-C into a ``KeyboardInterrupt`` traceback. Here the first statement of the process's own code
makes SIGINT and SIGTERM a recorded request: the imports finish, and the executable then exits
quietly with status 0 instead of starting its nodes. (Raising from the handler instead would stop
the imports wherever they are, a finaliser included, where Python prints the exception and drops
it.) The executable's ``main()`` (``robot_dynamics.ros.process.run_nodes``) installs the nodes' own
stop handler, which takes over a request recorded here.
"""

from __future__ import annotations

import signal
from importlib import import_module
from typing import Any


class _StopDuringStartup:
    """SIGINT/SIGTERM handler while the package imports: records the request (``requested``)."""

    def __init__(self) -> None:
        self.requested = False

    def __call__(self, signum: int, frame: Any) -> None:
        self.requested = True


def _run(module: str) -> int:
    stop = _StopDuringStartup()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)
    main = import_module(module).main
    return 0 if stop.requested else int(main())


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
