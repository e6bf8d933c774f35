"""The one internal robot model every computation starts from.

A model is an ordered serial chain of ``n`` actuated joints. Joint ``i`` moves link ``i``; the
frame ``F_i`` is attached to link ``i``. With ``F_0`` the base frame, the pose of ``F_i`` in
``F_{i-1}`` is

    T_i(q_i) = X_i @ M_i(q_i),   M_i = Rot(axis_i, q_i)   (revolute)
                                 M_i = Trans(axis_i q_i)  (prismatic)

``X_i`` is the joint's fixed ``origin`` (a URDF joint origin, or derived from a DH row) and
``axis_i`` a unit vector in ``F_i`` (= in the origin frame: the motion does not move its own axis).
Link ``i``'s inertial parameters are expressed in ``F_i``: mass, centre of mass ``com`` and the
3x3 inertia about the centre of mass with ``F_i``'s axes.

``base`` is the pose of ``F_0`` in the world, ``tool`` the pose of the tool (end-effector) frame in
``F_n``. ``gravity`` is the gravity vector in the world frame (e.g. ``(0, 0, -9.81)``); the engine uses
:pyattr:`RobotModel.gravity_base`, the same vector in ``F_0``. Gravity is never hard-coded.

DH conversions (Fu, Gonzalez & Lee eq. 3.3-59 and Craig's modified convention; see docs/references.md):

* standard (distal) DH, ``A_i = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)``, joint ``i`` about
  ``z_{i-1}``: ``F_i`` is the DH frame ``i-1`` turned by the joint (``Rz(theta_i)``), so link ``i``'s DH
  frame is ``F_i @ Tz(d_i) Tx(a_i) Rx(alpha_i)`` (revolute) and its inertial data are transformed
  into ``F_i`` (never copied: the frames differ);
* modified (proximal, Craig) DH, ``T_i = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta_i) Tz(d_i)``: ``F_i`` is the
  DH frame ``i`` itself.

Pure NumPy; no ROS imports.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

JointKind = Literal["revolute", "prismatic"]
DHConvention = Literal["standard", "modified"]
BearingKind = Literal["journal", "linear", "thrust"]

FloatArray = NDArray[np.float64]


# ----------------------------------------------------------------------------------------------
# homogeneous transforms
# ----------------------------------------------------------------------------------------------
def rot_x(angle: float) -> FloatArray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1]], dtype=float)


def rot_z(angle: float) -> FloatArray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=float)


def trans(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> FloatArray:
    t = np.eye(4)
    t[:3, 3] = (x, y, z)
    return t


def rpy_matrix(roll: float, pitch: float, yaw: float) -> FloatArray:
    """3x3 rotation of URDF ``rpy``: ``Rz(yaw) Ry(pitch) Rx(roll)`` (fixed-axis X-Y-Z)."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def axis_angle_matrix(axis: ArrayLike, angle: float) -> FloatArray:
    """3x3 rotation by ``angle`` about the unit vector ``axis`` (Rodrigues)."""
    k = np.asarray(axis, dtype=float)
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(angle) * kx + (1.0 - math.cos(angle)) * (kx @ kx)


def _frozen_array(value: ArrayLike, shape: tuple[int, ...], what: str) -> FloatArray:
    arr = np.array(value, dtype=float)
    if arr.shape != shape:
        raise ValueError(f"{what}: expected shape {shape}, got {arr.shape}")
    arr.setflags(write=False)
    return arr


