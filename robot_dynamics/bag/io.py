"""rosbag2 reading and writing (sqlite3 and mcap) with ``rosbags``: no ROS installation needed.

Messages are (de)serialized with ``rosbags``' standard ROS 2 type store for the distribution the
project's ROS wheels come from (:data:`TYPESTORE`, ``Stores.ROS2_KILTED``; the message definitions
used here are identical in Jazzy), so ``ros2 bag`` on a ROS machine reads the bags this module
writes and vice versa. Topic names are stored with a leading ``/`` as ``ros2 bag record`` does; the
functions accept them with or without it.

Reading: :func:`read_topics` collects the raw CDR messages of the requested topics in one pass
(``timestamps`` = the bag's receive times, ns), then :func:`decode_joint_states`,
:func:`decode_float64_multiarray` and :func:`decode_joint_trajectories` turn them into arrays. The
common case of a uniform ``JointState`` stream (same names and array lengths in every message) is
decoded as one byte matrix (``_cdr``); anything else message by message with ``rosbags``.

Writing: :class:`BagWriter` collects topics, then writes every message in time order on
:meth:`BagWriter.close`.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from rosbags.rosbag2 import Reader, ReaderError, StoragePlugin, Writer, WriterError
from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.store import Typestore

from robot_dynamics.bag import _cdr
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.model import FloatArray
from robot_dynamics.trajectory import JointTrajectorySampler

TYPESTORE = Stores.ROS2_KILTED
JOINT_STATE = "sensor_msgs/msg/JointState"
JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
FLOAT64_MULTIARRAY = "std_msgs/msg/Float64MultiArray"
CLOCK = "rosgraph_msgs/msg/Clock"
STORAGES: tuple[str, ...] = ("mcap", "sqlite3")
Storage = Literal["mcap", "sqlite3"]
Int64Array = NDArray[np.int64]
ProgressFn = Callable[[int], None]
_LOG = logging.getLogger("robot_dynamics.bag")


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


# ------------------------------------------------------------------------------------------------
# reading
# ------------------------------------------------------------------------------------------------
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


def _where(raw: RawTopic, row: int) -> str:
    return f"topic {raw.topic}, message {row} (t={int(raw.timestamps[row])} ns)"


# ------------------------------------------------------------------------------------------------
# joint states
# ------------------------------------------------------------------------------------------------
#: How :meth:`JointStateSeries.times` chose the time base (also in the evaluation summary).
TIME_BASE_STAMPS = "header stamps"
TIME_BASE_RECEIVE = "receive times (header stamps all zero)"


@dataclass(frozen=True)
class JointStateSeries:
    """A joint-state stream in a fixed joint order.

    ``timestamps`` are the bag's receive times and ``stamps`` the ``header.stamp`` values (both
    int64 ns, ``(N,)``). ``position`` is ``(N, n)``; ``velocity``/``effort`` are ``(N, n)`` or ``None``
    when no message has them; a message without one of them has NaN in its row.
    """

    topic: str
    names: tuple[str, ...]
    timestamps: Int64Array
    stamps: Int64Array
    position: FloatArray
    velocity: FloatArray | None
    effort: FloatArray | None
    frame_id: str = ""

    def __len__(self) -> int:
        return int(self.timestamps.size)

    @property
    def stamped(self) -> bool:
        """Whether the stream carries header stamps (any non-zero; a stream may start at stamp 0)."""
        return bool(np.any(self.stamps != 0))

    def time_base(self) -> tuple[Int64Array, str]:
        """The sample instants (ns) and their source, :data:`TIME_BASE_STAMPS` or :data:`TIME_BASE_RECEIVE`.

        Header stamps when the stream has any (stamps may start at zero: simulated time, a driver's
        own clock); the bag's receive times when every stamp is zero (a driver that does not stamp),
        with a warning on the ``robot_dynamics.bag`` logger. The chosen instants must increase
        strictly: stamps that repeat or go backwards (a clock reset, two publishers on one topic)
        raise :class:`BagError` naming the message, rather than being re-sorted, since receive order
        is the order the robot's software saw the states in.
        """
        if len(self) == 0:
            raise BagError(f"{self.topic}: no joint states")
        if self.stamped:
            base, which = self.stamps, TIME_BASE_STAMPS
        else:
            base, which = self.timestamps, TIME_BASE_RECEIVE
            _LOG.warning("%s: every header stamp is zero; using the bag's receive times as sample times", self.topic)
        steps = np.diff(base)
        if np.any(steps <= 0):
            k = int(np.argmax(steps <= 0)) + 1
            kind = "repeat" if steps[k - 1] == 0 else "go backwards"
            name = "header stamps" if which == TIME_BASE_STAMPS else "receive times"
            raise BagError(
                f"{self.topic}: {name} do not increase at message {k} ({int(base[k - 1])} -> {int(base[k])} ns; "
                f"stamps that {kind} cannot be differentiated: a clock reset or several publishers on one topic?)"
            )
        return base, which

    def times(self) -> FloatArray:
        """Sample times in seconds from the first sample (:meth:`time_base`)."""
        base, _ = self.time_base()
        t: FloatArray = (base - base[0]).astype(np.float64) * 1e-9
        return t


_FIELDS = ("position", "velocity", "effort")


@dataclass
class JointStateBlock:
    """Messages ``rows`` (indices into the topic) that share one layout (a uniform run or one message).

    ``stamps`` are the header stamps (int64 ns, ``sec * 1e9 + nanosec``); ``fields`` maps position,
    velocity and effort to ``(m, k)`` float arrays (``k`` = that field's length in these messages).
    """

    rows: NDArray[np.intp]
    names: tuple[str, ...]
    stamps: Int64Array
    fields: dict[str, FloatArray]
    frame_id: str


def _slow_block(raw: RawTopic, row: int) -> JointStateBlock:
    msg = deserialize(raw.data[row], JOINT_STATE, _where(raw, row))
    stamp = int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)
    return JointStateBlock(
        np.array([row], dtype=np.intp),
        tuple(msg.name),
        np.array([stamp], dtype=np.int64),
        {f: np.asarray(getattr(msg, f), dtype=np.float64).reshape(1, -1) for f in _FIELDS},
        msg.header.frame_id,
    )


def decode_joint_state_blocks(raw: RawTopic) -> list[JointStateBlock]:
    """Every message of a JointState topic, as it is (any names and lengths), in blocks by first row.

    Uniform runs go through the byte-matrix decoder (padding bytes ignored), the rest through
    ``rosbags``; a message neither can decode raises :class:`BagError` naming topic and message.
    """
    groups, rest = _cdr.group_by_layout(raw.data, _cdr.parse_joint_state_layout)
    blocks = [
        JointStateBlock(
            g.rows,
            g.head.names,
            _cdr.decode_stamps(g.head.layout, g.matrix),
            {f: _cdr.decode_block(g.head.layout, g.matrix, f) for f in _FIELDS},
            g.head.frame_id,
        )
        for g in groups
    ]
    blocks += [_slow_block(raw, int(r)) for r in rest]
    blocks.sort(key=lambda b: int(b.rows[0]))
    return blocks


def decode_joint_states(raw: RawTopic, joint_names: Sequence[str] | None = None) -> JointStateSeries:
    """A :class:`JointStateSeries` in the order ``joint_names`` (default: the first message's names).

    Every message must name every requested joint (extra joints are ignored), have no duplicate
    names, and carry position (and, if given, velocity/effort) for each name.
    """
    if raw.msgtype != JOINT_STATE:
        raise BagError(f"topic {raw.topic} has type {short_type(raw.msgtype)}, expected {short_type(JOINT_STATE)}")
    n_msgs = len(raw)
    if n_msgs == 0:
        raise BagError(f"topic {raw.topic} has no messages")
    blocks = decode_joint_state_blocks(raw)
    first = blocks[0]
    target = tuple(joint_names) if joint_names is not None else first.names
    if not target:
        raise BagError(f"topic {raw.topic}: the first message has no joint names")
    n = len(target)
    out = {f: np.full((n_msgs, n), np.nan) for f in _FIELDS}
    present = dict.fromkeys(out, False)
    stamps = np.zeros(n_msgs, dtype=np.int64)
    for block in blocks:
        where = _where(raw, int(block.rows[0]))
        lookup: dict[str, int] = {}
        for i, name in enumerate(block.names):
            if name in lookup:
                raise BagError(f"{where}: duplicate joint name {name!r}")
            lookup[name] = i
        missing = [name for name in target if name not in lookup]
        if missing:
            raise BagError(
                f"{where}: joint names do not match: missing {missing}; the message has {list(block.names)}, "
                f"expected {list(target)}"
            )
        index = np.array([lookup[name] for name in target], dtype=np.intp)
        stamps[block.rows] = block.stamps
        for f, values in block.fields.items():
            k = values.shape[1]
            if k == 0:
                if f == "position":
                    raise BagError(f"{where}: no positions")
                continue
            if k != len(block.names):
                raise BagError(f"{where}: {k} {f} values for {len(block.names)} joint names")
            out[f][block.rows] = values[:, index]
            present[f] = True
    return JointStateSeries(
        raw.topic,
        target,
        raw.timestamps.copy(),
        stamps,
        out["position"],
        out["velocity"] if present["velocity"] else None,
        out["effort"] if present["effort"] else None,
        first.frame_id,
    )


def read_joint_states(
    path: str | Path, topic: str = "joint_states", joint_names: Sequence[str] | None = None
) -> JointStateSeries:
    raw = read_topics(path, [topic], types={topic: JOINT_STATE})[topic_name(topic)]
    return decode_joint_states(raw, joint_names)


# ------------------------------------------------------------------------------------------------
# Float64MultiArray and trajectories
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ArraySeries:
    """A ``Float64MultiArray`` stream of equal-length vectors: ``data`` ``(N, m)``, labels of dim 0."""

    topic: str
    timestamps: Int64Array
    data: FloatArray
    labels: tuple[str, ...] = ()


def decode_float64_multiarray(raw: RawTopic) -> ArraySeries:
    """The vectors ``data[data_offset:]`` of every message (all of one length; labels of message 0)."""
    if raw.msgtype != FLOAT64_MULTIARRAY:
        raise BagError(
            f"topic {raw.topic} has type {short_type(raw.msgtype)}, expected {short_type(FLOAT64_MULTIARRAY)}"
        )
    if len(raw) == 0:
        return ArraySeries(raw.topic, raw.timestamps.copy(), np.zeros((0, 0)))
    groups, rest = _cdr.group_by_layout(raw.data, _cdr.parse_float64_multiarray)
    rows: list[tuple[int, tuple[str, ...], NDArray[np.intp], FloatArray]] = []
    for g in groups:
        values = _cdr.decode_block(g.head.layout, g.matrix, "data")[:, g.head.data_offset :]
        rows.append((int(g.rows[0]), tuple(d[0] for d in g.head.dims), g.rows, values))
    for r in rest.tolist():
        msg = deserialize(raw.data[r], FLOAT64_MULTIARRAY, _where(raw, r))
        values = np.asarray(msg.data, dtype=np.float64)[int(msg.layout.data_offset) :].reshape(1, -1)
        rows.append((r, tuple(d.label for d in msg.layout.dim), np.array([r], dtype=np.intp), values))
    rows.sort(key=lambda item: item[0])
    width = rows[0][3].shape[1]
    data = np.empty((len(raw), width))
    for first, _, where, values in rows:
        if values.shape[1] != width:
            raise BagError(f"topic {raw.topic}: message {first} has {values.shape[1]} values, message 0 has {width}")
        data[where] = values
    return ArraySeries(raw.topic, raw.timestamps.copy(), data, rows[0][1])


@dataclass(frozen=True)
class TrajectoryMessage:
    """One ``trajectory_msgs/JointTrajectory`` as received: ``timestamp`` (bag time, ns),
    ``stamp`` (``header.stamp``, ns; 0 = start on receipt), point data ``(K, n)`` in ``names`` order."""

    timestamp: int
    stamp: int
    names: tuple[str, ...]
    times: FloatArray
    positions: FloatArray
    velocities: FloatArray | None
    accelerations: FloatArray | None

    @property
    def start(self) -> int:
        """When the trajectory starts (ns): its stamp, or its receive time when the stamp is zero."""
        return self.stamp if self.stamp > 0 else self.timestamp

    def sampler(self, joint_names: Sequence[str] | None = None) -> JointTrajectorySampler:
        """The trajectory in ``joint_names`` order (every joint must be named, no others)."""
        names = list(self.names) if joint_names is None else list(joint_names)
        if sorted(names) != sorted(self.names):
            raise BagError(
                f"trajectory at t={self.timestamp} ns names joints {list(self.names)}, expected {list(names)}"
            )
        index = [self.names.index(j) for j in names]

        def pick(block: FloatArray | None) -> FloatArray | None:
            return None if block is None else block[:, index]

        return JointTrajectorySampler(
            self.times, self.positions[:, index], pick(self.velocities), pick(self.accelerations)
        )


def decode_joint_trajectories(raw: RawTopic) -> list[TrajectoryMessage]:
    if raw.msgtype != JOINT_TRAJECTORY:
        raise BagError(f"topic {raw.topic} has type {short_type(raw.msgtype)}, expected {short_type(JOINT_TRAJECTORY)}")
    out = []
    for k, (timestamp, data) in enumerate(zip(raw.timestamps, raw.data, strict=True)):
        msg = deserialize(data, JOINT_TRAJECTORY, _where(raw, k))
        names = tuple(msg.joint_names)
        where = f"topic {raw.topic}, message {k}"
        if not msg.points:
            raise BagError(f"{where}: trajectory has no points")
        n = len(names)
        blocks: dict[str, FloatArray | None] = {}
        for f in ("positions", "velocities", "accelerations"):
            rows = [np.asarray(getattr(p, f), dtype=np.float64) for p in msg.points]
            given = [r.size > 0 for r in rows]
            if all(given):
                if any(r.size != n for r in rows):
                    raise BagError(f"{where}: {f} lengths {[r.size for r in rows]} do not match {n} joint names")
                blocks[f] = np.array(rows)
            elif any(given) or f == "positions":
                raise BagError(f"{where}: {f} missing in point {given.index(False)}")
            else:
                blocks[f] = None
        times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points])
        stamp = int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)
        positions = blocks["positions"]
        assert positions is not None
        out.append(
            TrajectoryMessage(
                int(timestamp), stamp, names, times, positions, blocks["velocities"], blocks["accelerations"]
            )
        )
    return out


# ------------------------------------------------------------------------------------------------
# writing
# ------------------------------------------------------------------------------------------------
def _as_ns(values: ArrayLike, count: int, what: str) -> Int64Array:
    arr = np.asarray(values)
    if arr.shape != (count,):
        raise BagError(f"{what}: expected {count} timestamps, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        raise BagError(f"{what}: timestamps must be integer nanoseconds")
    out = arr.astype(np.int64)
    if count and out.min() < 0:
        raise BagError(f"{what}: negative timestamp")
    return out


def _rows(values: ArrayLike | None, count: int, n: int, what: str) -> FloatArray | None:
    if values is None:
        return None
    arr = np.asarray(values, dtype=np.float64)
    if arr.shape != (count, n):
        raise BagError(f"{what}: expected shape {(count, n)}, got {arr.shape}")
    return arr


def remove_bag(path: Path) -> None:
    """Deletes an existing rosbag2 directory (only a directory that looks like one)."""
    if not path.exists():
        return
    if path.is_dir():
        allowed = {".mcap", ".db3", ".yaml", ".db3-shm", ".db3-wal", ".zstd"}
        entries = list(path.iterdir())
        if any(e.is_dir() or e.suffix not in allowed for e in entries):
            raise BagError(f"{path} exists and is not a rosbag2 directory; not overwriting it")
        shutil.rmtree(path)
    else:
        raise BagError(f"{path} exists and is a file; not overwriting it")


@dataclass
class _PendingTopic:
    msgtype: str
    timestamps: list[Int64Array] = field(default_factory=list)
    data: list[Sequence[bytes] | _cdr.UInt8Array] = field(default_factory=list)


class BagWriter:
    """Writes a rosbag2 bag (``storage`` ``"mcap"``, the ROS 2 default, or ``"sqlite3"``).

    Add whole topics with the ``write_*`` methods (any order, a topic may be added to several times);
    :meth:`close` (or leaving the ``with`` block) writes every message in timestamp order. An
    existing bag at ``path`` is replaced only with ``overwrite=True``.
    """

    def __init__(self, path: str | Path, *, storage: str = "mcap", overwrite: bool = False) -> None:
        if storage not in STORAGES:
            raise BagError(f"unknown bag storage {storage!r} (expected one of {list(STORAGES)})")
        self.path = Path(path)
        self.storage = storage
        if self.path.exists():
            if not overwrite:
                raise BagError(f"{self.path} exists already (choose another output or allow overwriting)")
            remove_bag(self.path)
        self._topics: dict[str, _PendingTopic] = {}
        self._closed = False

    def _topic(self, topic: str, msgtype: str) -> _PendingTopic:
        name = topic_name(topic)
        pending = self._topics.setdefault(name, _PendingTopic(msgtype))
        if pending.msgtype != msgtype:
            raise BagError(f"topic {name} already has type {pending.msgtype}, cannot add {msgtype}")
        return pending

    def write_raw(self, topic: str, msgtype: str, timestamps: ArrayLike, data: Sequence[bytes]) -> None:
        """Already-serialized CDR messages."""
        ts = _as_ns(timestamps, len(data), topic)
        pending = self._topic(topic, msgtype)
        pending.timestamps.append(ts)
        pending.data.append(list(data))

    def write_joint_states(
        self,
        topic: str,
        timestamps: ArrayLike,
        names: Sequence[str],
        position: ArrayLike | None = None,
        velocity: ArrayLike | None = None,
        effort: ArrayLike | None = None,
        *,
        stamps: ArrayLike | None = None,
        frame_id: str = "",
    ) -> None:
        """``sensor_msgs/JointState`` rows ``(N, n)``; ``stamps`` (header, ns) default to ``timestamps``."""
        ts_arr = np.asarray(timestamps)
        count = int(ts_arr.shape[0]) if ts_arr.ndim == 1 else -1
        ts = _as_ns(ts_arr, count, topic)
        st = ts if stamps is None else _as_ns(stamps, count, f"{topic} stamps")
        n = len(names)
        blocks = {
            "position": _rows(position, count, n, f"{topic} position"),
            "velocity": _rows(velocity, count, n, f"{topic} velocity"),
            "effort": _rows(effort, count, n, f"{topic} effort"),
        }
        counts = tuple(0 if b is None else n for b in blocks.values())
        layout = _cdr.joint_state_layout(frame_id, list(names), (counts[0], counts[1], counts[2]))
        floats = {k: v for k, v in blocks.items() if v is not None}
        matrix = _cdr.encode(layout, count, st, floats)
        pending = self._topic(topic, JOINT_STATE)
        pending.timestamps.append(ts)
        pending.data.append(matrix)

    def write_float64_multiarray(
        self, topic: str, timestamps: ArrayLike, data: ArrayLike, *, label: str | None = "joints"
    ) -> None:
        """``std_msgs/Float64MultiArray`` rows ``(N, m)``, layout one dim ``label`` (no layout if None)."""
        values = np.asarray(data, dtype=np.float64)
        if values.ndim != 2:
            raise BagError(f"{topic}: expected an (N, m) array, got shape {values.shape}")
        count, m = values.shape
        ts = _as_ns(timestamps, count, topic)
        dims = [] if label is None else [(label, m, m)]
        layout = _cdr.float64_multiarray_layout(dims, 0, m)
        matrix = _cdr.encode(layout, count, None, {"data": values})
        pending = self._topic(topic, FLOAT64_MULTIARRAY)
        pending.timestamps.append(ts)
        pending.data.append(matrix)

    def write_joint_trajectory(
        self,
        topic: str,
        timestamp: int,
        names: Sequence[str],
        times: ArrayLike,
        positions: ArrayLike,
        velocities: ArrayLike | None = None,
        accelerations: ArrayLike | None = None,
        *,
        stamp: int = 0,
        frame_id: str = "",
    ) -> None:
        """One ``trajectory_msgs/JointTrajectory`` (``times`` = ``time_from_start`` in seconds)."""
        ts = typestore()
        types = ts.types
        t = np.asarray(times, dtype=np.float64).reshape(-1)
        k, n = t.size, len(names)
        q = _rows(positions, k, n, f"{topic} positions")
        assert q is not None
        qd = _rows(velocities, k, n, f"{topic} velocities")
        qdd = _rows(accelerations, k, n, f"{topic} accelerations")
        empty = np.zeros(0)
        points = []
        for i in range(k):
            ns = round(t[i] * 1e9)
            points.append(
                types["trajectory_msgs/msg/JointTrajectoryPoint"](
                    positions=q[i].copy(),
                    velocities=empty if qd is None else qd[i].copy(),
                    accelerations=empty if qdd is None else qdd[i].copy(),
                    effort=empty,
                    time_from_start=types["builtin_interfaces/msg/Duration"](
                        sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000
                    ),
                )
            )
        header = types["std_msgs/msg/Header"](
            stamp=types["builtin_interfaces/msg/Time"](sec=stamp // 1_000_000_000, nanosec=stamp % 1_000_000_000),
            frame_id=frame_id,
        )
        msg = types[JOINT_TRAJECTORY](header=header, joint_names=list(names), points=points)
        self.write_raw(topic, JOINT_TRAJECTORY, [int(timestamp)], [bytes(ts.serialize_cdr(msg, JOINT_TRAJECTORY))])

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        plugin = StoragePlugin.MCAP if self.storage == "mcap" else StoragePlugin.SQLITE3
        writer = Writer(self.path, version=Writer.VERSION_LATEST, storage_plugin=plugin)
        try:
            writer.open()
            stamps: list[Int64Array] = []
            messages: list[bytes] = []
            connections = []
            for name, pending in self._topics.items():
                conn = writer.add_connection(name, pending.msgtype, typestore=typestore())
                stamps += pending.timestamps
                rows = _rows_as_bytes(pending.data)
                messages += rows
                connections += [conn] * len(rows)
            if messages:
                all_ts = np.concatenate(stamps)
                for j in np.argsort(all_ts, kind="stable").tolist():  # time order, topics in order added
                    writer.write(connections[j], int(all_ts[j]), messages[j])
            writer.close()
        except BaseException as exc:
            if writer.storage is not None:
                writer.abort()
            shutil.rmtree(self.path, ignore_errors=True)
            if isinstance(exc, (WriterError, OSError)):
                raise BagError(f"cannot write bag {self.path}: {exc}") from None
            raise

    def __enter__(self) -> BagWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self._closed = True


def _rows_as_bytes(parts: list[Sequence[bytes] | _cdr.UInt8Array]) -> list[bytes]:
    """A topic's messages (lists of bytes or ``(N, L)`` byte matrices) as one list of bytes."""
    out: list[bytes] = []
    for part in parts:
        if isinstance(part, np.ndarray):
            size = part.shape[1]
            blob = part.tobytes()
            out += [blob[k : k + size] for k in range(0, len(blob), size)]
        else:
            out += [bytes(r) for r in part]
    return out
