"""The control law of the feed-forward node (ROS-free; one state ``(n,)`` or a batch ``(N, n)``).

With the desired state ``q_d, qd_d, qdd_d`` (a trajectory sampled by the activation rules of
:mod:`robot_dynamics.feedforward`, or the hold position at rest), the measured ``q, qd``, the errors
``e = q_d - q``, ``ė = qd_d - qd`` and diagonal gains ``Kp``, ``Kd`` (one per joint, ``>= 0``):

* ``feedforward``: ``τ = τ_ff`` — the feed-forward law alone (:class:`~robot_dynamics.feedforward.
  FeedforwardLaw`): inverse dynamics at the desired state while tracking, ``c(q) + b(qd)`` at the
  measured state while holding, friction as its options say;
* ``pd``: ``τ = Kp e + Kd ė`` — PD control alone, no model (Siciliano et al. §8.5.1 without the
  gravity term): the baseline a model-based law is measured against. At rest the arm sags under
  gravity until ``Kp e`` carries it;
* ``pd_feedforward``: ``τ = τ_ff + Kp e + Kd ė`` — PD feedback around the same feed-forward (PD
  control with gravity compensation when holding; Siciliano, Sciavicco, Villani & Oriolo, *Robotics:
  Modelling, Planning and Control*, 2009, §8.5.1). ``Kp`` in N·m/rad (N/m), ``Kd`` in N·m·s/rad;
  with zero gains it is ``feedforward`` to the bit while tracking;
* ``computed_torque``: ``τ = D(q) (qdd_d + Kp e + Kd ė) + h(q, qd) + c(q) + b`` — inverse
  dynamics control (Fu, Gonzalez & Lee §5.3.1, "computed torque technique"; Siciliano et al. §8.5.2):
  the Newton–Euler inverse dynamics at the *measured* state with the commanded acceleration
  ``v = qdd_d + Kp e + Kd ė`` (one recursion; ``D v + h + c`` is never formed), plus friction ``b``
  loaded by that torque (the friction options ``friction``/``smooth_friction`` apply). ``Kp`` in 1/s²,
  ``Kd`` in 1/s: each joint's error obeys ``ë + Kd ė + Kp e = 0`` when the model is exact.

**Friction velocity** (``friction_velocity``): the velocity the friction compensation is evaluated at.
``desired`` (the default): the desired velocity of the law's desired state — the trajectory's while
tracking, and while holding zero for the laws with a hold position (``pd_feedforward``,
``computed_torque``: no friction compensation at rest) and the measured one for ``feedforward`` (whose
holding law has no desired state but the measured one: gravity + friction compensation). ``measured``:
the measured velocity in every law and phase. Friction compensated at a *measured* velocity is a
velocity feedback of slope ``dF/dv`` — for a Coulomb friction ``F_c`` smoothed over a width ``w``, up to
``F_c / w`` — with the sign that *adds* to the motion: on a noisy or quantized velocity whose noise
reaches ``w`` it flips with the noise, and once that slope exceeds ``Kd`` the loop's damping is gone (a
real arm buzzes at standstill). The feedback laws therefore take it at the desired velocity unless told
otherwise.

**Feed-forward source** (``feedforward_source``): ``model`` (the default), ``τ_ff`` as above; or
``trajectory``: while tracking, ``τ_ff`` is the trajectory's own efforts (``JointTrajectoryPoint.effort``,
interpolated linearly between the points: :class:`~robot_dynamics.trajectory.JointTrajectorySampler`)
for a planner that computes them, or an experiment that feeds a plant's own inverse dynamics; a
trajectory without efforts, and holding, use the model. It applies to ``feedforward`` and
``pd_feedforward``; ``computed_torque`` is the model at the measured state, ``pd`` has no feed-forward.

**Holding** (no active trajectory): the desired state is ``(q_hold, 0, 0)``. ``q_hold`` is fixed when a
hold begins: the last point of the trajectory that just finished (the goal, as ros2_controllers'
joint_trajectory_controller holds it), or the measured position at the first joint state (start-up,
after a cancelled trajectory, after a stale episode).

**Delays** (``measurement_delay``, ``command_delay``, s): a real arm's joint state is a measurement
taken ``measurement_delay`` before the stamp its driver gives it (one or more control cycles: the driver
stamps what it publishes, not when the encoders were read), and a command acts ``command_delay`` after it
is computed. The law then compares the measurement with the desired state *of the measurement's time*,
``e = q_d(t - L_m) - q``, ``ė = qd_d(t - L_m) - qd`` — a perfectly tracking arm shows no error, where
comparing with ``q_d(t)`` would read ``qd · L_m`` as one and push against it — and the feed-forward
anticipates the time the command acts: ``τ_ff`` (and ``computed_torque``'s ``qdd_d``) at ``t + L_c``. A
trajectory is sampled outside its span at its first or last point at rest; activation and the end of a
trajectory follow the stamps as without delays. Both zero (the default): one desired state, as before.

**Effort limits**: the command is clamped to ``±`` the robot file's effort limit of each joint (joints
without one are not limited); every clamped command and joint is counted.

**Stale state** (:class:`Controller`): when ``state_timeout > 0`` s and no joint state was received for
that long (the node's clock: simulated time under ``use_sim_time``), the command stops: ``zero``
torque, or ``hold``: the holding law at the last measured position at rest, ``c(q) + b(0)``, without
feedback on a stale measurement. The first fresh joint state resumes the law (a new hold begins there).

The node runs :class:`Controller` one joint state at a time; :func:`control_batch` computes the same
commands for a whole recorded stream (the activation rules of :func:`~robot_dynamics.feedforward.
active_segments`, vectorised over the samples).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.errors import StateError
from robot_dynamics.feedforward import (
    Feedforward,
    FeedforwardLaw,
    FrictionVelocity,
    ReceivedTrajectory,
    TrajectorySchedule,
    active_segments,
)
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.trajectory import TrajectorySample

ControlLawName = Literal["feedforward", "pd", "pd_feedforward", "computed_torque"]
StaleAction = Literal["zero", "hold"]
FeedforwardSource = Literal["model", "trajectory"]
CONTROL_LAWS: tuple[str, ...] = ("feedforward", "pd", "pd_feedforward", "computed_torque")
STALE_ACTIONS: tuple[str, ...] = ("zero", "hold")
FEEDFORWARD_SOURCES: tuple[str, ...] = ("model", "trajectory")


@dataclass(frozen=True)
class ControlSettings:
    """Everything the law reads besides the state: the law, gains ``(n,)``, friction options, limits."""

    law: ControlLawName = "feedforward"
    kp: FloatArray | None = None  # None: zeros
    kd: FloatArray | None = None
    friction: bool = True
    smooth: bool = True
    friction_velocity: FrictionVelocity = "desired"
    feedforward_source: FeedforwardSource = "model"
    limit_efforts: bool = False
    state_timeout: float = 0.0  # s; 0 = never stale
    stale_action: StaleAction = "zero"
    measurement_delay: float = 0.0  # s, age of a joint state's measurement at its stamp
    command_delay: float = 0.0  # s, from a command's computation to its action

    @property
    def delayed(self) -> bool:
        return self.measurement_delay > 0.0 or self.command_delay > 0.0


# ------------------------------------------------------------------------------------------------
# the law
# ------------------------------------------------------------------------------------------------
class ControlLaw:
    """The laws of the module docstring for ``model``, one state or a batch, and the clamp."""

    def __init__(self, model: RobotModel, feedforward: FeedforwardLaw | None = None) -> None:
        self.model = model
        self.feedforward = feedforward if feedforward is not None else FeedforwardLaw(model)
        self.zeros = self.feedforward.zeros
        limits = np.array([j.limits.effort for j in model.joints], dtype=np.float64)
        self.effort_limits: FloatArray = limits
        self.limited = bool(np.isfinite(limits).any())

    def feedforward_torque(
        self,
        q: FloatArray,
        qd: FloatArray,
        desired: TrajectorySample,
        tracking: bool | NDArray[np.bool_],
        s: ControlSettings,
    ) -> FloatArray:
        """``τ_ff``: the tracking law at ``desired`` where ``tracking``, the holding law at ``q, qd`` elsewhere;
        the trajectory's efforts instead of the tracking law with ``feedforward_source: trajectory``."""
        ff, measured = self.feedforward, s.friction_velocity == "measured"
        planned = desired.efforts if s.feedforward_source == "trajectory" else None
        # holding: friction at the hold's desired velocity (zero) unless measured, or for the law without one
        at_rest = desired.velocities if not measured and s.law != "feedforward" else qd
        if isinstance(tracking, (bool, np.bool_)):
            if tracking and planned is not None:
                return np.array(planned)
            if tracking:
                return ff.tracking(
                    desired.positions, desired.velocities, desired.accelerations, s.friction, s.smooth,
                    qd if measured else None,
                )  # fmt: skip
            return ff.holding(q, at_rest, s.friction, s.smooth)
        tau = np.empty_like(q)
        on, off = np.flatnonzero(tracking), np.flatnonzero(~tracking)
        tau[on] = ff.tracking(
            desired.positions[on], desired.velocities[on], desired.accelerations[on], s.friction, s.smooth,
            qd[on] if measured else None,
        )  # fmt: skip
        tau[off] = ff.holding(q[off], at_rest[off], s.friction, s.smooth)
        if planned is not None:  # rows whose trajectory has efforts (NaN rows: it has none)
            given = tracking & np.isfinite(planned).all(axis=1)
            tau[given] = planned[given]
        return tau

    def torque(
        self,
        q: FloatArray,
        qd: FloatArray,
        desired: TrajectorySample,
        tracking: bool | NDArray[np.bool_],
        s: ControlSettings,
        reference: TrajectorySample | None = None,
    ) -> FloatArray:
        """The command of law ``s.law`` (not clamped). ``desired``: the feed-forward's desired state;
        ``reference``: the one the feedback compares the measurement with (None: ``desired``; module
        docstring, delays)."""
        if s.law == "feedforward":
            return self.feedforward_torque(q, qd, desired, tracking, s)
        kp = self.zeros if s.kp is None else s.kp
        kd = self.zeros if s.kd is None else s.kd
        ref = desired if reference is None else reference
        feedback = kp * (ref.positions - q) + kd * (ref.velocities - qd)
        if s.law == "pd":
            return feedback
        if s.law == "pd_feedforward":
            return self.feedforward_torque(q, qd, desired, tracking, s) + feedback
        if s.law == "computed_torque":  # D(q) v + h(q, qd) + c(q) + b: Newton–Euler at the measured state
            velocity = qd if s.friction_velocity == "measured" else desired.velocities
            return self.feedforward.torque(q, qd, desired.accelerations + feedback, s.friction, s.smooth, velocity)
        raise StateError(f"unknown control law {s.law!r} (expected one of {list(CONTROL_LAWS)})")

    def clamp(self, tau: FloatArray) -> tuple[FloatArray, NDArray[np.bool_]]:
        """``tau`` limited to ``±`` the effort limits, and where it was over them."""
        limit = self.effort_limits
        over = (tau > limit) | (tau < -limit)
        if not over.any():
            return tau, over
        return np.minimum(np.maximum(tau, -limit), limit), over


