"""How well a recorded arm tracked its trajectories: position and velocity errors per joint and segment.

For every ``sensor_msgs/JointState`` of a bag during which a ``trajectory_msgs/JointTrajectory`` of the
bag is active — by the feed-forward node's own activation rules (:func:`robot_dynamics.feedforward.
active_segments`: start at ``header.stamp`` or on receipt, activation at the first later joint state,
replacement, the end) — the errors ``e = q_d - q`` and ``ė = qd_d - qd`` of the measured state against
the desired state sampled at the joint state's stamp; per joint RMS and max ``|e|``, ``|ė|``, for each
trajectory (segment) and over all of them. Vectorised over the samples (a loop over the trajectories).

The bag is read as :mod:`.evaluate` reads it (:func:`~robot_dynamics.bag.evaluate.read_inputs`: joint
maps, garbage in CDR padding, any storage). **Time base**: the rules compare joint-state stamps with
trajectory starts, so both must be on one clock:

* joint-state stamps on the recorder's clock (within 1 s of the receive times; the node's case): the
  rules unchanged, a zero stamp taken as its receive time (the node uses its own clock for it);
* every stamp zero (a driver that does not stamp): the receive times;
* stamps on a clock of their own (a driver's clock starting at zero, simulated time recorded on wall
  time): the joint states keep their stamps and each trajectory's start is moved onto that clock —
  a zero stamp (start on receipt) becomes the joint-state clock at its receive time; a non-zero
  stamp nearer the receive times than the stamps is converted the same way, one nearer the stamps
  is kept. The conversion: when ``receive time - stamp`` varies by less than 0.1 s over the bag (two
  clocks at one rate), one offset, its minimum (the smallest transport delay taken as zero);
  otherwise (simulated time) that difference interpolated between the joint states at the time.

The summary says which (``settings.time_base``). Joint states without velocities: velocity errors are
not reported (the activation rules then read the velocity as zero, as the node does).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from robot_dynamics.bag.decode import JointStateSeries, TrajectoryMessage
from robot_dynamics.bag.evaluate import EvaluationError
from robot_dynamics.feedforward import active_segments
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.trajectory import JointTrajectorySampler

SAME_CLOCK_NS = 1_000_000_000  # stamps within 1 s of their receive times are on the recorder's clock
SAME_RATE_NS = 100_000_000  # receive - stamp varying less than this: two clocks at one rate
TIME_BASE_SAME = "header stamps (the recorder's clock)"
TIME_BASE_RECEIVE = "receive times (every header stamp is zero)"
TIME_BASE_OWN = "header stamps (a clock of their own; trajectory starts moved onto it)"


@dataclass(frozen=True)
class TrackingErrors:
    """Per-joint RMS and max ``|error|`` of position (rad or m) and velocity (None without velocities)."""

    samples: int
    position_rms: FloatArray
    position_max: FloatArray
    velocity_rms: FloatArray | None
    velocity_max: FloatArray | None

    @classmethod
    def of(cls, e: FloatArray, e_dot: FloatArray | None) -> TrackingErrors:
        def rms(x: FloatArray) -> FloatArray:
            return np.sqrt(np.mean(x**2, axis=0))

        def peak(x: FloatArray) -> FloatArray:
            return np.max(np.abs(x), axis=0)

        return cls(
            len(e), rms(e), peak(e), None if e_dot is None else rms(e_dot), None if e_dot is None else peak(e_dot)
        )

    def joints(self, names: Sequence[str]) -> list[dict[str, Any]]:
        rows = []
        for j, name in enumerate(names):
            row: dict[str, Any] = {
                "joint": name,
                "rms_position_error": float(self.position_rms[j]),
                "max_position_error": float(self.position_max[j]),
                "rms_velocity_error": None if self.velocity_rms is None else float(self.velocity_rms[j]),
                "max_velocity_error": None if self.velocity_max is None else float(self.velocity_max[j]),
            }
            rows.append(row)
        return rows


@dataclass(frozen=True)
class SegmentTracking:
    """One trajectory as tracked: its index in receive order, when it ran (s from the first joint
    state), whether it ran to its end (else a newer one replaced it or the recording stopped)."""

    trajectory: int
    start_s: float
    end_s: float
    finished: bool
    errors: TrackingErrors


@dataclass(frozen=True)
class Tracking:
    """The tracking report of one bag: per-sample errors (NaN where no trajectory is active)."""

    bag: str
    robot: str
    joint_names: tuple[str, ...]
    t: FloatArray  # (N,) s from the first joint state, on the chosen time base
    position_error: FloatArray  # (N, n) q_d - q
    velocity_error: FloatArray | None  # (N, n) qd_d - qd
    segments: list[SegmentTracking]
    overall: TrackingErrors
    settings: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """JSON-ready: settings, per segment and overall per-joint errors."""
        return {
            "bag": self.bag,
            "robot": self.robot,
            "messages": int(self.t.size),
            "duration_s": float(self.t[-1]) if self.t.size else 0.0,
            "tracking_samples": self.overall.samples,
            "settings": self.settings,
            "overall": self.overall.joints(self.joint_names),
            "segments": [
                {
                    "trajectory": s.trajectory,
                    "start_s": s.start_s,
                    "end_s": s.end_s,
                    "finished": s.finished,
                    "samples": s.errors.samples,
                    "joints": s.errors.joints(self.joint_names),
                }
                for s in self.segments
            ],
        }


# ------------------------------------------------------------------------------------------------
# time base
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Started:
    """A received trajectory with its start and receipt moved onto the joint states' clock."""

    message: TrajectoryMessage
    start: int
    received: int

    @property
    def timestamp(self) -> int:
        return self.message.timestamp

    @property
    def ended_before_receipt(self) -> bool:
        return self.start + round(float(self.message.times[-1]) * 1e9) < self.received

    def sampler(self, joint_names: Sequence[str] | None = None) -> JointTrajectorySampler:
        return self.message.sampler(joint_names)


