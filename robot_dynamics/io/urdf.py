"""URDF robots (a file or ``robot_description`` XML text) into the serial-chain model.

Parsing is safe: the XML is read with ``lxml`` with entity resolution, DTD loading and network
access switched off, a document that declares entities is rejected, and only the element tree
(never a DTD) is handed to ``yourdfpy``. Meshes are never loaded, so ``package://`` URIs need not
resolve.

Chain and bodies (see ``docs/models.md``):

* the chain runs from ``base_link`` (default: the root link) to ``tip_link`` (default: the only leaf
  below the base reached through at least one movable joint; otherwise an error lists the
  candidates); its revolute, continuous and prismatic joints are the model's joints, in order;
* every link rigidly attached to a chain link (through fixed joints, or through movable joints that
  are not on the chain, which are held at zero with a warning) is merged into that link's body:
  masses add, centres of mass combine, inertias (inertial ``origin`` with ``rpy``) are rotated into
  the joint frame and shifted (parallel-axis theorem);
* links rigidly attached to the base do not move: their inertia is ignored; fixed joints after the
  last movable joint give ``model.tool`` (the pose of ``tip_link``);
* ``<dynamics damping friction>`` become ``JointFriction(viscous=damping, coulomb=(friction,
  -friction))``; mimic joints and floating/planar joints on the chain are unsupported (error);
* the optional ``<robot_dynamics>`` element written by :mod:`robot_dynamics.io.export_urdf` carries
  what URDF cannot express (gravity, motor data, the full friction parameters, named poses) and is
  ignored by other URDF tools.
"""

from __future__ import annotations

import io
import math
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from lxml import etree

from ..errors import ModelError
from ..model import (
    BearingFriction,
    FloatArray,
    Inertial,
    Joint,
    JointFriction,
    Limits,
    Motor,
    RobotModel,
    TransmissionFriction,
)
from .validation import (
    ModelWarning,
    check_limits,
    check_mass,
    inertia_definiteness_problem,
    inertia_triangle_problem,
    pose_matrix,
    suggest,
)

ROBOT_DESCRIPTION = "<robot_description>"
URDF_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
MOVABLE_TYPES = ("revolute", "continuous", "prismatic")
EXTENSION_TAG = "robot_dynamics"


# ----------------------------------------------------------------------------------------------
# safe XML
# ----------------------------------------------------------------------------------------------
def _safe_parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,  # never substitute entities (XXE)
        no_network=True,  # never fetch anything
        load_dtd=False,  # never read an external DTD
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


def parse_xml(data: bytes, source: str) -> etree._Element:
    """Parse URDF bytes safely; reject entity declarations and xacro; return the ``<robot>`` element."""
    try:
        root = etree.fromstring(data, parser=_safe_parser())
    except etree.XMLSyntaxError as exc:
        raise ModelError(source, "", f"not well-formed XML: {exc.msg}") from None
    if root is None:
        raise ModelError(source, "", "empty XML document")
    dtd = root.getroottree().docinfo.internalDTD
    entities = [e.name for e in dtd.iterentities()] if dtd is not None else []
    if entities:
        raise ModelError(
            source,
            "DOCTYPE",
            f"XML entity declarations are not allowed in a URDF (found {', '.join(map(repr, entities))}); "
            "entities are never expanded",
        )
    if any(isinstance(node, etree._Entity) for node in root.iter()):
        raise ModelError(source, "", "unexpanded XML entity reference in the document")
    if any(isinstance(e.tag, str) and e.tag.startswith("{") and "xacro" in e.tag for e in root.iter()):
        raise ModelError(source, "", "this is a xacro file: expand it first (xacro model.urdf.xacro > model.urdf)")
    if root.tag != "robot":
        raise ModelError(source, f"<{root.tag}>", "the root element of a URDF must be <robot>")
    if not root.get("name"):
        raise ModelError(source, "<robot>", "the robot has no name attribute")
    return root


# ----------------------------------------------------------------------------------------------
# attribute checks (precise messages before yourdfpy sees the tree)
# ----------------------------------------------------------------------------------------------
def _numbers(
    element: etree._Element, attribute: str, count: int, source: str, path: str, default: str | None
) -> FloatArray:
    text = element.get(attribute, default)
    where = f"{path}@{attribute}"
    if text is None:
        raise ModelError(source, where, "required attribute is missing")
    parts = text.split()
    if len(parts) != count:
        raise ModelError(source, where, f"expected {count} number{'s' if count > 1 else ''}, got {text!r}")
    try:
        values = np.array([float(p) for p in parts])
    except ValueError:
        raise ModelError(source, where, f"not a number: {text!r}") from None
    if not np.all(np.isfinite(values)):
        raise ModelError(source, where, f"must be finite, got {text!r}")
    return values


