"""Reading rosbag2 bags (sqlite3 and mcap) with ``rosbags``: no ROS installation needed.

Messages are (de)serialized with ``rosbags``' standard ROS 2 type store for the distribution the
project's ROS wheels come from (:data:`TYPESTORE`, ``Stores.ROS2_KILTED``; the message definitions
used here are identical in Jazzy), so ``ros2 bag`` on a ROS machine reads the bags
:mod:`robot_dynamics.bag.writer` writes and vice versa. Topic names are stored with a leading ``/``
as ``ros2 bag record`` does; the functions accept them with or without it.

:func:`read_topics` collects the raw CDR messages of the requested topics in one pass
(``timestamps`` = the bag's receive times, ns); :mod:`robot_dynamics.bag.decode` turns them into
arrays. This module also holds what reading, decoding and writing share: the type store, the
message type names, :class:`BagError` and topic-name normalisation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from rosbags.rosbag2 import Reader, ReaderError
from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.store import Typestore

from robot_dynamics.errors import RobotDynamicsError

TYPESTORE = Stores.ROS2_KILTED
JOINT_STATE = "sensor_msgs/msg/JointState"
JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
FLOAT64_MULTIARRAY = "std_msgs/msg/Float64MultiArray"
CLOCK = "rosgraph_msgs/msg/Clock"
STORAGES: tuple[str, ...] = ("mcap", "sqlite3")
Storage = Literal["mcap", "sqlite3"]
Int64Array = NDArray[np.int64]
ProgressFn = Callable[[int], None]


class BagError(RobotDynamicsError):
    """A bag cannot be read or written as asked (missing topic, wrong type, joint names, ...)."""


@lru_cache(maxsize=1)
def typestore() -> Typestore:
    """The standard ROS 2 type store (:data:`TYPESTORE`)."""
    return get_typestore(TYPESTORE)


def topic_name(topic: str) -> str:
    """``joint_states`` → ``/joint_states`` (rosbag2 stores absolute names)."""
    topic = topic.strip()
    if not topic or topic == "/":
        raise BagError("empty topic name")
    return topic if topic.startswith("/") else "/" + topic


def short_type(msgtype: str) -> str:
    return msgtype.replace("/msg/", "/")


@dataclass(frozen=True)
class TopicSummary:
    topic: str
    msgtype: str
    count: int


@dataclass(frozen=True)
class BagSummary:
    path: Path
    storage: str
    start_ns: int
    duration_ns: int
    message_count: int
    topics: dict[str, TopicSummary]

    def describe(self) -> str:
        lines = [
            f"{self.path}: {self.storage}, {self.message_count} messages, {self.duration_ns * 1e-9:.3f} s",
        ]
        for t in self.topics.values():
            lines.append(f"  {t.topic}  [{short_type(t.msgtype)}]  {t.count} messages")
        return "\n".join(lines)


def _open_reader(path: str | Path) -> Reader:
    p = Path(path)
    if not p.exists():
        raise BagError(f"bag {str(p)!r} does not exist")
    try:
        reader = Reader(p)
        reader.open()
    except (ReaderError, OSError, KeyError, ValueError) as exc:
        raise BagError(f"{p}: not a readable rosbag2 bag ({exc})") from None
    return reader


def _storage_of(reader: Reader) -> str:
    """``mcap`` or ``sqlite3`` (from the storage plugin ``rosbags`` opened)."""
    storage: Any = reader.storage
    plugins = getattr(storage, "storages", None) or [storage]  # a bag directory holds storage files
    name = type(plugins[0]).__name__.lower()
    return "mcap" if "mcap" in name else "sqlite3" if "sqlite" in name else name


def bag_summary(path: str | Path) -> BagSummary:
    """Topics, types, counts and time span of a bag."""
    reader = _open_reader(path)
    try:
        topics = {
            name: TopicSummary(name, info.msgtype or "<mixed types>", info.msgcount)
            for name, info in sorted(reader.topics.items())
        }
        count = reader.message_count
        return BagSummary(
            Path(path),
            _storage_of(reader),
            reader.start_time if count else 0,
            reader.duration if count else 0,
            count,
            topics,
        )
    finally:
        reader.close()


@dataclass
class RawTopic:
    """The serialized messages of one topic, in time order."""

    topic: str
    msgtype: str
    timestamps: Int64Array  # (N,) bag receive times, ns
    data: list[bytes]

    def __len__(self) -> int:
        return len(self.data)


def read_topics(
    path: str | Path,
    topics: Sequence[str] | None = None,
    *,
    types: dict[str, str] | None = None,
    optional: Iterable[str] = (),
    progress: ProgressFn | None = None,
) -> dict[str, RawTopic]:
    """Raw messages of ``topics`` (all topics when ``None``), keyed by absolute topic name.

    ``types`` maps a topic to the message type it must have; ``optional`` topics may be absent
    (they are then missing from the result). A requested topic that is absent or has another type
    raises :class:`BagError` naming the topics the bag has. ``progress(n)`` is called as messages
    are read.
    """
    reader = _open_reader(path)
    try:
        available = {name: info.msgtype for name, info in reader.topics.items()}

        def listing() -> str:
            return ", ".join(f"{t} [{short_type(m or '?')}]" for t, m in sorted(available.items())) or "none"

        wanted = list(available) if topics is None else [topic_name(t) for t in topics]
        optional_set = {topic_name(t) for t in optional}
        expected = {topic_name(k): v for k, v in (types or {}).items()}
        selected = []
        for topic in wanted:
            if topic not in available:
                if topic in optional_set:
                    continue
                raise BagError(f"{path}: no topic {topic} in the bag (topics: {listing()})")
            msgtype = available[topic]
            if msgtype is None:
                raise BagError(f"{path}: topic {topic} carries several message types")
            if topic in expected and msgtype != expected[topic]:
                raise BagError(
                    f"{path}: topic {topic} has type {short_type(msgtype)}, expected {short_type(expected[topic])}"
                )
            selected.append(topic)
        connections = [c for c in reader.connections if c.topic in selected]
        stamps: dict[str, list[int]] = {t: [] for t in selected}
        data: dict[str, list[bytes]] = {t: [] for t in selected}
        done = 0
        if connections:
            for conn, timestamp, raw in reader.messages(connections=connections):
                stamps[conn.topic].append(timestamp)
                data[conn.topic].append(bytes(raw))
                done += 1
                if progress is not None and done % 1000 == 0:
                    progress(1000)
        if progress is not None and done % 1000:
            progress(done % 1000)
        result = {}
        for topic in selected:
            ts = np.array(stamps[topic], dtype=np.int64)
            order = np.argsort(ts, kind="stable")
            raws = data[topic]
            if np.any(order != np.arange(ts.size)):
                raws = [raws[i] for i in order]
                ts = ts[order]
            result[topic] = RawTopic(topic, str(available[topic]), ts, raws)
        return result
    finally:
        reader.close()


def deserialize(raw: bytes, msgtype: str, where: str = "") -> Any:
    """One message with ``rosbags``; ``where`` (e.g. ``topic /x, message 3``) prefixes the error."""
    prefix = f"{where}: " if where else ""
    try:
        return typestore().deserialize_cdr(raw, msgtype)
    except KeyError:
        raise BagError(f"message type {msgtype} is not in the standard ROS 2 type store") from None
    except Exception as exc:
        raise BagError(f"{prefix}cannot deserialize a {short_type(msgtype)} message: {exc}") from None
