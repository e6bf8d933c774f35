"""General chain robot files (YAML, ``format: chain``): any model, DH- or URDF-sourced, as written.

(The module is slightly longer than 400 lines because the loader and the writer of the one format
are kept side by side, so that every field is read and written in one place.)

A DH table cannot describe every chain (a URDF arm's joint origins are arbitrary transforms), so
identified models and other generated robots are written in this format, which is the model of
:mod:`robot_dynamics.model` one to one::

    format: chain
    name: panda_identified
    gravity: [0, 0, -9.81]                    # world frame
    base: {xyz: [0, 0, 0], rpy: [0, 0, 0]}    # pose of F_0 in the world
    tool: {xyz: [0, 0, 0.1], rpy: [0, 0, 0]}  # tool pose in F_n
    base_link: panda_link0                    # optional frame names
    tip_link: panda_hand
    motor_inertia_in_d: true
    smooth_kind: tanh                         # optional: tanh (default) | linear, the smooth friction's direction
    joints:
      - name: panda_joint1
        type: revolute                        # revolute | prismatic | continuous
        origin: {xyz: [0, 0, 0.333], rpy: [0, 0, 0]}   # X_i: pose of F_i in F_{i-1} at q_i = 0
        axis: [0, 0, 1]                       # in F_i
        limits: {lower: -2.9, upper: 2.9, velocity: 2.1, effort: 87}
        link: {name: panda_link1, mass: 4.97, com: [x, y, z], inertia: [Ixx, Iyy, Izz, Ixy, Iyz, Ixz]}
        motor: {Jm: ..., G: ..., B: ..., Tc: [Tc+, Tc-]}
        friction: {viscous: ..., coulomb: [Tc+, Tc-], smoothing_velocity: ..., ...}
    named_poses: {home: [0, 0, 0, 0, 0, 0, 0]}
    dh: {convention: standard, rows: [{type: revolute, a: 0, alpha: 1.5708, d: 0.67, theta: 0}, ...]}
    identified: {...}                         # free-form metadata (source robot, bags, method, date)
    provenance: {robot: panda.urdf, tip_link: panda_hand, locked_joints: {...}, joint_map: {...}}  # .provenance

Units are SI and radians throughout (no ``angle_unit``). Link inertial data are in the joint frame
``F_i`` (centre of mass ``com``, inertia about the centre of mass with ``F_i``'s axes, the URDF
convention), exactly :class:`robot_dynamics.model.Inertial`; the ``link``, ``limits``, ``motor`` and
``friction`` blocks are read by the same code as the DH YAML files (:mod:`.dh_yaml`), so they are
validated alike. The optional ``dh`` block keeps the DH table of a DH-sourced robot (used by the
symbolic generator and ``robot-dynamics show``); it must reproduce the joint origins, or loading
fails. :func:`dumps_chain_yaml` writes any model so that :func:`loads_chain_yaml` gives identical
dynamics (floats are written with Python's shortest round-trip repr).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ..errors import ModelError
from ..model import (
    SMOOTH_KINDS,
    DHRow,
    DHTable,
    FloatArray,
    Inertial,
    Joint,
    JointFriction,
    Limits,
    Motor,
    RobotModel,
)
from ..model import dh_joint_frames as _dh_joint_frames
from .dh_yaml import _friction, _limits, _link, _motor, _pose, _Reader, read_yaml
from .provenance import read_provenance
from .validation import (
    inertia_triangle_problem,
    require_list,
    require_mapping,
    require_str,
    require_vector,
    rotation_to_rpy,
)
from .yaml_text import read_text_file

FORMAT = "chain"
TOP_KEYS = (
    "format",
    "name",
    "reference",
    "notes",
    "gravity",
    "base",
    "tool",
    "base_link",
    "tip_link",
    "motor_inertia_in_d",
    "smooth_kind",
    "named_poses",
    "joints",
    "dh",
    "identified",
    "provenance",
)
JOINT_KEYS = ("name", "type", "origin", "axis", "limits", "link", "motor", "friction", "notes")
DH_KEYS = ("convention", "rows")
DH_ROW_KEYS = ("type", "a", "alpha", "d", "theta")
JOINT_TYPES = ("revolute", "prismatic", "continuous")
DH_ORIGIN_TOLERANCE = 1e-9  # m / rad: a ``dh`` block must reproduce the joint origins to this


# ----------------------------------------------------------------------------------------------
# loading
# ----------------------------------------------------------------------------------------------
def is_chain_document(data: object) -> bool:
    """Whether a parsed YAML document declares ``format: chain``."""
    return isinstance(data, Mapping) and data.get("format") == FORMAT


def load_chain_yaml(path: str | Path) -> RobotModel:
    file = Path(path)
    return parse_chain(read_yaml(read_text_file(file), file.name), source=file.name, location=str(file))


def loads_chain_yaml(text: str, source: str = "<yaml>") -> RobotModel:
    return parse_chain(read_yaml(text, source), source=source)


def chain_metadata(path: str | Path) -> dict[str, Any]:
    """The ``identified`` metadata block of a chain file (empty if it has none)."""
    file = Path(path)
    data = read_yaml(read_text_file(file), file.name)
    block = data.get("identified") if isinstance(data, Mapping) else None
    return dict(block) if isinstance(block, Mapping) else {}


def _joint(raw: object, source: str, path: str, names: list[str], link_names: list[str]) -> Joint:
    j = _Reader(raw, source, path, JOINT_KEYS, required=("name", "type", "origin"))
    kind = require_str(j.data["type"], source, j.at("type"), JOINT_TYPES)
    name = require_str(j.data["name"], source, j.at("name"))
    if not name.strip():
        raise ModelError(source, j.at("name"), "must not be empty")
    if name in names:
        raise ModelError(source, j.at("name"), f"duplicate joint name {name!r} (also joints[{names.index(name)}])")
    origin = _pose(j.data["origin"], source, j.at("origin"), 1.0)
    axis = j.vector("axis", 3, np.array([0.0, 0.0, 1.0]))
    if not np.linalg.norm(axis) > 0.0:
        raise ModelError(source, j.at("axis"), "must be a non-zero vector")
    inertial, link_name, _ = _link(j.data["link"], source, j.at("link")) if j.has("link") else (Inertial(), "", True)
    link_name = link_name or f"{name}_link"
    if link_name in link_names:
        raise ModelError(source, j.at("link.name"), f"duplicate link name {link_name!r}")
    limits = _limits(j.data["limits"], source, j.at("limits"), kind, 1.0) if j.has("limits") else Limits()
    motor = _motor(j.data["motor"], source, j.at("motor")) if j.has("motor") else None
    friction = _friction(j.data["friction"], source, j.at("friction")) if j.has("friction") else JointFriction()
    if j.has("notes"):
        require_str(j.data["notes"], source, j.at("notes"))
    names.append(name)
    link_names.append(link_name)
    return Joint(
        name=name,
        kind="prismatic" if kind == "prismatic" else "revolute",
        origin=origin,
        axis=axis,
        link=inertial,
        link_name=link_name,
        continuous=kind == "continuous",
        limits=limits,
        friction=friction,
        motor=motor,
    )


def _dh_table(value: object, source: str, joints: tuple[Joint, ...]) -> DHTable:
    r = _Reader(value, source, "dh", DH_KEYS, required=("convention", "rows"))
    convention = require_str(r.data["convention"], source, "dh.convention", ("standard", "modified"))
    raw_rows = require_list(r.data["rows"], source, "dh.rows")
    if len(raw_rows) != len(joints):
        raise ModelError(source, "dh.rows", f"{len(raw_rows)} rows for {len(joints)} joints")
    rows = []
    for k, raw in enumerate(raw_rows):
        row = _Reader(raw, source, f"dh.rows[{k}]", DH_ROW_KEYS, required=("type",))
        kind = require_str(row.data["type"], source, row.at("type"), ("revolute", "prismatic"))
        if kind != joints[k].kind:
            raise ModelError(source, row.at("type"), f"{kind} but joint {joints[k].name!r} is {joints[k].kind}")
        rows.append(DHRow(kind, row.float("a"), row.float("alpha"), row.float("d"), row.float("theta")))
    table = DHTable(convention, tuple(rows))  # type: ignore[arg-type]
    origins, _, _ = _dh_joint_frames(table)
    for k, (joint, origin) in enumerate(zip(joints, origins, strict=True)):
        error = float(np.max(np.abs(origin - joint.origin)))
        if error > DH_ORIGIN_TOLERANCE:
            raise ModelError(
                source, f"dh.rows[{k}]", f"does not reproduce the origin of joint {joint.name!r} (off by {error:.3g})"
            )
    return table


def parse_chain(data: object, source: str, location: str | None = None) -> RobotModel:
    """A model from a parsed ``format: chain`` document (errors name ``source`` and the field)."""
    top = _Reader(data, source, "", TOP_KEYS, required=("format", "name", "joints"))
    require_str(top.data["format"], source, "format", (FORMAT,))
    name = require_str(top.data["name"], source, "name")
    if not name.strip():
        raise ModelError(source, "name", "must not be empty")
    for text_key in ("reference", "notes", "base_link", "tip_link"):
        if top.has(text_key):
            require_str(top.data[text_key], source, text_key)
    if top.has("identified"):
        require_mapping(top.data["identified"], source, "identified")
    read_provenance(data, source)  # checked here; load_robot applies it to the chain options
    raw_joints = require_list(top.data["joints"], source, "joints")
    if not raw_joints:
        raise ModelError(source, "joints", "a robot needs at least one joint")
    names: list[str] = []
    link_names: list[str] = []
    joints = tuple(_joint(raw, source, f"joints[{i}]", names, link_names) for i, raw in enumerate(raw_joints))
    base_link = str(top.data.get("base_link", "base_link"))
    if base_link in link_names:
        raise ModelError(source, "base_link", f"{base_link!r} is also the name of a joint's link")
    poses: dict[str, FloatArray] = {}
    if top.has("named_poses"):
        for pose_name, values in require_mapping(top.data["named_poses"], source, "named_poses").items():
            where = f"named_poses.{pose_name}"
            q = require_vector(values, len(joints), source, where)
            for k, joint in enumerate(joints):
                lim = joint.limits
                tol = 1e-9 * max(1.0, abs(q[k]))
                if not lim.lower - tol <= q[k] <= lim.upper + tol:
                    raise ModelError(
                        source,
                        f"{where}[{k}]",
                        f"{q[k]:g} is outside the limits of joint {joint.name!r} [{lim.lower:g}, {lim.upper:g}]",
                    )
            poses[str(pose_name)] = q
    motor_in_d = top.data.get("motor_inertia_in_d", True)
    if not isinstance(motor_in_d, bool):
        raise ModelError(source, "motor_inertia_in_d", f"expected true or false, got {motor_in_d!r}")
    return RobotModel(
        name=name,
        joints=joints,
        gravity=top.vector("gravity", 3, np.array([0.0, 0.0, -9.81])),
        base=_pose(top.data["base"], source, "base", 1.0) if top.has("base") else np.eye(4),
        tool=_pose(top.data["tool"], source, "tool", 1.0) if top.has("tool") else np.eye(4),
        source=location or source,
        dh=_dh_table(top.data["dh"], source, joints) if top.has("dh") else None,
        named_poses=poses,
        motor_inertia_in_d=motor_in_d,
        base_link=base_link,
        tip_link=str(top.data.get("tip_link", "")),
        smooth_kind=require_str(top.data.get("smooth_kind", "tanh"), source, "smooth_kind", SMOOTH_KINDS),
    )


# ----------------------------------------------------------------------------------------------
# writing
# ----------------------------------------------------------------------------------------------
def _f(value: float) -> float:
    """A plain float (YAML writes numpy scalars as tagged objects); -0.0 written as 0.0."""
    number = float(value)
    return 0.0 if number == 0.0 else number


def _list(values: FloatArray | tuple[float, ...]) -> list[float]:
    return [_f(v) for v in np.asarray(values, dtype=float).reshape(-1)]


def _pose_block(pose: FloatArray) -> dict[str, list[float]]:
    return {"xyz": _list(pose[:3, 3]), "rpy": _list(np.array(rotation_to_rpy(pose[:3, :3])))}


def _link_block(joint: Joint) -> dict[str, Any]:
    i = joint.link.inertia
    block: dict[str, Any] = {
        "name": joint.link_name,
        "mass": _f(joint.link.mass),
        "com": _list(joint.link.com),
        "inertia": _list(np.array([i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[1, 2], i[0, 2]])),
    }
    if inertia_triangle_problem(joint.link.inertia) is not None:
        block["check_triangle_inequality"] = False  # kept as given (e.g. published non-physical data)
    return block


def _limits_block(limits: Limits, continuous: bool) -> dict[str, float]:
    keys = ("velocity", "effort") if continuous else ("lower", "upper", "velocity", "effort")
    return {k: _f(getattr(limits, k)) for k in keys if math.isfinite(getattr(limits, k))}


def _motor_block(motor: Motor) -> dict[str, Any]:
    return {
        "Jm": _f(motor.inertia),
        "G": _f(motor.gear_ratio),
        "B": _f(motor.viscous),
        "Tc": _list(motor.coulomb),
    }


def _friction_block(friction: JointFriction) -> dict[str, Any]:
    block: dict[str, Any] = {
        "viscous": _f(friction.viscous),
        "coulomb": _list(friction.coulomb),
        "smoothing_velocity": _f(friction.smoothing_velocity),
    }
    if friction.static is not None:
        block["static"] = _list(friction.static)
    if friction.stribeck_velocity:
        block["stribeck_velocity"] = _f(friction.stribeck_velocity)
    if friction.offset:
        block["offset"] = _f(friction.offset)
    if friction.bearing is not None:
        b = friction.bearing
        block["bearing"] = {"kind": b.kind, "mu": _f(b.mu), "radius": _f(b.radius), "spacing": _f(b.spacing)}
    if friction.transmission is not None:
        t = friction.transmission
        block["transmission"] = {
            "efficiency": [[_f(r), _f(e)] for r, e in t.efficiency],
            "breakaway": _f(t.breakaway),
            "max_torque": _f(t.max_torque),
        }
    return block


def chain_document(
    model: RobotModel,
    *,
    identified: Mapping[str, Any] | None = None,
    notes: str | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``format: chain`` document of ``model`` (a plain dict ready for ``yaml.safe_dump``)."""
    doc: dict[str, Any] = {"format": FORMAT, "name": model.name}
    if notes:
        doc["notes"] = notes
    doc["gravity"] = _list(model.gravity)
    doc["base"] = _pose_block(model.base)
    doc["tool"] = _pose_block(model.tool)
    doc["base_link"] = model.base_link
    if model.tip_link:
        doc["tip_link"] = model.tip_link
    doc["motor_inertia_in_d"] = bool(model.motor_inertia_in_d)
    if model.smooth_kind != "tanh":
        doc["smooth_kind"] = model.smooth_kind
    joints = []
    for joint in model.joints:
        entry: dict[str, Any] = {
            "name": joint.name,
            "type": "prismatic" if joint.is_prismatic else ("continuous" if joint.continuous else "revolute"),
            "origin": _pose_block(joint.origin),
            "axis": _list(joint.axis),
        }
        limits = _limits_block(joint.limits, joint.continuous)
        if limits:
            entry["limits"] = limits
        entry["link"] = _link_block(joint)
        if joint.motor is not None:
            entry["motor"] = _motor_block(joint.motor)
        if joint.friction != JointFriction():
            entry["friction"] = _friction_block(joint.friction)
        joints.append(entry)
    doc["joints"] = joints
    if model.named_poses:
        doc["named_poses"] = {k: _list(v) for k, v in model.named_poses.items()}
    if model.dh is not None:
        doc["dh"] = {
            "convention": model.dh.convention,
            "rows": [
                {"type": r.kind, "a": _f(r.a), "alpha": _f(r.alpha), "d": _f(r.d), "theta": _f(r.theta)}
                for r in model.dh.rows
            ],
        }
    if identified:
        doc["identified"] = _plain(identified)
    if provenance:
        doc["provenance"] = _plain(provenance)
    return doc


