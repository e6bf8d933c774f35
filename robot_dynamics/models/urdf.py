"""URDF robots (a file or ``robot_description`` XML text) into the serial-chain model.

Reading and checking the XML: :mod:`robot_dynamics.models.urdf_parse` (safe parsing, no entities, no
meshes); choosing the chain (base, tip, locked and mimic joints): :mod:`robot_dynamics.models.urdf_chain`;
the ``<robot_dynamics>`` extension: :mod:`robot_dynamics.models.urdf_extension`. This module builds the
model (see ``docs/models.md``):

* the chain's movable, unlocked joints are the model's joints, in order;
* every link rigidly attached to a chain link (through fixed joints, locked joints, or movable
  joints off the chain, held at zero with a warning) is merged into that link's body: masses add,
  centres of mass combine, inertias (inertial ``origin`` with ``rpy``) are rotated into the joint
  frame and shifted (parallel-axis theorem) -- Pinocchio's ``buildReducedModel`` does the same;
* links rigidly attached to the base do not move: their inertia is ignored; fixed joints after the
  last movable joint give ``model.tool`` (the pose of ``tip_link``);
* inertia defects: an inertia that is not positive semi-definite (beyond the tolerance of
  :func:`robot_dynamics.models.validation.inertia_tolerance`) is an error only if the chain body it
  ends up in is not positive semi-definite either; a defect on a link that does not move with the
  chain, or that is negligible once merged (the merged body passes the check), is a
  :class:`~robot_dynamics.errors.ModelWarning` naming the link. A triangle-inequality violation is a
  warning for links that move with the chain, unless the link carries
  ``<robot_dynamics check_triangle_inequality="false"/>`` (written by the URDF export for data
  published as is);
* ``<dynamics damping friction>`` become ``JointFriction(viscous=damping, coulomb=(friction,
  -friction))``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
from lxml import etree

from ..errors import ModelError
from ..model import FloatArray, Inertial, Joint, RobotModel
from .urdf_chain import Chain, joint_motion, select_chain
from .urdf_extension import read_extension
from .urdf_parse import EXTENSION_TAG, MOVABLE_TYPES, Tree, parse_xml, read_tree
from .validation import inertia_definiteness_problem, suggest, warn

__all__ = [
    "MOVABLE_TYPES",
    "ROBOT_DESCRIPTION",
    "build_model",
    "load_urdf",
    "loads_urdf",
    "looks_like_xml",
    "parse_xml",
]

ROBOT_DESCRIPTION = "<robot_description>"


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


def _walk(chain: Chain, source: str) -> tuple[dict[str, int], dict[str, FloatArray], list[FloatArray], list[str]]:
    """Owner of every link below the base (index of the chain joint moving it; -1: the base), its pose in
    the owner's joint frame, the chain joints' origins and the held joints whose links move."""
    index = {j.name: k for k, j in enumerate(chain.joints)}
    owner: dict[str, int] = {chain.base: -1}
    pose: dict[str, FloatArray] = {chain.base: np.eye(4)}
    origins: list[FloatArray] = [np.eye(4)] * len(chain.joints)
    held: list[str] = []
    stack = [chain.base]
    while stack:
        parent = stack.pop()
        for joint in chain.children.get(parent, []):
            child = joint.child
            if joint.name in index:
                k = index[joint.name]
                origins[k] = pose[parent] @ joint.origin
                owner[child], pose[child] = k, np.eye(4)
            else:
                motion = np.eye(4)
                rides = owner[parent] >= 0
                if joint.name in chain.following and rides:
                    master = chain.following[joint.name]
                    raise ModelError(
                        source,
                        f"joint[{joint.name}]",
                        f"is a mimic joint following chain joint {master!r}, so the links it carries move on the "
                        f"chain in a way a serial chain cannot express: lock {master!r} or {joint.name!r} with "
                        "locked_joints, or choose another tip_link",
                    )
                if joint.name in chain.positions:
                    motion = joint_motion(joint, chain.positions[joint.name])
                if rides and (joint.name in chain.held or joint.type in ("floating", "planar")):
                    held.append(joint.name)
                owner[child], pose[child] = owner[parent], pose[parent] @ joint.origin @ motion
            stack.append(child)
    return owner, pose, origins, held


def _check_inertias(tree: Tree, source: str, chain: Chain, owner: Mapping[str, int], bodies: list[_Body]) -> None:
    """Errors and warnings for inertia defects (see the module docstring)."""
    where = f"chain {chain.base!r} -> {chain.tip!r}"
    for name, link in tree.links.items():
        field = f"{source}: link[{name}]/inertial/inertia"
        k = owner.get(name, -1)
        if link.definiteness_problem is not None:
            if k < 0:
                warn(f"{field}: {link.definiteness_problem}; ignored: the link does not move with the {where}")
                continue
            body = bodies[k].inertial()
            joint = chain.joints[k]
            problem = inertia_definiteness_problem(body.inertia)
            if problem is not None or len(bodies[k].parts) == 1:
                merged = ""
                if len(bodies[k].parts) > 1:
                    merged = f"; merged into the body of joint {joint.name!r} the inertia still {problem}"
                raise ModelError(source, f"link[{name}]/inertial/inertia", f"{link.definiteness_problem}{merged}")
            warn(
                f"{field}: {link.definiteness_problem}; negligible: merged into the body of joint {joint.name!r} "
                f"({body.mass:.6g} kg) the inertia is positive semi-definite"
            )
        elif link.triangle_problem is not None and link.check_triangle and k >= 0:
            warn(f"{field}: {link.triangle_problem}")


def build_model(
    root: etree._Element,
    source: str,
    base_link: str | None = None,
    tip_link: str | None = None,
    location: str | None = None,
    locked_joints: Mapping[str, float] | None = None,
) -> RobotModel:
    """The model of the chain ``base_link`` -> ``tip_link`` of a parsed URDF ``<robot>`` element.

    ``source`` names the document in error messages; ``location`` (default ``source``) becomes
    ``model.source``; ``locked_joints`` ``{joint: position}`` fixes joints (rad or m).
    """
    tree = read_tree(root, source)
    extension = read_extension(root, source)
    chain = select_chain(tree, source, base_link, tip_link, locked_joints)
    owner, pose, origins, held = _walk(chain, source)
    n = len(chain.joints)

    bodies = [_Body() for _ in range(n)]
    massless: list[str] = []
    for name, k in owner.items():
        if k < 0:
            continue  # rigidly attached to the base: does not move
        inertial = tree.links[name].inertial
        if inertial is None:
            # a pure frame (no geometry, on a fixed joint: tool0, tcp, ...) is massless by design
            if tree.links[name].has_geometry or chain.parent_joint[name].type != "fixed":
                massless.append(name)
            continue
        bodies[k].add(inertial.transformed(pose[name]))
    _check_inertias(tree, source, chain, owner, bodies)
    base, tip = chain.base, chain.tip
    if massless:
        warn(f"{source}: links without <inertial> are massless: {', '.join(sorted(massless))}")
    if held:
        warn(
            f"{source}: movable joints not on the chain {base!r} -> {tip!r} are held at zero and the links they "
            f"carry are part of the chain's bodies (lock them with locked_joints to choose): {', '.join(held)}"
        )

    # base pose in the root frame (joints above the base at their locked position or held at zero)
    base_pose = np.eye(4)
    link = base
    above: list[str] = []
    while link in chain.parent_joint:
        joint = chain.parent_joint[link]
        motion = np.eye(4)
        if joint.type in MOVABLE_TYPES:
            motion = joint_motion(joint, chain.positions.get(joint.name, 0.0))
            if joint.name in chain.held or joint.name in chain.following:
                above.append(joint.name)
        base_pose = joint.origin @ motion @ base_pose
        link = joint.parent
    if above:
        warn(f"{source}: joints above base link {base!r} are held at zero: {', '.join(above)}")

    index = {j.name: k for k, j in enumerate(chain.joints)}
    in_file = {j.name for j in tree.joints}
    for name in list(extension.motors) + list(extension.frictions):
        # motor/friction data of a joint that is in the file but off the chosen chain (locked, held, on
        # another branch) does not act on the chain: it is dropped; a name the file does not have is an error
        if name not in index and name not in in_file:
            raise ModelError(
                source,
                f"<{EXTENSION_TAG}>/joint[{name}]",
                f"no such joint in the file{suggest(name, sorted(in_file))} (chain joints: {', '.join(index)})",
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
        for k, j in enumerate(chain.joints)
    )
    names = [j.name for j in chain.joints]
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
        smooth_kind=extension.smooth_kind,
        base_link=base,
        tip_link=tip,
    )


# ----------------------------------------------------------------------------------------------
# entry points
# ----------------------------------------------------------------------------------------------
def load_urdf(
    path: str | Path,
    base_link: str | None = None,
    tip_link: str | None = None,
    locked_joints: Mapping[str, float] | None = None,
) -> RobotModel:
    """Load the chain ``base_link`` -> ``tip_link`` of a URDF file (``locked_joints``: ``{joint: position}``)."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ModelError(str(file), "", f"cannot read the file: {exc.strerror or exc}") from None
    root = parse_xml(data, file.name)
    return build_model(root, file.name, base_link, tip_link, location=str(file), locked_joints=locked_joints)


def loads_urdf(
    text: str | bytes,
    base_link: str | None = None,
    tip_link: str | None = None,
    source: str = ROBOT_DESCRIPTION,
    locked_joints: Mapping[str, float] | None = None,
) -> RobotModel:
    """Load the chain of URDF XML text (e.g. the ``robot_description`` parameter)."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return build_model(parse_xml(data, source), source, base_link, tip_link, locked_joints=locked_joints)


def looks_like_xml(text: str | bytes) -> bool:
    head = text.lstrip()[:1]
    return head in ("<", b"<")
