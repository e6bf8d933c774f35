"""Engine vs the books' closed forms (docs/references.md) at 200 random states, to 1e-10.

Each arm is built with ``from_dh`` as its book describes it and, where the models package bundles it,
also loaded from its YAML. Batches (the NumPy path) and single states (the Python-float path) are
both checked.
"""

from __future__ import annotations

import numpy as np
import pytest
from engine_reference import (
    double_pendulum,
    double_pendulum_closed_form,
    fu_closed_form,
    fu_two_link,
    max_relative_error,
    one_axis,
    one_axis_closed_form,
    random_states,
    scara,
    scara_closed_form,
    schilling_closed_form,
    schilling_two_axis,
)

import robot_dynamics as rd
from robot_dynamics.model import JointFriction, RobotModel

TOL = 1e-10
COUNT = 200
SINGLE = 15  # single-state calls per check


def _engine(model: RobotModel, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> dict[str, np.ndarray]:
    return {
        "D": rd.inertia_matrix(model, q),
        "h": rd.coriolis_centrifugal(model, q, qd),
        "H": rd.coriolis_tensor(model, q),
        "c": rd.gravity_torques(model, q),
        "tau": rd.inverse_dynamics(model, q, qd, qdd, friction=False),
    }


def _check_both_paths(model: RobotModel, expected: dict[str, np.ndarray], q, qd, qdd) -> None:  # type: ignore[no-untyped-def]
    got = _engine(model, q, qd, qdd)
    for key, value in expected.items():
        assert max_relative_error(got[key], value) < TOL, (model.name, key, max_relative_error(got[key], value))
    for s in range(SINGLE):
        single = _engine(model, q[s], qd[s], qdd[s])
        for key, value in expected.items():
            assert max_relative_error(single[key], value[s]) < TOL, (model.name, key, "single")


def _fu_expected(q, qd, qdd, length, m1, m2, g):  # type: ignore[no-untyped-def]
    D, h, H, c = fu_closed_form(q, qd, length, m1, m2, g)
    return {"D": D, "h": h, "H": H, "c": c, "tau": np.einsum("Nij,Nj->Ni", D, qdd) + h + c}


def test_fu_two_link_D_h_hikm_c() -> None:
    length, m1, m2, g = 0.7, 2.5, 1.3, 9.8062
    q, qd, qdd = random_states(1, 2, COUNT)
    _check_both_paths(fu_two_link(length, m1, m2, g), _fu_expected(q, qd, qdd, length, m1, m2, g), q, qd, qdd)


def test_fu_two_link_bundled() -> None:
    model = rd.load_robot("fu_two_link")
    length, m1, m2 = model.dh.rows[0].a, model.joints[0].link.mass, model.joints[1].link.mass
    assert model.dh.rows[1].a == length
    q, qd, qdd = random_states(2, 2, COUNT)
    _check_both_paths(model, _fu_expected(q, qd, qdd, length, m1, m2, -model.gravity[1]), q, qd, qdd)


def test_fu_tensor_properties() -> None:
    """h_ikm = h_imk and h_iii = 0 (3.2-33), and sum_km h_ikm qd_k qd_m = h (3.2-32)."""
    model = fu_two_link()
    q, qd, _ = random_states(3, 2, COUNT)
    H = rd.coriolis_tensor(model, q)
    assert np.array_equal(H, H.transpose(0, 1, 3, 2))
    assert np.abs(np.einsum("Niii->Ni", H)).max() < 1e-15
    h = np.einsum("Nikm,Nk,Nm->Ni", H, qd, qd)
    assert max_relative_error(h, rd.coriolis_centrifugal(model, q, qd)) < 1e-13


@pytest.mark.parametrize("bundled", [False, True])
def test_schilling_two_axis(bundled: bool) -> None:
    if bundled:
        model = rd.load_robot("schilling_two_link")
        a1, a2 = model.dh.rows[0].a, model.dh.rows[1].a
        m1, m2, g = model.joints[0].link.mass, model.joints[1].link.mass, -model.gravity[1]
    else:
        a1, a2, m1, m2, g = 0.45, 0.3, 3.0, 1.7, 9.8062
        model = schilling_two_axis(a1, a2, m1, m2, g)
    q, qd, qdd = random_states(4, 2, COUNT)
    D, h, c = schilling_closed_form(q, qd, a1, a2, m1, m2, g)
    tau = np.einsum("Nij,Nj->Ni", D, qdd) + h + c  # 6-5-17, 6-5-20
    _check_both_paths(model, {"D": D, "h": h, "c": c, "tau": tau}, q, qd, qdd)


@pytest.mark.parametrize("bundled", [False, True])
def test_scara(bundled: bool) -> None:
    if bundled:
        model = rd.load_robot("scara")
        a1, a2 = model.dh.rows[0].a, model.dh.rows[1].a
        m1, m2, m3 = (j.link.mass for j in model.joints)
        g = -model.gravity[2]
    else:
        a1, a2, m1, m2, m3, g = 0.425, 0.375, 8.0, 5.0, 2.0, 9.8062
        model = scara(0.877, a1, a2, 0.4, (m1, m2, m3), g)
    q, qd, qdd = random_states(5, 3, COUNT)
    q[:, 2] = np.random.default_rng(6).uniform(0.0, 0.4, COUNT)  # the prismatic stroke
    D, h, c = scara_closed_form(q, qd, a1, a2, m1, m2, m3, g)
    tau = np.einsum("Nij,Nj->Ni", D, qdd) + h + c  # 6-6-25, 6-6-28, 6-6-31
    _check_both_paths(model, {"D": D, "h": h, "c": c, "tau": tau}, q, qd, qdd)


def test_one_axis_rigid() -> None:
    a, m, g = 0.6, 2.2, 9.8062
    model = one_axis(a, m, g)
    q, qd, qdd = random_states(7, 1, COUNT)
    expected = one_axis_closed_form(q, qd, qdd, a, m, g)
    assert max_relative_error(rd.inverse_dynamics(model, q, qd, qdd), expected) < TOL
    for s in range(SINGLE):
        assert max_relative_error(rd.inverse_dynamics(model, q[s], qd[s], qdd[s]), expected[s]) < TOL


@pytest.mark.parametrize("bundled", [False, True])
def test_one_axis_with_friction_6_3_3(bundled: bool) -> None:
    """tau = m a^2 qdd/3 + g m a C1/2 + b(qd) with Schilling's b (viscous, dynamic, static) through
    ``inverse_dynamics(friction=True)`` — the engine's hand-over to the friction package."""
    if bundled:
        model = rd.load_robot("one_axis")
        f = model.joints[0].friction
        bv, bd, bs, eps = f.viscous, f.coulomb[0], f.static[0], f.stribeck_velocity  # type: ignore[index]
        a, m, g = model.dh.rows[0].a, model.joints[0].link.mass, -model.gravity[1]
    else:
        a, m, g, bv, bd, bs, eps = 0.6, 2.2, 9.8062, 0.05, 0.2, 0.3, 0.05
        friction = JointFriction(viscous=bv, coulomb=(bd, -bd), static=(bs, -bs), stribeck_velocity=eps)
        model = one_axis(a, m, g, friction)
    q, qd, qdd = random_states(8, 1, COUNT, scale=0.2)  # velocities where the Stribeck term matters
    expected = one_axis_closed_form(q, qd, qdd, a, m, g, bv, bd, bs, eps)
    assert max_relative_error(rd.inverse_dynamics(model, q, qd, qdd), expected) < TOL
    rigid = one_axis_closed_form(q, qd, qdd, a, m, g)
    assert max_relative_error(rd.inverse_dynamics(model, q, qd, qdd, friction=False), rigid) < TOL
    parts = rd.inverse_dynamics(model, q, qd, qdd, breakdown=True)
    assert max_relative_error(parts.friction, expected - rigid) < TOL


@pytest.mark.parametrize("bundled", [False, True])
def test_robmat_double_pendulum(bundled: bool) -> None:
    if bundled:
        model = rd.load_robot("robmat_double_pendulum")
        L1, L2 = model.dh.rows[0].a, model.dh.rows[1].a
        m1, m2, g = model.joints[0].link.mass, model.joints[1].link.mass, model.gravity[0]
    else:
        L1, L2, m1, m2, g = 1.1, 0.8, 1.4, 0.9, 9.81
        model = double_pendulum(L1, L2, m1, m2, g)
    q, qd, qdd = random_states(9, 2, COUNT)
    M, B, C, G = double_pendulum_closed_form(q, L1, L2, m1, m2, g)
    coefficients = rd.robmat_coefficients(model, q)
    assert coefficients.pairs == ((0, 1),)
    for got, want in ((coefficients.M, M), (coefficients.B, B), (coefficients.C, C), (coefficients.G, G)):
        assert max_relative_error(got, want) < TOL
    for s in range(SINGLE):
        single = rd.robmat_coefficients(model, q[s])
        for got, want in ((single.M, M[s]), (single.B, B[s]), (single.C, C[s]), (single.G, G[s])):
            assert max_relative_error(got, want) < TOL
    # ROBMAT's F = M q'' + 2 B [q'q'] + C [q'^2] + G is the Newton-Euler torque
    tau = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
    assert max_relative_error(coefficients.torque(qd, qdd), tau) < TOL
