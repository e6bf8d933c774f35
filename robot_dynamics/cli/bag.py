"""``robot-dynamics evaluate | replay | demo | make-sample-bag``: the rosbag commands.

ROS (rclpy) is imported only by ``replay`` and ``demo``, when they run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from robot_dynamics.cli._options import (
    add_joint_states_option,
    add_progress_option,
    add_robot_options,
    joint_map_from_args,
    load_robot_from_args,
)
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.models.robots import DEFAULT_ROBOT

DEFAULT_TRAJECTORY = "joint_trajectory"
#: Topics the feed-forward node publishes (recorded by default by ``replay``).
FEEDFORWARD_TOPICS = {
    "/feedforward/efforts": "sensor_msgs/msg/JointState",
    "/feedforward/commands": "std_msgs/msg/Float64MultiArray",
}


def register(sub: Any) -> None:
    _register_evaluate(sub)
    _register_replay(sub)
    _register_demo(sub)
    _register_sample(sub)


# ------------------------------------------------------------------------------------------------
# evaluate
# ------------------------------------------------------------------------------------------------
def _add_model_options(p: argparse.ArgumentParser) -> None:
    add_robot_options(p, positional=False, default=DEFAULT_ROBOT)
    add_joint_states_option(p)
    p.add_argument(
        "--trajectory",
        default=DEFAULT_TRAJECTORY,
        metavar="TOPIC",
        help="desired trajectory topic, used when present in the bag ('' = ignore; default: %(default)s)",
    )
    p.add_argument(
        "--friction-model",
        choices=("smooth", "exact"),
        default="smooth",
        help="friction direction function: smooth (chatter-free, as the nodes) or exact sign(qd) "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--friction-velocity",
        choices=("desired", "measured"),
        default="desired",
        help="velocity of the friction term of the node-equivalent feed-forward while tracking "
        "(the node's parameter; default: %(default)s)",
    )


def _register_evaluate(sub: Any) -> None:
    from robot_dynamics.bag.differentiate import DEFAULT_POLYORDER, DEFAULT_WINDOW_S

    p = sub.add_parser(
        "evaluate",
        help="model torques for every joint state of a bag, errors vs measured efforts",
        description="Computes, for every sensor_msgs/JointState of BAG, the inverse dynamics at the measured "
        "motion (with and without friction; accelerations differentiated with a Savitzky-Golay filter on "
        "the real stamps, or taken from the bag's trajectory) and the torques the feed-forward node would "
        "publish; prints per-joint RMS/max errors against the measured efforts.",
    )
    p.add_argument("bag", metavar="BAG", help="rosbag2 directory (or .mcap/.db3 file)")
    _add_model_options(p)
    p.add_argument(
        "--accel",
        choices=("velocity", "position", "trajectory"),
        default="velocity",
        help="acceleration source: differentiate measured velocity once, position twice, or the desired "
        "trajectory (default: %(default)s)",
    )
    p.add_argument("--window", type=float, default=DEFAULT_WINDOW_S, metavar="S", help="filter window, s")
    p.add_argument("--polyorder", type=int, default=DEFAULT_POLYORDER, help="filter polynomial degree")
    p.add_argument("--out", metavar="OUTBAG", help="write model torques to this bag (same timestamps)")
    p.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap", help="output bag storage")
    p.add_argument("--force", action="store_true", help="replace existing output bags")
    p.add_argument("--csv", metavar="PATH", help="per-joint summary as CSV ('-' = stdout)")
    p.add_argument("--json", metavar="PATH", help="summary as JSON ('-' = stdout)")
    p.add_argument("--plot", metavar="PNG", help="measured vs model torques per joint")
    add_progress_option(p)
    p.set_defaults(func=run_evaluate)


def read_with_progress(args: argparse.Namespace, model: Any, require_trajectory: bool = False) -> Any:
    from robot_dynamics.bag.evaluate import read_inputs
    from robot_dynamics.bag.progress import Progress
    from robot_dynamics.bag.reader import bag_summary, topic_name

    summary = bag_summary(args.bag)
    wanted = {topic_name(args.joint_states)} | ({topic_name(args.trajectory)} if args.trajectory else set())
    total = sum(t.count for name, t in summary.topics.items() if name in wanted)
    with Progress(total, f"reading {Path(args.bag).name}", enabled=getattr(args, "progress", None)) as bar:
        return read_inputs(
            args.bag,
            model,
            joint_states=args.joint_states,
            trajectory=args.trajectory or None,
            require_trajectory=require_trajectory,
            progress=bar.update,
            joint_map=joint_map_from_args(args),
        )


def write_text(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
    else:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)


def run_evaluate(args: argparse.Namespace) -> int:
    from robot_dynamics.bag import evaluate as ev_mod
    from robot_dynamics.bag.report import format_table, write_csv, write_csv_stream, write_output_bag, write_plot

    model = load_robot_from_args(args)
    inputs = read_with_progress(args, model, require_trajectory=args.accel == "trajectory")
    ev = ev_mod.evaluate(
        model,
        inputs.series,
        inputs.trajectories,
        accel_source=args.accel,
        window_s=args.window,
        polyorder=args.polyorder,
        smooth=args.friction_model == "smooth",
        friction_velocity=args.friction_velocity,
        bag=str(args.bag),
    )
    joint_map = joint_map_from_args(args)
    if joint_map:  # the summary says how the bag's names were read
        ev = replace(ev, settings={**ev.settings, "joint_map": joint_map})
    to_stdout = args.csv == "-" or args.json == "-"
    log = sys.stderr if to_stdout else sys.stdout
    print(_describe(ev), file=log)
    print(format_table(ev), file=log)
    if args.out:
        write_output_bag(args.out, ev, inputs, storage=args.storage, overwrite=args.force)
        print(f"wrote {args.out}", file=log)
    if args.csv:
        if args.csv == "-":
            import io as stdio

            buffer = stdio.StringIO()
            write_csv_stream(buffer, ev)
            write_text("-", buffer.getvalue())
        else:
            write_csv(args.csv, ev)
            print(f"wrote {args.csv}", file=log)
    if args.json:
        write_text(args.json, json.dumps(ev.summary(), indent=2) + "\n")
        if args.json != "-":
            print(f"wrote {args.json}", file=log)
    if args.plot:
        write_plot(args.plot, ev)
        print(f"wrote {args.plot}", file=log)
    return 0


def _describe(ev: Any) -> str:
    rate = (ev.count - 1) / ev.t[-1] if ev.count > 1 and ev.t[-1] > 0 else 0.0
    if ev.filter is not None:
        accel = (
            f"qdd: Savitzky-Golay d/dt of the measured {ev.accel_source} "
            f"({ev.filter.window} samples, degree {ev.filter.polyorder})"
        )
    else:
        accel = "qdd: desired trajectory"
    return (
        f"{ev.robot}: {ev.count} joint states, {ev.t[-1]:.2f} s (~{rate:.0f} Hz); {accel}; "
        f"friction model: {'smooth' if ev.smooth else 'exact'}; errors = model - measured [N·m]"
    )


# ------------------------------------------------------------------------------------------------
# replay
# ------------------------------------------------------------------------------------------------
def _register_replay(sub: Any) -> None:
    p = sub.add_parser(
        "replay",
        help="play a bag to live nodes with its timing and record their outputs",
        description="Publishes BAG's messages with their original timing (scaled by --rate) and records the "
        "nodes' output topics to a new bag: ros2 bag play + ros2 bag record in one command. Start the nodes "
        "first (e.g. robot_dynamics_bringup). With --check, compares the recorded feed-forward torques with "
        "the offline computation for the same messages.",
    )
    p.add_argument("bag", metavar="BAG")
    p.add_argument("--topics", nargs="+", metavar="TOPIC", help="topics to play (default: all)")
    p.add_argument(
        "--record",
        nargs="+",
        metavar="TOPIC[:TYPE]",
        help="topics to record (default: the feed-forward node's outputs); TYPE as pkg/msg/Name, needed for "
        "topics other than " + ", ".join(FEEDFORWARD_TOPICS),
    )
    p.add_argument("--out", metavar="OUTBAG", help="bag for the recorded topics")
    p.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap")
    p.add_argument("--force", action="store_true", help="replace an existing output bag")
    p.add_argument("--rate", type=float, default=1.0, help="playback speed factor (default: %(default)s)")
    p.add_argument("--clock", action="store_true", help="publish /clock at bag time (nodes on use_sim_time)")
    p.add_argument("--wait", type=float, default=30.0, metavar="S", help="max wait for the nodes (default 30 s)")
    p.add_argument(
        "--wait-for-node",
        action="append",
        metavar="NODE",
        help="also wait until the robot_dynamics node NODE (e.g. /feedforward_node) reports on /diagnostics a "
        "subscriber on each of its outputs: the recorder is seen from the publishing side too, so its "
        "first outputs are not lost (repeatable)",
    )
    p.add_argument("--check", action="store_true", help="compare recorded feed-forward torques with the offline ones")
    p.add_argument("--tolerance", type=float, default=1e-9, help="--check tolerance, N·m (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print the counts (and the --check result) as JSON")
    _add_model_options(p)
    p.set_defaults(func=run_replay)


def parse_record(items: list[str] | None) -> dict[str, str]:
    from robot_dynamics.bag.reader import topic_name

    if not items:
        return dict(FEEDFORWARD_TOPICS)
    out = {}
    for item in items:
        topic, _, msgtype = item.partition(":")
        name = topic_name(topic)
        if not msgtype:
            if name not in FEEDFORWARD_TOPICS:
                raise RobotDynamicsError(
                    f"--record {item}: give the message type as {topic}:pkg/msg/Name "
                    f"(known without a type: {', '.join(FEEDFORWARD_TOPICS)})"
                )
            msgtype = FEEDFORWARD_TOPICS[name]
        if msgtype.count("/") != 2:
            raise RobotDynamicsError(f"--record {item}: message type must look like pkg/msg/Name, got {msgtype!r}")
        out[name] = msgtype
    return out


def _positive(value: float, option: str, *, zero: bool = False) -> None:
    if not ((value >= 0 if zero else value > 0) and math.isfinite(value)):
        raise RobotDynamicsError(f"{option} must be {'non-negative' if zero else 'positive'} and finite, got {value}")


def run_replay(args: argparse.Namespace) -> int:
    from robot_dynamics.bag.decode import decode_joint_states
    from robot_dynamics.bag.progress import Progress
    from robot_dynamics.bag.reader import bag_summary, topic_name
    from robot_dynamics.ros.replay import all_ready, diagnostics_ready, replay

    _positive(args.rate, "--rate")
    _positive(args.wait, "--wait", zero=True)
    _positive(args.tolerance, "--tolerance", zero=True)
    record = parse_record(args.record)
    nodes = args.wait_for_node or []
    ready = all_ready([diagnostics_ready(f"robot_dynamics: {topic_name(n)}") for n in nodes]) if nodes else None
    if args.check and "/feedforward/efforts" not in record:
        raise RobotDynamicsError("--check needs /feedforward/efforts to be recorded")
    # the offline side of --check first: bad robot options or bag contents stop before the replay
    offline = _offline_feedforward(args) if args.check else None

    summary = bag_summary(args.bag)
    played = [topic_name(t) for t in args.topics] if args.topics else list(summary.topics)
    js = topic_name(args.joint_states)
    n_js = summary.topics[js].count if js in played and js in summary.topics else 0
    expect = {t: n_js for t in record if t in FEEDFORWARD_TOPICS and n_js}
    total = sum(summary.topics[t].count for t in played if t in summary.topics)
    with Progress(total, "replaying", min_total=2000) as bar:
        result = replay(
            args.bag,
            topics=args.topics,
            record=record,
            out=args.out,
            storage=args.storage,
            overwrite=args.force,
            rate=args.rate,
            clock=args.clock,
            expect=expect,
            wait_timeout=args.wait,
            progress=bar.update,
            ready=ready,
            pace=(js, next(iter(expect))) if expect else None,
        )
    lost = {t: n for t, n in result.lost.items() if n}
    status = 1 if lost else 0
    cmp = None
    if offline is not None:
        inputs, ff = offline
        from robot_dynamics.bag.report import compare_feedforward

        # the node publishes the topic's joint names (the bag's, with a joint map)
        recorded = decode_joint_states(result.recordings["/feedforward/efforts"], inputs.names)
        cmp = compare_feedforward(inputs.series, ff, replace(recorded, names=inputs.series.names))
        status |= 0 if cmp.ok(args.tolerance) else 1
    if args.json:
        payload: dict[str, Any] = {
            "published": result.published,
            "recorded": result.recorded,
            "expected": result.expected,
            "lost": result.lost,
            "out": str(result.out) if result.out is not None else None,
            "wall_time_s": result.wall_time_s,
            "bag_time_s": result.bag_time_s,
        }
        if cmp is not None:
            payload["check"] = {
                "ok": cmp.ok(args.tolerance),
                "tolerance": args.tolerance,
                "expected": cmp.expected,
                "matched": cmp.matched,
                "lost": cmp.lost,
                "unmatched": cmp.unmatched,
                "duplicates": cmp.duplicates,
                "max_abs_diff": cmp.max_abs_diff,
            }
        print(json.dumps(payload))
    else:
        print(result.describe())
        if cmp is not None:
            print(cmp.describe(args.tolerance))
    if lost:
        print(f"lost messages: {lost}", file=sys.stderr)
    return status


def _offline_feedforward(args: argparse.Namespace) -> tuple[Any, Any]:
    """The bag's inputs and the feed-forward torques the node should publish for them."""
    from robot_dynamics.bag.evaluate import feedforward_torques

    model = load_robot_from_args(args)
    inputs = read_with_progress(args, model)
    ff = feedforward_torques(
        model,
        inputs.series,
        inputs.trajectories,
        smooth=args.friction_model == "smooth",
        friction_velocity=args.friction_velocity,
    )
    return inputs, ff


