"""The closed-loop experiment's report: tracking per case, ratios, loop health, parameters, a plot.

* Tracking of each case is measured on its bag by :func:`robot_dynamics.bag.tracking.tracking` (the
  code of ``robot-dynamics tracking``): per joint RMS and max of ``q_d - q`` while the trajectory is
  active; the case's **RMS** is over every joint and sample (``sqrt(mean_j rms_j^2)``), its **max** the
  largest ``|q_d - q|`` of any joint. With a sensor profile ``q`` is the **true** position (the
  simulator's ``~/true_joint_states``, :data:`TRUTH_TOPIC`): what the arm did, not what its sensors
  said; the same figure of the measured state (what the controller saw) is reported beside it.
* Loop health from each case's recording (:func:`loop_counters`): joint states without an answer (in
  lock-step: missed commands) and answers clamped to the effort limits; and from the simulator's
  diagnostics at the end of each run of the nodes: its missed and late commands in all (a reset makes
  one late answer: the answer to the state before it); how often a case was started again because the
  controller tracked its motion late (a busy machine).
* Real time: the loop's rate (joint states per second of their stamps), the gaps between them, joint
  states left without an answer, and the latency from a state's stamp (the simulator's clock when it
  published it) to the arrival of the command answering it (stamped alike) at the experiment's
  recorder, on the same clock; and the same latency where the loop closes, at the plant (the
  simulator's ``command_latency`` diagnostics since the case's reset, :func:`plant_timing`), with the
  periods its stepping loop skipped. Both are receipt times of the middleware (the recorder's and the
  simulator's), not the times their processes got round to the message.
* Near velocity reversals and elsewhere (:func:`reversal_split`): the position error over the joint
  samples whose desired speed is below :data:`REVERSAL_SPEED` and over the others — where friction is
  least a law of velocity (MuJoCo's friction loss is a soft constraint there) and an identified model
  differs most from the plant.
* Parameters beside the plant's, and the base parameters: :mod:`robot_dynamics.experiment.parameters`;
  the standstill after each motion: :mod:`robot_dynamics.experiment.standstill`.

Files: ``report.json``, ``report.md``, ``tracking.png`` (:func:`write`).

The module is longer than 400 lines because the measures, the summary and the markdown read the same
runs and summary, each figure written beside its place in the table (the standstill and the
parameters, whole algorithms of their own, are apart).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robot_dynamics.bag.decode import JointStateSeries
from robot_dynamics.bag.evaluate import read_inputs
from robot_dynamics.bag.tracking import Tracking, tracking
from robot_dynamics.experiment.cases import RATIOS, Case
from robot_dynamics.experiment.motion import Motion
from robot_dynamics.experiment.parameters import base_parameter_lines
from robot_dynamics.experiment.standstill import standstill_lines
from robot_dynamics.model import FloatArray, RobotModel

REVERSAL_SPEED = 0.05  # rad/s (m/s): a joint sample "near a reversal" below this desired speed
TRUTH_TOPIC = "/simulator_node/true_joint_states"  # the simulator's truth beside its measured joint_states


@dataclass
class Run:
    """One case as run: its bag, its tracking report, the loop's counters, its wall time."""

    case: Case
    bag: Path
    tracking: Tracking
    counters: dict[str, int]
    wall_s: float
    realtime: dict[str, Any] | None = None
    reversals: dict[str, float] | None = None  # the RMS near velocity reversals and elsewhere
    measured: Tracking | None = None  # with sensors: the tracking of the measured state (``tracking``: the true)
    standstill: dict[str, Any] | None = None  # the hold after the motion (:func:`standstill`)

    @property
    def rms(self) -> float:
        return rms_of(self.tracking)

    @property
    def max(self) -> float:
        return float(np.max(self.tracking.overall.position_max))


