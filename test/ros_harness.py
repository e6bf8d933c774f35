"""Helpers of the live ROS tests: nodes spun on executor threads in a private rclpy context.

No fixed sleeps for synchronisation: everything waits on a condition (matched endpoints, received
messages, ready services) with generous time-outs for a loaded 2-core machine.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node

from robot_dynamics.ros.common import stop_executors

TIMEOUT = 30.0


def wait_until(predicate: Callable[[], object], what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.005)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Spinner:
    """Spins each added node in its own SingleThreadedExecutor thread; ``close()`` tears down."""

    def __init__(self, context: rclpy.context.Context) -> None:
        self.context = context
        self._items: list[tuple[Node, SingleThreadedExecutor, threading.Thread]] = []
        self.errors: list[BaseException] = []

    def add(self, node: Node) -> Node:
        executor = SingleThreadedExecutor(context=self.context)
        executor.add_node(node)

        def spin() -> None:
            try:
                executor.spin()
            except ExternalShutdownException:
                pass
            except BaseException as exc:  # reported by close()
                self.errors.append(exc)

        thread = threading.Thread(target=spin, name=f"spin-{node.get_name()}", daemon=True)
        thread.start()
        self._items.append((node, executor, thread))
        return node

    def close(self) -> None:
        items, self._items = self._items, []
        stopped = stop_executors([e for _, e, _ in items], [t for _, _, t in items], 5.0 * len(items))
        stuck = [node.get_name() for (node, _, _), ok in zip(items, stopped, strict=True) if not ok]
        assert not stuck, f"executor threads did not stop: {stuck}"  # destroying their nodes would crash
        for node, _, _ in items:
            node.destroy_node()
        if self.errors:
            raise AssertionError(f"a node's executor raised: {self.errors[0]!r}") from self.errors[0]


class Collector:
    """Stores every message of a subscription (thread-safe append)."""

    def __init__(self, node: Node, msg_type: Any, topic: str, qos: Any = 100) -> None:
        self.messages: list[Any] = []
        self.lock = threading.Lock()
        self.subscription = node.create_subscription(msg_type, topic, self._store, qos)

    def _store(self, msg: Any) -> None:
        with self.lock:
            self.messages.append(msg)

    def snapshot(self) -> list[Any]:
        with self.lock:
            return list(self.messages)

    def clear(self) -> None:
        with self.lock:
            self.messages.clear()


def call(client: Any, request: Any, timeout: float = TIMEOUT) -> Any:
    """Call a service from a test thread (the client's node spins elsewhere)."""
    wait_until(client.service_is_ready, f"service {client.srv_name}", timeout)
    future = client.call_async(request)
    wait_until(future.done, f"response of {client.srv_name}", timeout)
    return future.result()


def interrupt(proc: subprocess.Popen[str], timeout: float = 30.0, signum: int = signal.SIGINT) -> str:
    """Ctrl-C a node process (SIGINT, as a terminal would) and return its output; killed if it hangs."""
    proc.send_signal(signum)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out
