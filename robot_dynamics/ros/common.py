"""Machinery shared by the robot_dynamics nodes.

* robot loading from the ``robot_description`` parameter (URDF text), the ``robot_description`` topic
  (``std_msgs/String``, reliable + transient-local, as ``robot_state_publisher`` publishes it) or the
  ``robot_config`` parameter (DH YAML path, URDF path or bundled robot name; default the bundled
  default robot), with ``base_link``/``tip_link``, ``locked_joints`` and an optional ``gravity``
  override; ``joint_map`` renames the model's joints to the topics' names, so every interface of
  the node (joint states, trajectories, outputs, service requests and responses) uses those;
* message validation: joint names matched to the model (any order, extra joints ignored for joint
  states), NaN/inf, lengths, trajectories;
* throttled warnings per reason, counters and ``diagnostic_msgs/DiagnosticArray`` status;
* ``std_msgs/Float64MultiArray`` layout helpers;
* ``run_nodes``: the ``main()`` of every executable (one clear fatal line and exit status 1 when the
  robot description is bad).
"""

from __future__ import annotations

import array
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import rclpy
from builtin_interfaces.msg import Time as TimeMsg
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import ParameterUninitializedException
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String

from robot_dynamics.dynamics import prepare
from robot_dynamics.errors import RobotDynamicsError, StateError
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.trajectory import JointTrajectorySampler
from robot_dynamics.user_input import non_finite_message, parse_joint_map, parse_locked_joints, renamed_model

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


class StartupError(RuntimeError):
    """A problem that keeps a node from starting (bad robot description, bad parameter).

    ``run_nodes`` prints it as one fatal line and exits with status 1.
    """


def one_line(text: object) -> str:
    """``text`` on one line (parsers put newlines into their messages)."""
    return " ".join(str(text).split())


def qos_from_name(name: str) -> QoSProfile:
    if name == "reliable":
        return DATA_QOS
    if name == "sensor_data":
        return SENSOR_QOS
    raise StartupError(f"QoS parameter must be 'reliable' or 'sensor_data', got {name!r}")


