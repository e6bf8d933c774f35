"""Inverse dynamics: the joint torques for a motion, with friction and a tool load.

  tau = D(q) qdd + h(q, qd) + c(q) + J^T w + b(qd, load)
      = Newton–Euler(q, qd, qdd, load w)  [Fu 3.3-50..58, :mod:`.rnea`]  + G^2 Jm qdd  + b

* ``w = [f; n]`` is the wrench the tool exerts on the environment (the load: Fu's
  ``f_{n+1}, n_{n+1}``), at the tool-frame origin. Its torque is ``+J^T w`` (``J`` the geometric
  Jacobian of the tool origin, :func:`~.tool_jacobian.jacobian`); with the wrench the environment
  exerts on the robot, ``w_ext = -w``, this is the ``- J^T w_ext`` of docs/references.md.
* ``G^2 Jm qdd``: reflected motor inertia, part of D when ``model.motor_inertia_in_d`` (Robotics
  Toolbox convention; ``motor_inertia=`` overrides).
* ``b``: the friction package's terms (:func:`robot_dynamics.friction.apply_friction`), computed from
  the frictionless torque and the frictionless joint reactions (for load-dependent friction). Without
  ``breakdown`` only their sum is needed: the friction package's program is traced onto the
  Newton–Euler program (:mod:`._friction_trace`), so one state or a batch runs ``tau + b`` as one
  straight-line program (the native backend: the same program translated to C, :mod:`.native`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np
from numpy.typing import ArrayLike

from ..friction import FrictionTerms, apply_friction, friction_total
from ..friction.smooth import model_kind
from ..model import FloatArray, RobotModel
from ._dispatch import (
    GRAVITY,
    INERTIAL,
    INVERSE,
    TOOL_LOAD,
    VELOCITY,
    WrenchFrame,
    evaluate,
    friction_variant,
    library,
    single,
    try_evaluate,
    validate,
)
from ._kernel_key import FrictionVariant, KernelKey
from ._kernels import CompiledLibrary, ModelKernels, kernels


@dataclass(frozen=True, eq=False)
class InverseDynamicsBreakdown:
    """The terms of the joint torque, each ``(..., n)``; ``total`` is their sum.

    ``inertial`` = D_rigid qdd (without the motor inertia), ``coriolis_centrifugal`` = h,
    ``gravity`` = c, ``motor_inertia`` = G^2 Jm qdd (0 when switched off), ``tool_wrench`` = J^T w,
    ``friction`` = b (``friction_terms`` holds its parts, ``None`` when friction is off).
    """

    total: FloatArray
    inertial: FloatArray
    coriolis_centrifugal: FloatArray
    gravity: FloatArray
    friction: FloatArray
    motor_inertia: FloatArray
    tool_wrench: FloatArray
    friction_terms: FrictionTerms | None = None


def rnea_with_reactions(
    model: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    wrench: ArrayLike | None = None,
    gravity: bool = True,
    *,
    wrench_frame: WrenchFrame = "tool",
    backend: str | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Rigid-body Newton–Euler torques and joint reactions (no motor inertia, no friction).

    Returns ``(tau, force, moment)``: ``tau`` ``(..., n)``; ``force``, ``moment`` ``(..., n, 3)`` the
    force and moment that link i-1 exerts on link i through joint i, at the origin of ``F_i``, in
    ``F_i`` coordinates (Fu's f_i, n_i of 3.3-56/57). ``wrench``: the tool load (see the module doc).
    ``backend``: ``None``, "python" or "native" (see :mod:`._dispatch`).
    """
    K = kernels(model)
    native = library(model, K, backend)
    batch, values, load = validate(model, {"q": q, "qd": qd, "qdd": qdd}, wrench, wrench_frame)
    key = KernelKey.rnea(gravity=gravity, load=load is not None, reactions=True)
    tau, force, moment = _split(evaluate(K, native, key, batch, _args(values, load)), model.dof, True)
    assert force is not None and moment is not None
    return tau, force, moment


@overload
def inverse_dynamics(
    model: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    friction: bool = ...,
    wrench: ArrayLike | None = ...,
    *,
    breakdown: Literal[False] = ...,
    smooth: bool | None = ...,
    smooth_kind: str | None = ...,
    motor_inertia: bool | None = ...,
    backend: str | None = ...,
    wrench_frame: WrenchFrame = ...,
) -> FloatArray: ...


@overload
def inverse_dynamics(
    model: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    friction: bool = ...,
    wrench: ArrayLike | None = ...,
    *,
    breakdown: Literal[True],
    smooth: bool | None = ...,
    smooth_kind: str | None = ...,
    motor_inertia: bool | None = ...,
    backend: str | None = ...,
    wrench_frame: WrenchFrame = ...,
) -> InverseDynamicsBreakdown: ...


@overload
def inverse_dynamics(
    model: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    friction: bool = ...,
    wrench: ArrayLike | None = ...,
    *,
    breakdown: bool,
    smooth: bool | None = ...,
    smooth_kind: str | None = ...,
    motor_inertia: bool | None = ...,
    backend: str | None = ...,
    wrench_frame: WrenchFrame = ...,
) -> FloatArray | InverseDynamicsBreakdown: ...


