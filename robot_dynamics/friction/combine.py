"""All friction terms of a model at once: :func:`apply_friction`, :func:`friction_torques`.

Order of the terms (Dhanaraj (1990) Figs. 3.1/3.10, Table 3.5): the frictionless joint torque ``tau_joint``
(rigid body + motor inertia + tool wrench term, "basic dynamic torque") plus the joint-side friction
(viscous/Coulomb/Stribeck ``joint``, with the constant ``offset`` of a drive behind a torque loop, motor
friction referred to the joint ``motor``, load-dependent ``bearing``) gives the torque at the joint =
transmission output ``tau_out`` (eqs. 3.6/3.7 with the sign carried by ``sgn(qd)``); the transmission
(Table 3.2) turns it into the input torque ``tau_in``; ``transmission = tau_in - tau_out``. ``total``
is the sum of the four, so the actuator torque referred to the joint is ``tau_joint + total``.

All terms are compensating torques (added to the frictionless torque); they are 0 at rest (but the
constant offset) in the discontinuous form (the simulator handles stiction) and use ``s(qd)`` of
:mod:`robot_dynamics.friction.smooth` in the smooth form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from robot_dynamics.errors import StateError
from robot_dynamics.friction.bearing import journal_bearing, linear_bearing, thrust_bearing
from robot_dynamics.friction.law import ScalarProgram, scalar_program
from robot_dynamics.friction.parameters import FrictionParameters, friction_parameters
from robot_dynamics.friction.smooth import asymmetric_level, check_smooth_kind, direction, model_kind
from robot_dynamics.friction.stribeck import stribeck_factor
from robot_dynamics.friction.transmission import transmission_friction
from robot_dynamics.model import FloatArray, RobotModel


@dataclass(frozen=True, eq=False)
class FrictionTerms:
    """Friction torques, each ``(..., n)``, compensating sign (add to the frictionless torque)."""

    joint: FloatArray  # viscous + Coulomb/Stribeck, joint side
    motor: FloatArray  # G^2 B qd + |G| Tc(sgn qd)
    bearing: FloatArray  # load-dependent joint friction, Dhanaraj (1990) Table 3.1
    transmission: FloatArray  # tau_in - tau_out, Dhanaraj (1990) Table 3.2
    total: FloatArray


@dataclass(frozen=True, eq=False)
class ThesisBreakdown:
    """The columns of Dhanaraj (1990) Table 3.5, each ``(..., n)``.

    ``joint_friction`` is everything between the frictionless torque and the transmission output
    (joint + motor + bearing friction).
    """

    basic_dynamic: FloatArray
    joint_friction: FloatArray
    total_at_joint: FloatArray
    transmission_friction: FloatArray
    total_input: FloatArray

    COLUMNS = (
        "basic dynamic torque",
        "joint frictional torque",
        "total torque at joint",
        "transmission frictional torque",
        "total input torque",
    )

    def format_table(self, joint_names: Sequence[str] | None = None, digits: int = 4) -> str:
        """A plain-text table laid out like Dhanaraj (1990) Table 3.5 (one state ``(n,)``)."""
        cols = [self.basic_dynamic, self.joint_friction, self.total_at_joint]
        cols += [self.transmission_friction, self.total_input]
        if cols[0].ndim != 1:
            raise StateError(f"format_table needs one state (n,), got shape {cols[0].shape}")
        names = list(joint_names) if joint_names is not None else [f"joint {i + 1}" for i in range(len(cols[0]))]
        heads = ("basic dynamic", "joint friction", "total at joint", "transmission", "total input")
        width = max(15, digits + 9)
        label = max(10, *(len(name) for name in names))
        lines = [" " * label + "".join(h.rjust(width) for h in heads)]
        for i, name in enumerate(names):
            lines.append(name.ljust(label) + "".join(f"{c[i]:.{digits}f}".rjust(width) for c in cols))
        return "\n".join(lines)


def thesis_breakdown(tau_joint: ArrayLike, terms: FrictionTerms) -> ThesisBreakdown:
    """Dhanaraj (1990) Table 3.5 columns from the frictionless torque and the friction terms."""
    basic = np.asarray(tau_joint, dtype=float)
    joint = terms.joint + terms.motor + terms.bearing
    at_joint = basic + joint
    return ThesisBreakdown(basic, joint, at_joint, terms.transmission, at_joint + terms.transmission)


def needs_reactions(model: RobotModel) -> bool:
    """Whether :func:`apply_friction` needs the joint reactions (the model has bearing friction)."""
    return friction_parameters(model).has_bearing


def _check_state(name: str, value: ArrayLike, n: int, trailing: tuple[int, ...] = ()) -> FloatArray:
    arr = np.asarray(value, dtype=float)
    want = (n, *trailing)
    if arr.ndim < len(want) or arr.shape[arr.ndim - len(want) :] != want:
        shape = "(..., " + ", ".join(str(d) for d in want) + ")"
        raise StateError(f"{name}: expected shape {shape} for a {n}-joint model, got {arr.shape}")
    return arr


def _reactions(
    model: RobotModel, p: FrictionParameters, v: FloatArray, force: ArrayLike | None, moment: ArrayLike | None
) -> tuple[FloatArray, FloatArray]:
    if force is None or moment is None:
        names = [model.joints[i].name for i in (*p.journal, *p.linear, *p.thrust)]
        raise StateError(
            f"joints {names} have bearing friction: pass force and moment, the frictionless joint "
            "reactions (..., n, 3) from rnea_with_reactions"
        )
    f = _check_state("force", force, p.n, (3,))
    m = _check_state("moment", moment, p.n, (3,))
    if f.shape[:-1] != v.shape or m.shape != f.shape:
        raise StateError(f"force/moment: shapes {f.shape}/{m.shape} do not match qd {v.shape} (+ (3,))")
    return f, m


def _joint_side(p: FrictionParameters, qd: FloatArray, s: FloatArray | None) -> FloatArray:
    joint = qd * p.viscous if p.has_viscous else np.zeros_like(qd)
    if p.has_offset:
        joint = joint + p.offset
    if p.has_coulomb or p.has_stribeck:
        assert s is not None
        if p.has_stribeck:
            e = stribeck_factor(qd, p.stribeck_velocity)  # Schilling 6-3-3
            pos = p.tc_pos + (p.ts_pos - p.tc_pos) * e
            neg = p.tc_neg + (p.ts_neg - p.tc_neg) * e
            joint = joint + asymmetric_level(s, pos, neg)
        else:
            joint = joint + asymmetric_level(s, p.tc_pos, p.tc_neg)
    return joint


def _motor_side(p: FrictionParameters, qd: FloatArray, s: FloatArray | None) -> FloatArray:
    motor = qd * p.motor_viscous if p.has_motor_viscous else np.zeros_like(qd)
    if p.has_motor_coulomb:
        assert s is not None
        motor = motor + asymmetric_level(s, p.motor_tc_pos, p.motor_tc_neg)
    return motor


def bearing_magnitude(p: FrictionParameters, force: FloatArray, moment: FloatArray) -> FloatArray:
    """``|tau_f|`` of every bearing joint (0 elsewhere), ``(..., n)``, from reactions ``(..., n, 3)``."""
    mag = np.zeros(force.shape[:-1])
    for kind, joints in (("journal", p.journal), ("linear", p.linear), ("thrust", p.thrust)):
        if len(joints) == 0:
            continue
        # joints whose axis is F_i's z together; the others turned into their axis frame (z = axis)
        aligned = np.array([i for i in joints if p.bearing_axis_is_z[i]], dtype=np.intp)
        groups: list[tuple[NDArray[np.intp], FloatArray, FloatArray]] = []
        if len(aligned):
            # consecutive joints (the usual case): a view instead of a fancy-indexed copy
            sel: slice | NDArray[np.intp] = aligned
            if np.all(np.diff(aligned) == 1):
                sel = slice(int(aligned[0]), int(aligned[-1]) + 1)
            groups.append((aligned, force[..., sel, :], moment[..., sel, :]))
        for i in joints:
            if not p.bearing_axis_is_z[i]:
                rot = p.bearing_rotation[i]
                idx = np.array([i], dtype=np.intp)
                groups.append((idx, force[..., idx, :] @ rot.T, moment[..., idx, :] @ rot.T))
        for idx, f, n in groups:
            mu = p.bearing_mu[idx]
            if kind == "journal":
                mag[..., idx] = journal_bearing(f, n, mu, p.bearing_radius[idx], p.bearing_spacing[idx])
            elif kind == "linear":
                mag[..., idx] = linear_bearing(f, n, mu, p.bearing_spacing[idx])
            else:
                mag[..., idx] = thrust_bearing(f, mu, p.bearing_radius[idx])
    return mag


def apply_friction(
    model: RobotModel,
    qd: ArrayLike,
    tau_joint: ArrayLike,
    force: ArrayLike | None = None,
    moment: ArrayLike | None = None,
    *,
    smooth: bool = False,
    smooth_kind: str | None = None,
) -> FrictionTerms:
    """All friction terms for joint velocities ``qd`` and frictionless joint torques ``tau_joint``.

    ``force``, ``moment`` ``(..., n, 3)``: the frictionless reactions of
    ``rnea_with_reactions`` (link i-1 on link i at the origin of ``F_i``, ``F_i`` coordinates),
    needed only when a joint has bearing friction (:func:`needs_reactions`). ``smooth=True`` uses
    the chatter-free direction ``s(qd)`` (``smooth_kind`` "tanh" or "linear", by default the model's;
    width ``smoothing_velocity`` of each joint).
    """
    p = friction_parameters(model)
    smooth_kind = model_kind(model, smooth_kind)
    v = _check_state("qd", qd, p.n)
    tau = _check_state("tau_joint", tau_joint, p.n)
    if tau.shape != v.shape:
        raise StateError(f"tau_joint: shape {tau.shape} does not match qd {v.shape}")
    if smooth:
        check_smooth_kind(smooth_kind)
    need_s = p.has_coulomb or p.has_stribeck or p.has_motor_coulomb or p.has_bearing or p.has_transmission
    s = direction(v, p.smoothing_velocity, smooth=smooth, kind=smooth_kind) if need_s else None
    joint = _joint_side(p, v, s)
    motor = _motor_side(p, v, s)
    if p.has_bearing:
        f, m = _reactions(model, p, v, force, moment)
        assert s is not None
        bearing = s * bearing_magnitude(p, f, m)
    else:
        bearing = np.zeros_like(v)
    transmission = np.zeros_like(v)
    if p.has_transmission:
        assert s is not None
        tau_out = tau + joint + motor + bearing
        for t in p.transmissions:
            i = t.index
            transmission[..., i] = transmission_friction(
                tau_out[..., i], v[..., i], s[..., i], t.curve, t.breakaway, t.max_torque
            )
    total = joint + motor + bearing + transmission
    return FrictionTerms(joint, motor, bearing, transmission, total)


def friction_torques(
    model: RobotModel, qd: ArrayLike, *, smooth: bool = False, smooth_kind: str | None = None
) -> FloatArray:
    """The load-independent friction (joint + motor) for ``qd`` ``(..., n)``; compensating sign.

    For the Robotics Toolbox Puma560 this is ``-robot.friction(qd)``.
    """
    p = friction_parameters(model)
    smooth_kind = model_kind(model, smooth_kind)
    v = _check_state("qd", qd, p.n)
    if smooth:
        check_smooth_kind(smooth_kind)
    need_s = p.has_coulomb or p.has_stribeck or p.has_motor_coulomb
    s = direction(v, p.smoothing_velocity, smooth=smooth, kind=smooth_kind) if need_s else None
    return _joint_side(p, v, s) + _motor_side(p, v, s)


def scalar_friction(
    model: RobotModel, *, smooth: bool = False, smooth_kind: str | None = None, include_tau: bool = False
) -> ScalarProgram:
    """The model's single-state friction ``program(qd, tau, force, moment) -> list[float]``: the
    friction program (:func:`robot_dynamics.friction.law.friction_program`) on Python floats.

    Same result as ``apply_friction(...).total`` for one state, as plain Python floats: ``qd`` and
    ``tau`` (the frictionless joint torque) are ``n`` floats, ``force``/``moment`` the reactions
    flattened to ``3 n`` floats (``None`` without bearing friction). ``include_tau=True`` returns
    ``tau + friction`` instead. For single-state callers that must not pay NumPy's per-call overhead
    (the engine's own single-state path runs the same program traced and compiled, faster still).
    """
    p = friction_parameters(model)
    smooth_kind = model_kind(model, smooth_kind)
    if smooth:
        check_smooth_kind(smooth_kind)
    key: tuple[bool, str] | tuple[bool, str, bool] = (bool(smooth), smooth_kind if smooth else "")
    if include_tau:
        key = (*key, True)
    program = p.programs.get(key)
    if program is None:
        program = scalar_program(p, bool(smooth), smooth_kind, include_tau)
        p.programs[key] = program
    return program


def friction_total(
    model: RobotModel,
    qd: ArrayLike,
    tau_joint: ArrayLike,
    force: ArrayLike | None = None,
    moment: ArrayLike | None = None,
    *,
    smooth: bool = False,
    smooth_kind: str | None = None,
) -> FloatArray:
    """``apply_friction(...).total`` alone.

    One state ``(n,)`` runs the friction program on Python floats (:func:`scalar_friction`, no NumPy
    per-call overhead), a batch the NumPy reference (:func:`apply_friction`).
    """
    p = friction_parameters(model)
    smooth_kind = model_kind(model, smooth_kind)
    if (  # one state of float arrays without reactions: straight to the program on floats
        not p.has_bearing
        and type(qd) is np.ndarray
        and type(tau_joint) is np.ndarray
        and qd.shape == tau_joint.shape == (p.n,)
    ):
        program = p.programs.get((True, smooth_kind) if smooth else (False, ""))
        if program is None:
            program = scalar_friction(model, smooth=smooth, smooth_kind=smooth_kind)
        return np.array(program(qd.tolist(), tau_joint.tolist(), None, None))
    v = _check_state("qd", qd, p.n)
    tau = _check_state("tau_joint", tau_joint, p.n)
    if tau.shape != v.shape:
        raise StateError(f"tau_joint: shape {tau.shape} does not match qd {v.shape}")
    if v.ndim == 1:
        f = m = None
        if p.has_bearing:
            f, m = _reactions(model, p, v, force, moment)
        program = scalar_friction(model, smooth=smooth, smooth_kind=smooth_kind)
        flat_f = None if f is None else f.ravel().tolist()
        flat_m = None if m is None else m.ravel().tolist()
        return np.array(program(v.tolist(), tau.tolist(), flat_f, flat_m))
    return apply_friction(model, v, tau, force, moment, smooth=smooth, smooth_kind=smooth_kind).total
