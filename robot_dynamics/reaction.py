"""Reactions to a collision: what the control law commands once the arm hit something (ROS-free).

Haddadin, De Luca & Albu-Schäffer, "Robot Collisions: A Survey on Detection, Isolation, and
Identification", IEEE T-RO 33(6), 2017, split collision handling into detection, isolation,
identification, classification and **reaction**; the contact node detects (the momentum observer's
``r``, :mod:`robot_dynamics.contact`), this module reacts. A reaction is triggered by a collision
event (a joint's ``|r|`` rose above its threshold: :class:`CollisionReport`), cancels the trajectory
and commands, at every joint state from the next one on, with ``c(q)`` the gravity torque:

* ``stop``: hold the measured pose at the reaction's first joint state, ``q_s``: the law's own holding
  law at ``(q_s, 0, 0)`` — for ``pd_feedforward`` (and the laws without a hold position, ``feedforward``
  and ``pd``, which react with it) ``τ = c(q) + b(0) + Kp (q_s - q) - Kd qd``; for ``computed_torque``
  ``τ = D(q) (Kp (q_s - q) - Kd qd) + h + c + b(0)``. Friction at the hold's zero velocity (no
  compensation at rest, as the feedback laws hold; control.py, "Friction velocity").
* ``float``: ``τ = c(q) + κ b(qd)`` with ``b`` the model's smooth friction at the *measured*
  velocity and ``κ`` = ``float_friction`` (0.5 by default) — the reflex towards zero stiffness
  (Haddadin et al. §VIII, "torque control with gravity compensation"): no position feedback, so the
  arm yields to the contact. Full friction compensation at a measured velocity is a positive velocity
  feedback of slope ``dF/dv`` (up to ``F_c / w`` for a Coulomb level ``F_c`` smoothed over ``w``), which
  on a noisy velocity flips with the noise; with ``κ < 1`` the friction left, ``(1 - κ) b``, still
  opposes every motion (the loop stays passive as long as the model's friction does not exceed the
  arm's), and at rest the arm's static friction, up to ``F_c``, outweighs the ``κ F_c`` the noise can
  command: the arm neither drifts nor buzzes. ``κ = 0``: gravity compensation alone (the arm yields only
  to a force above its static friction).
* ``reflex``: ``τ = c(q) + clip(g r_0, ±f τ_max)`` for ``reflex_duration`` s, ``r_0`` the external
  torque of the collision event, ``g`` = ``reflex_gain``, ``τ_max`` the effort limits and ``f`` =
  ``reflex_fraction`` (a joint without an effort limit: ``g r_0`` unclipped): ``r ≈ τ_ext = J^T F`` is the
  torque the obstacle exerts, so a torque along it moves the arm the way the obstacle pushes — away
  (Haddadin et al. §VIII, "reflex reaction"; De Luca, Albu-Schäffer, Haddadin & Hirzinger, IROS 2006).
  Then ``stop`` at the measured pose of the first joint state after the reflex.
* ``none`` (the default): no reaction; the law is :class:`~robot_dynamics.control.Controller`'s, unchanged.

**Re-arming.** While a reaction runs, a trajectory received before the contact cleared (the latest
collision event's ``in_collision`` false) is refused; the first one received after it re-arms: the
reaction goes on (its hold) until that trajectory activates (the activation rules of
:mod:`robot_dynamics.feedforward`), and from that joint state the law tracks it. Collision events
during a reaction only tell whether the contact cleared. A reaction runs under the strategy in force
when it started.

**Reports** (:class:`ReactionRecord`): one when a reaction starts — the strategy, the collision
event's stamp (the joint state at which it was detected), the stamp of the reaction's first command
and the time between them, the joints in collision — and one when it ends (re-armed).

The node runs :class:`ReactingController` one joint state at a time (collision events in between, as
received); :func:`reaction_batch` computes the same commands for a recorded stream with its collision
events and trajectories: the reaction windows from a walk over the events and trajectories (not over
the samples), the law of :func:`~robot_dynamics.control.control_batch` elsewhere, the strategies'
torques vectorised over each window.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.control import ControlLaw, Controller, ControlSettings, control_batch
from robot_dynamics.errors import StateError
from robot_dynamics.feedforward import Feedforward, ReceivedTrajectory, TrajectorySchedule
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


# ------------------------------------------------------------------------------------------------
# the strategies' torques (one state (n,) or a batch (N, n))
# ------------------------------------------------------------------------------------------------
def hold_settings(s: ControlSettings) -> ControlSettings:
    """The settings ``stop`` holds with: the law in force when it has a hold position, else
    ``pd_feedforward``; friction at the hold's zero velocity, the model's feed-forward."""
    law = s.law if s.law in HOLDING_LAWS else "pd_feedforward"
    return replace(s, law=law, friction_velocity="desired", feedforward_source="model")


def stop_torque(law: ControlLaw, s: ControlSettings, q: FloatArray, qd: FloatArray, q_stop: FloatArray) -> FloatArray:
    """``stop``: the holding law of :func:`hold_settings` at ``(q_stop, 0, 0)``."""
    zeros = np.zeros_like(q)
    return law.torque(q, qd, TrajectorySample(np.broadcast_to(q_stop, q.shape), zeros, zeros), False, hold_settings(s))


def float_torque(law: ControlLaw, s: ControlSettings, r: ReactionSettings, q: FloatArray, qd: FloatArray) -> FloatArray:
    """``float``: ``c(q) + κ b(qd)``, the smooth friction model at the measured velocity."""
    ff = law.feedforward
    gravity = ff.holding(q, qd, False, True)
    if not (s.friction and ff.has_friction) or r.float_friction == 0.0:
        return gravity
    return gravity + r.float_friction * (ff.holding(q, qd, True, True) - gravity)


def reflex_torque(law: ControlLaw, r: ReactionSettings, q: FloatArray, qd: FloatArray, r0: FloatArray) -> FloatArray:
    """``reflex``: ``c(q) + clip(g r_0, ±f τ_max)`` (joints without an effort limit unclipped)."""
    bound = r.reflex_fraction * law.effort_limits
    push = np.clip(r.reflex_gain * np.asarray(r0, dtype=np.float64), -bound, bound)
    return law.feedforward.holding(q, qd, False, True) + push


# ------------------------------------------------------------------------------------------------
# one joint state at a time (the node)
# ------------------------------------------------------------------------------------------------
@dataclass
class ReactionCounters:
    """Collision events received, reactions started, trajectories refused while reacting."""

    events: int = 0
    reactions: int = 0
    refused: int = 0
    rearmed: int = 0


class ReactionState:
    """Where a reaction is (module docstring): ``phase`` ``""`` (armed or off), ``"pending"`` (an event
    arrived, the reaction starts at the next joint state) or ``"reacting"``."""

    def __init__(self, settings: ReactionSettings, n: int) -> None:
        self.settings = settings
        self.n = n
        self.phase = ""
        self.strategy = "none"  # of the reaction in progress
        self.trigger: CollisionReport | None = None
        self.in_contact = [False] * n  # per joint, as the events say
        self.in_collision = False  # the latest event's
        self.rearm = False  # a trajectory after the clear was accepted
        self.start_stamp = 0
        self.joints: tuple[int, ...] = ()
        self.hold: FloatArray | None = None
        self.reports: list[ReactionRecord] = []
        self.counters = ReactionCounters()

    @property
    def engaged(self) -> bool:
        return self.phase != ""

    def on_collision(self, event: CollisionReport) -> None:
        """A collision event, as received (between joint states)."""
        self.counters.events += 1
        if 0 <= event.joint < self.n:
            self.in_contact[event.joint] = event.raised
        self.in_collision = event.in_collision
        if self.phase == "" and event.raised and self.settings.armed:
            self.phase, self.strategy, self.trigger, self.rearm = "pending", self.settings.strategy, event, False
        elif self.phase == "pending" and event.raised:
            self.trigger = event  # the newest external torque before the reaction starts

    def trajectory_problem(self) -> str | None:
        """Why a trajectory received now is refused (None: accepted); call :meth:`accepted` if it is."""
        if self.engaged and self.in_collision:
            return f"reacting to a collision ({self.strategy}): a new trajectory is taken once the contact clears"
        return None

    def accepted(self) -> None:
        """A trajectory was accepted: during a reaction (the contact cleared) it re-arms."""
        if self.engaged:
            self.rearm = True

    def begin(self, stamp: int) -> None:
        """The reaction starts at the joint state stamped ``stamp``."""
        trigger = self.trigger
        assert trigger is not None
        self.phase, self.start_stamp, self.hold = "reacting", stamp, None
        self.joints = tuple(j for j, c in enumerate(self.in_contact) if c)
        self.counters.reactions += 1
        self.reports.append(
            ReactionRecord(self.strategy, True, stamp, trigger.stamp, stamp, self.joints, trigger.external_torque)
        )

    def end(self, stamp: int) -> None:
        """The reaction ends at the joint state stamped ``stamp`` (the re-arming trajectory took over)."""
        trigger = self.trigger
        assert trigger is not None
        self.reports.append(
            ReactionRecord(
                self.strategy, False, stamp, trigger.stamp, self.start_stamp, self.joints, trigger.external_torque
            )
        )
        self.counters.rearmed += 1
        self.phase, self.strategy, self.trigger, self.rearm, self.hold = "", "none", None, False, None

    def in_reflex(self, stamp: int) -> bool:
        """Whether the joint state stamped ``stamp`` is within the reflex."""
        return self.strategy == "reflex" and stamp - self.start_stamp < round(self.settings.reflex_duration * 1e9)


class ReactingController(Controller):
    """:class:`~robot_dynamics.control.Controller` with a reaction (module docstring): while no reaction
    is engaged :meth:`step` is the controller's own."""

    def __init__(self, law: ControlLaw, settings: ControlSettings, reaction: ReactionSettings = NO_REACTION) -> None:
        super().__init__(law, settings)
        self.reaction = ReactionState(reaction, law.model.dof)

    def collision(self, event: CollisionReport) -> None:
        self.reaction.on_collision(event)

    def step(
        self, schedule: TrajectorySchedule, stamp: int, now: int, q: FloatArray, qd: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray, bool]:
        state = self.reaction
        if not state.engaged:
            return super().step(schedule, stamp, now, q, qd)
        if state.phase == "pending":
            schedule.cancel()
            state.begin(stamp)
        elif state.rearm and schedule.pending is not None and stamp >= schedule.pending[1]:
            state.end(stamp)
            self.release_hold()
            return super().step(schedule, stamp, now, q, qd)
        tau, q_d, qd_d = self._react(stamp, now, q, qd)
        return tau, q_d, qd_d, False

    def _react(self, stamp: int, now: int, q: FloatArray, qd: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        state, s, r = self.reaction, self.settings, self.reaction.settings
        self.last_received, self.last_position, self.stale = now, q, False
        trigger = state.trigger
        assert trigger is not None
        if state.strategy == "float":
            tau, q_d, qd_d = float_torque(self.law, s, r, q, qd), q, qd
        elif state.in_reflex(stamp):
            tau, q_d, qd_d = reflex_torque(self.law, r, q, qd, trigger.external_torque), q, qd
        else:
            if state.hold is None:
                state.hold = np.array(q)
            tau, q_d, qd_d = stop_torque(self.law, s, q, qd, state.hold), state.hold, self.law.zeros
        self.counters.commands += 1
        return self._limited(tau), q_d, qd_d


# ------------------------------------------------------------------------------------------------
# a whole stream at once (offline replay of a run)
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReactionWindow:
    """Rows ``[first, stop)`` of a stream under one reaction of ``strategy``, triggered by ``trigger``."""

    strategy: str
    first: int
    stop: int
    trigger: CollisionReport
    joints: tuple[int, ...]


@dataclass(frozen=True)
class ReactionReplay:
    """What :func:`reaction_batch` found: the commands, the windows, the reports and the trajectories
    the node kept (indices, receive order)."""

    commands: Feedforward
    windows: list[ReactionWindow] = field(default_factory=list)
    reports: list[ReactionRecord] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)


