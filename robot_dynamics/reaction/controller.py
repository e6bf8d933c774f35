"""The reaction one joint state at a time: its state (triggered, reacting, re-armed) and the node's controller
(:mod:`robot_dynamics.reaction`, "Re-arming")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robot_dynamics.control import ControlLaw, Controller, ControlSettings
from robot_dynamics.feedforward import TrajectorySchedule
from robot_dynamics.model import FloatArray
from robot_dynamics.reaction.strategies import (
    NO_REACTION,
    CollisionReport,
    ReactionRecord,
    ReactionSettings,
    float_torque,
    reflex_torque,
    stop_torque,
)


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
            tau, q_d, qd_d = stop_torque(self.law, s, r, q, qd, state.hold), state.hold, self.law.zeros
        self.counters.commands += 1
        return self._limited(tau), q_d, qd_d
