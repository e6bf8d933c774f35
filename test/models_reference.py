"""Independent reference for the models tests: world-frame kinematics and Newton-Euler, one state at a time.

Written from the textbook equations (Fu 3.3-53..57 in the world frame) with plain loops; used to
check that loaded models carry the right parameters (against Pinocchio, Robotics Toolbox and the
books' closed forms) without depending on the engine under test.
"""

from __future__ import annotations

import math

import numpy as np

from robot_dynamics.dynamics import inertia_matrix, inverse_dynamics
from robot_dynamics.model import RobotModel, axis_angle_matrix


def joint_motion(model: RobotModel, i: int, qi: float) -> np.ndarray:
    joint = model.joints[i]
    motion = np.eye(4)
    if joint.is_prismatic:
        motion[:3, 3] = joint.axis * qi
    else:
        motion[:3, :3] = axis_angle_matrix(joint.axis, qi)
    return motion


def link_frames(model: RobotModel, q: np.ndarray) -> list[np.ndarray]:
    """World poses of F_1..F_n, then the tool."""
    pose = model.base.copy()
    frames = []
    for i, joint in enumerate(model.joints):
        pose = pose @ joint.origin @ joint_motion(model, i, float(q[i]))
        frames.append(pose)
    frames.append(pose @ model.tool)
    return frames


def world_inertials(model: RobotModel, q: np.ndarray) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """(mass, world c.o.m., world inertia about the c.o.m.) of every link."""
    out = []
    for joint, pose in zip(model.joints, link_frames(model, q)[:-1], strict=False):
        r = pose[:3, :3]
        out.append((joint.link.mass, pose[:3, :3] @ joint.link.com + pose[:3, 3], r @ joint.link.inertia @ r.T))
    return out


def rnea(model: RobotModel, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray, gravity: bool = True) -> np.ndarray:
    """Rigid-body joint torques (no motor inertia, no friction), world-frame recursive Newton-Euler."""
    n = model.dof
    frames = link_frames(model, q)
    w = np.zeros(3)
    wd = np.zeros(3)
    a = -model.gravity if gravity else np.zeros(3)  # fictitious base acceleration -g
    p_prev = model.base[:3, 3]
    forces, moments, coms, axes, origins = [], [], [], [], []
    for i, joint in enumerate(model.joints):
        pose = frames[i]
        z = pose[:3, :3] @ joint.axis
        p = pose[:3, 3]
        r = p - p_prev
        a = a + np.cross(wd, r) + np.cross(w, np.cross(w, r))
        if joint.is_prismatic:
            a = a + 2.0 * np.cross(w, z * qd[i]) + z * qdd[i]
        else:
            wd = wd + z * qdd[i] + np.cross(w, z * qd[i])
            w = w + z * qd[i]
        rot = pose[:3, :3]
        c = rot @ joint.link.com + p
        rc = c - p
        ac = a + np.cross(wd, rc) + np.cross(w, np.cross(w, rc))
        inertia = rot @ joint.link.inertia @ rot.T
        forces.append(joint.link.mass * ac)
        moments.append(inertia @ wd + np.cross(w, inertia @ w))
        coms.append(c)
        axes.append(z)
        origins.append(p)
        p_prev = p
    tau = np.zeros(n)
    f_next = np.zeros(3)
    n_next = np.zeros(3)
    for i in reversed(range(n)):
        p_next = origins[i + 1] if i + 1 < n else origins[i]
        f = forces[i] + f_next
        m = moments[i] + np.cross(coms[i] - origins[i], forces[i]) + np.cross(p_next - origins[i], f_next) + n_next
        tau[i] = axes[i] @ (f if model.joints[i].is_prismatic else m)
        f_next, n_next = f, m
    return tau


def mass_matrix(model: RobotModel, q: np.ndarray) -> np.ndarray:
    n = model.dof
    zero = np.zeros(n)
    return np.column_stack([rnea(model, q, zero, np.eye(n)[k], gravity=False) for k in range(n)])


