"""``robot-dynamics identify``: recorded bags -> identified robot model, report and plot.

  robot-dynamics identify BAG [BAG ...|DIR] --robot ROBOT --out MODEL.yaml [--format yaml|urdf]
      (--method plain: --out may be left out)
      [--holdout 0.3] [--json REPORT.json] [--plot PNG] [--jobs N] [--scheduler ADDRESS]
      [--consistent/--no-consistent] [--coulomb tanh|sign] [--payload-only] [--prior W] [--noise SIGMA ...]
      [--method identify|plain]
      [--friction auto|smooth-coulomb|viscous-coulomb|asymmetric-coulomb|stribeck]
      [--reversal-velocity auto|V [V ...]] [--stick-velocity auto|V] [--window auto|S]
      [--effort-lag K|auto] [--acceleration savgol|difference|auto] [--reversal-fit/--no-reversal-fit]
      [--bounds/--no-bounds] [--offsets reading|torque]
      [--compare-friction/--no-compare-friction]
      [--base-link L] [--tip-link L] [--lock-joint NAME[=POS] ...] [--joint-map BAG_NAME=MODEL_NAME ...]

The pipeline is :func:`robot_dynamics.identification.pipeline.identify`. Outputs are written only
after a successful fit, each atomically; on any error (a bag without efforts, too short, a joint
that never moved, rank-deficient data) one message says what is missing, the exit status is 2 and
nothing is written.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import RobotDynamicsError
from ..models.provenance import Provenance
from ..user_input import parse_locked_joints
from ._options import add_joint_states_option, add_robot_options, joint_map_from_args, load_robot_from_args


def register(sub: Any) -> None:
    p = sub.add_parser(
        "identify",
        help="identify inertial, armature and friction parameters from bags; write the identified model",
        description="Reads the joint states (position, velocity, effort) of every bag, differentiates them "
        "(Savitzky-Golay), builds the dynamic regressor and fits the base parameters by weighted least squares "
        "(two-pass per-joint noise weights) and, by default, a physically consistent fit. The last --holdout "
        "fraction of each bag is kept out of the fit to validate it. Writes a robot file every command and node "
        "accepts.",
    )
    p.add_argument(
        "bags", nargs="+", metavar="BAG", help="rosbag2 bags (directory, .mcap or .db3) or directories of bags"
    )
    add_robot_options(p, positional=False, default=None)
    p.add_argument(
        "--out",
        metavar="MODEL",
        help="identified robot file (chain YAML or URDF); required but with --method plain, whose least-squares "
        "parameters often make no robot model (then only the report is written)",
    )
    p.add_argument("--format", choices=("yaml", "urdf"), default=None, help="model format (default: from --out)")
    add_joint_states_option(p)
    p.add_argument(
        "--holdout", type=float, default=0.3, metavar="F", help="held-out fraction of each bag (%(default)s)"
    )
    p.add_argument("--json", metavar="REPORT", help="JSON report: base parameters, std, RMS, consistency")
    p.add_argument("--plot", metavar="PNG", help="measured vs nominal vs identified torque on held-out data")
    p.add_argument("--jobs", type=int, default=None, metavar="N", help="local worker processes (default: CPUs)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask distributed scheduler, e.g. tcp://host:8786")
    p.add_argument(
        "--consistent",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="physically consistent fit, or weighted least squares (default: the consistent fit, unless it "
        "validates worse than plain least squares in the cross-validation and the least-squares model is loadable)",
    )
    p.add_argument("--coulomb", choices=("tanh", "sign"), default="tanh", help="Coulomb friction law (%(default)s)")
    p.add_argument(
        "--method",
        default="identify",
        metavar="identify|plain",
        help="identify (default): rows, friction law and window chosen by cross-validation, consistent fit; "
        "plain: plain weighted least squares, every joint's rows slower than 0.05 rad/s left out (the baseline)",
    )
    p.add_argument(
        "--friction",
        metavar="LAW",
        default=None,
        help="friction law fitted per joint: auto (default: chosen by cross-validation), smooth-coulomb, "
        "viscous-coulomb, asymmetric-coulomb or stribeck; every law's held-out error is reported beside it",
    )
    p.add_argument(
        "--compare-friction",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="fit every friction law on the same split and report each one's held-out error (default)",
    )
    p.add_argument(
        "--window",
        default=None,
        metavar="S|auto",
        help="seconds of the Savitzky-Golay window that differentiates the velocity (at least 5 samples); auto: "
        "0.05 or 0.1 chosen by cross-validation (default up to 200 000 states, else 0.05)",
    )
    p.add_argument(
        "--bounds",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep each link's mass inside a bounding ellipsoid of its URDF geometry or joint frames (default)",
    )
    p.add_argument(
        "--reversal-velocity",
        nargs="+",
        default=None,
        metavar="V",
        help="rad/s or m/s, one or one per joint: a joint's training rows slower than this are left out "
        "(friction sticks at velocity reversals; 0 keeps every row); auto (default): each joint's chosen from "
        "0, 0.05, 0.1 by cross-validation",
    )
    p.add_argument(
        "--stick-velocity",
        default=None,
        metavar="V|auto",
        help="rad/s or m/s: a joint slower than this sticks; every joint's rows within half a --window of "
        "where one starts or stops sticking are left out (the derivative filter spreads the jump in "
        "acceleration over its window; 0 keeps them); auto (default): 0.005, the band on or off chosen by "
        "cross-validation",
    )
    p.add_argument(
        "--effort-lag",
        type=_lag,
        default=0,
        metavar="K|auto",
        help="messages between a joint state and the effort that goes with it: a simulator that reports the "
        "torque it applied over the step into each state has 1 (robot_dynamics' simulator_node, Gazebo); "
        "auto fits 0, 1 and -1 and keeps the smallest training residual (default 0)",
    )
    p.add_argument(
        "--acceleration",
        choices=["savgol", "difference", "auto"],
        default="savgol",
        help="how the joint accelerations are estimated: savgol, the Savitzky-Golay derivative over --window "
        "(measured data); difference, each step's change of velocity, unsmoothed (a simulator's noise-free "
        "recording: exact for fixed-step semi-implicit Euler, with --effort-lag 1); auto fits both (with every "
        "lag under --effort-lag auto) and keeps the smallest training residual (default savgol)",
    )
    p.add_argument(
        "--reversal-fit",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="choose each joint's Coulomb width (and report the reversal's timing) on the rows below the reversal "
        "velocity (default)",
    )
    p.add_argument("--payload-only", action="store_true", help="identify only the last link (tool + payload)")
    p.add_argument(
        "--noise",
        type=float,
        nargs="+",
        metavar="SIGMA",
        help="per-joint torque noise std (N m or N), one per joint; default: estimated from the residuals",
    )
    p.add_argument(
        "--prior",
        type=float,
        default=0.0,
        metavar="W",
        help="weight pulling toward the nominal base parameters (keeps what the data leave undetermined)",
    )
    p.add_argument(
        "--offsets",
        choices=("reading", "torque"),
        default="reading",
        help="the fitted constant offsets: 'reading' (default), a bias of the recorded torque (motor-current "
        "sensing), reported only; 'torque', a torque the drive applies for a zero command (its torque loop "
        "closes on the recorded sensor, e.g. a Franka's link-side sensors), written into the robot file "
        "(friction.offset) and added by the feed-forward",
    )
    p.add_argument(
        "--sensor-noise",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="estimate each torque sensor's noise apart from the fit's residual (default)",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar over bags on stderr (default: on a terminal)",
    )
    p.set_defaults(func=run_identify)


def _lag(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'auto', got {text!r}") from None


def _format(args: argparse.Namespace) -> str:
    if args.format:
        return str(args.format)
    return "urdf" if Path(args.out).suffix.lower() in (".urdf", ".xml") else "yaml"


def _number(option: str, text: str) -> float:
    """A finite non-negative number given to ``option`` (one line naming the option otherwise)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value >= 0.0):
        raise RobotDynamicsError(f"{option}: expected a finite number >= 0 or 'auto', got {text!r}")
    return value


