"""Obstacles in the MuJoCo plant: their bodies, their contacts with the arm and the contact force.

**Bodies** (:func:`add_obstacles`, on the ``MjSpec`` before it compiles): each obstacle of
:mod:`robot_dynamics.plant.obstacles` is a geom (a box of half-sizes ``size / 2``, a cylinder of radius
and half-length) at its position and roll-pitch-yaw. A rigid obstacle's geom belongs to the world body.
A compliant obstacle's geom belongs to a body of its own, of mass ``mass``, held at its place by three
slide joints along its axes with spring ``stiffness`` (``springref`` 0) and ``damping``, its weight
compensated (``gravcomp`` 1): at rest it deflects by ``δ = F / K`` under the force ``F`` the arm exerts,
whatever the number of contact points.

Why not ``solref`` alone: MuJoCo's soft contact (*Modeling*, "Solver parameters") is a spring per
contact *point* (a constraint row), ``a + d (b v + k r) = (1 - d) a_0``, whose force at rest is
``f = -K_mj r / ((1 - d) A)`` for the direct format ``solref = (-K_mj, -B_mj)``, with ``A`` the row's
approximate inverse inertia (``body_invweight0`` of the touching link): a mesh face pressed on a
wall makes several points, each such a spring, so the wall's stiffness would depend on how many points
the collision detector reports (measured: 7 points on a UR5 wrist, 4.7 times the stiffness asked for).
The obstacle's own springs make ``K`` the stiffness of the obstacle.

**Contacts with the arm only.** Every geom's ``contype`` and ``conaffinity`` are set to 0, so MuJoCo's
dynamic contact generation (which would collide the stock collision meshes with each other) produces
nothing, and one explicit ``<contact><pair>`` per (obstacle, collision geom of a link that moves with
the chain) makes the arm-obstacle contacts — the plant's only contacts (MuJoCo, *Modeling*, "Contact
pairs": explicit pairs bypass the ``contype``/``conaffinity`` filter). A frictionless obstacle's pairs
have ``condim`` 1 (the normal force alone), with friction ``condim`` 3 and that coefficient. Every pair
is MuJoCo's stiffest safe contact: ``solref = (2 Δt, 1)`` (time constant two physics steps, critically
damped, the least MuJoCo's ``refsafe`` allows) and ``solimp`` 0.99 (penetration at rest
``r = a_0 (1 - d) timeconst²``, micrometres for the forces of an arm).

**The contact force** (:func:`obstacle_forces`): ``mj_contactForce`` of every contact, turned from the
contact frame into world axes and signed as the force the obstacle exerts on the arm, summed per
obstacle: force ``(m, 3)`` N and moment about the world origin ``(m, 3)`` N·m;
:func:`obstacle_deflections`: each compliant obstacle's displacement ``(m, 3)`` m (0 for rigid ones).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np
from numpy.typing import NDArray

from robot_dynamics.errors import ModelError
from robot_dynamics.model import FloatArray
from robot_dynamics.plant.obstacles import Obstacles

PREFIX = "obstacle:"
RIGID_IMPEDANCE = 0.99  # solimp d of every obstacle contact
GEOM = {"box": mujoco.mjtGeom.mjGEOM_BOX, "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER}


def _quat_rpy(rpy: tuple[float, float, float]) -> list[float]:
    """``R = Rz(yaw) Ry(pitch) Rx(roll)`` as a quaternion ``(w, x, y, z)`` (URDF's convention)."""
    r, p, y = (0.5 * a for a in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return [
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    ]


def _linear(current: Any, value: float) -> Any:
    """A joint's stiffness or damping ``value`` in the form the MuJoCo version holds it: a number, or the
    coefficients of a polynomial (linear term first, the others 0)."""
    size = np.size(current)
    return value if size == 1 else [value] + [0.0] * (size - 1)


def _moves(body: mujoco.MjsBody, world: mujoco.MjsBody) -> bool:
    """Whether ``body`` or one of its ancestors has a joint."""
    while body is not None and body.name != world.name:
        if body.joints:
            return True
        body = body.parent
    return False


def add_obstacles(spec: mujoco.MjSpec, obstacles: Obstacles, source: str) -> None:
    """The obstacles' geoms and their pairs with the moving links' geoms; dynamic contacts off."""
    if not len(obstacles):
        return
    world = spec.worldbody
    arm = []
    for k, geom in enumerate(spec.geoms):
        geom.contype, geom.conaffinity = 0, 0
        if _moves(geom.parent, world):
            if not geom.name:
                geom.name = f"robot_dynamics_geom_{k}"
            arm.append(geom.name)
    if not arm:
        raise ModelError(source, "obstacles", "the robot has no collision geometry on its moving links to touch them")
    for o in obstacles.items:
        size = [0.5 * s for s in o.size] if o.shape == "box" else [o.size[0], 0.5 * o.size[1], 0.0]
        holder = world
        if not o.rigid:  # a body on three springs (module docstring)
            holder = world.add_body(name=PREFIX + o.name, pos=list(o.position), quat=_quat_rpy(o.rpy))
            holder.mass, holder.inertia, holder.explicitinertial, holder.gravcomp = o.mass, [1e-3] * 3, True, 1.0
            for axis, unit in zip("xyz", np.eye(3), strict=True):
                joint = holder.add_joint(name=f"{PREFIX}{o.name}:{axis}", type=mujoco.mjtJoint.mjJNT_SLIDE)
                joint.axis, joint.springref = unit, 0.0
                joint.stiffness = _linear(joint.stiffness, float(o.stiffness or 0.0))
                joint.damping = _linear(joint.damping, o.damping)
        geom = holder.add_geom(name=PREFIX + o.name, type=GEOM[o.shape], size=size)
        if o.rigid:
            geom.pos, geom.quat = list(o.position), _quat_rpy(o.rpy)
        geom.contype, geom.conaffinity, geom.rgba = 0, 0, [0.8, 0.3, 0.3, 0.5]
        for name in arm:
            pair = spec.add_pair(geomname1=PREFIX + o.name, geomname2=name)
            pair.condim = 3 if o.friction > 0.0 else 1
            pair.friction = [o.friction, o.friction, 0.0, 0.0, 0.0]


@dataclass(frozen=True, eq=False)
class ObstacleContacts:
    """The compiled obstacles: their names, geom ids and, per obstacle, the ``qpos`` addresses of its three
    slide joints (-1: a rigid obstacle)."""

    names: tuple[str, ...]
    geoms: NDArray[np.intp]
    springs: NDArray[np.intp]


def configure_obstacles(model: mujoco.MjModel, obstacles: Obstacles) -> ObstacleContacts | None:
    """The pairs' ``solref``/``solimp`` (module docstring) and where the obstacles are in ``model``."""
    if not len(obstacles):
        return None
    names = obstacles.names
    geoms = np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, PREFIX + n) for n in names], dtype=np.intp)
    springs = np.full((len(names), 3), -1, dtype=np.intp)
    for k, o in enumerate(obstacles.items):
        if not o.rigid:
            for i, axis in enumerate("xyz"):
                jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, f"{PREFIX}{o.name}:{axis}")
                springs[k, i] = model.jnt_qposadr[jid]
    for p in range(model.npair):
        model.pair_solref[p] = [2.0 * model.opt.timestep, 1.0]
        model.pair_solimp[p] = [RIGID_IMPEDANCE, RIGID_IMPEDANCE, 0.001, 0.5, 2.0]
    return ObstacleContacts(names, geoms, springs)


