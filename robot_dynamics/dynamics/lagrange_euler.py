"""Lagrange–Euler dynamics with Fu's 4x4 matrices (Fu et al. section 3.2): the reference formulation.

O(n^4) and slow by design: it is the textbook computation the fast paths (:mod:`.crba`,
:mod:`.rnea`) are tested against, and it shows the book's quantities:

* ``Q_j`` (3.2-8/9): the derivative operator of joint ``j``'s motion in its own frame,
  ``dM_j/dq_j = Q_j M_j`` — ``[[ [a]x, 0 ], [0, 0]]`` for a revolute joint about ``a`` (Fu's
  ``Q_i`` for ``a = z``), ``[[0, a], [0, 0]]`` for a prismatic one.
* ``U_ij = dA0_i/dq_j = A0_{j-1} X_j Q_j M_j A^j_i = Delta_j A0_i`` for ``j <= i``, else 0 (3.2-11),
  where ``Delta_j = A0_j Q_j (A0_j)^-1`` is joint j's operator in the base frame.
* ``U_ijk = dU_ij/dq_k = Delta_j Delta_k A0_i`` (``i >= k >= j``), ``Delta_k Delta_j A0_i``
  (``i >= j >= k``), 0 if ``i < j`` or ``i < k`` (3.2-13).
* Pseudo-inertia of link ``i`` about the ``F_i`` origin, in ``F_i`` (3.2-18, misprint
  corrected, see docs/references.md):
  ``J[:3,:3] = tr(I_c)/2 E - I_c + m c c^T``, ``J[:3,3] = J[3,:3]^T = m c``, ``J[3,3] = m``.
* ``D_ik = sum_{j >= max(i,k)} Tr(U_jk J_j U_ji^T)`` (3.2-31, plus ``G^2 Jm`` on the diagonal),
  ``h_ikm = sum_{j >= max(i,k,m)} Tr(U_jkm J_j U_ji^T)`` (3.2-33), ``h_i = sum_km h_ikm qd_k qd_m``
  (3.2-32), ``c_i = sum_{j >= i} -m_j g U_ji r_j`` (3.2-34; ``g = (g_x, g_y, g_z, 0)`` in ``F_0``,
  ``m_j r_j = J_j e_4``).

Every function takes ``q`` of shape ``(n,)`` or ``(N, n)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model import FloatArray, RobotModel
from ._state import as_batch, states
from .kinematics import batch_frame_poses


def derivative_operators(model: RobotModel) -> FloatArray:
    """``Q_j`` of every joint, ``(n, 4, 4)``."""
    arr = model.arrays
    Q = np.zeros((model.dof, 4, 4))
    for j, a in enumerate(arr.axis):
        if arr.prismatic[j]:
            Q[j, :3, 3] = a
        else:
            Q[j, :3, :3] = [[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]]
    return Q


def pseudo_inertias(model: RobotModel) -> FloatArray:
    """``J_i`` of every link, ``(n, 4, 4)`` (3.2-18)."""
    arr = model.arrays
    J = np.zeros((model.dof, 4, 4))
    for i in range(model.dof):
        m, c, I_c = arr.mass[i], arr.com[i], arr.inertia[i]
        J[i, :3, :3] = 0.5 * np.trace(I_c) * np.eye(3) - I_c + m * np.outer(c, c)
        J[i, :3, 3] = J[i, 3, :3] = m * c
        J[i, 3, 3] = m
    return J


def _u_matrices(model: RobotModel, q: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``U[N, i, j] = U_ij`` (3.2-11) and ``Delta[N, j]`` for a batch of ``q``."""
    A = batch_frame_poses(model, q)  # A0_i
    Q = derivative_operators(model)
    Delta = A @ Q[None] @ np.linalg.inv(A)  # A0_j Q_j (A0_j)^-1
    n = model.dof
    lower = np.tril(np.ones((n, n)))[None, :, :, None, None]  # j <= i
    U = lower * np.einsum("Njab,Nibc->Nijac", Delta, A)
    return U, Delta


def _u3_matrices(model: RobotModel, q: FloatArray, Delta: FloatArray) -> FloatArray:
    """``U3[N, i, j, k] = U_ijk`` (3.2-13)."""
    A = batch_frame_poses(model, q)
    n = model.dof
    jk = np.einsum("Njab,Nkbc->Njkac", Delta, Delta)  # Delta_j Delta_k
    j_first = (np.arange(n)[:, None] <= np.arange(n)[None, :])[None, :, :, None, None]
    ordered = np.where(j_first, jk, jk.transpose(0, 2, 1, 3, 4))  # Delta_min(j,k) Delta_max(j,k)
    idx = np.arange(n)
    inside = (idx[:, None, None] >= idx[None, :, None]) & (idx[:, None, None] >= idx[None, None, :])  # i >= j, k
    U3 = np.einsum("Njkab,Nibc->Nijkac", ordered, A)
    return np.asarray(inside[None, :, :, :, None, None] * U3)


def _batch_q(model: RobotModel, q: Any) -> tuple[bool, FloatArray]:
    batch, (qs,) = states(model, q=q)
    return batch, as_batch(batch, [qs])[0]


def inertia_matrix(model: RobotModel, q: Any, *, motor_inertia: bool | None = None) -> FloatArray:
    """``D(q)`` by 3.2-31, ``(..., n, n)``."""
    batch, qb = _batch_q(model, q)
    U, _ = _u_matrices(model, qb)
    D = np.einsum("Njkab,jbc,Njiac->Nik", U, pseudo_inertias(model), U)  # Tr(U_jk J_j U_ji^T)
    if model.motor_inertia_in_d if motor_inertia is None else motor_inertia:
        D = D + np.diag(model.arrays.reflected_motor_inertia)
    return D if batch else D[0]


def coriolis_tensor(model: RobotModel, q: Any) -> FloatArray:
    """``h_ikm`` by 3.2-33, ``(..., n, n, n)``."""
    batch, qb = _batch_q(model, q)
    U, Delta = _u_matrices(model, qb)
    U3 = _u3_matrices(model, qb, Delta)
    H = np.einsum("Njkmab,jbc,Njiac->Nikm", U3, pseudo_inertias(model), U)  # Tr(U_jkm J_j U_ji^T)
    return H if batch else H[0]


def gravity_torques(model: RobotModel, q: Any) -> FloatArray:
    """``c(q)`` by 3.2-34, ``(..., n)``."""
    batch, qb = _batch_q(model, q)
    U, _ = _u_matrices(model, qb)
    g = np.append(model.gravity_base, 0.0)
    c = -np.einsum("a,Njiab,jb->Ni", g, U, pseudo_inertias(model)[:, :, 3])  # -m_j g U_ji r_j
    return c if batch else c[0]


def inverse_dynamics(model: RobotModel, q: Any, qd: Any, qdd: Any, *, motor_inertia: bool | None = None) -> FloatArray:
    """``tau = D qdd + h + c`` from the Lagrange–Euler coefficients (3.2-26), rigid body + motor inertia."""
    batch, values = states(model, q=q, qd=qd, qdd=qdd)
    qb, qdb, qddb = as_batch(batch, values)
    D = inertia_matrix(model, qb, motor_inertia=motor_inertia)
    H = coriolis_tensor(model, qb)
    tau = np.einsum("Nik,Nk->Ni", D, qddb) + np.einsum("Nikm,Nk,Nm->Ni", H, qdb, qdb) + gravity_torques(model, qb)
    return tau if batch else tau[0]