def _number(element: etree._Element, attribute: str, source: str, path: str, default: str | None = None) -> float:
    return float(_numbers(element, attribute, 1, source, path, default)[0])


def _origin(element: etree._Element | None, source: str, path: str) -> FloatArray:
    if element is None:
        return np.eye(4)
    xyz = _numbers(element, "xyz", 3, source, f"{path}/origin", "0 0 0")
    rpy = _numbers(element, "rpy", 3, source, f"{path}/origin", "0 0 0")
    return pose_matrix(xyz, rpy)


@dataclass
class _LinkData:
    name: str
    inertial: Inertial | None  # in the link frame (None: no <inertial>)
    has_geometry: bool = False  # <visual> or <collision>: a physical part, not just a frame


@dataclass
class _JointData:
    name: str
    type: str
    parent: str
    child: str
    origin: FloatArray
    axis: FloatArray
    limits: Limits
    friction: JointFriction
    mimic: bool


@dataclass
class _Tree:
    name: str
    links: dict[str, _LinkData] = field(default_factory=dict)
    joints: list[_JointData] = field(default_factory=list)
    triangle_problems: dict[str, str] = field(default_factory=dict)


def _check_link(element: etree._Element, source: str, tree: _Tree) -> None:
    name = element.get("name")
    if not name:
        raise ModelError(source, "<link>", "a link has no name attribute")
    if name in tree.links:
        raise ModelError(source, f"link[{name}]", "duplicate link name")
    path = f"link[{name}]/inertial"
    inertial_element = element.find("inertial")
    inertial = None
    if inertial_element is not None:
        origin = _origin(inertial_element.find("origin"), source, path)
        mass_element = inertial_element.find("mass")
        if mass_element is None:
            raise ModelError(source, f"{path}/mass", "an <inertial> needs a <mass value=...>")
        mass = _number(mass_element, "value", source, f"{path}/mass")
        check_mass(mass, source, f"{path}/mass@value")
        inertia_element = inertial_element.find("inertia")
        if inertia_element is None:
            raise ModelError(source, f"{path}/inertia", "an <inertial> needs an <inertia ixx=... izz=...>")
        values = {
            key: _number(inertia_element, key, source, f"{path}/inertia")
            for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        }
        tensor = np.array(
            [
                [values["ixx"], values["ixy"], values["ixz"]],
                [values["ixy"], values["iyy"], values["iyz"]],
                [values["ixz"], values["iyz"], values["izz"]],
            ]
        )
        problem = inertia_definiteness_problem(tensor)
        if problem is not None:
            raise ModelError(source, f"{path}/inertia", problem)
        triangle = inertia_triangle_problem(tensor)
        if triangle is not None:
            tree.triangle_problems[name] = triangle
        rotation = origin[:3, :3]
        inertial = Inertial(mass, origin[:3, 3], rotation @ tensor @ rotation.T)
    has_geometry = element.find("visual") is not None or element.find("collision") is not None
    tree.links[name] = _LinkData(name, inertial, has_geometry)