# ------------------------------------------------------------------------------------------------
# time
# ------------------------------------------------------------------------------------------------
def stamp_to_ns(stamp: Any) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def ns_to_stamp(ns: int) -> TimeMsg:
    return TimeMsg(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def duration_to_s(duration: Any) -> float:
    return float(duration.sec) + 1e-9 * float(duration.nanosec)


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
        position = np.frombuffer(msg.position, dtype=np.float64) if len(msg.position) else np.empty(0)
        if position.size != count:
            raise StateError(f"{what}: {position.size} positions for {count} joint names")
        q = position[index]
        if len(msg.velocity):
            velocity = np.frombuffer(msg.velocity, dtype=np.float64)
            if velocity.size != count:
                raise StateError(f"{what}: {velocity.size} velocities for {count} joint names")
            qd = velocity[index]
        else:
            qd = self._zeros.copy()
        if not (np.isfinite(q).all() and np.isfinite(qd).all()):
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

    Every model joint must be in ``joint_names`` and no other; every point needs positions; velocities
    and accelerations are all-or-nothing over the points.
    """
    names = list(msg.joint_names)
    index = name_index(model_joints, names, allow_extra=False, what="trajectory")
    points = list(msg.points)
    if not points:
        raise StateError("trajectory has no points")
    count = len(names)
    fields: dict[str, list[Any]] = {"positions": [], "velocities": [], "accelerations": []}
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
    return JointTrajectorySampler(times, positions, blocks["velocities"], blocks["accelerations"])


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
    """Counters and a ring buffer of compute times, summarised per diagnostics period."""

    def __init__(self, window: int = 4096) -> None:
        self.received = 0
        self.published = 0
        self.rejected = 0
        self.rejected_by_reason: dict[str, int] = {}
        self._times = np.zeros(window)
        self._count = 0
        self._window_start = time.monotonic()
        self._window_received = 0
        self._window_rejected = 0

    def record_compute(self, seconds: float) -> None:
        self._times[self._count % self._times.size] = seconds
        self._count += 1

    def reject(self, reason: str) -> None:
        self.rejected += 1
        self.rejected_by_reason[reason] = self.rejected_by_reason.get(reason, 0) + 1

    def summary(self) -> dict[str, float]:
        """Rate (Hz), compute times (µs) and rejections since the previous summary."""
        now = time.monotonic()
        elapsed = max(now - self._window_start, 1e-9)
        n = min(self._count, self._times.size)
        times = self._times[:n] * 1e6
        out = {
            "rate_hz": (self.received - self._window_received) / elapsed,
            "rejected_in_window": float(self.rejected - self._window_rejected),
            "compute_mean_us": float(times.mean()) if n else 0.0,
            "compute_p99_us": float(np.percentile(times, 99)) if n else 0.0,
            "compute_max_us": float(times.max()) if n else 0.0,
            "computes_in_window": float(self._count),
        }
        self._window_start = now
        self._window_received = self.received
        self._window_rejected = self.rejected
        self._count = 0
        return out


# ------------------------------------------------------------------------------------------------
# robot loading
# ------------------------------------------------------------------------------------------------
def load_robot_model(
    description: str,
    config: str,
    base_link: str = "",
    tip_link: str = "",
    gravity: Sequence[float] | None = None,
    warn: Callable[[str], object] | None = None,
    locked_joints: Mapping[str, float] | None = None,
    joint_map: Mapping[str, str] | None = None,
) -> RobotModel:
    """The model from URDF text (``description``, preferred) or a robot config; StartupError if bad.

    ``locked_joints`` (``{name: position}``) are made rigid by the loader; ``joint_map`` (``{topic
    name: model name}``) renames the model's joints to the topics' names. Python warnings of the
    loader (e.g. ``ModelWarning``) go to ``warn`` (one line each).
    """
    from robot_dynamics.models import DEFAULT_ROBOT, load_robot  # the models area; imported when needed

    if description.strip():
        what, source = "the robot_description URDF", description
    else:
        source = config.strip() or DEFAULT_ROBOT
        what = f"robot_config {source!r}"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = load_robot(
                source,
                base_link or None,
                tip_link or None,
                locked_joints=dict(locked_joints) if locked_joints else None,
            )
    except (ValueError, KeyError, OSError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        raise StartupError(f"cannot load {what}: {one_line(message)}") from None
    for w in caught:
        (warn or (lambda text: print(text, file=sys.stderr)))(f"{what}: {one_line(w.message)}")
    if model.dof == 0:
        raise StartupError(f"cannot use {what}: the chain {model.base_link!r} -> {model.tip_link!r} has no joints")
    if gravity is not None and len(gravity) > 0:
        g = np.asarray(gravity, dtype=np.float64)
        if g.shape != (3,) or not np.isfinite(g).all():
            raise StartupError(f"parameter gravity must be 3 finite numbers (world frame), got {list(gravity)}")
        model = model.with_changes(gravity=g)
    try:
        return renamed_model(model, joint_map or {}, "parameter joint_map")
    except RobotDynamicsError as exc:
        raise StartupError(f"cannot use {what}: {one_line(exc)}") from None


ParameterCheck = Callable[[Any], "str | None"]


class RobotNode(Node):
    """Base of the robot_dynamics nodes: robot parameters and loading, diagnostics, rejections.

    Subclasses declare their own parameters, create their interfaces, then call :meth:`start_robot`;
    :meth:`on_model` is called whenever a (new) model is ready.
    """

    def __init__(self, node_name: str, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.model: RobotModel | None = None
        self.backend = "python"
        self.stats = ComputeStats()
        self._dynamic: dict[str, tuple[ParameterCheck, Callable[[Any], None]]] = {}
        self._model_lock = threading.Lock()
        self.declare("robot_description", "", "URDF XML of the robot (preferred over robot_config)", read_only=True)
        self.declare(
            "robot_config",
            "",
            "DH YAML path, URDF path or bundled robot name when robot_description is empty "
            "(empty = the bundled default robot)",
            read_only=True,
        )
        self.declare(
            "use_robot_description_topic",
            False,
            "wait for the URDF on the robot_description topic (transient local) when the "
            "robot_description parameter is empty",
            read_only=True,
        )
        self.declare("robot_description_timeout", 0.0, "seconds to wait for the robot_description topic (0 = forever)")
        self.declare("base_link", "", "first link of the chain (empty = the model's root)", read_only=True)
        self.declare("tip_link", "", "last link of the chain (empty = the model's tip)", read_only=True)
        self.declare_untyped(
            "locked_joints",
            "joints made rigid, as 'NAME=POSITION' strings (rad or m; 'NAME' alone = 0), e.g. "
            "['panda_finger_joint1', 'panda_finger_joint2=0.04']",
        )
        self.declare_untyped(
            "joint_map",
            "topic joint names of model joints, as 'TOPIC_NAME=MODEL_NAME' strings; the node then uses the "
            "topic names everywhere (inputs, outputs, services)",
        )
        self.declare_parameter(
            "gravity",
            Parameter.Type.DOUBLE_ARRAY,
            ParameterDescriptor(description="gravity vector in the world frame, m/s^2 (unset = the model's)"),
        )
        self.declare(
            "backend",
            "native",
            "engine backend: native (the model's programs compiled to C once, cached; falls back to python "
            "with a warning when no C compiler is available) or python",
            read_only=True,
        )
        self.declare("diagnostics_period", 1.0, "seconds between diagnostic_msgs status messages", read_only=True)
        self.declare("warning_period", 5.0, "seconds between repeated warnings of one kind", read_only=True)
        self.warnings = ThrottledWarnings(self.get_logger().warning, float(self.param("warning_period")))
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        # housekeeping on the steady clock: a node on use_sim_time reports and times out before /clock runs
        self.steady_clock = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(float(self.param("diagnostics_period")), self._publish_diagnostics, clock=self.steady_clock)
        self.add_on_set_parameters_callback(self._check_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)
        self._waiting_since = time.monotonic()
        self._description_sub: Any = None
        self._locks: dict[str, float] = {}
        self._joint_map: dict[str, str] = {}

    # -- parameters -------------------------------------------------------------------------------
    def declare(self, name: str, default: Any, description: str, *, read_only: bool = False) -> None:
        self.declare_parameter(name, default, ParameterDescriptor(description=description, read_only=read_only))

    def declare_untyped(self, name: str, description: str) -> None:
        """A read-only parameter that may be left unset (string arrays: ROS cannot type an empty list)."""
        self.declare_parameter(
            name, None, ParameterDescriptor(description=description, read_only=True, dynamic_typing=True)
        )

    def param(self, name: str) -> Any:
        return self.get_parameter(name).value

    def string_list_param(self, name: str) -> list[str]:
        """A string-array parameter; a single string is split at commas; unset = empty."""
        value = self.optional_param(name)
        if value is None:
            return []
        if isinstance(value, str):
            return [item for item in (part.strip() for part in value.split(",")) if item]
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return list(value)
        raise StartupError(f"parameter {name}: expected a string array such as ['a=b'], got {value!r}")

    def robot_options(self) -> tuple[dict[str, float], dict[str, str]]:
        """The ``locked_joints`` and ``joint_map`` parameters, parsed; StartupError if malformed."""
        try:
            locks = parse_locked_joints(self.string_list_param("locked_joints"), "parameter locked_joints")
            mapping = parse_joint_map(self.string_list_param("joint_map"), "parameter joint_map")
        except RobotDynamicsError as exc:
            raise StartupError(str(exc)) from None
        return locks, mapping

    def optional_param(self, name: str) -> Any:
        """The value of a parameter declared without a default, or None when it was not set."""
        try:
            return self.get_parameter(name).value
        except ParameterUninitializedException:
            return None

    def declare_dynamic(
        self, name: str, default: Any, description: str, check: ParameterCheck, apply: Callable[[Any], None]
    ) -> None:
        """A parameter that may change at run time: ``check(value)`` returns an error or None."""
        self.declare(name, default, description)
        error = check(self.param(name))
        if error:
            raise StartupError(f"parameter {name}: {error}")
        self._dynamic[name] = (check, apply)
        apply(self.param(name))

    def _check_parameters(self, params: list[Parameter[Any]]) -> SetParametersResult:
        for p in params:
            if p.name in self._dynamic:
                error = self._dynamic[p.name][0](p.value)
                if error:
                    return SetParametersResult(successful=False, reason=f"{p.name}: {error}")
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params: list[Parameter[Any]]) -> None:
        for p in params:
            if p.name in self._dynamic:
                self._dynamic[p.name][1](p.value)
                self.get_logger().info(f"parameter {p.name} = {p.value}")

    # -- robot ------------------------------------------------------------------------------------
    def start_robot(self) -> None:
        """Load the model now, or subscribe to the robot_description topic; StartupError if bad."""
        description = str(self.param("robot_description"))
        gravity = self.optional_param("gravity")
        self._gravity = None if gravity is None else list(gravity)
        self._locks, self._joint_map = self.robot_options()
        if not description.strip() and self.param("use_robot_description_topic"):
            self._description_sub = self.create_subscription(
                String, "robot_description", self._on_description, ROBOT_DESCRIPTION_QOS
            )
            timeout = float(self.param("robot_description_timeout"))
            if timeout > 0.0:
                self._description_deadline = self.create_timer(
                    timeout, self._description_timeout, clock=self.steady_clock
                )
            self.get_logger().info(
                f"waiting for the robot on {self.resolve_topic_name('robot_description')} (transient local)"
            )
            return
        self._set_model(
            load_robot_model(
                description,
                str(self.param("robot_config")),
                self.param("base_link"),
                self.param("tip_link"),
                self._gravity,
                self.get_logger().warning,
                self._locks,
                self._joint_map,
            )
        )

    def _on_description(self, msg: String) -> None:
        first = self.model is None
        try:
            model = load_robot_model(
                msg.data,
                "",
                self.param("base_link"),
                self.param("tip_link"),
                self._gravity,
                self.get_logger().warning,
                self._locks,
                self._joint_map,
            )
        except StartupError as exc:
            if first:
                raise StartupError(f"robot_description topic: {exc}") from None
            self.warnings.warn("robot_description", f"ignoring a new robot_description: {exc}")
            return
        if first and hasattr(self, "_description_deadline"):
            self._description_deadline.cancel()
        self._set_model(model)

    def _description_timeout(self) -> None:
        if self.model is None:
            raise StartupError(
                f"no robot_description received on {self.resolve_topic_name('robot_description')} "
                f"within {self.param('robot_description_timeout')} s"
            )

    def _set_model(self, model: RobotModel) -> None:
        backend = str(self.param("backend"))
        if backend not in ("native", "python"):
            raise StartupError(f"parameter backend: {backend!r} is not 'native' or 'python'")
        self.backend = prepare(model, backend)  # compiles (or loads from the cache) before any message
        with self._model_lock:
            self.on_model(model)
            self.model = model
        mapped = f" (topic names; joint_map {self._joint_map})" if self._joint_map else ""
        locked = f", locked joints {self._locks}" if self._locks else ""
        self.get_logger().info(
            f"robot {model.name!r}: {model.dof} joints {model.joint_names}{mapped}{locked}, "
            f"{model.base_link} -> {model.tip_link}, gravity {model.gravity.tolist()}, {self.backend} backend"
        )

    def on_model(self, model: RobotModel) -> None:
        """Hook: prepare caches for ``model`` (called before it becomes ``self.model``)."""

    # -- rejections and diagnostics ---------------------------------------------------------------
    def reject(self, reason: str, detail: object) -> None:
        """Count a dropped message and warn (throttled per reason)."""
        self.stats.reject(reason)
        self.warnings.warn(reason, f"dropped {reason}: {one_line(detail)}")

    def diagnostic_values(self) -> list[tuple[str, str]]:
        """Hook: node-specific key/values for the diagnostics status."""
        return []

    def diagnostic_level(self) -> tuple[bytes, str] | None:
        """Hook: override the level and message of the status."""
        return None

    def _publish_diagnostics(self) -> None:
        s = self.stats.summary()
        model = self.model
        if model is None:
            level, message = DiagnosticStatus.WARN, "waiting for robot_description"
        elif s["rejected_in_window"] > 0:
            level, message = DiagnosticStatus.WARN, f"{int(s['rejected_in_window'])} messages rejected"
        else:
            level, message = DiagnosticStatus.OK, "ok"
        override = self.diagnostic_level()
        if override is not None:
            level, message = override
        values = [
            ("robot", model.name if model else ""),
            ("joints", ",".join(model.joint_names) if model else ""),
            ("rate_hz", f"{s['rate_hz']:.1f}"),
            ("received", str(self.stats.received)),
            ("published", str(self.stats.published)),
            ("rejected", str(self.stats.rejected)),
            ("compute_mean_us", f"{s['compute_mean_us']:.1f}"),
            ("compute_p99_us", f"{s['compute_p99_us']:.1f}"),
            ("compute_max_us", f"{s['compute_max_us']:.1f}"),
            *((f"rejected[{k}]", str(v)) for k, v in sorted(self.stats.rejected_by_reason.items())),
            *((("joint_map", ",".join(f"{t}={m}" for t, m in self._joint_map.items())),) if self._joint_map else ()),
            *self.diagnostic_values(),
        ]
        status = DiagnosticStatus(
            level=level,
            name=f"robot_dynamics: {self.get_fully_qualified_name()}",
            message=message,
            hardware_id=model.name if model else "",
            values=[KeyValue(key=k, value=v) for k, v in values],
        )
        out = DiagnosticArray(status=[status])
        out.header.stamp = self.get_clock().now().to_msg()
        self.diagnostics_pub.publish(out)


def diagnostic_dict(status: DiagnosticStatus) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


# ------------------------------------------------------------------------------------------------
# running nodes
# ------------------------------------------------------------------------------------------------
NodeFactory = Callable[[], Node]


def _fatal(name: str, message: str) -> None:
    rclpy.logging.get_logger(name).fatal(one_line(message))


def make_executor(context: rclpy.context.Context | None = None) -> SingleThreadedExecutor:
    return SingleThreadedExecutor(context=context)


class StopRequest:
    """SIGINT/SIGTERM handler of the executables, installed instead of rclpy's own.

    rclpy's handler triggers every executor's SIGINT guard condition from a thread of its own;
    shutting the executors down in the main thread destroys those guard conditions, and the two
    race: a segmentation fault on Ctrl-C (seen about once in 30 stops of the bringup under load,
    in ``rmw_trigger_guard_condition`` on rclpy's signal thread). This handler only records the
    request; the main thread then stops the executors, joins their threads and destroys the nodes,
    in that order. Before spinning starts, a signal raises ``KeyboardInterrupt`` so a Ctrl-C during
    a long startup (compiling the native backend) is not ignored.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False
        self.spinning = False  # stays True once set: a second Ctrl-C must not interrupt the teardown
        self._previous: dict[int, Any] = {}

    def __call__(self, signum: int, frame: Any) -> None:
        self.requested = True
        if not self.spinning:
            raise KeyboardInterrupt

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self) for s in self.SIGNALS}

    def restore(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}


