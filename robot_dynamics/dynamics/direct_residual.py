"""The direct residual: the external joint torque where the acceleration is known.

From the dynamics with the motors' torque ``tau_m`` and the external torque ``tau_ext`` (Fu 3.2-26
with friction)::

    D(q) qdd + h(q, qd) + c(q) + b(qd) = tau_m + tau_ext
    =>  tau_ext = tau_model(q, qd, qdd) - tau_m

with ``tau_model`` the inverse dynamics (Newton–Euler with motor inertia and friction,
:func:`~.inverse.inverse_dynamics`). It has no lag, unlike the momentum observer
(:mod:`.momentum_observer`), but needs ``qdd`` — measured, commanded, or differentiated from the
velocity (whose noise it then carries). Its sign is the observer's: both estimate ``tau_ext``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..errors import StateError
from ..model import FloatArray, RobotModel
from .inverse import inverse_dynamics


def direct_residual(
    model: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    tau_m: ArrayLike,
    *,
    friction: bool = True,
    smooth: bool = True,
    backend: str | None = None,
) -> FloatArray:
    """``tau_model(q, qd, qdd) - tau_m`` ``(..., n)``: the external joint torque (module doc)."""
    tau_model = inverse_dynamics(model, q, qd, qdd, friction=friction, smooth=smooth, backend=backend)
    measured = np.asarray(tau_m, dtype=np.float64)
    if measured.shape != tau_model.shape or not np.isfinite(measured).all():
        raise StateError(f"tau_m: expected finite values of shape {tau_model.shape}, got shape {measured.shape}")
    return np.asarray(tau_model - measured)


__all__ = ["direct_residual"]