def _plain(value: Any) -> Any:
    """Metadata as YAML-safe built-ins (numpy arrays/scalars to lists/floats)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


def dumps_chain_yaml(
    model: RobotModel,
    *,
    identified: Mapping[str, Any] | None = None,
    header: str = "",
    notes: str | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> str:
    """``model`` as ``format: chain`` YAML text; ``header`` lines are written as leading comments;
    ``provenance``: the block of :class:`.provenance.Provenance` (how the chain was chosen)."""
    text = yaml.safe_dump(
        chain_document(model, identified=identified, notes=notes, provenance=provenance),
        sort_keys=False,
        default_flow_style=None,
        width=120,
        allow_unicode=True,
    )
    comments = "".join(f"# {line}\n".replace("# \n", "#\n") for line in header.splitlines())
    return comments + text


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Writes ``text`` to ``path`` through a temporary file in the same directory and a rename."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


def write_chain_yaml(
    path: str | Path,
    model: RobotModel,
    *,
    identified: Mapping[str, Any] | None = None,
    header: str = "",
    notes: str | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> Path:
    """Writes ``model`` as a chain YAML file atomically (temporary file + rename)."""
    text = dumps_chain_yaml(model, identified=identified, header=header, notes=notes, provenance=provenance)
    return write_text_atomic(path, text)