# ------------------------------------------------------------------------------------------------
# demo and sample data
# ------------------------------------------------------------------------------------------------
def _register_demo(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="the full demo: evaluate the sample bag, replay it through live nodes, summary and plot",
        description="Evaluates the sample bag offline, starts the robot_dynamics nodes (a robot_dynamics_bringup "
        "process), replays the bag through them with /clock, records their outputs, checks them against the "
        "offline feed-forward torques, prints a per-joint summary table and writes a plot. Outputs go to --out "
        "(replaced on every run).",
    )
    p.add_argument("--bag", help="input bag (default: the repository's data/puma560_sample)")
    add_robot_options(p, positional=False, default=DEFAULT_ROBOT)
    p.add_argument("--out", default="out/demo", help="output directory (default: %(default)s)")
    p.add_argument("--rate", type=float, default=1.0, help="replay speed factor (default: %(default)s)")
    p.add_argument("--domain-id", type=int, help="ROS_DOMAIN_ID (default: a free one, see docs/rosbag.md)")
    p.set_defaults(func=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    from robot_dynamics.ros.demo import robot_parameters, run
    from robot_dynamics.user_input import parse_locked_joints

    _positive(args.rate, "--rate")
    model = load_robot_from_args(args)
    joint_map = joint_map_from_args(args)
    chain = robot_parameters(args.base_link, args.tip_link, parse_locked_joints(args.lock_joint), joint_map)
    return run(
        bag=Path(args.bag) if args.bag else None,
        robot=args.robot,
        out=Path(args.out),
        rate=args.rate,
        domain_id=args.domain_id,
        model=model,
        chain=chain,
        joint_map=joint_map,
    )


def _register_sample(sub: Any) -> None:
    from robot_dynamics.bag.sample import DEFAULT_PATH, SampleSettings

    d = SampleSettings()
    p = sub.add_parser(
        "make-sample-bag",
        help="(re)generate the sample bag by simulation (deterministic)",
        description="Simulates the default robot on a sum-of-sines trajectory (computed torque + PD, stick-slip "
        "friction, seeded sensor noise) and writes joint_states and joint_trajectory to a bag. The same "
        "options give the same bag on one machine, byte for byte; across CPUs and BLAS builds the same data "
        "to well within its sensor noise (last-bit differences change the adaptive integrator's steps).",
    )
    p.add_argument("out", nargs="?", default=str(DEFAULT_PATH), help="output bag (default: %(default)s)")
    add_robot_options(p, positional=False, default=d.robot)
    p.add_argument("--duration", type=float, default=d.duration, help="s (default: %(default)s)")
    p.add_argument("--rate", type=float, default=d.rate, help="joint_states rate, Hz (default: %(default)s)")
    p.add_argument("--seed", type=int, default=d.seed, help="noise seed (default: %(default)s)")
    p.add_argument("--storage", choices=("mcap", "sqlite3"), default=d.storage)
    p.add_argument("--force", action="store_true", help="replace an existing bag")
    p.add_argument("--json", action="store_true", help="print the bag's summary as JSON")
    p.set_defaults(func=run_sample)


def run_sample(args: argparse.Namespace) -> int:
    from robot_dynamics.bag.reader import bag_summary
    from robot_dynamics.bag.sample import SampleSettings, write_sample_bag

    if not 1.5 < args.duration < math.inf:
        raise RobotDynamicsError(f"--duration must be more than 1.5 s (and finite), got {args.duration}")
    if not 0 < args.rate < math.inf:
        raise RobotDynamicsError(f"--rate must be positive and finite, got {args.rate}")
    model = load_robot_from_args(args)
    settings = SampleSettings(
        robot=args.robot, duration=args.duration, rate=args.rate, seed=args.seed, storage=args.storage
    )
    write_sample_bag(args.out, settings, overwrite=args.force, model=model, joint_map=joint_map_from_args(args))
    summary = bag_summary(args.out)
    if args.json:
        topics = [{"topic": t.topic, "type": t.msgtype, "messages": t.count} for t in summary.topics.values()]
        payload = {
            "bag": str(summary.path),
            "storage": summary.storage,
            "messages": summary.message_count,
            "duration_s": summary.duration_ns * 1e-9,
            "topics": topics,
        }
        print(json.dumps(payload))
    else:
        print(summary.describe())
    return 0