def _check_joint(element: etree._Element, source: str, tree: _Tree, names: set[str]) -> None:
    name = element.get("name")
    if not name:
        raise ModelError(source, "<joint>", "a joint has no name attribute")
    if name in names:
        raise ModelError(source, f"joint[{name}]", "duplicate joint name")
    names.add(name)
    path = f"joint[{name}]"
    kind = element.get("type")
    if kind not in URDF_JOINT_TYPES:
        raise ModelError(
            source,
            f"{path}@type",
            f"{kind!r} is not a URDF joint type ({', '.join(URDF_JOINT_TYPES)}){suggest(str(kind), URDF_JOINT_TYPES)}",
        )
    ends = {}
    for end in ("parent", "child"):
        end_element = element.find(end)
        link = end_element.get("link") if end_element is not None else None
        if not link:
            raise ModelError(source, f"{path}/{end}", f"missing <{end} link=...>")
        if link not in tree.links:
            raise ModelError(source, f"{path}/{end}@link", f"unknown link {link!r}{suggest(link, tree.links)}")
        ends[end] = link
    origin = _origin(element.find("origin"), source, path)
    axis_element = element.find("axis")
    axis = np.array([1.0, 0.0, 0.0])
    if axis_element is not None:
        axis = _numbers(axis_element, "xyz", 3, source, f"{path}/axis", "1 0 0")
        if kind in MOVABLE_TYPES and not np.linalg.norm(axis) > 0.0:
            raise ModelError(source, f"{path}/axis@xyz", "the joint axis must be non-zero")
    limits = Limits()
    limit_element = element.find("limit")
    if limit_element is not None and kind in ("revolute", "prismatic", "continuous"):
        lpath = f"{path}/limit"
        lower, upper = -math.inf, math.inf
        if kind != "continuous":
            lower = _number(limit_element, "lower", source, lpath, "0")
            upper = _number(limit_element, "upper", source, lpath, "0")
            check_limits(lower, upper, source, lpath)
        rates = {}
        for key in ("velocity", "effort"):
            value = _number(limit_element, key, source, lpath, "0")
            if value < 0.0:
                raise ModelError(source, f"{lpath}@{key}", f"must be >= 0, got {value:g}")
            rates[key] = value if value > 0.0 else math.inf  # 0 = not specified
        limits = Limits(lower, upper, rates["velocity"], rates["effort"])
    friction = JointFriction()
    dynamics = element.find("dynamics")
    if dynamics is not None and kind in MOVABLE_TYPES:
        damping = _number(dynamics, "damping", source, f"{path}/dynamics", "0")
        coulomb = _number(dynamics, "friction", source, f"{path}/dynamics", "0")
        for key, value in (("damping", damping), ("friction", coulomb)):
            if value < 0.0:
                raise ModelError(source, f"{path}/dynamics@{key}", f"must be >= 0, got {value:g}")
        friction = JointFriction(viscous=damping, coulomb=(coulomb, -coulomb))
    mimic = element.find("mimic") is not None
    tree.joints.append(_JointData(name, kind, ends["parent"], ends["child"], origin, axis, limits, friction, mimic))


def _read_tree(root: etree._Element, source: str) -> _Tree:
    """Validate the URDF element tree and read what the model needs."""
    tree = _Tree(name=str(root.get("name")))
    for element in root.findall("link"):
        _check_link(element, source, tree)
    if not tree.links:
        raise ModelError(source, "<robot>", "the URDF has no links")
    names: set[str] = set()
    for element in root.findall("joint"):
        _check_joint(element, source, tree, names)
    _cross_check_with_yourdfpy(root, source, tree)
    return tree


def _cross_check_with_yourdfpy(root: etree._Element, source: str, tree: _Tree) -> None:
    """Parse the (entity-free) element tree with yourdfpy as well and require the same structure.

    Only the serialised element (no DTD) is given to yourdfpy; meshes and scene graphs are not built.
    """
    import yourdfpy  # lazy: pulls in trimesh, scipy and networkx

    data = etree.tostring(root)
    try:
        urdf = yourdfpy.URDF.load(
            io.BytesIO(data),
            build_scene_graph=False,
            build_collision_scene_graph=False,
            load_meshes=False,
            load_collision_meshes=False,
        )
    except Exception as exc:  # yourdfpy raises assorted exception types on malformed input
        raise ModelError(source, "", f"yourdfpy could not parse the URDF: {exc}") from None
    joints = {j.name: j for j in urdf.robot.joints}
    for joint in tree.joints:
        other = joints.get(joint.name)
        if other is None or (other.parent, other.child, other.type) != (joint.parent, joint.child, joint.type):
            raise ModelError(source, f"joint[{joint.name}]", "yourdfpy reads this joint differently")
        other_origin = np.eye(4) if other.origin is None else np.asarray(other.origin, dtype=float)
        if np.max(np.abs(other_origin - joint.origin)) > 1e-12 * max(1.0, float(np.max(np.abs(joint.origin)))):
            raise ModelError(source, f"joint[{joint.name}]/origin", "yourdfpy reads this origin differently")
    if {link.name for link in urdf.robot.links} != set(tree.links):
        raise ModelError(source, "<robot>", "yourdfpy reads the links differently")


# ----------------------------------------------------------------------------------------------
# the <robot_dynamics> extension (written by export_urdf)
# ----------------------------------------------------------------------------------------------
@dataclass
class _Extension:
    gravity: FloatArray | None = None
    motor_inertia_in_d: bool = True
    motors: dict[str, Motor] = field(default_factory=dict)
    frictions: dict[str, JointFriction] = field(default_factory=dict)
    named_poses: list[tuple[str, list[str], FloatArray]] = field(default_factory=list)


