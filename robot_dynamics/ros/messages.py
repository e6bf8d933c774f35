"""Message-level machinery shared by the robot_dynamics nodes (no node, no executor).

* QoS profiles of the robot description and data topics;
* message validation: joint names matched to the model (any order, extra joints ignored for joint
  states), NaN/inf, lengths, trajectories;
* time and ``std_msgs/Float64MultiArray`` conversions;
* throttled warnings per reason, counters and the ``diagnostic_msgs`` key/values;
* :class:`StartupError`, the error that keeps a node from starting.

The node base class is in :mod:`robot_dynamics.ros.robot_node`, the process handling (signals,
executors, ``run_nodes``) in :mod:`robot_dynamics.ros.process`.
"""

from __future__ import annotations

import array
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time as TimeMsg
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from robot_dynamics.errors import StateError
from robot_dynamics.model import FloatArray
from robot_dynamics.trajectory import JointTrajectorySampler
from robot_dynamics.user_input import non_finite_message

#: QoS of the ``robot_description`` topic (as robot_state_publisher publishes it).
ROBOT_DESCRIPTION_QOS = QoSProfile(
    depth=1,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
#: QoS of the data topics (joint states, commands, trajectories): reliable, volatile, depth 100 — a
#: burst of joint states (0.1 s at 1 kHz) waits in the queue instead of being dropped.
DATA_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
#: Best-effort variant for ``*_qos: sensor_data`` parameters.
SENSOR_QOS = QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)
#: ``*_qos: latest``: reliable, one sample kept: a newer state replaces one still waiting (see ``ros/intake.py``).
LATEST_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
QOS_CHOICES = ("latest", "reliable", "sensor_data")


class StartupError(RuntimeError):
    """A problem that keeps a node from starting (bad robot description, bad parameter).

    ``run_nodes`` prints it as one fatal line and exits with status 1.
    """


def one_line(text: object) -> str:
    """``text`` on one line (parsers put newlines into their messages)."""
    return " ".join(str(text).split())


def qos_from_name(name: str) -> QoSProfile:
    profiles = {"latest": LATEST_QOS, "reliable": DATA_QOS, "sensor_data": SENSOR_QOS}
    if name not in profiles:
        raise StartupError(f"QoS parameter must be one of {list(QOS_CHOICES)}, got {name!r}")
    return profiles[name]


# ------------------------------------------------------------------------------------------------
# time
# ------------------------------------------------------------------------------------------------
def stamp_to_ns(stamp: Any) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def ns_to_stamp(ns: int) -> TimeMsg:
    return TimeMsg(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def duration_to_s(duration: Any) -> float:
    return float(duration.sec) + 1e-9 * float(duration.nanosec)


def waiting_messages(subscription: Any, raw: bool = False) -> Iterator[tuple[Any, int]]:
    """Takes the messages waiting in ``subscription``, oldest first, without an executor's callback:
    ``(message, received_ns)``, the middleware's receipt time (ns, system clock)."""
    handle, msg_type = subscription.handle, subscription.msg_type
    while True:
        with handle:
            got = handle.take_message(msg_type, raw)
        if got is None:
            return
        yield got[0], int(got[1]["received_timestamp"])


# ------------------------------------------------------------------------------------------------
# arrays <-> messages
# ------------------------------------------------------------------------------------------------
def as_double_array(values: FloatArray) -> array.array[float]:
    """A float64 ``array.array`` (the fast path of the message setters) from a NumPy array."""
    return array.array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())


def to_multiarray(values: Any, labels: Sequence[str]) -> Float64MultiArray:
    """``Float64MultiArray`` of a row-major array with a filled layout (labels, sizes, strides)."""
    arr = np.ascontiguousarray(values, dtype=np.float64)
    if arr.ndim != len(labels):
        raise ValueError(f"{arr.ndim}-d array but {len(labels)} dimension labels {list(labels)}")
    msg = Float64MultiArray()
    msg.layout.data_offset = 0
    msg.layout.dim = [
        MultiArrayDimension(label=label, size=int(size), stride=int(np.prod(arr.shape[i:], dtype=np.int64)))
        for i, (label, size) in enumerate(zip(labels, arr.shape, strict=True))
    ]
    msg.data = as_double_array(arr.reshape(-1))
    return msg


def from_multiarray(msg: Float64MultiArray) -> FloatArray:
    """The array a ``Float64MultiArray`` describes (layout sizes, offset; flat if there is no layout)."""
    data = np.asarray(msg.data, dtype=np.float64)
    dims = list(msg.layout.dim)
    offset = int(msg.layout.data_offset)
    if not dims:
        return data[offset:].copy()
    shape = tuple(int(d.size) for d in dims)
    count = int(np.prod(shape, dtype=np.int64))
    if data.size < offset + count:
        raise ValueError(f"Float64MultiArray: layout {shape} needs {offset + count} values, data has {data.size}")
    return data[offset : offset + count].reshape(shape).copy()


