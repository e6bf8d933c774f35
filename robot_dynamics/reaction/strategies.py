"""The reactions' settings, the collision event and the report as the law reads and writes them, and the
strategies' torques, one state ``(n,)`` or a batch ``(N, n)`` (formulas: :mod:`robot_dynamics.reaction`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from robot_dynamics.control import ControlLaw, ControlSettings
from robot_dynamics.errors import StateError
from robot_dynamics.model import FloatArray
from robot_dynamics.trajectory import TrajectorySample

ReactionStrategy = Literal["none", "stop", "float", "reflex"]
REACTIONS: tuple[str, ...] = ("none", "stop", "float", "reflex")
#: The laws whose holding law is PD on a hold position with gravity compensation (``stop`` uses the law
#: in force when it is one of them, ``pd_feedforward`` otherwise).
HOLDING_LAWS = ("pd_feedforward", "computed_torque")


@dataclass(frozen=True)
class ReactionSettings:
    """The strategy and its constants (module docstring)."""

    strategy: ReactionStrategy = "none"
    float_friction: float = 0.5  # κ: share of the model's friction compensated at the measured velocity
    reflex_gain: float = 1.0  # g: reflex torque per N·m of external torque
    reflex_fraction: float = 0.2  # f: the reflex torque's bound, share of each joint's effort limit
    reflex_duration: float = 0.1  # s
    damping: float = 50.0  # K_b, 1/s: stop and float brake the arm's motion as q'' = -K_b qd would

    def __post_init__(self) -> None:
        problem = reaction_error(self)
        if problem:
            raise StateError(problem)

    @property
    def armed(self) -> bool:
        return self.strategy != "none"


def reaction_error(s: ReactionSettings) -> str | None:
    """Why ``s`` is not a valid reaction (None: it is)."""
    if s.strategy not in REACTIONS:
        return f"reaction: expected one of {list(REACTIONS)}, got {s.strategy!r}"
    checks = (
        ("float_friction", s.float_friction, 0.0 <= s.float_friction <= 1.0, "in [0, 1]"),
        ("reflex_gain", s.reflex_gain, s.reflex_gain >= 0.0, ">= 0"),
        ("reflex_fraction", s.reflex_fraction, 0.0 <= s.reflex_fraction <= 1.0, "in [0, 1]"),
        ("reflex_duration", s.reflex_duration, s.reflex_duration >= 0.0, ">= 0 s"),
        ("damping", s.damping, s.damping >= 0.0, ">= 0 1/s"),
    )
    for name, value, ok, what in checks:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not ok:
            return f"{name}: expected a finite number {what}, got {value!r}"
    return None


NO_REACTION = ReactionSettings()


@dataclass(frozen=True)
class CollisionReport:
    """A collision event as the law reads it: the stamp (ns) of the joint state where ``joint`` (model
    index; -1: none named) entered (``raised``) or left collision, its receipt on the law's clock (ns),
    whether any joint is in collision after it, and the external torque ``r`` ``(n,)`` in model order."""

    stamp: int
    received: int
    joint: int
    raised: bool
    in_collision: bool
    external_torque: FloatArray


@dataclass(frozen=True)
class ReactionRecord:
    """A reaction started (``active``) or ended: the strategy, the collision event's stamp, the stamp of
    the joint state of the reaction's first command (ended: of the state the new trajectory took
    over at), the joints in collision (model indices) and the event's external torque ``(n,)``."""

    strategy: str
    active: bool
    stamp: int  # the joint state reported on: the first command's (started), the take-over's (ended)
    collision_stamp: int
    command_stamp: int
    joints: tuple[int, ...]
    external_torque: FloatArray

    @property
    def latency(self) -> float:
        """From the collision's detection to the reaction's first command, s."""
        return (self.command_stamp - self.collision_stamp) * 1e-9


def hold_settings(s: ControlSettings) -> ControlSettings:
    """The settings ``stop`` holds with: the law in force when it has a hold position, else
    ``pd_feedforward``; friction at the hold's zero velocity, the model's feed-forward."""
    law = s.law if s.law in HOLDING_LAWS else "pd_feedforward"
    return replace(s, law=law, friction_velocity="desired", feedforward_source="model")


def braking_torque(
    law: ControlLaw, r: ReactionSettings, q: FloatArray, qd: FloatArray, gravity: FloatArray | None = None
) -> FloatArray:
    """``-K_b D(q) qd``: the torque that decelerates the arm as ``q'' = -K_b qd`` (``K_b`` = ``damping``),
    as the inverse dynamics at zero velocity with that acceleration, less gravity: ``ID(q, 0, -K_b qd) - c(q)``
    (``gravity``: ``c(q)`` when the caller has it)."""
    if r.damping == 0.0:
        return np.zeros_like(q)
    ff = law.feedforward
    zeros = np.zeros_like(q)
    c = ff.holding(q, zeros, False, True) if gravity is None else gravity
    return ff.torque(q, zeros, -r.damping * np.asarray(qd), False, True) - c


#: ``K_b L`` up to which the braking of a loop delayed by ``L`` stays well damped (package docstring).
BRAKING_DELAY_BOUND = 0.3


def braking_for_delay(delay: float) -> float:
    """The strongest braking ``K_b`` (1/s) a loop delayed ``delay`` s (> 0) keeps well damped:
    ``BRAKING_DELAY_BOUND / delay``."""
    return BRAKING_DELAY_BOUND / delay


def braking_delay_problem(r: ReactionSettings, delay: float) -> str | None:
    """Why the braking of ``r`` is too strong for a loop delayed ``delay`` s (None: it is not)."""
    if not r.armed or delay <= 0.0 or r.damping <= braking_for_delay(delay):
        return None
    return (
        f"reaction_damping {r.damping:g} 1/s x the loop's delay {delay * 1e3:g} ms = {r.damping * delay:.2g} > "
        f"{BRAKING_DELAY_BOUND}: the braking will oscillate; use at most {braking_for_delay(delay):.3g} 1/s"
    )


def stop_torque(
    law: ControlLaw, s: ControlSettings, r: ReactionSettings, q: FloatArray, qd: FloatArray, q_stop: FloatArray
) -> FloatArray:
    """``stop``: the holding law of :func:`hold_settings` at ``(q_stop, 0, 0)``, braked (:func:`braking_torque`)."""
    zeros = np.zeros_like(q)
    hold = law.torque(q, qd, TrajectorySample(np.broadcast_to(q_stop, q.shape), zeros, zeros), False, hold_settings(s))
    return hold + braking_torque(law, r, q, qd)


def float_torque(law: ControlLaw, s: ControlSettings, r: ReactionSettings, q: FloatArray, qd: FloatArray) -> FloatArray:
    """``float``: ``c(q) + κ b(qd) - K_b D(q) qd``, ``b`` the smooth friction model at the measured velocity."""
    ff = law.feedforward
    gravity = ff.holding(q, qd, False, True)
    tau = gravity + braking_torque(law, r, q, qd, gravity)
    if not (s.friction and ff.has_friction) or r.float_friction == 0.0:
        return tau
    return tau + r.float_friction * (ff.holding(q, qd, True, True) - gravity)


def reflex_torque(law: ControlLaw, r: ReactionSettings, q: FloatArray, qd: FloatArray, r0: FloatArray) -> FloatArray:
    """``reflex``: ``c(q) + clip(g r_0, ±f τ_max)`` (joints without an effort limit unclipped)."""
    bound = r.reflex_fraction * law.effort_limits
    push = np.clip(r.reflex_gain * np.asarray(r0, dtype=np.float64), -bound, bound)
    return law.feedforward.holding(q, qd, False, True) + push
