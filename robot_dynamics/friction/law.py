"""The friction laws written once, over a generic scalar: one program for floats, the tracer and C.

:func:`friction_program` computes a model's total friction (or ``tau`` plus it) joint by joint, the
way :mod:`robot_dynamics.dynamics.rnea` computes Newton–Euler: over "scalars" — anything with
``+ - * /`` — plus three operations taken from an ``ops`` object (:class:`ScalarOps`):

* ``ops.call(name, *args, literals=())`` for ``tanh``, ``exp``, ``abs``, ``hypot`` and ``interp``
  (clamped linear interpolation in a table passed as ``literals = (xs, es)``);
* ``ops.compare(a, op, b)`` for ``op`` in ``> < >= <=``;
* ``ops.select(condition, a, b)`` for ``a if condition else b``.

Run with :data:`FLOAT_OPS` on Python floats it is the single-state friction (:func:`scalar_program`);
run with the engine's tracer (``robot_dynamics.dynamics._trace.Tape`` has these three methods) on
traced values it becomes part of the straight-line Newton–Euler program, which the engine compiles to
Python (one state, NumPy batches) and to C. The model's constants are folded in as Python floats,
terms whose coefficient is 0 are left out.

The laws (compensating torques, added to the frictionless joint torque ``tau``), per joint ``i``
with velocity ``v``:

* viscous ``(b_v + G^2 B) v`` and the Coulomb levels ``L+ = Tc+ + |G| Tc+_m`` (``v > 0``),
  ``L- = Tc- + |G| Tc-_m`` (``v < 0``), joint plus motor referred to the joint (Schilling eq. 6-3-3
  first and second terms; Robotics Toolbox motor friction ``G^2 B qd + |G| Tc``);
* a constant ``offset`` (``JointFriction.offset``: not friction, the torque a drive behind a torque
  loop applies for a zero command; in the joint-side sum, so a transmission sees it like the rest);
* the Stribeck excess ``(Ts± - Tc±) e``, ``e = exp(-|v| / eps)`` (Schilling eq. 6-3-3 third term);
* with a direction ``s``: ``sgn(v)`` (exact), ``tanh(v / v_s)`` or ``clip(v / v_s, -1, 1)``
  (smooth, :mod:`.smooth`); a level pair enters as ``s L+`` (``s > 0``) / ``-s L-`` (``s < 0``);
* load-dependent bearing friction ``s |tau_f|`` from the joint reactions in the joint's axis frame
  (Dhanaraj (1990) Table 3.1: journal, linear and thrust bearings, :mod:`.bearing`);
* transmission friction ``s (T_b + |tau_o| (1/eta - 1))`` when the load drives the motion
  (``tau_o v > 0``), ``s (T_b + |tau_o| (1 - eta))`` otherwise, ``eta`` interpolated in the
  efficiency curve at ``|tau_o| / T_max`` (Dhanaraj (1990) Table 3.2, :mod:`.transmission`),
  ``tau_o = tau + joint, motor and bearing friction``.

Direction switches are selects (cheap on arrays and branch-free in C): the exact Coulomb term is
``(L+ if v > 0 else 0) + (L- if v < 0 else 0)`` (one of the two is 0), the smooth one
``s (L+ if s > 0 else -L-)``. The NumPy reference of the same laws, term by term for the
Dhanaraj (1990) Table 3.5 breakdown, is :func:`.combine.apply_friction`; ``test_friction_fast.py``
checks one against the other at many random states.
"""

from __future__ import annotations

import math
import operator
import weakref
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from robot_dynamics.friction.parameters import FrictionParameters

Scalar = Any
"""A float, or a traced value of the engine's tracer (anything with ``+ - * /``)."""


