"""``robot-dynamics closed-loop``: feed-forward + feedback tracking on a MuJoCo plant, through the nodes.

  robot-dynamics closed-loop ROBOT --plant PLANT.yaml --out DIR [--mjcf FILE]
      [--base-link L] [--tip-link L] [--lock-joint NAME[=POS] ...] [--joint-map TOPIC=MODEL ...]
      [--kp K ...] [--kd K ...] [--bandwidth WN] [--damping-ratio ZETA] [--inertia-floor F]
      [--rate HZ] [--timestep S] [--sensors PROFILE] [--sensor-overrides YAML] [--delay-compensation on|off|both]
      [--duration S] [--segment S] [--reach R] [--start Q ...] [--seed N] [--hold S]
      [--excitation-duration S] [--harmonics K] [--excitation-option ARG ...] [--friction LAW]
      [--identify-option ARG ...]
      [--cases A,B,B-exact,C,C-plain,D] [--realtime] [--thread-priority P] [--no-limit-efforts] [--domain-id N]
      [--json]

Runs the cases of :mod:`robot_dynamics.experiment` with :mod:`robot_dynamics.ros.closed_loop` (the
simulator and the feed-forward node in processes of their own over DDS, lock-step simulated time) and
writes DIR/report.md, report.json, tracking.png, the bags, the identified file and its report. With
``--sensors`` the simulator runs a real arm's sensors and actuators (docs/plant.md, "Sensors and
actuators") at the profile's rate, the controller is told its delays, identify fits the measured
recording and tracking is scored on the true state. Every input is checked before a node starts: bad
input is one line ``robot-dynamics closed-loop: error: ...`` and exit status 2.
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
        "closed-loop",
        help="PD, PD + stock, identified and exact feed-forward tracking on a MuJoCo plant, through the nodes",
        description="The closed-loop experiment: a MuJoCo plant built from ROBOT that deviates from it (--plant, "
        "docs/plant.md), the simulator and the feed-forward node in processes of their own over DDS in lock-step "
        "simulated time, and the cases A PD only, B PD + the stock file's feed-forward, B-exact PD + the stock "
        "file's inverse dynamics as trajectory efforts, C excitation -> record -> identify -> PD + the identified "
        "file's feed-forward, C-plain the same with a plain least-squares fit, D PD + the plant's exact inverse "
        "dynamics (mj_inverse, through the drive). With --sensors, a real arm's sensors and actuators around the "
        "plant; tracking scored on the true state. Writes a table (report.md, report.json), a plot (tracking.png), "
        "the bags of every case, the identified file and its report.",
    )
    add_robot_options(p, positional=True, default=None)
    p.add_argument("--plant", default="", metavar="YAML", help="plant deviation file (docs/plant.md; default: none)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--mjcf", default="", metavar="FILE", help="the plant from an MJCF file instead of ROBOT")
    p.add_argument(
        "--kp", nargs="+", type=float, metavar="K", help="N m/rad per joint (one = all; default: --bandwidth)"
    )
    p.add_argument("--kd", nargs="+", type=float, metavar="K", help="N m s/rad per joint (default: --bandwidth)")
    p.add_argument(
        "--bandwidth",
        type=float,
        default=None,
        metavar="WN",
        help="gains kp = D_ii wn^2, kd = 2 zeta wn D_ii at the start pose, rad/s (default: 20, at most "
        "0.25 / (zeta L), L the loop's delay: one control period, with --sensors its delays and velocity filter's lag)",
    )
    p.add_argument("--damping-ratio", type=float, default=1.0, metavar="ZETA", help="(%(default)s)")
    p.add_argument(
        "--inertia-floor",
        type=float,
        default=0.1,
        metavar="F",
        help="gains: D_ii no less than F times the largest, up to kd dt / D_ii = 0.5 (%(default)s; 0 = the plain rule)",
    )
    p.add_argument(
        "--rate", type=float, default=None, metavar="HZ", help="control rate (default: the sensor profile's, else 1000)"
    )
    p.add_argument("--timestep", type=float, default=0.001, metavar="S", help="largest physics timestep (%(default)s)")
    p.add_argument(
        "--sensors",
        default="",
        metavar="PROFILE",
        help="a real arm's sensors and actuators around the plant: a bundled profile (ur_e_series, franka, kuka_iiwa, "
        "industrial_125hz, ideal) or a profile file (default: none, the plant's exact state)",
    )
    p.add_argument(
        "--sensor-overrides",
        default="",
        metavar="YAML",
        help="profile keys on top of --sensors: YAML text (e.g. '{seed: 3}') or a YAML file",
    )
    p.add_argument(
        "--delay-compensation",
        choices=("on", "off", "both"),
        default="both",
        help="the feed-forward node told the sensors' delays (measurement_delay, command_delay): on, off, or both "
        "(every case also without, as <case>-uncomp; %(default)s)",
    )
    p.add_argument(
        "--hold",
        type=float,
        default=3.0,
        metavar="S",
        help="s of standstill recorded after each motion: the commanded torque's noise at rest (%(default)s; 0 = none)",
    )
    p.add_argument("--duration", type=float, default=10.0, metavar="S", help="tracked motion, s (%(default)s)")
    p.add_argument("--segment", type=float, default=1.5, metavar="S", help="s between its way points (%(default)s)")
    p.add_argument(
        "--reach", type=float, default=0.6, metavar="R", help="workspace: +-R rad (m) about the start (%(default)s)"
    )
    p.add_argument("--start", nargs="+", metavar="Q", help="start pose (values or a named pose; default: mid-limits)")
    p.add_argument("--seed", type=int, default=0, help="way points' and excitation's seed (%(default)s)")
    p.add_argument("--excitation-duration", type=float, default=10.0, metavar="S", help="(%(default)s)")
    p.add_argument("--harmonics", type=int, default=5, metavar="K", help="excitation harmonics (%(default)s)")
    p.add_argument(
        "--excitation-option",
        action="append",
        default=[],
        metavar="ARG",
        help="more arguments for excitation, e.g. --excitation-option=--starts=1",
    )
    p.add_argument(
        "--friction",
        metavar="LAW",
        help="friction law identify fits for case C, as identify's --friction (default: auto, identify's own choice)",
    )
    p.add_argument("--identify-option", action="append", default=[], metavar="ARG", help="more arguments for identify")
    p.add_argument("--cases", default="A,B,B-exact,C,C-plain,D", help="which cases (%(default)s)")
    p.add_argument(
        "--realtime",
        action="store_true",
        help="also run B in real time (no lock-step): the loop's rate and the joint state -> command latency",
    )
    p.add_argument(
        "--thread-priority",
        type=int,
        default=50,
        metavar="P",
        help="real time: SCHED_FIFO priority 1-99 of the simulator's stepping thread, 0 = the normal scheduler "
        "(%(default)s; without the right to it, the normal scheduler and a warning in the simulator's log)",
    )
    p.add_argument("--no-limit-efforts", dest="limit_efforts", action="store_false", help="do not clamp the command")
    p.add_argument("--domain-id", type=int, metavar="N", help="ROS_DOMAIN_ID (default: a free one reserved)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run_closed_loop)


def _positive(value: float, option: str) -> None:
    if not (math.isfinite(value) and value > 0.0):
        raise RobotDynamicsError(f"{option} must be a finite number > 0, got {value}")


def run_closed_loop(args: argparse.Namespace) -> int:
    from ..experiment.cases import parse_cases
    from ..experiment.motion import start_pose, workspace
    from ..plant import load_deviations
    from ..user_input import gains_error

    model = load_robot_from_args(args)
    overrides = _overrides(args.sensor_overrides)
    profile = _profile(args.sensors, overrides)
    args.rate = experiment_rate(args.rate, profile)
    for option in (
        "rate",
        "timestep",
        "duration",
        "segment",
        "reach",
        "damping_ratio",
        "excitation_duration",
    ):
        _positive(getattr(args, option), "--" + option.replace("_", "-"))
    if args.bandwidth is not None:
        _positive(args.bandwidth, "--bandwidth")
    if not (math.isfinite(args.hold) and args.hold >= 0.0):
        raise RobotDynamicsError(f"--hold must be a finite number >= 0 s, got {args.hold}")
    if not 0.0 <= args.inertia_floor <= 1.0:
        raise RobotDynamicsError(f"--inertia-floor must be in [0, 1], got {args.inertia_floor}")
    if args.harmonics < 1:
        raise RobotDynamicsError(f"--harmonics must be >= 1, got {args.harmonics}")
    if not 0 <= args.thread_priority <= 99:
        raise RobotDynamicsError(f"--thread-priority must be 0 (normal scheduler) to 99, got {args.thread_priority}")
    for option in ("kp", "kd"):
        error = gains_error(getattr(args, option), model.dof)
        if error:
            raise RobotDynamicsError(f"--{option}: {error}")
    if args.plant:
        load_deviations(args.plant)  # names the file and the field
    if args.mjcf and not Path(args.mjcf).is_file():
        raise RobotDynamicsError(f"--mjcf {args.mjcf}: no such file")
    start = parse_vector(args.start, model, "--start") if args.start else None
    workspace(model, start_pose(model, start), args.reach)
    from ..experiment.settings import Settings

    friction_law = experiment_friction_law(args.friction)
    from ..ros.closed_loop import Experiment  # ROS only from here on

    settings = Settings(
        robot=args.robot,
        out=Path(args.out),
        plant=args.plant,
        mjcf=args.mjcf,
        base_link=args.base_link,
        tip_link=args.tip_link,
        locked_joints=_locks(args),
        joint_map=joint_map_from_args(args),
        kp=args.kp,
        kd=args.kd,
        bandwidth=args.bandwidth,
        damping_ratio=args.damping_ratio,
        inertia_floor=args.inertia_floor,
        rate=args.rate,
        timestep=args.timestep,
        duration=args.duration,
        segment=args.segment,
        reach=args.reach,
        start=None if start is None else start.tolist(),
        seed=args.seed,
        excitation_duration=args.excitation_duration,
        harmonics=args.harmonics,
        excitation_options=args.excitation_option,
        friction_law=friction_law,
        identify_options=args.identify_option,
        cases=parse_cases(args.cases),
        sensors=args.sensors,
        sensor_overrides=overrides,
        delay_compensation=args.delay_compensation,
        hold=args.hold,
        realtime=args.realtime,
        thread_priority=args.thread_priority,
        limit_efforts=args.limit_efforts,
        domain_id=args.domain_id,
    )
    experiment = Experiment(settings, model, narrator(args.json))
    experiment.prepare()  # the plant compiled, the motion planned and checked: before any node starts
    summary = experiment.run()
    from ..experiment.report import markdown

    print_report(args.json, args.out, lambda: markdown(summary), "report.json, tracking.png, bags/, identified.yaml")
    return 0


def _overrides(text: str) -> str:
    """``--sensor-overrides``: YAML text, or the text of a YAML file it names."""
    path = Path(text)
    if text and text.endswith((".yaml", ".yml")):
        if not path.is_file():
            raise RobotDynamicsError(f"--sensor-overrides {text}: no such file")
        return path.read_text(encoding="utf-8")
    return text


def _profile(sensors: str, overrides: str) -> Any:
    """The sensor profile the options name (None: no sensors), loaded as the simulator will load it: a bad
    name, file or override is one line naming it."""
    if not sensors and not overrides:
        return None
    from ..plant import load_sensor_profile

    try:
        return load_sensor_profile(sensors, overrides or None, label="--sensor-overrides")
    except RobotDynamicsError as exc:
        told = str(exc).startswith("--sensor-overrides")
        raise RobotDynamicsError(str(exc) if told or not sensors else f"--sensors: {exc}") from None


def _locks(args: argparse.Namespace) -> dict[str, float]:
    from ..user_input import parse_locked_joints

    return parse_locked_joints(args.lock_joint or [], "--lock-joint")
