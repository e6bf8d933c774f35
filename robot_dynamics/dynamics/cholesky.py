"""Solve ``D x = b`` for a symmetric positive definite ``D`` by a Cholesky factorisation ``D = L L^T``.

Written over generic scalars (Python floats, NumPy rows or the tracer's symbols, :mod:`._trace`), so
forward dynamics traces it into the same straight-line program as D and the bias torques
(:meth:`._kernels.ModelKernels.forward`); the native backend emits the same steps in C.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._trace import Scalar, sqrt


def cholesky_factor(D: Sequence[Sequence[Scalar]]) -> tuple[list[list[Scalar]], list[Scalar]]:
    """``(L, 1 / diag(L))`` of ``D = L L^T`` for symmetric positive definite ``D`` (generic scalars):
    ``L_jj = sqrt(D_jj - sum_k<j L_jk^2)``, ``L_ij = (D_ij - sum_k<j L_ik L_jk) / L_jj``."""
    n = len(D)
    L: list[list[Scalar]] = [[0.0] * n for _ in range(n)]
    inv_diag: list[Scalar] = [0.0] * n
    for j in range(n):
        pivot = D[j][j]
        for k in range(j):
            pivot = pivot - L[j][k] * L[j][k]
        L[j][j] = sqrt(pivot)
        inv_diag[j] = 1.0 / L[j][j]
        for i in range(j + 1, n):
            s = D[i][j]
            for k in range(j):
                s = s - L[i][k] * L[j][k]
            L[i][j] = s * inv_diag[j]
    return L, inv_diag


def forward_substitution(
    L: Sequence[Sequence[Scalar]], inv_diag: Sequence[Scalar], rhs: Sequence[Scalar]
) -> list[Scalar]:
    """``y`` with ``L y = rhs`` (``L`` lower triangular, ``inv_diag`` its reciprocal diagonal)."""
    y: list[Scalar] = [0.0] * len(rhs)
    for i in range(len(rhs)):
        s = rhs[i]
        for k in range(i):
            s = s - L[i][k] * y[k]
        y[i] = s * inv_diag[i]
    return y


def cholesky_solve(D: Sequence[Sequence[Scalar]], rhs: Sequence[Scalar]) -> list[Scalar]:
    """Solve ``D x = rhs`` for symmetric positive definite ``D`` = L L^T (generic scalars):
    :func:`cholesky_factor`, then ``L y = rhs`` forward and ``L^T x = y`` backward."""
    n = len(rhs)
    L, inv_diag = cholesky_factor(D)
    y = forward_substitution(L, inv_diag, rhs)
    x: list[Scalar] = [0.0] * n  # L^T x = y
    for i in reversed(range(n)):
        s = y[i]
        for k in range(i + 1, n):
            s = s - L[k][i] * x[k]
        x[i] = s * inv_diag[i]
    return x