class ScalarOps(Protocol):
    """The operations besides arithmetic the friction program uses (see the module docstring)."""

    def call(self, function: str, *args: Scalar, literals: tuple[Any, ...] = ()) -> Scalar: ...

    def compare(self, a: Scalar, op: str, b: Scalar) -> Any: ...

    def select(self, condition: Any, a: Scalar, b: Scalar) -> Scalar: ...


def interp(u: float, xs: tuple[float, ...], es: tuple[float, ...]) -> float:
    """Linear interpolation clamped at the ends (``numpy.interp`` for one point)."""
    if u <= xs[0]:
        return es[0]
    if u >= xs[-1]:
        return es[-1]
    j = bisect_right(xs, u)
    x0, e0 = xs[j - 1], es[j - 1]
    return e0 + (es[j] - e0) * (u - x0) / (xs[j] - x0)


FLOAT_FUNCTIONS: dict[str, Callable[..., float]] = {
    "tanh": math.tanh,
    "exp": math.exp,
    "abs": abs,
    "hypot": math.hypot,
    "interp": interp,
}
"""The functions of the friction program on Python floats."""

_COMPARE: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt,
    "<": operator.lt,
    ">=": operator.ge,
    "<=": operator.le,
}


class FloatOps:
    """:class:`ScalarOps` on Python floats (``math`` functions)."""

    def call(self, function: str, *args: float, literals: tuple[Any, ...] = ()) -> float:
        return float(FLOAT_FUNCTIONS[function](*args, *literals))

    def compare(self, a: float, op: str, b: float) -> bool:
        return _COMPARE[op](a, b)

    def select(self, condition: bool, a: float, b: float) -> float:
        return a if condition else b


FLOAT_OPS = FloatOps()


def _scaled(coefficient: float, x: Scalar) -> Scalar | None:
    """``coefficient * x`` with the trivial cases folded (``None`` for a zero coefficient)."""
    if coefficient == 0.0:
        return None
    return x if coefficient == 1.0 else coefficient * x


def _sum(terms: Sequence[Scalar | None]) -> Scalar:
    """The non-``None`` terms added left to right (0.0 if there are none)."""
    present = [t for t in terms if t is not None]
    if not present:
        return 0.0
    total = present[0]
    for t in present[1:]:
        total = total + t
    return total


def _direction(ops: ScalarOps, v: Scalar, inv_vs: float, smooth: bool, kind: str) -> Scalar:
    """``s(v)``: ``sgn(v)``, ``tanh(v / v_s)`` or ``clip(v / v_s, -1, 1)`` (:mod:`.smooth`)."""
    if not smooth:
        return ops.select(ops.compare(v, ">", 0.0), 1.0, 0.0) - ops.select(ops.compare(v, "<", 0.0), 1.0, 0.0)
    if kind == "tanh":
        return ops.call("tanh", v * inv_vs)
    x = v * inv_vs
    return ops.select(ops.compare(x, ">=", 1.0), 1.0, ops.select(ops.compare(x, "<=", -1.0), -1.0, x))


@dataclass(frozen=True)
class JointConstants:
    """The constants of one joint's friction laws as Python floats (folded into the program)."""

    viscous: float  # b_v + G^2 B (Schilling 6-3-3 first term + motor viscous)
    offset: float  # a constant torque (JointFriction.offset)
    level_pos: float  # L+ = Tc+ + |G| Tc+_m
    level_neg: float  # L- = Tc- + |G| Tc-_m
    excess_pos: float  # Ts+ - Tc+ (Schilling 6-3-3 third term)
    excess_neg: float  # Ts- - Tc-
    inv_eps: float  # 1 / eps (0: no Stribeck term)
    inv_vs: float  # 1 / v_s, the smoothing velocity
    bearing: str | None  # "journal", "linear", "thrust" or None
    rotation: tuple[tuple[float, float, float], ...]  # the bearing axis frame (rows e_x, e_y, axis)
    bearing_coefficient: float  # mu r / d (journal), mu / d (linear), mu r (thrust)
    half_spacing: float  # d / 2
    tables: tuple[tuple[float, ...], tuple[float, ...]] | None  # efficiency curve (u, eta); None: none
    inv_max_torque: float
    breakaway: float

    @property
    def has_stribeck(self) -> bool:
        return self.inv_eps > 0.0 and (self.excess_pos != 0.0 or self.excess_neg != 0.0)