def inverse_dynamics(
    model: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    friction: bool = True,
    wrench: ArrayLike | None = None,
    *,
    breakdown: bool = False,
    smooth: bool | None = None,
    smooth_kind: str | None = None,
    motor_inertia: bool | None = None,
    backend: str | None = None,
    wrench_frame: WrenchFrame = "tool",
) -> FloatArray | InverseDynamicsBreakdown:
    """Joint torques ``(..., n)`` for positions, velocities and accelerations ``(n,)`` or ``(N, n)``.

    ``friction``: add the model's friction (the discontinuous model unless ``smooth=True``;
    ``smooth_kind`` "tanh" or "linear" chooses the smooth direction function, by default the model's
    ``smooth_kind``).
    ``wrench``: ``[fx, fy, fz, nx, ny, nz]`` the tool exerts on the environment, at the tool origin, in
    ``wrench_frame`` axes ("tool", "base" = ``F_0``, or "world"). ``motor_inertia``: include G^2 Jm qdd
    (default ``model.motor_inertia_in_d``). ``backend``: ``None`` (the model's prepared backend or the
    process default), "python" or "native" (compiled C), see :mod:`._dispatch`; the symbolic package's
    generated code is :func:`robot_dynamics.symbolic.get_backend`. ``breakdown=True`` returns an
    :class:`InverseDynamicsBreakdown`.
    """
    K = kernels(model)
    motor = K.motor_inertia_in_d if motor_inertia is None else bool(motor_inertia)
    use_friction = bool(friction) and K.has_friction
    smooth_kind = model_kind(model, smooth_kind)
    if wrench is None and not breakdown:  # one state: the key of the fused program, no validation
        key = INVERSE.get((motor, (smooth_kind if smooth else "exact") if use_friction else None))
        if key is not None:  # (None: a bad smooth_kind, reported below)
            out = single(model, K, backend, key, q, qd, qdd)
            if out is not None:
                return out
    native = library(model, K, backend)
    variant = friction_variant(smooth, smooth_kind) if use_friction else None  # reported before anything runs
    batch, values, load = validate(model, {"q": q, "qd": qd, "qdd": qdd}, wrench, wrench_frame)
    if breakdown:
        return _breakdown(model, K, native, motor, variant, batch, values, load, smooth_kind)
    if variant is None:
        return evaluate(K, native, KernelKey.rnea(motor=motor, load=load is not None), batch, _args(values, load))
    return _with_friction(model, K, native, motor, variant, batch, values, load, smooth_kind)


def _args(values: list[Any], load: Any) -> list[Any]:
    return values if load is None else [*values, load]


def _split(out: FloatArray, n: int, reactions: bool) -> tuple[FloatArray, FloatArray | None, FloatArray | None]:
    """``(tau, force, moment)`` of a Newton–Euler result ``(..., n [+ 6 n])`` (reactions ``(..., n, 3)``)."""
    if not reactions:
        return out[..., :n], None, None
    lead = out.shape[:-1]
    return out[..., :n], out[..., n : 4 * n].reshape(*lead, n, 3), out[..., 4 * n :].reshape(*lead, n, 3)


def _with_friction(
    model: RobotModel,
    K: ModelKernels,
    native: CompiledLibrary | None,
    motor: bool,
    variant: FrictionVariant,
    batch: bool,
    values: list[Any],
    load: Any,
    smooth_kind: str,
) -> FloatArray:
    """``tau + b`` without the breakdown: the fused program (native C, else the traced Python), or,
    for a friction program outside the traceable subset, Newton–Euler plus the friction package."""
    args = _args(values, load)
    out = try_evaluate(K, native, KernelKey.inverse_friction(motor, load is not None, variant), batch, args)
    if out is not None:
        return out
    reactions = K.needs_reactions(model)
    rigid = evaluate(K, native, KernelKey.rnea(motor=motor, load=load is not None, reactions=reactions), batch, args)
    tau_joint, force, moment = _split(rigid, model.dof, reactions)
    qd = np.asarray(values[1], dtype=float)
    smooth = variant != "exact"
    return tau_joint + friction_total(model, qd, tau_joint, force, moment, smooth=smooth, smooth_kind=smooth_kind)


def _breakdown(
    model: RobotModel,
    K: ModelKernels,
    native: CompiledLibrary | None,
    motor: bool,
    variant: FrictionVariant | None,
    batch: bool,
    values: list[Any],
    load: Any,
    smooth_kind: str,
) -> InverseDynamicsBreakdown:
    """The terms of :class:`InverseDynamicsBreakdown`, each by its own Newton–Euler variant."""
    q, qd, qdd = values
    reactions = variant is not None and K.needs_reactions(model)
    key = KernelKey.rnea(motor=motor, load=load is not None, reactions=reactions)
    tau_joint, force, moment = _split(evaluate(K, native, key, batch, _args(values, load)), model.dof, reactions)
    terms = None
    friction_torque = np.zeros_like(tau_joint)
    if variant is not None:
        smooth = variant != "exact"
        terms = apply_friction(model, np.asarray(qd), tau_joint, force, moment, smooth=smooth, smooth_kind=smooth_kind)
        friction_torque = np.asarray(terms.total, dtype=float)
    total = tau_joint + friction_torque
    zeros = np.zeros_like(total)
    return InverseDynamicsBreakdown(
        total=total,
        inertial=evaluate(K, native, INERTIAL, batch, [q, qdd]),
        coriolis_centrifugal=evaluate(K, native, VELOCITY, batch, [q, qd]),
        gravity=evaluate(K, native, GRAVITY, batch, [q]),
        friction=friction_torque,
        motor_inertia=K.reflected_motor_inertia * np.asarray(qdd, dtype=float) if motor else zeros,
        tool_wrench=evaluate(K, native, TOOL_LOAD, batch, [q, load]) if load is not None else zeros,
        friction_terms=terms,
    )
