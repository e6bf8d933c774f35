"""Inverse dynamics: the joint torques for a motion, with friction and a tool load.

  tau = D(q) qdd + h(q, qd) + c(q) + J^T w + b(qd, load)
      = Newton–Euler(q, qd, qdd, load w)  [Fu 3.3-50..58, :mod:`.rnea`]  + G^2 Jm qdd  + b

* ``w = [f; n]`` is the wrench the tool exerts on the environment (the load: Fu's
  ``f_{n+1}, n_{n+1}``), at the tool-frame origin. Its torque is ``+J^T w`` (``J`` the geometric
  Jacobian of the tool origin, :func:`~.kinematics.jacobian`); with the wrench the environment
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
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..errors import StateError
from ..friction.smooth import check_smooth_kind
from ..model import FloatArray, RobotModel
from . import _state
from ._kernels import ModelKernels, evaluate, kernels, run
from .kinematics import forward_kinematics
from .native import FRICTION_VARIANTS, NativeModel, resolve

if TYPE_CHECKING:
    from ..friction import FrictionTerms

WrenchFrame = Literal["tool", "base", "world"]


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


def _motor_switch(model: RobotModel, motor_inertia: bool | None) -> bool:
    return model.motor_inertia_in_d if motor_inertia is None else bool(motor_inertia)


def _validate(
    model: RobotModel, joint_args: dict[str, Any], wrench: Any, wrench_frame: str
) -> tuple[bool, list[Any], Any]:
    """Joint states and (optionally) the wrench with a common batch size; wrench turned into tool frame."""
    what = f"{model.dof} joints of robot {model.name!r}"
    items = [(name, value, model.dof, what) for name, value in joint_args.items()]
    if wrench is not None:
        if wrench_frame not in ("tool", "base", "world"):
            raise StateError(f"wrench_frame: expected 'tool', 'base' or 'world', got {wrench_frame!r}")
        items.append(("wrench", wrench, 6, _state.WRENCH))
    batch, values = _state.validate(items)
    load = None
    if wrench is not None:
        load = values.pop()
        if wrench_frame != "tool":  # rotate f and n (both at the tool origin) into the tool frame
            q = values[0] if batch else np.array(values[0])
            pose = forward_kinematics(model, q, frame="world" if wrench_frame == "world" else "base")
            R = pose[..., :3, :3]
            w = np.asarray(load, dtype=float).reshape(-1, 2, 3)
            local = np.einsum("...ji,...kj->...ki", R if batch else R[None], w).reshape(-1, 6)
            load = local if batch else local[0].tolist()
    return batch, values, load


def rnea_with_reactions(
    model: RobotModel,
    q: Any,
    qd: Any,
    qdd: Any,
    wrench: Any = None,
    gravity: bool = True,
    *,
    wrench_frame: WrenchFrame = "tool",
    backend: str | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Rigid-body Newton–Euler torques and joint reactions (no motor inertia, no friction).

    Returns ``(tau, force, moment)``: ``tau`` ``(..., n)``; ``force``, ``moment`` ``(..., n, 3)`` the
    force and moment that link i-1 exerts on link i through joint i, at the origin of ``F_i``, in
    ``F_i`` coordinates (Fu's f_i, n_i of 3.3-56/57). ``wrench``: the tool load (see the module doc).
    ``backend``: ``None``, "python" or "native" (see :mod:`.native`).
    """
    K = kernels(model)
    native = _native_backend(model, K, backend)
    batch, values, load = _validate(model, {"q": q, "qd": qd, "qdd": qdd}, wrench, wrench_frame)
    key = ("rnea", True, True, bool(gravity), False, load is not None, True)
    out = evaluate(K, native, key, batch, values if load is None else [*values, load])
    tau, force, moment = _split(out, model.dof, True)
    assert force is not None and moment is not None
    return tau, force, moment


def _split(out: FloatArray, n: int, reactions: bool) -> tuple[FloatArray, FloatArray | None, FloatArray | None]:
    """``(tau, force, moment)`` of a Newton–Euler result ``(..., n [+ 6 n])`` (reactions ``(..., n, 3)``)."""
    if not reactions:
        return out[..., :n], None, None
    lead = out.shape[:-1]
    return out[..., :n], out[..., n : 4 * n].reshape(*lead, n, 3), out[..., 4 * n :].reshape(*lead, n, 3)


def _native_backend(model: RobotModel, K: ModelKernels, backend: str | None) -> NativeModel | None:
    """The native library for ``backend`` (``None``: Python)."""
    return resolve(model, K, backend)


def _friction_variant(smooth: bool | None, smooth_kind: str) -> str:
    if not smooth:
        return "exact"
    check_smooth_kind(smooth_kind)
    return smooth_kind


