"""The reaction over a recorded stream, all at once: the windows from a walk over the collision events and
trajectories (not over the samples), the law of :func:`~robot_dynamics.control.control_batch` elsewhere,
the strategies' torques vectorised over each window (:mod:`robot_dynamics.reaction`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.control import ControlLaw, ControlSettings, control_batch
from robot_dynamics.feedforward import Feedforward, ReceivedTrajectory
from robot_dynamics.model import FloatArray
from robot_dynamics.reaction.controller import ReactionState
from robot_dynamics.reaction.strategies import (
    CollisionReport,
    ReactionRecord,
    ReactionSettings,
    float_torque,
    reflex_torque,
    stop_torque,
)


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
            tau[held] = stop_torque(law, settings, reaction, q[held], qd[held], q[held[0]])
            position[held], velocity[held] = q[held[0]], 0.0
    if settings.limit_efforts and law.limited and windows:
        tau = law.clamp(tau)[0]
    return ReactionReplay(Feedforward(tau, position, velocity, tracking), windows, reports, kept)
