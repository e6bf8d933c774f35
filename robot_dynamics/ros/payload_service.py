"""The private ``~/set_payload`` service of the feed-forward, dynamics service and simulator nodes: a
tool payload.

Request ``robot_dynamics_interfaces/SetPayload``: a ``geometry_msgs/Inertia`` in the tool frame (mass,
centre of mass, inertia about the centre of mass); mass 0 clears the payload. The node's model becomes
``load_payload(unloaded, payload)`` (:mod:`robot_dynamics.payload`) without a restart; a new payload
replaces the previous one. The name is private (``/<ns>/<node>/set_payload``) because the nodes each
have one and usually share a namespace (the simulator stands for the real robot: set its payload to
simulate the real load, the others' to compensate it).

The swap and the native backend: a changed model has a new fingerprint, so its native library must be
traced and compiled (1.5-3 s) unless it is cached. The service never makes a node wait for that:

1. the loaded model is pinned to the Python backend (:func:`prepare` with ``"python"``) and its Python
   programs are traced (tens of ms) — in a worker thread for the feed-forward node, whose coroutine
   callback awaits it while the executor keeps serving joint states with the previous model; then,
   in the executor thread, it replaces the node's model and the response is sent (so a response means
   "in effect");
2. when the node runs the native backend, a child process builds the loaded model's library into the
   on-disk cache (a process, not a thread: tracing is Python and would hold the interpreter lock the
   executor needs — ``bench/bench_payload.py`` measures both); a thread of the node then loads it from
   the cache (milliseconds) and switches the *same* model object to it. Torques are the same either
   way (the native library rounds like the Python programs).

Clearing (mass 0) returns the original model, whose backend was prepared at start-up. A new robot model
(``robot_description`` topic) clears the payload. Diagnostics: ``payload`` (the current payload),
``payload_backend`` (``native``, ``python``, ``python (native compiling)``), ``payload_swap_ms`` (from
request to swap, last accepted request), ``payload_native_s`` (from request to native, last payload),
``payload_requests_accepted``.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Any

import numpy as np
from rclpy.task import Future

import robot_dynamics
from robot_dynamics.dynamics import prepare
from robot_dynamics.errors import ModelError, RobotDynamicsError
from robot_dynamics.model import RobotModel
from robot_dynamics.payload import NO_PAYLOAD, Payload, check_payload, load_payload, without_payload

_srv: Any = import_module("robot_dynamics_interfaces.srv")
SetPayload = _srv.SetPayload

SOURCE = "set_payload request"
_COMPILE = """
import os, pickle, sys
os.nice(10)  # below the node: the build must not take CPU time from the joint-state loop
try:  # Linux: end with the node (PR_SET_PDEATHSIG = 1) instead of finishing a build nobody waits for
    import ctypes, signal
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)
except (AttributeError, OSError):
    pass
