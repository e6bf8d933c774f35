"""The identification parameter vector theta: which parameters, their order, names and values.

The joint torque is linear in (Khalil & Dombre, "Modeling, Identification and Control of Robots",
2002, sections 9.2 and 12.3; Atkeson, An & Hollerbach 1986):

* the 10 standard inertial parameters of each link ``i`` in its joint frame ``F_i`` (see
  :mod:`robot_dynamics.model`): ``m, mx, my, mz`` (mass and first moment ``m c``) and the inertia
  tensor about the origin of ``F_i`` (not the centre of mass), ``Ixx, Ixy, Ixz, Iyy, Iyz, Izz``,
  ``I_O = I_c + m (|c|^2 E - c c^T)`` (parallel axes). Products of inertia are tensor entries
  (``Ixy = -integral(x y dm)``, the URDF convention of :class:`~robot_dynamics.model.Inertial`);
* per joint: the armature ``Ia = G^2 Jm`` (reflected rotor inertia, ``Ia qdd``), viscous ``Fv``
  (``Fv qd``), Coulomb ``Fc`` (``Fc s``), asymmetric Coulomb ``Fa`` (``Fa |s|``) and a constant
  offset ``Fo``, with ``s = tanh(qd / v_s)`` or ``sgn(qd)``. The offset is the model's
  ``JointFriction.offset`` (0 unless deployed): a bias of the torque reading (``OffsetUse``
  "reading", not deployed) or a torque the drive applies behind a torque loop ("torque",
  :func:`deploy_offsets`); docs/identification.md, "Offsets". These are the engine's combined
  joint + motor friction levels (:mod:`robot_dynamics.friction.combine`,
  ``b = c_v qd + s A + |s| B``): ``Fv = b_v + G^2 B``, ``Fc = A = (L+ - L-)/2``,
  ``Fa = B = (L+ + L-)/2`` with ``L+ = Tc+ + |G| Tm+`` and ``L- = Tc- + |G| Tm-``.

Column order of theta: the inertial blocks of the identified links (link order, 10 each), then per
joint ``Ia, Fv, Fc, Fa, Fo`` (those switched on). Names: ``m1, mx1, ..., Izz1, ..., Ia1, Fv1, Fc1,
Fa1, Fo1, ...`` (1-based joint numbers).

Everything the parameter set leaves out stays at the model's value and is a known torque
(:func:`robot_dynamics.identification.regressor.fixed_torques`): other links' inertia, friction
switched off in the set, and the friction the linear model cannot express (Stribeck, bearing and
transmission friction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from robot_dynamics.errors import ModelError, RobotDynamicsError
from robot_dynamics.friction.parameters import friction_parameters
from robot_dynamics.model import FloatArray, Inertial, JointFriction, Motor, RobotModel
from robot_dynamics.models.validation import inertia_problem

CoulombKind = Literal["tanh", "sign", "none"]
OffsetUse = Literal["reading", "torque"]
OFFSET_USES: tuple[OffsetUse, ...] = ("reading", "torque")
INERTIAL_NAMES = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")
JOINT_KINDS = ("Ia", "Fv", "Fc", "Fa", "Fo")


class IdentificationError(RobotDynamicsError):
    """Identification cannot proceed: bad parameter set, unexcited parameters, singular data."""


@dataclass(frozen=True)
class ParameterSet:
    """Which parameters theta holds (see the module docstring for their meaning and order).

    ``links``: restrict the inertial parameters to these links (0-based; ``(n - 1,)`` identifies a
    payload on the last link only); ``None`` = all links. ``offset``: a constant torque per joint
    (a sensor or current bias): estimated so that it does not corrupt the other parameters, never
    deployed by :func:`apply_parameters` (a reading's bias); :func:`deploy_offsets` writes it into a
    model when the drive applies it (a torque loop closed on the recorded sensor).
    """

    inertial: bool = True
    armature: bool = True
    viscous: bool = True
    coulomb: CoulombKind = "tanh"
    coulomb_velocity: float = 0.01
    asymmetric: bool = False
    offset: bool = True
    links: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.coulomb not in ("tanh", "sign", "none"):
            raise IdentificationError(f"ParameterSet.coulomb must be 'tanh', 'sign' or 'none', got {self.coulomb!r}")
        if not (math.isfinite(self.coulomb_velocity) and self.coulomb_velocity > 0.0):
            raise IdentificationError(f"ParameterSet.coulomb_velocity must be > 0, got {self.coulomb_velocity!r}")
        if self.asymmetric and self.coulomb == "none":
            raise IdentificationError("ParameterSet.asymmetric needs a Coulomb term (coulomb 'tanh' or 'sign')")
        if self.links is not None:
            object.__setattr__(self, "links", tuple(int(i) for i in self.links))

    def joint_kinds(self) -> tuple[str, ...]:
        """The per-joint parameter kinds switched on, in column order (subset of ``Ia Fv Fc Fa Fo``)."""
        on = (self.armature, self.viscous, self.coulomb != "none", self.asymmetric, self.offset)
        return tuple(k for k, flag in zip(JOINT_KINDS, on, strict=True) if flag)

    def identified_links(self, model: RobotModel) -> tuple[int, ...]:
        """0-based indices of the links whose inertial parameters are in theta."""
        if not self.inertial:
            return ()
        if self.links is None:
            return tuple(range(model.dof))
        bad = [i for i in self.links if not 0 <= i < model.dof]
        if bad or len(set(self.links)) != len(self.links):
            raise IdentificationError(
                f"ParameterSet.links: expected distinct link indices in 0..{model.dof - 1} for robot "
                f"{model.name!r}, got {list(self.links)}"
            )
        return tuple(sorted(self.links))

    def layout(self, model: RobotModel) -> Layout:
        return Layout.of(model, self)

    def names(self, model: RobotModel) -> tuple[str, ...]:
        """Parameter names in column order, e.g. ``("m1", "mx1", ..., "Izz6", "Ia1", "Fv1", ...)``."""
        return self.layout(model).names

    def size(self, model: RobotModel) -> int:
        return len(self.names(model))


@dataclass(frozen=True, eq=False)
class Layout:
    """Column positions of theta for one model: ``links`` (0-based) own ``10`` columns each from
    ``link_start[k]``; ``joint_column[kind][j]`` is the column of joint ``j``'s ``kind`` (or -1)."""

    links: tuple[int, ...]
    link_start: tuple[int, ...]
    joint_column: dict[str, NDArray[np.intp]]
    names: tuple[str, ...]
    size: int = field(default=0)

    @staticmethod
    def of(model: RobotModel, pset: ParameterSet) -> Layout:
        links = pset.identified_links(model)
        names: list[str] = []
        starts = []
        for i in links:
            starts.append(len(names))
            names += [f"{k}{i + 1}" for k in INERTIAL_NAMES]
        kinds = pset.joint_kinds()
        columns: dict[str, NDArray[np.intp]] = {k: np.full(model.dof, -1, dtype=np.intp) for k in JOINT_KINDS}
        for j in range(model.dof):
            for kind in kinds:
                columns[kind][j] = len(names)
                names.append(f"{kind}{j + 1}")
        return Layout(links, tuple(starts), columns, tuple(names), len(names))

    def link_slice(self, link: int) -> slice:
        start = self.link_start[self.links.index(link)]
        return slice(start, start + 10)


# ----------------------------------------------------------------------------------------------
# one link: Inertial <-> 10 standard parameters
# ----------------------------------------------------------------------------------------------
def link_parameters(body: Inertial) -> FloatArray:
    """``(m, mx, my, mz, Ixx, Ixy, Ixz, Iyy, Iyz, Izz)`` of a body, inertia about the frame origin."""
    m, c = body.mass, body.com
    inertia = body.inertia + m * (float(c @ c) * np.eye(3) - np.outer(c, c))  # parallel axes
    return np.array([m, *(m * c), *inertia[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]])


def origin_inertia(phi: ArrayLike) -> FloatArray:
    """The 3x3 inertia about the frame origin held in ``phi[4:10]``."""
    p = np.asarray(phi, dtype=float)
    xx, xy, xz, yy, yz, zz = p[4:10]
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def body_of(phi: ArrayLike, *, where: str = "link") -> Inertial:
    """The :class:`Inertial` of 10 standard parameters (ModelError if the mass is 0 with a first moment)."""
    p = np.asarray(phi, dtype=float)
    m, first = float(p[0]), p[1:4]
    if not np.all(np.isfinite(p)):
        raise ModelError("identification", where, f"non-finite parameters {p.tolist()}")
    if m == 0.0:
        if np.any(first != 0.0):
            raise ModelError(
                "identification",
                where,
                f"zero mass with first moment {first.tolist()} (when the torques do not determine the mass, "
                "fit with nominal= so that it keeps its model value)",
            )
        return Inertial(0.0, np.zeros(3), origin_inertia(p))
    c = first / m
    inertia = origin_inertia(p) - m * (float(c @ c) * np.eye(3) - np.outer(c, c))
    return Inertial(m, c, 0.5 * (inertia + inertia.T))


def physical_problem(phi: ArrayLike) -> str | None:
    """Why 10 standard parameters are no rigid body (None if they are): mass > 0, inertia about the
    centre of mass positive semi-definite and satisfying the triangle inequality (Wensing, Kim &
    Slotine 2017: equivalent to a positive semi-definite pseudo-inertia with positive mass)."""
    p = np.asarray(phi, dtype=float)
    if not np.all(np.isfinite(p)):
        return "non-finite parameters"
    if not p[0] > 0.0:
        return f"mass {p[0]:.6g} kg is not positive"
    return inertia_problem(body_of(p).inertia)


# ----------------------------------------------------------------------------------------------
# the model's theta and a model with a given theta
# ----------------------------------------------------------------------------------------------
def nominal_parameters(model: RobotModel, pset: ParameterSet) -> FloatArray:
    """theta of ``model`` as loaded, in ``pset``'s order (the offset is the model's, 0 unless deployed).

    The armature is ``G^2 Jm`` where the model puts the motor inertia in D
    (``model.motor_inertia_in_d``), else 0; friction as in the module docstring.
    """
    lay = pset.layout(model)
    theta = np.zeros(lay.size)
    for i in lay.links:
        theta[lay.link_slice(i)] = link_parameters(model.joints[i].link)
    fp = friction_parameters(model)
    values = {
        "Ia": model.arrays.reflected_motor_inertia * (1.0 if model.motor_inertia_in_d else 0.0),
        "Fv": fp.total_viscous,
        "Fc": fp.level_odd,
        "Fa": fp.level_even,
        "Fo": fp.offset,
    }
    for kind, cols in lay.joint_column.items():
        on = cols >= 0
        theta[cols[on]] = values[kind][on]
    return theta


def apply_parameters(model: RobotModel, theta: ArrayLike, pset: ParameterSet, *, check: bool = True) -> RobotModel:
    """A copy of ``model`` with the inertial, armature and friction values of ``theta``.

    * links: mass, centre of mass and inertia about the centre of mass from the 10 parameters;
    * armature: ``Jm = Ia / G^2`` keeping the gear ratio (a joint without motor gets
      ``Motor(Ia, G=1)``); the motor inertia is then part of D (``motor_inertia_in_d = True``);
    * friction, moved to the joint side (the motor's B and Tc are set to 0 when they are
      identified): ``viscous = Fv``, Coulomb ``(Fc + Fa, Fa - Fc)`` (``Fa`` the model's own where not
      identified), a Stribeck static level keeps its excess over the Coulomb level; with tanh
      Coulomb every joint's ``smoothing_velocity`` becomes ``pset.coulomb_velocity``;
    * the offset is not deployed (the model's own is kept; :func:`deploy_offsets` deploys it).

    ``check``: raise :class:`ModelError` (naming the joint) if a link is no rigid body
    (:func:`physical_problem`) or a friction level or armature is negative.
    """
    lay = pset.layout(model)
    th = np.asarray(theta, dtype=float)
    if th.shape != (lay.size,):
        raise IdentificationError(f"theta: expected {lay.size} parameters for {model.name!r}, got shape {th.shape}")
    src = model.source or model.name
    fp = friction_parameters(model)
    joints = list(model.joints)

    def value(kind: str, j: int) -> float | None:
        col = lay.joint_column[kind][j]
        return None if col < 0 else float(th[col])

    for i in lay.links:
        phi = th[lay.link_slice(i)]
        where = f"joints[{i}].link"
        if check:
            problem = physical_problem(phi)
            if problem is not None:
                raise ModelError(src, where, f"identified link of joint {joints[i].name!r}: {problem}")
        joints[i] = replace(joints[i], link=body_of(phi, where=f"{src}: {where}"))
    for j, joint in enumerate(joints):
        motor, fr = joint.motor, joint.friction
        ia, fv, fc, fa = value("Ia", j), value("Fv", j), value("Fc", j), value("Fa", j)
        if check:
            for kind, v in (("armature Ia", ia), ("viscous Fv", fv), ("Coulomb Fc", fc)):
                if v is not None and not v >= 0.0:
                    raise ModelError(src, f"joints[{j}]", f"joint {joint.name!r}: {kind} = {v:.6g} is negative")
            if fc is not None and fa is not None and abs(fa) > fc:
                raise ModelError(
                    src,
                    f"joints[{j}]",
                    f"joint {joint.name!r}: asymmetric Coulomb |Fa| = {abs(fa):.6g} > Fc = {fc:.6g}",
                )
        if ia is not None:
            g = motor.gear_ratio if motor is not None and motor.gear_ratio != 0.0 else 1.0
            motor = Motor(ia / g**2, g) if motor is None else replace(motor, inertia=ia / g**2, gear_ratio=g)
        changes: dict[str, object] = {}
        if fv is not None:
            changes["viscous"] = fv
            if motor is not None:
                motor = replace(motor, viscous=0.0)
        if fc is not None:
            b = float(fp.level_even[j]) if fa is None else fa
            old = fr.coulomb
            changes["coulomb"] = (fc + b, b - fc)
            if check and (fc + b < 0.0 or b - fc > 0.0):
                problem = f"joint {joint.name!r}: Coulomb levels (Fc + Fa, Fa - Fc) = ({fc + b:.6g}, {b - fc:.6g})"
                raise ModelError(src, f"joints[{j}].friction.coulomb", problem + " need T+ >= 0 >= T-")
            if fr.static is not None:
                changes["static"] = (fc + b + fr.static[0] - old[0], b - fc + fr.static[1] - old[1])
            if pset.coulomb == "tanh":
                changes["smoothing_velocity"] = pset.coulomb_velocity
            if motor is not None:
                motor = replace(motor, coulomb=(0.0, 0.0))
        friction: JointFriction = replace(fr, **changes) if changes else fr  # type: ignore[arg-type]
        joints[j] = replace(joint, motor=motor, friction=friction)
    return model.with_changes(joints=tuple(joints), motor_inertia_in_d=model.motor_inertia_in_d or pset.armature)


def check_offset_use(offsets: str) -> OffsetUse:
    """``offsets`` if it is one of :data:`OFFSET_USES` (IdentificationError naming them otherwise)."""
    if offsets not in OFFSET_USES:
        raise IdentificationError(f"offsets must be one of {', '.join(OFFSET_USES)}; got {offsets!r}")
    return offsets


def deploy_offsets(model: RobotModel, offsets: ArrayLike) -> RobotModel:
    """A copy of ``model`` whose joints apply the constant torques ``offsets`` (``(n,)``, N m or N):
    each joint's ``JointFriction.offset``, which every consumer of the model's joint torque adds
    (inverse dynamics with friction, the feed-forward, the momentum observer: the friction law,
    :mod:`robot_dynamics.friction.law`). For a drive whose torque loop closes on the sensor the
    offsets were fitted to (docs/identification.md, "Offsets")."""
    values = np.asarray(offsets, dtype=float)
    if values.shape != (model.dof,) or not np.all(np.isfinite(values)):
        raise IdentificationError(
            f"offsets: expected {model.dof} finite values for {model.name!r}, got {values.tolist()!r}"
        )
    joints = tuple(
        replace(j, friction=replace(j.friction, offset=float(v))) for j, v in zip(model.joints, values, strict=True)
    )
    return model.with_changes(joints=joints)
