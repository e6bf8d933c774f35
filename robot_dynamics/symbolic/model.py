"""A robot's parameters as SymPy values: numeric, or chosen ones kept as symbols.

:func:`symbolic_robot` turns a :class:`~robot_dynamics.model.RobotModel` into a
:class:`SymbolicRobot` in the same frame convention (joint ``i``'s frame ``F_i`` on link ``i``,
``T_i = X_i Rot(axis_i, q_i)``; see :mod:`robot_dynamics.model`). Numeric values become SymPy
``Float``s, except that entries within ``SNAP`` of ``0`` or ``±1`` become exact integers: the
``cos(pi/2) = 6e-17`` left in a DH transform must be an exact zero, or the generated code would
multiply by it (the customisation of Dhanaraj (1990) §2.4).

Chosen parameter groups can be kept as symbols, as ROBMAT (Horn & Linge §3) keeps ``m[1]``, ``L[1]``:

* ``"mass"`` -> ``m1..mn``; ``"inertia"`` -> ``Ixx1, Iyy1, Izz1, Ixy1, Iyz1, Ixz1``;
* ``"com"`` -> ``x1, y1, z1`` (the centre of mass in the DH frame for DH models, else in ``F_i``);
* ``"length"`` -> the DH ``a`` and ``d`` (``a1``, ``d2``: ROBMAT's ``L[i]`` is the standard-DH ``a_i``),
  or the joint origin translations ``px1, py1, pz1`` for models without a DH table;
* ``"gravity"`` -> ``g`` times the (numeric) unit direction of gravity;
* ``"motor"`` -> ``Im1..`` (reflected motor inertia of joints that have a motor).

Only non-zero values become symbols (a zero stays an exact zero). ``names`` renames symbols
(e.g. ``{"a1": "L1", "a2": "L2"}``). The numeric value of every symbol is kept in
:pyattr:`SymbolicRobot.values` so results can be checked against the numeric engine.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import sympy as sp

from robot_dynamics.model import DHTable, FloatArray, RobotModel, dh_joint_frames

SNAP = 1e-12
"""Numbers closer than this to an integer in {-1, 0, 1} are made exact."""

ZERO = sp.Integer(0)
GROUPS = ("mass", "inertia", "com", "length", "gravity", "motor")


def exact(value: float) -> sp.Expr:
    """``value`` as a SymPy number; within :data:`SNAP` of -1, 0 or 1 it becomes that integer."""
    v = float(value)
    for k in (0, 1, -1):
        if abs(v - k) < SNAP:
            return sp.Integer(k)
    return sp.Float(v)


def exact_matrix(values: FloatArray) -> sp.Matrix:
    arr = np.asarray(values, dtype=float)
    if arr.ndim == 1:
        return sp.Matrix([exact(v) for v in arr])
    return sp.Matrix([[exact(v) for v in row] for row in arr])


def exact_angle_cos_sin(angle: float) -> tuple[sp.Expr, sp.Expr]:
    """``(cos, sin)`` of a fixed angle, exact for multiples of pi/2."""
    quarter = angle / (math.pi / 2)
    k = round(quarter)
    if abs(quarter - k) < SNAP:
        return ((sp.Integer(1), sp.Integer(0), sp.Integer(-1), sp.Integer(0))[k % 4],
                (sp.Integer(0), sp.Integer(1), sp.Integer(0), sp.Integer(-1))[k % 4])  # fmt: skip
    return exact(math.cos(angle)), exact(math.sin(angle))


@dataclass(frozen=True)
class SymbolicLink:
    """Joint ``i`` and link ``i``: fixed origin ``X_i`` (rotation and translation in ``F_{i-1}``),
    unit axis in ``F_i``, and the link's mass, centre of mass and inertia about it, in ``F_i``."""

    kind: str
    rotation: sp.Matrix
    translation: sp.Matrix
    axis: sp.Matrix
    mass: sp.Expr
    com: sp.Matrix
    inertia: sp.Matrix
    motor_inertia: sp.Expr = ZERO

    @property
    def is_prismatic(self) -> bool:
        return self.kind == "prismatic"


