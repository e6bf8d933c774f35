"""Kinematics, the Jacobian and the tool wrench: tau_wrench = J^T w (w exerted by the tool on the
environment), frames of the wrench, and the joint reactions of Newton–Euler."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS, URDF_ARMS, max_relative_error, pinocchio_urdf, puma560, random_states

import robot_dynamics as rd
from robot_dynamics.dynamics import frame_poses, kinetic_energy, potential_energy
from robot_dynamics.model import RobotModel, rot_x, trans

COUNT = 100


def _panda() -> RobotModel:
    path, tip, _ = URDF_ARMS["panda"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_robot(str(EXAMPLE_ROBOTS / path), tip_link=tip)


def test_forward_kinematics_and_jacobian_against_pinocchio() -> None:
    pin = pytest.importorskip("pinocchio")
    model = _panda()
    pm = pinocchio_urdf("panda")
    data = pm.createData()
    frame = pm.getFrameId("panda_hand")
    q, _, _ = random_states(50, 7, COUNT)
    poses = rd.forward_kinematics(model, q, frame="base")
    J = rd.jacobian(model, q)
    for s in range(COUNT):
        pin.forwardKinematics(pm, data, q[s])
        pin.updateFramePlacements(pm, data)
        assert np.abs(poses[s] - data.oMf[frame].homogeneous).max() < 1e-12
        J_ref = pin.computeFrameJacobian(pm, data, q[s], frame, pin.LOCAL_WORLD_ALIGNED)
        assert np.abs(J[s] - J_ref).max() < 1e-12


def test_jacobian_is_the_derivative_of_the_tool_pose() -> None:
    """v = d p_t/dt and [w]x = dR/dt R^T along a motion, by central differences (incl. prismatic)."""
    for model in (puma560(), rd.load_robot("stanford")):
        q, qd, _ = random_states(51, model.dof, 20)
        step = 1e-6
        for a, b in zip(q, qd, strict=True):
            plus = rd.forward_kinematics(model, a + step * b, frame="base")
            minus = rd.forward_kinematics(model, a - step * b, frame="base")
            twist = rd.jacobian(model, a) @ b
            v = (plus[:3, 3] - minus[:3, 3]) / (2 * step)
            W = (plus[:3, :3] - minus[:3, :3]) / (2 * step) @ rd.forward_kinematics(model, a, frame="base")[:3, :3].T
            assert np.allclose(twist[:3], v, atol=1e-7)
            assert np.allclose(twist[3:], [W[2, 1], W[0, 2], W[1, 0]], atol=1e-7)


def test_jacobian_frames() -> None:
    model = puma560().with_changes(base=trans(0.3, -0.2, 1.0) @ rot_x(0.4))
    q, _, _ = random_states(52, 6, 10)
    J0, Jw, Jt = rd.jacobian(model, q), rd.jacobian(model, q, frame="world"), rd.jacobian(model, q, frame="tool")
    R0t = rd.forward_kinematics(model, q, frame="base")[:, :3, :3]
    Rb = model.base[:3, :3]
    assert np.allclose(Jw[:, :3], Rb @ J0[:, :3]) and np.allclose(Jw[:, 3:], Rb @ J0[:, 3:])
    assert np.allclose(Jt[:, :3], R0t.transpose(0, 2, 1) @ J0[:, :3])
    world = rd.forward_kinematics(model, q)
    assert np.allclose(world, model.base @ rd.forward_kinematics(model, q, frame="base"))
    with pytest.raises(rd.errors.StateError, match="frame: expected 'base', 'world' or 'tool'"):
        rd.jacobian(model, q, frame="tip")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["puma560", "stanford", "panda"])
def test_tool_wrench_is_plus_J_transpose_w(name: str) -> None:
    """The tool exerting w = [f; n] on the environment needs tau = ... + J^T w (J in the wrench's axes)."""
    model = _panda() if name == "panda" else rd.load_robot(name)
    q, qd, qdd = random_states(53, model.dof, COUNT)
    w = np.random.default_rng(54).normal(0, 20, (COUNT, 6))
    free = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
    for frame, J in (
        ("tool", rd.jacobian(model, q, frame="tool")),
        ("base", rd.jacobian(model, q)),
        ("world", rd.jacobian(model, q, frame="world")),
    ):
        loaded = rd.inverse_dynamics(model, q, qd, qdd, friction=False, wrench=w, wrench_frame=frame)
        assert max_relative_error(loaded - free, np.einsum("Nij,Ni->Nj", J, w)) < 1e-12, frame
        single = rd.inverse_dynamics(model, q[0], qd[0], qdd[0], friction=False, wrench=w[0], wrench_frame=frame)
        assert max_relative_error(single - free[0], J[0].T @ w[0]) < 1e-12
    # one wrench for a whole batch is broadcast
    shared = rd.inverse_dynamics(model, q, qd, qdd, friction=False, wrench=w[0])
    assert max_relative_error(shared - free, rd.jacobian(model, q, frame="tool").transpose(0, 2, 1) @ w[0]) < 1e-12


def test_breakdown_sums_and_parts() -> None:
    model = rd.load_robot("puma560")  # with motors and motor friction
    q, qd, qdd = random_states(55, 6, COUNT)
    w = np.random.default_rng(56).normal(0, 10, 6)
    b = rd.inverse_dynamics(model, q, qd, qdd, wrench=w, breakdown=True)
    parts = b.inertial + b.coriolis_centrifugal + b.gravity + b.friction + b.motor_inertia + b.tool_wrench
    assert max_relative_error(parts, b.total) < 1e-12
    D_rigid = rd.inertia_matrix(model, q, motor_inertia=False)
    assert max_relative_error(b.inertial, np.einsum("Nij,Nj->Ni", D_rigid, qdd)) < 1e-12
    assert max_relative_error(b.coriolis_centrifugal, rd.coriolis_centrifugal(model, q, qd)) < 1e-12
    assert max_relative_error(b.gravity, rd.gravity_torques(model, q)) < 1e-12
    assert max_relative_error(b.motor_inertia, model.arrays.reflected_motor_inertia * qdd) < 1e-15
    assert b.friction_terms is not None and max_relative_error(b.friction, b.friction_terms.total) == 0.0
    assert max_relative_error(b.total, rd.inverse_dynamics(model, q, qd, qdd, wrench=w)) < 1e-13
    off = rd.inverse_dynamics(model, q, qd, qdd, friction=False, motor_inertia=False, breakdown=True)
    assert np.all(off.motor_inertia == 0) and np.all(off.friction == 0) and off.friction_terms is None


def test_motor_inertia_switch() -> None:
    """G^2 Jm is part of D when the model says so (Robotics Toolbox convention); the switch overrides."""
    model = puma560()
    assert model.motor_inertia_in_d
    q, qd, qdd = random_states(57, 6, 20)
    G2Jm = model.arrays.reflected_motor_inertia
    assert np.allclose(rd.inertia_matrix(model, q) - rd.inertia_matrix(model, q, motor_inertia=False), np.diag(G2Jm))
    with_motor = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
    without = rd.inverse_dynamics(model, q, qd, qdd, friction=False, motor_inertia=False)
    assert max_relative_error(with_motor - without, G2Jm * qdd) < 1e-13
    rigid_model = model.with_changes(motor_inertia_in_d=False)
    assert max_relative_error(rd.inverse_dynamics(rigid_model, q, qd, qdd, friction=False), without) < 1e-15


def test_reactions_balance_each_link() -> None:
    """Newton's and Euler's laws for every link from the reactions: f_i - R_{i+1} f_{i+1} = m_i a_ci, and
    the joint torque is the reaction moment about the joint axis."""
    model = rd.load_robot("stanford")
    q, qd, qdd = random_states(58, 6, 30)
    tau, force, moment = rd.rnea_with_reactions(model, q, qd, qdd)
    axis = model.arrays.axis
    prismatic = model.arrays.prismatic
    projected = np.where(prismatic, np.einsum("Nni,ni->Nn", force, axis), np.einsum("Nni,ni->Nn", moment, axis))
    assert max_relative_error(projected, tau) < 1e-14
    # the last link alone: its reaction is m (a_c - g) with a_c from finite differences of its c.o.m.
    step = 1e-4
    com = [rd.dynamics.com_positions(model, q + k * step * qd + 0.5 * (k * step) ** 2 * qdd)[:, -1] for k in (-1, 0, 1)]
    acc = (com[0] - 2 * com[1] + com[2]) / step**2
    R_last = frame_poses(model, q)[:, -1, :3, :3]
    expected = model.arrays.mass[-1] * (acc - model.gravity_base)  # in F_0
    assert np.allclose(np.einsum("Nij,Nj->Ni", R_last, force[:, -1]), expected, atol=1e-5)
    # no gravity, no motion: no reactions
    zero = np.zeros(6)
    t0, f0, n0 = rd.rnea_with_reactions(model, q[0], zero, zero, gravity=False)
    assert not t0.any() and not f0.any() and not n0.any()


def test_energy_functions() -> None:
    model = puma560()
    q, qd, _ = random_states(59, 6, 10)
    D = rd.inertia_matrix(model, q)
    assert np.allclose(kinetic_energy(model, q, qd), 0.5 * np.einsum("Ni,Nij,Nj->N", qd, D, qd))
    # the gravity torque is the gradient of the potential energy
    step = 1e-6
    grad = np.array(
        [
            (potential_energy(model, q[0] + step * e) - potential_energy(model, q[0] - step * e)) / (2 * step)
            for e in np.eye(6)
        ]
    )
    assert np.allclose(grad, rd.gravity_torques(model, q[0]), atol=1e-7)
