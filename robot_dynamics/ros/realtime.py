"""Real time in the simulator: its stepping loop, and the loop latency as the plant sees it.

:class:`RealTimeStepping`: the simulator node's real-time part (its ``thread_priority`` parameter,
the stepping thread, the command latency and their diagnostics), built from the two below.

:class:`PeriodicThread`: a wall-clock loop on a thread of its own, ``tick()`` once per period at
absolute deadlines.

Why not an rclpy timer: a timer runs in the node's executor, between its message callbacks. At 1 kHz
Python's executor spends more time choosing the next callback (rebuilding its wait set over every
subscription, service and timer of the node) than the plant spends stepping, and a tick waits behind
whatever callback is running. On a 2-core machine with the controller beside it, the simulator then
kept ~890 of 1000 ticks a second. Here a thread sleeps to the next deadline (absolute: the rate does
not drift with the tick's own duration), runs the tick, and goes on; the executor only handles the
messages.

A tick that starts more than a whole period late skips the deadlines it missed (counted in
``overruns``) instead of running them back to back: the tick itself advances by the elapsed time.

:class:`CommandIntake`: the commands, too, are taken by the stepping thread, at the start of each tick,
not called back by the executor. Their subscriptions belong to a companion node no executor spins
(``<node>_commands``, in the node's namespace, subscribed to the topics as the node resolves them). A
command that arrives between two ticks is applied at the next tick either way; what the executor added
was work and delay. Measured on the UR5 closed loop at 1 kHz (three processes on two cores): with the
executor the simulator process used ~73 % of a core and ran a command's handler ~0.4 ms (median) after
the middleware had received it; taken here, ~40 %.

:class:`LatencyRecord`: latencies and their quantiles. The simulator keeps the joint state → command
latency of the loop in one, measured where it matters, at the plant: a controller's command carries
the stamp of the state it answers (the feed-forward node copies it), so its receipt time here (the
middleware's) minus that stamp is the whole round trip (state written, read by the controller,
computed, command written, received here), on the one clock of this machine. (The feed-forward node
keeps the ages of the states it answers in another: the first half of that trip.)
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile

from robot_dynamics.ros.messages import stamp_to_ns, waiting_messages


class PeriodicThread:
    """``tick()`` every ``period`` s on a daemon thread until :meth:`stop`; ``on_error(exc)`` is told
    of an exception a tick raised (the loop goes on).

    ``priority`` > 0 runs the thread under Linux's ``SCHED_FIFO`` at that priority (1–99), as
    ros2_control's controller manager runs its loop: on a busy machine the tick then comes when it is
    due instead of when the scheduler gets round to it. It needs the right to (``CAP_SYS_NICE``, or an
    ``rtprio`` limit in /etc/security/limits.conf); without it ``warn`` is told why and the thread runs
    under the normal scheduler. ``scheduler`` says which it got.

    ``clock`` and ``sleep`` are the monotonic clock and the sleep the loop keeps its deadlines with
    (``time.monotonic``, ``time.sleep``; a test gives its own to check the schedule without waiting).
    """

    def __init__(
        self,
        period: float,
        tick: Callable[[], None],
        on_error: Callable[[Exception], None],
        name: str,
        priority: int = 0,
        warn: Callable[[str], object] = print,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        if not period > 0.0:
            raise ValueError(f"period must be positive, got {period}")
        if not 0 <= priority <= 99:
            raise ValueError(f"priority must be 0 (normal scheduler) to 99, got {priority}")
        self.period, self.priority, self._warn = period, priority, warn
        self.scheduler = "normal"
        self.ticks = 0
        self.overruns = 0  # deadlines skipped because a tick started more than a period late
        self.errors = 0
        self._tick, self._on_error = tick, on_error
        self._clock, self._sleep = clock, sleep
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> bool:
        """Stop after the current tick; whether the thread ended within ``timeout``."""
        self._stopping = True
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _raise_priority(self) -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self.priority))  # 0: this thread
        except (OSError, AttributeError) as exc:  # AttributeError: not Linux
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.scheduler = f"normal (SCHED_FIFO {self.priority} refused: {reason})"
            self._warn(f"stepping thread: SCHED_FIFO priority {self.priority} refused ({reason}); normal scheduler")
        else:
            self.scheduler = f"SCHED_FIFO {self.priority}"

    def _run(self) -> None:
        if self.priority:
            self._raise_priority()
        period = self.period
        deadline = self._clock()
        while not self._stopping:
            deadline += period
            delay = deadline - self._clock()
            if delay > 0.0:
                self._sleep(delay)  # at most one period: a stop request waits no longer than that
            elif delay < -period:
                skipped = int(-delay // period)
                self.overruns += skipped
                deadline += skipped * period
            if self._stopping:
                break
            try:
                self._tick()
            except Exception as exc:
                self.errors += 1
                self._on_error(exc)
            self.ticks += 1


class CommandIntake:
    """Subscriptions whose messages :meth:`take` hands to their handlers with the middleware's receipt
    time (ns, system clock): ``handler(msg, received_ns)`` (module docstring)."""

    def __init__(self, node: Node, qos: QoSProfile, topics: Sequence[tuple[type, str, Callable[[Any, int], None]]]):
        # none of the process's arguments (a launch file's ``__node`` rename would give it the node's own
        # name), no parameter services, no rosout: it only holds the subscriptions
        self.companion = Node(
            f"{node.get_name()}_commands",
            namespace=node.get_namespace(),
            context=node.context,
            use_global_arguments=False,
            start_parameter_services=False,
            enable_rosout=False,
        )
        # each topic as ``node`` resolves it, its remapping rules applied (the companion has none of its own)
        self.inputs = [
            (
                self.companion.create_subscription(msg_type, node.resolve_topic_name(topic), _taken_by_intake, qos),
                handler,
            )
            for msg_type, topic, handler in topics
        ]

    def take(self) -> None:
        """Every message waiting, oldest first per topic."""
        for subscription, handler in self.inputs:
            for msg, received_ns in waiting_messages(subscription):
                handler(msg, received_ns)

    def destroy(self) -> None:
        self.companion.destroy_node()


def _taken_by_intake(msg: Any) -> None:  # pragma: no cover - no executor spins the companion node
    raise AssertionError("CommandIntake's messages are taken, not called back")


class LatencyRecord:
    """Latencies (ns) since the last :meth:`clear`, the newest ``capacity`` of them: their mean, median,
    99th percentile and maximum. The simulator keeps its command latency from one reset to the next,
    the feed-forward node the ages of the states it answered over one diagnostics period."""

    def __init__(self, capacity: int = 1 << 17) -> None:
        self._values = np.zeros(capacity, dtype=np.int64)
        self.count = 0  # since clear (may exceed capacity: the oldest are overwritten)

    def clear(self) -> None:
        self.count = 0

    def add(self, latency_ns: int) -> None:
        self._values[self.count % self._values.size] = latency_ns
        self.count += 1

    def figures(self, unit_ns: float) -> dict[str, float]:
        """``mean``, ``p50``, ``p99``, ``max`` in units of ``unit_ns`` ns ({} before the first)."""
        values = self._values[: min(self.count, self._values.size)] / unit_ns
        if not values.size:
            return {}
        p50, p99 = np.percentile(values, (50.0, 99.0))
        return {"mean": float(values.mean()), "p50": float(p50), "p99": float(p99), "max": float(values.max())}

    def diagnostic_values(self, prefix: str) -> list[tuple[str, str]]:
        """``prefix_p50_ms``, ``_p99_ms``, ``_max_ms`` (empty before the first) and ``_count``."""
        figures = self.figures(1e6)
        cells = [(f"{prefix}_{k}_ms", f"{figures[k]:.3f}" if figures else "") for k in ("p50", "p99", "max")]
        return [*cells, (f"{prefix}_count", str(self.count))]


def check_priority(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 99:
        return f"must be an integer 0 (normal scheduler) to 99, got {value!r}"
    return None


class RealTimeStepping:
    """The simulator node's real-time part (module docstring). ``node`` is a ``RobotNode``; the
    parameter is declared in either mode, the thread started only by :meth:`start` (real time)."""

    def __init__(self, node: Any) -> None:
        self.node = node
        node.declare(
            "thread_priority",
            0,
            "real time: SCHED_FIFO priority of the stepping thread, 1-99 (0 = the normal scheduler; needs "
            "CAP_SYS_NICE or an rtprio limit, else a warning and the normal scheduler)",
            read_only=True,
            check=check_priority,
        )
        self.latency = LatencyRecord()  # state stamp -> command arrival, since the last reset
        self.stepper: PeriodicThread | None = None
        self.intake: CommandIntake | None = None

    def start(self, period: float, tick: Callable[[], None], intake: CommandIntake) -> None:
        """Run ``tick`` every ``period`` s; the tick calls :meth:`take_commands` (``intake``'s) first."""
        node = self.node
        self.intake = intake
        self.stepper = PeriodicThread(
            period,
            tick,
            lambda exc: node.reject("simulation tick", exc),
            "simulator-step",
            int(node.param("thread_priority")),
            node.get_logger().warning,
        )
        self.stepper.start()

    def stop(self) -> None:
        if self.stepper is not None:
            self.stepper.stop()
        if self.intake is not None:
            self.intake.destroy()
            self.intake = None

    def take_commands(self) -> None:
        if self.intake is not None:
            self.intake.take()

    def record(self, stamp: Any, received_ns: int | None = None) -> None:
        """The round trip of a command that carries its state's stamp, to its receipt (``received_ns``:
        the middleware's receipt time; None: now). None for a stamp of 0 or one from the future: a
        controller that stamps its own time."""
        sent = stamp_to_ns(stamp)
        latency = (self.node.get_clock().now().nanoseconds if received_ns is None else received_ns) - sent
        if sent > 0 and 0 <= latency < 10**9:
            self.latency.add(latency)

    def diagnostic_values(self) -> list[tuple[str, str]]:
        if self.stepper is None:
            return []
        head = [("scheduler", self.stepper.scheduler), ("overruns", str(self.stepper.overruns))]
        return head + self.latency.diagnostic_values("command_latency")
