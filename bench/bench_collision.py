"""Benchmark of the collision reactions: an arm runs into a table, with and without each reaction.

Usage: ``.venv/bin/python bench/bench_collision.py [--robots ur5,panda] [--sensors ideal,profile]
[--out DIR] [--free-minutes 10] [--free-duration 30] [--callback-messages 3000]``

Per robot (UR5, Panda of example-robot-data; the closed-loop benchmark's deviating plants and start poses,
``bench_closed_loop.py``) and sensor set (ideal, or the robot's profile: ``ur_e_series`` for the UR5,
``franka`` for the Panda), one ``robot-dynamics collision`` run: the simulator, the contact node and the
feed-forward node over DDS in lock-step (each step waits for the contact node too) at 1 kHz or the profile's
rate (``ur_e_series``: 500 Hz; its delays told to the feed-forward node); the model identified on an
excitation recording, the thresholds from ``contact --calibrate`` on a free-motion recording; then
``--free-duration`` s of free motion with the ``stop`` reaction armed, and the tool driven down at 0.4 m/s
peak into a table 25 cm below it, rigid and compliant (10 000 N/m, the default moving mass 0.1 kg), once per
reaction (none, stop, float, reflex). Prints the table:
the tool's speed at the first contact (ground truth: the simulator's obstacle force), the detection and
the reaction's first command after the first contact, the impact's force (its first 10 ms, set by the
arm's momentum before any command acts), the peak force after it and the force 0.5 s after the
contact, each against ``none``; and the targets (first command <= 15 ms; peak after the impact >= 50 %
and late force >= 90 % lower for stop and float).

**Free motion, 10 minutes** (``--free-minutes``): the same deviated plant (with the sensor profile) under
the identified model's PD + feed-forward, ``run_plant`` (no ROS, the nodes' law, deterministic) over way
points about the start pose; the recording through ``robot-dynamics contact --thresholds`` with the
run's calibrated thresholds: every raised collision would have triggered a reaction.

**Node compute with a reaction armed**: ``bench_ros_callback.py --control-law pd_feedforward`` with
``--reaction none`` and ``--reaction stop`` (no event arrives): the ratio of the callback's compute.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_closed_loop import ROBOTS, ROBOTS_DIR

PROFILES = {"ur5": "ur_e_series", "panda": "franka"}
DROP = 0.25  # m, the table's top below the tool at the start (the wrist's geometry reaches lower)
STIFFNESS = 10000.0  # N/m, the compliant table
REACTIONS = "none,stop,float,reflex"


def obstacle_files(name: str, out: Path) -> list[Path]:
    """A rigid and a compliant table ``DROP`` below the tool at the start pose (0.6 x 0.6 x 0.04 m)."""
    import warnings

    import robot_dynamics as rd

    spec = ROBOTS[name]
    chain = spec["chain"]
    tip = chain[chain.index("--tip-link") + 1] if "--tip-link" in chain else None
    locks = {chain[k + 1]: 0.0 for k, a in enumerate(chain) if a == "--lock-joint"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = rd.load_robot(str(ROBOTS_DIR / spec["urdf"]), tip_link=tip, locked_joints=locks)
    p = rd.forward_kinematics(model, np.array(spec["start"]))[:3, 3]
    table = {"name": "table", "shape": "box", "position": [round(float(p[0]), 4), round(float(p[1]), 4)]}
    table["position"].append(round(float(p[2]) - DROP - 0.02, 4))
    table["size"] = [0.6, 0.6, 0.04]
    files = []
    for stem, extra in (("rigid_table", {}), ("soft_table", {"stiffness": STIFFNESS})):
        path = out / f"{name}_{stem}.yaml"
        path.write_text(yaml.safe_dump({"obstacles": [table | extra]}, default_flow_style=None))
        files.append(path)
    return files


def collision_run(name: str, sensors: str, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    spec = ROBOTS[name]
    plant = out / f"{name}_plant.yaml"
    plant.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in spec["plant"].items()))
    command = [sys.executable, "-m", "robot_dynamics.cli", "collision", str(ROBOTS_DIR / spec["urdf"]), *spec["chain"]]
    command += ["--plant", str(plant), "--obstacles", *map(str, obstacle_files(name, out))]
    command += ["--start", *map(str, spec["start"]), "--direction", "0", "0", "-1", "--speed", "0.4"]
    command += ["--reactions", REACTIONS, "--free-duration", f"{args.free_duration:g}", "--json"]
    command += ["--out", str(out / f"{name}_{sensors}")]
    if sensors != "ideal":
        command += ["--sensor-profile", PROFILES[name]]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    (out / f"{name}_{sensors}.log").write_text(done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{name} ({sensors}): robot-dynamics collision failed:\n{done.stderr[-3000:]}")
    summary: dict[str, Any] = json.loads(done.stdout)
    summary["wall_s"] = time.monotonic() - started
    return summary


def free_minutes(name: str, sensors: str, run_dir: Path, minutes: float, seed: int) -> dict[str, Any]:
    """``minutes`` of free motion without ROS under the identified model, through the calibrated detector."""
    import warnings

    import robot_dynamics as rd
    from robot_dynamics.control import ControlLaw, ControlSettings
    from robot_dynamics.experiment.motion import planned_motion
    from robot_dynamics.plant import PlantOptions, make_plant
    from robot_dynamics.plant.run import run_plant, write_run_bag
    from robot_dynamics.reaction import ReactingController, ReactionSettings
    from robot_dynamics.user_input import as_gains

    spec = ROBOTS[name]
    report = json.loads((run_dir / "report.json").read_text())
    chain = spec["chain"]
    tip = chain[chain.index("--tip-link") + 1] if "--tip-link" in chain else None
    locks = {chain[k + 1]: 0.0 for k, a in enumerate(chain) if a == "--lock-joint"}
    robot = str(ROBOTS_DIR / spec["urdf"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stock = rd.load_robot(robot, tip_link=tip, locked_joints=locks)
        identified = rd.load_robot(str(run_dir / "identified.yaml"))
    q0 = np.array(spec["start"])
    options = PlantOptions(
        engine="mujoco",
        deviations=str(run_dir.parent / f"{name}_plant.yaml"),
        locked_joints=locks,
        sensor_profile="" if sensors == "ideal" else PROFILES[name],
    )
    plant = make_plant(options, stock, 0.001, robot, None, tip)
    plant.reset(q0, np.zeros(stock.dof))
    motion = planned_motion(stock, q0, duration=60.0 * minutes, reach=0.4, seed=seed)
    n = stock.dof
    s = ControlSettings(
        law="pd_feedforward", kp=as_gains(report["kp"], n), kd=as_gains(report["kd"], n), limit_efforts=True
    )
    controller = ReactingController(ControlLaw(identified), s, ReactionSettings("stop"))
    t0 = time.monotonic()
    run = run_plant(plant, controller, motion.duration + 0.5, trajectory=motion.sampler())
    simulated = time.monotonic() - t0
    bag = write_run_bag(run_dir / "bags" / "free_minutes", run, names=stock.joint_names, overwrite=True)
    params = yaml.safe_load((run_dir / "contact.yaml").read_text())
    values = next(iter(params.values()))["ros__parameters"]
    command = [
        sys.executable,
        "-m",
        "robot_dynamics.cli",
        "contact",
        str(bag),
        "--robot",
        str(run_dir / "identified.yaml"),
    ]
    command += ["--gain", *map(str, values["observer_gain"]), "--thresholds", *map(str, values["thresholds"])]
    if "reversal_thresholds" in values:
        command += ["--reversal-thresholds", *map(str, values["reversal_thresholds"])]
        command += ["--reversal-velocity", *map(str, values["reversal_velocity"])]
    command += ["--clear-ratio", str(values["clear_ratio"]), "--effort-timing", values["effort_timing"], "--json", "-"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"contact on the free run failed: {done.stderr[-2000:]}")
    analysis = json.loads(done.stdout)
    raised = sum(1 for e in analysis.get("events", []) if e.get("raised"))
    return {
        "minutes": motion.duration / 60.0,
        "samples": int(run.t.size),
        "collisions_raised": raised,
        "max_speed_rad_s": float(np.abs(run.qd).max()),
        "simulated_in_s": simulated,
    }


def callback_ratio(messages: int) -> dict[str, float]:
    """The feed-forward callback's compute with ``reaction: stop`` armed over ``none`` (mean and p99)."""
    script = Path(__file__).resolve().parent / "bench_ros_callback.py"
    out: dict[str, dict[str, float]] = {}
    for reaction in ("none", "stop", "none", "stop"):  # interleaved twice: the load drifts
        done = subprocess.run(
            [
                sys.executable,
                str(script),
                "--control-law",
                "pd_feedforward",
                "--messages",
                str(messages),
                "--reaction",
                reaction,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        # the node's own diagnostics without a subscriber: compute mean and p99 (callback entry to the torques)
        row = re.search(r"\| no subscriber \| ([\d.]+) \| ([\d.]+) \|", done.stdout)
        assert row is not None, done.stdout
        figures = out.setdefault(reaction, {"mean": 0.0, "p99": 0.0})
        figures["mean"] += float(row.group(1)) / 2.0
        figures["p99"] += float(row.group(2)) / 2.0
    return {
        "none_mean_us": out["none"]["mean"],
        "stop_mean_us": out["stop"]["mean"],
        "mean_ratio": out["stop"]["mean"] / out["none"]["mean"],
        "p99_ratio": out["stop"]["p99"] / out["none"]["p99"],
    }


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "| robot | sensors | obstacle | reaction | tool speed | events before contact | detection | first command | "
        "impact (10 ms) | "
        "peak after | 0.5 s later | peak vs none | later vs none | targets |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for key, summary in results.items():
        name, sensors = key.split("/")
        for obstacle, case in summary["cases"].items():
            for row in case["rows"]:
                red = case["reductions"].get(row["reaction"], {})
                ok = []
                if row["reaction"] != "none":
                    ok.append(row["first_command"] is not None and row["first_command"] <= 0.015)
                if row["reaction"] in ("stop", "float"):
                    ok += [(red.get("peak") or 0.0) >= 0.5, (red.get("late") or 0.0) >= 0.9]

                def ms(v: float | None) -> str:
                    return "-" if v is None else f"{v * 1e3:.0f} ms"

                def pct(v: float | None) -> str:
                    return "-" if v is None else f"{-100 * v:+.0f} %"

                speed = "-" if row["tool_speed"] is None else f"{row['tool_speed']:.2f} m/s"
                late = "-" if row["late_force"] is None else f"{row['late_force']:.1f} N"
                lines.append(
                    f"| {name} | {sensors} | {obstacle} | {row['reaction']} | {speed} | {row.get('false_events', '-')} "
                    f"| {ms(row['detection'])} | "
                    f"{ms(row['first_command'])} | {row['impact_force']:.0f} N | {row['peak_force']:.0f} N | {late} | "
                    f"{pct(red.get('peak'))} | "
                    f"{pct(red.get('late'))} | {'-' if not ok else ('met' if all(ok) else 'MISSED')} |"
                )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", default="ur5,panda")
    parser.add_argument("--sensors", default="ideal,profile", help="ideal and/or profile (the robot's)")
    parser.add_argument("--out", default="/tmp/bench_collision")
    parser.add_argument("--free-duration", type=float, default=30.0, help="s of free motion through the nodes")
    parser.add_argument("--free-minutes", type=float, default=10.0, help="minutes of free motion without ROS")
    parser.add_argument("--callback-messages", type=int, default=3000, help="0 = skip the callback ratio")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    free: dict[str, dict[str, Any]] = {}
    for name in args.robots.split(","):
        for sensors in args.sensors.split(","):
            key = f"{name}/{sensors}"
            print(f"{key}: robot-dynamics collision ...", flush=True)
            results[key] = collision_run(name, sensors, out, args)
            if args.free_minutes > 0:
                print(f"{key}: {args.free_minutes:g} min of free motion (no ROS) ...", flush=True)
                free[key] = free_minutes(name, sensors, out / f"{name}_{sensors}", args.free_minutes, seed=11)
    (out / "bench.json").write_text(json.dumps({"results": results, "free": free}, indent=2) + "\n")
    print("\nCollision into a table 25 cm below the tool, 0.4 m/s peak, lock-step 1 kHz through the nodes:\n")
    print("\n".join(table(results)))
    print("\nFree motion, reaction stop armed (through the nodes; and without ROS, the calibrated detector):\n")
    print("| robot | sensors | through the nodes | collisions, reactions | without ROS | collisions raised |")
    print("|---|---|---:|---:|---:|---:|")
    for key, summary in results.items():
        name, sensors = key.split("/")
        f, offline = summary.get("free") or {}, free.get(key, {})
        nodes = f"{f.get('duration_s', 0):.0f} s" if f else "-"
        counts = f"{f.get('collisions_raised', '-')}, {f.get('reactions', '-')}" if f else "-"
        minutes = f"{offline['minutes']:.1f} min" if offline else "-"
        print(f"| {name} | {sensors} | {nodes} | {counts} | {minutes} | {offline.get('collisions_raised', '-')} |")
    if args.callback_messages > 0:
        ratio = callback_ratio(args.callback_messages)
        (out / "callback.json").write_text(json.dumps(ratio, indent=2) + "\n")
        print(
            "\nfeed-forward callback compute (pd_feedforward, puma560, no subscriber): "
            f"none {ratio['none_mean_us']:.1f} µs, stop armed {ratio['stop_mean_us']:.1f} µs: "
            f"ratio {ratio['mean_ratio']:.3f} (p99 {ratio['p99_ratio']:.3f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