def measure(
    model: RobotModel, case: Case, bag: Path, joint_map: Mapping[str, str], wall_s: float, truth: bool = False
) -> Run:
    """The tracking of the case's bag, read as ``robot-dynamics tracking BAG`` reads it (``truth``: of the
    true state, ``--joint-states`` :data:`TRUTH_TOPIC`, and of the measured one beside it), and its
    position error split at the desired speed :data:`REVERSAL_SPEED` (:func:`reversal_split`)."""
    topic = TRUTH_TOPIC if truth else "joint_states"
    inputs = read_inputs(bag, model, joint_states=topic, joint_map=joint_map, require_trajectory=True)
    report = tracking(model, inputs.series, inputs.trajectories, bag=str(bag))
    run = Run(case, bag, report, {}, wall_s)
    if report.velocity_error is not None and inputs.series.velocity is not None:
        run.reversals = reversal_split(report.position_error, report.velocity_error + inputs.series.velocity)
    if truth:
        seen = read_inputs(bag, model, joint_map=joint_map, require_trajectory=True)
        run.measured = tracking(model, seen.series, seen.trajectories, bag=str(bag))
    return run


def reversal_split(e: FloatArray, qd_d: FloatArray, speed: float = REVERSAL_SPEED) -> dict[str, float]:
    """RMS of ``e`` over the joint samples whose desired speed ``|qd_d|`` is below ``speed`` (a joint near a
    velocity reversal or a rest, where friction is least like a law of velocity: MuJoCo's friction loss
    is a soft constraint there) and over the others; NaN rows (no trajectory) left out."""
    active = ~np.isnan(e[:, 0])
    e, slow = e[active], np.abs(qd_d[active]) < speed

    def rms(values: FloatArray) -> float:
        return float(np.sqrt(np.mean(values**2))) if values.size else 0.0

    return {"speed": speed, "fraction": float(slow.mean()), "rms_near": rms(e[slow]), "rms_elsewhere": rms(e[~slow])}


def loop_counters(
    model: RobotModel,
    states: JointStateSeries,
    commands: JointStateSeries,
    start: int,
    end: int,
    period_ns: int | None = None,
) -> dict[str, int]:
    """From a case's recording, the joint states stamped in ``[start, end]`` ns: how many, how many got no
    answer (a command stamped alike: in lock-step, a missed command), how many answers were clamped
    to the effort limits (the node clamps to exactly ``±`` the limit); with ``period_ns`` (lock-step:
    one state per period) also how many the recording lacks (a recorder that fell behind a fast loop
    on a busy machine loses the oldest states of the publisher's history)."""
    stamps = states.stamps[(states.stamps >= start) & (states.stamps <= end)]
    inside = (commands.stamps >= start) & (commands.stamps <= end)
    limits = np.array([j.limits.effort for j in model.joints])
    effort = commands.effort[inside] if commands.effort is not None else np.zeros((0, model.dof))
    clamped = (np.isfinite(limits) & (np.abs(effort) >= limits)).any(axis=1)
    out = {
        "joint_states": int(stamps.size),
        "unanswered": int((~np.isin(stamps, commands.stamps)).sum()),
        "clamped": int(clamped.sum()),
    }
    if period_ns:
        out["not_recorded"] = int((end - start) // period_ns + 1 - np.unique(stamps).size)
    return out


def late_activation(
    motion: Motion, commands: JointStateSeries, start: int, end: int, measurement_delay_ns: int = 0
) -> float | None:
    """None when every answer stamped in ``[start, end]`` ns carries the motion's desired position there
    (the feed-forward node's ``feedforward/efforts`` carry the desired state they compared the measurement
    with: with a ``measurement_delay`` the one of that much earlier); else how long after ``start`` (s)
    the first answer that does not was stamped: the node got the motion late."""
    inside = (commands.stamps >= start) & (commands.stamps <= end)
    stamps = commands.stamps[inside]
    desired = motion.sampler().sample_many((stamps - start - measurement_delay_ns) * 1e-9).positions
    off = np.abs(commands.position[inside] - desired).max(axis=1) > 1e-9 if stamps.size else np.zeros(0, bool)
    return float((stamps[off][0] - start) * 1e-9) if off.any() else None


def describe_counters(c: Mapping[str, int]) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in c.items())


