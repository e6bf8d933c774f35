"""Decoding rosbag2 messages into arrays: ``JointState``, ``Float64MultiArray``, ``JointTrajectory``.

The raw messages come from :func:`robot_dynamics.bag.reader.read_topics`; :func:`decode_joint_states`,
:func:`decode_float64_multiarray` and :func:`decode_joint_trajectories` turn them into arrays. The
common case of a uniform ``JointState`` stream (same names and array lengths in every message) is
decoded as one byte matrix (:mod:`robot_dynamics.bag._cdr`); anything else message by message with
``rosbags``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.bag import _cdr
from robot_dynamics.bag.reader import (
    FLOAT64_MULTIARRAY,
    JOINT_STATE,
    JOINT_TRAJECTORY,
    BagError,
    Int64Array,
    RawTopic,
    deserialize,
    read_topics,
    short_type,
    topic_name,
)
from robot_dynamics.model import FloatArray
from robot_dynamics.trajectory import JointTrajectorySampler

_LOG = logging.getLogger("robot_dynamics.bag")


def _where(raw: RawTopic, row: int) -> str:
    return f"topic {raw.topic}, message {row} (t={int(raw.timestamps[row])} ns)"


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
    ``stamp`` (``header.stamp``, ns; 0 = start on receipt), point data ``(K, n)`` in ``names`` order
    (``efforts``: the points' ``effort``, None when they carry none)."""

    timestamp: int
    stamp: int
    names: tuple[str, ...]
    times: FloatArray
    positions: FloatArray
    velocities: FloatArray | None
    accelerations: FloatArray | None
    efforts: FloatArray | None = None

    @property
    def start(self) -> int:
        """When the trajectory starts (ns): its stamp, or its receive time when the stamp is zero."""
        return self.stamp if self.stamp > 0 else self.timestamp

    @property
    def ended_before_receipt(self) -> bool:
        """Whether its last point lies before its receive time (the feed-forward node refuses it)."""
        return self.start + round(float(self.times[-1]) * 1e9) < self.timestamp

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
            self.times, self.positions[:, index], pick(self.velocities), pick(self.accelerations), pick(self.efforts)
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
        for f in ("positions", "velocities", "accelerations", "effort"):
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
                int(timestamp),
                stamp,
                names,
                times,
                positions,
                blocks["velocities"],
                blocks["accelerations"],
                blocks["effort"],
            )
        )
    return out
