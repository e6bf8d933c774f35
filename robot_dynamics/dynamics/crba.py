"""Inertia matrix D(q) by the composite-rigid-body algorithm (Walker & Orin 1982, method 3).

The fast path for Fu's ``D_ik`` (3.2-31); the Lagrange–Euler sum in :mod:`.lagrange_euler` is the
reference it is tested against. Each link's inertia is held about the origin of its own frame
``F_i`` as (mass m, first moment h = m s, rotational inertia I_O = I_c + m (s.s E - s s^T)).

Backward, i = n..1: the composite body of links i..n, in ``F_i``:
  m^C_i  = m_i + m^C_{i+1}
  h^C_i  = h_i + R_{i+1} h^C_{i+1} + m^C_{i+1} p_{i+1}
  I^C_i  = I_i + R_{i+1} I^C_{i+1} R_{i+1}^T + m^C_{i+1} (p.p E - p p^T) + 2 (p.h') E - h' p^T - p h'^T
           (p = p_{i+1}, h' = R_{i+1} h^C_{i+1}: the parallel-axis theorem with a first moment,
           -m[p]x[p]x - [p]x[h']x - [h']x[p]x written out)
Column i: the force and moment that set the composite i..n moving with joint i's unit velocity
  revolute:  f = a_i x h^C_i,   n = I^C_i a_i        prismatic:  f = m^C_i a_i,   n = h^C_i x a_i
carried down to each joint j <= i (f <- R f, n <- R n + p x (R f)) and projected on its axis:
  D_ji = n . a_j (revolute j) or f . a_j (prismatic j);   D_ij = D_ji.
With ``motor_inertia``, the reflected motor inertias G^2 Jm are added to the diagonal.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._chain import Chain
from ._trace import Scalar
from ._vector import Mat3, Vec3, congruence, identity, outer


def composite_inertia_matrix(chain: Chain, q: Sequence[Scalar], motor_inertia: bool) -> list[list[Scalar]]:
    n = chain.dof
    transforms = [link.transform(q[i]) for i, link in enumerate(chain.links)]
    # link inertias about their frame origins
    mass = [link.mass for link in chain.links]
    first = [link.com * link.mass for link in chain.links]
    rot = [
        link.inertia + (identity() * link.com.dot(link.com) - outer(link.com, link.com)) * link.mass
        for link in chain.links
    ]
    for i in reversed(range(1, n)):  # composite bodies, tip to base
        R, p = transforms[i]
        h_rotated = R @ first[i]
        shift = (identity() * p.dot(p) - outer(p, p)) * mass[i]  # folds when p and m are constants
        cross_terms = _symmetric_product_term(p, h_rotated)
        rot[i - 1] = rot[i - 1] + congruence(R, rot[i]) + shift + cross_terms
        first[i - 1] = first[i - 1] + h_rotated + p * mass[i]
        mass[i - 1] = mass[i - 1] + mass[i]

    D: list[list[Scalar]] = [[0.0] * n for _ in range(n)]
    for i in reversed(range(n)):
        a = chain.links[i].axis
        if chain.links[i].prismatic:
            f, m = a * mass[i], first[i].cross(a)
        else:
            f, m = a.cross(first[i]), rot[i] @ a
        for j in reversed(range(i + 1)):
            if j < i:  # carry the wrench from F_{j+1} to F_j
                R, p = transforms[j + 1]
                f = R @ f
                m = R @ m + p.cross(f)
            link_j = chain.links[j]
            D[j][i] = (f if link_j.prismatic else m).dot(link_j.axis)
            D[i][j] = D[j][i]
        if motor_inertia:
            D[i][i] = D[i][i] + chain.links[i].motor_inertia
    return D


def _symmetric_product_term(p: Vec3, h: Vec3) -> Mat3:
    """``2 (p.h) E - h p^T - p h^T`` entry by entry (``p_i h_i`` cancels on the diagonal exactly)."""
    pv, hv = tuple(p), tuple(h)
    rows: list[list[Scalar]] = [[0.0] * 3 for _ in range(3)]
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        rows[i][i] = 2.0 * (pv[j] * hv[j] + pv[k] * hv[k])
        for m in (j, k):
            rows[i][m] = -(hv[i] * pv[m] + pv[i] * hv[m])
    return Mat3(rows)
