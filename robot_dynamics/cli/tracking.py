"""``robot-dynamics tracking``: how well a recorded arm tracked its trajectories (no ROS needed)."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path
from typing import Any

from robot_dynamics.cli._options import (
    add_joint_states_option,
    add_progress_option,
    add_robot_options,
    joint_map_from_args,
    load_robot_from_args,
)
from robot_dynamics.cli.bag import DEFAULT_TRAJECTORY, read_with_progress, write_text
from robot_dynamics.models.robots import DEFAULT_ROBOT


def register(sub: Any) -> None:
    p = sub.add_parser(
        "tracking",
        help="position and velocity tracking errors of a bag's joint states against its trajectories",
        description="For every joint state of BAG during which one of its JointTrajectory messages is active (the "
        "feed-forward node's activation rules), the error desired - measured of position and velocity; per joint "
        "RMS and max, per trajectory and overall. Joint states whose stamps are on another clock than the bag's "
        "(a driver's clock, simulated time) are matched to the trajectories by their receive times.",
    )
    p.add_argument("bag", metavar="BAG", help="rosbag2 directory (or .mcap/.db3 file)")
    add_robot_options(p, positional=False, default=DEFAULT_ROBOT)
    add_joint_states_option(p)
    p.add_argument(
        "--trajectory",
        default=DEFAULT_TRAJECTORY,
        metavar="TOPIC",
        help="desired trajectory topic (default: %(default)s)",
    )
    p.add_argument("--json", metavar="PATH", help="summary as JSON ('-' = stdout)")
    p.add_argument("--csv", metavar="PATH", help="per segment and joint errors as CSV ('-' = stdout)")
    p.add_argument("--plot", metavar="PNG", help="position error per joint over time")
    add_progress_option(p)
    p.set_defaults(func=run_tracking)


def run_tracking(args: argparse.Namespace) -> int:
    from robot_dynamics.bag.tracking import describe, format_table, tracking, write_csv_stream, write_plot
    from robot_dynamics.errors import RobotDynamicsError

    if not args.trajectory:
        raise RobotDynamicsError("--trajectory: a trajectory topic is needed to measure tracking")
    if args.json == "-" and args.csv == "-":
        raise RobotDynamicsError("--json - and --csv -: only one of them can go to stdout")
    model = load_robot_from_args(args)
    inputs = read_with_progress(args, model, require_trajectory=True)
    report = tracking(model, inputs.series, inputs.trajectories, bag=str(args.bag))
    joint_map = joint_map_from_args(args)
    if joint_map:
        report.settings["joint_map"] = joint_map
    log = sys.stderr if "-" in (args.csv, args.json) else sys.stdout
    print(describe(report), file=log)
    print(format_table(report), file=log)
    if args.csv:
        buffer = io.StringIO()
        write_csv_stream(buffer, report)
        write_text(args.csv, buffer.getvalue())
        if args.csv != "-":
            print(f"wrote {args.csv}", file=log)
    if args.json:
        write_text(args.json, json.dumps(report.summary(), indent=2) + "\n")
        if args.json != "-":
            print(f"wrote {args.json}", file=log)
    if args.plot:
        write_plot(Path(args.plot), report)
        print(f"wrote {args.plot}", file=log)
    return 0