def timing(
    state_stamps: np.ndarray, command_stamps: np.ndarray, command_receipts: np.ndarray, rate: float
) -> dict[str, Any]:
    """Real-time figures of a run (module docstring); times in ns on one clock."""
    states = np.unique(state_stamps)
    answered = np.isin(states, command_stamps)
    mine = np.isin(command_stamps, states)
    latency = (command_receipts[mine] - command_stamps[mine]) * 1e-6  # ms
    gaps = np.diff(states) * 1e-6
    span = (states[-1] - states[0]) * 1e-9 if states.size > 1 else 0.0

    def q(values: np.ndarray, p: float) -> float | None:
        return float(np.percentile(values, p)) if values.size else None

    return {
        "rate_hz": (states.size - 1) / span if span > 0 else 0.0,
        "target_rate_hz": rate,
        "joint_states": int(states.size),
        "unanswered": int((~answered).sum()),
        "gap_p99_ms": q(gaps, 99),
        "gap_max_ms": float(gaps.max()) if gaps.size else None,
        "latency_ms": {
            "p50": q(latency, 50),
            "p99": q(latency, 99),
            "max": float(latency.max()) if latency.size else None,
        },
    }


def plant_timing(diagnostics: Mapping[str, str]) -> dict[str, Any]:
    """The simulator's real-time diagnostics (:mod:`robot_dynamics.ros.realtime`): the command latency at
    the plant (ms) and the periods its loop skipped."""

    def number(key: str) -> float | None:
        value = diagnostics.get(key, "")
        return float(value) if value else None

    return {
        "latency_ms": {k: number(f"command_latency_{k}_ms") for k in ("p50", "p99", "max")},
        "commands": int(diagnostics.get("command_latency_count", "0")),
        "overruns": int(diagnostics.get("overruns", "0")),
    }


# ------------------------------------------------------------------------------------------------
# summary, markdown, plot
# ------------------------------------------------------------------------------------------------
def ratios(runs: Mapping[str, Run], targets: Mapping[tuple[str, str], float | None] = RATIOS) -> list[dict[str, Any]]:
    """Every ratio of ``targets`` whose two cases ran, with its target, whether it is met, and the same
    ratio near velocity reversals and elsewhere."""
    out = []
    for (a, b), target in targets.items():
        if a in runs and b in runs:
            value = runs[a].rms / runs[b].rms if runs[b].rms > 0 else math.inf
            row: dict[str, Any] = {
                "ratio": f"{a}/{b}",
                "value": value,
                "target": target,
                "met": None if target is None else value <= target,
            }
            ra, rb = runs[a].reversals, runs[b].reversals
            if ra is not None and rb is not None and rb["rms_near"] > 0 and rb["rms_elsewhere"] > 0:
                row["near_reversals"] = ra["rms_near"] / rb["rms_near"]
                row["elsewhere"] = ra["rms_elsewhere"] / rb["rms_elsewhere"]
            out.append(row)
    return out


def summarise(
    settings: Mapping[str, Any],
    runs: Mapping[str, Run],
    parameters: list[dict[str, Any]],
    simulator: Mapping[str, Mapping[str, int]],
    elapsed_s: float,
    base_parameters: Mapping[str, Any] | None = None,
    targets: Mapping[tuple[str, str], float | None] = RATIOS,
) -> dict[str, Any]:
    """The JSON report (``base_parameters``: :func:`~robot_dynamics.experiment.parameters.base_parameter_summary`;
    ``targets``: the ratios reported, :func:`~robot_dynamics.experiment.cases.ratio_targets`)."""
    cases = {}
    for key, run in runs.items():
        cases[key] = {
            "title": run.case.title,
            "control_law": run.case.control_law,
            "feedforward_source": run.case.feedforward_source,
            "robot_file": run.case.robot_file,
            "delays_compensated": run.case.compensate_delays,
            "bag": str(run.bag),
            "rms_position_error": run.rms,
            "max_position_error": run.max,
            "samples": run.tracking.overall.samples,
            "joints": run.tracking.overall.joints(run.tracking.joint_names),
            "counters": run.counters,
            "reversals": run.reversals,
            **(
                {}
                if run.measured is None
                else {
                    "measured": {
                        "rms_position_error": rms_of(run.measured),
                        "max_position_error": float(np.max(run.measured.overall.position_max)),
                    }
                }
            ),
            **({"standstill": run.standstill} if run.standstill is not None else {}),
            "wall_s": run.wall_s,
            **({"realtime": run.realtime} if run.realtime is not None else {}),
        }
    return {
        "settings": dict(settings),
        "cases": cases,
        "ratios": ratios(runs, targets),
        "parameters": parameters,
        "base_parameters": None if base_parameters is None else dict(base_parameters),
        "simulator": dict(simulator),
        "elapsed_s": elapsed_s,
    }


