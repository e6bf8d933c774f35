"""Lagrange–Euler coefficients with Fu's letters, and ROBMAT's configuration-space form.

  tau = D(q) qdd + h(q, qd) + c(q)                                     (Fu 3.2-26)
  h_i = sum_k sum_m h_ikm qd_k qd_m,   h_ikm = h_imk,  h_iii = 0          (3.2-32, 3.2-33)
  h = C(q, qd) qd with C_ij = sum_k h_ijk qd_k, where h_ijk are the Christoffel symbols
      1/2 (dD_ij/dq_k + dD_ik/dq_j - dD_jk/dq_i), so that dD/dt - 2 C is skew-symmetric
  ROBMAT (Horn & Linge §4.2): F = M q'' + 2 B [q'q'] + C [q'^2] + G with M = D, B[i, (j,k)] = h_ijk (j < k,
      columns (1,2), (1,3) .. (1,n), (2,3) .. (n-1,n)), C[i, j] = h_ijj, G = c.

Fast paths (the reference is :mod:`.lagrange_euler`): D by the composite-rigid-body algorithm
(:mod:`.crba`); h, c by Newton–Euler with qdd = 0 and without/with gravity; h_ikm by probing the
Newton–Euler velocity terms with unit velocities (exact: h is a quadratic form in qd).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..model import FloatArray, RobotModel
from ._dispatch import CORIOLIS_TENSOR, GRAVITY, INERTIA, VELOCITY, general, single
from ._kernels import kernels
from ._state import fast_single, states


def inertia_matrix(
    model: RobotModel, q: ArrayLike, *, motor_inertia: bool | None = None, backend: str | None = None
) -> FloatArray:
    """``D(q)`` ``(..., n, n)``, symmetric positive definite; includes ``G^2 Jm`` on the diagonal when
    ``motor_inertia`` (default ``model.motor_inertia_in_d``). ``backend``: see :mod:`._dispatch`."""
    K = kernels(model)
    key = INERTIA[K.motor_inertia_in_d if motor_inertia is None else bool(motor_inertia)]
    out = single(model, K, backend, key, q)  # (the native entry returns D as a matrix)
    if out is None:
        return general(model, K, backend, key, 2, q=q)
    return out if out.ndim == 2 else out.reshape(K.n, K.n)


def coriolis_centrifugal(model: RobotModel, q: ArrayLike, qd: ArrayLike, *, backend: str | None = None) -> FloatArray:
    """``h(q, qd)`` ``(..., n)``: the Coriolis and centrifugal torques."""
    K = kernels(model)
    out = single(model, K, backend, VELOCITY, q, qd)
    return out if out is not None else general(model, K, backend, VELOCITY, q=q, qd=qd)


def gravity_torques(model: RobotModel, q: ArrayLike, *, backend: str | None = None) -> FloatArray:
    """``c(q)`` ``(..., n)``: the gravity loading (``model.gravity``)."""
    K = kernels(model)
    out = single(model, K, backend, GRAVITY, q)
    return out if out is not None else general(model, K, backend, GRAVITY, q=q)


def coriolis_tensor(model: RobotModel, q: ArrayLike, *, backend: str | None = None) -> FloatArray:
    """``h_ikm`` ``(..., n, n, n)`` (index order i, k, m), ``h_i = sum_km h_ikm qd_k qd_m``."""
    K = kernels(model)
    out = single(model, K, backend, CORIOLIS_TENSOR, q)
    return general(model, K, backend, CORIOLIS_TENSOR, 3, q=q) if out is None else out.reshape(K.n, K.n, K.n)


def coriolis_matrix(model: RobotModel, q: ArrayLike, qd: ArrayLike, *, backend: str | None = None) -> FloatArray:
    """``C(q, qd)`` ``(..., n, n)`` in Christoffel form: ``C qd = h`` and ``dD/dt - 2C`` skew-symmetric."""
    if fast_single(model.dof, q, qd) is not None:  # one finite state (a node's call): no general validation
        return np.asarray(coriolis_tensor(model, q, backend=backend) @ np.asarray(qd))
    _, (qs, qds) = states(model, q=q, qd=qd)
    H = coriolis_tensor(model, np.asarray(qs), backend=backend)
    return np.asarray(np.matmul(H, np.asarray(qds)[..., None, :, None])[..., 0])  # sum_k h_ijk qd_k


@dataclass(frozen=True, eq=False)
class RobmatCoefficients:
    """ROBMAT's ``F = M q'' + 2 B [q'q'] + C [q'^2] + G`` (Horn & Linge §4.2) at one or many configurations.

    ``M`` ``(..., n, n)``, ``B`` ``(..., n, n(n-1)/2)`` (columns ``pairs``), ``C`` ``(..., n, n)``,
    ``G`` ``(..., n)``.
    """

    M: FloatArray
    B: FloatArray
    C: FloatArray
    G: FloatArray
    pairs: tuple[tuple[int, int], ...]  # (j, k), 0-based, j < k, in ROBMAT's column order

    def torque(self, qd: ArrayLike, qdd: ArrayLike) -> FloatArray:
        """``M qdd + 2 B [qd qd] + C [qd^2] + G`` for matching ``qd``, ``qdd``."""
        v = np.asarray(qd, dtype=float)
        products = np.stack([v[..., j] * v[..., k] for j, k in self.pairs], axis=-1) if self.pairs else v[..., :0]
        return np.asarray(
            np.einsum("...ij,...j->...i", self.M, np.asarray(qdd, dtype=float))
            + 2.0 * np.einsum("...ij,...j->...i", self.B, products)
            + np.einsum("...ij,...j->...i", self.C, v * v)
            + self.G
        )


def robmat_coefficients(
    model: RobotModel, q: ArrayLike, *, motor_inertia: bool | None = None, backend: str | None = None
) -> RobmatCoefficients:
    """ROBMAT's M, B, C, G (Horn & Linge §4.2) from D, the Christoffel symbols h_ijk and c."""
    _, (qs,) = states(model, q=q)
    qa = np.asarray(qs, dtype=float)
    n = model.dof
    H = coriolis_tensor(model, qa, backend=backend)
    pairs = tuple((j, k) for j in range(n) for k in range(j + 1, n))
    B = np.stack([H[..., :, j, k] for j, k in pairs], axis=-1) if pairs else np.zeros((*H.shape[:-3], n, 0))
    C = np.einsum("...ijj->...ij", H)
    return RobmatCoefficients(
        M=inertia_matrix(model, qa, motor_inertia=motor_inertia, backend=backend),
        B=B,
        C=np.ascontiguousarray(C),
        G=gravity_torques(model, qa, backend=backend),
        pairs=pairs,
    )
