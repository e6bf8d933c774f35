"""``robot-dynamics excitation``: design an exciting trajectory for identification and write it.

  robot-dynamics excitation ROBOT --duration S --harmonics K --out TRAJ [--out TRAJ ...]
      [--base-frequency HZ] [--rate HZ] [--seed N] [--starts N] [--iterations N] [--margin F]
      [--velocity-limit V] [--acceleration-limit A] [--position-range R] [--ramp S]
      [--storage mcap|sqlite3] [--compare TRAJ_OR_BAG ...] [--joint-states] [--force] [--json]

The design is :func:`robot_dynamics.identification.excitation.design_excitation`; TRAJ ending in
``.yaml``/``.yml`` is the JointTrajectory message as YAML, anything else a rosbag2 bag with the
message on ``/joint_trajectory`` (:mod:`robot_dynamics.identification.excitation_files`). Every
output is written only after the design succeeded; bad input exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from ..errors import RobotDynamicsError
from ._options import add_robot_options, load_robot_from_args


def register(sub: Any) -> None:
    p = sub.add_parser(
        "excitation",
        help="design an exciting trajectory (finite Fourier series) for parameter identification",
        description="Designs per joint a periodic finite Fourier series (Swevers et al. 1997) whose base "
        "regressor has the smallest condition number it finds (SLSQP from --starts random starts), within the "
        "robot's position limits and velocity/acceleration limits (defaults where the robot file has none, "
        "listed in the output). Writes a trajectory_msgs/JointTrajectory as YAML or as a bag on "
        "/joint_trajectory, the feed-forward node's topic (play it with ros2 bag play or robot-dynamics replay).",
    )
    add_robot_options(p, positional=True, default=None, joint_map=False)
    p.add_argument("--duration", type=float, required=True, metavar="S", help="seconds (whole periods)")
    p.add_argument("--harmonics", type=int, required=True, metavar="K", help="harmonics per joint (>= 1)")
    p.add_argument(
        "--out",
        action="append",
        required=True,
        metavar="TRAJ",
        help="output: .yaml/.yml = the message as YAML, otherwise a rosbag2 bag directory (repeatable)",
    )
    p.add_argument("--base-frequency", type=float, metavar="HZ", help="default: 1 / duration (one period)")
    p.add_argument("--rate", type=float, default=100.0, metavar="HZ", help="trajectory points per second (%(default)s)")
    p.add_argument("--seed", type=int, default=0, help="random starts' seed (%(default)s)")
    p.add_argument("--starts", type=int, default=3, metavar="N", help="random starts (%(default)s)")
    p.add_argument("--iterations", type=int, default=150, metavar="N", help="SLSQP iterations per start (%(default)s)")
    p.add_argument("--margin", type=float, default=0.05, metavar="F", help="fraction of each limit kept free")
    p.add_argument(
        "--velocity-limit", type=float, default=1.0, metavar="V", help="where the robot has none (%(default)s)"
    )
    p.add_argument(
        "--acceleration-limit", type=float, default=5.0, metavar="A", help="robot files have none (%(default)s)"
    )
    p.add_argument("--position-range", type=float, metavar="R", help="+-R for joints without position limits")
    p.add_argument(
        "--ramp",
        type=float,
        default=0.0,
        metavar="S",
        help="start and end at rest with S-second ramps (0: none, the robot must be at the first point)",
    )
    p.add_argument("--storage", choices=("mcap", "sqlite3"), help="bag storage (default: by suffix, else mcap)")
    p.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="TRAJ",
        help="also report the condition number of this trajectory (YAML or a bag's /joint_trajectory)",
    )
    p.add_argument(
        "--joint-states",
        action="store_true",
        help="bags: also write /joint_states of the robot following the trajectory exactly (effort = the model's "
        "inverse dynamics), trajectory stamped to start with them: a dry run for replay --clock, evaluate, identify",
    )
    p.add_argument("--force", action="store_true", help="replace existing outputs")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run_excitation)


def _finite(value: Any) -> Any:
    """JSON-safe: a non-finite number (an unexcited trajectory's condition number) becomes null."""
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _table(summary: dict[str, Any]) -> str:
    lines = [
        f"robot {summary['robot']}: {summary['harmonics']} harmonics, {summary['base_frequency_hz']:g} Hz, "
        f"{summary['duration_s']:g} s (+ ramps {summary['ramp_s']:g} s), {summary['points']} points, "
        f"{summary['base_parameters']} base parameters",
        f"condition number {summary['condition_number']:.4g}   random series of the same size "
        f"{summary['random_condition_number']:.4g}   (design {summary['design_seconds']:.1f} s)",
    ]
    for path, value in summary.get("compare", {}).items():
        lines.append(f"condition number of {path}: {value:.4g}")
    lines.append("smallest margin to the limits (fraction):")
    lines.append(f"  {'joint':<16}{'position':>10}{'velocity':>10}{'accel':>10}")
    m = summary["margins"]
    for name in summary["joints"]:
        lines.append(
            f"  {name:<16}{m['position'][name]:>10.3f}{m['velocity'][name]:>10.3f}{m['acceleration'][name]:>10.3f}"
        )
    lines += [f"note: {n}" for n in summary["notes"]]
    if summary["ramp_s"] == 0.0:
        lines.append("note: no ramp: the robot must be at the first point, moving with its velocity (or use --ramp)")
    return "\n".join(lines)


def run_excitation(args: argparse.Namespace) -> int:
    from ..identification.excitation import design_excitation
    from ..identification.excitation_files import is_yaml, trajectory_condition_number, write_trajectory
    from ..identification.parameters import ParameterSet

    outs = list(args.out)
    if len(set(outs)) != len(outs):
        raise RobotDynamicsError(f"--out given twice for the same path: {outs}")
    if args.joint_states and all(is_yaml(o) for o in outs):
        raise RobotDynamicsError("--joint-states needs a bag output (--out DIR); YAML holds the trajectory only")
    model = load_robot_from_args(args)
    result = design_excitation(
        model,
        args.duration,
        args.harmonics,
        base_frequency=args.base_frequency,
        rate=args.rate,
        seed=args.seed,
        starts=args.starts,
        max_iterations=args.iterations,
        margin=args.margin,
        velocity=args.velocity_limit,
        acceleration=args.acceleration_limit,
        position_range=args.position_range,
        ramp=args.ramp,
    )
    summary = result.summary()
    if args.compare:
        summary["compare"] = {
            path: trajectory_condition_number(model, path, result.base, ParameterSet(), rate=args.rate)
            for path in args.compare
        }
    summary["outputs"] = outs
    for path in outs:
        write_trajectory(result, path, storage=args.storage, overwrite=args.force, joint_states=args.joint_states)
    if args.json:
        print(json.dumps(_finite(summary), indent=2, allow_nan=False))
    else:
        print(_table(summary))
        for path in outs:
            print(f"wrote {path}")
    sys.stdout.flush()
    return 0
