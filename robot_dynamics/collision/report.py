"""The collision case's report: a table per obstacle (report.md, report.json) and the contact force (force.png).

Per reaction: the tool's speed at the first contact (the obstacles' force on the arm, the simulator's
ground truth), the detection (the contact node's first collision event after the contact) and the
reaction's first command after the contact, the impact's peak force (its first ``IMPACT`` s), the peak
force after it and the force ``LATE`` s after the contact, and for the reactions the reductions against
``none``: ``1 - peak / peak_none`` (after the impact) and ``1 - late / late_none``.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from robot_dynamics.collision.case import IMPACT, LATE, CaseMeasures


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:.1f} ms"


def describe(m: CaseMeasures) -> str:
    """One line of a run."""
    if m.contact is None:
        return f"no contact (peak {m.peak_force:.1f} N)"
    late = "-" if m.late_force is None else f"{m.late_force:.1f} N"
    return (
        f"contact at {m.contact:.3f} s, {m.tool_speed:.2f} m/s; detected {_ms(m.detection)}, first reaction command "
        f"{_ms(m.first_command)} after it; impact {m.impact_force:.1f} N, then peak {m.peak_force:.1f} N, "
        f"{late} {LATE:g} s later"
    )


def reductions(rows: list[CaseMeasures]) -> dict[str, dict[str, float | None]]:
    """Per reaction, ``1 - x / x_none`` of the peak force and of the late force; None where a run did not
    touch the obstacle (a reaction raised before the contact stops the arm short of it: no comparison)."""
    none = next((m for m in rows if m.reaction == "none"), None)
    out: dict[str, dict[str, float | None]] = {}
    for m in rows:
        if none is None or m.reaction == "none":
            continue
        touched = m.contact is not None and none.contact is not None
        peak = 1.0 - m.peak_force / none.peak_force if touched and none.peak_force > 0.0 else None
        late = (
            1.0 - m.late_force / none.late_force
            if m.late_force is not None and none.late_force is not None and none.late_force > 0.0
            else None
        )
        out[m.reaction] = {"peak": peak, "late": late}
    return out


def summarise(case: Any, wall: float) -> dict[str, Any]:
    """The JSON-ready summary of a :class:`robot_dynamics.ros.collision_case.CollisionCase` run."""
    s, b = case.s, case.b
    return {
        "robot": case.model.name,
        "plant": b.plant,
        "sensor_profile": s.sensor_profile or "ideal",
        "rate": b.rate,
        "start": case.q0.tolist(),
        "kp": case.kp.tolist(),
        "kd": case.kd.tolist(),
        "speed": s.speed,
        "free": case.free,
        "cases": {
            key: {
                "obstacles": case.cases[key][0],
                "rows": [asdict(m) for m in rows],
                "reductions": reductions(rows),
            }
            for key, rows in case.results.items()
        },
        "wall_s": wall,
    }


def markdown(summary: dict[str, Any]) -> str:
    """The tables of a summary."""
    lines = [
        f"# Collision case: {summary['robot']}, sensors {summary['sensor_profile']}, {summary['rate']:g} Hz lock-step",
        "",
    ]
    free = summary.get("free") or {}
    if free:
        lines += [
            f"Free motion, reaction `stop` armed: {free['duration_s']:g} s, {free['joint_states']} joint states, "
            f"{free['collisions_raised']} collisions raised, {free['reactions']} reactions.",
            "",
        ]
    for key, case in summary["cases"].items():
        lines += [
            f"## {key} ({Path(case['obstacles']).name})",
            "",
            "| reaction | tool speed at contact | detection after contact | first reaction command | "
            f"impact force (first {IMPACT * 1e3:g} ms) | peak force after it | force {LATE:g} s later | "
            "peak vs none | later vs none |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in case["rows"]:
            red = case["reductions"].get(row["reaction"], {})

            def pct(v: float | None) -> str:
                return "-" if v is None else f"{-100.0 * v:+.0f} %"

            speed = "-" if row["tool_speed"] is None else f"{row['tool_speed']:.2f} m/s"
            late = "-" if row["late_force"] is None else f"{row['late_force']:.1f} N"
            lines.append(
                f"| {row['reaction']} | {speed} | {_ms(row['detection'])} | {_ms(row['first_command'])} | "
                f"{row['impact_force']:.1f} N | {row['peak_force']:.1f} N | {late} | {pct(red.get('peak'))} | "
                f"{pct(red.get('late'))} |"
            )
        lines.append("")
    return "\n".join(lines)


def plot(out: Path, summary: dict[str, Any]) -> Path:
    """The contact force of every run, one panel per obstacle file, from the runs' saved forces."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(summary["cases"])
    fig, axes = plt.subplots(len(keys), 1, figsize=(8, 3.2 * max(1, len(keys))), squeeze=False)
    for ax, key in zip(axes[:, 0], keys, strict=True):
        for row in summary["cases"][key]["rows"]:
            data = np.load(out / "bags" / f"{key}_{row['reaction']}_force.npz")
            t0 = row["contact"] if row["contact"] is not None else 0.0
            ax.plot(data["t"] - t0, data["force"], label=row["reaction"])
        ax.set_xlim(-0.1, 1.0)
        ax.set_xlabel("time from the first contact, s")
        ax.set_ylabel("contact force, N")
        ax.set_title(f"{summary['robot']}: {key}")
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path = out / "force.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write(out: Path, summary: dict[str, Any]) -> None:
    (out / "report.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "report.md").write_text(markdown(summary) + "\n")
    plot(out, summary)


__all__ = ["describe", "markdown", "plot", "reductions", "summarise", "write"]
