"""The name of one compiled program of the engine: which algorithm, with which switches.

A :class:`KernelKey` names a straight-line program of :mod:`._kernels` (traced in Python) and the
entry of the same program in a model's native library (:mod:`.native`); the dispatch
(:mod:`._dispatch`) picks the key for a call. Keys are built by the constructors
(:meth:`KernelKey.rnea`, :meth:`~KernelKey.inertia`, :meth:`~KernelKey.forward`,
:meth:`~KernelKey.coriolis_tensor`, :meth:`~KernelKey.inverse_friction`, :meth:`~KernelKey.momentum`,
:meth:`~KernelKey.jacobian`, :meth:`~KernelKey.observer`, :meth:`~KernelKey.frame`, :meth:`~KernelKey.task`),
which give every switch that does not apply to the algorithm its fixed value, so equal programs have
equal keys. Keys are interned — constructing a key that exists returns the existing object — so
equality is identity and a key is as cheap a dictionary index as a small integer (the dispatch's hot
path looks keys up per call).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Literal

Kind = Literal[
    "rnea", "inertia", "forward", "coriolis_tensor", "id_friction", "momentum", "jacobian", "observer", "frame", "task"
]
FrictionVariant = Literal["exact", "tanh", "linear"]
KINDS: tuple[Kind, ...] = (
    "rnea",
    "inertia",
    "forward",
    "coriolis_tensor",
    "id_friction",
    "momentum",
    "jacobian",
    "observer",
    "frame",
    "task",
)
FRICTION_VARIANTS: tuple[FrictionVariant, ...] = ("exact", "tanh", "linear")
"""Friction programs: the discontinuous model (``smooth=False``) and the two smooth direction functions."""

_FRICTION_OF: dict[str, tuple[FrictionVariant | None, ...]] = {  # the friction switch's values by kind
    "id_friction": FRICTION_VARIANTS,
    "observer": (None, *FRICTION_VARIANTS),
}
_MOTOR_KINDS = ("rnea", "inertia", "forward", "id_friction", "momentum", "observer", "task")
_interned: dict[tuple[Any, ...], KernelKey] = {}  # by field values: one object per key


@dataclass(frozen=True, slots=True, eq=False)  # eq=False: identity equality and hash (keys are interned)
class KernelKey:
    """One program: ``kind`` and its switches (the ones that do not apply are ``False`` / ``None``).

    * ``"rnea"``: Newton–Euler torques (Fu 3.3-50..58); inputs ``q`` then ``qd`` if ``velocity``,
      ``qdd`` if ``acceleration``, the tool load ``w`` (6) if ``load``; ``gravity`` includes the base
      acceleration -g; ``motor`` adds ``G^2 Jm qdd``; ``reactions`` appends the joint forces and moments.
    * ``"inertia"``: D(q), ``motor``: with ``G^2 Jm`` on the diagonal; input ``q``.
    * ``"forward"``: qdd = D^-1 (tau - h - c [- J^T w]); inputs ``q, qd, tau`` [, ``w`` if ``load``].
    * ``"coriolis_tensor"``: h_ikm (Fu 3.2-33); input ``q``.
    * ``"id_friction"``: inverse dynamics plus the model's friction program ``friction`` (one of
      :data:`FRICTION_VARIANTS`); inputs ``q, qd, qdd`` [, ``w``].
    * ``"momentum"``: the generalized momentum ``D qd`` (``motor``: D with ``G^2 Jm``) then
      ``dD/dt qd`` (:mod:`.momentum`); inputs ``q, qd``.
    * ``"jacobian"``: the tool origin's geometric Jacobian in ``F_0`` (``6 n``, row-major) then the tool
      frame's rotation (9, row-major) (:mod:`.geometric_jacobian`); input ``q``.
    * ``"observer"``: one step of the momentum observer (:mod:`.momentum_observer`, (3)) with the
      model's friction program ``friction`` (``None``: no friction); inputs ``q, qd, tau_m``, the last
      sample's ``(p, beta, r)`` (``3 n``) and ``(a, w, dt / 2)`` (``2 n + 1``); outputs ``(p, beta, r)``.
    * ``"frame"``: a frame of the chain chosen by the input ``s`` (``n + 2`` weights over ``F_0..F_n`` and
      the tool frame, :mod:`.geometric_jacobian`): its pose in ``F_0`` (4 x 4, row-major), its Jacobian
      in base axes (``6 n``, row-major) and ``Jdot qd`` (6, :mod:`.frame_acceleration`); inputs ``q, qd, s``.
    * ``"task"``: the outputs of ``"frame"`` then ``J D^-1 J^T`` (36, row-major, base axes;
      :mod:`.task_inertia`), ``motor``: D with ``G^2 Jm``; inputs ``q, qd, s``.
    """

    kind: Kind
    velocity: bool = False
    acceleration: bool = False
    gravity: bool = False
    motor: bool = False
    load: bool = False
    reactions: bool = False
    friction: FrictionVariant | None = None

    def __new__(
        cls,
        kind: Kind,
        velocity: bool = False,
        acceleration: bool = False,
        gravity: bool = False,
        motor: bool = False,
        load: bool = False,
        reactions: bool = False,
        friction: FrictionVariant | None = None,
    ) -> KernelKey:
        values = (kind, velocity, acceleration, gravity, motor, load, reactions, friction)
        if any(type(switch) is not bool for switch in values[1:7]):  # (1 == True would find True's key)
            raise TypeError(f"kernel key: the switches must be bools, got {values!r}")
        found = _interned.get(values)
        return found if found is not None else object.__new__(cls)  # (then __init__ sets equal values)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kernel kind: expected one of {KINDS}, got {self.kind!r}")
        if self.friction not in _FRICTION_OF.get(self.kind, (None,)):
            raise ValueError(f"kernel {self.kind!r}: friction variant {self.friction!r} does not apply")
        _interned.setdefault(self.as_tuple(), self)

    def as_tuple(self) -> tuple[Any, ...]:
        return (
            self.kind,
            self.velocity,
            self.acceleration,
            self.gravity,
            self.motor,
            self.load,
            self.reactions,
            self.friction,
        )

    # -- constructors (canonical, interned) --------------------------------------------------
    @staticmethod
    def rnea(
        *,
        velocity: bool = True,
        acceleration: bool = True,
        gravity: bool = True,
        motor: bool = False,
        load: bool = False,
        reactions: bool = False,
    ) -> KernelKey:
        """Newton–Euler; ``motor`` only applies with ``acceleration``."""
        return KernelKey(
            "rnea",
            velocity=bool(velocity),
            acceleration=bool(acceleration),
            gravity=bool(gravity),
            motor=bool(motor) and bool(acceleration),
            load=bool(load),
            reactions=bool(reactions),
        )

    @staticmethod
    def inertia(motor: bool) -> KernelKey:
        return KernelKey("inertia", motor=bool(motor))

    @staticmethod
    def forward(motor: bool, load: bool = False) -> KernelKey:
        return KernelKey("forward", motor=bool(motor), load=bool(load))

    @staticmethod
    def coriolis_tensor() -> KernelKey:
        return KernelKey("coriolis_tensor")

    @staticmethod
    def observer(motor: bool, variant: FrictionVariant | None) -> KernelKey:
        return KernelKey("observer", motor=bool(motor), friction=variant)

    @staticmethod
    def jacobian() -> KernelKey:
        return KernelKey("jacobian")

    @staticmethod
    def frame() -> KernelKey:
        return KernelKey("frame")

    @staticmethod
    def task(motor: bool) -> KernelKey:
        return KernelKey("task", motor=bool(motor))

    @staticmethod
    def momentum(motor: bool) -> KernelKey:
        return KernelKey("momentum", motor=bool(motor))

    @staticmethod
    def inverse_friction(motor: bool, load: bool, variant: FrictionVariant) -> KernelKey:
        return KernelKey("id_friction", motor=bool(motor), load=bool(load), friction=variant)

    # -- other forms ------------------------------------------------------------------------------
    def with_motor(self) -> KernelKey | None:
        """The same program with ``G^2 Jm`` switched on (``None`` if the switch does not apply): for a
        model without motor inertia both name one program."""
        if self.motor or self.kind not in _MOTOR_KINDS or (self.kind == "rnea" and not self.acceleration):
            return None
        return replace(self, motor=True)

    def to_json(self) -> dict[str, Any]:
        """The switches as a JSON object (the native library's ``meta.json``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> KernelKey:
        names = {f.name for f in fields(KernelKey)}
        if not isinstance(data, dict) or not set(data) <= names or "kind" not in data:
            raise ValueError(f"kernel key: expected an object with fields {sorted(names)}, got {data!r}")
        return KernelKey(**data)
