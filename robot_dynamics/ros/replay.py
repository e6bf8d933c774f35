"""Bag replay through live nodes: ``ros2 bag play`` + ``ros2 bag record`` in one rclpy node.

:func:`replay` publishes the messages of a rosbag2 bag (read with ``rosbags``, published as the
raw CDR bytes, so every type of the bag whose Python message package is installed works) with their
original timing scaled by ``rate``, optionally with ``/clock`` (``rosgraph_msgs/Clock`` at the bag
time, 40 Hz of bag time by default, for nodes on ``use_sim_time``, like ``ros2 bag play --clock``),
and records the ``record`` topics into a new bag (receive times from the recording node's clock,
raw bytes).

Synchronisation, no fixed sleeps: playback starts once every played topic has a matched
subscriber, every recorded topic a matched publisher and the optional ``ready`` condition holds
(``wait_timeout``). A recorder seeing its publisher does not mean the publisher has matched the
recorder yet (DDS discovery is per side; the first outputs of a loaded node were lost that way):
:func:`diagnostics_ready` waits until the node's ``/diagnostics`` report a subscriber on each of its
outputs, which only the publishing side knows. After the last message
it waits until every reliable publisher's data are acknowledged and until the recorded topics have
the ``expect``-ed counts (or ``settle_timeout``). Sleeping until each message's due time is the
playback clock itself. If this process runs late (a loaded machine), the rest of the schedule
shifts by the delay instead of publishing the overdue messages in a burst that would overrun the
subscribers' queues: the spacing of the messages is kept, the wall time stretches
(``ReplayResult.max_lateness_s``). With ``pace`` (a played topic and a recorded topic that answers it
message for message, e.g. joint states and a feed-forward node's commands), playback also waits while more
than ``max_backlog`` played messages are unanswered: a node that falls behind on a busy machine is never
handed more than its subscription's queue holds (a reliable queue of depth 100 drops the oldest waiting
message when a new one arrives), so nothing is lost; only the wall time stretches.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.clock import Clock
from rclpy.context import Context
from rclpy.duration import Duration
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from robot_dynamics.bag.reader import CLOCK, BagError, Int64Array, RawTopic, read_topics, topic_name
from robot_dynamics.bag.writer import BagWriter
from robot_dynamics.ros.messages import diagnostic_dict, waiting_messages
from robot_dynamics.ros.process import stop_executors

#: QoS of the played topics: reliable, volatile, deep enough for bursts at high rate factors.
PLAY_QOS = QoSProfile(
    depth=1000,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)
#: QoS of the recorder: reliable, keep all (matches reliable and best-effort publishers).
RECORD_QOS = QoSProfile(
    depth=1000,
    history=HistoryPolicy.KEEP_ALL,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)
CLOCK_TOPIC = "/clock"
#: A message later than this is not caught up with: the rest of the schedule shifts by the delay.
CATCH_UP_S = 0.002


class ReplayError(BagError):
    """Replay could not be carried out (no subscriber appeared, unknown message type, ...)."""


def message_class(msgtype: str) -> Any:
    """The rclpy message class of ``pkg/msg/Name`` (ReplayError if its package is not installed)."""
    parts = msgtype.split("/")
    if len(parts) != 3:
        raise ReplayError(f"unrecognised message type {msgtype!r} (expected pkg/msg/Name)")
    pkg, kind, name = parts
    try:
        return getattr(importlib.import_module(f"{pkg}.{kind}"), name)
    except (ImportError, AttributeError):
        raise ReplayError(
            f"message type {msgtype} is not available to rclpy here (install its interface package, or leave "
            "its topic out of the replay)"
        ) from None


@dataclass
class ReplayResult:
    published: dict[str, int]
    recorded: dict[str, int]
    expected: dict[str, int]
    out: Path | None
    wall_time_s: float
    bag_time_s: float
    recordings: dict[str, RawTopic] = field(default_factory=dict)
    max_lateness_s: float = 0.0  # the largest schedule shift (this process ran late)

    @property
    def lost(self) -> dict[str, int]:
        """Expected minus recorded messages per ``expect``-ed topic (0 = nothing lost)."""
        return {t: n - self.recorded.get(t, 0) for t, n in self.expected.items()}

    def describe(self) -> str:
        lines = [
            f"replayed {sum(self.published.values())} messages ({self.bag_time_s:.2f} s of bag time) "
            f"in {self.wall_time_s:.2f} s"
        ]
        for topic, n in sorted(self.recorded.items()):
            extra = f" of {self.expected[topic]} expected" if topic in self.expected else ""
            lines.append(f"  recorded {topic}: {n}{extra}")
        if self.out is not None:
            lines.append(f"  output bag: {self.out}")
        return "\n".join(lines)


ReadyHook = Callable[[Node], Callable[[], bool]]
"""Builds, on the replay node (after the recorders exist), an extra readiness condition."""


def diagnostics_ready(status_name: str, keys: Sequence[str] | None = None) -> ReadyHook:
    """A ``ready`` hook: the ``/diagnostics`` status ``status_name`` reports a count >= 1 for every key.

    For the feed-forward node: ``diagnostics_ready("robot_dynamics: /feedforward_node",
    ["subscribers[feedforward/commands]", "subscribers[feedforward/efforts]"])`` -- its publishers
    have matched a subscriber (the replay's recorders, on a private domain). ``keys=None``: every
    ``subscribers[...]`` key the status has (at least one).
    """

    def hook(node: Node) -> Callable[[], bool]:
        latest: dict[str, str] = {}
        lock = threading.Lock()

        def on_diagnostics(msg: DiagnosticArray) -> None:
            for status in msg.status:
                if status.name == status_name:
                    with lock:
                        latest.update(diagnostic_dict(status))

        node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)

        def ready() -> bool:
            with lock:
                wanted = keys if keys is not None else [k for k in latest if k.startswith("subscribers[")]
                counts = [latest.get(k, "") for k in wanted]
                return bool(counts) and all(c.isdigit() and int(c) >= 1 for c in counts)

        return ready

    return hook


def all_ready(hooks: Sequence[ReadyHook]) -> ReadyHook:
    """A ``ready`` hook that holds when every one of ``hooks`` holds."""

    def hook(node: Node) -> Callable[[], bool]:
        checks = [h(node) for h in hooks]
        return lambda: all(check() for check in checks)

    return hook


class Recorder:
    """Records every message of ``topic`` as received: raw CDR bytes and the receipt time on ``node``'s
    clock (simulated time under ``use_sim_time``), reliable and keep-all (:data:`RECORD_QOS`)."""

    def __init__(self, node: Node, topic: str, msgtype: str, clock: Clock | None = None) -> None:
        self.topic = topic
        self.msgtype = msgtype
        self.stamps: list[int] = []
        self.data: list[bytes] = []
        self.lock = threading.Lock()
        self.clock = node.get_clock() if clock is None else clock
        self.subscription = node.create_subscription(
            message_class(msgtype), topic, self._on_message, RECORD_QOS, raw=True
        )

    def _on_message(self, raw: bytes) -> None:
        self._store(self.clock.now().nanoseconds, bytes(raw))

    def _store(self, received_ns: int, raw: bytes) -> None:
        with self.lock:
            self.stamps.append(received_ns)
            self.data.append(raw)

    def take_waiting(self, receipt_clock: bool) -> None:
        """Takes every message waiting in the subscription (for a node no executor spins: a thread calls
        this every few milliseconds instead of an executor calling back once per message), stamped with
        the node's clock now, or with ``receipt_clock`` the middleware's receipt time (system clock, the
        time each message arrived rather than the time it was taken)."""
        for raw, received_ns in waiting_messages(self.subscription, raw=True):
            self._store(received_ns if receipt_clock else self.clock.now().nanoseconds, bytes(raw))

    @property
    def count(self) -> int:
        with self.lock:
            return len(self.data)


def _has_recorded(recorder: Recorder, count: int) -> bool:
    return recorder.count >= count


def _wait(condition: Callable[[], bool], timeout: float, poll: float = 0.005) -> bool:
    """Polls ``condition`` until true or ``timeout`` seconds (a readiness check, not a delay)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return condition()
        time.sleep(poll)
    return True


def replay(
    bag: str | Path,
    *,
    topics: Sequence[str] | None = None,
    record: Mapping[str, str] | None = None,
    out: str | Path | None = None,
    storage: str = "mcap",
    overwrite: bool = False,
    rate: float = 1.0,
    clock: bool = False,
    clock_rate: float = 40.0,
    expect: Mapping[str, int] | None = None,
    wait_timeout: float = 30.0,
    settle_timeout: float = 10.0,
    context: Context | None = None,
    progress: Callable[[int], None] | None = None,
    node_name: str = "robot_dynamics_replay",
    ready: ReadyHook | None = None,
    pace: tuple[str, str] | None = None,
    max_backlog: int = 50,
) -> ReplayResult:
    """Plays ``topics`` of ``bag`` (default all) and records ``record`` (topic -> message type).

    ``rate`` scales the playback speed (2.0 = twice as fast); ``clock`` publishes ``/clock`` at the bag
    time, at most ``clock_rate`` times per second of bag time (``ros2 bag play --clock`` uses 40 Hz) and
    before every message that follows a gap; ``expect`` maps recorded topics to the
    number of messages to wait for. ``out`` receives the recorded topics as a bag. ``context``: an
    initialised rclpy context to use (default: a private one, initialised and shut down here).
    ``ready``: an extra condition to wait for before playing (see :func:`diagnostics_ready`). ``pace``:
    ``(played topic, recorded topic)`` answered one for one; playback waits (up to ``settle_timeout`` each
    time) while more than ``max_backlog`` are unanswered (module docstring).
    """
    if not rate > 0.0:
        raise ReplayError(f"rate must be positive, got {rate}")
    if not clock_rate > 0.0:
        raise ReplayError(f"clock rate must be positive, got {clock_rate}")
    clock_period_ns = int(1e9 / clock_rate)
    raw = read_topics(bag, topics)
    if not raw or not any(len(r) for r in raw.values()):
        raise ReplayError(f"{bag}: no messages to replay")
    record = {topic_name(t): m for t, m in (record or {}).items()}
    expected = {topic_name(t): int(n) for t, n in (expect or {}).items()}
    for t in expected:
        if t not in record:
            raise ReplayError(f"expected messages on {t}, which is not recorded")
    if pace is not None:
        pace = (topic_name(pace[0]), topic_name(pace[1]))
        if pace[0] not in raw or pace[1] not in record:
            raise ReplayError(f"pace {pace}: the first must be played, the second recorded")
        if max_backlog < 1:
            raise ReplayError(f"max_backlog must be at least 1, got {max_backlog}")
    classes = {t: message_class(r.msgtype) for t, r in raw.items()}
    if out is not None:
        out_path = Path(out)
        if out_path.exists() and not overwrite:
            raise ReplayError(f"{out_path} exists already (choose another output or allow overwriting)")

    # all messages of all topics in bag-time order (stable: topics in bag order)
    events: list[tuple[int, str, bytes]] = sorted(
        ((int(ts), t, d) for t, r in raw.items() for ts, d in zip(r.timestamps.tolist(), r.data, strict=True)),
        key=lambda e: e[0],
    )
    own_context = context is None
    ctx = Context() if context is None else context
    if own_context:
        rclpy.init(context=ctx)
    node = Node(node_name, context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    spinner = threading.Thread(target=_spin, args=(executor,), name="replay-spin", daemon=True)
    try:
        # recorders first: their announcements go out before anything is played
        recorders = {t: Recorder(node, t, m) for t, m in record.items()}
        extra_ready = ready(node) if ready is not None else None
        publishers = {t: node.create_publisher(classes[t], t, PLAY_QOS) for t in raw}
        clock_pub = None
        clock_cls = None
        if clock:
            clock_cls = message_class(CLOCK)
            clock_pub = node.create_publisher(clock_cls, CLOCK_TOPIC, PLAY_QOS)
        spinner.start()

        matched = _wait(
            lambda: (
                all(p.get_subscription_count() > 0 for p in publishers.values())
                and all(r.subscription.get_publisher_count() > 0 for r in recorders.values())
                and (extra_ready is None or extra_ready())
            ),
            wait_timeout,
        )
        if not matched:
            missing_subs = [t for t, p in publishers.items() if p.get_subscription_count() == 0]
            missing_pubs = [t for t, r in recorders.items() if r.subscription.get_publisher_count() == 0]
            detail = []
            if missing_subs:
                detail.append(f"no subscriber on {missing_subs}")
            if missing_pubs:
                detail.append(f"no publisher on {missing_pubs}")
            if extra_ready is not None and not extra_ready():
                detail.append("the ready condition does not hold")
            raise ReplayError(f"nodes not ready after {wait_timeout} s: {'; '.join(detail)}")

        published = dict.fromkeys(raw, 0)
        t_first = events[0][0]
        last_clock = -1
        if clock_pub is not None and clock_cls is not None:
            # the bag's start time first, so the nodes' clocks are set before the first message
            first = clock_cls()
            first.clock.sec, first.clock.nanosec = divmod(t_first, 1_000_000_000)
            clock_pub.publish(first)
            clock_pub.wait_for_all_acked(Duration(seconds=settle_timeout))
            last_clock = t_first
        start = time.monotonic()
        max_late = 0.0
        for k, (ts, topic, data) in enumerate(events):
            due = start + (ts - t_first) * 1e-9 / rate
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # the playback clock
            elif -delay > CATCH_UP_S:
                # Late (this process was not scheduled): shift the schedule instead of publishing the
                # overdue messages in a burst, which would overrun the subscribers' queues.
                max_late = max(max_late, -delay)
                start -= delay
            if pace is not None and topic == pace[0]:  # never more unanswered than the node's queue holds
                answers, least = recorders[pace[1]], published[topic] - max_backlog
                if answers.count < least:
                    _wait(partial(_has_recorded, answers, least), settle_timeout)
            if clock_pub is not None and clock_cls is not None and ts - last_clock >= clock_period_ns:
                msg = clock_cls()
                msg.clock.sec, msg.clock.nanosec = divmod(ts, 1_000_000_000)
                clock_pub.publish(msg)
                last_clock = ts
            publishers[topic].publish(data)
            published[topic] += 1
            if progress is not None and (k + 1) % 100 == 0:
                progress(100)
        if progress is not None and len(events) % 100:
            progress(len(events) % 100)
        for p in publishers.values():
            p.wait_for_all_acked(Duration(seconds=settle_timeout))
        _wait(lambda: all(recorders[t].count >= n for t, n in expected.items()), settle_timeout)
        wall = time.monotonic() - start
        recordings = {}
        for t, r in recorders.items():
            with r.lock:
                recordings[t] = RawTopic(t, r.msgtype, _int64(r.stamps), list(r.data))
        result_out = None
        if out is not None:
            with BagWriter(out, storage=storage, overwrite=overwrite) as w:
                for rec in recordings.values():
                    w.write_raw(rec.topic, rec.msgtype, rec.timestamps, rec.data)
            result_out = Path(out)
        return ReplayResult(
            published=published,
            recorded={t: len(r) for t, r in recordings.items()},
            expected=expected,
            out=result_out,
            wall_time_s=wall,
            bag_time_s=(events[-1][0] - t_first) * 1e-9,
            recordings=recordings,
            max_lateness_s=max_late,
        )
    finally:
        threads = [spinner] if spinner.ident is not None else []  # not started if the set-up failed
        if all(stop_executors([executor], threads, 2.0)):
            node.destroy_node()  # never while its thread still spins
        if own_context:
            rclpy.try_shutdown(context=ctx)


def _int64(values: list[int]) -> Int64Array:
    return np.array(values, dtype=np.int64)


def _spin(executor: SingleThreadedExecutor) -> None:
    with contextlib.suppress(ExternalShutdownException, KeyboardInterrupt):
        executor.spin()
