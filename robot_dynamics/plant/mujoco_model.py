"""The MuJoCo model (``MjModel``) of a robot, built through MuJoCo's own compiler.

Sources (:func:`plant_source`):

* a URDF file or URDF text, prepared by :mod:`robot_dynamics.plant.urdf_source` (the chain options
  applied as the model loader applies them, the inertials kept exactly, meshes resolved or dropped);
* a bundled DH robot or a DH YAML file, exported by :func:`robot_dynamics.models.model_to_urdf` and
  then compiled as a URDF (locked joints are already part of the exported chain);
* an MJCF file, for users who have one: its joints named like the model's joints are the chain;
  ``locked_joints`` that name other joints weld them at that position (joint deleted, the body's
  pose moved by the joint's motion); a joint that is neither, and that moves a body riding on the
  chain, is an error (the chain would not be the model's).

:func:`compile_plant` then sets, on the chain's joints, the robot model's joint terms that MuJoCo has
(``armature`` = the reflected motor inertia ``G^2 Jm`` when the model counts it in D, ``damping`` =
its viscous friction ``Fv`` (joint + motor), ``frictionloss`` = its Coulomb level ``Fc``), replaced by
the plant deviations where those give values; the physics options (gravity = the model's, timestep,
integrator); the payload as an extra body at the tool; and compiles. Friction terms MuJoCo has no
element for (an asymmetric Coulomb part, Stribeck, load-dependent bearing and transmission friction)
are left out and named in :attr:`CompiledPlant.notes`.

Inertias MuJoCo's compiler refuses: published data whose principal moments violate the triangle
inequality, or are zero (the PUMA 560's links 1 and 3, Corke & Armstrong-Hélouvry 1994), are
compiled with a placeholder (all three moments equal to the largest) and then the file's exact mass,
principal moments and principal axes are written into the compiled model; MuJoCo's algorithms take any
inertia (only its compiler checks), so the plant's dynamics are the file's. Mass and inertia scales of
the deviations are applied to the compiled model the same way, followed by ``mj_setConst`` (the
constants MuJoCo derives from masses).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np
from numpy.typing import NDArray

from robot_dynamics.errors import ModelError
from robot_dynamics.friction import friction_parameters
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.models import load_robot, model_to_urdf
from robot_dynamics.models.robots import bundled_robot_path
from robot_dynamics.models.urdf import looks_like_xml
from robot_dynamics.payload import NO_PAYLOAD, Payload
from robot_dynamics.plant.deviations import NO_DEVIATIONS, Deviations, ResolvedDeviations
from robot_dynamics.plant.mujoco_obstacles import ObstacleContacts, add_obstacles, configure_obstacles
from robot_dynamics.plant.obstacles import NO_OBSTACLES, Obstacles
from robot_dynamics.plant.urdf_source import plant_urdf, plant_urdf_file

INTEGRATORS = {"implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST, "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT}
INTEGRATORS |= {"euler": mujoco.mjtIntegrator.mjINT_EULER, "rk4": mujoco.mjtIntegrator.mjINT_RK4}
PAYLOAD_BODY = "robot_dynamics_payload"
HINGE, SLIDE = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)


@dataclass(frozen=True)
class PlantSource:
    """What MuJoCo compiles and how it maps onto the robot model's joints."""

    name: str  # the file (or robot) named in errors
    joints: tuple[str, ...]  # MuJoCo joint names in model order
    tip: str  # the body whose frame is the tool frame
    urdf: str = ""  # prepared URDF text, or
    mjcf: Path | None = None  # an MJCF file
    frozen: Mapping[str, float] = field(default_factory=dict)  # MJCF joints welded at a position
    dropped: tuple[str, ...] = ()  # collision geometry left out, with reasons


def plant_source(
    robot: str | Path,
    base_link: str | None = None,
    tip_link: str | None = None,
    locked_joints: Mapping[str, float] | None = None,
    *,
    mjcf: str | Path | None = None,
    joint_names: Sequence[str] = (),
) -> PlantSource:
    """The plant source of a robot given as every node takes it (see the module docstring).

    ``robot``: URDF text, a URDF file, a DH YAML file or a bundled robot name; ``mjcf``: an MJCF file
    used instead, whose chain is ``joint_names`` (the robot model's, in order) with tip body
    ``tip_link`` (default: the body of the last joint).
    """
    if mjcf:
        return _mjcf_source(Path(mjcf), joint_names, tip_link, locked_joints or {})
    text = str(robot)
    if looks_like_xml(text):
        prepared = plant_urdf(text.encode("utf-8"), "<robot_description>", None, base_link, tip_link, locked_joints)
        return PlantSource(
            "<robot_description>", prepared.joints, prepared.tip_link, prepared.text, None, {}, prepared.dropped
        )
    path = Path(text).expanduser()
    if not path.suffix and "/" not in text and not path.exists():
        path = bundled_robot_path(text)
    if path.suffix.lower() in (".urdf", ".xml"):
        prepared = plant_urdf_file(path, base_link, tip_link, locked_joints)
        return PlantSource(path.name, prepared.joints, prepared.tip_link, prepared.text, None, {}, prepared.dropped)
    model = load_robot(path, base_link, tip_link, locked_joints)  # a DH or chain YAML robot
    prepared = plant_urdf(model_to_urdf(model, visuals=False).encode("utf-8"), path.name)
    return PlantSource(path.name, prepared.joints, prepared.tip_link, prepared.text, None, {}, prepared.dropped)


