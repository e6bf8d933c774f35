"""The geometric Jacobian of the tool-frame origin ``(..., 6, n)`` in the base, world or tool frame.

One compiled engine program (:mod:`.geometric_jacobian`, dispatched like every engine function by
:mod:`._dispatch`) gives the base-frame Jacobian and the tool frame's rotation ``R0_t``; the other
frames rotate both row blocks ``[v; w]``: ``"world"`` by the base pose's rotation, ``"tool"`` by
``R0_t^T``. The velocity is always that of the tool-frame origin: ``J qd = [v_t; w_t]``.
"""

from __future__ import annotations

import numpy as np

from ..errors import StateError
from ..model import FloatArray, RobotModel
from ._dispatch import JACOBIAN, general, single
from ._kernels import kernels
from .kinematics import Frame


def jacobian(model: RobotModel, q: object, *, frame: Frame = "base") -> FloatArray:
    """Geometric Jacobian ``(..., 6, n)`` of the tool frame origin, rows ``[v; w]``.

    ``frame`` selects the coordinates of ``v`` and ``w``: ``"base"`` (``F_0``, default), ``"world"`` or
    ``"tool"`` (the tool frame's axes). ``q`` is one state ``(n,)`` or a batch ``(N, n)``.
    """
    if frame not in ("base", "world", "tool"):
        raise StateError(f"frame: expected 'base', 'world' or 'tool', got {frame!r}")
    K = kernels(model)
    n = K.n
    out = single(model, K, None, JACOBIAN, q)
    if out is None:
        out = general(model, K, None, JACOBIAN, q=q)  # type: ignore[arg-type]
    lead = out.shape[:-1]
    J = out[..., : 6 * n].reshape(*lead, 2, 3, n)  # the row blocks v, w
    if frame == "world":
        J = model.base[:3, :3] @ J
    elif frame == "tool":  # R0_t^T on both blocks
        J = np.swapaxes(out[..., 6 * n :].reshape(*lead, 1, 3, 3), -1, -2) @ J
    return np.asarray(J).reshape(*lead, 6, n)


__all__ = ["jacobian"]