def _activation(receive_times: NDArray[np.int64], stamps: NDArray[np.int64], received: int, start: int) -> int | None:
    """The first joint state received after ``received`` whose stamp reaches ``start`` (rule 2), or None."""
    eligible = (receive_times > received) & (stamps >= start)
    return int(np.argmax(eligible)) if eligible.any() else None


def reaction_windows(
    settings: ReactionSettings,
    receive_times: NDArray[np.int64],
    stamps: NDArray[np.int64],
    trajectories: Sequence[ReceivedTrajectory],
    collisions: Sequence[CollisionReport],
    n: int,
) -> tuple[list[ReactionWindow], list[int]]:
    """The reactions of a stream and the trajectories the node keeps (indices), by a walk over the
    events and trajectories in receive order (a joint state received at the same time as an event or a
    trajectory comes first, as :func:`~robot_dynamics.feedforward.active_segments` orders them). A
    trajectory accepted between a collision event and the reaction's first state is cancelled there and
    not kept."""
    items = sorted(
        [(ev.received, 0, k) for k, ev in enumerate(collisions)]
        + [(tr.timestamp, 1, k) for k, tr in enumerate(trajectories) if not tr.ended_before_receipt]
    )
    state = ReactionState(settings, n)
    windows: list[ReactionWindow] = []
    kept: list[int] = []
    first = 0
    rearm: int | None = None  # the row at which the re-arming trajectory activates

    def advance(until: int) -> None:
        """The joint states received up to ``until``: a pending reaction starts, a re-armed one ends."""
        nonlocal first, rearm
        trigger = state.trigger
        if state.phase == "pending" and trigger is not None:
            row = _activation(receive_times, stamps, trigger.received, 0)
            if row is None or receive_times[row] > until:
                return
            first = row
            state.begin(int(stamps[row]))
        if state.phase == "reacting" and rearm is not None and receive_times[rearm] <= until:
            windows.append(ReactionWindow(state.strategy, first, rearm, state.trigger, state.joints))  # type: ignore[arg-type]
            state.end(int(stamps[rearm]))
            rearm = None

    for time_ns, kind, k in items:
        advance(time_ns)
        if kind == 0:
            state.on_collision(collisions[k])
            continue
        if state.trajectory_problem() is not None:
            continue  # refused
        if state.phase == "pending":
            continue  # accepted, cancelled at the reaction's first state
        kept.append(k)
        if state.phase == "reacting":
            tr = trajectories[k]
            rearm = _activation(receive_times, stamps, tr.timestamp, tr.start)
    advance(int(np.iinfo(np.int64).max))
    if state.phase == "reacting" and state.trigger is not None:
        windows.append(ReactionWindow(state.strategy, first, len(stamps), state.trigger, state.joints))
    return windows, kept


