"""The plant's true model: a :class:`RobotModel` read back from the compiled MuJoCo model.

What the plant simulates, in this package's terms, so other code can compare "the model the plant is
built from" with what it identifies: the rigid-body chain of the compiled ``MjModel`` (deviations and
payload included), the joint ``armature`` as a motor inertia ``Motor(inertia=armature, gear_ratio=1)``
counted in D (a joint-side reflected inertia), ``damping`` as viscous and ``frictionloss`` as symmetric
Coulomb friction. MuJoCo's friction loss is a soft constraint, so the Coulomb term is what the
plant's friction tends to, not bit-exact.

Frames (:mod:`robot_dynamics.model`): ``F_i`` is the body of joint ``i`` moved to the joint's anchor
(``jnt_pos``), with the body's axes; the base ``F_0`` is the world pose of the first joint body's
parent; every body that does not move relative to a chain body (welded to it) is summed into that
joint's link (parallel-axis theorem); bodies fixed to the world are left out, as the URDF loader
leaves out links that do not move. Poses are taken at ``qpos0`` and referred to q = ``qpos0`` - ``ref``
(0 for a URDF), so the model's q is MuJoCo's ``qpos`` of the joint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import mujoco
import numpy as np

from robot_dynamics.model import FloatArray, Inertial, Joint, JointFriction, Limits, Motor, RobotModel
from robot_dynamics.plant.mujoco_model import SLIDE, chain_bodies


def _pose(rotation: FloatArray, position: FloatArray) -> FloatArray:
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = rotation, position
    return pose


def _rotation(quat: FloatArray) -> FloatArray:
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, np.asarray(quat, dtype=np.float64))
    return mat.reshape(3, 3)


def _motion(kind: int, axis: FloatArray, amount: float) -> FloatArray:
    motion = np.eye(4)
    if kind == SLIDE:
        motion[:3, 3] = axis * amount
    else:
        quat = np.zeros(4)
        mujoco.mju_axisAngle2Quat(quat, np.asarray(axis, dtype=np.float64), amount)
        motion[:3, :3] = _rotation(quat)
    return motion


def true_model(
    model: mujoco.MjModel,
    joint_ids: Sequence[int],
    names: Sequence[str],
    tip_body: int,
    *,
    name: str = "plant",
    limits: Sequence[Limits] | None = None,
    source: str = "",
) -> RobotModel:
    """The :class:`RobotModel` of the compiled plant (see the module docstring).

    ``names``: the model's joint names (model order); ``limits``: the robot file's limits to carry.
    """
    ids = np.asarray(joint_ids, dtype=np.intp)
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0
    mujoco.mj_kinematics(model, data)
    world = [_pose(data.xmat[b].reshape(3, 3), data.xpos[b]) for b in range(model.nbody)]
    frames = []  # world pose of F_i at q = 0
    for jid in ids:
        bid = int(model.jnt_bodyid[jid])
        anchor = world[bid] @ _pose(np.eye(3), model.jnt_pos[jid])
        ref = float(model.qpos0[model.jnt_qposadr[jid]])
        frames.append(anchor @ np.linalg.inv(_motion(int(model.jnt_type[jid]), model.jnt_axis[jid], ref)))
    first_parent = int(model.body_parentid[model.jnt_bodyid[ids[0]]])
    base = world[first_parent]
    owner = chain_bodies(model, ids)
    links = [Inertial() for _ in ids]
    for bid in range(1, model.nbody):
        k = owner[bid]
        if k < 0 or (model.body_mass[bid] == 0.0 and not model.body_inertia[bid].any()):
            continue
        principal = _pose(_rotation(model.body_iquat[bid]), model.body_ipos[bid])
        body = Inertial(float(model.body_mass[bid]), np.zeros(3), np.diag(model.body_inertia[bid]))
        in_frame = np.linalg.inv(frames[k]) @ world[bid] @ principal
        links[k] = _joined(links[k], body.transformed(in_frame))
    joints = []
    previous = base
    for k, jid in enumerate(ids):
        dof = int(model.jnt_dofadr[jid])
        armature, damping = float(model.dof_armature[dof]), float(model.dof_damping[dof])
        coulomb = float(model.dof_frictionloss[dof])
        joints.append(
            Joint(
                name=names[k],
                kind="prismatic" if int(model.jnt_type[jid]) == SLIDE else "revolute",
                origin=np.asarray(np.linalg.inv(previous) @ frames[k], dtype=np.float64),
                axis=np.array(model.jnt_axis[jid]),
                link=links[k],
                link_name=model.body(int(model.jnt_bodyid[jid])).name,
                limits=limits[k] if limits is not None else Limits(),
                friction=JointFriction(viscous=damping, coulomb=(coulomb, -coulomb)),
                motor=Motor(inertia=armature, gear_ratio=1.0) if armature else None,
            )
        )
        previous = frames[k]
    return RobotModel(
        name=name,
        joints=tuple(joints),
        gravity=np.array(model.opt.gravity),
        base=base,
        tool=np.linalg.inv(frames[-1]) @ world[tip_body],
        source=source,
        base_link=model.body(first_parent).name,
        tip_link=model.body(tip_body).name,
    )


def link_side(model: RobotModel) -> RobotModel:
    """``model`` without joint friction and motor inertia: the model of a plant's link-side joint
    torques (``torque_sensing="link"``, :mod:`robot_dynamics.plant.base`)."""
    joints = tuple(replace(j, friction=JointFriction(), motor=None) for j in model.joints)
    return model.with_changes(joints=joints, name=f"{model.name}, link side")


def _joined(a: Inertial, b: Inertial) -> Inertial:
    """Two parts of one link in the same frame (massless parts keep their inertia)."""
    if a.mass + b.mass == 0.0:
        return Inertial(0.0, a.com, a.inertia + b.inertia)
    return a + b