@dataclass(frozen=True)
class SymbolicRobot:
    """A serial chain with SymPy parameters; ``q``, ``qd``, ``qdd`` are the joint symbols."""

    name: str
    links: tuple[SymbolicLink, ...]
    gravity: sp.Matrix  # in the base frame F_0 (the actual gravity, e.g. (0, 0, -g))
    values: Mapping[sp.Symbol, float] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.links)

    @property
    def q(self) -> tuple[sp.Symbol, ...]:
        return tuple(sp.Symbol(f"q{i + 1}", real=True) for i in range(self.n))

    @property
    def qd(self) -> tuple[sp.Symbol, ...]:
        return tuple(sp.Symbol(f"qd{i + 1}", real=True) for i in range(self.n))

    @property
    def qdd(self) -> tuple[sp.Symbol, ...]:
        return tuple(sp.Symbol(f"qdd{i + 1}", real=True) for i in range(self.n))

    @property
    def parameters(self) -> tuple[sp.Symbol, ...]:
        """The parameters kept as symbols, sorted by name."""
        return tuple(sorted(self.values, key=lambda s: s.name))

    def with_link(
        self, index: int, values: Mapping[sp.Symbol, float] | None = None, **changes: object
    ) -> SymbolicRobot:
        """A copy with link ``index`` (0-based) changed, e.g. ``com=sp.Matrix([l/2, 0, 0])`` for a
        uniform rod of symbolic length (``values``: numeric values of any new symbols)."""
        links = list(self.links)
        fixed = {k: sp.Matrix(v) if isinstance(v, (list, tuple)) else v for k, v in changes.items()}
        links[index] = replace(links[index], **fixed)  # type: ignore[arg-type]
        return SymbolicRobot(self.name, tuple(links), self.gravity, {**self.values, **(values or {})})

    def numeric(self) -> SymbolicRobot:
        """The same robot with every kept symbol replaced by its numeric value."""
        sub = {s: sp.Float(v) for s, v in self.values.items()}

        def m(x: sp.Matrix) -> sp.Matrix:
            return x.xreplace(sub)

        links = tuple(
            replace(
                lk,
                rotation=m(lk.rotation),
                translation=m(lk.translation),
                axis=m(lk.axis),
                mass=sp.sympify(lk.mass).xreplace(sub),
                com=m(lk.com),
                inertia=m(lk.inertia),
                motor_inertia=sp.sympify(lk.motor_inertia).xreplace(sub),
            )
            for lk in self.links
        )
        return SymbolicRobot(self.name, links, m(self.gravity), {})


class _Symbols:
    """Makes the parameter symbols, remembering their numeric values."""

    def __init__(self, groups: Iterable[str], names: Mapping[str, str] | None) -> None:
        self.groups = set(groups)
        unknown = self.groups - set(GROUPS)
        if unknown:
            raise ValueError(f"unknown symbolic parameter groups {sorted(unknown)}; choose from {list(GROUPS)}")
        self.names = dict(names or {})
        self.values: dict[sp.Symbol, float] = {}

    def get(self, group: str, name: str, value: float) -> sp.Expr:
        number = exact(value)
        if group not in self.groups or number == 0:
            return number
        sym = sp.Symbol(self.names.get(name, name), real=True)
        previous = self.values.get(sym)
        if previous is not None and abs(previous - float(value)) > SNAP * max(1.0, abs(previous)):
            raise ValueError(f"symbol {sym} named twice with different values {previous} and {value}")
        self.values[sym] = float(value)
        return sym


def _rot_x(c: sp.Expr, s: sp.Expr) -> sp.Matrix:
    return sp.Matrix([[1, 0, 0], [0, c, -s], [0, s, c]])