def _mjcf_source(
    path: Path, joint_names: Sequence[str], tip_link: str | None, locked: Mapping[str, float]
) -> PlantSource:
    spec = _load_spec(PlantSource(path.name, (), "", mjcf=path))
    names = {j.name for j in spec.joints}
    missing = [name for name in joint_names if name not in names]
    if missing:
        raise ModelError(path.name, f"joint[{missing[0]}]", f"the MJCF has no such joint; its joints: {sorted(names)}")
    unknown = [name for name in locked if name not in names]
    if unknown:
        raise ModelError(path.name, f"locked_joints[{unknown[0]}]", f"the MJCF has no such joint: {sorted(names)}")
    tip = tip_link or spec.joint(joint_names[-1]).parent.name
    if spec.body(tip) is None:
        raise ModelError(path.name, "tip_link", f"the MJCF has no body {tip!r}")
    return PlantSource(path.name, tuple(joint_names), tip, "", path, dict(locked), ())


def _load_spec(source: PlantSource) -> mujoco.MjSpec:
    try:
        if source.mjcf is not None:
            return mujoco.MjSpec.from_file(str(source.mjcf))
        return mujoco.MjSpec.from_string(source.urdf)
    except (ValueError, OSError) as exc:
        raise ModelError(source.name, "", f"MuJoCo cannot read it: {' '.join(str(exc).split())}") from None


@dataclass(frozen=True, eq=False)
class CompiledPlant:
    """A compiled plant: the MjModel and where the model's joints are in it."""

    model: mujoco.MjModel
    qpos: NDArray[np.intp]  # qpos address of each model joint
    dof: NDArray[np.intp]  # dof address of each model joint
    joint_ids: NDArray[np.intp]
    tip_body: int
    source: PlantSource
    notes: tuple[str, ...] = ()
    obstacles: ObstacleContacts | None = None  # the obstacles' contacts (robot_dynamics.plant.mujoco_obstacles)


def nominal_joint_terms(model: RobotModel) -> tuple[dict[str, FloatArray], list[str]]:
    """The model's ``armature``, ``damping`` and ``friction`` (MuJoCo terms) and what MuJoCo cannot hold."""
    n = model.dof
    armature = np.array(model.arrays.reflected_motor_inertia) if model.motor_inertia_in_d else np.zeros(n)
    notes = []
    if model.has_friction:
        f = friction_parameters(model)
        damping, coulomb = np.array(f.total_viscous), np.array(f.level_odd)
        names = model.joint_names
        for what, mask in (
            ("an asymmetric Coulomb part", np.abs(f.level_even) > 0.0),
            ("a Stribeck (static) level", (f.ts_pos != f.tc_pos) | (f.ts_neg != f.tc_neg)),
            ("a drive's constant offset", f.offset != 0.0),
        ):
            if mask.any():
                notes.append(f"{what} of joints {[names[i] for i in np.flatnonzero(mask)]} (no MuJoCo element)")
        if f.has_bearing or f.has_transmission:
            notes.append("load-dependent bearing/transmission friction (no MuJoCo element)")
    else:
        damping, coulomb = np.zeros(n), np.zeros(n)
    return {"armature": armature, "damping": damping, "friction": coulomb}, notes


def _quat_of(rotation: FloatArray) -> FloatArray:
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(rotation, dtype=np.float64).ravel())
    return quat


def _rotation_of(quat: FloatArray) -> FloatArray:
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, np.asarray(quat, dtype=np.float64) / np.linalg.norm(quat))
    return mat.reshape(3, 3)