def reaction_batch(
    law: ControlLaw,
    settings: ControlSettings,
    reaction: ReactionSettings,
    receive_times: NDArray[np.int64],
    stamps: NDArray[np.int64],
    q: FloatArray,
    qd: FloatArray,
    trajectories: Sequence[ReceivedTrajectory] = (),
    collisions: Sequence[CollisionReport] = (),
) -> ReactionReplay:
    """What :class:`ReactingController` commands for these joint states (receive order) with these
    collision events and trajectories, computed at once (the arrays of :func:`~robot_dynamics.control.
    control_batch`; ``collisions`` with their receive times on the same clock)."""
    n = law.model.dof
    windows, kept = reaction_windows(reaction, receive_times, stamps, trajectories, collisions, n)
    base = control_batch(law, settings, receive_times, stamps, q, qd, [trajectories[k] for k in kept])
    tau, position, velocity, tracking = base.effort, base.position, base.velocity, base.tracking
    reports: list[ReactionRecord] = []
    for w in windows:
        rows = np.arange(w.first, w.stop)
        tracking[rows] = False
        start = int(stamps[w.first])
        torque = w.trigger.external_torque
        reports.append(ReactionRecord(w.strategy, True, start, w.trigger.stamp, start, w.joints, torque))
        if w.stop < len(stamps):
            end = int(stamps[w.stop])
            reports.append(ReactionRecord(w.strategy, False, end, w.trigger.stamp, start, w.joints, torque))
        if w.strategy == "float":
            tau[rows] = float_torque(law, settings, reaction, q[rows], qd[rows])
            position[rows], velocity[rows] = q[rows], qd[rows]
            continue
        reflex = rows[:0]
        if w.strategy == "reflex":
            reflex = rows[stamps[rows] - start < round(reaction.reflex_duration * 1e9)]
            tau[reflex] = reflex_torque(law, reaction, q[reflex], qd[reflex], w.trigger.external_torque)
            position[reflex], velocity[reflex] = q[reflex], qd[reflex]
        held = rows[reflex.size :]
        if held.size:
            tau[held] = stop_torque(law, settings, q[held], qd[held], q[held[0]])
            position[held], velocity[held] = q[held[0]], 0.0
    if settings.limit_efforts and law.limited and windows:
        tau = law.clamp(tau)[0]
    return ReactionReplay(Feedforward(tau, position, velocity, tracking), windows, reports, kept)


__all__ = [
    "NO_REACTION",
    "REACTIONS",
    "CollisionReport",
    "ReactingController",
    "ReactionRecord",
    "ReactionReplay",
    "ReactionSettings",
    "ReactionState",
    "ReactionWindow",
    "float_torque",
    "reaction_batch",
    "reaction_error",
    "reflex_torque",
    "stop_torque",
]
