"""Entry points of the robot_dynamics executables (``ros2 run robot_dynamics <name>``).

A top-level module on purpose: importing anything inside ``robot_dynamics`` first imports the package
(NumPy, SciPy, the engine; then rclpy), ~0.3-1 s during which Python's default handler would turn a
Ctrl-C into a ``KeyboardInterrupt`` traceback. Here the first statement of the process's own code
makes SIGINT and SIGTERM a recorded request: the imports finish, and the executable then exits
quietly with status 0 instead of starting its nodes. (Raising from the handler instead would stop
the imports wherever they are, a finaliser included, where Python prints the exception and drops
it.) The executable's ``main()`` (``robot_dynamics.ros.process.run_nodes``) installs the nodes' own
stop handler, which takes over a request recorded here.

Once ``main()`` returned, both signals are ignored: only the interpreter's and the middleware's
teardown is left (~0.1-0.2 s), and Python resets its own handlers first, so a signal then ended the
process with status -2 instead of its own (under ``ros2 launch``, almost every node stopped after a
sibling's fatal error had failed itself and was exiting). SIGKILL still ends it.
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


SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _run(module: str) -> int:
    stop = _StopDuringStartup()
    for signum in SIGNALS:
        signal.signal(signum, stop)
    main = import_module(module).main
    status = 0 if stop.requested else int(main())
    for signum in SIGNALS:  # the status stands (SIG_IGN outlives the interpreter's own teardown)
        signal.signal(signum, signal.SIG_IGN)
    return status


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