def _principal(body: mujoco.MjsBody) -> tuple[FloatArray, FloatArray] | None:
    """Principal moments and axes quaternion (body frame) of an explicit full inertia; None otherwise."""
    full = np.asarray(body.fullinertia, dtype=np.float64)
    if not body.explicitinertial or math.isnan(full[0]):
        return None
    xx, yy, zz, xy, xz, yz = full
    tensor = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    moments, axes = np.linalg.eigh(tensor)
    if np.linalg.det(axes) < 0.0:
        axes[:, 0] *= -1.0
    return moments, _quat_of(_rotation_of(np.asarray(body.iquat)) @ axes)


def _placeholders(spec: mujoco.MjSpec) -> dict[str, tuple[float, FloatArray, FloatArray]]:
    """Bodies whose inertia MuJoCo's compiler refuses, given a placeholder; their exact data by name."""
    exact = {}
    for body in spec.bodies:
        principal = _principal(body)
        if principal is None:
            continue
        w, quat = principal
        a, b, c = np.sort(w)
        if a > 0.0 and a + b > c * (1.0 + 1e-9) and body.mass > mujoco.mjMINVAL:
            continue
        exact[body.name] = (float(body.mass), w, quat)
        body.fullinertia = [math.nan] * 6
        body.inertia = [max(c, 1e-9)] * 3
        body.mass = max(float(body.mass), 1.0)
    return exact


def _freeze(spec: mujoco.MjSpec, source: PlantSource) -> None:
    """Weld the MJCF joints of ``source.frozen`` at their positions (see the module docstring)."""
    if not source.frozen:
        return
    compiled = spec.compile()
    for name, position in source.frozen.items():
        jid = mujoco.mj_name2id(compiled, mujoco.mjtObj.mjOBJ_JOINT, name)
        kind = int(compiled.jnt_type[jid])
        if kind not in (HINGE, SLIDE):
            raise ModelError(source.name, f"locked_joints[{name}]", "only hinge and slide joints lock")
        bid = compiled.jnt_bodyid[jid]
        pose = np.eye(4)
        pose[:3, :3], pose[:3, 3] = _rotation_of(compiled.body_quat[bid]), compiled.body_pos[bid]
        axis, anchor = compiled.jnt_axis[jid], compiled.jnt_pos[jid]
        motion = np.eye(4)
        amount = position - float(compiled.qpos0[compiled.jnt_qposadr[jid]])
        if kind == SLIDE:
            motion[:3, 3] = axis * amount
        else:
            rotation = np.zeros(9)
            mujoco.mju_axisAngle2Quat(quat := np.zeros(4), axis, amount)
            mujoco.mju_quat2Mat(rotation, quat)
            motion[:3, :3] = rotation.reshape(3, 3)
            motion[:3, 3] = anchor - motion[:3, :3] @ anchor
        pose = pose @ motion
        body = spec.joint(name).parent
        body.pos, body.quat = pose[:3, 3], _quat_of(pose[:3, :3])
        body.alt.type = mujoco.mjtOrientation.mjORIENTATION_QUAT
        spec.delete(spec.joint(name))
        for equality in list(spec.equalities):
            if name in (equality.name1, equality.name2):
                spec.delete(equality)