# ----------------------------------------------------------------------------------------------
# parameter blocks
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Inertial:
    """Rigid-body parameters of one link in its own frame ``F_i``.

    ``inertia`` is the full 3x3 inertia tensor about the centre of mass ``com``, axes parallel to
    ``F_i`` (``[[Ixx, Ixy, Ixz], [Ixy, Iyy, Iyz], [Ixz, Iyz, Izz]]`` with the products of inertia as
    tensor entries, i.e. ``Ixy = -integral(x y dm)``, the URDF convention).
    """

    mass: float = 0.0
    com: FloatArray = field(default_factory=lambda: np.zeros(3))
    inertia: FloatArray = field(default_factory=lambda: np.zeros((3, 3)))

    def __post_init__(self) -> None:
        object.__setattr__(self, "mass", float(self.mass))
        object.__setattr__(self, "com", _frozen_array(self.com, (3,), "com"))
        object.__setattr__(self, "inertia", _frozen_array(self.inertia, (3, 3), "inertia"))

    @staticmethod
    def from_components(
        mass: float,
        com: ArrayLike,
        ixx: float,
        iyy: float,
        izz: float,
        ixy: float = 0.0,
        iyz: float = 0.0,
        ixz: float = 0.0,
    ) -> Inertial:
        """From ``[Ixx, Iyy, Izz, Ixy, Iyz, Ixz]`` (the DH YAML / Robotics Toolbox order)."""
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)
        return Inertial(mass, np.asarray(com, dtype=float), inertia)

    def transformed(self, pose: FloatArray) -> Inertial:
        """The same body expressed in the frame in which ``pose`` (4x4) gives this body's frame."""
        r = pose[:3, :3]
        return Inertial(self.mass, r @ self.com + pose[:3, 3], r @ self.inertia @ r.T)

    def __add__(self, other: Inertial) -> Inertial:
        """Two bodies rigidly joined, both in the same frame (parallel-axis theorem)."""
        m = self.mass + other.mass
        if m == 0.0:
            return Inertial()
        c = (self.mass * self.com + other.mass * other.com) / m

        def shifted(b: Inertial) -> FloatArray:
            d = b.com - c
            return b.inertia + b.mass * (float(d @ d) * np.eye(3) - np.outer(d, d))

        return Inertial(m, c, shifted(self) + shifted(other))


@dataclass(frozen=True)
class Limits:
    """Joint limits (rad or m, rad/s or m/s, N*m or N); infinite where not given."""

    lower: float = -math.inf
    upper: float = math.inf
    velocity: float = math.inf
    effort: float = math.inf


@dataclass(frozen=True)
class Motor:
    """Motor and gearbox data, motor side (Robotics Toolbox / Corke & Armstrong 1994 convention).

    Referred to the joint: reflected inertia ``G^2 Jm``, viscous ``G^2 B``, Coulomb ``|G| Tc``.
    ``gear_ratio`` G is signed (the sign gives the motor direction). A joint-side (reflected)
    inertia with no gearbox, as the thesis's ``I_motor``, is ``Motor(inertia=I, gear_ratio=1)``.
    """

    inertia: float  # Jm, kg m^2 (motor side)
    gear_ratio: float = 1.0  # G
    viscous: float = 0.0  # B, N m s / rad (motor side)
    coulomb: tuple[float, float] = (0.0, 0.0)  # (Tc+, Tc-), N m (motor side), Tc+ >= 0 >= Tc-

    @property
    def reflected_inertia(self) -> float:
        return self.gear_ratio**2 * self.inertia


@dataclass(frozen=True)
class BearingFriction:
    """Load-dependent joint (bearing) friction, Dhanaraj (1990) Table 3.1.

    ``mu`` friction coefficient, ``radius`` journal/thrust radius r (m), ``spacing`` distance d
    between the two bearings of the joint (m).
    """

    kind: BearingKind
    mu: float
    radius: float = 0.0
    spacing: float = 0.0


@dataclass(frozen=True)
class TransmissionFriction:
    """Transmission (gearbox) friction, Dhanaraj (1990) section 3.4, Table 3.2.

    ``efficiency``: points ``(tau_out / tau_max, eta)`` of the efficiency curve, ascending in the
    first entry (interpolated); ``breakaway`` break-away torque tau_B; ``max_torque`` tau_max.
    """

    efficiency: tuple[tuple[float, float], ...]
    breakaway: float
    max_torque: float


