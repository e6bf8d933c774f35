"""Closed-form Lagrange–Euler dynamics: exact symbolic equality with the books' worked examples
(ROBMAT double pendulum, Fu two-link arm) and agreement of the R-R-P ROBMAT Stanford arm with the
numeric engine."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy as sp

import robot_dynamics as rd
from robot_dynamics.symbolic.lagrange import ClosedForm, closed_form
from robot_dynamics.symbolic.model import symbolic_robot

q1, q2 = sp.symbols("q1 q2", real=True)
qd1, qd2 = sp.symbols("qd1 qd2", real=True)
S1, S2, C1, C2 = sp.sin(q1), sp.sin(q2), sp.cos(q1), sp.cos(q2)
S12, C12 = sp.sin(q1 + q2), sp.cos(q1 + q2)


def same(a: sp.Expr | sp.Matrix, b: sp.Expr | sp.Matrix) -> bool:
    diff = sp.Matrix(a) - sp.Matrix(b) if isinstance(a, sp.MatrixBase) else a - b
    return bool(
        sp.simplify(diff) == sp.zeros(*diff.shape) if isinstance(diff, sp.MatrixBase) else sp.simplify(diff) == 0
    )


@pytest.fixture(scope="module")
def pendulum() -> ClosedForm:
    model = rd.load_robot("robmat_double_pendulum")
    robot = symbolic_robot(model, ("mass", "length", "gravity"), names={"a1": "L1", "a2": "L2"})
    return closed_form(robot)


def test_robmat_double_pendulum_matches_the_paper_exactly(pendulum: ClosedForm) -> None:
    L1, L2, m1, m2, g = sp.symbols("L1 L2 m1 m2 g", real=True)
    assert set(pendulum.robot.values) == {L1, L2, m1, m2, g}
    # Horn & Linge §5, Out[5]-Out[8]
    m_paper = sp.Matrix(
        [
            [L1**2 * m1 + L1**2 * m2 + 2 * C2 * L1 * L2 * m2 + L2**2 * m2, L2 * (C2 * L1 + L2) * m2],
            [L2 * (C2 * L1 + L2) * m2, L2**2 * m2],
        ]
    )
    b_paper = sp.Matrix([[-(L1 * L2 * m2 * S2)], [0]])
    c_paper = sp.Matrix([[0, -(L1 * L2 * m2 * S2)], [L1 * L2 * m2 * S2, 0]])
    g_paper = sp.Matrix([g * (L1 * m1 * S1 + L1 * m2 * S1 + L2 * m2 * S12), g * L2 * m2 * S12])
    assert same(pendulum.M, m_paper)
    assert same(pendulum.B, b_paper)
    assert same(pendulum.C, c_paper)
    assert same(pendulum.G, g_paper)
    # the simplified forms print exactly like the paper's (up to SymPy's term order)
    assert pendulum.M[0, 1] == L2 * m2 * (L1 * C2 + L2)
    assert pendulum.B[0, 0] == -L1 * L2 * m2 * S2


def test_robmat_newton_euler_equals_configuration_space_form(pendulum: ClosedForm) -> None:
    # Horn & Linge §5, In[9]-Out[11]: NewtonEuler - (M q'' + 2 B [qq] + C [q^2] + G) == 0
    from robot_dynamics.symbolic.lagrange import velocity_products

    r = pendulum.robot
    qd, qdd = sp.Matrix(r.qd), sp.Matrix(r.qdd)
    qq, q2v = velocity_products(qd)
    f = pendulum.M * qdd + 2 * pendulum.B * qq + pendulum.C * q2v + pendulum.G
    assert same(f, pendulum.tau)


@pytest.fixture(scope="module")
def fu() -> ClosedForm:
    model = rd.load_robot("fu_two_link")
    robot = symbolic_robot(model, ("mass", "length", "gravity"), names={"a1": "l", "a2": "l"})
    ell, m1, m2 = sp.symbols("l m1 m2", real=True)
    # thin uniform rods: centre of mass at the middle (l/2 from the joint in F_i), I = m l^2/12
    for i, m in enumerate((m1, m2)):
        robot = robot.with_link(i, com=[ell / 2, 0, 0], inertia=sp.diag(0, m * ell**2 / 12, m * ell**2 / 12))
    return closed_form(robot)


def test_fu_two_link_arm_matches_the_book_exactly(fu: ClosedForm) -> None:
    ell, m1, m2, g = sp.symbols("l m1 m2 g", real=True)
    d = sp.Matrix(
        [
            [
                m1 * ell**2 / 3 + sp.Rational(4, 3) * m2 * ell**2 + m2 * C2 * ell**2,
                m2 * ell**2 / 3 + m2 * ell**2 * C2 / 2,
            ],
            [m2 * ell**2 / 3 + m2 * ell**2 * C2 / 2, m2 * ell**2 / 3],
        ]
    )
    h = sp.Matrix([-m2 * S2 * ell**2 * qd2**2 / 2 - m2 * S2 * ell**2 * qd1 * qd2, m2 * S2 * ell**2 * qd1**2 / 2])
    c = sp.Matrix([(m1 / 2 + m2) * g * ell * C1 + m2 * g * ell * C12 / 2, m2 * g * ell * C12 / 2])
    assert same(fu.D, d)
    assert same(fu.h, h)
    assert same(fu.c, c)
    expected = {(0, 0, 1): -m2 * S2 * ell**2 / 2, (0, 1, 0): -m2 * S2 * ell**2 / 2, (0, 1, 1): -m2 * S2 * ell**2 / 2}
    expected[(1, 0, 0)] = m2 * S2 * ell**2 / 2
    for i, k, m in itertools.product(range(2), repeat=3):
        assert same(fu.h_ikm[i][k][m], expected.get((i, k, m), sp.Integer(0))), (i, k, m)


def test_fu_closed_form_agrees_with_the_engine_numerically(fu: ClosedForm) -> None:
    model = rd.load_robot("fu_two_link")
    tau = fu.lambdify("tau")
    rng = np.random.default_rng(3)
    for _ in range(20):
        q, qd, qdd = rng.uniform(-3, 3, (3, 2))
        ref = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
        np.testing.assert_allclose(np.ravel(np.asarray(tau(q, qd, qdd), dtype=float)), ref, rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def stanford_rrp() -> tuple[rd.RobotModel, ClosedForm]:
    model = rd.load_robot("robmat_stanford_rrp")
    robot = symbolic_robot(model, ("mass", "length", "com", "inertia", "gravity"))
    return model, closed_form(robot)


def test_modified_stanford_rrp_agrees_with_the_engine(stanford_rrp: tuple[rd.RobotModel, ClosedForm]) -> None:
    model, cf = stanford_rrp
    assert {s.name for s in cf.robot.values} >= {"m1", "m2", "m3", "d2", "g", "Ixx1", "y1", "z1", "y2", "z3"}
    sub = {s: sp.Float(v) for s, v in cf.robot.values.items()}
    q_s, qd_s = cf.robot.q, cf.robot.qd
    fm = sp.lambdify(q_s, cf.M.xreplace(sub))
    fb = sp.lambdify(q_s, cf.B.xreplace(sub))
    fc = sp.lambdify(q_s, cf.C.xreplace(sub))
    fg = sp.lambdify(q_s, cf.G.xreplace(sub))
    fh = sp.lambdify((q_s, qd_s), cf.h.xreplace(sub))
    tensor = [[[cf.h_ikm[i][k][m].xreplace(sub) for m in range(3)] for k in range(3)] for i in range(3)]
    ft = sp.lambdify(q_s, tensor)
    rng = np.random.default_rng(5)
    for _ in range(15):
        q = rng.uniform(-2, 2, 3)
        q[2] = rng.uniform(0.3, 1.3)
        qd = rng.uniform(-2, 2, 3)
        coeff = rd.robmat_coefficients(model, q)
        np.testing.assert_allclose(np.array(fm(*q), dtype=float), rd.inertia_matrix(model, q), atol=1e-12)
        np.testing.assert_allclose(np.array(fm(*q), dtype=float), coeff.M, atol=1e-12)
        np.testing.assert_allclose(np.array(fb(*q), dtype=float), coeff.B, atol=1e-12)
        np.testing.assert_allclose(np.array(fc(*q), dtype=float), coeff.C, atol=1e-12)
        np.testing.assert_allclose(np.ravel(np.array(fg(*q), dtype=float)), rd.gravity_torques(model, q), atol=1e-12)
        np.testing.assert_allclose(
            np.ravel(np.array(fh(q, qd), dtype=float)), rd.coriolis_centrifugal(model, q, qd), atol=1e-12
        )
        np.testing.assert_allclose(np.array(ft(*q), dtype=float), rd.coriolis_tensor(model, q), atol=1e-12)


def test_closed_form_properties(stanford_rrp: tuple[rd.RobotModel, ClosedForm]) -> None:
    _, cf = stanford_rrp
    n = 3
    assert cf.D == cf.D.T
    for i, k, m in itertools.product(range(n), repeat=3):
        assert cf.h_ikm[i][k][m] == cf.h_ikm[i][m][k]  # h_ikm = h_imk (Fu 3.2-33)
    for i in range(n):
        assert cf.h_ikm[i][i][i] == 0
    # dD/dt - 2 C is skew-symmetric (C the Coriolis matrix)
    qd = sp.Matrix(cf.robot.qd)
    ddot = sp.Matrix(n, n, lambda i, k: sum(sp.diff(cf.D[i, k], cf.robot.q[j]) * qd[j] for j in range(n)))
    skew = ddot - 2 * cf.coriolis_matrix
    assert sp.simplify(skew + skew.T) == sp.zeros(n, n)


def test_unknown_symbol_group_is_named() -> None:
    model = rd.load_robot("fu_two_link")
    with pytest.raises(ValueError, match=r"unknown symbolic parameter groups \['lengths'\]"):
        symbolic_robot(model, ("mass", "lengths"))
