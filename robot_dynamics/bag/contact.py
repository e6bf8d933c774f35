"""Contact analysis of a recording: the external joint torque over a bag, collision events, thresholds.

For the ``sensor_msgs/JointState`` stream of a bag (read and matched to the model's joints as
:func:`robot_dynamics.bag.evaluate.read_inputs` does: joint maps, garbage in CDR padding, zero stamps
→ receive times), with ``effort`` = the joint torque the motors applied:

* the generalized-momentum observer's residual ``r`` (the external joint torque estimate) at every
  sample, all at once (:func:`robot_dynamics.dynamics.momentum_observer.observe`, the contact node's
  observer in batch form: feeding the bag to the node gives the same ``r``), with the efforts taken as
  samples at their states or as the torque held over the step into each state (``effort_timing``: a
  simulator's; ``auto`` fits both and keeps the one with the smaller residual RMS);
* the observer starts at the first state with a torque reading (leading states at rest with every effort
  exactly 0 carry none: a simulator's first state or reset, a delay line filling; ``settings["unread"]`` counts them);
* the collision events of per-joint thresholds with hysteresis (:mod:`robot_dynamics.contact`, the
  node's detector): when each joint entered and left collision; with reversal allowances the
  thresholds grow near each joint's velocity reversals (the reversal weights ``z`` of every sample);
* or, for a recording of free motion, **thresholds**: per joint ``margin x max |r|``
  (:func:`robot_dynamics.contact.calibrate_thresholds`) or, reversal-aware, the thresholds away from
  reversals and the allowance near them (:func:`robot_dynamics.contact.calibrate_reversal`), written
  as a parameter file of the node.

Samples whose position, velocity or effort is missing or not finite are skipped (counted), as the
node skips such messages: the observer spans the gap between the good samples around them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robot_dynamics.bag.decode import JointStateSeries
from robot_dynamics.bag.reader import BagError
from robot_dynamics.contact import (
    DEFAULT_CLEAR_RATIO,
    DEFAULT_REVERSAL_VELOCITY,
    Transition,
    check_reversal,
    check_thresholds,
    reversal_weights,
    transitions,
)
from robot_dynamics.dynamics.momentum_observer import (
    EFFORT_TIMINGS,
    ObserverRun,
    check_effort_timing,
    observe,
    observer_gain,
)
from robot_dynamics.errors import StateError
from robot_dynamics.model import FloatArray, RobotModel


class ContactError(BagError):
    """The bag does not allow the contact analysis (no efforts, no velocities, too few samples)."""


@dataclass(frozen=True)
class ContactAnalysis:
    """The observer over a bag's joint states (``run``), the reversal weights ``z`` ``(N, n)`` for
    ``reversal_velocity``, the events for ``thresholds`` (if given; plus ``reversal_thresholds``)."""

    bag: str
    robot: str
    joint_names: tuple[str, ...]  # the bag's names of the model joints
    time_base: str
    run: ObserverRun
    skipped: int
    stamps: np.ndarray  # (N,) int64 ns of the samples used (the time base)
    thresholds: FloatArray | None
    clear_ratio: float
    events: list[Transition]
    weights: FloatArray
    reversal_velocity: FloatArray
    reversal_thresholds: FloatArray | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    def levels(self) -> FloatArray | None:
        """The thresholds in force at every sample ``(N, n)`` (None without thresholds)."""
        if self.thresholds is None:
            return None
        extra = 0.0 if self.reversal_thresholds is None else self.reversal_thresholds
        return np.asarray(self.thresholds + extra * self.weights)

    @property
    def count(self) -> int:
        return int(self.run.t.size)

    def summary(self) -> dict[str, Any]:
        """JSON-ready: settings, per-joint residual statistics and thresholds, the events."""
        r = self.run.r
        joints = []
        for j, name in enumerate(self.joint_names):
            row: dict[str, Any] = {
                "joint": name,
                "rms_residual": float(np.sqrt(np.mean(r[:, j] ** 2))) if self.count else 0.0,
                "max_abs_residual": float(np.max(np.abs(r[:, j]))) if self.count else 0.0,
                "gain": float(self.run.gain[j]),
            }
            if self.thresholds is not None:
                row["threshold"] = float(self.thresholds[j])
                row["clear_level"] = float(self.clear_ratio * self.thresholds[j])
                if self.reversal_thresholds is not None:
                    row["reversal_threshold"] = float(self.reversal_thresholds[j])
                row["collisions"] = sum(1 for e in self.events if e.joint == j and e.raised)
            joints.append(row)
        return {
            "bag": self.bag,
            "robot": self.robot,
            "messages": self.count + self.skipped,
            "samples": self.count,
            "skipped": self.skipped,
            "duration_s": float(self.run.t[-1]) if self.count else 0.0,
            "time_base": self.time_base,
            "settings": self.settings,
            "joints": joints,
            "collisions": sum(1 for e in self.events if e.raised),
            "events": [
                {
                    "time_s": e.time,
                    "stamp_ns": int(self.stamps[e.sample]),
                    "joint": self.joint_names[e.joint],
                    "event": "raised" if e.raised else "cleared",
                    "magnitude": e.magnitude,
                    "threshold": e.threshold,
                    "clear_level": e.clear_level,
                }
                for e in self.events
            ],
        }


def analyse(
    model: RobotModel,
    series: JointStateSeries,
    *,
    gain: float | FloatArray = 50.0,
    thresholds: FloatArray | None = None,
    clear_ratio: float = DEFAULT_CLEAR_RATIO,
    reversal_thresholds: FloatArray | None = None,
    reversal_velocity: float | FloatArray = DEFAULT_REVERSAL_VELOCITY,
    friction: bool = True,
    smooth: bool = True,
    bag: str = "",
    bag_names: tuple[str, ...] = (),
    effort_timing: str = "sampled",
) -> ContactAnalysis:
    """The observer and the events over ``series`` (in the model's joint order; module docstring).
    ``effort_timing``: ``sampled``, ``step`` or ``auto`` (both observed, the smaller RMS of ``r`` over all
    joints kept; its RMS per timing in ``settings["effort_timing_rms"]``)."""
    if series.names != tuple(model.joint_names):
        raise ContactError(f"joint states are in order {list(series.names)}, the model's is {model.joint_names}")
    try:
        k = observer_gain(gain, model.dof)
        th = None if thresholds is None else check_thresholds(thresholds, model.dof)
        extra = None if reversal_thresholds is None else check_reversal(reversal_thresholds, model.dof, "reversal")
        band = check_reversal(reversal_velocity, model.dof, "reversal velocity")
        timings = EFFORT_TIMINGS if effort_timing == "auto" else (check_effort_timing(effort_timing),)
    except StateError as exc:
        raise ContactError(str(exc)) from None
    if series.effort is None:
        raise ContactError(f"{series.topic}: the joint states carry no effort (the applied joint torques)")
    if series.velocity is None:
        raise ContactError(f"{series.topic}: the joint states carry no velocity")
    base, which = series.time_base()
    good = np.isfinite(series.position).all(1) & np.isfinite(series.velocity).all(1) & np.isfinite(series.effort).all(1)
    if good.sum() < 2:
        raise ContactError(
            f"{series.topic}: {int(good.sum())} of {len(series)} joint states have finite positions, velocities "
            "and efforts; the observer needs at least 2"
        )
    stamps = base[good]
    t = (stamps - stamps[0]).astype(np.float64) * 1e-9
    runs = {
        timing: observe(
            model,
            t,
            series.position[good],
            series.velocity[good],
            series.effort[good],
            k,
            friction=friction,
            smooth=smooth,
            effort_timing=timing,
        )
        for timing in timings
    }
    rms = {timing: float(np.sqrt(np.mean(r.r**2))) for timing, r in runs.items()}
    timing = min(rms, key=rms.__getitem__)
    run = runs[timing]
    weights = np.zeros(run.r.shape)  # from the observer's start, as the node's detector weighs them
    weights[run.start :] = reversal_weights(run.t[run.start :], series.velocity[good][run.start :], k, band)
    events = transitions(run.t, run.r, th, clear_ratio, extra, weights) if th is not None else []
    return ContactAnalysis(
        bag=bag,
        robot=model.name,
        joint_names=bag_names or tuple(model.joint_names),
        time_base=which,
        run=run,
        skipped=int((~good).sum()),
        stamps=stamps,
        thresholds=th,
        clear_ratio=clear_ratio,
        events=events,
        weights=weights,
        reversal_velocity=band,
        reversal_thresholds=extra,
        settings={
            "joint_states_topic": series.topic,
            "friction": ("smooth" if smooth else "exact") if friction else "off",
            "gain": k.tolist(),
            "reversal_velocity": band.tolist(),
            "effort_timing": timing,
            "effort_timing_rms": rms,
            "unread": run.unread,
        },
    )


def _double(value: float, digits: int = 4) -> str:
    """``value`` rounded *up* to ``digits`` significant digits, as a YAML double (never an integer)."""
    if value > 0 and np.isfinite(value):
        scale = 10.0 ** (np.floor(np.log10(value)) - (digits - 1))
        value = float(np.ceil(value / scale * (1 - 1e-12)) * scale)
    text = f"{value:.{digits}g}"
    return text if any(c in text for c in ".en") else text + ".0"


def _doubles(values: FloatArray) -> str:
    return ", ".join(_double(float(v)) for v in values)


def parameter_file(
    thresholds: FloatArray,
    gain: FloatArray,
    clear_ratio: float,
    note: str,
    reversal_thresholds: FloatArray | None = None,
    reversal_velocity: FloatArray | None = None,
    effort_timing: str = "sampled",
) -> str:
    """A ROS 2 parameter file of the contact node: ``thresholds`` (and ``reversal_thresholds``, rounded
    up to 4 digits), with the gain, clear ratio, reversal velocity and effort timing they were measured
    for."""
    reversal = ""
    if reversal_thresholds is not None and reversal_velocity is not None:
        reversal = (
            f"    reversal_thresholds: [{_doubles(reversal_thresholds)}]\n"
            f"    reversal_velocity: [{', '.join(repr(float(v)) for v in reversal_velocity)}]\n"
        )
    return (
        f"# {note}\n"
        "# The thresholds hold for this observer gain, friction model, reversal velocity and effort timing: change "
        "them together.\n"
        "/**/contact_node:\n"
        "  ros__parameters:\n"
        f"    observer_gain: [{_doubles(gain)}]\n"
        f"    thresholds: [{_doubles(thresholds)}]\n"
        f"{reversal}"
        f"    clear_ratio: {_double(float(clear_ratio))}\n"
        f"    effort_timing: {check_effort_timing(effort_timing)}\n"
    )


def plot(path: str | Path, analysis: ContactAnalysis) -> Path:
    """The residual per joint over time with its thresholds (``bag.plot.plot_torques``)."""
    from robot_dynamics.bag.plot import plot_torques

    run = analysis.run
    curves: dict[str, FloatArray | None] = {"external torque r": run.r}
    level = analysis.levels()
    if level is not None:
        level = np.broadcast_to(level, run.r.shape)
        curves["+threshold"], curves["-threshold"] = level, -level
    title = (
        f"{analysis.robot}: {Path(analysis.bag).name or 'bag'}, {analysis.count} joint states, "
        f"momentum observer K = {', '.join(f'{k:g}' for k in np.unique(run.gain))} 1/s, "
        f"{sum(1 for e in analysis.events if e.raised)} collisions"
    )
    return plot_torques(path, run.t, analysis.joint_names, curves, title=title)


__all__ = ["ContactAnalysis", "ContactError", "analyse", "parameter_file", "plot"]