# ------------------------------------------------------------------------------------------------
# one joint state at a time (the node)
# ------------------------------------------------------------------------------------------------
@dataclass
class ControlCounters:
    """What the controller did: clamped commands and joints, stale episodes and stop commands."""

    commands: int = 0
    clamped_commands: int = 0
    clamped_joints: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    stale_events: int = 0
    stale_commands: int = 0


class Controller:
    """The law with its state, one joint state at a time: the hold position, limits, the stale rule.

    ``settings`` may be replaced at any time (the next call reads it). Times are ns of one clock (the
    node's): :meth:`command` at each joint state's receipt, :meth:`stale_command` from a watchdog.
    """

    def __init__(self, law: ControlLaw, settings: ControlSettings) -> None:
        self.law = law
        self.settings = settings
        self.hold: FloatArray | None = None  # q_hold, fixed when a hold begins
        self._hold_sample: TrajectorySample | None = None  # (q_hold, 0, 0)
        self.last_received: int | None = None  # ns, receipt of the newest joint state
        self.last_position: FloatArray | None = None
        self.stale = False
        self.counters = ControlCounters(clamped_joints=np.zeros(law.model.dof, dtype=np.int64))

    def release_hold(self) -> None:
        """A new hold begins at the next holding joint state (after a cancelled trajectory)."""
        self.hold = None

    def step(
        self, schedule: TrajectorySchedule, stamp: int, now: int, q: FloatArray, qd: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray, bool]:
        """The command for a joint state stamped ``stamp`` and received at ``now`` (ns), the trajectory
        taken from ``schedule`` (its activation rules run at ``stamp``; with delays the desired states of
        the module docstring sampled from it): ``(τ, q_d, qd_d, finished)``, ``finished`` whether the
        active trajectory finished at this joint state (the node holds from its last point)."""
        s = self.settings
        desired, finished = schedule.step(stamp, q, qd)
        reference = None
        if desired is not None and s.delayed:
            ahead = schedule.sample(stamp + round(s.command_delay * 1e9))
            reference = schedule.sample(stamp - round(s.measurement_delay * 1e9))
            desired = ahead if ahead is not None else desired
        tau, q_d, qd_d = self.command(now, q, qd, desired, schedule.ended if finished else None, reference)
        return tau, q_d, qd_d, finished

    def command(
        self,
        now: int,
        q: FloatArray,
        qd: FloatArray,
        desired: TrajectorySample | None,
        ended: FloatArray | None = None,
        reference: TrajectorySample | None = None,
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """The command for a joint state received at ``now``: ``(τ, q_d, qd_d)``, ``q_d, qd_d`` the desired
        state the measurement was compared with.

        ``desired``: the trajectory's desired state, or None to hold; ``reference``: the desired state the
        feedback compares with when it differs from ``desired`` (delays); ``ended``: the last point of a
        trajectory that finished at this joint state (the new hold position).
        """
        s = self.settings
        self.last_received, self.last_position = now, q
        if self.stale:  # fresh again: a new hold begins here
            self.stale, self.hold = False, None
        if desired is not None:
            self.hold = None
            tau = self.law.torque(q, qd, desired, True, s, reference)
            ref = desired if reference is None else reference
            q_d, qd_d = ref.positions, ref.velocities
        else:
            if ended is not None or self.hold is None:
                self.hold = np.array(q if ended is None else ended)  # its own copy: kept for the whole hold
                self._hold_sample = TrajectorySample(self.hold, self.law.zeros, self.law.zeros)
            if s.law == "feedforward":  # no desired state needed: today's holding law
                tau = self.law.feedforward.holding(q, qd, s.friction, s.smooth)
                q_d, qd_d = q, qd
            else:
                hold = self._hold_sample
                assert hold is not None
                tau = self.law.torque(q, qd, hold, False, s)
                q_d, qd_d = hold.positions, hold.velocities
        self.counters.commands += 1
        return self._limited(tau), q_d, qd_d

    def stale_command(self, now: int) -> FloatArray | None:
        """The stop command when the newest joint state is older than ``state_timeout`` (else None).

        Counts a stale event when the state turns stale and every stop command returned.
        """
        s, last = self.settings, self.last_received
        if s.state_timeout <= 0.0 or last is None or (now - last) * 1e-9 <= s.state_timeout:
            return None
        if not self.stale:
            self.stale = True
            self.counters.stale_events += 1
        self.counters.stale_commands += 1
        if s.stale_action == "zero" or self.last_position is None:
            return np.zeros(self.law.model.dof)
        zeros = self.law.zeros
        return self._limited(self.law.feedforward.holding(self.last_position, zeros, s.friction, s.smooth))

    def _limited(self, tau: FloatArray) -> FloatArray:
        if not (self.settings.limit_efforts and self.law.limited):
            return tau
        tau, over = self.law.clamp(tau)
        if over.any():
            self.counters.clamped_commands += 1
            self.counters.clamped_joints += over
        return tau


# ------------------------------------------------------------------------------------------------
# a whole stream at once (offline replay of a run)
# ------------------------------------------------------------------------------------------------
def control_batch(
    law: ControlLaw,
    settings: ControlSettings,
    receive_times: NDArray[np.int64],
    stamps: NDArray[np.int64],
    q: FloatArray,
    qd: FloatArray,
    trajectories: Sequence[ReceivedTrajectory] = (),
) -> Feedforward:
    """What :class:`Controller` commands for these joint states (receive order), computed at once.

    The arrays are those of :func:`~robot_dynamics.feedforward.active_segments`; ``position`` and
    ``velocity`` of the result are the desired state used (the hold position at rest; for
    ``feedforward`` while holding, the measured state, as the node publishes). No stale episodes:
    every joint state of the stream is taken as fresh.
    """
    n_msgs, n = q.shape
    planned = np.full((n_msgs, n), np.nan) if settings.feedforward_source == "trajectory" else None
    desired = TrajectorySample(q.copy(), np.zeros((n_msgs, n)), np.zeros((n_msgs, n)), planned)
    reference = TrajectorySample(desired.positions.copy(), desired.velocities.copy(), desired.accelerations)
    tracking = np.zeros(n_msgs, dtype=bool)
    hold_from: dict[int, FloatArray] = {0: q[0]} if n_msgs else {}  # first holding row -> q_hold
    for seg in active_segments(law.model.joint_names, receive_times, stamps, q, qd, trajectories):
        rows = seg.rows
        ahead, behind = seg.desired, seg.desired
        if settings.delayed and rows.size:
            t = (stamps[rows] - seg.start) * 1e-9
            ahead = seg.sampler.sample_many(t + round(settings.command_delay * 1e9) * 1e-9)
            behind = seg.sampler.sample_many(t - round(settings.measurement_delay * 1e9) * 1e-9)
        desired.positions[rows] = ahead.positions
        desired.velocities[rows] = ahead.velocities
        desired.accelerations[rows] = ahead.accelerations
        reference.positions[rows] = behind.positions
        reference.velocities[rows] = behind.velocities
        if planned is not None and ahead.efforts is not None:
            planned[rows] = ahead.efforts
        tracking[rows] = True
        if seg.finished_at is not None:
            hold_from[seg.finished_at] = seg.end_position
    hold = ~tracking
    if settings.law != "feedforward" and hold.any():
        starts = hold & ~np.concatenate(([False], hold[:-1]))  # a hold begins after tracking...
        starts[list(hold_from)] = True  # ... and where a trajectory finished (even one active at no row)
        starts &= hold
        run_start, run_id = np.flatnonzero(starts), np.cumsum(starts) - 1
        anchors = np.array([hold_from.get(int(r), q[r]) for r in run_start])
        desired.positions[hold] = reference.positions[hold] = anchors[run_id[hold]]
    tau = law.torque(q, qd, desired, tracking, settings, reference)
    if settings.limit_efforts and law.limited:
        tau = law.clamp(tau)[0]
    position, velocity = reference.positions, reference.velocities
    if settings.law == "feedforward":
        position[hold], velocity[hold] = q[hold], qd[hold]
    return Feedforward(tau, position, velocity, tracking)