def stop_executors(executors: Sequence[Executor], threads: Sequence[threading.Thread], timeout: float) -> list[bool]:
    """Shut the executors down (waking their wait sets), join their spin threads; which ones stopped.

    ``timeout`` bounds the whole join. Only a node whose thread stopped may be destroyed:
    destroying a node another thread still spins crashes rclpy.
    """
    for executor in executors:
        executor.shutdown(timeout_sec=timeout)
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    return [not thread.is_alive() for thread in threads]


def spin_nodes(
    nodes: list[Node],
    context: rclpy.context.Context | None = None,
    stop: StopRequest | None = None,
    join_timeout: float = 10.0,
) -> int:
    """Spin each node in its own executor thread until a stop request, a shutdown or a node's failure.

    Returns 1 if a node hit a StartupError. On return every executor thread has stopped, so the
    caller may destroy the nodes (destroying a node another thread still spins crashes rclpy); a
    thread that does not stop within ``join_timeout`` is named in an error and its node is left
    alone (removed from ``nodes``).
    """
    stop = stop if stop is not None else StopRequest()
    failures: list[tuple[str, BaseException]] = []
    done = threading.Event()

    def spin(node: Node, executor: SingleThreadedExecutor) -> None:
        try:
            executor.spin()
        except (ExternalShutdownException, KeyboardInterrupt):
            pass
        except BaseException as exc:  # reported by the main thread
            if node.context.ok() and not stop.requested:  # errors while stopping are not failures
                failures.append((node.get_name(), exc))
        finally:
            done.set()

    executors: list[SingleThreadedExecutor] = []
    threads: list[threading.Thread] = []
    ctx = context if context is not None else nodes[0].context
    # Before the first thread starts: from here on a signal only sets ``stop.requested`` and the
    # ``finally`` below stops every executor already started. (Set after the loop, a Ctrl-C while
    # a later thread was starting raised KeyboardInterrupt past the teardown: the process then
    # finalised with executor threads inside rcl_wait and aborted, "terminate called without an
    # active exception".)
    stop.spinning = True
    try:
        for node in nodes:
            executor = make_executor(context)
            executor.add_node(node)
            executors.append(executor)
            thread = threading.Thread(target=spin, args=(node, executor), name=f"spin-{node.get_name()}", daemon=True)
            threads.append(thread)
            thread.start()
        # poll: a signal handler must not touch a lock the main thread may hold (Event.set would)
        while not stop.requested and not done.is_set() and ctx.ok():
            time.sleep(0.05)
    finally:
        stopped = stop_executors(executors, threads, join_timeout)
        for node, ok in zip(nodes[: len(stopped)], stopped, strict=True):  # unstarted nodes are idle
            if not ok:
                _fatal(node.get_name(), f"executor thread did not stop within {join_timeout} s; node left undestroyed")
                nodes.remove(node)
    for name, exc in failures:
        if isinstance(exc, StartupError):
            _fatal(name, str(exc))
            return 1
        raise exc
    return 0


def run_nodes(factories: Sequence[tuple[str, NodeFactory]], args: Sequence[str] | None = None) -> int:
    """``main()`` of the executables: init, build the nodes, spin; exit status.

    A StartupError (or a bad ``--ros-args``) becomes one fatal log line and status 1; Ctrl-C or
    SIGTERM (what ``ros2 launch`` sends) stops the nodes cleanly with status 0 (see StopRequest).
    """
    argv = list(sys.argv if args is None else args)
    label = factories[0][0] if factories else "robot_dynamics"
    stop = StopRequest()
    stop.install()
    nodes: list[Node] = []
    try:
        try:
            rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
        except Exception as exc:  # rcl argument/parameter-file errors
            print(f"[FATAL] [{label}]: {one_line(exc)}", file=sys.stderr)
            return 1
        for name, factory in factories:
            try:
                nodes.append(factory())
            except StartupError as exc:
                _fatal(name, str(exc))
                return 1
        return spin_nodes(nodes, stop=stop)
    except KeyboardInterrupt:  # a stop request before spinning started
        return 0
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown()
        stop.restore()
