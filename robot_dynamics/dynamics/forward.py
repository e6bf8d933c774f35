"""Forward dynamics: qdd = D(q)^-1 (tau - h - c - b) with a Cholesky factorisation.

The frictionless path is one compiled program per model (:mod:`._kernels`): D by the composite
rigid-body algorithm, ``h + c`` by Newton–Euler with ``qdd = 0``, then ``D = L L^T`` and two triangular
solves (:func:`.cholesky.cholesky_solve`, written over generic scalars so it is traced with the rest). The
native backend runs the same steps in C (:func:`._c_codegen.forward_function`). With friction the
stick–slip solver (:mod:`.stick_slip`) decides which joints stick.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..errors import StateError
from ..model import FloatArray, RobotModel
from ._dispatch import FORWARD, WrenchFrame, evaluate, library, single, validate
from ._kernel_key import KernelKey
from ._kernels import kernels
from .stick_slip import forward_dynamics_with_friction


def forward_dynamics(
    model: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    tau: ArrayLike,
    friction: bool = True,
    wrench: ArrayLike | None = None,
    *,
    motor_inertia: bool | None = None,
    wrench_frame: WrenchFrame = "tool",
    backend: str | None = None,
) -> FloatArray:
    """Joint accelerations ``(..., n)`` for applied joint torques ``tau`` (``(n,)`` or ``(N, n)``).

    Frictionless (``friction=False`` or a model without friction): ``qdd = D^-1 (tau - h - c - J^T w)``
    with D (including ``G^2 Jm`` per ``motor_inertia``) factorised by Cholesky. With friction the
    stick–slip solver decides which joints stick
    (:func:`robot_dynamics.dynamics.stick_slip.forward_dynamics_with_friction`); the tool wrench is
    handed to it, so the load also reaches the bearing reactions and the transmissions. ``backend``:
    ``None``, "python" or "native" (see :mod:`._dispatch`; the stick–slip solver uses the model's
    prepared backend).
    """
    K = kernels(model)
    motor = K.motor_inertia_in_d if motor_inertia is None else bool(motor_inertia)
    use_friction = friction and K.has_friction
    if wrench is None and not use_friction:  # one state: no validation
        out = single(model, K, backend, FORWARD[motor], q, qd, tau)
        if out is not None:
            return out
    native = library(model, K, backend)
    batch, values, load = validate(model, {"q": q, "qd": qd, "tau": tau}, wrench, wrench_frame)
    if use_friction:
        if motor != model.motor_inertia_in_d:
            raise StateError("motor_inertia: only the model's own setting is supported together with friction")
        qdd = forward_dynamics_with_friction(
            model, np.asarray(values[0]), np.asarray(values[1]), np.asarray(values[2]), wrench=load
        )
        return np.asarray(qdd, dtype=float)
    args = values if load is None else [*values, load]
    try:  # (a pivot that is a constant of the model fails while the program is built)
        with np.errstate(invalid="ignore", divide="ignore"):
            qdd = evaluate(K, native, KernelKey.forward(motor, load is not None), batch, args)
    except (ValueError, ZeroDivisionError):  # math.sqrt of a negative pivot, or a zero pivot
        qdd = np.full(model.dof, np.nan)
    if not np.isfinite(qdd).all():
        raise StateError(
            f"inertia matrix of robot {model.name!r} is not positive definite at q = {np.asarray(values[0])!s:.200} "
            "(a joint moves no mass and no motor inertia?)"
        )
    return qdd