def obstacle_deflections(data: mujoco.MjData, contacts: ObstacleContacts) -> FloatArray:
    """Each obstacle's displacement from its place ``(m, 3)`` m, in its own axes (0 for a rigid one)."""
    springs = contacts.springs
    return np.where(springs >= 0, data.qpos[np.maximum(springs, 0)], 0.0)


def obstacle_forces(
    model: mujoco.MjModel, data: mujoco.MjData, contacts: ObstacleContacts
) -> tuple[FloatArray, FloatArray]:
    """The force ``(m, 3)`` each obstacle exerts on the arm (world axes) and its moment about the world
    origin ``(m, 3)``, from the contacts of ``data`` (module docstring)."""
    m = len(contacts.names)
    force, moment = np.zeros((m, 3)), np.zeros((m, 3))
    if not data.ncon:
        return force, moment
    local = np.zeros(6)
    index = {int(g): k for k, g in enumerate(contacts.geoms)}
    for c in range(data.ncon):
        con = data.contact[c]
        k = index.get(int(con.geom1))
        sign = 1.0  # the normal points from geom1 to geom2: +f is the force on geom2
        if k is None:
            k, sign = index.get(int(con.geom2)), -1.0
        if k is None:
            continue
        mujoco.mj_contactForce(model, data, c, local)
        f = sign * (con.frame.reshape(3, 3).T @ local[:3])
        force[k] += f
        moment[k] += np.cross(con.pos, f)
    return force, moment


__all__ = [
    "RIGID_IMPEDANCE",
    "ObstacleContacts",
    "add_obstacles",
    "configure_obstacles",
    "obstacle_deflections",
    "obstacle_forces",
]