def _rot_z(c: sp.Expr, s: sp.Expr) -> sp.Matrix:
    return sp.Matrix([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _homogeneous(r: sp.Matrix, p: sp.Matrix) -> sp.Matrix:
    t = sp.eye(4)
    t[:3, :3] = r
    t[:3, 3] = p
    return t


def _dh_frames(table: DHTable, sym: _Symbols) -> tuple[list[sp.Matrix], list[sp.Matrix]]:
    """Symbolic version of :func:`robot_dynamics.model.dh_joint_frames`: ``(origins, link_poses)``."""
    origins: list[sp.Matrix] = []
    poses: list[sp.Matrix] = []
    zero = sp.zeros(3, 1)
    if table.convention == "standard":
        tail = sp.eye(4)
        for i, row in enumerate(table.rows, start=1):
            ct, st = exact_angle_cos_sin(row.theta)
            ca, sa = exact_angle_cos_sin(row.alpha)
            a = sym.get("length", f"a{i}", row.a)
            d = sym.get("length", f"d{i}", row.d)
            rz = _homogeneous(_rot_z(ct, st), zero)
            if row.kind == "revolute":
                origins.append(tail * rz)
                new_tail = _homogeneous(_rot_x(ca, sa), sp.Matrix([a, 0, d]))
            else:
                origins.append(tail * rz * _homogeneous(sp.eye(3), sp.Matrix([0, 0, d])))
                new_tail = _homogeneous(_rot_x(ca, sa), sp.Matrix([a, 0, 0]))
            poses.append(new_tail)
            tail = new_tail
        return origins, poses
    for i, row in enumerate(table.rows, start=1):
        ct, st = exact_angle_cos_sin(row.theta)
        ca, sa = exact_angle_cos_sin(row.alpha)
        a = sym.get("length", f"a{i - 1}", row.a)
        d = sym.get("length", f"d{i}", row.d)
        x = _homogeneous(_rot_x(ca, sa), zero) * _homogeneous(sp.eye(3), sp.Matrix([a, 0, 0]))
        x = x * _homogeneous(_rot_z(ct, st), zero) * _homogeneous(sp.eye(3), sp.Matrix([0, 0, d]))
        origins.append(x)
        poses.append(sp.eye(4))
    return origins, poses


def _matches(sym_origins: list[sp.Matrix], model: RobotModel, values: Mapping[sp.Symbol, float]) -> bool:
    sub = {s: sp.Float(v) for s, v in values.items()}
    for x, joint in zip(sym_origins, model.joints, strict=False):
        num = np.array(x.xreplace(sub).evalf(), dtype=float)
        if not np.allclose(num, joint.origin, atol=1e-9, rtol=0.0):
            return False
    return True


def symbolic_robot(
    model: RobotModel,
    symbols: Iterable[str] = (),
    *,
    names: Mapping[str, str] | None = None,
    motor_inertia: bool | None = None,
) -> SymbolicRobot:
    """The model's parameters as SymPy values, the ``symbols`` groups kept symbolic.

    ``motor_inertia``: include the reflected motor inertia ``G^2 Jm`` of joints with a motor
    (default: ``model.motor_inertia_in_d``).
    """
    sym = _Symbols(symbols, names)
    use_motor = model.motor_inertia_in_d if motor_inertia is None else motor_inertia
    n = model.dof

    origins: list[sp.Matrix] | None = None
    poses: list[sp.Matrix] | None = None
    if model.dh is not None and len(model.dh.rows) == n:
        saved = dict(sym.values)
        origins, poses = _dh_frames(model.dh, sym)
        if not _matches(origins, model, sym.values):  # the model was changed after from_dh
            origins, poses = None, None
            sym.values = saved
    numeric_poses = dh_joint_frames(model.dh)[1] if origins is not None and model.dh is not None else None

    links: list[SymbolicLink] = []
    for i, joint in enumerate(model.joints, start=1):
        if origins is not None and poses is not None and numeric_poses is not None:
            x = origins[i - 1]
            rotation, translation = x[:3, :3], x[:3, 3]
            pose = poses[i - 1]
            body = joint.link.transformed(
                np.asarray(np.linalg.inv(numeric_poses[i - 1]), dtype=np.float64)
            )  # inertials in the DH frame
        else:
            rotation = exact_matrix(joint.origin[:3, :3])
            xyz = joint.origin[:3, 3]
            translation = sp.Matrix([sym.get("length", f"p{c}{i}", v) for c, v in zip("xyz", xyz, strict=True)])
            pose = sp.eye(4)
            body = joint.link
        mass = sym.get("mass", f"m{i}", body.mass)
        com_local = sp.Matrix([sym.get("com", f"{c}{i}", v) for c, v in zip("xyz", body.com, strict=False)])
        ii = body.inertia
        inertia_local = sp.Matrix(
            [
                [sym.get("inertia", f"Ixx{i}", ii[0, 0]), sym.get("inertia", f"Ixy{i}", ii[0, 1]),
                 sym.get("inertia", f"Ixz{i}", ii[0, 2])],
                [0, sym.get("inertia", f"Iyy{i}", ii[1, 1]), sym.get("inertia", f"Iyz{i}", ii[1, 2])],
                [0, 0, sym.get("inertia", f"Izz{i}", ii[2, 2])],
            ]
        )  # fmt: skip
        for r, c in ((1, 0), (2, 0), (2, 1)):
            inertia_local[r, c] = inertia_local[c, r]
        rp = pose[:3, :3]
        com = rp * com_local + pose[:3, 3]
        inertia = (rp * inertia_local * rp.T).applyfunc(sp.expand)
        motor = sp.Integer(0)
        if use_motor and joint.motor is not None:
            motor = sym.get("motor", f"Im{i}", joint.motor.reflected_inertia)
        links.append(
            SymbolicLink(
                kind=joint.kind,
                rotation=sp.Matrix(rotation),
                translation=sp.Matrix(translation).applyfunc(sp.expand),
                axis=exact_matrix(joint.axis),
                mass=mass,
                com=com.applyfunc(sp.expand),
                inertia=inertia,
                motor_inertia=motor,
            )
        )
    g = model.gravity_base
    norm = float(np.linalg.norm(g))
    if "gravity" in sym.groups and norm > 0.0:
        gsym = sym.get("gravity", "g", norm)
        gravity = exact_matrix(g / norm) * gsym
    else:
        gravity = exact_matrix(g)
    return SymbolicRobot(model.name, tuple(links), gravity, dict(sym.values))