def _law_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--friction``, ``--window``, ``--reversal-velocity`` and ``--stick-velocity`` as given ("auto" or
    left out: chosen by the pipeline); bad values are one line naming the option."""
    out: dict[str, Any] = {}
    if args.method not in ("identify", "plain"):
        raise RobotDynamicsError(f"--method must be identify or plain, got {args.method!r}")
    if args.friction is not None:
        out["friction"] = args.friction
    if args.window is not None:
        out["window"] = "auto" if args.window == "auto" else _number("--window", args.window)
        if out["window"] == 0.0:
            raise RobotDynamicsError(f"--window: expected a positive number of seconds or 'auto', got {args.window!r}")
    if args.reversal_velocity is not None:
        v = args.reversal_velocity
        if v != ["auto"]:
            values = [_number("--reversal-velocity", x) for x in v]
            out["reversal_velocity"] = values[0] if len(values) == 1 else values
    if args.stick_velocity is not None and args.stick_velocity != "auto":
        out["stick_velocity"] = _number("--stick-velocity", args.stick_velocity)
    return out


def run_identify(args: argparse.Namespace) -> int:
    from ..identification.pipeline import identify
    from ..identification.report import json_text, model_text, render_plot, temporary_path
    from ..identification.report_text import format_table
    from ..models.chain_yaml import write_text_atomic

    if args.out is None and args.method != "plain":
        raise RobotDynamicsError("the following argument is required: --out (only --method plain may leave it out)")
    if not 0.0 <= args.holdout < 1.0:
        raise RobotDynamicsError(f"--holdout must be in [0, 1), got {args.holdout}")
    if args.plot and args.holdout == 0.0:
        raise RobotDynamicsError("--plot shows held-out data: use --holdout > 0")
    law_options = _law_options(args)
    model, joint_map = load_robot_from_args(args), joint_map_from_args(args)
    provenance = Provenance(
        robot=str(args.robot),
        base_link=args.base_link,
        tip_link=args.tip_link,
        locked_joints=parse_locked_joints(args.lock_joint or [], "--lock-joint"),
        joint_map=joint_map,
    )
    result = identify(
        args.bags,
        model,
        payload_only=args.payload_only,
        consistent=args.consistent,
        coulomb=args.coulomb,
        holdout=args.holdout,
        prior_weight=args.prior,
        noise_std=args.noise,
        joint_states=args.joint_states,
        joint_map=joint_map,
        jobs=args.jobs,
        scheduler=args.scheduler,
        progress=args.progress,
        provenance=provenance,
        bounded=args.bounds,
        compare_friction=args.compare_friction,
        effort_lag=args.effort_lag,
        acceleration=args.acceleration,
        reversals=args.reversal_fit,
        method=args.method,
        sensor_noise_estimate=args.sensor_noise,
        offsets=args.offsets,
        **law_options,
    )
    # everything rendered before anything is written: a failure here leaves no file behind
    texts = {} if args.out is None else {args.out: model_text(result, _format(args))}
    if args.json:
        texts[args.json] = json_text(result)
    plot_tmp = None
    if args.plot:
        plot_tmp = temporary_path(args.plot)
        try:
            render_plot(plot_tmp, result)
        except BaseException:
            plot_tmp.unlink(missing_ok=True)
            raise
    print(format_table(result))
    for path, text in texts.items():
        write_text_atomic(path, text)
        print(f"wrote {path}")
    if plot_tmp is not None:
        os.replace(plot_tmp, args.plot)
        print(f"wrote {args.plot}")
    sys.stdout.flush()
    return 0