def _constants(p: FrictionParameters, i: int) -> JointConstants:
    transmission = next((t for t in p.transmissions if t.index == i), None)
    kind = "journal" if i in p.journal else "linear" if i in p.linear else "thrust" if i in p.thrust else None
    mu, radius, spacing = float(p.bearing_mu[i]), float(p.bearing_radius[i]), float(p.bearing_spacing[i])
    coefficient = 0.0
    if kind == "journal":
        coefficient = mu * radius / spacing
    elif kind == "linear":
        coefficient = mu / spacing
    elif kind == "thrust":
        coefficient = mu * radius
    eps = float(p.stribeck_velocity[i])
    return JointConstants(
        viscous=float(p.viscous[i] + p.motor_viscous[i]),
        offset=float(p.offset[i]),
        level_pos=float(p.tc_pos[i] + p.motor_tc_pos[i]),
        level_neg=float(p.tc_neg[i] + p.motor_tc_neg[i]),
        excess_pos=float(p.ts_pos[i] - p.tc_pos[i]),
        excess_neg=float(p.ts_neg[i] - p.tc_neg[i]),
        inv_eps=1.0 / eps if eps > 0.0 else 0.0,
        inv_vs=1.0 / float(p.smoothing_velocity[i]),
        bearing=kind,
        rotation=tuple((float(r[0]), float(r[1]), float(r[2])) for r in p.bearing_rotation[i]),
        bearing_coefficient=coefficient,
        half_spacing=0.5 * spacing,
        tables=None
        if transmission is None
        else (tuple(float(x) for x in transmission.curve.u), tuple(float(e) for e in transmission.curve.eta)),
        inv_max_torque=1.0 / transmission.max_torque if transmission is not None else 0.0,
        breakaway=transmission.breakaway if transmission is not None else 0.0,
    )


_CONSTANTS: weakref.WeakKeyDictionary[FrictionParameters, tuple[JointConstants, ...]] = weakref.WeakKeyDictionary()


def joint_constants(p: FrictionParameters) -> tuple[JointConstants, ...]:
    """Every joint's :class:`JointConstants` (computed once per parameter set)."""
    found = _CONSTANTS.get(p)
    if found is None:
        found = _CONSTANTS[p] = tuple(_constants(p, i) for i in range(p.n))
    return found


def _bearing(c: JointConstants, i: int, force: Sequence[Scalar], moment: Sequence[Scalar], ops: ScalarOps) -> Scalar:
    """``X`` with ``|tau_f| = C X`` (``C = c.bearing_coefficient``) for the bearing of joint ``i``,
    Dhanaraj (1990) Table 3.1, from the reactions in the joint's axis frame."""

    def component(vector: Sequence[Scalar], r: int) -> Scalar:
        return _sum([_scaled(c.rotation[r][k], vector[3 * i + k]) for k in range(3)])

    if c.bearing == "thrust":  # mu r |f_z|
        return ops.call("abs", component(force, 2))
    fx, fy = component(force, 0), component(force, 1)
    mx, my = component(moment, 0), component(moment, 1)
    h = c.half_spacing  # the two bearings at +-d/2 along the axis share the load
    if c.bearing == "journal":  # mu r / d (|F_a| + |F_b|): radial loads of the two bearings
        return ops.call("hypot", h * fx + my, h * fy - mx) + ops.call("hypot", h * fx - my, h * fy + mx)
    sides = [ops.call("abs", h * fx + my), ops.call("abs", h * fy - mx)]  # linear: per rail component
    sides += [ops.call("abs", h * fx - my), ops.call("abs", h * fy + mx)]
    return _sum(sides)


