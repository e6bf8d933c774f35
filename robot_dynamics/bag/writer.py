"""Writing rosbag2 bags (sqlite3 and mcap) with ``rosbags``.

:class:`BagWriter` collects topics, then writes every message in time order on
:meth:`BagWriter.close`. ``JointState`` and ``Float64MultiArray`` rows are encoded as one byte matrix
(:mod:`robot_dynamics.bag._cdr`); trajectories message by message with ``rosbags``.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import numpy as np
from numpy.typing import ArrayLike
from rosbags.rosbag2 import StoragePlugin, Writer, WriterError

from robot_dynamics.bag import _cdr
from robot_dynamics.bag.reader import (
    FLOAT64_MULTIARRAY,
    JOINT_STATE,
    JOINT_TRAJECTORY,
    STORAGES,
    BagError,
    Int64Array,
    topic_name,
    typestore,
)
from robot_dynamics.model import FloatArray


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
        efforts: ArrayLike | None = None,
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
        tau = _rows(efforts, k, n, f"{topic} efforts")
        empty = np.zeros(0)
        points = []
        for i in range(k):
            ns = round(t[i] * 1e9)
            points.append(
                types["trajectory_msgs/msg/JointTrajectoryPoint"](
                    positions=q[i].copy(),
                    velocities=empty if qd is None else qd[i].copy(),
                    accelerations=empty if qdd is None else qdd[i].copy(),
                    effort=empty if tau is None else tau[i].copy(),
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
