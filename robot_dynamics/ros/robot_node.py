"""The base of the robot_dynamics nodes: robot loading from parameters, diagnostics, rejections.

* robot loading from the ``robot_description`` parameter (URDF text), the ``robot_description`` topic
  (``std_msgs/String``, reliable + transient-local, as ``robot_state_publisher`` publishes it) or the
  ``robot_config`` parameter (DH YAML path, URDF path or bundled robot name; default the bundled
  default robot), with ``base_link``/``tip_link``, ``locked_joints`` and an optional ``gravity``
  override; ``joint_map`` renames the model's joints to the topics' names, so every interface of
  the node (joint states, trajectories, outputs, service requests and responses) uses those;
* :class:`RobotNode`: parameters (static and dynamic), the model, throttled warnings, counters and
  the ``diagnostic_msgs/DiagnosticArray`` status.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType
from rclpy.parameter import Parameter
from std_msgs.msg import String

from robot_dynamics._native import resolve_backend
from robot_dynamics.dynamics import prepare
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.model import RobotModel
from robot_dynamics.models import DEFAULT_ROBOT, load_robot
from robot_dynamics.ros.messages import ROBOT_DESCRIPTION_QOS, ComputeStats, StartupError, ThrottledWarnings, one_line
from robot_dynamics.ros.parameters import (
    CheckedParameterNode,
    ParameterCheck,
    check_bool,
    check_choice,
    check_non_negative,
    check_positive,
)
from robot_dynamics.user_input import parse_joint_map, parse_locked_joints, renamed_model


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


class RobotNode(CheckedParameterNode):
    """Base of the robot_dynamics nodes: robot parameters and loading, diagnostics, rejections.

    Subclasses declare their own parameters, create their interfaces, then call :meth:`start_robot`;
    :meth:`on_model` is called whenever a (new) model is ready.
    """

    def __init__(self, node_name: str, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.model: RobotModel | None = None
        self.backend = "python"
        self.stats = ComputeStats()
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
        self.declare(
            "robot_description_timeout",
            0.0,
            "seconds to wait for the robot_description topic (0 = forever)",
            check=check_non_negative("s"),
        )
        self.declare("base_link", "", "first link of the chain (empty = the model's root)", read_only=True)
        self.declare("tip_link", "", "last link of the chain (empty = the model's tip)", read_only=True)
        self.declare_optional(
            "locked_joints",
            "joints made rigid, as 'NAME=POSITION' strings (rad or m; 'NAME' alone = 0), e.g. "
            "['panda_finger_joint1', 'panda_finger_joint2=0.04']",
            Parameter.Type.STRING_ARRAY,
            read_only=True,
        )
        self.declare_optional(
            "joint_map",
            "topic joint names of model joints, as 'TOPIC_NAME=MODEL_NAME' strings; the node then uses the "
            "topic names everywhere (inputs, outputs, services)",
            Parameter.Type.STRING_ARRAY,
            read_only=True,
        )
        self.declare_optional(
            "gravity", "gravity vector in the world frame, m/s^2 (unset = the model's)", Parameter.Type.DOUBLE_ARRAY
        )
        self.declare(
            "backend",
            "auto",
            "engine backend: native (the model's programs compiled to C once, cached; falls back to python "
            "with a warning when no C compiler is available), python, or auto (the engine's default: "
            "$RD_BACKEND if set, else native when a C compiler is found)",
            read_only=True,
            check=check_choice(("auto", "native", "python")),
        )
        self.declare(
            "diagnostics_period",
            1.0,
            "seconds between diagnostic_msgs status messages",
            read_only=True,
            check=check_positive("s"),
        )
        self.declare(
            "warning_period",
            5.0,
            "seconds between repeated warnings of one kind (0 = every one)",
            read_only=True,
            check=check_non_negative("s"),
        )
        self.warnings = ThrottledWarnings(self.get_logger().warning, float(self.param("warning_period")))
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        # housekeeping on the steady clock: a node on use_sim_time reports and times out before /clock runs
        self.steady_clock = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(float(self.param("diagnostics_period")), self._publish_diagnostics, clock=self.steady_clock)
        self._waiting_since = time.monotonic()
        self._description_sub: Any = None
        self._locks: dict[str, float] = {}
        self._joint_map: dict[str, str] = {}

    def robot_options(self) -> tuple[dict[str, float], dict[str, str]]:
        """The ``locked_joints`` and ``joint_map`` parameters, parsed; StartupError if malformed."""
        try:
            locks = parse_locked_joints(self.string_list_param("locked_joints"), "parameter locked_joints")
            mapping = parse_joint_map(self.string_list_param("joint_map"), "parameter joint_map")
        except RobotDynamicsError as exc:
            raise StartupError(str(exc)) from None
        return locks, mapping

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
        self._set_model(self._load_model(description, str(self.param("robot_config"))))

    def _load_model(self, description: str, config: str) -> RobotModel:
        """The model of a URDF ``description`` (else the robot ``config``) with this node's chain,
        gravity, locks and joint map parameters."""
        return load_robot_model(
            description,
            config,
            self.param("base_link"),
            self.param("tip_link"),
            self._gravity,
            self.get_logger().warning,
            self._locks,
            self._joint_map,
        )

    def _on_description(self, msg: String) -> None:
        first = self.model is None
        try:
            model = self._load_model(msg.data, "")
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
        chosen = str(self.param("backend"))
        backend = resolve_backend(None if chosen == "auto" else chosen)  # auto: $RD_BACKEND, else the compiler's
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
            *(
                (f"{kind}_{stat}_us", f"{s[f'{kind}_{stat}_us']:.1f}")
                for kind in ("publish", "callback")
                if f"{kind}_mean_us" in s
                for stat in ("mean", "p99", "max")
            ),
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


__all__ = [
    "ParameterCheck",
    "RobotNode",
    "check_bool",
    "check_choice",
    "check_non_negative",
    "check_positive",
    "load_robot_model",
]
