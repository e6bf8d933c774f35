"""The closed-loop experiment on the Franka Panda and the UR5 of example-robot-data, against its targets.

Usage: ``.venv/bin/python bench/bench_closed_loop.py [--robots panda,ur5] [--out DIR] [--duration 10]
[--excitation-duration 10] [--no-realtime]``

For each robot, ``robot-dynamics closed-loop`` as a user runs it (its own process; the simulator and the
feed-forward node in processes of their own over DDS, lock-step 1 kHz), on a MuJoCo plant built from the
stock URDF (Panda: tip ``panda_hand_tcp``, fingers locked) that deviates from it by per-joint viscous
damping, Coulomb friction (MuJoCo ``frictionloss``) and armature, and every moving link's mass and
inertia scaled by factors drawn in [0.8, 1.2] (seed 7): the deviation files are written to
``DIR/<robot>_plant.yaml`` (the values below). The same gains in every case: the command's default rule,
``kp = D_ii(q0) ωn²``, ``kd = 2 ζ ωn D_ii(q0)`` with ωn = 20 rad/s, ζ = 1 (docs/closing-the-loop.md).
With ``--realtime`` (default) also case B without lock-step at 1 kHz: the loop's rate and the joint state
→ command latency.

Prints one table of tracking RMS per case and robot, the ratios against the targets, the loop's
counters and the real-time figures, the largest errors of the parameters the joint torques determine
alone (friction, armature) and how many significant base parameters lie within 5 % of the plant's; each
robot's full report is in ``DIR/<robot>/report.md``.
Wall time: about 4-5 minutes per robot on a shared 2-core machine (the excitation design and the runs).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ROBOTS_DIR = Path(
    str(
        importlib.metadata.distribution("example-robot-data").locate_file(
            "cmeel.prefix/share/example-robot-data/robots"
        )
    )
)
ROBOTS: dict[str, dict[str, Any]] = {
    "panda": {
        "urdf": "panda_description/urdf/panda.urdf",
        "chain": [
            "--tip-link",
            "panda_hand_tcp",
            "--lock-joint",
            "panda_finger_joint1",
            "--lock-joint",
            "panda_finger_joint2",
        ],
        "start": [0.0, -0.3, 0.0, -2.0, 0.0, 1.9, 0.785],  # near franka's "ready" pose; its excitation touches no link
        "plant": {
            "damping": [1.0, 1.0, 1.0, 1.0, 0.3, 0.3, 0.2],
            "friction": [1.0, 1.0, 0.8, 0.8, 0.4, 0.4, 0.3],
            "armature": [0.1, 0.1, 0.1, 0.1, 0.03, 0.03, 0.03],
            "random": {"seed": 7, "mass": 0.2, "inertia": 0.2},
        },
    },
    "ur5": {
        "urdf": "ur_description/urdf/ur5_robot.urdf",
        "chain": [],
        "start": [0.0, -1.2, 1.4, -1.6, -1.57, 0.3],
        "plant": {
            "damping": [2.0, 2.0, 1.5, 0.5, 0.5, 0.3],
            "friction": [4.0, 4.0, 3.0, 1.0, 1.0, 0.8],
            "armature": [0.15, 0.15, 0.1, 0.02, 0.02, 0.02],
            "random": {"seed": 7, "mass": 0.2, "inertia": 0.2},
        },
    },
}
SHOWN = ("A", "B", "B-exact", "C", "D")


def run(name: str, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    spec = ROBOTS[name]
    plant = out / f"{name}_plant.yaml"
    plant.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in spec["plant"].items()))
    command = [
        sys.executable,
        "-m",
        "robot_dynamics.cli",
        "closed-loop",
        str(ROBOTS_DIR / spec["urdf"]),
        *spec["chain"],
    ]
    command += ["--plant", str(plant), "--out", str(out / name), "--start", *map(str, spec["start"])]
    command += ["--duration", f"{args.duration:g}", "--excitation-duration", f"{args.excitation_duration:g}", "--json"]
    command += ["--realtime"] if args.realtime else []
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    (out / f"{name}.log").write_text(done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{name}: robot-dynamics closed-loop failed:\n{done.stderr[-2000:]}")
    summary: dict[str, Any] = json.loads(done.stdout)
    summary["wall_s"] = time.monotonic() - started
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", default="panda,ur5")
    parser.add_argument("--out", type=Path, default=REPO / "out" / "bench_closed_loop")
    parser.add_argument("--duration", type=float, default=10.0, help="tracked motion, s")
    parser.add_argument("--excitation-duration", type=float, default=10.0, help="s")
    parser.add_argument("--no-realtime", dest="realtime", action="store_false")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = {name: run(name, args.out, args) for name in args.robots.split(",")}

    print("\nTracking RMS of q_d - q over every joint and sample (rad), lock-step 1 kHz:\n")
    print("| robot | " + " | ".join(SHOWN) + " | missed commands | wall |")
    print("|---|" + "---:|" * (len(SHOWN) + 2))
    for name, r in results.items():
        cells = [f"{r['cases'][k]['rms_position_error']:.3g}" if k in r["cases"] else "–" for k in SHOWN]
        missed = sum(v.get("missed_commands", 0) for v in r["simulator"].values())
        print(f"| {name} | " + " | ".join(cells) + f" | {missed} | {r['wall_s']:.0f} s |")
    print("\n| robot | " + " | ".join(x["ratio"] for x in next(iter(results.values()))["ratios"]) + " |")
    print("|---|" + "---:|" * len(next(iter(results.values()))["ratios"]))
    for name, r in results.items():
        cells = []
        for x in r["ratios"]:
            target = "" if x["target"] is None else f" (≤ {x['target']:g} {'met' if x['met'] else 'NOT met'})"
            cells.append(f"{x['value']:.3g}{target}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.realtime:
        print("\nReal time (no lock-step), case B at 1 kHz:\n")
        print("Latency: a state's stamp to the arrival of the command answering it (the middleware's receipt time),")
        print("at the plant (where the loop closes; target p99 <= 2 ms) and at the experiment's recorder.\n")
        print(
            "| robot | rate | joint states | unanswered | overruns | plant p50 | p99 | max | recorder p50 | p99 | RMS |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, r in results.items():
            c = r["cases"]["B-realtime"]
            t, lat = c["realtime"], c["realtime"]["latency_ms"]
            plant = t.get("at_plant", {"latency_ms": {"p50": None, "p99": None, "max": None}, "overruns": None})
            at = {k: "-" if v is None else f"{v:.2f} ms" for k, v in plant["latency_ms"].items()}
            print(
                f"| {name} | {t['rate_hz']:.0f} Hz | {t['joint_states']} | {t['unanswered']} | {plant['overruns']} | "
                f"{at['p50']} | {at['p99']} | {at['max']} | {lat['p50']:.2f} ms | {lat['p99']:.2f} ms | "
                f"{c['rms_position_error']:.3g} |"
            )
    print("\nLargest relative error of the parameters joint torques determine alone (identified vs plant):\n")
    for name, r in results.items():
        worst: dict[str, tuple[float, str]] = {}
        for p in r["parameters"]:
            if p.get("determined") == "alone" and p.get("relative_error") is not None:
                kind = p["what"]
                worst[kind] = max(worst.get(kind, (0.0, "")), (abs(p["relative_error"]), p["parameter"]))
        print(f"  {name}: " + ", ".join(f"{k} {100 * v:.1f} % ({p})" for k, (v, p) in worst.items()))
    print("\nBase parameters (identified vs plant; significant: the plant's value makes >= 0.01 N·m of torque):\n")
    for name, r in results.items():
        b = r.get("base_parameters")
        if b:
            print(
                f"  {name}: {b['within_count']} of {b['significant']} significant within {100 * b['within']:g} % "
                f"(of {b['count']}); 90th percentile {100 * b['p90_relative_error']:.2g} %, largest "
                f"{100 * b['max_relative_error']:.2g} %; the largest error of any base parameter makes "
                f"{b['max_error_nm']:.3g} N·m"
            )


if __name__ == "__main__":
    main()
