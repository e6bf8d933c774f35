"""Running the robot_dynamics nodes: signals, executors, stop and teardown.

``run_nodes`` is the ``main()`` of every executable (one clear fatal line and exit status 1 when the
robot description is bad); ``spin_nodes`` spins nodes in executor threads until a stop request;
:class:`StopRequest` replaces rclpy's signal handler so that Ctrl-C and SIGTERM stop cleanly.
"""

from __future__ import annotations

import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import rclpy
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.utilities import remove_ros_args

from robot_dynamics.ros.messages import StartupError, one_line

# ------------------------------------------------------------------------------------------------
# running nodes
# ------------------------------------------------------------------------------------------------
NodeFactory = Callable[[], Node]


def _fatal(name: str, message: str) -> None:
    rclpy.logging.get_logger(name).fatal(one_line(message))


def ros_arguments(argv: Sequence[str]) -> list[str]:
    """The arguments of ``argv`` that are not ROS arguments; StartupError (one line, without rcl's
    source locations) when the ``--ros-args`` are malformed: a parameter file that does not parse or
    does not exist, a dangling ``-p``. Checked before ``rclpy.init``, which would also log an extra
    ``[ERROR] [rcl]: Failed to parse global arguments`` line."""
    try:
        return list(remove_ros_args(list(argv)))
    except RuntimeError as exc:  # rclpy's RCLInvalidROSArgsError
        text = re.sub(r",? at /\S+:\d+", "", one_line(exc)).rstrip(" ,.")
        raise StartupError(f"bad --ros-args: {text.removeprefix('Failed to parse ROS arguments: ')}") from None


def make_executor(context: rclpy.context.Context | None = None) -> SingleThreadedExecutor:
    return SingleThreadedExecutor(context=context)


class StopRequest:
    """SIGINT/SIGTERM handler of the executables, installed instead of rclpy's own.

    rclpy's handler triggers every executor's SIGINT guard condition from a thread of its own;
    shutting the executors down in the main thread destroys those guard conditions, and the two
    race: a segmentation fault on Ctrl-C (seen about once in 30 stops of the bringup under load,
    in ``rmw_trigger_guard_condition`` on rclpy's signal thread). This handler only records the
    request, at every stage: the main thread looks at it between the start-up's steps (:func:`run_nodes`)
    and while the nodes spin, then stops the executors, joins their threads and destroys the nodes, in
    that order.

    It never raises. A handler that raised ``KeyboardInterrupt`` during the start-up (to cut a long
    one short) let it out wherever the main thread was: in the teardown after the node's own start-up
    error (a traceback from ``rclpy.try_shutdown`` and status -2 instead of 1: under ``ros2 launch``,
    whose SIGINT to the others after a sibling's fatal error often lands there, 2 in 20 failing
    simulation launches), or in a finaliser (``Exception ignored in: RcutilsLogger.__del__``), where
    Python prints it and drops it.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def __call__(self, signum: int, frame: Any) -> None:
        self.requested = True

    def install(self) -> None:
        """Handle SIGINT and SIGTERM from now on (main thread only); a request the handlers it replaces
        recorded in a ``requested`` attribute (the executables' own during the imports) is kept."""
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self) for s in self.SIGNALS}
            if any(getattr(handler, "requested", False) is True for handler in self._previous.values()):
                self.requested = True

    def restore(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}


def stop_executors(executors: Sequence[Executor], threads: Sequence[threading.Thread], timeout: float) -> list[bool]:
    """Shut the executors down (waking their wait sets), join their spin threads; which ones stopped.

    ``timeout`` bounds the whole join. Only a node whose thread stopped may be destroyed:
    destroying a node another thread still spins crashes rclpy.
    """
    for executor in executors:
        executor.shutdown(timeout_sec=timeout)
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    return [not thread.is_alive() for thread in threads]


def spin_nodes(
    nodes: list[Node],
    context: rclpy.context.Context | None = None,
    stop: StopRequest | None = None,
    join_timeout: float = 10.0,
) -> int:
    """Spin each node in its own executor thread until a stop request, a shutdown or a node's failure.

    Returns 1 if a node hit a StartupError. On return every executor thread has stopped, so the
    caller may destroy the nodes (destroying a node another thread still spins crashes rclpy); a
    thread that does not stop within ``join_timeout`` is named in an error and its node is left
    alone (removed from ``nodes``).
    """
    stop = stop if stop is not None else StopRequest()
    failures: list[tuple[str, BaseException]] = []
    done = threading.Event()

    def spin(node: Node, executor: SingleThreadedExecutor) -> None:
        try:
            executor.spin()
        except (ExternalShutdownException, KeyboardInterrupt):
            pass
        except BaseException as exc:  # reported by the main thread
            if node.context.ok() and not stop.requested:  # errors while stopping are not failures
                failures.append((node.get_name(), exc))
        finally:
            done.set()

    executors: list[SingleThreadedExecutor] = []
    threads: list[threading.Thread] = []
    ctx = context if context is not None else nodes[0].context
    # A signal only sets ``stop.requested``: the ``finally`` below stops every executor already started,
    # also when it arrives while the later threads start. (When the handler still raised
    # KeyboardInterrupt there, the process finalised with executor threads inside rcl_wait and
    # aborted, "terminate called without an active exception".)
    try:
        for node in nodes:
            executor = make_executor(context)
            executor.add_node(node)
            executors.append(executor)
            thread = threading.Thread(target=spin, args=(node, executor), name=f"spin-{node.get_name()}", daemon=True)
            threads.append(thread)
            thread.start()
        # poll: a signal handler must not touch a lock the main thread may hold (Event.set would)
        while not stop.requested and not done.is_set() and ctx.ok():
            time.sleep(0.05)
    finally:
        stopped = stop_executors(executors, threads, join_timeout)
        for node, ok in zip(nodes[: len(stopped)], stopped, strict=True):  # unstarted nodes are idle
            if not ok:
                _fatal(node.get_name(), f"executor thread did not stop within {join_timeout} s; node left undestroyed")
                nodes.remove(node)
    for name, exc in failures:
        if isinstance(exc, StartupError):
            _fatal(name, str(exc))
            return 1
        raise exc
    return 0


def run_nodes(factories: Sequence[tuple[str, NodeFactory]], args: Sequence[str] | None = None) -> int:
    """``main()`` of the executables: init, build the nodes, spin; exit status.

    A StartupError (or a bad ``--ros-args``) becomes one fatal log line and status 1; Ctrl-C or
    SIGTERM (what ``ros2 launch`` sends) stops the nodes cleanly with status 0 (see StopRequest),
    during the start-up at the next step: after ``rclpy.init``, after each node is built (its robot
    loaded; the first start with a robot compiles its C library, ~1-2 s).
    """
    argv = list(sys.argv if args is None else args)
    label = factories[0][0] if factories else "robot_dynamics"
    stop = StopRequest()
    stop.install()
    nodes: list[Node] = []
    try:
        if stop.requested:  # during the imports
            return 0
        try:
            ros_arguments(argv)
            rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
        except Exception as exc:  # rcl argument/parameter-file errors
            print(f"[FATAL] [{label}]: {one_line(exc)}", file=sys.stderr)
            return 1
        for name, factory in factories:
            if stop.requested:
                return 0
            try:
                nodes.append(factory())
            except StartupError as exc:
                _fatal(name, str(exc))
                return 1
        return 0 if stop.requested else spin_nodes(nodes, stop=stop)
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown()
        stop.restore()
