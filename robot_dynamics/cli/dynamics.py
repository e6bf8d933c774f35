"""``robot-dynamics id | coefficients | fd | task-space``: the engine from the command line.

  robot-dynamics id ROBOT --q 0 pi/2 -pi/2 0 0 0 --qd ... --qdd ... [--breakdown] [--json]
  robot-dynamics coefficients ROBOT --q ... --qd ... [--tensor] [--json]
  robot-dynamics fd ROBOT --q ... --qd ... --tau ... [--json]
  robot-dynamics task-space ROBOT --q ... [--qd ...] [--link L] [--axes base|link]
                            [--inertia [--rows all|linear|angular] [--rcond R]] [--json]

ROBOT is a bundled name (``puma560``), a DH YAML or a URDF file. Joint values are numbers separated
by spaces or commas; ``pi`` and arithmetic (``pi/2``, ``-3*pi/4``) are allowed, or the name of one of
the robot's named poses (``--q qr``). ``--q`` is required; a missing ``--qd``/``--qdd``/``--tau``
is zero, and a note on standard error says so (the JSON output lists the values used).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from ..errors import StateError
from ..model import FloatArray, RobotModel
from ..user_input import non_finite_message, parse_number
from ._options import add_robot_options, load_robot_from_args


def parse_vector(tokens: list[str] | None, model: RobotModel, option: str, size: int | None = None) -> FloatArray:
    """Joint values from the command line (see the module docstring); zeros when not given."""
    n = model.dof if size is None else size
    if not tokens:
        return np.zeros(n)
    if len(tokens) == 1 and tokens[0] in model.named_poses and size is None:
        return np.array(model.named_poses[tokens[0]], dtype=float)
    parts = [p for token in tokens for p in token.replace(",", " ").split()]
    values = np.array([parse_number(p, option, finite=False) for p in parts])
    if values.shape != (n,):
        poses = f"; named poses: {sorted(model.named_poses)}" if model.named_poses and size is None else ""
        raise StateError(f"{option}: expected {n} values for robot {model.name!r}, got {len(values)}{poses}")
    problem = non_finite_message(option, values, model.joint_names if size is None else None)
    if problem:
        raise StateError(problem)
    return values


def _vectors(args: argparse.Namespace, model: RobotModel, names: tuple[str, ...]) -> list[FloatArray]:
    """The joint vectors ``names`` (see :func:`_note_zeros`)."""
    return [parse_vector(getattr(args, k), model, f"--{k}") for k in names]


def _note_zeros(args: argparse.Namespace, names: tuple[str, ...]) -> None:
    """A note on standard error naming the vectors that were not given (zero), once the results are in."""
    zero = [f"--{k}" for k in names if not getattr(args, k)]
    if zero:
        print(f"robot-dynamics {args.command}: note: {', '.join(zero)} not given: zero", file=sys.stderr)


def _add_common(parser: argparse.ArgumentParser, vectors: list[tuple[str, str]]) -> None:
    add_robot_options(parser, positional=True, default=None, joint_map=False)
    parser.add_argument("--q", nargs="+", metavar="V", required=True, help="joint positions (required)")
    for name, text in vectors:
        parser.add_argument(f"--{name}", nargs="+", metavar="V", help=f"{text} (default: zero)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _table(names: list[str], columns: dict[str, FloatArray]) -> str:
    width = max(8, *(len(n) for n in names))
    head = "joint".ljust(width) + "".join(k.rjust(16) for k in columns)
    rows = [head]
    for i, name in enumerate(names):
        rows.append(name.ljust(width) + "".join(f"{float(v[i]):16.6g}" for v in columns.values()))
    return "\n".join(rows)


def _matrix(name: str, value: FloatArray) -> str:
    with np.printoptions(precision=6, suppress=True, linewidth=160):
        return f"{name} =\n{np.array2string(np.asarray(value))}"


def _run_id(args: argparse.Namespace) -> int:
    from ..dynamics import inverse_dynamics

    model = load_robot_from_args(args)
    q, qd, qdd = _vectors(args, model, ("q", "qd", "qdd"))
    wrench = parse_vector(args.wrench, model, "--wrench", size=6) if args.wrench else None
    result = inverse_dynamics(
        model,
        q,
        qd,
        qdd,
        friction=not args.no_friction,
        wrench=wrench,
        breakdown=True,
        smooth=args.smooth,
        wrench_frame=args.wrench_frame,
    )
    columns = {"tau": result.total}
    if args.breakdown:
        columns |= {
            "inertial": result.inertial,
            "motor_inertia": result.motor_inertia,
            "coriolis_centr.": result.coriolis_centrifugal,
            "gravity": result.gravity,
            "tool_wrench": result.tool_wrench,
            "friction": result.friction,
        }
    _note_zeros(args, ("qd", "qdd"))
    if args.json:
        keys = ("inertial", "coriolis_centrifugal", "gravity", "friction", "motor_inertia", "tool_wrench")
        payload: dict[str, Any] = {
            "robot": model.name,
            "joint_names": model.joint_names,
            "q": q.tolist(),
            "qd": qd.tolist(),
            "qdd": qdd.tolist(),
            "tau": result.total.tolist(),
        }
        if args.breakdown:
            payload["breakdown"] = {k: getattr(result, k).tolist() for k in keys}
        print(json.dumps(payload))
    else:
        print(_table(model.joint_names, columns))
    return 0


def _run_coefficients(args: argparse.Namespace) -> int:
    from ..dynamics import coriolis_centrifugal, coriolis_matrix, coriolis_tensor, gravity_torques, inertia_matrix

    model = load_robot_from_args(args)
    q, qd = _vectors(args, model, ("q", "qd"))
    values = {
        "D": inertia_matrix(model, q),
        "h": coriolis_centrifugal(model, q, qd),
        "c": gravity_torques(model, q),
        "C": coriolis_matrix(model, q, qd),
    }
    if args.tensor:
        values["h_ikm"] = coriolis_tensor(model, q)
    _note_zeros(args, ("qd",))
    if args.json:
        payload = {"robot": model.name, "joint_names": model.joint_names, "q": q.tolist(), "qd": qd.tolist()}
        payload |= {k: v.tolist() for k, v in values.items()}
        print(json.dumps(payload))
    else:
        print(f"robot {model.name} (tau = D qdd + h + c; h = C qd; Fu's letters)")
        print("\n".join(_matrix(k, v) for k, v in values.items()))
    return 0


def _run_fd(args: argparse.Namespace) -> int:
    from ..dynamics import forward_dynamics

    model = load_robot_from_args(args)
    q, qd, tau = _vectors(args, model, ("q", "qd", "tau"))
    qdd = forward_dynamics(model, q, qd, tau, friction=not args.no_friction)
    _note_zeros(args, ("qd", "tau"))
    if args.json:
        payload = {"robot": model.name, "joint_names": model.joint_names, "q": q.tolist(), "qd": qd.tolist()}
        print(json.dumps(payload | {"tau": tau.tolist(), "qdd": qdd.tolist()}))
    else:
        print(_table(model.joint_names, {"qdd": qdd}))
    return 0


def _run_task_space(args: argparse.Namespace) -> int:
    from ..dynamics import task_space

    model = load_robot_from_args(args)
    q, qd = _vectors(args, model, ("q", "qd"))
    link: str | int | None = int(args.link) if args.link is not None and args.link.isdigit() else args.link
    result = task_space(model, q, qd, link=link, axes=args.axes, inertia=args.inertia, rows=args.rows, rcond=args.rcond)
    _note_zeros(args, ("qd",))
    inertia: dict[str, Any] = {}
    if result.inertia is not None and result.condition is not None and result.rank is not None:
        condition = float(result.condition)
        inertia = {
            "operational_space_inertia": result.inertia.tolist(),
            "rows": list(result.rows),
            "condition": condition if np.isfinite(condition) else None,  # (JSON has no infinity)
            "rank": int(result.rank),
        }
    if args.json:
        payload: dict[str, Any] = {
            "robot": model.name,
            "link": result.link,
            "base_link": model.base_link,
            "axes": result.axes,
            "joint_names": model.joint_names,
            "q": q.tolist(),
            "qd": qd.tolist(),
            "pose": result.pose.tolist(),
            "jacobian": result.jacobian.tolist(),
            "jdot_qdot": result.jdot_qdot.tolist(),
        }
        print(json.dumps(payload | inertia))
        return 0
    axes = model.base_link if result.axes == "base" else result.link
    print(f"robot {model.name}: frame {result.link} in {model.base_link}; rows vx vy vz wx wy wz in {axes}'s axes")
    print(_matrix("pose", result.pose))
    print(_matrix(f"J (columns {' '.join(model.joint_names)})", result.jacobian))
    print(_matrix("Jdot qd", result.jdot_qdot))
    if inertia:
        rows = " ".join(("vx", "vy", "vz", "wx", "wy", "wz")[r] for r in result.rows)
        about = f"rows {rows}; condition {float(result.condition):.4g}, rank {inertia['rank']}"  # type: ignore[arg-type]
        print(_matrix(f"Lambda ({about})", result.inertia))  # type: ignore[arg-type]
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("id", help="inverse dynamics: joint torques for q, qd, qdd")
    _add_common(parser, [("qd", "joint velocities"), ("qdd", "joint accelerations")])
    parser.add_argument("--no-friction", action="store_true", help="rigid body (+ motor inertia) only")
    parser.add_argument("--smooth", action="store_true", help="chatter-free friction variants")
    parser.add_argument(
        "--wrench", nargs="+", metavar="V", help="tool load [fx fy fz nx ny nz] exerted on the environment"
    )
    parser.add_argument("--wrench-frame", choices=("tool", "base", "world"), default="tool")
    parser.add_argument("--breakdown", action="store_true", help="show the terms of the torque")
    parser.set_defaults(func=_run_id)

    parser = subparsers.add_parser("coefficients", help="D, h, c and the Coriolis matrix C at q, qd")
    _add_common(parser, [("qd", "joint velocities")])
    parser.add_argument("--tensor", action="store_true", help="also print h_ikm")
    parser.set_defaults(func=_run_coefficients)

    parser = subparsers.add_parser("fd", help="forward dynamics: joint accelerations for q, qd, tau")
    _add_common(parser, [("qd", "joint velocities"), ("tau", "joint torques")])
    parser.add_argument("--no-friction", action="store_true", help="ignore friction")
    parser.set_defaults(func=_run_fd)

    parser = subparsers.add_parser(
        "task-space", help="a frame's pose, Jacobian, Jdot qd and operational-space inertia at q, qd"
    )
    _add_common(parser, [("qd", "joint velocities")])
    parser.add_argument(
        "--link", metavar="L", help="a link of the chain (name, or index 0..n with 0 the base; default: the tip)"
    )
    parser.add_argument("--axes", choices=("base", "link"), default="base", help="axes of J, Jdot qd, Lambda")
    parser.add_argument("--inertia", action="store_true", help="also the operational-space inertia Lambda")
    parser.add_argument("--rows", choices=("all", "linear", "angular"), default=None, help="Lambda's task rows")
    parser.add_argument(
        "--rcond", type=float, default=None, help="Lambda: truncated pseudo-inverse where singular (default: error)"
    )
    parser.set_defaults(func=_run_task_space)
