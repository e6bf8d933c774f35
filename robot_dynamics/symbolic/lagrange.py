"""Closed-form Lagrange–Euler dynamics of small robots, fully simplified.

``tau = D(q) qdd + h(q, qd) + c(q)`` (Fu 3.2-26), with

* ``D = sum_i m_i Jv_i^T Jv_i + Jw_i^T I_i Jw_i`` (+ the reflected motor inertia on the diagonal) —
  the kinetic energy ``T = qd^T D qd / 2``, equal to Fu's ``D_ik = sum_j Tr(U_jk J_j U_ji^T)`` (3.2-31);
  ``Jv_i`` is the Jacobian of link i's centre of mass, ``Jw_i`` its angular-velocity Jacobian in ``F_i``;
* ``h_ikm = (dD_ik/dq_m + dD_im/dq_k - dD_km/dq_i) / 2`` — Fu's velocity-coupling tensor (3.2-33),
  the Christoffel symbols; ``h_i = sum_k sum_m h_ikm qd_k qd_m`` (3.2-32);
* ``c_i = dV/dq_i`` with ``V = -sum_j m_j g . r_j`` (3.2-34; ``g`` the gravity vector, ``r_j`` the
  centre of mass of link j in the base frame);
* ROBMAT's configuration-space form (Horn & Linge §4.2): ``F = M qdd + 2 B [qq] + C [q^2] + G`` with
  ``M = D``, ``B[i, (j,k)] = h_ijk`` (j<k, columns (1,2),(1,3)..(n-1,n)), ``C[i, j] = h_ijj``, ``G = c``;
* the Coriolis matrix ``C_ik = sum_m h_ikm qd_m`` (``h = C qd``, ``dD/dt - 2C`` skew-symmetric).

Cost grows quickly with n (ROBMAT: "simplification is by far the most time consuming step");
meant for robots of up to about 3 joints. Larger robots: :mod:`.newton_euler`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp

from robot_dynamics.symbolic.model import SymbolicLink, SymbolicRobot


def joint_motion(link: SymbolicLink, q: sp.Symbol) -> tuple[sp.Matrix, sp.Matrix]:
    """Rotation and translation of ``Rot(axis, q)`` / ``Trans(axis q)`` (exact for axis-aligned axes)."""
    u = link.axis
    if link.is_prismatic:
        return sp.eye(3), u * q
    c, s = sp.cos(q), sp.sin(q)
    k = sp.Matrix([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    r = sp.eye(3) + s * k + (1 - c) * (k * k)
    return r.applyfunc(sp.expand), sp.zeros(3, 1)


def forward_kinematics(robot: SymbolicRobot) -> list[tuple[sp.Matrix, sp.Matrix]]:
    """``(R_0i, p_0i)`` of every joint frame ``F_i`` in the base frame."""
    out: list[tuple[sp.Matrix, sp.Matrix]] = []
    r, p = sp.eye(3), sp.zeros(3, 1)
    for link, q in zip(robot.links, robot.q, strict=False):
        rm, pm = joint_motion(link, q)
        p = p + r * (link.translation + link.rotation * pm)
        r = r * link.rotation * rm
        r = r.applyfunc(lambda e: sp.trigsimp(sp.expand(e)))
        p = p.applyfunc(lambda e: sp.trigsimp(sp.expand(e)))
        out.append((r, p))
    return out


def simplify(expr: sp.Expr) -> sp.Expr:
    """The simplifier used for every closed-form entry (trigonometric, then collected)."""
    e = sp.trigsimp(sp.expand(sp.expand_trig(expr) if expr.has(sp.sin, sp.cos) else expr))
    e = sp.expand(e)
    if e.has(sp.sin, sp.cos):
        e = sp.trigsimp(e)
    return sp.factor_terms(e)


@dataclass(frozen=True)
class ClosedForm:
    """Fully simplified closed-form dynamics (see the module docstring for the definitions)."""

    robot: SymbolicRobot
    D: sp.Matrix
    h_ikm: tuple[tuple[tuple[sp.Expr, ...], ...], ...]
    h: sp.Matrix
    c: sp.Matrix
    tau: sp.Matrix
    coriolis_matrix: sp.Matrix
    M: sp.Matrix  # ROBMAT
    B: sp.Matrix  # ROBMAT, n x n(n-1)/2
    C: sp.Matrix  # ROBMAT centrifugal coefficients, n x n
    G: sp.Matrix  # ROBMAT

    def lambdify(self, what: str = "tau") -> Callable[..., object]:
        """A NumPy function of ``(q, qd, qdd)`` (vectors) for ``tau``, ``D``, ``h``, ``c``."""
        r = self.robot
        expr = getattr(self, what)
        sub = {s: sp.Float(v) for s, v in r.values.items()}
        return sp.lambdify((r.q, r.qd, r.qdd), expr.xreplace(sub), modules="numpy")


def closed_form(robot: SymbolicRobot, *, simplifier: Callable[[sp.Expr], sp.Expr] = simplify) -> ClosedForm:
    """D, h_ikm, h, c, tau and ROBMAT's M, B, C, G of ``robot`` (Lagrange–Euler, simplified)."""
    n = robot.n
    q, qd, qdd = sp.Matrix(robot.q), sp.Matrix(robot.qd), sp.Matrix(robot.qdd)
    frames = forward_kinematics(robot)
    d = sp.zeros(n, n)
    potential = sp.Integer(0)
    for i, (link, (r, p)) in enumerate(zip(robot.links, frames, strict=False)):
        com = (p + r * link.com).applyfunc(sp.expand)
        jv = com.jacobian(q)
        # angular-velocity Jacobian in F_i: column j = R_i0 R_0j axis_j for revolute j <= i
        jw = sp.zeros(3, n)
        for j in range(i + 1):
            if not robot.links[j].is_prismatic:
                rj = frames[j][0]
                jw[:, j] = (r.T * rj * robot.links[j].axis).applyfunc(lambda e: sp.trigsimp(sp.expand(e)))
        d += link.mass * (jv.T * jv) + jw.T * link.inertia * jw
        potential -= link.mass * (robot.gravity.T * com)[0, 0]
    for i, link in enumerate(robot.links):
        d[i, i] += link.motor_inertia
    d = d.applyfunc(simplifier)
    d = (d + d.T) / 2  # exact symmetry after simplification
    d = d.applyfunc(sp.factor_terms)
    g = sp.Matrix([simplifier(sp.diff(potential, qi)) for qi in q])

    dd = [[[sp.diff(d[i, k], q[m]) for m in range(n)] for k in range(n)] for i in range(n)]
    h_ikm = tuple(
        tuple(tuple(simplifier((dd[i][k][m] + dd[i][m][k] - dd[k][m][i]) / 2) for m in range(n)) for k in range(n))
        for i in range(n)
    )

    # h and the Coriolis matrix are linear combinations of the simplified h_ikm: collecting is enough
    def collect(e: sp.Expr) -> sp.Expr:
        return sp.factor_terms(sp.expand(e))

    h = sp.Matrix([collect(sum(h_ikm[i][k][m] * qd[k] * qd[m] for k in range(n) for m in range(n))) for i in range(n)])
    cm = sp.Matrix(n, n, lambda i, k: collect(sum(h_ikm[i][k][m] * qd[m] for m in range(n))))
    pairs = list(itertools.combinations(range(n), 2))
    b = sp.Matrix(n, len(pairs), lambda i, col: h_ikm[i][pairs[col][0]][pairs[col][1]])
    cc = sp.Matrix(n, n, lambda i, j: h_ikm[i][j][j])
    tau = (d * qdd + h + g).applyfunc(sp.expand)
    return ClosedForm(robot, d, h_ikm, h, g, tau, cm, d, b, cc, g)


def velocity_products(qd: sp.Matrix) -> tuple[sp.Matrix, sp.Matrix]:
    """ROBMAT's ``[qq]`` (``qd_j qd_k``, j<k) and ``[q^2]`` vectors (Horn & Linge §4.2)."""
    n = len(qd)
    qq = sp.Matrix([qd[j] * qd[k] for j, k in itertools.combinations(range(n), 2)])
    q2 = sp.Matrix([x**2 for x in qd])
    return qq, q2