def _instants(series: JointStateSeries, trajectories: Sequence[TrajectoryMessage]) -> tuple[np.ndarray, list[Any], str]:
    """The joint states' instants and the trajectories on that clock (module docstring), and which base."""
    received, stamps = series.timestamps, series.stamps
    if not series.stamped:
        return received, list(trajectories), TIME_BASE_RECEIVE
    stamped = stamps != 0
    if np.median(np.abs(received[stamped] - stamps[stamped])) < SAME_CLOCK_NS:
        return np.where(stamped, stamps, received), list(trajectories), TIME_BASE_SAME
    offset = received - stamps  # recorder clock - joint-state clock (+ the transport delay), per joint state
    if int(offset.max() - offset.min()) < SAME_RATE_NS:  # the clocks run at one rate: one offset, the
        constant = int(offset.min())  # smallest delay taken as zero

        def on_stamp_clock(t: int) -> int:
            return t - constant
    else:  # simulated time recorded on wall time: the joint-state clock at t, interpolated

        def on_stamp_clock(t: int) -> int:
            return int(t - round(float(np.interp(t, received, offset.astype(np.float64)))))

    def distance(t: int, values: np.ndarray) -> int:
        return int(max(values[0] - t, t - values[-1], 0))

    moved = []
    for tr in trajectories:
        on_receipt = on_stamp_clock(tr.timestamp)
        if tr.stamp == 0 or distance(tr.stamp, received) < distance(tr.stamp, stamps):
            moved.append(_Started(tr, on_stamp_clock(tr.start), on_receipt))
        else:
            moved.append(_Started(tr, tr.stamp, on_receipt))
    return stamps, moved, TIME_BASE_OWN