def compile_plant(
    source: PlantSource,
    nominal: RobotModel,
    deviations: Deviations = NO_DEVIATIONS,
    payload: Payload = NO_PAYLOAD,
    *,
    timestep: float = 0.001,
    integrator: str = "implicitfast",
    obstacles: Obstacles = NO_OBSTACLES,
) -> CompiledPlant:
    """Compile the plant of ``source`` for the robot model ``nominal`` (see the module docstring).

    ``nominal``'s joints are ``source.joints`` in order (its names may be the ``joint_map``'s topic
    names: the deviation file may use either). With ``obstacles`` the arm's only contacts are with them
    (:mod:`robot_dynamics.plant.mujoco_obstacles`).
    """
    if integrator not in INTEGRATORS:
        raise ValueError(f"integrator must be one of {list(INTEGRATORS)}, got {integrator!r}")
    spec = _load_spec(source)
    _freeze(spec, source)
    add_obstacles(spec, obstacles, source.name)
    spec.option.gravity = np.asarray(nominal.gravity, dtype=np.float64)
    spec.option.timestep = float(timestep)
    spec.option.integrator = INTEGRATORS[integrator]
    terms, notes = nominal_joint_terms(nominal)
    for i, name in enumerate(source.joints):
        joint = spec.joint(name)
        joint.armature = float(terms["armature"][i])
        joint.damping = [float(terms["damping"][i]), 0.0, 0.0]  # linear damping, no polynomial terms
        joint.frictionloss = float(terms["friction"][i])
    if not payload.is_empty:
        inertia = payload.inertia
        body = spec.body(source.tip).add_body(name=PAYLOAD_BODY)  # at the tool frame
        body.mass, body.ipos, body.iquat, body.explicitinertial = payload.mass, payload.com, [1, 0, 0, 0], True
        body.fullinertia = [inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2], inertia[1, 2]]
    exact = _placeholders(spec)
    try:
        model = spec.compile()
    except ValueError as exc:
        raise ModelError(source.name, "", f"MuJoCo cannot compile it: {' '.join(str(exc).split())}") from None
    for name, (mass, moments, quat) in exact.items():
        bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
        model.body_mass[bid], model.body_inertia[bid], model.body_iquat[bid] = mass, moments, quat
    if exact:
        notes.append(f"inertias MuJoCo's compiler refuses, written exactly after compiling: {sorted(exact)}")
    joint_ids = np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in source.joints], np.intp)
    for name, jid in zip(source.joints, joint_ids, strict=True):
        if jid < 0 or int(model.jnt_type[jid]) not in (HINGE, SLIDE):
            raise ModelError(source.name, f"joint[{name}]", "is not a hinge or slide joint of the compiled model")
    tip = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, source.tip)
    _check_chain(model, source, joint_ids)
    _deviate(model, joint_ids, deviations, terms, list(zip(source.joints, nominal.joint_names, strict=True)))
    contacts = configure_obstacles(model, obstacles)
    return CompiledPlant(
        model,
        np.asarray(model.jnt_qposadr[joint_ids], dtype=np.intp),
        np.asarray(model.jnt_dofadr[joint_ids], dtype=np.intp),
        joint_ids,
        int(tip),
        source,
        tuple(notes) + tuple(f"collision geometry dropped: {d}" for d in source.dropped),
        contacts,
    )


def _deviate(
    model: mujoco.MjModel,
    joint_ids: NDArray[np.intp],
    deviations: Deviations,
    terms: Mapping[str, FloatArray],
    aliases: Sequence[tuple[str, str]],
) -> None:
    """Apply the deviations to the compiled model, then recompute MuJoCo's derived constants."""
    owner = chain_bodies(model, joint_ids)
    links = [model.body(b).name for b in range(1, model.nbody)]
    moving = [model.body(b).name for b in range(1, model.nbody) if owner[b] >= 0 and model.body_mass[b] > 0.0]
    resolved: ResolvedDeviations = deviations.resolve(aliases, links, moving)
    dof = model.jnt_dofadr[joint_ids]
    for key, field_ in (
        ("armature", model.dof_armature),
        ("damping", model.dof_damping),
        ("friction", model.dof_frictionloss),
    ):
        field_[dof] = resolved.joint_values(key, terms[key])
    for bid in range(1, model.nbody):
        name = model.body(bid).name
        model.body_mass[bid] *= resolved.mass_scale.get(name, 1.0)
        model.body_inertia[bid] *= resolved.inertia_scale.get(name, 1.0)
    mujoco.mj_setConst(model, mujoco.MjData(model))


def chain_bodies(model: mujoco.MjModel, joint_ids: NDArray[np.intp]) -> list[int]:
    """For every body, the index of the model joint whose body carries it (-1: fixed to the world)."""
    owner_body = {int(model.jnt_bodyid[j]): k for k, j in enumerate(joint_ids)}
    owner = [-1] * model.nbody
    for bid in range(1, model.nbody):  # parents come first in MuJoCo's body order
        owner[bid] = owner_body.get(bid, owner[int(model.body_parentid[bid])])
    return owner


def _check_chain(model: mujoco.MjModel, source: PlantSource, joint_ids: NDArray[np.intp]) -> None:
    """The model's joints form a serial chain and nothing else moves on it (MJCF sources)."""
    owner = chain_bodies(model, joint_ids)
    for k, jid in enumerate(joint_ids):
        bid = int(model.jnt_bodyid[jid])
        if model.body_jntnum[bid] != 1:
            raise ModelError(source.name, f"body[{model.body(bid).name}]", "a chain body must have exactly one joint")
        if k > 0 and owner[int(model.body_parentid[bid])] != k - 1:
            previous = source.joints[k - 1]
            raise ModelError(
                source.name, f"joint[{source.joints[k]}]", f"does not follow joint {previous!r} on a chain"
            )
    chain = {int(model.jnt_bodyid[j]) for j in joint_ids}
    for jid in range(model.njnt):
        bid = int(model.jnt_bodyid[jid])
        if bid not in chain and owner[bid] >= 0:
            name = model.joint(jid).name
            raise ModelError(
                source.name, f"joint[{name}]", "moves a body that rides on the chain: lock it with locked_joints"
            )
