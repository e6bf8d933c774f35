"""DH-table robot files (YAML): standard (distal) and modified (proximal, Craig) conventions.

The format is documented in ``docs/models.md`` and, as a JSON schema, in
``docs/robot-dh.schema.json``. In short::

    name: puma560
    convention: standard          # or modified
    angle_unit: deg               # optional, default rad
    gravity: [0, 0, -9.81]        # world frame, optional
    base: {xyz: [0, 0, 0], rpy: [0, 0, 0]}   # optional, pose of frame 0 in the world
    tool: {xyz: [0, 0, 0.1], rpy: [0, 0, 0]} # optional, tool pose in the last DH frame
    joints:
      - name: joint1
        type: revolute            # revolute | prismatic | continuous
        a: 0                      # standard: a_i, alpha_i; modified: a_{i-1}, alpha_{i-1}
        alpha: 90
        d: 0.67183                # the offset added to q for a prismatic joint
        theta: 0                  # the offset added to q for a revolute joint
        limits: {lower: -160, upper: 160, velocity: ..., effort: ...}
        link: {mass: ..., com: [x, y, z], inertia: [Ixx, Iyy, Izz, Ixy, Iyz, Ixz]}   # in DH frame i
        motor: {Jm: ..., G: ..., B: ..., Tc: [Tc+, Tc-]}
        friction: {viscous: ..., coulomb: ..., static: ..., stribeck_velocity: ..., bearing: {...},
                   transmission: {...}, offset: ...}   # offset: a constant torque the drive applies
    named_poses: {qz: [0, 0, 0, 0, 0, 0]}

Link inertial data are given in DH frame ``i`` (the frame the textbooks use) and transformed into
the model's joint frames by :func:`robot_dynamics.model.from_dh` (never copied).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelError
from ..model import (
    SMOOTH_KINDS,
    BearingFriction,
    DHRow,
    DHTable,
    FloatArray,
    Inertial,
    JointFriction,
    Limits,
    Motor,
    RobotModel,
    TransmissionFriction,
    from_dh,
)
from .validation import (
    check_keys,
    check_limits,
    check_mass,
    inertia_definiteness_problem,
    inertia_from_six,
    inertia_triangle_problem,
    pose_matrix,
    require_bool,
    require_float,
    require_int,
    require_list,
    require_mapping,
    require_str,
    require_vector,
)
from .yaml_text import read_text_file, read_yaml

TOP_KEYS = (
    "name",
    "reference",
    "notes",
    "convention",
    "angle_unit",
    "dof",
    "gravity",
    "base",
    "tool",
    "motor_inertia_in_d",
    "smooth_kind",
    "named_poses",
    "joints",
)
JOINT_KEYS = ("name", "type", "a", "alpha", "d", "theta", "limits", "link", "motor", "friction", "notes")
LINK_KEYS = ("name", "mass", "com", "inertia", "check_triangle_inequality", "notes")
LIMIT_KEYS = ("lower", "upper", "velocity", "effort")
MOTOR_KEYS = ("Jm", "G", "B", "Tc")
FRICTION_KEYS = (
    "viscous",
    "coulomb",
    "static",
    "stribeck_velocity",
    "smoothing_velocity",
    "bearing",
    "transmission",
    "offset",
    "notes",
)
BEARING_KEYS = ("kind", "mu", "radius", "spacing")
TRANSMISSION_KEYS = ("efficiency", "breakaway", "max_torque")
POSE_KEYS = ("xyz", "rpy")
JOINT_TYPES = ("revolute", "prismatic", "continuous")
RESERVED_LINK_NAMES = ("base_link", "tool", "world")


def load_dh_yaml(path: str | Path) -> RobotModel:
    """Load a DH YAML robot file."""
    file = Path(path)
    return parse_dh(read_yaml(read_text_file(file), file.name), source=file.name, location=str(file))


def loads_dh_yaml(text: str, source: str = "<yaml>") -> RobotModel:
    """Load a DH robot from YAML text."""
    return parse_dh(read_yaml(text, source), source=source)


# ----------------------------------------------------------------------------------------------
# parsing
# ----------------------------------------------------------------------------------------------
class _Reader:
    """Typed access to one mapping of the file, with the field path for error messages."""

    def __init__(self, value: object, source: str, path: str, keys: tuple[str, ...], required: tuple[str, ...] = ()):
        self.source = source
        self.path = path
        self.data = require_mapping(value, source, path)
        check_keys(self.data, keys, source, path, required)

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return key in self.data

    def float(self, key: str, default: float = 0.0, **checks: Any) -> float:
        if key not in self.data:
            return default
        return require_float(self.data[key], self.source, self.at(key), **checks)

    def vector(self, key: str, length: int, default: FloatArray) -> FloatArray:
        if key not in self.data:
            return default
        return require_vector(self.data[key], length, self.source, self.at(key))


def _signed_pair(value: object, source: str, path: str) -> tuple[float, float]:
    """A Coulomb-like level: a scalar ``c >= 0`` (symmetric) or a pair ``[c+, c-]`` with ``c+ >= 0 >= c-``."""
    if isinstance(value, (list, tuple)):
        plus, minus = require_vector(value, 2, source, path)
        if plus < 0.0:
            raise ModelError(source, f"{path}[0]", f"the positive-direction level must be >= 0, got {plus:g}")
        if minus > 0.0:
            raise ModelError(source, f"{path}[1]", f"the negative-direction level must be <= 0, got {minus:g}")
        return float(plus), float(minus)
    level = require_float(value, source, path)
    if level < 0.0:
        raise ModelError(source, path, f"a symmetric level must be >= 0, got {level:g} (use [c+, c-] for asymmetric)")
    return level, -level


def _pose(value: object, source: str, path: str, scale: float) -> FloatArray:
    r = _Reader(value, source, path, POSE_KEYS)
    xyz = r.vector("xyz", 3, np.zeros(3))
    rpy = r.vector("rpy", 3, np.zeros(3)) * scale
    return pose_matrix(xyz, rpy)


def _link(value: object, source: str, path: str) -> tuple[Inertial, str, bool]:
    r = _Reader(value, source, path, LINK_KEYS)
    mass = r.float("mass")
    check_mass(mass, source, r.at("mass"))
    com = r.vector("com", 3, np.zeros(3))
    inertia: FloatArray = np.zeros((3, 3))
    if r.has("inertia"):
        inertia = inertia_from_six(require_vector(r.data["inertia"], (3, 6), source, r.at("inertia")))
    check_triangle = require_bool(
        r.data.get("check_triangle_inequality", True), source, r.at("check_triangle_inequality")
    )
    problem = inertia_definiteness_problem(inertia)
    if problem is None and check_triangle:
        problem = inertia_triangle_problem(inertia)
        if problem is not None:
            problem += " (to keep published non-physical data, set check_triangle_inequality: false on this link)"
    if problem is not None:
        raise ModelError(source, r.at("inertia"), problem)
    name = require_str(r.data["name"], source, r.at("name")) if r.has("name") else ""
    return Inertial(mass, com, inertia), name, check_triangle


def _limits(value: object, source: str, path: str, kind: str, scale: float) -> Limits:
    r = _Reader(value, source, path, LIMIT_KEYS)
    if kind == "continuous" and (r.has("lower") or r.has("upper")):
        raise ModelError(source, path, "a continuous joint has no position limits (use type: revolute)")
    angle = scale if kind != "prismatic" else 1.0
    lower = r.float("lower", -math.inf, allow_infinite=True) * angle
    upper = r.float("upper", math.inf, allow_infinite=True) * angle
    check_limits(lower, upper, source, path)
    velocity = r.float("velocity", math.inf, positive=True, allow_infinite=True) * angle
    effort = r.float("effort", math.inf, positive=True, allow_infinite=True)
    return Limits(lower=lower, upper=upper, velocity=velocity, effort=effort)


def _motor(value: object, source: str, path: str) -> Motor:
    r = _Reader(value, source, path, MOTOR_KEYS, required=("Jm",))
    jm = r.float("Jm", minimum=0.0)
    gear = r.float("G", 1.0)
    if gear == 0.0:
        raise ModelError(source, r.at("G"), "gear ratio must be non-zero")
    viscous = r.float("B", 0.0, minimum=0.0)
    coulomb = _signed_pair(r.data["Tc"], source, r.at("Tc")) if r.has("Tc") else (0.0, 0.0)
    return Motor(inertia=jm, gear_ratio=gear, viscous=viscous, coulomb=coulomb)


def _friction(value: object, source: str, path: str) -> JointFriction:
    r = _Reader(value, source, path, FRICTION_KEYS)
    viscous = r.float("viscous", 0.0, minimum=0.0)
    coulomb = _signed_pair(r.data["coulomb"], source, r.at("coulomb")) if r.has("coulomb") else (0.0, 0.0)
    static = None
    if r.has("static") and r.data["static"] is not None:
        static = _signed_pair(r.data["static"], source, r.at("static"))
    stribeck = r.float("stribeck_velocity", 0.0, minimum=0.0)
    if static is not None and stribeck <= 0.0:
        raise ModelError(source, r.at("stribeck_velocity"), "a static friction level needs stribeck_velocity > 0")
    smoothing = r.float("smoothing_velocity", 0.01, positive=True)
    offset = r.float("offset", 0.0)
    bearing = _bearing(r.data["bearing"], source, r.at("bearing")) if r.has("bearing") else None
    transmission = (
        _transmission(r.data["transmission"], source, r.at("transmission")) if r.has("transmission") else None
    )
    return JointFriction(
        viscous=viscous,
        coulomb=coulomb,
        static=static,
        stribeck_velocity=stribeck,
        smoothing_velocity=smoothing,
        bearing=bearing,
        transmission=transmission,
        offset=offset,
    )


def _bearing(value: object, source: str, path: str) -> BearingFriction:
    r = _Reader(value, source, path, BEARING_KEYS, required=("kind", "mu"))
    kind = require_str(r.data["kind"], source, r.at("kind"), ("journal", "linear", "thrust"))
    mu = r.float("mu", minimum=0.0)
    radius = r.float("radius", 0.0, minimum=0.0)
    spacing = r.float("spacing", 0.0, minimum=0.0)
    if kind in ("journal", "thrust") and radius <= 0.0:
        raise ModelError(source, r.at("radius"), f"a {kind} bearing needs radius > 0")
    if kind in ("journal", "linear") and spacing <= 0.0:
        raise ModelError(source, r.at("spacing"), f"a {kind} bearing needs spacing > 0 (distance between the bearings)")
    return BearingFriction(kind=kind, mu=mu, radius=radius, spacing=spacing)  # type: ignore[arg-type]


def _transmission(value: object, source: str, path: str) -> TransmissionFriction:
    r = _Reader(value, source, path, TRANSMISSION_KEYS, required=("efficiency", "breakaway", "max_torque"))
    points = require_list(r.data["efficiency"], source, r.at("efficiency"))
    if not points:
        raise ModelError(source, r.at("efficiency"), "needs at least one [torque_ratio, efficiency] point")
    curve: list[tuple[float, float]] = []
    for k, point in enumerate(points):
        where = f"{r.at('efficiency')}[{k}]"
        ratio, eta = require_vector(point, 2, source, where)
        if ratio < 0.0:
            raise ModelError(source, f"{where}[0]", f"torque ratio tau_out/tau_max must be >= 0, got {ratio:g}")
        if not 0.0 < eta <= 1.0:
            raise ModelError(source, f"{where}[1]", f"efficiency must be in (0, 1], got {eta:g}")
        if curve and ratio <= curve[-1][0]:
            raise ModelError(source, f"{where}[0]", "torque ratios must be strictly ascending")
        curve.append((float(ratio), float(eta)))
    breakaway = r.float("breakaway", minimum=0.0)
    max_torque = r.float("max_torque", positive=True)
    return TransmissionFriction(efficiency=tuple(curve), breakaway=breakaway, max_torque=max_torque)


def parse_dh(data: object, source: str, location: str | None = None) -> RobotModel:
    """Build a model from the parsed YAML document ``data`` (errors name ``source``).

    ``location`` (the file path) becomes ``model.source``; default ``source``.
    """
    top = _Reader(data, source, "", TOP_KEYS, required=("name", "convention", "joints"))
    name = require_str(top.data["name"], source, "name")
    if not name.strip():
        raise ModelError(source, "name", "must not be empty")
    convention = require_str(top.data["convention"], source, "convention", ("standard", "modified"))
    unit = require_str(top.data.get("angle_unit", "rad"), source, "angle_unit", ("rad", "deg"))
    scale = math.pi / 180.0 if unit == "deg" else 1.0
    for text_key in ("reference", "notes"):
        if top.has(text_key):
            require_str(top.data[text_key], source, text_key)

    raw_joints = require_list(top.data["joints"], source, "joints")
    if not raw_joints:
        raise ModelError(source, "joints", "a robot needs at least one joint")
    if top.has("dof"):
        dof = require_int(top.data["dof"], source, "dof", minimum=1)
        if dof != len(raw_joints):
            raise ModelError(source, "dof", f"dof is {dof} but {len(raw_joints)} joints are listed")

    rows: list[DHRow] = []
    links: list[Inertial] = []
    names: list[str] = []
    link_names: list[str] = []
    kinds: list[str] = []
    limits: list[Limits] = []
    frictions: list[JointFriction] = []
    motors: list[Motor | None] = []
    for i, raw in enumerate(raw_joints):
        path = f"joints[{i}]"
        j = _Reader(raw, source, path, JOINT_KEYS, required=("type",))
        kind = require_str(j.data["type"], source, j.at("type"), JOINT_TYPES)
        joint_name = require_str(j.data["name"], source, j.at("name")) if j.has("name") else f"joint{i + 1}"
        if not joint_name.strip():
            raise ModelError(source, j.at("name"), "must not be empty")
        if joint_name in names:
            raise ModelError(
                source, j.at("name"), f"duplicate joint name {joint_name!r} (also joints[{names.index(joint_name)}])"
            )
        rows.append(
            DHRow(
                kind="prismatic" if kind == "prismatic" else "revolute",
                a=j.float("a"),
                alpha=j.float("alpha") * scale,
                d=j.float("d"),
                theta=j.float("theta") * scale,
            )
        )
        inertial, link_name, _ = (
            _link(j.data["link"], source, j.at("link")) if j.has("link") else (Inertial(), "", True)
        )
        link_name = link_name or f"link{i + 1}"
        if link_name in RESERVED_LINK_NAMES:
            raise ModelError(source, j.at("link.name"), f"{link_name!r} is reserved (base, tool and world frames)")
        if link_name in link_names:
            raise ModelError(source, j.at("link.name"), f"duplicate link name {link_name!r}")
        limits.append(_limits(j.data["limits"], source, j.at("limits"), kind, scale) if j.has("limits") else Limits())
        motors.append(_motor(j.data["motor"], source, j.at("motor")) if j.has("motor") else None)
        frictions.append(
            _friction(j.data["friction"], source, j.at("friction")) if j.has("friction") else JointFriction()
        )
        if j.has("notes"):
            require_str(j.data["notes"], source, j.at("notes"))
        links.append(inertial)
        names.append(joint_name)
        link_names.append(link_name)
        kinds.append(kind)
    n = len(rows)

    gravity = top.vector("gravity", 3, np.array([0.0, 0.0, -9.81]))
    base = _pose(top.data["base"], source, "base", scale) if top.has("base") else None
    tool = _pose(top.data["tool"], source, "tool", scale) if top.has("tool") else None
    motor_in_d = require_bool(top.data.get("motor_inertia_in_d", True), source, "motor_inertia_in_d")
    smooth_kind = require_str(top.data.get("smooth_kind", "tanh"), source, "smooth_kind", SMOOTH_KINDS)

    poses: dict[str, FloatArray] = {}
    if top.has("named_poses"):
        raw_poses = require_mapping(top.data["named_poses"], source, "named_poses")
        for pose_name, values in raw_poses.items():
            where = f"named_poses.{pose_name}"
            q = require_vector(values, n, source, where)
            q = np.array([v * scale if kinds[k] != "prismatic" else v for k, v in enumerate(q)])
            for k in range(n):
                lim = limits[k]
                tol = 1e-9 * max(1.0, abs(q[k]))
                if not lim.lower - tol <= q[k] <= lim.upper + tol:
                    unit_scale = scale if kinds[k] != "prismatic" else 1.0
                    raise ModelError(
                        source,
                        f"{where}[{k}]",
                        f"{q[k] / unit_scale:g} is outside the limits of joint {names[k]!r} "
                        f"[{lim.lower / unit_scale:g}, {lim.upper / unit_scale:g}]",
                    )
            poses[pose_name] = q

    model = from_dh(
        name,
        DHTable(convention=convention, rows=tuple(rows)),  # type: ignore[arg-type]
        links,
        joint_names=names,
        limits=limits,
        friction=frictions,
        motors=motors,
        gravity=gravity,
        base=base,
        tool=tool,
        named_poses=poses,
        source=location or source,
    )
    joints = tuple(
        replace(joint, link_name=link_names[i], continuous=kinds[i] == "continuous")
        for i, joint in enumerate(model.joints)
    )
    return model.with_changes(joints=joints, motor_inertia_in_d=motor_in_d, smooth_kind=smooth_kind)