def _with_friction(
    model: RobotModel,
    K: ModelKernels,
    native: NativeModel | None,
    motor: bool,
    has_load: bool,
    batch: bool,
    args: list[Any],
    smooth: bool,
    smooth_kind: str,
) -> FloatArray:
    """``tau + b`` without the breakdown: the fused program (native C, else the traced Python), or,
    for a friction program outside the traceable subset, Newton–Euler plus the friction package."""
    variant = _friction_variant(smooth, smooth_kind)
    key = ("id_friction", motor, has_load, variant)
    if native is not None:
        out = native.run(key, batch, args)
        if out is not None:
            return out
    kernel = K.inverse_friction(motor, has_load, variant)
    if kernel is not None:
        return run(kernel, batch, args)
    from ..friction import friction_total

    need_reactions = K.needs_reactions(model)
    rigid = evaluate(K, native, ("rnea", True, True, True, motor, has_load, need_reactions), batch, args)
    tau_joint, force, moment = _split(rigid, model.dof, need_reactions)
    qd = np.asarray(args[1], dtype=float)
    return tau_joint + friction_total(model, qd, tau_joint, force, moment, smooth=smooth, smooth_kind=smooth_kind)


def inverse_dynamics(
    model: RobotModel,
    q: Any,
    qd: Any,
    qdd: Any,
    friction: bool = True,
    wrench: Any = None,
    *,
    breakdown: bool = False,
    smooth: bool | None = None,
    smooth_kind: str = "tanh",
    motor_inertia: bool | None = None,
    backend: str | None = None,
    wrench_frame: WrenchFrame = "tool",
) -> Any:
    """Joint torques ``(..., n)`` for positions, velocities and accelerations ``(n,)`` or ``(N, n)``.

    ``friction``: add the model's friction (the discontinuous model unless ``smooth=True``;
    ``smooth_kind`` "tanh" or "linear" chooses the smooth direction function).
    ``wrench``: ``[fx, fy, fz, nx, ny, nz]`` the tool exerts on the environment, at the tool origin, in
    ``wrench_frame`` axes ("tool", "base" = ``F_0``, or "world"). ``motor_inertia``: include G^2 Jm qdd
    (default ``model.motor_inertia_in_d``). ``backend``: ``None`` (the model's prepared backend or the
    process default, see :mod:`.native`), "python" or "native" (compiled C); the symbolic package's
    generated code is :func:`robot_dynamics.symbolic.get_backend`. ``breakdown=True`` returns an
    :class:`InverseDynamicsBreakdown`.
    """
    K = kernels(model)
    if wrench is None and not breakdown:  # the dedicated single-state paths
        native = K.native if backend is None and K.native is not None else resolve(model, K, backend)
        use_friction = friction and K.has_friction
        motor = K.motor_inertia_in_d if motor_inertia is None else bool(motor_inertia)
        if native is not None:
            call = native.inverse.get((motor, ("exact" if not smooth else smooth_kind) if use_friction else None))
            if call is not None:
                out = call(q, qd, qdd)
                if out is not None:
                    return out
        else:
            lists = _state.fast_single(K.n, q, qd, qdd)
            if lists is not None:
                if not use_friction:
                    return np.array(K.rnea(motor=motor).scalar(*lists))
                variant = smooth_kind if smooth else "exact"
                kernel = K.inverse_friction(motor, False, variant) if variant in FRICTION_VARIANTS else None
                if kernel is not None:
                    return np.array(kernel.scalar(*lists))
    motor = _motor_switch(model, motor_inertia)
    use_friction = bool(friction) and K.has_friction
    if use_friction:
        _friction_variant(smooth, smooth_kind)  # a bad smooth_kind is reported before anything runs
    batch, values, load = _validate(model, {"q": q, "qd": qd, "qdd": qdd}, wrench, wrench_frame)
    native = resolve(model, K, backend)
    need_reactions = use_friction and K.needs_reactions(model)
    has_load = load is not None
    args = values if load is None else [*values, load]

    if not breakdown:
        if not use_friction:
            return evaluate(K, native, ("rnea", True, True, True, motor, has_load, False), batch, args)
        return _with_friction(model, K, native, motor, has_load, batch, args, bool(smooth), smooth_kind)

    rigid = evaluate(K, native, ("rnea", True, True, True, motor, has_load, need_reactions), batch, args)
    tau_joint, force, moment = _split(rigid, model.dof, need_reactions)

    terms = None
    friction_torque = np.zeros_like(tau_joint)
    if use_friction:
        from ..friction import apply_friction

        terms = apply_friction(
            model, np.asarray(values[1]), tau_joint, force, moment, smooth=bool(smooth), smooth_kind=smooth_kind
        )
        friction_torque = np.asarray(terms.total, dtype=float)
    total = tau_joint + friction_torque

    q_only, qdd_arg = [values[0]], values[2]
    gravity = evaluate(K, native, ("rnea", False, False, True, False, False, False), batch, q_only)
    coriolis = evaluate(K, native, ("rnea", True, False, False, False, False, False), batch, [values[0], values[1]])
    inertial = evaluate(K, native, ("rnea", False, True, False, False, False, False), batch, [values[0], qdd_arg])
    motor_term = K.reflected_motor_inertia * np.asarray(qdd_arg, dtype=float) if motor else np.zeros_like(total)
    wrench_term = (
        evaluate(K, native, ("rnea", False, False, False, False, True, False), batch, [values[0], load])
        if has_load
        else np.zeros_like(total)
    )
    return InverseDynamicsBreakdown(
        total=total,
        inertial=inertial,
        coriolis_centrifugal=coriolis,
        gravity=gravity,
        friction=friction_torque,
        motor_inertia=motor_term,
        tool_wrench=wrench_term,
        friction_terms=terms,
    )