def _pair(element: etree._Element, attribute: str, source: str, path: str) -> tuple[float, float]:
    plus, minus = _numbers(element, attribute, 2, source, path, "0 0")
    if plus < 0.0 or minus > 0.0:
        raise ModelError(source, f"{path}@{attribute}", f"expected 'c+ c-' with c+ >= 0 >= c-, got {plus:g} {minus:g}")
    return float(plus), float(minus)


def _read_extension(root: etree._Element, source: str) -> _Extension:
    ext = _Extension()
    element = root.find(EXTENSION_TAG)
    if element is None:
        return ext
    base = f"<{EXTENSION_TAG}>"
    gravity = element.find("gravity")
    if gravity is not None:
        ext.gravity = _numbers(gravity, "xyz", 3, source, f"{base}/gravity", None)
    in_d = element.find("motor_inertia_in_d")
    if in_d is not None:
        value = in_d.get("value")
        if value not in ("true", "false"):
            raise ModelError(source, f"{base}/motor_inertia_in_d@value", f"expected true or false, got {value!r}")
        ext.motor_inertia_in_d = value == "true"
    for joint in element.findall("joint"):
        name = joint.get("name")
        if not name:
            raise ModelError(source, f"{base}/joint", "missing name attribute")
        path = f"{base}/joint[{name}]"
        motor = joint.find("motor")
        if motor is not None:
            mpath = f"{path}/motor"
            jm = _number(motor, "inertia", source, mpath)
            gear = _number(motor, "gear_ratio", source, mpath, "1")
            viscous = _number(motor, "viscous", source, mpath, "0")
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
        q = _numbers(pose, "q", len(joints), source, f"{base}/named_pose[{pose_name}]", None)
        ext.named_poses.append((pose_name, joints, q))
    return ext


def _read_friction(element: etree._Element, source: str, path: str) -> JointFriction:
    viscous = _number(element, "viscous", source, path, "0")
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
            mu=_number(bearing_element, "mu", source, f"{path}/bearing"),
            radius=_number(bearing_element, "radius", source, f"{path}/bearing", "0"),
            spacing=_number(bearing_element, "spacing", source, f"{path}/bearing", "0"),
        )
    transmission = None
    transmission_element = element.find("transmission")
    if transmission_element is not None:
        tpath = f"{path}/transmission"
        text = transmission_element.get("efficiency") or ""
        count = len(text.split())
        if count == 0 or count % 2:
            raise ModelError(source, f"{tpath}@efficiency", "expected pairs 'ratio eta ratio eta ...'")
        points = _numbers(transmission_element, "efficiency", count, source, tpath, None).reshape(-1, 2)
        transmission = TransmissionFriction(
            efficiency=tuple((float(r), float(e)) for r, e in points),
            breakaway=_number(transmission_element, "breakaway", source, tpath),
            max_torque=_number(transmission_element, "max_torque", source, tpath),
        )
    return JointFriction(
        viscous=viscous,
        coulomb=_pair(element, "coulomb", source, path),
        static=static,
        stribeck_velocity=_number(element, "stribeck_velocity", source, path, "0"),
        smoothing_velocity=_number(element, "smoothing_velocity", source, path, "0.01"),
        bearing=bearing,
        transmission=transmission,
    )


# ----------------------------------------------------------------------------------------------
# chain selection and body merging
# ----------------------------------------------------------------------------------------------
class _Body:
    """Mass, first moment and inertia about the owner frame's origin (sums exactly, massless or not)."""

    def __init__(self) -> None:
        self.mass = 0.0
        self.moment = np.zeros(3)
        self.inertia_origin = np.zeros((3, 3))
        self.parts: list[Inertial] = []

    def add(self, body: Inertial) -> None:
        self.parts.append(body)
        c = body.com
        self.mass += body.mass
        self.moment += body.mass * c
        self.inertia_origin += body.inertia + body.mass * (float(c @ c) * np.eye(3) - np.outer(c, c))

    def inertial(self) -> Inertial:
        if len(self.parts) == 1:
            return self.parts[0]  # exactly as given (keeps the c.o.m. of a massless link too)
        if self.mass == 0.0:
            return Inertial(0.0, np.zeros(3), self.inertia_origin)
        c = self.moment / self.mass
        inertia = self.inertia_origin - self.mass * (float(c @ c) * np.eye(3) - np.outer(c, c))
        return Inertial(self.mass, c, 0.5 * (inertia + inertia.T))


