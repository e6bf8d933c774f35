"""Offline (batch) evaluation of a dynamics model on logged joint states.

For every ``sensor_msgs/JointState`` of a bag, at once (vectorised over all messages):

* **model torques at the measured motion**: the engine's inverse dynamics (Newton–Euler,
  Fu 3.3-50..58, plus friction) at the measured ``q``, ``qd`` and an acceleration ``qdd`` that is
  either differentiated from the measured states (:mod:`.differentiate`, Savitzky–Golay on the real
  stamps) or taken from the bag's desired trajectory; with and without friction (friction at the
  measured velocity);
* **errors** against the measured ``effort`` when the bag has it: per joint RMS and max |error|;
* **feed-forward torques exactly as the feed-forward node computes them** for the same message
  stream (:func:`feedforward_torques`): the node's law and trajectory activation rules
  (:mod:`robot_dynamics.feedforward`) in batch form — inverse dynamics at the desired state while a
  trajectory of the bag is active, gravity + friction compensation ``c(q) + b(qd)`` at the measured
  state otherwise. Replaying the bag through the live node must give these torques
  (``robot-dynamics replay`` checks it).

The results are written by :mod:`robot_dynamics.bag.report` (an output bag with the input's receive
times and header stamps, a CSV/JSON summary, a PNG plot, a text table), which also compares the
torques a replayed node recorded with :func:`feedforward_torques`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from robot_dynamics.bag.decode import (
    JointStateSeries,
    TrajectoryMessage,
    decode_joint_states,
    decode_joint_trajectories,
)
from robot_dynamics.bag.differentiate import DEFAULT_POLYORDER, DEFAULT_WINDOW_S, SavitzkyGolay, min_window, savgol
from robot_dynamics.bag.reader import (
    JOINT_STATE,
    JOINT_TRAJECTORY,
    BagError,
    ProgressFn,
    RawTopic,
    read_topics,
    topic_name,
)
from robot_dynamics.dynamics import inverse_dynamics
from robot_dynamics.feedforward import (
    Feedforward,
    FeedforwardLaw,
    FrictionVelocity,
    feedforward_batch,
    tracking_segments,
)
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.user_input import check_joint_map, external_names

AccelSource = Literal["velocity", "position", "trajectory"]
ACCEL_SOURCES: tuple[str, ...] = ("velocity", "position", "trajectory")


class EvaluationError(BagError):
    """The bag does not allow the requested evaluation (no velocity, unstamped messages, ...)."""


# ------------------------------------------------------------------------------------------------
# engine calls
# ------------------------------------------------------------------------------------------------
def _inverse_dynamics(
    model: RobotModel, q: FloatArray, qd: FloatArray, qdd: FloatArray, *, friction: bool, smooth: bool
) -> FloatArray:
    if len(q) == 0:
        return np.zeros((0, model.dof))
    return np.asarray(inverse_dynamics(model, q, qd, qdd, friction=friction, smooth=smooth), dtype=np.float64)


# ------------------------------------------------------------------------------------------------
# node-equivalent feed-forward
# ------------------------------------------------------------------------------------------------
def feedforward_torques(
    model: RobotModel,
    series: JointStateSeries,
    trajectories: Sequence[TrajectoryMessage] = (),
    *,
    friction: bool = True,
    smooth: bool = True,
    friction_velocity: FrictionVelocity = "desired",
) -> Feedforward:
    """The feed-forward node's torques for this message stream, all joint states at once.

    The law and the activation rules of :mod:`robot_dynamics.feedforward` (the node's own), applied
    in the bag's receive order (:func:`~robot_dynamics.feedforward.feedforward_batch`): a trajectory
    received before a joint state becomes active at the first later joint state whose stamp reaches
    its start (``header.stamp``; a zero stamp starts at its receive time), unless a newer trajectory
    arrived first; while active (``0 <= stamp - start <= duration``) the torque is the inverse
    dynamics at the desired state sampled at the joint state's stamp, with friction at the desired
    or the measured velocity; at all other samples gravity + friction compensation ``c(q) + b(qd)``
    at the measured state. Joint states must carry header stamps; joint states without velocities
    count as zero velocity.
    """
    if series.names != tuple(model.joint_names):
        raise EvaluationError(f"joint states are in order {list(series.names)}, the model's is {model.joint_names}")
    stamps = series.stamps
    if np.any(stamps <= 0):
        raise EvaluationError(
            f"{int(np.sum(stamps <= 0))} joint states have a zero header stamp; the feed-forward node would "
            "use its own clock for them, which a replay cannot reproduce"
        )
    # the node reads a message without velocities as zero velocity
    qd = np.zeros_like(series.position) if series.velocity is None else _velocity(series, "feed-forward torques")
    return feedforward_batch(
        FeedforwardLaw(model),
        series.timestamps,
        stamps,
        series.position,
        qd,
        trajectories,
        friction=friction,
        smooth=smooth,
        friction_velocity=friction_velocity,
    )


# ------------------------------------------------------------------------------------------------
# evaluation
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JointErrors:
    """Per-joint error statistics of ``model - measured`` (N·m or N)."""

    rms: FloatArray
    max: FloatArray


def error_stats(model_effort: FloatArray, measured: FloatArray) -> JointErrors:
    err = model_effort - measured
    return JointErrors(np.sqrt(np.mean(err**2, axis=0)), np.max(np.abs(err), axis=0))


@dataclass(frozen=True)
class Evaluation:
    bag: str
    robot: str
    joint_names: tuple[str, ...]
    timestamps: np.ndarray  # (N,) int64 ns, bag receive times
    stamps: np.ndarray  # (N,) int64 ns, header stamps
    t: FloatArray  # (N,) s from the first sample
    q: FloatArray
    qd: FloatArray
    qdd: FloatArray
    accel_source: str
    filter: SavitzkyGolay | None
    smooth: bool
    measured: FloatArray | None
    model: FloatArray  # with friction at the measured velocity
    model_no_friction: FloatArray
    feedforward: Feedforward | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return int(self.t.size)

    def errors(self) -> dict[str, JointErrors]:
        """``"friction"``, ``"no_friction"`` (and ``"feedforward"``) errors vs the measured efforts."""
        if self.measured is None:
            return {}
        out = {
            "friction": error_stats(self.model, self.measured),
            "no_friction": error_stats(self.model_no_friction, self.measured),
        }
        if self.feedforward is not None:
            out["feedforward"] = error_stats(self.feedforward.effort, self.measured)
        return out

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary: settings and per-joint errors."""
        errors = self.errors()
        joints = []
        for j, name in enumerate(self.joint_names):
            row: dict[str, Any] = {"joint": name}
            for key, e in errors.items():
                row[f"rms_error_{key}"] = float(e.rms[j])
                row[f"max_error_{key}"] = float(e.max[j])
            if self.measured is not None:
                row["rms_measured"] = float(np.sqrt(np.mean(self.measured[:, j] ** 2)))
            joints.append(row)
        return {
            "bag": self.bag,
            "robot": self.robot,
            "messages": self.count,
            "duration_s": float(self.t[-1]) if self.count else 0.0,
            "acceleration": {
                "source": self.accel_source,
                "window_samples": self.filter.window if self.filter else None,
                "polyorder": self.filter.polyorder if self.filter else None,
            },
            "friction_model": "smooth" if self.smooth else "exact",
            "has_measured_effort": self.measured is not None,
            "settings": self.settings,
            "joints": joints,
        }


def _velocity(series: JointStateSeries, what: str) -> FloatArray:
    if series.velocity is None:
        raise EvaluationError(f"{series.topic}: the joint states carry no velocity (needed for {what})")
    bad = ~np.isfinite(series.velocity).all(axis=1)
    if bad.any():
        k = int(np.argmax(bad))
        raise EvaluationError(
            f"{series.topic}: velocity missing or not finite in {int(bad.sum())} of {len(series)} messages "
            f"(first: message {k}, stamp {series.stamps[k]} ns)"
        )
    return series.velocity


def _check_positions(series: JointStateSeries) -> None:
    bad = ~np.isfinite(series.position).all(axis=1)
    if bad.any():
        k = int(np.argmax(bad))
        raise EvaluationError(
            f"{series.topic}: position not finite in {int(bad.sum())} of {len(series)} messages (first: message {k})"
        )


def _sample_times(series: JointStateSeries) -> tuple[FloatArray, str]:
    """Seconds from the first sample and their source (:meth:`JointStateSeries.time_base`)."""
    try:
        base, which = series.time_base()
    except BagError as exc:
        raise EvaluationError(f"{exc}") from None
    t: FloatArray = (base - base[0]).astype(np.float64) * 1e-9
    return t, which


def _differentiation_filter(series: JointStateSeries, t: FloatArray, window_s: float, polyorder: int) -> SavitzkyGolay:
    """The Savitzky-Golay window for these stamps; too few messages is an error naming the topic."""
    needed = min_window(polyorder)
    if len(series) < needed:
        raise EvaluationError(
            f"{series.topic}: {len(series)} messages, too few to differentiate: a degree-{polyorder} "
            f"Savitzky-Golay fit needs at least {needed} samples"
        )
    filt = SavitzkyGolay.for_times(t, window_s, polyorder)
    if len(series) < filt.window:
        raise EvaluationError(
            f"{series.topic}: {len(series)} messages, fewer than the {filt.window}-sample differentiation window "
            f"({window_s:g} s at the median sample period {np.median(np.diff(t)) * 1e3:.3g} ms); "
            f"choose a window of at most {(len(series) - 1) * float(np.median(np.diff(t))):.3g} s"
        )
    return filt


def _desired_accelerations(
    model: RobotModel, series: JointStateSeries, trajectories: Sequence[TrajectoryMessage], qd: FloatArray
) -> FloatArray:
    """Desired accelerations at each joint state's stamp while a trajectory is active, else zero."""
    if not trajectories:
        raise EvaluationError("acceleration source 'trajectory' needs a trajectory topic with messages in the bag")
    qdd = np.zeros((len(series), model.dof))
    segments = tracking_segments(model.joint_names, series.timestamps, series.stamps, series.position, qd, trajectories)
    for rows, d in segments:
        qdd[rows] = d.accelerations
    return qdd


def evaluate(
    model: RobotModel,
    series: JointStateSeries,
    trajectories: Sequence[TrajectoryMessage] = (),
    *,
    accel_source: AccelSource = "velocity",
    window_s: float = DEFAULT_WINDOW_S,
    polyorder: int = DEFAULT_POLYORDER,
    smooth: bool = True,
    feedforward: bool = True,
    friction_velocity: FrictionVelocity = "desired",
    bag: str = "",
) -> Evaluation:
    """Model torques for every joint state (module docstring); ``series`` must be in model joint order."""
    if series.names != tuple(model.joint_names):
        raise EvaluationError(f"joint states are in order {list(series.names)}, the model's is {model.joint_names}")
    if accel_source not in ACCEL_SOURCES:
        raise EvaluationError(f"unknown acceleration source {accel_source!r} (expected one of {list(ACCEL_SOURCES)})")
    _check_positions(series)
    q = series.position
    qd = _velocity(series, "the friction and Coriolis terms")
    t, time_base = _sample_times(series)
    filt: SavitzkyGolay | None = None
    if accel_source == "trajectory":
        qdd = _desired_accelerations(model, series, trajectories, qd)
    else:
        filt = _differentiation_filter(series, t, window_s, polyorder)
        if accel_source == "velocity":
            (qdd,) = savgol(t, qd, (1,), filt)
        else:
            (qdd,) = savgol(t, q, (2,), filt)
    tau = _inverse_dynamics(model, q, qd, qdd, friction=True, smooth=smooth)
    tau_nf = _inverse_dynamics(model, q, qd, qdd, friction=False, smooth=smooth)
    measured = None
    if series.effort is not None:
        finite = np.isfinite(series.effort).all(axis=1)
        if finite.all():
            measured = series.effort
    ff = None
    if feedforward and np.all(series.stamps > 0):
        ff = feedforward_torques(
            model, series, trajectories, friction=True, smooth=smooth, friction_velocity=friction_velocity
        )
    return Evaluation(
        bag=bag,
        robot=model.name,
        joint_names=series.names,
        timestamps=series.timestamps,
        stamps=series.stamps,
        t=t,
        q=q,
        qd=qd,
        qdd=qdd,
        accel_source=accel_source,
        filter=filt,
        smooth=smooth,
        measured=measured,
        model=tau,
        model_no_friction=tau_nf,
        feedforward=ff,
        settings={
            "joint_states_topic": series.topic,
            "time_base": time_base,
            "trajectories": len(trajectories),
            "feedforward_friction_velocity": friction_velocity if ff is not None else None,
        },
    )


# ------------------------------------------------------------------------------------------------
# reading a bag for evaluation
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BagInputs:
    """Joint states and trajectories in the model's joint names and order; ``names``: the bag's name
    of each model joint (the model's own unless a joint map renames it)."""

    series: JointStateSeries
    trajectories: list[TrajectoryMessage]
    joint_states_raw: RawTopic
    names: tuple[str, ...] = ()


def read_inputs(
    path: str | Path,
    model: RobotModel,
    *,
    joint_states: str = "joint_states",
    trajectory: str | None = "joint_trajectory",
    require_trajectory: bool = False,
    progress: ProgressFn | None = None,
    joint_map: Mapping[str, str] | None = None,
) -> BagInputs:
    """The joint states (in the model's joint order) and trajectories of a bag.

    ``joint_map``: ``{bag name: model name}`` for joints named differently in the bag (checked
    against the model; unmapped joints keep their names). Joint states and trajectories are
    matched by the bag names and returned with the model's. ``trajectory`` is optional unless
    ``require_trajectory``; a missing joint-states topic, a topic of the wrong type or joint names
    that do not match the model raise :class:`BagError`.
    """
    mapping = dict(joint_map or {})
    if mapping:
        check_joint_map(model, mapping, "joint map")
    bag_names = tuple(external_names(model.joint_names, mapping))
    to_model = dict(zip(bag_names, model.joint_names, strict=True))
    topics = [joint_states] + ([trajectory] if trajectory else [])
    types = {joint_states: JOINT_STATE}
    if trajectory:
        types[trajectory] = JOINT_TRAJECTORY
    raw = read_topics(
        path,
        topics,
        types=types,
        optional=[] if require_trajectory or not trajectory else [trajectory],
        progress=progress,
    )
    js_raw = raw[topic_name(joint_states)]
    try:
        series = decode_joint_states(js_raw, bag_names)
    except BagError as exc:
        mapped = f" with joint map {mapping}" if mapping else ""
        raise BagError(f"{path}: {exc} (robot {model.name!r}{mapped})") from None
    series = replace(series, names=tuple(model.joint_names))
    trajs = (
        decode_joint_trajectories(raw[topic_name(trajectory)]) if trajectory and topic_name(trajectory) in raw else []
    )
    trajs = [replace(tr, names=tuple(to_model.get(n, n) for n in tr.names)) for tr in trajs] if mapping else trajs
    for tr in trajs:
        tr.sampler(model.joint_names)  # names must match the model
    return BagInputs(series, trajs, js_raw, bag_names)
