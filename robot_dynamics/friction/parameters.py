"""Per-model friction parameters, validated once and stacked for vectorised evaluation.

:func:`friction_parameters` compiles a :class:`~robot_dynamics.model.RobotModel`'s per-joint
``JointFriction`` / ``Motor`` data into arrays (cached per model object, models are immutable) and
raises :class:`~robot_dynamics.errors.ModelError` naming the joint and field of a bad value.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.errors import ModelError
from robot_dynamics.friction.bearing import axis_frame
from robot_dynamics.friction.transmission import EfficiencyCurve
from robot_dynamics.model import FloatArray, RobotModel

IntArray = NDArray[np.intp]


@dataclass(frozen=True, eq=False)
class TransmissionParameters:
    index: int
    curve: EfficiencyCurve
    breakaway: float
    max_torque: float


@dataclass(frozen=True, eq=False)
class FrictionParameters:
    n: int
    # joint side, (n,)
    viscous: FloatArray
    tc_pos: FloatArray
    tc_neg: FloatArray
    ts_pos: FloatArray  # static level (= Coulomb where no Stribeck/static term)
    ts_neg: FloatArray
    stribeck_velocity: FloatArray
    smoothing_velocity: FloatArray
    offset: FloatArray  # a constant torque (a torque loop's sensor offset, JointFriction.offset)
    # motor side referred to the joint, (n,)
    motor_viscous: FloatArray  # G^2 B
    motor_tc_pos: FloatArray  # |G| Tc+
    motor_tc_neg: FloatArray  # |G| Tc-
    # bearings (index arrays into the joints, per kind)
    journal: IntArray
    linear: IntArray
    thrust: IntArray
    bearing_rotation: FloatArray  # (n, 3, 3) axis frames (rows e_x, e_y, axis)
    bearing_mu: FloatArray
    bearing_radius: FloatArray
    bearing_spacing: FloatArray
    transmissions: tuple[TransmissionParameters, ...]
    # which groups are present (skip the rest: friction must stay cheap)
    has_viscous: bool
    has_offset: bool
    has_coulomb: bool
    has_stribeck: bool
    has_motor_viscous: bool
    has_motor_coulomb: bool
    # single-state programs, by (smooth, kind[, include_tau]) (see law.scalar_program)
    programs: dict[tuple[Any, ...], Callable[..., Any]] = field(default_factory=dict, repr=False)

    # The combined joint + motor coefficients of the law's linear part, b = Fv qd + Fc s + Fa |s|
    # (s = sign(qd) or its smooth form): the parameters identification estimates and writes back.
    @cached_property
    def total_viscous(self) -> FloatArray:
        """``Fv``: joint viscous + motor viscous referred to the joint (``G^2 B``)."""
        return self.viscous + self.motor_viscous

    @cached_property
    def level_odd(self) -> FloatArray:
        """``Fc = (L+ - L-)/2`` of the combined Coulomb levels (``L-`` is stored negative)."""
        return 0.5 * (self.tc_pos + self.motor_tc_pos - self.tc_neg - self.motor_tc_neg)

    @cached_property
    def level_even(self) -> FloatArray:
        """``Fa = (L+ + L-)/2``: the asymmetry of the combined Coulomb levels."""
        return 0.5 * (self.tc_pos + self.motor_tc_pos + self.tc_neg + self.motor_tc_neg)

    @cached_property
    def bearing_axis_is_z(self) -> list[bool]:
        """Per joint: the bearing axis frame is F_i itself (no rotation needed)."""
        return [bool(np.array_equal(r, np.eye(3))) for r in self.bearing_rotation]

    @property
    def has_bearing(self) -> bool:
        return bool(len(self.journal) or len(self.linear) or len(self.thrust))

    @property
    def has_transmission(self) -> bool:
        return bool(self.transmissions)

    @property
    def sticky(self) -> NDArray[np.bool_]:
        """Joints whose friction is discontinuous at qd = 0 (they can stick), ``(n,)``."""
        mask = (
            (self.tc_pos != 0.0)
            | (self.tc_neg != 0.0)
            | (self.ts_pos != 0.0)
            | (self.ts_neg != 0.0)
            | (self.motor_tc_pos != 0.0)
            | (self.motor_tc_neg != 0.0)
        )
        mask[self.journal] = True
        mask[self.linear] = True
        mask[self.thrust] = True
        for t in self.transmissions:
            mask[t.index] = True
        return mask


_CACHE: weakref.WeakKeyDictionary[RobotModel, FrictionParameters] = weakref.WeakKeyDictionary()


def friction_parameters(model: RobotModel) -> FrictionParameters:
    """The compiled, validated friction parameters of ``model`` (cached)."""
    try:
        return _CACHE[model]
    except KeyError:
        pass
    params = _compile(model)
    _CACHE[model] = params
    return params


def _compile(model: RobotModel) -> FrictionParameters:
    src = model.source or model.name
    n = model.dof
    keys = ("bv", "off", "tcp", "tcn", "tsp", "tsn", "eps", "vs", "mb", "mtp", "mtn", "mu", "r", "d")
    arr = {k: np.zeros(n) for k in keys}
    rotation = np.tile(np.eye(3), (n, 1, 1))
    kinds: dict[str, list[int]] = {"journal": [], "linear": [], "thrust": []}
    transmissions: list[TransmissionParameters] = []
    has_stribeck = False

    def fail(i: int, what: str, problem: str) -> ModelError:
        return ModelError(src, f"joints[{i}].{what}", f"joint {model.joints[i].name!r}: {problem}")

    def finite(i: int, what: str, value: float, lower: float | None = None, strict: bool = False) -> float:
        v = float(value)
        bad = not math.isfinite(v) or (lower is not None and (v <= lower if strict else v < lower))
        if bad:
            bound = "" if lower is None else f" {'>' if strict else '>='} {lower:g}"
            raise fail(i, what, f"must be a finite number{bound}, got {value!r}")
        return v

    def pair(i: int, what: str, value: tuple[float, float]) -> tuple[float, float]:
        try:
            pos, neg = (float(x) for x in value)
        except (TypeError, ValueError) as exc:
            raise fail(i, what, f"expected [positive, negative] levels, got {value!r}") from exc
        if not (math.isfinite(pos) and math.isfinite(neg)) or pos < 0.0 or neg > 0.0:
            raise fail(i, what, f"expected [T+, T-] with T+ >= 0 >= T-, got {list(value)!r}")
        return pos, neg

    for i, joint in enumerate(model.joints):
        fr = joint.friction
        arr["bv"][i] = finite(i, "friction.viscous", fr.viscous, 0.0)
        arr["off"][i] = finite(i, "friction.offset", fr.offset)
        arr["tcp"][i], arr["tcn"][i] = pair(i, "friction.coulomb", fr.coulomb)
        arr["eps"][i] = finite(i, "friction.stribeck_velocity", fr.stribeck_velocity, 0.0)
        if fr.static is not None:
            arr["tsp"][i], arr["tsn"][i] = pair(i, "friction.static", fr.static)
            # the Stribeck term acts while moving only with eps > 0 (eps = 0: static level = break-away only)
            has_stribeck = has_stribeck or (fr.static != fr.coulomb and arr["eps"][i] > 0.0)
        else:
            arr["tsp"][i], arr["tsn"][i] = arr["tcp"][i], arr["tcn"][i]
        arr["vs"][i] = finite(i, "friction.smoothing_velocity", fr.smoothing_velocity, 0.0, strict=True)
        if joint.motor is not None:
            m = joint.motor
            g = finite(i, "motor.G", m.gear_ratio)
            arr["mb"][i] = g * g * finite(i, "motor.B", m.viscous, 0.0)
            tp, tn = pair(i, "motor.Tc", m.coulomb)
            arr["mtp"][i], arr["mtn"][i] = abs(g) * tp, abs(g) * tn
        if fr.bearing is not None:
            b = fr.bearing
            if b.kind not in kinds:
                raise fail(i, "friction.bearing.kind", f"must be one of {sorted(kinds)}, got {b.kind!r}")
            if b.kind == "linear" and not joint.is_prismatic:
                raise fail(
                    i, "friction.bearing.kind", "a linear bearing needs a prismatic joint (use journal or thrust)"
                )
            if b.kind != "linear" and joint.is_prismatic:
                raise fail(i, "friction.bearing.kind", f"a {b.kind} bearing needs a revolute joint (use linear)")
            arr["mu"][i] = finite(i, "friction.bearing.mu", b.mu, 0.0)
            if b.kind != "linear":
                arr["r"][i] = finite(i, "friction.bearing.radius", b.radius, 0.0, strict=True)
            if b.kind != "thrust":
                arr["d"][i] = finite(i, "friction.bearing.spacing", b.spacing, 0.0, strict=True)
            kinds[b.kind].append(i)
            rotation[i] = axis_frame(joint.axis)
        if fr.transmission is not None:
            t = fr.transmission
            breakaway = finite(i, "friction.transmission.breakaway", t.breakaway, 0.0)
            max_torque = finite(i, "friction.transmission.max_torque", t.max_torque, 0.0, strict=True)
            try:
                curve = EfficiencyCurve.from_points(t.efficiency)
            except ValueError as exc:
                raise fail(i, "friction.transmission.efficiency", str(exc).removeprefix("efficiency: ")) from None
            transmissions.append(TransmissionParameters(i, curve, breakaway, max_torque))

    for v in arr.values():
        v.setflags(write=False)
    rotation.setflags(write=False)
    return FrictionParameters(
        n=n,
        viscous=arr["bv"],
        tc_pos=arr["tcp"],
        tc_neg=arr["tcn"],
        ts_pos=arr["tsp"],
        ts_neg=arr["tsn"],
        stribeck_velocity=arr["eps"],
        smoothing_velocity=arr["vs"],
        offset=arr["off"],
        motor_viscous=arr["mb"],
        motor_tc_pos=arr["mtp"],
        motor_tc_neg=arr["mtn"],
        journal=np.array(kinds["journal"], dtype=np.intp),
        linear=np.array(kinds["linear"], dtype=np.intp),
        thrust=np.array(kinds["thrust"], dtype=np.intp),
        bearing_rotation=rotation,
        bearing_mu=arr["mu"],
        bearing_radius=arr["r"],
        bearing_spacing=arr["d"],
        transmissions=tuple(transmissions),
        has_viscous=bool(np.any(arr["bv"])),
        has_offset=bool(np.any(arr["off"])),
        has_coulomb=bool(np.any(arr["tcp"]) or np.any(arr["tcn"])),
        has_stribeck=has_stribeck,
        has_motor_viscous=bool(np.any(arr["mb"])),
        has_motor_coulomb=bool(np.any(arr["mtp"]) or np.any(arr["mtn"])),
    )
