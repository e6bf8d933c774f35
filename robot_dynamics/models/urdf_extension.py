"""The ``<robot_dynamics>`` URDF extension written by :mod:`robot_dynamics.models.export_urdf`.

It carries what URDF cannot express (gravity, motor data, the full friction parameters, named
poses); other URDF tools ignore it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lxml import etree

from ..errors import ModelError
from ..model import SMOOTH_KINDS, BearingFriction, FloatArray, JointFriction, Motor, TransmissionFriction
from .urdf_parse import EXTENSION_TAG, number, numbers


@dataclass
class Extension:
    gravity: FloatArray | None = None
    motor_inertia_in_d: bool = True
    smooth_kind: str = "tanh"
    motors: dict[str, Motor] = field(default_factory=dict)
    frictions: dict[str, JointFriction] = field(default_factory=dict)
    named_poses: list[tuple[str, list[str], FloatArray]] = field(default_factory=list)


def _pair(element: etree._Element, attribute: str, source: str, path: str) -> tuple[float, float]:
    plus, minus = numbers(element, attribute, 2, source, path, "0 0")
    if plus < 0.0 or minus > 0.0:
        raise ModelError(source, f"{path}@{attribute}", f"expected 'c+ c-' with c+ >= 0 >= c-, got {plus:g} {minus:g}")
    return float(plus), float(minus)


def read_extension(root: etree._Element, source: str) -> Extension:
    ext = Extension()
    element = root.find(EXTENSION_TAG)
    if element is None:
        return ext
    base = f"<{EXTENSION_TAG}>"
    gravity = element.find("gravity")
    if gravity is not None:
        ext.gravity = numbers(gravity, "xyz", 3, source, f"{base}/gravity", None)
    in_d = element.find("motor_inertia_in_d")
    if in_d is not None:
        value = in_d.get("value")
        if value not in ("true", "false"):
            raise ModelError(source, f"{base}/motor_inertia_in_d@value", f"expected true or false, got {value!r}")
        ext.motor_inertia_in_d = value == "true"
    kind = element.find("smooth_kind")
    if kind is not None:
        value = kind.get("value")
        if value not in SMOOTH_KINDS:
            raise ModelError(
                source, f"{base}/smooth_kind@value", f"expected one of {list(SMOOTH_KINDS)}, got {value!r}"
            )
        ext.smooth_kind = value
    for joint in element.findall("joint"):
        name = joint.get("name")
        if not name:
            raise ModelError(source, f"{base}/joint", "missing name attribute")
        path = f"{base}/joint[{name}]"
        motor = joint.find("motor")
        if motor is not None:
            mpath = f"{path}/motor"
            jm = number(motor, "inertia", source, mpath)
            gear = number(motor, "gear_ratio", source, mpath, "1")
            viscous = number(motor, "viscous", source, mpath, "0")
            if jm < 0.0 or gear == 0.0 or viscous < 0.0:
                raise ModelError(source, mpath, "needs inertia >= 0, gear_ratio != 0, viscous >= 0")
            ext.motors[name] = Motor(jm, gear, viscous, _pair(motor, "coulomb", source, mpath))
        friction = joint.find("friction")
        if friction is not None:
            ext.frictions[name] = _read_friction(friction, source, f"{path}/friction")
    for pose in element.findall("named_pose"):
        pose_name = pose.get("name") or ""
        joints = (pose.get("joints") or "").split()
        if not pose_name or not joints:
            raise ModelError(source, f"{base}/named_pose", "needs name and joints attributes")
        q = numbers(pose, "q", len(joints), source, f"{base}/named_pose[{pose_name}]", None)
        ext.named_poses.append((pose_name, joints, q))
    return ext


def _read_friction(element: etree._Element, source: str, path: str) -> JointFriction:
    viscous = number(element, "viscous", source, path, "0")
    if viscous < 0.0:
        raise ModelError(source, f"{path}@viscous", f"must be >= 0, got {viscous:g}")
    static = _pair(element, "static", source, path) if element.get("static") is not None else None
    bearing = None
    bearing_element = element.find("bearing")
    if bearing_element is not None:
        kind = bearing_element.get("kind")
        if kind not in ("journal", "linear", "thrust"):
            raise ModelError(source, f"{path}/bearing@kind", f"expected journal, linear or thrust, got {kind!r}")
        bearing = BearingFriction(
            kind=kind,
            mu=number(bearing_element, "mu", source, f"{path}/bearing"),
            radius=number(bearing_element, "radius", source, f"{path}/bearing", "0"),
            spacing=number(bearing_element, "spacing", source, f"{path}/bearing", "0"),
        )
    transmission = None
    transmission_element = element.find("transmission")
    if transmission_element is not None:
        tpath = f"{path}/transmission"
        text = transmission_element.get("efficiency") or ""
        count = len(text.split())
        if count == 0 or count % 2:
            raise ModelError(source, f"{tpath}@efficiency", "expected pairs 'ratio eta ratio eta ...'")
        points = numbers(transmission_element, "efficiency", count, source, tpath, None).reshape(-1, 2)
        transmission = TransmissionFriction(
            efficiency=tuple((float(r), float(e)) for r, e in points),
            breakaway=number(transmission_element, "breakaway", source, tpath),
            max_torque=number(transmission_element, "max_torque", source, tpath),
        )
    return JointFriction(
        viscous=viscous,
        coulomb=_pair(element, "coulomb", source, path),
        static=static,
        stribeck_velocity=number(element, "stribeck_velocity", source, path, "0"),
        smoothing_velocity=number(element, "smoothing_velocity", source, path, "0.01"),
        bearing=bearing,
        transmission=transmission,
        offset=number(element, "offset", source, path, "0"),
    )
