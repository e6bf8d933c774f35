"""The closed-loop experiment on the Franka Panda and the UR5 of example-robot-data, against its targets.

Usage: ``.venv/bin/python bench/bench_closed_loop.py [--robots panda,ur5] [--out DIR] [--duration 10]
[--excitation-duration 10] [--no-realtime] [--sensors ur_e_series,franka,...] [--pairs ur5:ur_e_series,...] [--reuse]``

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

With ``--sensors P1,P2,...`` (sensor profiles: docs/plant.md) each robot runs instead, per profile, the
experiment with the profile (``--sensors P``: its rate, its delays told to the controller and each case
also without them, tracking scored on the true state) and beside it the same experiment at the same rate
and gains with the ``ideal`` profile (the plant's exact state, no delay): the cost of the sensors, stated
in the same run. Tables: tracking per case (true state; the measured one's RMS beside it), the ratios
against the sensor targets (C ≤ 0.6 B, C ≤ 1.5 D, C ≤ C-plain), what the sensors cost (each case's RMS
over the ideal one's), what the delay compensation brings (each case without it over with it), and the
standstill (the commanded torque's standard deviation at rest with the identified and the stock file,
the share of its variance above 100 Hz). ``DIR/<robot>_<profile>/`` holds each run's report;
``--reuse`` reads a finished run's report instead of running it again. About 10 minutes per run.
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
SENSED = ("A", "B", "B-exact", "C", "C-plain", "D")
STANDSTILL_TARGET = 0.05  # N m: identified torque std at rest <= stock + this, every joint


def run(
    name: str, out: Path, args: argparse.Namespace, extra: list[str] | None = None, tag: str = ""
) -> dict[str, Any]:
    spec = ROBOTS[name]
    plant = out / f"{name}_plant.yaml"
    plant.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in spec["plant"].items()))
    where = out / (f"{name}_{tag}" if tag else name)
    if args.reuse and (where / "report.json").is_file():
        summary: dict[str, Any] = json.loads((where / "report.json").read_text())
        summary.setdefault("wall_s", summary.get("elapsed_s", 0.0))
        return summary
    command = [
        sys.executable,
        "-m",
        "robot_dynamics.cli",
        "closed-loop",
        str(ROBOTS_DIR / spec["urdf"]),
        *spec["chain"],
    ]
    command += ["--plant", str(plant), "--out", str(where), "--start", *map(str, spec["start"])]
    command += ["--duration", f"{args.duration:g}", "--excitation-duration", f"{args.excitation_duration:g}", "--json"]
    command += ["--realtime"] if args.realtime and not extra else []
    command += extra or []
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    (out / f"{where.name}.log").write_text(done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{where.name}: robot-dynamics closed-loop failed:\n{done.stderr[-2000:]}")
    summary = json.loads(done.stdout)
    summary["wall_s"] = time.monotonic() - started
    return summary


def rate_of(profile: str) -> float:
    """The control rate of a profile (the command runs at it): its file's, else 1 kHz."""
    from robot_dynamics.plant import load_sensor_profile

    return load_sensor_profile(profile).rate or 1000.0


def rms(summary: dict[str, Any], key: str, measured: bool = False) -> float | None:
    case = summary["cases"].get(key)
    if case is None:
        return None
    return float(case["measured"]["rms_position_error"] if measured else case["rms_position_error"])


def cell(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}g}"


def share(standstill: dict[str, Any], rate: float) -> str:
    """The share of the torque's variance above 100 Hz of the joint whose std is largest ("–": the rate's
    Nyquist frequency is not above 100 Hz)."""
    values, std = standstill.get("torque_share_above"), standstill["torque_std"]
    if values is None or rate <= 200.0:
        return "–"
    return f"{100 * values[max(range(len(std)), key=std.__getitem__)]:.0f} %"