@dataclass(frozen=True)
class JointFriction:
    """Joint-side friction parameters of one joint (all zero = frictionless).

    * viscous ``b_v`` (N m s/rad or N s/m);
    * Coulomb ``(Tc+, Tc-)`` with ``Tc+ >= 0 >= Tc-`` (symmetric: ``(b_d, -b_d)``);
    * ``static`` ``(Ts+, Ts-)``, the static (break-away) level of the Stribeck blend of Schilling
      eq. 6-3-3 ``b_v qd + sgn(qd) [b_d + (b_s - b_d) exp(-|qd| / eps)]`` with
      ``eps = stribeck_velocity``; ``None`` = no Stribeck term (static level = Coulomb);
    * ``smoothing_velocity`` v_s of the smooth (chatter-free) compensation variants;
    * optional load-dependent ``bearing`` and ``transmission`` blocks (thesis ch. 3);
    * ``offset`` (N m or N): a constant torque added to the commanded joint torque, whatever the
      motion. Not friction: the torque a drive applies for a zero command when its torque loop closes
      on a sensor with this offset (the loop makes the reading, link torque + offset, follow the
      command), so the command must carry it (docs/identification.md, "Offsets"). 0 for a drive that
      applies what it is commanded.
    """

    viscous: float = 0.0
    coulomb: tuple[float, float] = (0.0, 0.0)
    static: tuple[float, float] | None = None
    stribeck_velocity: float = 0.0
    smoothing_velocity: float = 0.01
    bearing: BearingFriction | None = None
    transmission: TransmissionFriction | None = None
    offset: float = 0.0

    @property
    def is_zero(self) -> bool:
        return (
            self.viscous == 0.0
            and self.offset == 0.0
            and self.coulomb == (0.0, 0.0)
            and (self.static is None or self.static == (0.0, 0.0))
            and self.bearing is None
            and self.transmission is None
        )


@dataclass(frozen=True, eq=False)
class Joint:
    """One actuated joint and the link it moves (see the module docstring for the frames)."""

    name: str
    kind: JointKind
    origin: FloatArray  # X_i, 4x4, pose of F_i in F_{i-1} at q_i = 0
    axis: FloatArray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    link: Inertial = field(default_factory=Inertial)
    link_name: str = ""
    continuous: bool = False
    limits: Limits = field(default_factory=Limits)
    friction: JointFriction = field(default_factory=JointFriction)
    motor: Motor | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("revolute", "prismatic"):
            raise ValueError(f"joint {self.name!r}: kind must be 'revolute' or 'prismatic', got {self.kind!r}")
        object.__setattr__(self, "origin", _frozen_array(self.origin, (4, 4), f"joint {self.name!r} origin"))
        axis = np.array(self.axis, dtype=float)
        norm = float(np.linalg.norm(axis)) if axis.shape == (3,) else 0.0
        if not norm > 0.0 or not math.isfinite(norm):
            raise ValueError(f"joint {self.name!r}: axis must be a non-zero finite 3-vector, got {self.axis!r}")
        object.__setattr__(self, "axis", _frozen_array(axis / norm, (3,), f"joint {self.name!r} axis"))
        if not self.link_name:
            object.__setattr__(self, "link_name", f"{self.name}_link")

    @property
    def is_prismatic(self) -> bool:
        return self.kind == "prismatic"


# ----------------------------------------------------------------------------------------------
# DH description (kept on models built from DH for symbolic generation, export and display)
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DHRow:
    """One DH row. Standard: ``(a_i, alpha_i, d_i, theta_i)``; modified: ``(a_{i-1}, alpha_{i-1}, d_i,
    theta_i)``. For a revolute joint ``theta`` is the offset added to q; for a prismatic one ``d``."""

    kind: JointKind
    a: float
    alpha: float
    d: float
    theta: float


@dataclass(frozen=True)
class DHTable:
    convention: DHConvention
    rows: tuple[DHRow, ...]


def dh_joint_frames(table: DHTable) -> tuple[list[FloatArray], list[FloatArray], FloatArray]:
    """Joint origins ``X_i`` and link-frame poses ``P_i`` (DH frame ``i`` in ``F_i``) of a DH table.

    Returns ``(origins, link_poses, tail)`` where ``tail`` is the pose of DH frame ``n`` in ``F_n``
    (to be composed with a user tool transform).
    """
    origins: list[FloatArray] = []
    link_poses: list[FloatArray] = []
    if table.convention == "standard":
        # A_i = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i); the joint turns Rz (revolute) or slides Tz.
        previous_tail = np.eye(4)  # DH frame i-1 in F_{i-1}
        for row in table.rows:
            if row.kind == "revolute":
                origins.append(previous_tail @ rot_z(row.theta))
                tail = trans(z=row.d) @ trans(x=row.a) @ rot_x(row.alpha)
            else:
                origins.append(previous_tail @ rot_z(row.theta) @ trans(z=row.d))
                tail = trans(x=row.a) @ rot_x(row.alpha)
            link_poses.append(tail)
            previous_tail = tail
        return origins, link_poses, previous_tail
    if table.convention == "modified":
        # T_i = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta_i) Tz(d_i); F_i is DH frame i.
        for row in table.rows:
            origins.append(rot_x(row.alpha) @ trans(x=row.a) @ rot_z(row.theta) @ trans(z=row.d))
            link_poses.append(np.eye(4))
        return origins, link_poses, np.eye(4)
    raise ValueError(f"unknown DH convention {table.convention!r} (expected 'standard' or 'modified')")