def rms_of(report: Tracking) -> float:
    """The RMS of ``q_d - q`` over every joint and sample of a tracking report."""
    return math.sqrt(float(np.mean(report.overall.position_rms**2)))


def _g(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}g}"


def markdown(summary: Mapping[str, Any]) -> str:
    s, cases = summary["settings"], summary["cases"]
    sensed = any("measured" in c for c in cases.values())
    lines = [
        f"# Closed-loop experiment: {s['robot']}",
        "",
        f"Plant: MuJoCo, deviations `{s.get('plant') or 'none'}`; {s['rate']:g} Hz, lock-step simulated time "
        f"(real time for `-realtime` runs); gains kp {s['kp']}, kd {s['kd']}; start {s['start']}.",
    ]
    profile = s.get("sensor_profile")
    if profile:
        drive = (
            "drive factors (torque applied per unit commanded: 1 + e; behind a torque loop the link side, "
            f"1 / (1 + s)) = {[round(v, 4) for v in profile['drive_factor']]}"
        )
        loops = profile.get("torque_loop_hz") or []
        if any(loops):
            offsets = [round(v, 4) for v in profile.get("drive_offset") or []]
            drive += f", torque loop bandwidths {loops} Hz (the sensor's offsets {offsets} N·m applied through it)"
        if profile.get("identify_offsets") == "torque":
            drive += (
                "; identify ran with `--offsets torque` (the fitted offsets deployed in the identified file, "
                "kept in C-plain's efforts)"
            )
        lines += [
            "",
            f"Sensors: profile `{profile['name']}` ({profile['description']}), measurement delay "
            f"{profile['measurement_delay_s'] * 1e3:g} ms, command delay {profile['command_delay_s'] * 1e3:g} ms, "
            f"{drive}. The controller and identify see the measured state; tracking is scored on the true state "
            "(the measured one beside it).",
        ]
    lines += [
        "",
        "## Tracking (position error q_d − q while the trajectory is active; rad, m for a prismatic joint)",
        "",
        "| case | controller | RMS | max | "
        + ("measured RMS | " if sensed else "")
        + "joint states | unanswered | clamped | started again |",
        "|---|---|---:|---:|" + ("---:|" if sensed else "") + "---:|---:|---:|---:|",
    ]
    for key, c in cases.items():
        k = c["counters"]
        seen = f"{c['measured']['rms_position_error']:.4g} | " if "measured" in c else ("– | " if sensed else "")
        lines.append(
            f"| {key} | {c['title']} | {c['rms_position_error']:.4g} | {c['max_position_error']:.4g} | {seen}"
            f"{k['joint_states']} | {k['unanswered']} | {k['clamped']} | {k.get('restarts', 0)} |"
        )
    for tag, values in summary.get("simulator", {}).items():
        lines.append("")
        lines.append(f"Simulator ({tag} nodes): " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in values.items()))
    first = next(iter(cases.values()), None)
    if first is not None:
        joints = [j["joint"] for j in first["joints"]]
        lines += [
            "",
            "Per joint RMS / max:",
            "",
            "| case | " + " | ".join(joints) + " |",
            "|---|" + "---:|" * len(joints),
        ]
        for key, c in cases.items():
            cells = [f"{j['rms_position_error']:.3g} / {j['max_position_error']:.3g}" for j in c["joints"]]
            lines.append(f"| {key} | " + " | ".join(cells) + " |")
    if summary["ratios"]:
        speed = next((c["reversals"]["speed"] for c in cases.values() if c.get("reversals")), REVERSAL_SPEED)
        lines += [
            "",
            "## Ratios of tracking RMS",
            "",
            f"Also over the joint samples near a velocity reversal or a rest (desired speed below {speed:g} rad/s)",
            "and over the others.",
            "",
            "| ratio | value | target | met | near reversals | elsewhere |",
            "|---|---:|---:|---|---:|---:|",
        ]
        for r in summary["ratios"]:
            met = "" if r["met"] is None else ("yes" if r["met"] else "**no**")
            target = "" if r["target"] is None else f"≤ {r['target']:g}"
            split = " | ".join(f"{r[k]:.3g}" if k in r else "–" for k in ("near_reversals", "elsewhere"))
            lines.append(f"| {r['ratio']} | {r['value']:.3g} | {target} | {met} | {split} |")
    lines += standstill_lines(cases)
    realtime = {k: c["realtime"] for k, c in cases.items() if "realtime" in c}
    if realtime:
        lines += [
            "",
            "## Real time (no lock-step)",
            "",
            "Latency: a joint state's stamp to the arrival of the command answering it (the middleware's receipt "
            "time), at the plant (where the loop closes) and at the experiment's recorder.",
            "",
            "| run | rate | gap p99 | at the plant p50 | p99 | max | at the recorder p50 | p99 | max "
            "| unanswered | loop overruns |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for key, r in realtime.items():
            plant = r.get("at_plant", {"latency_ms": {"p50": None, "p99": None, "max": None}, "overruns": "–"})
            lat = [*plant["latency_ms"].values(), *r["latency_ms"].values()]
            cells = [f"{r['rate_hz']:.1f} Hz", *(f"{_g(v)} ms" for v in (r["gap_p99_ms"], *lat))]
            lines.append(f"| {key} | " + " | ".join(cells) + f" | {r['unanswered']} | {plant['overruns']} |")
    if summary["parameters"]:
        has_id = "identified" in summary["parameters"][0]
        lines += ["", "## Parameters: stock file, plant (what MuJoCo simulates), identified", ""]
        lines += [
            "Determined by joint torques: alone (a base parameter of its own), regrouped (only in a combination "
            "with other parameters: its identified value alone means little), no effect.",
            "",
            "| parameter | of | determined | stock | plant | identified | error |",
            "|---|---|---|---:|---:|---:|---:|",
        ]
        for p in summary["parameters"]:
            rel = p.get("relative_error")
            error = "" if not has_id else f"{p['error']:+.3g}" + ("" if rel is None else f" ({100 * rel:+.1f} %)")
            ident = f"{p['identified']:.4g}" if has_id else "–"
            values = f"{p['stock']:.4g} | {p['plant']:.4g} | {ident} | {error}"
            lines.append(f"| {p['what']} {p['parameter']} | {p['of']} | {p['determined']} | {values} |")
    lines += base_parameter_lines(summary.get("base_parameters"))
    return "\n".join(lines) + "\n"


def write_plot(path: Path, runs: Mapping[str, Run]) -> Path:
    """Tracking error over time: every case's RMS over the joints (log scale), then each case per joint."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    shown = {k: r for k, r in runs.items() if k != "excitation"}
    fig = Figure(figsize=(9.0, 2.6 * (len(shown) + 1)), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(shown) + 1, 1, squeeze=False)[:, 0]
    for key, run in shown.items():
        e = run.tracking.position_error
        active = ~np.isnan(e[:, 0])
        t = run.tracking.t[active] - run.tracking.t[active][0]
        axes[0].semilogy(
            t, np.sqrt(np.mean(e[active] ** 2, axis=1)) + 1e-12, linewidth=0.9, label=f"{key}: {run.case.title}"
        )
        ax = next(a for a, k in zip(axes[1:], shown, strict=True) if k == key)
        for j, name in enumerate(run.tracking.joint_names):
            ax.plot(t, e[active, j], linewidth=0.8, label=name)
        ax.set_title(f"{key}: {run.case.title} (RMS {run.rms:.3g} rad)", fontsize=9)
        ax.set_ylabel("q_d − q [rad]")
        ax.grid(True, linewidth=0.4, alpha=0.6)
    axes[0].set_ylabel("RMS over joints [rad]")
    axes[0].set_title("tracking error over time, every case", fontsize=9)
    axes[0].grid(True, which="both", linewidth=0.4, alpha=0.6)
    axes[0].legend(fontsize=7)
    if len(axes) > 1:
        axes[1].legend(fontsize=7, ncols=4)
    axes[-1].set_xlabel("time since the trajectory's start [s]")
    fig.savefig(path, format="png", metadata={"Software": None})
    return path


def write(out: Path, summary: Mapping[str, Any], runs: Mapping[str, Run]) -> None:
    (out / "report.json").write_text(json.dumps(summary, indent=2, default=_plain) + "\n")
    (out / "report.md").write_text(markdown(summary))
    write_plot(out / "tracking.png", runs)


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