def _warn(message: str) -> None:
    warnings.warn(message, ModelWarning, stacklevel=4)


def _select_chain(
    tree: _Tree, source: str, base_link: str | None, tip_link: str | None
) -> tuple[str, str, list[_JointData], dict[str, list[_JointData]], dict[str, _JointData]]:
    parent_joint: dict[str, _JointData] = {}
    children: dict[str, list[_JointData]] = defaultdict(list)
    for joint in tree.joints:
        if joint.child in parent_joint:
            raise ModelError(
                source,
                f"link[{joint.child}]",
                f"has two parent joints ({parent_joint[joint.child].name!r}, {joint.name!r}): a URDF must be a tree",
            )
        parent_joint[joint.child] = joint
        children[joint.parent].append(joint)
    roots = [name for name in tree.links if name not in parent_joint]
    reachable: set[str] = set()
    stack = list(roots)
    while stack:
        link = stack.pop()
        reachable.add(link)
        stack.extend(j.child for j in children[link])
    if len(reachable) != len(tree.links):
        cyclic = sorted(set(tree.links) - reachable)
        raise ModelError(source, "<robot>", f"the joints form a cycle through links {cyclic}")

    if base_link is None:
        if len(roots) != 1:
            raise ModelError(source, "base_link", f"the URDF has several root links {roots}: pass base_link")
        base = roots[0]
    else:
        if base_link not in tree.links:
            raise ModelError(source, "base_link", f"unknown link {base_link!r}{suggest(base_link, tree.links)}")
        base = base_link

    def path_to(link: str) -> list[_JointData] | None:
        """Joints from base down to ``link`` (None if ``link`` is not below base)."""
        joints: list[_JointData] = []
        while link != base:
            joint = parent_joint.get(link)
            if joint is None:
                return None
            joints.append(joint)
            link = joint.parent
        return joints[::-1]

    if tip_link is None:
        below = [name for name in tree.links if name != base and path_to(name) is not None]
        leaves = [name for name in below if not children[name]]
        counts = {leaf: sum(j.type in MOVABLE_TYPES for j in path_to(leaf) or []) for leaf in leaves}
        candidates = [leaf for leaf in leaves if counts[leaf] > 0]
        if not candidates:
            raise ModelError(source, "tip_link", f"no movable joint below base link {base!r}")
        if len(candidates) > 1:
            listed = ", ".join(f"{leaf!r} ({counts[leaf]} movable joints)" for leaf in candidates)
            raise ModelError(
                source,
                "tip_link",
                f"the chain is ambiguous: several leaf links below {base!r}: {listed}; pass tip_link",
            )
        tip = candidates[0]
    else:
        if tip_link not in tree.links:
            raise ModelError(source, "tip_link", f"unknown link {tip_link!r}{suggest(tip_link, tree.links)}")
        tip = tip_link
    path = path_to(tip)
    if path is None:
        raise ModelError(source, "tip_link", f"link {tip!r} is not below base link {base!r}")
    for joint in path:
        if joint.mimic:
            raise ModelError(source, f"joint[{joint.name}]", "mimic joints on the chain are unsupported")
        if joint.type in ("floating", "planar"):
            raise ModelError(
                source, f"joint[{joint.name}]", f"{joint.type} joints are unsupported (serial chains only)"
            )
    if not any(j.type in MOVABLE_TYPES for j in path):
        raise ModelError(source, "tip_link", f"no movable joint between {base!r} and {tip!r}")
    return base, tip, path, children, parent_joint


