"""What an evaluation produces: output bag, CSV/JSON summary, plot, table, and the replay check.

The evaluation itself is :mod:`robot_dynamics.bag.evaluate`. :func:`compare_feedforward` matches
the torques a feed-forward node published while a bag was replayed through it to the offline
:func:`~robot_dynamics.bag.evaluate.feedforward_torques` of the same bag (by header stamp).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

from robot_dynamics.bag.decode import JointStateSeries
from robot_dynamics.bag.evaluate import BagInputs, Evaluation, EvaluationError
from robot_dynamics.bag.writer import BagWriter
from robot_dynamics.feedforward import Feedforward
from robot_dynamics.model import FloatArray

#: Topics of the evaluation output bag (besides a copy of the input joint states).
OUT_EFFORTS = "/robot_dynamics/model_efforts"
OUT_EFFORTS_NO_FRICTION = "/robot_dynamics/model_efforts_no_friction"
OUT_ACCELERATION = "/robot_dynamics/acceleration"
OUT_FEEDFORWARD = "/robot_dynamics/feedforward_efforts"


# ------------------------------------------------------------------------------------------------
# outputs
# ------------------------------------------------------------------------------------------------
def write_output_bag(
    path: str | Path,
    ev: Evaluation,
    inputs: BagInputs | None = None,
    *,
    storage: str = "mcap",
    overwrite: bool = False,
) -> Path:
    """The evaluation as a bag with the input's receive times and header stamps.

    Topics: the input joint states (copied), ``/robot_dynamics/model_efforts`` and ``..._no_friction``
    (``JointState``: measured position/velocity, model effort), ``/robot_dynamics/acceleration``
    (``Float64MultiArray``, the ``qdd`` used) and,
    when computed, ``/robot_dynamics/feedforward_efforts`` (what the feed-forward node publishes).
    Joint names are the bag's (``inputs.names``) when the inputs are given, as the node publishes them.
    """
    names = list(inputs.names) if inputs is not None and inputs.names else list(ev.joint_names)
    with BagWriter(path, storage=storage, overwrite=overwrite) as w:
        if inputs is not None:
            raw = inputs.joint_states_raw
            w.write_raw(raw.topic, raw.msgtype, raw.timestamps, raw.data)
        w.write_joint_states(OUT_EFFORTS, ev.timestamps, names, ev.q, ev.qd, ev.model, stamps=ev.stamps)
        w.write_joint_states(
            OUT_EFFORTS_NO_FRICTION, ev.timestamps, names, ev.q, ev.qd, ev.model_no_friction, stamps=ev.stamps
        )
        w.write_float64_multiarray(OUT_ACCELERATION, ev.timestamps, ev.qdd)
        if ev.feedforward is not None:
            ff = ev.feedforward
            w.write_joint_states(
                OUT_FEEDFORWARD, ev.timestamps, names, ff.position, ff.velocity, ff.effort, stamps=ev.stamps
            )
    return Path(path)


CSV_COLUMNS = (
    "joint",
    "rms_error_friction",
    "max_error_friction",
    "rms_error_no_friction",
    "max_error_no_friction",
    "rms_error_feedforward",
    "max_error_feedforward",
    "rms_measured",
)


def write_csv_stream(stream: TextIO, ev: Evaluation) -> None:
    writer = csv.DictWriter(stream, fieldnames=CSV_COLUMNS, restval="", extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in ev.summary()["joints"]:
        writer.writerow({k: (f"{v:.9g}" if isinstance(v, float) else v) for k, v in row.items()})


def write_csv(path: str | Path, ev: Evaluation) -> Path:
    """One row per joint (columns :data:`CSV_COLUMNS`; empty where not computed)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as fh:
        write_csv_stream(fh, ev)
    return out


def write_json(path: str | Path, ev: Evaluation) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(ev.summary(), indent=2) + "\n")
    return out