# ------------------------------------------------------------------------------------------------
# the report
# ------------------------------------------------------------------------------------------------
def tracking(
    model: RobotModel, series: JointStateSeries, trajectories: Sequence[TrajectoryMessage], *, bag: str = ""
) -> Tracking:
    """The tracking errors of ``series`` (model joint order) against ``trajectories`` (module docstring)."""
    if series.names != tuple(model.joint_names):
        raise EvaluationError(f"joint states are in order {list(series.names)}, the model's is {model.joint_names}")
    if len(series) == 0:
        raise EvaluationError(f"{series.topic}: no joint states")
    if not trajectories:
        raise EvaluationError("no trajectories in the bag: nothing to track (see --trajectory)")
    q = series.position
    bad = ~np.isfinite(q).all(axis=1)
    if bad.any():
        raise EvaluationError(f"{series.topic}: position not finite in {int(bad.sum())} of {len(series)} messages")
    has_velocity = series.velocity is not None and bool(np.isfinite(series.velocity).all())
    qd = series.velocity if has_velocity and series.velocity is not None else np.zeros_like(q)
    instants, trajs, time_base = _instants(series, trajectories)
    if np.any(np.diff(instants) <= 0):
        k = int(np.argmax(np.diff(instants) <= 0)) + 1
        raise EvaluationError(f"{series.topic}: joint-state times do not increase at message {k} ({time_base})")
    t = (instants - instants[0]).astype(np.float64) * 1e-9
    e = np.full_like(q, np.nan)
    e_dot = np.full_like(q, np.nan) if has_velocity else None
    segments = []
    for seg in active_segments(model.joint_names, series.timestamps, instants, q, qd, trajs):
        if seg.rows.size == 0:
            continue
        rows = seg.rows
        e[rows] = seg.desired.positions - q[rows]
        if e_dot is not None:
            e_dot[rows] = seg.desired.velocities - qd[rows]
        errors = TrackingErrors.of(e[rows], None if e_dot is None else e_dot[rows])
        start = float(t[rows[0]])
        segments.append(SegmentTracking(seg.index, start, float(t[rows[-1]]), seg.finished_at is not None, errors))
    active = ~np.isnan(e[:, 0])
    if not active.any():
        starts = sorted(int(tr.start) for tr in trajs)
        raise EvaluationError(
            f"{series.topic}: no joint state falls inside any of the {len(trajs)} trajectories "
            f"(trajectory starts {starts[0]}..{starts[-1]} ns, joint states {int(instants[0])}.."
            f"{int(instants[-1])} ns; {time_base})"
        )
    overall = TrackingErrors.of(e[active], None if e_dot is None else e_dot[active])
    settings = {"joint_states_topic": series.topic, "time_base": time_base, "trajectories": len(trajectories)}
    return Tracking(bag, model.name, series.names, t, e, e_dot, segments, overall, settings)


CSV_COLUMNS = (
    "segment",
    "joint",
    "samples",
    "rms_position_error",
    "max_position_error",
    "rms_velocity_error",
    "max_velocity_error",
)


def write_csv_stream(stream: TextIO, report: Tracking) -> None:
    """One row per joint and segment (``segment`` = the trajectory's index), then ``all``."""
    writer = csv.DictWriter(stream, fieldnames=CSV_COLUMNS, restval="", lineterminator="\n")
    writer.writeheader()
    summary = report.summary()
    blocks = [(str(s["trajectory"]), s["samples"], s["joints"]) for s in summary["segments"]]
    blocks.append(("all", summary["tracking_samples"], summary["overall"]))
    for segment, samples, joints in blocks:
        for row in joints:
            values = {k: ("" if v is None else f"{v:.9g}" if isinstance(v, float) else v) for k, v in row.items()}
            writer.writerow({"segment": segment, "samples": samples, **values})


def format_table(report: Tracking) -> str:
    """Overall per-joint errors as a fixed-width text table."""
    o = report.overall
    lines = [
        f"{'':<14}{'position error':^22}{'velocity error':^22}",
        f"{'joint':<14}{'RMS':>11}{'max':>11}{'RMS':>11}{'max':>11}",
    ]
    for j, name in enumerate(report.joint_names):
        vel = (
            f"{o.velocity_rms[j]:11.5f}{o.velocity_max[j]:11.5f}"
            if o.velocity_rms is not None and o.velocity_max is not None
            else f"{'-':>11}{'-':>11}"
        )
        lines.append(f"{name:<14}{o.position_rms[j]:11.5f}{o.position_max[j]:11.5f}{vel}")
    return "\n".join(lines)


def describe(report: Tracking) -> str:
    n = int(report.t.size)
    rate = (n - 1) / report.t[-1] if n > 1 and report.t[-1] > 0 else 0.0
    return (
        f"{report.robot}: {n} joint states, {report.t[-1]:.2f} s (~{rate:.0f} Hz), {report.overall.samples} while "
        f"tracking {len(report.segments)} trajectories; time base: {report.settings['time_base']}; "
        "errors = desired - measured [rad, rad/s]"
    )


def write_plot(path: str | Path, report: Tracking) -> Path:
    """Position error ``q_d - q`` per joint over time (gaps where no trajectory is active)."""
    from robot_dynamics.bag.plot import plot_torques

    curves: dict[str, FloatArray | None] = {"position error q_d - q": report.position_error}
    title = (
        f"{report.robot}: {Path(report.bag).name or 'bag'}, tracking error, {len(report.segments)} trajectories, "
        f"overall RMS {math.sqrt(float(np.mean(report.overall.position_rms**2))):.3g}"
    )
    return plot_torques(path, report.t, report.joint_names, curves, title=title, unit="rad or m")