def all_finite(values: Sequence[float]) -> bool:
    """Whether every value is finite; a list of floats is the fast case (no NumPy call).

    An exact sum (``math.fsum``) is finite only if every value is; when it is not (an inf or nan, or
    an overflow of the sum of large finite values) the values are checked one by one.
    """
    try:
        if math.isfinite(math.fsum(values)):
            return True
    except (OverflowError, ValueError):
        pass
    return bool(np.isfinite(np.asarray(values, dtype=np.float64)).all())


# ------------------------------------------------------------------------------------------------
# joint names and joint-state messages
# ------------------------------------------------------------------------------------------------
def _duplicates(names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    dupes: list[str] = []
    for n in names:
        if n in seen and n not in dupes:
            dupes.append(n)
        seen.add(n)
    return dupes


def name_index(model_joints: Sequence[str], names: Sequence[str], *, allow_extra: bool, what: str) -> np.ndarray:
    """Indices into ``names`` of every model joint (model order); StateError naming the problem.

    ``allow_extra``: names that are not model joints are ignored (joint states of a bigger robot);
    otherwise they are rejected as unknown.
    """
    if not names:
        raise StateError(f"{what}: no joint names")
    dupes = _duplicates(names)
    if dupes:
        raise StateError(f"{what}: duplicate joint names {dupes}")
    lookup = {name: i for i, name in enumerate(names)}
    problems = []
    if not allow_extra:
        known = set(model_joints)
        unknown = [n for n in names if n not in known]
        if unknown:
            problems.append(f"unknown joints {unknown}")
    missing = [j for j in model_joints if j not in lookup]
    if missing:
        problems.append(f"missing joints {missing}")
    if problems:
        raise StateError(f"{what}: {', '.join(problems)} (the model has {list(model_joints)})")
    return np.array([lookup[j] for j in model_joints], dtype=np.intp)


class JointStateMatcher:
    """Picks the model's joints out of ``sensor_msgs/JointState`` messages (by name, any order).

    The name → index map is cached per name list, so the per-message cost is a dictionary lookup,
    two gathers and a finiteness check. Extra joints are ignored; an empty velocity means zero.
    """

    def __init__(self, joint_names: Sequence[str]) -> None:
        self.joint_names = list(joint_names)
        self._cache: dict[tuple[str, ...], np.ndarray | str] = {}
        self._zeros = np.zeros(len(self.joint_names))

    def match(self, msg: Any, what: str = "joint_states") -> tuple[FloatArray, FloatArray]:
        key = tuple(msg.name)
        index = self._cache.get(key)
        if index is None:
            try:
                index = name_index(self.joint_names, key, allow_extra=True, what=what)
            except StateError as exc:
                index = str(exc)
            if len(self._cache) > 64:
                self._cache.clear()
            self._cache[key] = index
        if isinstance(index, str):
            raise StateError(index)
        count = len(key)
        position, velocity = msg.position, msg.velocity  # array.array('d'): each property read once
        if len(position) != count:
            raise StateError(f"{what}: {len(position)} positions for {count} joint names")
        q = np.frombuffer(position, dtype=np.float64)[index]
        if len(velocity):
            if len(velocity) != count:
                raise StateError(f"{what}: {len(velocity)} velocities for {count} joint names")
            qd = np.frombuffer(velocity, dtype=np.float64)[index]
        else:
            qd = self._zeros.copy()
        # Fast proof that every value is finite: a finite exact sum of the message's arrays (an inf or
        # nan makes it inf/nan or raises). Otherwise (possibly only an ignored joint, or an overflow of
        # the sum) the model joints are checked one by one.
        try:
            finite = math.isfinite(math.fsum(position)) and math.isfinite(math.fsum(velocity))
        except (OverflowError, ValueError):
            finite = False
        if not finite and not (np.isfinite(q).all() and np.isfinite(qd).all()):
            problem = non_finite_message(f"{what}: position", q, self.joint_names)
            problem = problem or non_finite_message(f"{what}: velocity", qd, self.joint_names)
            raise StateError(problem)
        return q, qd


def ordered_arrays(
    model_joints: Sequence[str],
    joint_names: Sequence[str],
    arrays: Mapping[str, Sequence[float]],
    required: Iterable[str] = (),
    what: str = "request",
) -> dict[str, FloatArray]:
    """Service-request arrays in the model's joint order.

    ``joint_names`` empty = the arrays are in the model order. Otherwise every model joint must be
    named exactly once and no unknown names are allowed. Optional arrays may be empty (= zeros).
    """
    n = len(model_joints)
    if joint_names:
        index = name_index(model_joints, list(joint_names), allow_extra=False, what=what)
        count = len(joint_names)
    else:
        index = np.arange(n, dtype=np.intp)
        count = n
    required = set(required)
    out: dict[str, FloatArray] = {}
    for field, values in arrays.items():
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
        if arr.size == 0 and field not in required:
            out[field] = np.zeros(n)
            continue
        if arr.size != count:
            names = "joint names" if joint_names else "model joints"
            raise StateError(f"{what}: {field} has {arr.size} values for {count} {names}")
        problem = non_finite_message(f"{what}: {field}", arr, list(joint_names) if joint_names else model_joints)
        if problem:
            raise StateError(problem)
        out[field] = arr[index]
    return out


def trajectory_from_msg(msg: Any, model_joints: Sequence[str]) -> JointTrajectorySampler:
    """A sampler (model joint order) of a ``trajectory_msgs/JointTrajectory``; StateError if invalid.

    Every model joint must be in ``joint_names`` and no other; every point needs positions; velocities,
    accelerations and efforts are all-or-nothing over the points.
    """
    names = list(msg.joint_names)
    index = name_index(model_joints, names, allow_extra=False, what="trajectory")
    points = list(msg.points)
    if not points:
        raise StateError("trajectory has no points")
    count = len(names)
    fields: dict[str, list[Any]] = {"positions": [], "velocities": [], "accelerations": [], "effort": []}
    for k, point in enumerate(points):
        for field, rows in fields.items():
            values = getattr(point, field)
            if len(values) not in (0, count) or (field == "positions" and len(values) != count):
                raise StateError(f"trajectory point {k}: {len(values)} {field} for {count} joint names")
            problem = non_finite_message(f"trajectory point {k}: {field}", values, names) if len(values) else None
            if problem:
                raise StateError(problem)
            rows.append(values)
    blocks: dict[str, FloatArray | None] = {}
    for field, rows in fields.items():
        given = [len(r) > 0 for r in rows]
        if all(given):
            blocks[field] = np.array([np.asarray(r, dtype=np.float64) for r in rows])[:, index]
        elif any(given):
            k = given.index(False)
            raise StateError(f"trajectory: {field} given for some points but not for point {k}")
        else:
            blocks[field] = None
    times = [duration_to_s(p.time_from_start) for p in points]
    positions = blocks["positions"]
    assert positions is not None
    return JointTrajectorySampler(times, positions, blocks["velocities"], blocks["accelerations"], blocks["effort"])


# ------------------------------------------------------------------------------------------------
# throttled warnings, statistics, diagnostics
# ------------------------------------------------------------------------------------------------
class ThrottledWarnings:
    """At most one warning per reason every ``period`` seconds, with a count of the suppressed ones."""

    def __init__(
        self, emit: Callable[[str], object], period: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.emit = emit
        self.period = period
        self.clock = clock
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def warn(self, reason: str, message: str) -> bool:
        now = self.clock()
        last = self._last.get(reason)
        if last is not None and now - last < self.period:
            self._suppressed[reason] = self._suppressed.get(reason, 0) + 1
            return False
        suppressed = self._suppressed.pop(reason, 0)
        self._last[reason] = now
        note = f" ({suppressed} similar messages suppressed)" if suppressed else ""
        self.emit(f"{message}{note}")
        return True


class ComputeStats:
    """Counters and ring buffers of per-message times, summarised per diagnostics period: the compute
    (what the node does with a message) and, for nodes that publish per message, the DDS writes."""

    def __init__(self, window: int = 4096) -> None:
        self.received = 0
        self.published = 0
        self.rejected = 0
        self.rejected_by_reason: dict[str, int] = {}
        self._times = np.zeros(window)
        self._publish = np.full(window, np.nan)
        self._count = 0
        self._window_start = time.monotonic()
        self._window_received = 0
        self._window_rejected = 0

    def record_compute(self, seconds: float, publish_seconds: float | None = None) -> None:
        slot = self._count % self._times.size
        self._times[slot] = seconds
        self._publish[slot] = np.nan if publish_seconds is None else publish_seconds
        self._count += 1

    def reject(self, reason: str) -> None:
        self.rejected += 1
        self.rejected_by_reason[reason] = self.rejected_by_reason.get(reason, 0) + 1

    def summary(self) -> dict[str, float]:
        """Rate (Hz), times (µs) and rejections since the previous summary: ``compute_*``, and for the
        messages whose outputs were published ``publish_*`` (the DDS writes) and ``callback_*`` (the
        two together, per message)."""
        now = time.monotonic()
        elapsed = max(now - self._window_start, 1e-9)
        n = min(self._count, self._times.size)
        times = self._times[:n] * 1e6
        out = {
            "rate_hz": (self.received - self._window_received) / elapsed,
            "rejected_in_window": float(self.rejected - self._window_rejected),
            **_spread("compute", times),
            "computes_in_window": float(self._count),
        }
        published = ~np.isnan(self._publish[:n])
        if published.any():
            writes = self._publish[:n][published] * 1e6
            out.update(_spread("publish", writes))
            out.update(_spread("callback", times[published] + writes))
        self._window_start = now
        self._window_received = self.received
        self._window_rejected = self.rejected
        self._count = 0
        return out


def _spread(name: str, times: np.ndarray) -> dict[str, float]:
    n = times.size
    return {
        f"{name}_mean_us": float(times.mean()) if n else 0.0,
        f"{name}_p99_us": float(np.percentile(times, 99)) if n else 0.0,
        f"{name}_max_us": float(times.max()) if n else 0.0,
    }


def diagnostic_dict(status: DiagnosticStatus) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}