def _joint(
    c: JointConstants,
    i: int,
    v: Scalar,
    tau: Scalar,
    force: Sequence[Scalar] | None,
    moment: Sequence[Scalar] | None,
    ops: ScalarOps,
    smooth: bool,
    kind: str,
) -> Scalar:
    """The total friction of joint ``i`` (see the module docstring for the laws)."""
    s: Scalar = 0.0
    if smooth or c.bearing is not None or c.tables is not None:
        s = _direction(ops, v, c.inv_vs, smooth, kind)
    parts = [_scaled(c.viscous, v)]
    stribeck = c.has_stribeck
    if c.level_pos != 0.0 or c.level_neg != 0.0 or stribeck:
        if stribeck:  # Schilling 6-3-3 third term, e = exp(-|v| / eps)
            e = ops.call("exp", -ops.call("abs", v) * c.inv_eps)
            pos, neg = c.level_pos + c.excess_pos * e, c.level_neg + c.excess_neg * e
        else:
            pos, neg = c.level_pos, c.level_neg
        if smooth:  # s L+ for s > 0, -s L- for s < 0 (smooth.asymmetric_level)
            parts.append(s * ops.select(ops.compare(s, ">", 0.0), pos, -neg))
        else:
            parts.append(
                ops.select(ops.compare(v, ">", 0.0), pos, 0.0) + ops.select(ops.compare(v, "<", 0.0), neg, 0.0)
            )
    if c.offset != 0.0:
        parts.append(c.offset)
    b = _sum(parts)
    if c.bearing is not None:
        if force is None or moment is None:
            raise ValueError(f"joint {i} has bearing friction: the program needs the joint reactions")
        b = b + s * c.bearing_coefficient * _bearing(c, i, force, moment, ops)
    if c.tables is not None:  # Dhanaraj (1990) Table 3.2
        out = tau + b  # the transmission output torque
        magnitude = ops.call("abs", out)
        eta = ops.call("interp", magnitude * c.inv_max_torque, literals=c.tables)
        driving = ops.compare(out * v, ">", 0.0)
        b = b + s * (c.breakaway + magnitude * ops.select(driving, 1.0 / eta - 1.0, 1.0 - eta))
    return b


def friction_program(
    p: FrictionParameters,
    qd: Sequence[Scalar],
    tau: Sequence[Scalar],
    force: Sequence[Scalar] | None,
    moment: Sequence[Scalar] | None,
    ops: ScalarOps,
    *,
    smooth: bool,
    kind: str = "tanh",
    include_tau: bool = False,
) -> list[Scalar]:
    """The total friction of every joint (``tau + friction`` with ``include_tau``), over ``ops``' scalars.

    ``qd``, ``tau`` (the frictionless joint torque): ``n`` scalars; ``force``, ``moment``: the
    frictionless joint reactions flattened to ``3 n`` scalars (``None`` without bearing friction).
    """
    constants = joint_constants(p)
    totals = [_joint(c, i, qd[i], tau[i], force, moment, ops, smooth, kind) for i, c in enumerate(constants)]
    if include_tau:
        return [t + b for t, b in zip(tau, totals, strict=True)]
    return totals


ScalarProgram = Callable[
    [Sequence[float], Sequence[float], Sequence[float] | None, Sequence[float] | None], list[float]
]


def scalar_program(p: FrictionParameters, smooth: bool, kind: str, include_tau: bool = False) -> ScalarProgram:
    """:func:`friction_program` on Python floats for one state: ``program(qd, tau, force, moment)``."""

    def program(
        qd: Sequence[float], tau: Sequence[float], force: Sequence[float] | None, moment: Sequence[float] | None
    ) -> list[float]:
        return friction_program(p, qd, tau, force, moment, FLOAT_OPS, smooth=smooth, kind=kind, include_tau=include_tau)

    return program
