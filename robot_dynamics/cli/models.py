"""``robot-dynamics info ROBOT`` and ``robot-dynamics export-urdf ROBOT [--out FILE]``.

ROBOT is a bundled robot name (``robot-dynamics info --list`` lists them), a DH YAML file, or a
URDF file (``--base-link``/``--tip-link`` choose its chain).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..model import Joint, RobotModel, dh_joint_frames
from ..models.export_urdf import model_to_urdf
from ..models.robots import DEFAULT_ROBOT, bundled_robots
from ..models.yaml_text import read_text_file, read_yaml
from ._options import add_robot_options, load_robot_from_args


def dh_reference(path: str | Path) -> str:
    """The ``reference`` (citation) of a DH YAML file, or an empty string."""
    file = Path(path)
    data = read_yaml(read_text_file(file), file.name)
    if isinstance(data, Mapping) and isinstance(data.get("reference"), str):
        return str(data["reference"]).strip()
    return ""


def register(subparsers: argparse._SubParsersAction) -> None:
    info = subparsers.add_parser("info", help="print a robot's chain, masses, limits, motors and named poses")
    add_robot_options(info, positional=True, joint_map=False)
    info.add_argument("--list", action="store_true", help="list the bundled robots and exit")
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    info.set_defaults(func=run_info)

    export = subparsers.add_parser("export-urdf", help="write a robot (e.g. a DH YAML robot) as URDF")
    add_robot_options(export, positional=True, joint_map=False)
    export.add_argument("--out", "-o", default=None, help="output file (default: standard output)")
    export.add_argument("--no-visuals", action="store_true", help="omit the cylinder visuals")
    export.set_defaults(func=run_export)


def run_export(args: argparse.Namespace) -> int:
    model = load_robot_from_args(args)
    text = model_to_urdf(model, visuals=not args.no_visuals)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out} ({model.name}, {model.dof} joints)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _vec(values: np.ndarray, digits: int = 4) -> str:
    scale = max(1.0, float(np.max(np.abs(values)))) if len(values) else 1.0
    return "[" + ", ".join(f"{(v if abs(v) > 1e-12 * scale else 0.0):.{digits}g}" for v in values) + "]"


def _limit_text(joint: Joint) -> tuple[str, str]:
    lim = joint.limits

    def one(value: float) -> str:
        if math.isinf(value):
            return "-inf" if value < 0 else "inf"
        return f"{value:.4g} m" if joint.is_prismatic else f"{math.degrees(value):.4g} deg"

    if joint.continuous:
        return "continuous", ""
    return one(lim.lower), one(lim.upper)


def _motor_text(joint: Joint) -> str:
    m = joint.motor
    if m is None:
        return "-"
    text = f"Jm={m.inertia:.4g} G={m.gear_ratio:.6g}"
    if m.viscous:
        text += f" B={m.viscous:.4g}"
    if any(m.coulomb):
        text += f" Tc=[{m.coulomb[0]:.4g}, {m.coulomb[1]:.4g}]"
    return text


def _friction_text(joint: Joint) -> str:
    f = joint.friction
    parts = []
    if f.viscous:
        parts.append(f"viscous {f.viscous:.4g}")
    if any(f.coulomb):
        parts.append(f"coulomb [{f.coulomb[0]:.4g}, {f.coulomb[1]:.4g}]")
    if f.offset:
        parts.append(f"offset {f.offset:.4g} (applied by the drive)")
    if f.static is not None:
        parts.append(f"static [{f.static[0]:.4g}, {f.static[1]:.4g}] (stribeck velocity {f.stribeck_velocity:.4g})")
    if f.bearing is not None:
        b = f.bearing
        parts.append(f"{b.kind} bearing mu={b.mu:.4g} r={b.radius:.4g} d={b.spacing:.4g}")
    if f.transmission is not None:
        t = f.transmission
        parts.append(
            f"transmission tau_B={t.breakaway:.4g} tau_max={t.max_torque:.4g} ({len(t.efficiency)}-point efficiency)"
        )
    return "; ".join(parts)


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    return ["  ".join(cell.ljust(widths[k]) for k, cell in enumerate(row)).rstrip() for row in rows]


def describe(model: RobotModel) -> str:
    """The text ``robot-dynamics info`` prints."""
    lines = [f"robot:      {model.name}", f"source:     {model.source or '-'}"]
    source_path = Path(model.source) if model.source and not model.source.startswith("<") else None
    if model.dh is not None and source_path is not None and source_path.suffix in (".yaml", ".yml"):
        reference = " ".join(dh_reference(source_path).split())
        if reference:
            lines.append(f"reference:  {reference}")
    convention = f"{model.dh.convention} DH" if model.dh is not None else "URDF"
    lines += [
        f"convention: {convention}",
        f"dof:        {model.dof}",
        f"gravity:    {_vec(model.gravity)} m/s^2 (world frame)",
        f"chain:      {model.base_link} -> {model.tip_link}",
        f"motor inertia G^2 Jm in D: {'yes' if model.motor_inertia_in_d else 'no'}"
        + ("" if model.has_motors else " (no motor data)"),
        "",
    ]
    # centres of mass as a user wrote them: in DH frame i for DH robots, in the joint (URDF link) frame else
    link_poses = dh_joint_frames(model.dh)[1] if model.dh is not None else [np.eye(4)] * model.dof
    com_label = "com/m (DH frame i)" if model.dh is not None else "com/m (link frame)"
    rows = [["#", "joint", "type", "axis", "lower", "upper", "link", "mass/kg", com_label, "motor"]]
    for i, j in enumerate(model.joints):
        pose = link_poses[i]
        com = pose[:3, :3].T @ (j.link.com - pose[:3, 3])
        lower, upper = _limit_text(j)
        kind = "prismatic" if j.is_prismatic else ("continuous" if j.continuous else "revolute")
        rows.append(
            [
                str(i + 1),
                j.name,
                kind,
                _vec(j.axis, 3),
                lower,
                upper,
                j.link_name,
                f"{j.link.mass:.4g}",
                _vec(com),
                _motor_text(j),
            ]
        )
    lines += _table(rows)
    frictions = [(j.name, _friction_text(j)) for j in model.joints]
    frictions = [(name, text) for name, text in frictions if text]
    if frictions:
        lines += ["", f"friction (smooth direction function: {model.smooth_kind}):"]
        lines += [f"  {name}: {text}" for name, text in frictions]
    if model.named_poses:
        lines += ["", "named poses (rad, m):"]
        for name, q in model.named_poses.items():
            lines.append(f"  {name}: {_vec(q)}")
    return "\n".join(lines) + "\n"


def _motor_json(m: Any) -> dict[str, Any]:
    return {"inertia": m.inertia, "gear_ratio": m.gear_ratio, "viscous": m.viscous, "coulomb": list(m.coulomb)}


def _friction_json(joint: Joint) -> dict[str, Any]:
    """Every joint-side friction parameter as numbers (SI, joint side), the same fields as the model's
    ``JointFriction``: ``static`` and the blocks ``null`` when absent; ``smoothing_velocity`` is the
    width of the smooth (tanh) compensation the nodes use."""
    f = joint.friction
    b, t = f.bearing, f.transmission
    return {
        "viscous": float(f.viscous),
        "coulomb": [float(v) for v in f.coulomb],
        "static": None if f.static is None else [float(v) for v in f.static],
        "stribeck_velocity": float(f.stribeck_velocity),
        "smoothing_velocity": float(f.smoothing_velocity),
        "offset": float(f.offset),
        "bearing": None
        if b is None
        else {"kind": b.kind, "mu": float(b.mu), "radius": float(b.radius), "spacing": float(b.spacing)},
        "transmission": None
        if t is None
        else {
            "efficiency": [[float(x), float(eta)] for x, eta in t.efficiency],
            "breakaway": float(t.breakaway),
            "max_torque": float(t.max_torque),
        },
    }


def as_json(model: RobotModel) -> dict[str, Any]:
    """What ``robot-dynamics info --json`` prints: SI units (rad, m, kg), ``com`` in the joint frame
    ``F_i`` (the model's frame; ``info`` prints DH frame ``i`` for DH robots), limits ``null`` when
    infinite or continuous, joint friction as numbers (every ``JointFriction`` field, the smoothing
    velocity of the nodes' smooth compensation included)."""

    def finite(value: float) -> float | None:
        return float(value) if math.isfinite(value) else None

    joints = []
    for j in model.joints:
        m = j.motor
        joints.append(
            {
                "name": j.name,
                "type": "prismatic" if j.is_prismatic else "revolute",
                "continuous": bool(j.continuous),
                "axis": j.axis.tolist(),
                "lower": None if j.continuous else finite(j.limits.lower),
                "upper": None if j.continuous else finite(j.limits.upper),
                "link": j.link_name,
                "mass": float(j.link.mass),
                "com": j.link.com.tolist(),
                "motor": None if m is None else _motor_json(m),
                "friction": _friction_json(j),
            }
        )
    return {
        "robot": model.name,
        "source": model.source,
        "convention": f"{model.dh.convention} DH" if model.dh is not None else "URDF",
        "dof": model.dof,
        "gravity": model.gravity.tolist(),
        "base_link": model.base_link,
        "tip_link": model.tip_link,
        "motor_inertia_in_d": model.motor_inertia_in_d,
        "smooth_kind": model.smooth_kind,
        "joint_names": model.joint_names,
        "joints": joints,
        "named_poses": {name: q.tolist() for name, q in model.named_poses.items()},
    }


def run_info(args: argparse.Namespace) -> int:
    if args.list:
        names = bundled_robots()
        if args.json:
            print(json.dumps({"robots": names, "default": DEFAULT_ROBOT}))
            return 0
        for name in names:
            marker = " (default)" if name == DEFAULT_ROBOT else ""
            print(f"{name}{marker}")
        return 0
    model = load_robot_from_args(args)
    if args.json:
        print(json.dumps(as_json(model)))
    else:
        sys.stdout.write(describe(model))
    return 0