# ----------------------------------------------------------------------------------------------
# the model
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ChainArrays:
    """The chain's parameters stacked for vectorised algorithms (read-only views)."""

    origin_rotation: FloatArray  # (n, 3, 3)
    origin_translation: FloatArray  # (n, 3)
    axis: FloatArray  # (n, 3)
    prismatic: NDArray[np.bool_]  # (n,)
    mass: FloatArray  # (n,)
    com: FloatArray  # (n, 3)
    inertia: FloatArray  # (n, 3, 3) about the centre of mass
    reflected_motor_inertia: FloatArray  # (n,), G^2 Jm (0 without a motor)


SMOOTH_KINDS: tuple[str, ...] = ("tanh", "linear")
"""The smooth friction's direction functions (:mod:`robot_dynamics.friction.smooth`)."""


@dataclass(frozen=True, eq=False)
class RobotModel:
    """A serial chain of actuated joints with gravity, base and tool transforms.

    ``motor_inertia_in_d``: whether the reflected motor inertia ``G^2 Jm`` of joints with motor data
    belongs to D (the Robotics Toolbox convention, default) — algorithms take an override switch.
    ``smooth_kind``: the direction function of the model's smooth friction, ``"tanh"`` (default) or
    ``"linear"`` (see :mod:`robot_dynamics.friction.smooth`; each joint's width is its
    ``smoothing_velocity``) — the friction functions take an override argument.
    """

    name: str
    joints: tuple[Joint, ...]
    gravity: FloatArray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    base: FloatArray = field(default_factory=lambda: np.eye(4))
    tool: FloatArray = field(default_factory=lambda: np.eye(4))
    source: str = ""
    dh: DHTable | None = None
    named_poses: Mapping[str, FloatArray] = field(default_factory=dict)
    motor_inertia_in_d: bool = True
    base_link: str = "base_link"
    tip_link: str = ""
    smooth_kind: str = "tanh"

    def __post_init__(self) -> None:
        if self.smooth_kind not in SMOOTH_KINDS:
            raise ValueError(
                f"robot {self.name!r}: smooth_kind must be one of {SMOOTH_KINDS}, got {self.smooth_kind!r}"
            )
        object.__setattr__(self, "joints", tuple(self.joints))
        object.__setattr__(self, "gravity", _frozen_array(self.gravity, (3,), "gravity"))
        object.__setattr__(self, "base", _frozen_array(self.base, (4, 4), "base"))
        object.__setattr__(self, "tool", _frozen_array(self.tool, (4, 4), "tool"))
        poses = {k: _frozen_array(v, (len(self.joints),), f"named pose {k!r}") for k, v in self.named_poses.items()}
        object.__setattr__(self, "named_poses", poses)
        names = [j.name for j in self.joints]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"robot {self.name!r}: duplicate joint names {dupes}")
        if not self.tip_link and self.joints:
            object.__setattr__(self, "tip_link", self.joints[-1].link_name)

    # -- basic facts -------------------------------------------------------------------------
    @property
    def dof(self) -> int:
        return len(self.joints)

    @property
    def joint_names(self) -> list[str]:
        return [j.name for j in self.joints]

    @property
    def gravity_base(self) -> FloatArray:
        """Gravity in the base frame ``F_0``."""
        return self.base[:3, :3].T @ self.gravity

    @property
    def has_motors(self) -> bool:
        return any(j.motor is not None for j in self.joints)

    @property
    def has_friction(self) -> bool:
        return any(
            not j.friction.is_zero or (j.motor is not None and (j.motor.viscous or any(j.motor.coulomb)))
            for j in self.joints
        )

    @cached_property
    def arrays(self) -> ChainArrays:
        def ro(a: NDArray) -> NDArray:
            a.setflags(write=False)
            return a

        js = self.joints
        return ChainArrays(
            origin_rotation=ro(np.array([j.origin[:3, :3] for j in js]).reshape(len(js), 3, 3)),
            origin_translation=ro(np.array([j.origin[:3, 3] for j in js]).reshape(len(js), 3)),
            axis=ro(np.array([j.axis for j in js]).reshape(len(js), 3)),
            prismatic=ro(np.array([j.is_prismatic for j in js], dtype=bool)),
            mass=ro(np.array([j.link.mass for j in js], dtype=float)),
            com=ro(np.array([j.link.com for j in js]).reshape(len(js), 3)),
            inertia=ro(np.array([j.link.inertia for j in js]).reshape(len(js), 3, 3)),
            reflected_motor_inertia=ro(
                np.array([j.motor.reflected_inertia if j.motor else 0.0 for j in js], dtype=float)
            ),
        )

    def fingerprint(self) -> str:
        """A hash of every parameter that changes the dynamics (for caches of generated code)."""
        h = hashlib.sha256()

        def feed(obj: object) -> None:
            if isinstance(obj, np.ndarray):
                h.update(np.ascontiguousarray(obj, dtype=float).tobytes())
            elif hasattr(obj, "__dataclass_fields__"):
                h.update(type(obj).__name__.encode())
                for f in fields(obj):  # type: ignore[arg-type]
                    if f.name not in ("source", "named_poses", "link_name", "limits"):
                        feed(getattr(obj, f.name))
            elif isinstance(obj, (tuple, list)):
                h.update(b"(")
                for item in obj:
                    feed(item)
                h.update(b")")
            else:
                h.update(repr(obj).encode())

        feed(self)
        return h.hexdigest()

    def with_changes(self, **changes: object) -> RobotModel:
        """A copy with fields replaced (models are immutable)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def index_of(self, joint_names: Sequence[str]) -> NDArray[np.intp]:
        """Indices into the model's joint order of ``joint_names`` (KeyError naming the unknown ones)."""
        lookup = {n: i for i, n in enumerate(self.joint_names)}
        unknown = [n for n in joint_names if n not in lookup]
        if unknown:
            raise KeyError(f"unknown joint names {unknown}; the model has {self.joint_names}")
        return np.array([lookup[n] for n in joint_names], dtype=np.intp)


