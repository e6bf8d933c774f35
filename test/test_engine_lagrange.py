"""Reference Lagrange–Euler (Fu 3.2, U_ij, U_ijk, pseudo-inertias) == the fast paths; tau = D qdd + h + c
== Newton–Euler; dD/dt - 2C skew-symmetric; Robotics Toolbox Puma560 agreement."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS, URDF_ARMS, max_relative_error, puma560, random_states, scara

import robot_dynamics as rd
from robot_dynamics.dynamics import lagrange_euler as le
from robot_dynamics.model import RobotModel

COUNT = 100


def _models() -> dict[str, RobotModel]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        panda_path, tip, _ = URDF_ARMS["panda"]
        panda = rd.load_robot(str(EXAMPLE_ROBOTS / panda_path), tip_link=tip)
    return {
        "puma560": puma560(),
        "stanford": rd.load_robot("stanford"),
        "puma560_modified": rd.load_robot("puma560_modified"),
        "scara": scara(),
        "panda": panda,
    }


MODELS = _models()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_lagrange_euler_reference_equals_fast_paths(name: str) -> None:
    model = MODELS[name]
    q, qd, qdd = random_states(40, model.dof, COUNT)
    assert max_relative_error(le.inertia_matrix(model, q), rd.inertia_matrix(model, q)) < 1e-12
    assert max_relative_error(le.coriolis_tensor(model, q), rd.coriolis_tensor(model, q)) < 1e-12
    assert max_relative_error(le.gravity_torques(model, q), rd.gravity_torques(model, q)) < 1e-12
    # tau = D qdd + h + c (3.2-26) from the L-E coefficients == Newton-Euler
    tau_le = le.inverse_dynamics(model, q, qd, qdd)
    tau_ne = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
    assert max_relative_error(tau_le, tau_ne) < 1e-12
    # and from the fast coefficients
    D, h, c = rd.inertia_matrix(model, q), rd.coriolis_centrifugal(model, q, qd), rd.gravity_torques(model, q)
    assert max_relative_error(np.einsum("Nij,Nj->Ni", D, qdd) + h + c, tau_ne) < 1e-12
    # single state agrees too
    assert max_relative_error(le.inertia_matrix(model, q[0]), rd.inertia_matrix(model, q[0])) < 1e-12


def test_pseudo_inertia_3_2_18() -> None:
    """J = [[tr(I_c)/2 E - I_c + m c c^T, m c], [m c^T, m]]: its upper block is integral r r^T dm."""
    model = puma560()
    J = le.pseudo_inertias(model)
    i = 2
    m, c, I_c = model.arrays.mass[i], model.arrays.com[i], model.arrays.inertia[i]
    second_moment = J[i, :3, :3]
    # I_origin = tr(S) E - S with S = integral r r^T dm (about the frame origin)
    I_origin = I_c + m * (c @ c * np.eye(3) - np.outer(c, c))
    assert np.allclose(np.trace(second_moment) * np.eye(3) - second_moment, I_origin, atol=1e-15)
    assert np.allclose(J[i, :3, 3], m * c) and J[i, 3, 3] == m


def _d_dot(model: RobotModel, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """dD/dt along qd by a 4th-order central difference (independent of the engine's tensor)."""
    step = 1e-3

    def D(t: float) -> np.ndarray:
        return rd.inertia_matrix(model, q + t * qd)

    return (D(-2 * step) - 8 * D(-step) + 8 * D(step) - D(2 * step)) / (12 * step)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_christoffel_coriolis_matrix(name: str) -> None:
    model = MODELS[name]
    q, qd, _ = random_states(41, model.dof, COUNT, scale=1.0)
    C = rd.coriolis_matrix(model, q, qd)
    assert max_relative_error(np.einsum("Nij,Nj->Ni", C, qd), rd.coriolis_centrifugal(model, q, qd)) < 1e-12
    N = _d_dot(model, q, qd) - 2.0 * C
    assert np.abs(N + N.transpose(0, 2, 1)).max() / max(1.0, np.abs(N).max()) < 1e-9
    # and it is not skew-symmetric for a wrong C (the check can fail)
    wrong = N - np.einsum("Ni,Nj->Nij", qd, qd)
    assert np.abs(wrong + wrong.transpose(0, 2, 1)).max() > 1e-3


def test_robotics_toolbox_puma560() -> None:
    rtb = pytest.importorskip("roboticstoolbox")
    reference = rtb.models.DH.Puma560()
    rigid = reference.nofriction(coulomb=True, viscous=True)
    q, qd, qdd = random_states(42, 6, COUNT)
    for model in (puma560(), rd.load_robot("puma560")):
        errors = {
            "rne": max_relative_error(
                rd.inverse_dynamics(model, q, qd, qdd, friction=False), np.array(rigid.rne(q, qd, qdd))
            ),
            "inertia": max_relative_error(rd.inertia_matrix(model, q), np.array(reference.inertia(q))),
            "coriolis": max_relative_error(
                rd.coriolis_matrix(model, q, qd),
                np.array([reference.coriolis(a, b) for a, b in zip(q, qd, strict=True)]),
            ),
            "gravload": max_relative_error(rd.gravity_torques(model, q), np.array(reference.gravload(q))),
            "fkine": max_relative_error(rd.forward_kinematics(model, q), np.array([reference.fkine(a).A for a in q])),
        }
        assert max(errors.values()) < 1e-10, errors
    # with the motor friction of Corke & Armstrong (the bundled model carries it)
    bundled = rd.load_robot("puma560")
    with_friction = max_relative_error(rd.inverse_dynamics(bundled, q, qd, qdd), np.array(reference.rne(q, qd, qdd)))
    assert with_friction < 1e-10
