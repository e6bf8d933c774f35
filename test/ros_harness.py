"""Helpers of the live ROS tests: nodes spun on executor threads in a private rclpy context.

No fixed sleeps for synchronisation: everything waits on a condition (matched endpoints, received
messages, ready services) with generous time-outs for a loaded 2-core machine.
"""

from __future__ import annotations

import itertools
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node

from robot_dynamics.ros.process import stop_executors

TIMEOUT = 30.0
_names = itertools.count()


def unique_name(prefix: str) -> str:
    """A node or namespace name no other test of this session uses."""
    return f"{prefix}{next(_names)}_{int(time.monotonic() * 1000) % 100000}"


def private_context() -> Iterator[rclpy.context.Context]:
    """An initialised rclpy context of its own (a module fixture's body: ``yield from``)."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=[])
    yield ctx
    rclpy.try_shutdown(context=ctx)


def spinner_in_namespace(context: rclpy.context.Context, prefix: str) -> Iterator[tuple[Spinner, str]]:
    """A spinner and a fresh namespace for one test (a fixture's body: ``yield from``)."""
    spinner = Spinner(context)
    yield spinner, "/" + unique_name(prefix)
    spinner.close()


def client_node(context: rclpy.context.Context, ns: str, prefix: str = "test_client_") -> Node:
    """A plain node for a test's clients, publishers and subscriptions."""
    return Node(unique_name(prefix), namespace=ns, context=context)


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


def call(client: Any, request: Any, timeout: float = TIMEOUT, resend_after: float = 5.0) -> Any:
    """Call a service from a test thread (the client's node spins elsewhere).

    The request is sent again if no response came within ``resend_after`` s (doubling each time),
    until ``timeout``. Fast DDS drops a response when the server has not yet discovered the new
    client's response reader 100 ms after the request arrived (``rmw_send_response`` returns
    RMW_RET_TIMEOUT; rclpy logs "failed to send response (timeout)"): ``service_is_ready`` only
    says the client has discovered the server. A loaded machine whose discovery traffic needed a
    3 s resend lost the response for good. Every service of the package is idempotent, so
    resending is what a robust client does; the first response wins.
    """
    wait_until(client.service_is_ready, f"service {client.srv_name}", timeout)
    deadline = time.monotonic() + timeout
    futures = [client.call_async(request)]
    wait = resend_after
    while True:
        attempt_end = min(deadline, time.monotonic() + wait)
        while time.monotonic() < attempt_end:
            for future in futures:
                if future.done():
                    return future.result()
            time.sleep(0.005)
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout} s waiting for a response of {client.srv_name}"
                f" ({len(futures)} requests sent)"
            )
        futures.append(client.call_async(request))
        wait *= 2.0


class NodeProcess:
    """An installed executable run as its own process for one ``with`` block.

    On leaving the block it is stopped with a signal (``interrupt``) and its output kept in
    ``output``; a failure inside the block is re-raised with that output attached, so a CI log
    shows what the node printed (a crash, a dropped-response warning) and not only the symptom.
    """

    def __init__(self, argv: list[str], signum: int = signal.SIGINT) -> None:
        self.argv = argv
        self.signum = signum
        self.output = ""
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> subprocess.Popen[str]:
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return self.proc

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        assert self.proc is not None
        self.output = interrupt(self.proc, signum=self.signum)
        if isinstance(exc, Exception):
            name = self.argv[0].rsplit("/", 1)[-1]
            raise AssertionError(
                f"{exc}\n--- output of {name} (status {self.proc.returncode}) ---\n{self.output}"
            ) from exc

    def assert_clean_exit(self) -> None:
        """After the block: status 0, no traceback, no fatal-error stack dump in the output."""
        assert self.proc is not None and self.proc.returncode == 0, self.output
        assert "Traceback" not in self.output and "Fatal Python error" not in self.output, self.output


def interrupt(proc: subprocess.Popen[str], timeout: float = 30.0, signum: int = signal.SIGINT) -> str:
    """Ctrl-C a node process (SIGINT, as a terminal would) and return its output; killed if it hangs."""
    proc.send_signal(signum)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out
