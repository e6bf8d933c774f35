"""Locking joints of a loaded model (DH YAML robots, models passed in): ``locked_joints`` for any source.

A locked joint becomes rigid at the given position: its link is merged into the previous joint's
link (moved by ``origin_i Rot(axis_i, q_i)``, parallel-axis theorem), or into the base (where it no
longer moves and drops out of the dynamics) when no unlocked joint precedes it; the next joint's
origin absorbs the locked joint's transform, and locked joints after the last unlocked one move
into ``model.tool``. The locked joint's friction and motor data are dropped, and named poses keep
only the unlocked joints' entries. The result is no longer a DH table (``model.dh`` is ``None``).
URDF sources lock while loading instead (:mod:`robot_dynamics.models.urdf_chain`), where mimic joints
and side branches are known too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from ..errors import ModelError
from ..model import FloatArray, Inertial, Joint, RobotModel, axis_angle_matrix
from .validation import require_lock_position, suggest


def _motion(model: RobotModel, i: int, position: float) -> FloatArray:
    joint = model.joints[i]
    motion = np.eye(4)
    if joint.is_prismatic:
        motion[:3, 3] = joint.axis * position
    else:
        motion[:3, :3] = axis_angle_matrix(joint.axis, position)
    return motion


def _merged(a: Inertial, b: Inertial) -> Inertial:
    """Two bodies in one frame joined rigidly (massless ones keep their inertia)."""
    if a.mass + b.mass == 0.0:
        return Inertial(0.0, a.com, a.inertia + b.inertia)
    return a + b


def check_positions(model: RobotModel, locked: Mapping[str, float], source: str) -> dict[str, float]:
    """Validated ``{joint: position}``: joints of the model, finite positions inside the limits."""
    if not isinstance(locked, Mapping):
        raise ModelError(source, "locked_joints", f"expected a mapping joint name -> position, got {locked!r}")
    names = model.joint_names
    result: dict[str, float] = {}
    for name, value in locked.items():
        if name not in names:
            raise ModelError(
                source,
                "locked_joints",
                f"unknown joint {name!r}{suggest(str(name), names)} (joints: {', '.join(names)})",
            )
        limits = model.joints[names.index(name)].limits
        result[name] = require_lock_position(value, limits.lower, limits.upper, source, f"locked_joints[{name}]")
    return result


def lock_joints(model: RobotModel, locked: Mapping[str, float], source: str | None = None) -> RobotModel:
    """``model`` with the joints ``locked`` ``{name: position}`` made rigid (see the module docstring)."""
    source = source or model.source or model.name
    positions = check_positions(model, locked, source)
    if not positions:
        return model
    if len(positions) == model.dof:
        raise ModelError(source, "locked_joints", "every joint is locked: no joint would be left")
    joints: list[Joint] = []
    carried = np.eye(4)  # pose of the current (possibly locked) frame in the last kept joint's frame
    kept_link: Inertial | None = None  # the body of the last kept joint (None: the base)
    for i, joint in enumerate(model.joints):
        if joint.name not in positions:
            if joints and kept_link is not None:
                joints[-1] = replace(joints[-1], link=kept_link)
            joints.append(replace(joint, origin=carried @ joint.origin))
            kept_link = joint.link
            carried = np.eye(4)
            continue
        carried = carried @ joint.origin @ _motion(model, i, positions[joint.name])
        if kept_link is not None:
            kept_link = _merged(kept_link, joint.link.transformed(carried))
    if kept_link is not None:
        joints[-1] = replace(joints[-1], link=kept_link)
    keep = [k for k, joint in enumerate(model.joints) if joint.name not in positions]
    return model.with_changes(
        joints=tuple(joints),
        tool=carried @ model.tool,
        dh=None,
        named_poses={name: q[keep] for name, q in model.named_poses.items()},
    )