def from_dh(
    name: str,
    table: DHTable,
    links: Sequence[Inertial],
    *,
    joint_names: Sequence[str] | None = None,
    limits: Sequence[Limits] | None = None,
    friction: Sequence[JointFriction] | None = None,
    motors: Sequence[Motor | None] | None = None,
    gravity: ArrayLike = (0.0, 0.0, -9.81),
    base: ArrayLike | None = None,
    tool: ArrayLike | None = None,
    named_poses: Mapping[str, ArrayLike] | None = None,
    source: str = "",
) -> RobotModel:
    """Build a model from a DH table, with each link's inertial data given in its DH frame ``i``.

    The inertial data are transformed into the joint frames ``F_i`` (identity for modified DH);
    ``tool`` is the end-effector pose in the last DH frame.
    """
    n = len(table.rows)
    for what, seq in (
        ("links", links),
        ("joint_names", joint_names),
        ("limits", limits),
        ("friction", friction),
        ("motors", motors),
    ):
        if seq is not None and len(seq) != n:
            raise ValueError(f"robot {name!r}: {n} DH rows but {len(seq)} {what}")
    origins, link_poses, tail = dh_joint_frames(table)
    names = list(joint_names) if joint_names is not None else [f"joint{i + 1}" for i in range(n)]
    joints = tuple(
        Joint(
            name=names[i],
            kind=table.rows[i].kind,
            origin=origins[i],
            link=links[i].transformed(link_poses[i]),
            link_name=f"link{i + 1}",
            limits=limits[i] if limits is not None else Limits(),
            friction=friction[i] if friction is not None else JointFriction(),
            motor=motors[i] if motors is not None else None,
        )
        for i in range(n)
    )
    tool_pose = tail @ (np.eye(4) if tool is None else np.asarray(tool, dtype=float))
    return RobotModel(
        name=name,
        joints=joints,
        gravity=np.asarray(gravity, dtype=float),
        base=np.eye(4) if base is None else np.asarray(base, dtype=float),
        tool=tool_pose,
        source=source,
        dh=table,
        named_poses={k: np.asarray(v, dtype=float) for k, v in (named_poses or {}).items()},
        tip_link="tool",
    )