def sensed_tables(results: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """The tables of a ``--sensors`` run: ``results[(robot, profile)] = (with the profile, ideal)``."""
    print("\nTracking RMS of q_d - q, q the TRUE position (rad), lock-step at each profile's rate; the")
    print("ideal row: the same rate and gains with the plant's exact state (no sensors):\n")
    print("| robot | sensors | rate | " + " | ".join(SENSED) + " | missed commands | wall |")
    print("|---|---|---:|" + "---:|" * (len(SENSED) + 2))
    for (robot, profile), pair in results.items():
        for label, r in zip((profile, "ideal"), pair, strict=True):
            cells = [cell(rms(r, k)) for k in SENSED]
            missed = sum(v.get("missed_commands", 0) for v in r["simulator"].values())
            rate = r["settings"]["rate"]
            print(f"| {robot} | {label} | {rate:g} Hz | " + " | ".join(cells) + f" | {missed} | {r['wall_s']:.0f} s |")
    print("\nThe measured state's RMS (what the controller saw), with the profile:\n")
    print("| robot | sensors | " + " | ".join(SENSED) + " |")
    print("|---|---|" + "---:|" * len(SENSED))
    for (robot, profile), (r, _) in results.items():
        print(f"| {robot} | {profile} | " + " | ".join(cell(rms(r, k, True)) for k in SENSED) + " |")
    print("\nRatios with the profile (targets: C/B <= 0.6, C/D <= 1.5, C/C-plain <= 1.0) and ideal beside:\n")
    shown = ("C/B", "C/D", "C/C-plain", "B/B-exact", "B/A")
    print("| robot | sensors | " + " | ".join(shown) + " |")
    print("|---|---|" + "---:|" * len(shown))
    for (robot, profile), pair in results.items():
        for label, r in zip((profile, "ideal"), pair, strict=True):
            ratios = {x["ratio"]: x for x in r["ratios"]}
            cells = []
            for name in shown:
                x = ratios.get(name)
                if x is None:
                    cells.append("–")
                    continue
                mark = "" if x["target"] is None or label == "ideal" else (" met" if x["met"] else " NOT met")
                cells.append(f"{x['value']:.3g}{mark}")
            print(f"| {robot} | {label} | " + " | ".join(cells) + " |")
    print("\nWhat the sensors cost: each case's RMS with the profile over its RMS with ideal sensors:\n")
    print("| robot | sensors | " + " | ".join(SENSED) + " |")
    print("|---|---|" + "---:|" * len(SENSED))
    for (robot, profile), (r, ideal) in results.items():
        cells = []
        for k in SENSED:
            a, b = rms(r, k), rms(ideal, k)
            cells.append("–" if a is None or not b else f"{a / b:.3g}x")
        print(f"| {robot} | {profile} | " + " | ".join(cells) + " |")
    print("\nDelay compensation: RMS without the delay settings (<case>-uncomp) over with them (> 1: it helps):\n")
    print("| robot | sensors | " + " | ".join(SENSED) + " |")
    print("|---|---|" + "---:|" * len(SENSED))
    for (robot, profile), (r, _) in results.items():
        cells = []
        for k in SENSED:
            a, b = rms(r, k + "-uncomp"), rms(r, k)
            cells.append("–" if a is None or not b else f"{a / b:.3g} ({a:.3g})")
        print(f"| {robot} | {profile} | " + " | ".join(cells) + " |")
    print("\nStandstill (a hold at the goal after the motion): std of the commanded torque per joint, N·m,")
    print(f"identified (C) vs stock (B) file; target C <= B + {STANDSTILL_TARGET:g} on every joint; share of the")
    print("variance above 100 Hz of the joint with the largest std (– : the rate's Nyquist frequency is lower):\n")
    print("| robot | sensors | B std (largest) | C std (largest) | C − B, largest | met | B share > 100 Hz | C share |")
    print("|---|---|---:|---:|---:|---|---:|---:|")
    for (robot, profile), pair in results.items():
        for label, r in zip((profile, "ideal"), pair, strict=True):
            b, c = (r["cases"].get(k, {}).get("standstill") for k in ("B", "C"))
            if not b or not c:
                continue
            diff = max(x - y for x, y in zip(c["torque_std"], b["torque_std"], strict=True))
            rate = r["settings"]["rate"]
            print(
                f"| {robot} | {label} | {max(b['torque_std']):.3g} | {max(c['torque_std']):.3g} | {diff:+.3g} | "
                f"{'yes' if diff <= STANDSTILL_TARGET else 'NO'} | {share(b, rate)} | {share(c, rate)} |"
            )
    print("\nBase parameters of the identified file (identified vs plant), with the profile:\n")
    for (robot, profile), (r, _) in results.items():
        base = r.get("base_parameters")
        if base:
            print(
                f"  {robot} {profile}: {base['within_count']} of {base['significant']} significant within "
                f"{100 * base['within']:g} %; largest {100 * base['max_relative_error']:.2g} %, "
                f"{base['max_error_nm']:.3g} N·m"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", default="panda,ur5")
    parser.add_argument("--out", type=Path, default=REPO / "out" / "bench_closed_loop")
    parser.add_argument("--duration", type=float, default=10.0, help="tracked motion, s")
    parser.add_argument("--excitation-duration", type=float, default=10.0, help="s")
    parser.add_argument("--no-realtime", dest="realtime", action="store_false")
    parser.add_argument(
        "--sensors",
        default="",
        help="sensor profiles, comma separated (e.g. ur_e_series,franka): each run with the profile and with ideal "
        "sensors at its rate",
    )
    parser.add_argument(
        "--pairs",
        default="",
        help="robot:profile pairs instead of every robot with every profile (e.g. ur5:ur_e_series,panda:franka)",
    )
    parser.add_argument("--reuse", action="store_true", help="read a finished run's report.json instead of running it")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.sensors or args.pairs:
        sensed: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
        pairs = (
            [tuple(p.split(":", 1)) for p in args.pairs.split(",")]
            if args.pairs
            else [(name, profile) for name in args.robots.split(",") for profile in args.sensors.split(",")]
        )
        for name, profile in pairs:
            if name not in ROBOTS:
                raise SystemExit(f"--pairs: no robot {name!r} (one of {', '.join(ROBOTS)})")
            rate = rate_of(profile)
            with_profile = run(name, args.out, args, ["--sensors", profile], profile)
            # the same rate and gains (the profile's delays lower them), the plant's exact state
            gains = with_profile["settings"]
            same = ["--kp", *map(str, gains["kp"]), "--kd", *map(str, gains["kd"])]
            ideal = run(name, args.out, args, ["--sensors", "ideal", "--rate", f"{rate:g}", *same], f"ideal_{profile}")
            sensed[(name, profile)] = (with_profile, ideal)
        sensed_tables(sensed)
        return
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