def gravity_torques(model: RobotModel, q: np.ndarray) -> np.ndarray:
    zero = np.zeros(model.dof)
    return rnea(model, q, zero, zero)


# ----------------------------------------------------------------------------------------------
# Pinocchio (buildModelFromUrdf reduced to the chain: buildReducedModel locks the other joints)
# ----------------------------------------------------------------------------------------------
def pinocchio_q(reduced: object, q: np.ndarray) -> np.ndarray:
    """Pinocchio configuration of joint angles q (continuous joints are (cos, sin))."""
    values: list[float] = []
    for i, qi in enumerate(q):
        if reduced.joints[i + 1].nq == 2:  # type: ignore[attr-defined]
            values += [math.cos(qi), math.sin(qi)]
        else:
            values.append(float(qi))
    return np.array(values)


def reduced_pinocchio(full: object, model: RobotModel, lock_q: np.ndarray | None = None) -> object:
    """Pinocchio reduced to the model's joints, the others locked at ``lock_q`` (default: neutral)."""
    import pinocchio as pin

    lock = [i for i in range(1, full.njoints) if full.names[i] not in model.joint_names]  # type: ignore[attr-defined]
    q = pin.neutral(full) if lock_q is None else lock_q
    # buildReducedModel looks frames up by name: rename the non-joint frames that share a joint's name
    # (a link called like its joint, as in ANYmal C) so the lookup is unique
    names = [frame.name for frame in full.frames]  # type: ignore[attr-defined]
    for i, frame in enumerate(full.frames):  # type: ignore[attr-defined]
        if names.count(frame.name) > 1 and frame.type != pin.FrameType.JOINT:
            frame.name = f"{frame.name}__{frame.type}"
            full.frames[i] = frame  # type: ignore[attr-defined]
    reduced = pin.buildReducedModel(full, lock, q) if lock else full
    assert list(reduced.names)[1:] == model.joint_names
    return reduced


def compare_with_pinocchio(
    model: RobotModel,
    full: object,
    states: int,
    seed: int = 0,
    lock_q: np.ndarray | None = None,
    backend: str | None = None,
) -> tuple[float, float]:
    """Max relative errors of RNEA and CRBA between the model and Pinocchio.

    The model side is computed twice: by the reference Newton-Euler above one state at a time, and
    by the engine (``robot_dynamics.dynamics``, batched, rigid body only, on ``backend``: ``"python"``
    where the model is what is checked and compiling it would cost more than the check; the compiled
    backend equals the Python one in test_engine_native.py). Errors are relative to
    ``max(1, max |reference|)`` per state.
    """
    import pinocchio as pin

    reduced = reduced_pinocchio(full, model, lock_q)
    reduced.gravity.linear = model.gravity  # world = URDF root frame  # type: ignore[attr-defined]
    data = reduced.createData()  # type: ignore[attr-defined]
    rng = np.random.default_rng(seed)
    q = rng.uniform(-math.pi, math.pi, (states, model.dof))
    qd, qdd = rng.normal(size=q.shape), rng.normal(size=q.shape)
    tau_engine = inverse_dynamics(model, q, qd, qdd, friction=False, motor_inertia=False, backend=backend)
    m_engine = inertia_matrix(model, q, motor_inertia=False, backend=backend)
    err_tau = err_m = 0.0
    for k in range(states):
        qp = pinocchio_q(reduced, q[k])
        tau_pin = pin.rnea(reduced, data, qp, qd[k], qdd[k])
        m_pin = pin.crba(reduced, data, qp)
        m_pin = np.triu(m_pin) + np.triu(m_pin, 1).T
        scale_tau, scale_m = max(1.0, np.max(np.abs(tau_pin))), max(1.0, np.max(np.abs(m_pin)))
        for tau in (rnea(model, q[k], qd[k], qdd[k]), tau_engine[k]):
            err_tau = max(err_tau, float(np.max(np.abs(tau - tau_pin)) / scale_tau))
        for m in (mass_matrix(model, q[k]), m_engine[k]):
            err_m = max(err_m, float(np.max(np.abs(m - m_pin)) / scale_m))
    return err_tau, err_m
