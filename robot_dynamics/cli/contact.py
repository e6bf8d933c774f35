"""``robot-dynamics contact``: the external joint torque over a bag, collision events, thresholds.

The momentum observer and the collision detection of the contact node, over a whole recording
(:mod:`robot_dynamics.bag.contact`); ``--calibrate`` measures thresholds on a recording of free motion
(reversal-aware: the thresholds away from velocity reversals and the allowance near them, unless
``--reversal-velocity 0``) and writes them as the node's parameter file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from robot_dynamics.cli._options import (
    add_joint_states_option,
    add_progress_option,
    add_robot_options,
    joint_map_from_args,
    load_robot_from_args,
)
from robot_dynamics.contact import DEFAULT_CLEAR_RATIO, DEFAULT_MARGIN, DEFAULT_REVERSAL_VELOCITY
from robot_dynamics.user_input import parse_number


def register(sub: Any) -> None:
    p = sub.add_parser(
        "contact",
        help="external joint torques over a bag (momentum observer), collision events, thresholds",
        description="Runs the contact node's generalized-momentum observer over the sensor_msgs/JointState "
        "messages of BAG (effort = the joint torques the motors applied): the external joint torque estimate "
        "per joint, the collision events for --thresholds (hysteresis: cleared below --clear-ratio x the "
        "threshold; plus --reversal-thresholds x the reversal weight near each joint's velocity reversals), or "
        "with --calibrate thresholds measured on a recording of free motion (reversal-aware: margin x the "
        "largest |r| away from reversals, and the allowance near them; --reversal-velocity 0: margin x max |r| "
        "per joint), written as the node's parameter file.",
    )
    p.add_argument("bag", metavar="BAG", help="rosbag2 directory (or .mcap/.db3 file)")
    add_robot_options(p, positional=False, default=None)
    add_joint_states_option(p)
    p.add_argument(
        "--gain", nargs="+", default=["50"], metavar="K", help="observer gain, 1/s: one, or one per joint (default: 50)"
    )
    p.add_argument(
        "--friction-model",
        choices=("smooth", "exact", "off"),
        default="smooth",
        help="the observer's friction b(qd): smooth (as the node), exact sign(qd), or off (default: %(default)s)",
    )
    p.add_argument(
        "--effort-timing",
        choices=("sampled", "step", "auto"),
        default="sampled",
        help="the efforts are samples of the joint torque at their states (a drive's, a torque sensor's), or the "
        "torque held over the step into each state (step: a simulator's, this package's simulator_node); auto: "
        "both, the smaller residual kept and written with --calibrate (default: %(default)s)",
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument(
        "--thresholds", nargs="+", metavar="T", help="collision thresholds, N·m (N): one, or one per joint"
    )
    what.add_argument(
        "--calibrate", action="store_true", help="measure thresholds on this recording of free motion (no contact)"
    )
    p.add_argument(
        "--reversal-thresholds",
        nargs="+",
        metavar="D",
        help="with --thresholds: the allowance added near velocity reversals, N·m (N): one, or one per joint "
        "(default: 0, fixed thresholds)",
    )
    p.add_argument(
        "--reversal-velocity",
        nargs="+",
        default=[str(DEFAULT_REVERSAL_VELOCITY)],
        metavar="V",
        help="a joint slower than V (rad/s, m/s) is near a reversal: one, or one per joint; 0 = no reversal band "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--clear-ratio",
        default=str(DEFAULT_CLEAR_RATIO),
        metavar="X",
        help="a joint leaves collision below X x its threshold, 0 < X <= 1 (default: %(default)s)",
    )
    p.add_argument(
        "--margin",
        default=str(DEFAULT_MARGIN),
        metavar="M",
        help="--calibrate: threshold = M x max |r| per joint, M >= 1 (default: %(default)s)",
    )
    p.add_argument(
        "--params", metavar="YAML", help="--calibrate: write the contact node's parameter file here ('-' = stdout)"
    )
    p.add_argument("--json", metavar="PATH", help="summary (residuals, thresholds, events) as JSON ('-' = stdout)")
    p.add_argument("--plot", metavar="PNG", help="the external torque per joint with its thresholds")
    add_progress_option(p)
    p.set_defaults(func=run_contact)


def _numbers(tokens: list[str], option: str, *, finite: bool = True) -> list[float]:
    """Numbers separated by spaces or commas (``pi`` expressions; ``inf`` where ``finite`` is false)."""
    return [parse_number(part, option, finite=finite) for token in tokens for part in token.replace(",", " ").split()]


def _read(args: argparse.Namespace, model: Any) -> Any:
    from robot_dynamics.bag.evaluate import read_inputs
    from robot_dynamics.bag.progress import Progress
    from robot_dynamics.bag.reader import bag_summary, topic_name

    summary = bag_summary(args.bag)
    topic = summary.topics.get(topic_name(args.joint_states))
    with Progress(topic.count if topic else 0, f"reading {Path(args.bag).name}", enabled=args.progress) as bar:
        return read_inputs(
            args.bag,
            model,
            joint_states=args.joint_states,
            trajectory=None,
            progress=bar.update,
            joint_map=joint_map_from_args(args),
        )


def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
    else:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)


def run_contact(args: argparse.Namespace) -> int:
    from robot_dynamics.bag.contact import ContactError, analyse, parameter_file, plot
    from robot_dynamics.contact import (
        calibrate_reversal,
        calibrate_thresholds,
        check_clear_ratio,
        check_reversal,
        check_thresholds,
    )
    from robot_dynamics.dynamics.momentum_observer import observer_gain
    from robot_dynamics.errors import StateError

    gain = _numbers(args.gain, "--gain")
    thresholds = _numbers(args.thresholds, "--thresholds", finite=False) if args.thresholds else None
    extra = _numbers(args.reversal_thresholds, "--reversal-thresholds") if args.reversal_thresholds else None
    velocity = _numbers(args.reversal_velocity, "--reversal-velocity")
    clear_ratio = parse_number(args.clear_ratio, "--clear-ratio")
    margin = parse_number(args.margin, "--margin")
    if args.params and not args.calibrate:
        raise ContactError("--params writes the thresholds of --calibrate: give --calibrate too")
    if extra is not None and thresholds is None:
        raise ContactError("--reversal-thresholds are added to --thresholds: give --thresholds too")
    model = load_robot_from_args(args)
    try:
        check_clear_ratio(clear_ratio, "--clear-ratio")
        observer_gain(gain, model.dof, "--gain")
        band = check_reversal(velocity, model.dof, "--reversal-velocity")
        if thresholds is not None:
            check_thresholds(thresholds, model.dof, "--thresholds")
        if extra is not None:
            check_reversal(extra, model.dof, "--reversal-thresholds")
        if not margin >= 1.0:
            raise StateError(f"--margin must be >= 1, got {margin:g}")
    except StateError as exc:
        raise ContactError(str(exc)) from None
    inputs = _read(args, model)
    friction = args.friction_model != "off"
    analysis = analyse(
        model,
        inputs.series,
        gain=np.asarray(gain),
        thresholds=None if thresholds is None else np.asarray(thresholds),
        clear_ratio=clear_ratio,
        reversal_thresholds=None if extra is None else np.asarray(extra),
        reversal_velocity=band,
        friction=friction,
        smooth=args.friction_model == "smooth",
        bag=str(args.bag),
        bag_names=inputs.names,
        effort_timing=args.effort_timing,
    )
    calibrated, allowance = None, None
    if args.calibrate and band.any():
        calibrated, allowance = calibrate_reversal(analysis.run.r, analysis.weights, margin)
    elif args.calibrate:
        calibrated = calibrate_thresholds(analysis.run.r, margin)
    log = sys.stderr if "-" in (args.json, args.params) else sys.stdout
    rate = (analysis.count - 1) / analysis.run.t[-1]
    print(
        f"{analysis.robot}: {analysis.count} joint states, {analysis.run.t[-1]:.2f} s (~{rate:.0f} Hz; "
        f"{analysis.skipped} skipped: missing or non-finite values); momentum observer K = "
        f"{', '.join(f'{k:g}' for k in sorted(set(analysis.run.gain.tolist())))} 1/s, "
        f"friction {analysis.settings['friction']}; r = external joint torque [N·m]",
        file=log,
    )
    if analysis.settings["unread"]:
        print(
            f"the observer starts at the first torque reading: {analysis.settings['unread']} leading joint states at "
            "rest with every effort 0 not observed",
            file=log,
        )
    timing_rms = analysis.settings["effort_timing_rms"]
    if len(timing_rms) > 1:
        scores = ", ".join(f"{k} {v:.4g}" for k, v in timing_rms.items())
        print(f"effort timing {analysis.settings['effort_timing']}, chosen by RMS r ({scores})", file=log)
    print(_table(analysis, calibrated, allowance), file=log)
    for e in analysis.events:
        kind = "collision" if e.raised else "cleared  "
        level = e.threshold if e.raised else e.clear_level
        print(
            f"  t = {e.time:9.4f} s  {kind}  {analysis.joint_names[e.joint]:<12} |r| = {e.magnitude:8.3f} "
            f"({'threshold' if e.raised else 'clear level'} {level:g})",
            file=log,
        )
    if calibrated is not None:
        what = "max |r|" if allowance is None else "max |r| away from and near velocity reversals"
        note = (
            f"contact_node thresholds measured by `robot-dynamics contact --calibrate` on {Path(args.bag).name} "
            f"({analysis.count} joint states of free motion): {margin:g} x {what} per joint"
        )
        text = parameter_file(
            calibrated,
            analysis.run.gain,
            clear_ratio,
            note,
            allowance,
            None if allowance is None else band,
            analysis.settings["effort_timing"],
        )
        if args.params:
            _write(args.params, text)
            if args.params != "-":
                print(f"wrote {args.params}", file=log)
        else:
            print(text, end="", file=log)
    if args.json:
        summary = analysis.summary()
        if calibrated is not None:
            summary["calibrated_thresholds"] = {"margin": margin, "thresholds": calibrated.tolist()}
            if allowance is not None:
                summary["calibrated_thresholds"]["reversal_thresholds"] = allowance.tolist()
                summary["calibrated_thresholds"]["reversal_velocity"] = band.tolist()
        _write(args.json, json.dumps(summary, indent=2) + "\n")
        if args.json != "-":
            print(f"wrote {args.json}", file=log)
    if args.plot:
        plot(args.plot, analysis if calibrated is None else _with_thresholds(analysis, calibrated, allowance))
        print(f"wrote {args.plot}", file=log)
    return 0


def _with_thresholds(analysis: Any, thresholds: Any, allowance: Any) -> Any:
    from dataclasses import replace

    return replace(analysis, thresholds=thresholds, reversal_thresholds=allowance)


def _table(analysis: Any, calibrated: Any, allowance: Any) -> str:
    r = analysis.run.r
    th = calibrated if calibrated is not None else analysis.thresholds
    extra = allowance if calibrated is not None else analysis.reversal_thresholds
    head = f"{'joint':<14}{'RMS r':>10}{'max |r|':>10}"
    if th is not None:
        head += f"{'calibrated' if calibrated is not None else 'threshold':>12}"
        head += f"{'reversal':>10}" if extra is not None else ""
        if calibrated is None:
            head += f"{'collisions':>12}"
    lines = [head]
    for j, name in enumerate(analysis.joint_names):
        row = f"{name:<14}{float((r[:, j] ** 2).mean() ** 0.5):10.4f}{float(abs(r[:, j]).max()):10.4f}"
        if th is not None:
            row += f"{float(th[j]):12.4g}"
            row += f"{float(extra[j]):10.4g}" if extra is not None else ""
            if calibrated is None:
                row += f"{sum(1 for e in analysis.events if e.joint == j and e.raised):12d}"
        lines.append(row)
    return "\n".join(lines)