def build_model(
    root: etree._Element,
    source: str,
    base_link: str | None = None,
    tip_link: str | None = None,
    location: str | None = None,
) -> RobotModel:
    """The model of the chain ``base_link`` -> ``tip_link`` of a parsed URDF ``<robot>`` element.

    ``source`` names the document in error messages; ``location`` (default ``source``) becomes
    ``model.source``.
    """
    tree = _read_tree(root, source)
    extension = _read_extension(root, source)
    base, tip, path, children, parent_joint = _select_chain(tree, source, base_link, tip_link)
    chain = [j for j in path if j.type in MOVABLE_TYPES]
    index = {j.name: k for k, j in enumerate(chain)}
    n = len(chain)

    # walk the tree below the base: owner = chain link a link is rigidly attached to (-1: the base)
    owner: dict[str, int] = {base: -1}
    pose: dict[str, FloatArray] = {base: np.eye(4)}  # link frame in its owner's joint frame
    origins: list[FloatArray] = [np.eye(4)] * n
    held: list[str] = []
    stack = [base]
    while stack:
        parent = stack.pop()
        for joint in children[parent]:
            child = joint.child
            if joint.name in index:
                k = index[joint.name]
                origins[k] = pose[parent] @ joint.origin
                owner[child], pose[child] = k, np.eye(4)
            else:
                if joint.type != "fixed" and owner[parent] >= 0:
                    held.append(joint.name)
                owner[child], pose[child] = owner[parent], pose[parent] @ joint.origin  # held at q = 0
            stack.append(child)

    bodies = [_Body() for _ in range(n)]
    massless: list[str] = []
    for name, k in owner.items():
        if k < 0:
            continue  # rigidly attached to the base: does not move
        inertial = tree.links[name].inertial
        if inertial is None:
            # a pure frame (no geometry, on a fixed joint: tool0, tcp, ...) is massless by design
            if tree.links[name].has_geometry or parent_joint[name].type != "fixed":
                massless.append(name)
            continue
        bodies[k].add(inertial.transformed(pose[name]))

    moving = {name for name, k in owner.items() if k >= 0}
    for name, problem in tree.triangle_problems.items():
        if name in moving:
            _warn(f"{source}: link[{name}]/inertial/inertia: {problem}")
    if massless:
        _warn(f"{source}: links without <inertial> are massless: {', '.join(sorted(massless))}")
    if held:
        _warn(
            f"{source}: movable joints not on the chain {base!r} -> {tip!r} are held at zero and the links they "
            f"carry are part of the chain's bodies: {', '.join(held)}"
        )

    # base pose in the root frame (joints above the base held at zero)
    base_pose = np.eye(4)
    link = base
    above: list[str] = []
    while link in parent_joint:
        joint = parent_joint[link]
        if joint.type != "fixed":
            above.append(joint.name)
        base_pose = joint.origin @ base_pose
        link = joint.parent
    if above:
        _warn(f"{source}: joints above base link {base!r} are held at zero: {', '.join(above)}")

    for name in list(extension.motors) + list(extension.frictions):
        if name not in index:
            raise ModelError(
                source,
                f"<{EXTENSION_TAG}>/joint[{name}]",
                f"not a joint of the chain{suggest(name, list(index))} (chain joints: {', '.join(index)})",
            )
    joints = tuple(
        Joint(
            name=j.name,
            kind="prismatic" if j.type == "prismatic" else "revolute",
            origin=origins[k],
            axis=j.axis,
            link=bodies[k].inertial(),
            link_name=j.child,
            continuous=j.type == "continuous",
            limits=j.limits,
            friction=extension.frictions.get(j.name, j.friction),
            motor=extension.motors.get(j.name),
        )
        for k, j in enumerate(chain)
    )
    names = [j.name for j in chain]
    poses = {}
    for pose_name, pose_joints, q in extension.named_poses:
        if sorted(pose_joints) == sorted(names):
            order = [pose_joints.index(name) for name in names]
            poses[pose_name] = q[order]
    return RobotModel(
        name=tree.name,
        joints=joints,
        gravity=extension.gravity if extension.gravity is not None else np.array([0.0, 0.0, -9.81]),
        base=base_pose,
        tool=pose[tip],
        source=location or source,
        named_poses=poses,
        motor_inertia_in_d=extension.motor_inertia_in_d,
        base_link=base,
        tip_link=tip,
    )


# ----------------------------------------------------------------------------------------------
# entry points
# ----------------------------------------------------------------------------------------------
def load_urdf(path: str | Path, base_link: str | None = None, tip_link: str | None = None) -> RobotModel:
    """Load the chain ``base_link`` -> ``tip_link`` of a URDF file."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ModelError(str(file), "", f"cannot read the file: {exc.strerror or exc}") from None
    return build_model(parse_xml(data, file.name), file.name, base_link, tip_link, location=str(file))


def loads_urdf(
    text: str | bytes, base_link: str | None = None, tip_link: str | None = None, source: str = ROBOT_DESCRIPTION
) -> RobotModel:
    """Load the chain of URDF XML text (e.g. the ``robot_description`` parameter)."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return build_model(parse_xml(data, source), source, base_link, tip_link)


def looks_like_xml(text: str | bytes) -> bool:
    head = text.lstrip()[:1]
    return head in ("<", b"<")
