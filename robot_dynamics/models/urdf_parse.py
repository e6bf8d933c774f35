"""URDF XML reading: safe parsing, attribute checks and the link/joint tree (no chain logic).

Parsing is safe: the XML is read with ``lxml`` with entity resolution, DTD loading and network
access switched off, a document that declares entities is rejected, and only the element tree
(never a DTD) is handed to ``yourdfpy`` (a structural cross-check). Meshes are never loaded, so
``package://`` URIs need not resolve.

Inertia defects are recorded, not raised, here: whether a non-positive-semi-definite inertia is an
error depends on whether the link moves with the chosen chain (see :mod:`robot_dynamics.models.urdf`).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field

import numpy as np
from lxml import etree

from ..errors import ModelError
from ..model import FloatArray, Inertial, JointFriction, Limits
from .validation import (
    check_limits,
    check_mass,
    inertia_definiteness_problem,
    inertia_triangle_problem,
    pose_matrix,
    suggest,
    warn,
)

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
def numbers(
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
        values = [float(p) for p in parts]
    except ValueError:
        raise ModelError(source, where, f"not a number: {text!r}") from None
    if not all(math.isfinite(v) for v in values):
        raise ModelError(source, where, f"must be finite, got {text!r}")
    return np.array(values)


def number(element: etree._Element, attribute: str, source: str, path: str, default: str | None = None) -> float:
    return float(numbers(element, attribute, 1, source, path, default)[0])


def origin_pose(element: etree._Element | None, source: str, path: str) -> FloatArray:
    if element is None:
        return np.eye(4)
    xyz = numbers(element, "xyz", 3, source, f"{path}/origin", "0 0 0")
    rpy = numbers(element, "rpy", 3, source, f"{path}/origin", "0 0 0")
    return pose_matrix(xyz, rpy)


@dataclass
class LinkData:
    name: str
    inertial: Inertial | None  # in the link frame (None: no <inertial>)
    has_geometry: bool = False  # <visual> or <collision>: a physical part, not just a frame
    definiteness_problem: str | None = None  # the inertia is not positive semi-definite (why)
    triangle_problem: str | None = None  # the principal moments violate the triangle inequality
    check_triangle: bool = True  # <robot_dynamics check_triangle_inequality="false"/> turns it off


@dataclass(frozen=True)
class Mimic:
    joint: str  # the master joint
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass
class JointData:
    name: str
    type: str
    parent: str
    child: str
    origin: FloatArray
    axis: FloatArray
    limits: Limits
    friction: JointFriction
    mimic: Mimic | None  # only on movable joints (a <mimic> on a fixed joint means nothing)

    @property
    def movable(self) -> bool:
        return self.type in MOVABLE_TYPES


@dataclass
class Tree:
    name: str
    links: dict[str, LinkData] = field(default_factory=dict)
    joints: list[JointData] = field(default_factory=list)


def _check_link(element: etree._Element, source: str, tree: Tree) -> None:
    name = element.get("name")
    if not name:
        raise ModelError(source, "<link>", "a link has no name attribute")
    if name in tree.links:
        raise ModelError(source, f"link[{name}]", "duplicate link name")
    path = f"link[{name}]/inertial"
    inertial_element = element.find("inertial")
    inertial = None
    if inertial_element is not None:
        origin = origin_pose(inertial_element.find("origin"), source, path)
        mass_element = inertial_element.find("mass")
        if mass_element is None:
            raise ModelError(source, f"{path}/mass", "an <inertial> needs a <mass value=...>")
        mass = number(mass_element, "value", source, f"{path}/mass")
        check_mass(mass, source, f"{path}/mass@value")
        inertia_element = inertial_element.find("inertia")
        if inertia_element is None:
            raise ModelError(source, f"{path}/inertia", "an <inertial> needs an <inertia ixx=... izz=...>")
        values = {
            key: number(inertia_element, key, source, f"{path}/inertia")
            for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        }
        tensor = np.array(
            [
                [values["ixx"], values["ixy"], values["ixz"]],
                [values["ixy"], values["iyy"], values["iyz"]],
                [values["ixz"], values["iyz"], values["izz"]],
            ]
        )
        definiteness = inertia_definiteness_problem(tensor)
        triangle = inertia_triangle_problem(tensor) if definiteness is None else None
        rotation = origin[:3, :3]
        inertial = Inertial(mass, origin[:3, 3], rotation @ tensor @ rotation.T)
    else:
        definiteness = triangle = None
    has_geometry = element.find("visual") is not None or element.find("collision") is not None
    check = True
    flag = element.find(EXTENSION_TAG)
    if flag is not None:
        value = flag.get("check_triangle_inequality", "true")
        if value not in ("true", "false"):
            raise ModelError(
                source,
                f"link[{name}]/{EXTENSION_TAG}@check_triangle_inequality",
                f"expected true or false, got {value!r}",
            )
        check = value == "true"
    tree.links[name] = LinkData(name, inertial, has_geometry, definiteness, triangle, check)


def _check_joint(element: etree._Element, source: str, tree: Tree, names: set[str]) -> None:
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
    origin = origin_pose(element.find("origin"), source, path)
    axis_element = element.find("axis")
    axis = np.array([1.0, 0.0, 0.0])
    if axis_element is not None:
        axis = numbers(axis_element, "xyz", 3, source, f"{path}/axis", "1 0 0")
        if kind in MOVABLE_TYPES and not np.linalg.norm(axis) > 0.0:
            raise ModelError(source, f"{path}/axis@xyz", "the joint axis must be non-zero")
    limits = Limits()
    limit_element = element.find("limit")
    if limit_element is not None and kind in ("revolute", "prismatic", "continuous"):
        lpath = f"{path}/limit"
        lower, upper = -math.inf, math.inf
        if kind != "continuous":
            lower = number(limit_element, "lower", source, lpath, "0")
            upper = number(limit_element, "upper", source, lpath, "0")
            check_limits(lower, upper, source, lpath)
        rates = {}
        for key in ("velocity", "effort"):
            value = number(limit_element, key, source, lpath, "0")
            if value < 0.0:
                raise ModelError(source, f"{lpath}@{key}", f"must be >= 0, got {value:g}")
            rates[key] = value if value > 0.0 else math.inf  # 0 = not specified
        limits = Limits(lower, upper, rates["velocity"], rates["effort"])
    friction = JointFriction()
    dynamics = element.find("dynamics")
    if dynamics is not None and kind in MOVABLE_TYPES:
        damping = number(dynamics, "damping", source, f"{path}/dynamics", "0")
        coulomb = number(dynamics, "friction", source, f"{path}/dynamics", "0")
        for key, value in (("damping", damping), ("friction", coulomb)):
            if value < 0.0:
                raise ModelError(source, f"{path}/dynamics@{key}", f"must be >= 0, got {value:g}")
        friction = JointFriction(viscous=damping, coulomb=(coulomb, -coulomb))
    mimic = None
    mimic_element = element.find("mimic")
    if mimic_element is not None and kind in MOVABLE_TYPES:
        master = mimic_element.get("joint")
        if not master:
            raise ModelError(source, f"{path}/mimic@joint", "required attribute is missing")
        mimic = Mimic(
            master,
            number(mimic_element, "multiplier", source, f"{path}/mimic", "1"),
            number(mimic_element, "offset", source, f"{path}/mimic", "0"),
        )
    tree.joints.append(JointData(name, kind, ends["parent"], ends["child"], origin, axis, limits, friction, mimic))


def read_tree(root: etree._Element, source: str) -> Tree:
    """Validate the URDF element tree and read what the model needs."""
    tree = Tree(name=str(root.get("name")))
    for element in root.findall("link"):
        _check_link(element, source, tree)
    if not tree.links:
        raise ModelError(source, "<robot>", "the URDF has no links")
    names: set[str] = set()
    for element in root.findall("joint"):
        _check_joint(element, source, tree, names)
    for joint in tree.joints:
        if joint.mimic is not None and joint.mimic.joint not in names:
            hint = suggest(joint.mimic.joint, names - {joint.name})
            warn(
                f"{source}: joint[{joint.name}]/mimic@joint: unknown joint {joint.mimic.joint!r}{hint}; "
                "the <mimic> is ignored (the joint moves on its own)"
            )
            joint.mimic = None
    _cross_check_with_yourdfpy(root, source, tree)
    return tree


def _cross_check_with_yourdfpy(root: etree._Element, source: str, tree: Tree) -> None:
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