from robot_dynamics.dynamics import prepare
sys.exit(0 if prepare(pickle.load(sys.stdin.buffer), "native") == "native" else 3)
"""


def payload_from_msg(inertia: Any) -> Payload:
    """A checked :class:`Payload` of a ``geometry_msgs/Inertia`` (ModelError naming the field)."""
    c = inertia.com
    tensor = np.array(
        [
            [inertia.ixx, inertia.ixy, inertia.ixz],
            [inertia.ixy, inertia.iyy, inertia.iyz],
            [inertia.ixz, inertia.iyz, inertia.izz],
        ],
        dtype=np.float64,
    )
    return check_payload(inertia.m, (c.x, c.y, c.z), tensor, f"{SOURCE}: payload")


def compile_native_elsewhere(model: RobotModel, timeout: float = 120.0) -> None:
    """Build ``model``'s native library into the on-disk cache in a child Python process.

    The child imports this very ``robot_dynamics`` (its folder first on ``PYTHONPATH``) and inherits the
    environment (``$ROBOT_DYNAMICS_CACHE``, ``$CC``), so it fills the cache this process reads.
    RobotDynamicsError with the child's last output lines when it fails (the caller stays on Python).
    """
    package_root = str(Path(robot_dynamics.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    result = subprocess.run(
        [sys.executable, "-c", _COMPILE],
        input=pickle.dumps(model),
        capture_output=True,
        timeout=timeout,
        check=False,
        env=env,
    )
    if result.returncode != 0:
        output = (result.stderr or result.stdout).decode(errors="replace").strip().splitlines()
        raise RobotDynamicsError(f"native build process exited with {result.returncode}: {' | '.join(output[-3:])}")


class PayloadSwitch:
    """The payload state of one node and its ``set_payload`` handler.

    ``install(model)`` is the node's swap: called in the executor thread with the loaded (or unloaded)
    model; it must make the node use that model from its next callback on (one attribute assignment of
    what its callbacks read). ``on_model(model)`` is called for every model the node loads itself
    (start-up, a new ``robot_description``): that model is the new unloaded one and the payload is
    cleared.
    """

    def __init__(
        self,
        node: Any,
        install: Callable[[RobotModel], None],
        warm: Callable[[RobotModel], object] | None = None,
        compile_native: Callable[[RobotModel], None] = compile_native_elsewhere,
    ) -> None:
        self.node = node
        self.install = install
        self.warm = warm
        self.compile_native = compile_native
        self.unloaded: RobotModel | None = None
        self.payload: Payload = NO_PAYLOAD
        self.backend = "python"
        self.swap_seconds = 0.0
        self.native_seconds = 0.0
        self.accepted = 0
        self._requests = 0  # executor thread only
        self._committed = 0
        self._generation = 0
        self._lock = threading.Lock()
        self._settled = threading.Event()
        self._settled.set()

    # -- node hooks ---------------------------------------------------------------------------
    def on_model(self, model: RobotModel) -> None:
        with self._lock:
            if not self.payload.is_empty and self.unloaded is not None:
                self.node.get_logger().warning("new robot model: the payload is cleared (call set_payload again)")
            self.unloaded = without_payload(model)
            self.payload = NO_PAYLOAD
            self.backend = str(self.node.backend)
            self._generation += 1
            self._settled.set()

    def _ticket(self) -> int:
        """Requests are numbered on arrival; one that finishes after a later one was applied is refused."""
        self._requests += 1
        return self._requests

    def _loaded_model(self, request: Any) -> tuple[Payload, RobotModel, bool]:
        """The checked payload, the model carrying it and whether it is a new model (not the original)."""
        payload = payload_from_msg(request.payload)
        unloaded = self.unloaded
        if unloaded is None:
            raise ModelError(SOURCE, "", "no robot model yet (waiting for robot_description)")
        model = load_payload(unloaded, payload)
        return payload, model, model is not unloaded

    def _python_ready(self, model: RobotModel) -> RobotModel:
        """Pin a new model to Python until its native library is built, and trace its programs now."""
        prepare(model, "python")
        if self.warm is not None:
            self.warm(model)
        return model

    def _commit(self, payload: Payload, model: RobotModel, new: bool, t0: float, ticket: int) -> str:
        """Make ``model`` the node's (executor thread); start the native build; the response message."""
        if ticket < self._committed:
            raise ModelError(SOURCE, "", "superseded by a later set_payload request (not applied)")
        self._committed = ticket
        compiling = new and self.node.backend == "native"
        with self._lock:
            self._generation += 1
            generation = self._generation
            if compiling:
                self._settled.clear()
        self.install(model)  # the node's swap (under its own model lock)
        with self._lock:
            self.payload = payload
            self.accepted += 1
            if compiling:
                self.backend = "python (native compiling)"
            else:
                self.backend = str(self.node.backend)
                self._settled.set()
            what = "cleared" if payload.is_empty else f"set: {payload.describe()}"
            message = f"payload {what}; {self.backend} backend"  # before the build thread may change it
        self.swap_seconds = time.perf_counter() - t0
        if compiling:
            threading.Thread(
                target=self._go_native, args=(model, generation, t0), name="payload-native", daemon=True
            ).start()
        self.node.get_logger().info(f"{message} ({self.swap_seconds * 1e3:.1f} ms)")
        return message

    def handle(self, request: Any, response: Any) -> None:
        """Apply a request in the calling thread; ModelError (a ValueError, the model unchanged) if refused.

        Tracing the new model's Python programs (tens of ms) happens in this call: for nodes whose
        callbacks may wait that long (the dynamics service node). See :meth:`serve` for the other kind.
        """
        t0 = time.perf_counter()
        ticket = self._ticket()
        payload, model, new = self._loaded_model(request)
        if new:
            self._python_ready(model)
        response.message = self._commit(payload, model, new, t0, ticket)

    async def serve(self, request: Any, response: Any) -> Any:
        """The service callback of a real-time node (the feed-forward node): a coroutine.

        The request is checked at once; the new model's Python programs are traced in a worker thread
        while the executor keeps serving joint states (with the previous model); the swap itself and
        the response follow in the executor thread. So the response still means "in effect", and the
        executor is never blocked for more than an interpreter time slice.
        """
        t0 = time.perf_counter()
        ticket = self._ticket()
        try:
            payload, model, new = self._loaded_model(request)
            if new:
                executor = self.node.executor
                ready: Future = Future(executor=executor)
                ready.add_done_callback(lambda _: None)  # completing it from the worker wakes the executor

                def work() -> None:
                    error: Exception | None = None
                    try:
                        self._python_ready(model)
                    except Exception as exc:  # reported in the response
                        error = exc
                    try:
                        if error is None:
                            ready.set_result(model)
                        else:
                            ready.set_exception(error)
                    except Exception:  # the executor is gone (the node is stopping): nobody waits
                        pass

                threading.Thread(target=work, name="payload-python", daemon=True).start()
                await ready
                ready.result()
            response.message = self._commit(payload, model, new, t0, ticket)
        except (ValueError, ArithmeticError) as exc:
            return self._refuse(response, " ".join(str(exc).split()))
        except Exception as exc:  # a service must answer, the node must live
            self.node.get_logger().error(f"set_payload: internal error: {exc!r}")
            return self._refuse(response, f"internal error: {' '.join(repr(exc).split())}")
        response.success = True
        return response

    def _refuse(self, response: Any, message: str) -> Any:
        response = type(response)()
        response.success = False
        response.message = message
        self.node.reject("set_payload", message)
        return response

    # -- native backend in the background ---------------------------------------------------------
    def _go_native(self, model: RobotModel, generation: int, t0: float) -> None:
        try:
            if generation != self._generation:
                return  # superseded before it started
            self.compile_native(model)
            with self._lock:
                if generation != self._generation:
                    return
            backend = prepare(model, "native")  # the cached library: milliseconds
            if self.warm is not None:
                self.warm(model)
        except Exception as exc:  # a payload must never take the node down: it stays on Python
            prepare(model, "python")
            backend = f"python (native build failed: {' '.join(str(exc).split())[:200]})"
        with self._lock:
            if generation == self._generation:
                self.backend = backend
                self.native_seconds = time.perf_counter() - t0
                self._settled.set()

    def wait_settled(self, timeout: float | None = None) -> bool:
        """Wait until the current payload's backend is final (native built, or given up)."""
        return self._settled.wait(timeout)

    def diagnostic_values(self) -> list[tuple[str, str]]:
        return [
            ("payload", self.payload.describe()),
            ("payload_backend", self.backend),
            ("payload_swap_ms", f"{self.swap_seconds * 1e3:.2f}"),
            ("payload_native_s", f"{self.native_seconds:.3f}"),
            ("payload_requests_accepted", str(self.accepted)),
        ]


__all__ = ["PayloadSwitch", "SetPayload", "compile_native_elsewhere", "payload_from_msg"]
