"""The inverse operational-space inertia ``J D^-1 J^T`` of a frame, by a Cholesky factorisation of D.

A force ``F`` at a frame of the arm (a wrench at its origin, base axes) accelerates the frame by
``xdd = J D^-1 J^T F + ...`` (``tau = J^T F``, ``qdd = D^-1 tau``, ``xdd = J qdd + Jdot qd``): ``J D^-1 J^T``
is the inverse of the operational-space inertia ``Lambda`` of Khatib (1987), "A unified approach for
motion and force control of robot manipulators: the operational space formulation", *IEEE J. Robotics
and Automation* 3(1) (Siciliano et al. §7.8). Computed with ``D = L L^T`` (:mod:`.cholesky`; D from
:mod:`.crba`, with the reflected motor inertia when asked, as :func:`~.coefficients.inertia_matrix`)::

    Y = L^-1 J^T   (one forward substitution per row of J),   J D^-1 J^T = Y^T Y

so the product is symmetric positive semi-definite by construction. ``Lambda`` is its inverse where
it has one (:mod:`.operational_space`: the rows of a task, singular configurations, fewer joints than
rows). Written over scalars and traced like the rest of the engine; the native backend runs the same
steps in C after the compiled Jacobian and D (:func:`._c_codegen.task_inertia_function`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._chain import Chain
from ._trace import Scalar
from .cholesky import cholesky_factor, forward_substitution
from .crba import composite_inertia_matrix


def inverse_task_inertia(
    J: Sequence[Sequence[Scalar]], chain: Chain, q: Sequence[Scalar], motor_inertia: bool
) -> list[list[Scalar]]:
    """``J D^-1 J^T`` (rows x rows) for the Jacobian rows ``J`` of a frame of ``chain`` at ``q``."""
    L, inv_diag = cholesky_factor(composite_inertia_matrix(chain, q, motor_inertia))
    Y = [forward_substitution(L, inv_diag, row) for row in J]  # the columns of L^-1 J^T
    A: list[list[Scalar]] = [[0.0] * len(J) for _ in J]
    for r, y_r in enumerate(Y):
        for c in range(r + 1):
            total: Scalar = y_r[0] * Y[c][0]
            for y_ri, y_ci in zip(y_r[1:], Y[c][1:], strict=True):
                total = total + y_ri * y_ci
            A[r][c] = A[c][r] = total
    return A