def write_plot(path: str | Path, ev: Evaluation, *, extra: dict[str, FloatArray] | None = None) -> Path:
    """Measured vs model torques per joint (plus ``extra`` labelled ``(N, n)`` curves)."""
    from robot_dynamics.bag.plot import plot_torques

    curves: dict[str, FloatArray | None] = {
        "measured": ev.measured,
        "model (friction)": ev.model,
        "model (no friction)": ev.model_no_friction,
        **(extra or {}),
    }
    title = f"{ev.robot}: {Path(ev.bag).name or 'bag'}, {ev.count} joint states, qdd from {ev.accel_source}"
    return plot_torques(path, ev.t, ev.joint_names, curves, title=title)


def format_table(ev: Evaluation) -> str:
    """The per-joint summary as a fixed-width text table (errors = model - measured, N·m)."""
    errors = ev.errors()
    if not errors or ev.measured is None:
        return f"{ev.count} samples; the bag has no measured efforts to compare with"
    lines = [
        f"{'':<10}{'with friction':^22}{'without friction':^22}{'measured':>10}",
        f"{'joint':<10}{'RMS err':>11}{'max err':>11}{'RMS err':>11}{'max err':>11}{'RMS':>10}",
    ]
    for j, name in enumerate(ev.joint_names):
        f, nf = errors["friction"], errors["no_friction"]
        rms = math.sqrt(float(np.mean(ev.measured[:, j] ** 2)))
        lines.append(f"{name:<10}{f.rms[j]:11.4f}{f.max[j]:11.4f}{nf.rms[j]:11.4f}{nf.max[j]:11.4f}{rms:10.3f}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# replay check
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReplayComparison:
    """Recorded node outputs matched to the input joint states by header stamp."""

    expected: int
    received: int
    matched: int
    duplicates: int
    unmatched: int
    max_abs_diff: float
    max_abs_diff_per_joint: FloatArray
    tracking: int
    missing: tuple[int, ...] = ()  # indices of unanswered joint states (the first 20)

    @property
    def lost(self) -> int:
        return self.expected - self.matched

    def ok(self, tolerance: float = 1e-9) -> bool:
        return self.lost == 0 and self.unmatched == 0 and self.duplicates == 0 and self.max_abs_diff <= tolerance

    def describe(self, tolerance: float = 1e-9) -> str:
        verdict = "OK" if self.ok(tolerance) else "MISMATCH"
        where = f" (unanswered messages {list(self.missing)}{'...' if self.lost > len(self.missing) else ''})"
        return (
            f"node vs offline feed-forward: {self.matched}/{self.expected} joint states answered "
            f"({self.tracking} tracking, {self.matched - self.tracking} holding), lost {self.lost}, "
            f"unmatched {self.unmatched}, duplicates {self.duplicates}; max |difference| "
            f"{self.max_abs_diff:.3e} N·m (tolerance {tolerance:g}): {verdict}" + (where if self.lost else "")
        )


def compare_feedforward(series: JointStateSeries, offline: Feedforward, recorded: JointStateSeries) -> ReplayComparison:
    """Matches the node's ``feedforward/efforts`` (stamped with the input stamps) to the offline torques."""
    if recorded.names != series.names:
        raise EvaluationError(f"recorded joint order {list(recorded.names)} differs from {list(series.names)}")
    if recorded.effort is None:
        raise EvaluationError(f"{recorded.topic}: recorded messages carry no effort")
    order = np.argsort(series.stamps, kind="stable")
    pos = np.searchsorted(series.stamps[order], recorded.stamps)
    pos = np.clip(pos, 0, len(series) - 1)
    idx = order[pos]
    hit = series.stamps[idx] == recorded.stamps
    matched_idx = idx[hit]
    unique = np.unique(matched_idx)
    diff = np.abs(recorded.effort[hit] - offline.effort[matched_idx])
    per_joint = diff.max(axis=0) if diff.size else np.zeros(len(series.names))
    return ReplayComparison(
        expected=len(series),
        received=len(recorded),
        matched=int(unique.size),
        duplicates=int(matched_idx.size - unique.size),
        unmatched=int(np.sum(~hit)),
        max_abs_diff=float(per_joint.max()) if per_joint.size else 0.0,
        max_abs_diff_per_joint=per_joint,
        tracking=int(np.sum(offline.tracking[unique])),
        missing=tuple(int(k) for k in np.setdiff1d(np.arange(len(series)), unique)[:20]),
    )
