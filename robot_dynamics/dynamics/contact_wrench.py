"""The wrench at the tool from external joint torques: damped least squares through the Jacobian.

A wrench ``F = [f; n]`` that the environment exerts on the tool (force and moment at the tool-frame
origin) loads the joints with ``tau_ext = J(q)^T F``, ``J`` the geometric Jacobian of the tool origin
(rows ``[v; w]``, :func:`~.tool_jacobian.jacobian`; its frame gives the axes of ``F``: ``"tool"``,
``"base"`` or ``"world"``). The estimate is the damped least-squares solution (Wampler 1986; Nakamura &
Hanafusa 1986)::

    F = argmin |J^T F - tau_ext|^2 + lambda^2 |F|^2 = (J J^T + lambda^2 I)^-1 J tau_ext

computed from the singular values ``J = U diag(s) V^T``::

    F = sum_i  s_i / (s_i^2 + lambda^2)  u_i (v_i . tau_ext),   over s_i > floor

* ``lambda = 0``, ``floor = 0``: ``F = J^-T tau_ext`` for a non-redundant 6-joint arm away from
  singularities (exact), the least-squares fit for a redundant arm (``n > 6``), the minimum-norm
  wrench for ``n < 6`` (only ``n`` components of ``F`` are observable);
* ``lambda > 0`` bounds the gain ``1 / (2 lambda)`` of every direction near a singularity, at the cost
  of a relative error ``lambda^2 / s_i^2`` in the others;
* singular values at or below ``floor`` are dropped: those directions of ``F`` are reported as 0
  (and :attr:`WrenchEstimate.rank` counts the ones kept).

The singular values of ``J`` mix units (m for the force rows, 1 for the moment rows), as do
``lambda`` and ``floor``. Every estimate reports the damping, the floor and ``cond(J) = s_max /
s_min`` over the ``min(6, n)`` singular values (inf at a singularity): the wrench is trustworthy where
the condition number is moderate (say < 50).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..errors import StateError
from ..model import FloatArray, RobotModel
from .kinematics import Frame
from .tool_jacobian import jacobian

#: Defaults: lambda (the damping) and the singular-value floor.
DEFAULT_DAMPING = 1e-3
DEFAULT_FLOOR = 1e-6


@dataclass(frozen=True)
class WrenchEstimate:
    """``wrench`` ``(..., 6)`` ``[fx, fy, fz, nx, ny, nz]`` (N, N·m) on the tool, at its origin, axes of
    ``frame``; ``condition`` ``(...)`` cond(J); ``rank`` ``(...)`` singular values kept;
    ``damping`` and ``floor`` as used."""

    wrench: FloatArray
    frame: str
    condition: FloatArray
    rank: np.ndarray
    damping: float
    floor: float


def check_damping(damping: float, floor: float) -> tuple[float, float]:
    """``(damping, floor)`` as floats; StateError unless both are finite and >= 0."""
    values = (float(damping), float(floor))
    for name, value in zip(("damping", "singular-value floor"), values, strict=True):
        if not (np.isfinite(value) and value >= 0.0):
            raise StateError(f"{name}: must be finite and >= 0, got {value!r}")
    return values


def external_wrench(
    model: RobotModel,
    q: ArrayLike,
    tau_ext: ArrayLike,
    *,
    frame: Frame = "tool",
    damping: float = DEFAULT_DAMPING,
    floor: float = DEFAULT_FLOOR,
) -> WrenchEstimate:
    """The wrench on the tool that explains ``tau_ext`` ``(n,)`` or ``(N, n)`` at ``q`` (module doc)."""
    lam, cut = check_damping(damping, floor)
    J = jacobian(model, q, frame=frame)  # validates q and the frame
    tau = np.asarray(tau_ext, dtype=np.float64)
    if tau.shape[-1:] != (model.dof,) or tau.ndim > 2 or not np.isfinite(tau).all():
        raise StateError(f"tau_ext: expected finite values, shape ({model.dof},) or (N, {model.dof}), got {tau.shape}")
    U, s, Vt = np.linalg.svd(J, full_matrices=False)  # J = U diag(s) V^T, s descending, min(6, n) values
    kept = s > cut
    gain = np.where(kept, s / np.where(kept, s * s + lam * lam, 1.0), 0.0)
    if tau.ndim == 1 and J.ndim == 2:  # one state (a node's joint state): plain matrix products, float ratio
        top, bottom = float(s[0]), float(s[-1])
        return WrenchEstimate(
            wrench=U @ (gain * (Vt @ tau)),
            frame=frame,
            condition=np.asarray(top / bottom if bottom > 0.0 else np.inf),
            rank=np.asarray(np.count_nonzero(kept)),
            damping=lam,
            floor=cut,
        )
    along = np.matmul(Vt, tau[..., None])  # v_i . tau_ext
    F = np.matmul(U, gain[..., None] * along)[..., 0]
    smallest = s[..., -1]
    condition = np.divide(s[..., 0], smallest, out=np.full_like(smallest, np.inf), where=smallest > 0.0)
    return WrenchEstimate(
        wrench=np.asarray(F),
        frame=frame,
        condition=np.asarray(condition),
        rank=np.asarray(np.count_nonzero(kept, axis=-1)),
        damping=lam,
        floor=cut,
    )


__all__ = ["DEFAULT_DAMPING", "DEFAULT_FLOOR", "WrenchEstimate", "check_damping", "external_wrench"]
