"""Choosing the serial chain of a URDF tree: base and tip links, locked joints, mimic joints.

* ``base_link`` defaults to the root link.
* ``locked_joints`` ``{name: position}`` (rad or m) turns movable joints into fixed ones at the
  given position; a mimic joint whose master is locked (directly or through other mimic joints) is
  locked at ``multiplier * position + offset`` (a mimic joint named in ``locked_joints`` keeps the
  position given there).
* ``tip_link`` defaults to the leaf links below the base that are reached through movable joints:
  a leaf whose movable joints are a subset of another leaf's is rigidly attached to that leaf's
  chain (a sensor, a cover, a tool frame) and is not a candidate; if the remaining leaves all have
  the same movable joints (``tool0`` and ``ee_link`` of a UR arm, the hand and both fingers of a
  Panda once the finger joint is locked) the tip is their deepest common link and everything below
  it is merged into the last link; otherwise the chain is ambiguous and the error lists the
  candidates.
* Every other movable joint gets a position: locked, following a locked master (mimic), or held at
  zero (``held``; the loader warns when the links it carries move with the chain). A mimic joint
  that follows a joint of the chain is returned in ``following`` (its links move relative to the
  chain: an error if they ride on it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError
from ..model import FloatArray, axis_angle_matrix
from .urdf_parse import JointData, Tree
from .validation import require_lock_position, suggest


@dataclass
class Chain:
    base: str
    tip: str
    path: list[JointData]  # every joint from the base link down to the tip link
    joints: list[JointData]  # the model's joints: the movable, unlocked joints of the path
    positions: dict[str, float]  # every other movable joint: locked, mimic of a locked one, or held
    held: set[str] = field(default_factory=set)  # movable joints held at zero (not named anywhere)
    following: dict[str, str] = field(default_factory=dict)  # mimic joint -> the chain joint it follows
    children: dict[str, list[JointData]] = field(default_factory=dict)
    parent_joint: dict[str, JointData] = field(default_factory=dict)


def joint_motion(joint: JointData, position: float) -> FloatArray:
    """The motion ``Rot(axis, q)`` or ``Trans(axis q)`` of a movable joint at ``position``."""
    motion = np.eye(4)
    axis = joint.axis / np.linalg.norm(joint.axis)
    if joint.type == "prismatic":
        motion[:3, 3] = axis * position
    else:
        motion[:3, :3] = axis_angle_matrix(axis, position)
    return motion


def check_locked(tree: Tree, source: str, locked: Mapping[str, float] | None) -> dict[str, float]:
    """Validated ``locked_joints``: known movable joints, finite positions inside the limits."""
    if not locked:
        return {}
    if not isinstance(locked, Mapping):
        raise ModelError(source, "locked_joints", f"expected a mapping joint name -> position, got {locked!r}")
    joints = {j.name: j for j in tree.joints}
    result: dict[str, float] = {}
    for name, value in locked.items():
        if name not in joints:
            known = ", ".join(j.name for j in tree.joints if j.movable)
            raise ModelError(
                source, "locked_joints", f"unknown joint {name!r}{suggest(str(name), joints)} (movable joints: {known})"
            )
        joint = joints[name]
        where = f"locked_joints[{name}]"
        if not joint.movable:
            raise ModelError(
                source, where, f"joint {name!r} is {joint.type}: only revolute, continuous and prismatic joints lock"
            )
        result[name] = require_lock_position(value, joint.limits.lower, joint.limits.upper, source, where)
    return result


def _follow_locked(tree: Tree, locked: dict[str, float]) -> dict[str, float]:
    """Locked positions plus the mimic joints whose master is locked (transitively)."""
    positions = dict(locked)
    changed = True
    while changed:
        changed = False
        for joint in tree.joints:
            mimic = joint.mimic
            if mimic is not None and joint.name not in positions and mimic.joint in positions:
                positions[joint.name] = mimic.multiplier * positions[mimic.joint] + mimic.offset
                changed = True
    return positions


def select_chain(
    tree: Tree,
    source: str,
    base_link: str | None = None,
    tip_link: str | None = None,
    locked_joints: Mapping[str, float] | None = None,
) -> Chain:
    """The chain ``base_link`` -> ``tip_link`` (see the module docstring)."""
    parent_joint: dict[str, JointData] = {}
    children: dict[str, list[JointData]] = defaultdict(list)
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
    if tip_link is not None and tip_link not in tree.links:
        raise ModelError(source, "tip_link", f"unknown link {tip_link!r}{suggest(tip_link, tree.links)}")
    positions = _follow_locked(tree, check_locked(tree, source, locked_joints))

    def moves(joint: JointData) -> bool:
        return joint.movable and joint.name not in positions

    def path_to(link: str) -> list[JointData] | None:
        """Joints from base down to ``link`` (None if ``link`` is not below base)."""
        joints: list[JointData] = []
        while link != base:
            joint = parent_joint.get(link)
            if joint is None:
                return None
            joints.append(joint)
            link = joint.parent
        return joints[::-1]

    if tip_link is None:
        tip = _default_tip(tree, source, base, children, path_to, moves)
    else:
        tip = tip_link
    path = path_to(tip)
    if path is None:
        raise ModelError(source, "tip_link", f"link {tip!r} is not below base link {base!r}")
    for joint in path:
        if joint.type in ("floating", "planar"):
            raise ModelError(
                source, f"joint[{joint.name}]", f"{joint.type} joints are unsupported (serial chains only)"
            )
        if joint.mimic is not None and moves(joint):
            raise ModelError(
                source,
                f"joint[{joint.name}]",
                f"mimic joints on the chain are unsupported (it follows {joint.mimic.joint!r}): lock it or "
                f"{joint.mimic.joint!r} with locked_joints, or choose another tip_link",
            )
    chain_joints = [j for j in path if moves(j)]
    if not chain_joints:
        raise ModelError(source, "tip_link", f"no movable joint between {base!r} and {tip!r}")
    held, following = _rest_positions(tree, {j.name for j in chain_joints}, positions)
    return Chain(base, tip, path, chain_joints, positions, held, following, children, parent_joint)


def _default_tip(
    tree: Tree,
    source: str,
    base: str,
    children: Mapping[str, list[JointData]],
    path_to: Callable[[str], list[JointData] | None],
    moves: Callable[[JointData], bool],
) -> str:
    paths = {name: path for name in tree.links if name != base and (path := path_to(name)) is not None}
    leaves = [name for name in paths if not children.get(name)]
    moving = {leaf: frozenset(j.name for j in paths[leaf] if moves(j)) for leaf in leaves}
    candidates = [leaf for leaf in leaves if moving[leaf]]
    if not candidates:
        raise ModelError(source, "tip_link", f"no movable joint below base link {base!r}")
    maximal = [leaf for leaf in candidates if not any(moving[leaf] < moving[other] for other in candidates)]
    if len({moving[leaf] for leaf in maximal}) > 1:
        listed = ", ".join(f"{leaf!r} ({len(moving[leaf])} movable joints)" for leaf in maximal)
        raise ModelError(
            source,
            "tip_link",
            f"the chain is ambiguous: the leaf links below {base!r} reach different movable joints: {listed}; "
            "pass tip_link (or lock the joints where they differ with locked_joints)",
        )
    # the deepest link common to the candidates' paths
    link_paths = [[base] + [j.child for j in paths[leaf]] for leaf in maximal]
    common = link_paths[0]
    for other in link_paths[1:]:
        k = 0
        while k < min(len(common), len(other)) and common[k] == other[k]:
            k += 1
        common = common[:k]
    return common[-1]


def _rest_positions(tree: Tree, chain: set[str], positions: dict[str, float]) -> tuple[set[str], dict[str, str]]:
    """Fill ``positions`` for every movable joint off the chain; return (held, following)."""
    joints = {j.name: j for j in tree.joints}
    held: set[str] = set()
    following: dict[str, str] = {}

    def resolve(name: str, seen: tuple[str, ...]) -> float | None:
        """Position of a joint off the chain, or None if it follows a chain joint."""
        if name in positions:
            return positions[name]
        if name in chain:
            return None
        joint = joints[name]
        mimic = joint.mimic
        if mimic is None or not joints[mimic.joint].movable or mimic.joint in seen:
            position = 0.0 if mimic is None else mimic.offset
        else:
            master = resolve(mimic.joint, (*seen, name))
            if master is None:
                following[name] = following.get(mimic.joint, mimic.joint)
                return None
            position = mimic.multiplier * master + mimic.offset
        positions[name] = position
        held.add(name)
        return position

    for joint in tree.joints:
        if joint.movable and joint.name not in chain:
            resolve(joint.name, ())
    return held, following
