"""``robot-dynamics collision``: an arm's motion runs into an obstacle, with and without each reaction.

  robot-dynamics collision ROBOT --plant PLANT.yaml --obstacles OBSTACLES.yaml [...] --start Q ... --out DIR
      [--reactions none,stop,float,reflex] [--speed V] [--direction X Y Z] [--sensor-profile NAME]
      [--identified FILE] [--contact-params YAML] [--calibration-duration S] [--margin M] [--free-duration S]
      [--reaction-option NAME=VALUE ...] [--kp K ...] [--kd K ...] [--bandwidth WN] [--rate HZ] [--timestep S]
      [--reach R] [--seed N] [--excitation-duration S] [--harmonics K] [--friction LAW] [--after S]
      [--base-link L] [--tip-link L] [--lock-joint NAME[=POS] ...] [--domain-id N] [--json]

The simulator (with the obstacles), the contact node and the feed-forward node in processes of their own
over DDS, lock-step (:mod:`robot_dynamics.ros.collision_case`); writes DIR/report.md, report.json,
force.png, the bags, identified.yaml and contact.yaml. Every input is checked before a node starts: bad
input is one line ``robot-dynamics collision: error: ...`` and exit status 2.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from ..errors import RobotDynamicsError
from ._options import (
    add_robot_options,
    experiment_friction_law,
    experiment_rate,
    joint_map_from_args,
    load_robot_from_args,
    narrator,
    print_report,
)
from .dynamics import parse_vector


def register(sub: Any) -> None:
    p = sub.add_parser(
        "collision",
        help="an arm runs into an obstacle with and without each collision reaction, through the nodes",
        description="The collision case: a MuJoCo plant built from ROBOT that deviates from it (--plant) with "
        "obstacles in its world (--obstacles, docs/plant.md; one case per file), the simulator, the contact node and "
        "the feed-forward node in processes of their own over DDS in lock-step. The identified model (identify on an "
        "excitation recording) and thresholds (contact --calibrate on a free-motion recording) are made first unless "
        "given; then a free motion with the reaction stop armed (false reactions), then per obstacle file and "
        "reaction a motion from --start into the obstacle. Writes a table (report.md, report.json) and the contact "
        "force (force.png).",
    )
    add_robot_options(p, positional=True, default=None)
    p.add_argument("--plant", default="", metavar="YAML", help="plant deviation file (docs/plant.md)")
    p.add_argument("--obstacles", nargs="+", required=True, metavar="YAML", help="obstacle files, one case each")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--start", nargs="+", required=True, metavar="Q", help="start pose (values or a named pose)")
    p.add_argument("--reactions", default="none,stop,float,reflex", help="reactions compared (%(default)s)")
    p.add_argument("--speed", type=float, default=0.4, metavar="V", help="the tool's peak speed, m/s (%(default)s)")
    p.add_argument(
        "--direction", nargs=3, type=float, metavar="X", help="the tool's direction (default: towards the obstacle)"
    )
    p.add_argument(
        "--sensor-profile", default="", metavar="NAME", help="the simulator's sensor profile (config/sensors)"
    )
    p.add_argument("--identified", default="", metavar="FILE", help="use this model instead of identifying one")
    p.add_argument(
        "--contact-params", default="", metavar="YAML", help="contact node thresholds instead of calibrating"
    )
    p.add_argument("--calibration-duration", type=float, default=30.0, metavar="S", help="(%(default)s)")
    p.add_argument("--free-duration", type=float, default=30.0, metavar="S", help="0 = skip (%(default)s)")
    p.add_argument(
        "--margin", type=float, default=3.0, metavar="M", help="contact --calibrate's margin, >= 1 (%(default)s)"
    )
    p.add_argument("--after", type=float, default=1.0, metavar="S", help="s recorded after the motion (%(default)s)")
    p.add_argument(
        "--reaction-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a reaction parameter without its reaction_ prefix, e.g. reflex_duration=0.05",
    )
    p.add_argument("--kp", nargs="+", type=float, metavar="K", help="N m/rad per joint (default: --bandwidth)")
    p.add_argument("--kd", nargs="+", type=float, metavar="K", help="N m s/rad per joint (default: --bandwidth)")
    p.add_argument("--bandwidth", type=float, default=20.0, metavar="WN", help="(%(default)s)")
    p.add_argument(
        "--rate", type=float, default=None, metavar="HZ", help="control rate (default: the sensor profile's, else 1000)"
    )
    p.add_argument("--timestep", type=float, default=0.001, metavar="S", help="largest physics timestep (%(default)s)")
    p.add_argument(
        "--reach", type=float, default=0.4, metavar="R", help="free motions: +-R about the start (%(default)s)"
    )
    p.add_argument("--seed", type=int, default=0, help="(%(default)s)")
    p.add_argument("--excitation-duration", type=float, default=10.0, metavar="S", help="(%(default)s)")
    p.add_argument("--harmonics", type=int, default=5, metavar="K", help="(%(default)s)")
    p.add_argument("--friction", metavar="LAW", help="identify's --friction (default: the closed-loop experiment's)")
    p.add_argument("--domain-id", type=int, metavar="N", help="ROS_DOMAIN_ID (default: a free one reserved)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run_collision)


def _reaction_options(items: list[str]) -> dict[str, float]:
    from ..reaction import ReactionSettings

    out: dict[str, float] = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            out[name] = float(value)
            ReactionSettings(**{name: out[name]})  # type: ignore[arg-type]
        except (TypeError, ValueError) as exc:
            raise RobotDynamicsError(f"--reaction-option {item}: {exc}") from None
    return out


def run_collision(args: argparse.Namespace) -> int:
    from ..experiment.settings import Settings
    from ..plant import load_deviations
    from ..plant.obstacles import load_obstacles
    from ..reaction import REACTIONS
    from ..user_input import gains_error

    model = load_robot_from_args(args)
    from ..plant import load_sensor_profile

    args.rate = experiment_rate(args.rate, load_sensor_profile(args.sensor_profile) if args.sensor_profile else None)
    for option in ("speed", "rate", "timestep", "reach", "bandwidth", "excitation_duration", "calibration_duration"):
        value = getattr(args, option)
        if not (math.isfinite(value) and value > 0.0):
            raise RobotDynamicsError(f"--{option.replace('_', '-')} must be a finite number > 0, got {value}")
    if not (math.isfinite(args.free_duration) and args.free_duration >= 0.0 and args.after >= 0.0):
        raise RobotDynamicsError("--free-duration and --after must be >= 0 s")
    if not (math.isfinite(args.margin) and args.margin >= 1.0):
        raise RobotDynamicsError(f"--margin must be >= 1, got {args.margin}")
    reactions = tuple(r.strip() for r in args.reactions.split(",") if r.strip())
    unknown = [r for r in reactions if r not in REACTIONS]
    if unknown or not reactions:
        raise RobotDynamicsError(f"--reactions: expected some of {list(REACTIONS)}, got {args.reactions!r}")
    for option in ("kp", "kd"):
        error = gains_error(getattr(args, option), model.dof)
        if error:
            raise RobotDynamicsError(f"--{option}: {error}")
    if args.plant:
        load_deviations(args.plant)
    for path in args.obstacles:
        load_obstacles(path)  # names the file and the field
    stems = [Path(p).stem for p in args.obstacles]
    if len(set(stems)) != len(stems):
        raise RobotDynamicsError(f"--obstacles: the files' names must differ (one case each), got {stems}")
    for path in (args.identified, args.contact_params):
        if path and not Path(path).is_file():
            raise RobotDynamicsError(f"{path}: no such file")
    options = _reaction_options(args.reaction_option)
    start = parse_vector(args.start, model, "--start")
    from ..user_input import parse_locked_joints

    friction_law = experiment_friction_law(args.friction)
    base = Settings(
        robot=args.robot,
        out=Path(args.out),
        plant=args.plant,
        base_link=args.base_link,
        tip_link=args.tip_link,
        locked_joints=parse_locked_joints(args.lock_joint or [], "--lock-joint"),
        joint_map=joint_map_from_args(args),
        kp=args.kp,
        kd=args.kd,
        bandwidth=args.bandwidth,
        rate=args.rate,
        timestep=args.timestep,
        reach=args.reach,
        start=start.tolist(),
        seed=args.seed,
        excitation_duration=args.excitation_duration,
        harmonics=args.harmonics,
        friction_law=friction_law,
        domain_id=args.domain_id,
    )
    from ..ros.collision_case import CollisionCase, CollisionSettings  # ROS only from here on

    settings = CollisionSettings(
        base=base,
        obstacles=tuple(args.obstacles),
        reactions=reactions,
        speed=args.speed,
        direction=tuple(args.direction) if args.direction else None,
        after=args.after,
        sensor_profile=args.sensor_profile,
        reaction_parameters=options,
        identified=args.identified,
        contact_parameters=args.contact_params,
        calibration_duration=args.calibration_duration,
        free_duration=args.free_duration,
        margin=args.margin,
    )
    case = CollisionCase(settings, model, narrator(args.json))
    case.prepare()  # the plant compiled, the motions planned and checked: before any node starts
    summary = case.run()
    from ..collision.report import markdown

    print_report(args.json, args.out, lambda: markdown(summary), "report.json, force.png, bags/")
    return 0
