"""The feed-forward torque law and its trajectory activation rules (ROS-free; one state or a batch).

The feed-forward node (:mod:`robot_dynamics.ros.feedforward_node`), the dynamics service's
gravity-compensation torque law (:mod:`robot_dynamics.ros.service_node`) and the offline bag
evaluation (:func:`robot_dynamics.bag.evaluate.feedforward_torques`) all compute their torques here.

**The law** (:class:`FeedforwardLaw`), for a state ``(n,)`` or a batch ``(N, n)``:

* tracking a trajectory: the inverse dynamics (Newton–Euler, Fu, Gonzalez & Lee eq. 3.3-50..58, plus
  motor inertia) at the desired ``q, qd, qdd``, plus friction either at the desired velocity (the
  engine's ``inverse_dynamics(..., friction=True)``) or at the measured velocity (frictionless
  inverse dynamics plus the friction terms at that velocity, loaded by the same state's joint torque
  and, for bearing friction, joint reactions);
* holding: gravity + friction compensation at the measured state, ``c(q) + b(qd)``, the friction
  loaded by the static torque ``c(q)`` (and the static joint reactions).

**The activation rules**, the same for a live node and for a bag replayed offline, in the order the
joint states and trajectories are received:

1. a trajectory starts at its ``header.stamp``, or when it is received if the stamp is zero; one
   whose last point lies before its receipt is refused;
2. it becomes active at the first joint state received after it whose stamp reaches its start,
   unless a newer trajectory was received before that joint state (the newer one replaces it while
   it is pending); a trajectory whose first point is after ``t = 0`` then starts from the joint
   state's measured position and velocity (ROS semantics);
3. while ``0 <= stamp - start <= duration`` the torque is the tracking law at the desired state
   sampled at the joint state's stamp; afterwards (and before any trajectory) the holding law;
4. a trajectory with no points cancels the active and the pending one (the node holds again).

The live node applies them one joint state at a time (:class:`TrajectorySchedule`); a bag is
evaluated for all its joint states at once (:func:`active_segments`, :func:`tracking_segments`,
:func:`feedforward_batch`: vectorised over the samples, a loop over the trajectories only). The
control law around this feed-forward (PD, computed torque, limits) is :mod:`robot_dynamics.control`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.dynamics import gravity_torques, inverse_dynamics, rnea_with_reactions
from robot_dynamics.dynamics._friction_trace import friction_kernel
from robot_dynamics.errors import StateError
from robot_dynamics.friction import friction_parameters, friction_total, needs_reactions
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.trajectory import JointTrajectorySampler, TrajectorySample

FrictionVelocity = Literal["desired", "measured"]
FRICTION_VELOCITY_CHOICES: tuple[str, ...] = ("desired", "measured")
IndexArray = NDArray[np.intp]


class FeedforwardLaw:
    """The feed-forward torque law for ``model``: states ``(n,)`` (one joint state) or ``(N, n)``.

    ``torque(q, qd, qdd, friction, smooth, friction_velocity)``: with ``friction_velocity=None`` this
    is ``inverse_dynamics(q, qd, qdd, friction=friction, smooth=smooth)``; otherwise the frictionless
    ``inverse_dynamics(q, qd, qdd, friction=False)`` plus the engine's friction
    (:func:`~robot_dynamics.friction.friction_total`) at ``friction_velocity`` with the joint torque
    (and, for bearing friction, the joint reactions) of the same state. One state runs the friction
    law traced alone (``dynamics._friction_trace.friction_kernel``), a batch the NumPy reference.
    """

    def __init__(self, model: RobotModel) -> None:
        self.model = model
        self.zeros = np.zeros(model.dof)
        self.zeros.setflags(write=False)
        self.has_friction = model.has_friction
        self.needs_reactions = self.has_friction and needs_reactions(model)

    def _empty(self, q: FloatArray) -> FloatArray | None:
        """The result of an empty batch ``(0, n)`` (the engine needs at least one state)."""
        shape = q.shape if type(q) is np.ndarray else np.shape(q)
        return np.zeros((0, self.model.dof)) if len(shape) == 2 and shape[0] == 0 else None

    def _with_friction(
        self, velocity: FloatArray, tau_joint: FloatArray, q: FloatArray, qd: FloatArray, qdd: FloatArray, smooth: bool
    ) -> FloatArray:
        """``tau_joint`` plus the friction at ``velocity`` (reactions, if any, of the state q, qd, qdd)."""
        force = moment = None
        if self.needs_reactions:
            _, force, moment = rnea_with_reactions(self.model, q, qd, qdd)
        if velocity.ndim == 1:  # one state: the friction law traced alone (a tenth of it run on floats)
            kernel = friction_kernel(friction_parameters(self.model), "tanh" if smooth else "exact")
            groups = [velocity.tolist(), tau_joint.tolist()]
            if force is not None and moment is not None:
                groups += [np.ravel(force).tolist(), np.ravel(moment).tolist()]
            return np.array(kernel.scalar(*groups))
        return tau_joint + friction_total(self.model, velocity, tau_joint, force, moment, smooth=smooth)

    def torque(
        self,
        q: FloatArray,
        qd: FloatArray,
        qdd: FloatArray,
        friction: bool,
        smooth: bool,
        friction_velocity: FloatArray | None = None,
    ) -> FloatArray:
        empty = self._empty(q)
        if empty is not None:
            return empty
        model = self.model
        if not (friction and self.has_friction):
            return np.asarray(inverse_dynamics(model, q, qd, qdd, friction=False), dtype=np.float64)
        if friction_velocity is None:
            return np.asarray(inverse_dynamics(model, q, qd, qdd, friction=True, smooth=smooth), dtype=np.float64)
        tau_joint = np.asarray(inverse_dynamics(model, q, qd, qdd, friction=False), dtype=np.float64)
        return self._with_friction(friction_velocity, tau_joint, q, qd, qdd, smooth)

    def holding(self, q: FloatArray, qd: FloatArray, friction: bool, smooth: bool) -> FloatArray:
        """Gravity + friction compensation at the measured state: ``c(q) + b(qd)``."""
        empty = self._empty(q)
        if empty is not None:
            return empty
        c = np.asarray(gravity_torques(self.model, q), dtype=np.float64)
        if not (friction and self.has_friction):
            return c
        zeros = self.zeros if c.ndim == 1 else np.zeros_like(c)
        return self._with_friction(qd, c, q, zeros, zeros, smooth)

    def tracking(
        self,
        q: FloatArray,
        qd: FloatArray,
        qdd: FloatArray,
        friction: bool,
        smooth: bool,
        measured_velocity: FloatArray | None = None,
    ) -> FloatArray:
        """Inverse dynamics at the desired state; friction at the desired velocity, or the measured one."""
        return self.torque(q, qd, qdd, friction, smooth, friction_velocity=measured_velocity)


# ------------------------------------------------------------------------------------------------
# activation rules, one joint state at a time (the node)
# ------------------------------------------------------------------------------------------------
class TrajectorySchedule:
    """The activation rules applied one joint state at a time: a pending and an active trajectory.

    ``pending`` and ``active`` are ``(sampler in model joint order, start ns)`` or ``None``; ``ended``
    the last point of the trajectory that finished at the latest :meth:`step` that finished one.
    """

    def __init__(self) -> None:
        self.pending: tuple[JointTrajectorySampler, int] | None = None
        self.active: tuple[JointTrajectorySampler, int] | None = None
        self.ended: FloatArray | None = None

    def submit(self, sampler: JointTrajectorySampler, stamp: int, received: int) -> int:
        """Queue a trajectory (rule 1: starts at ``stamp``, or at ``received`` if zero); its start (ns).

        A trajectory that ends before ``received`` raises :class:`StateError` and changes nothing.
        """
        start = stamp or received
        end = start + round(sampler.end_time * 1e9)
        if end < received:
            raise StateError(
                f"trajectory ends in the past ({(received - end) * 1e-9:.3f} s ago; start stamp {start} ns)"
            )
        self.pending = (sampler, start)
        return start

    def cancel(self) -> list[str]:
        """Rule 4: drop the active and the pending trajectory; which of them there were."""
        cancelled = [what for what, slot in (("active", self.active), ("pending", self.pending)) if slot]
        self.active = self.pending = None
        return cancelled

    def step(self, stamp: int, q: FloatArray, qd: FloatArray) -> tuple[TrajectorySample | None, bool]:
        """The desired state at a joint state (rules 2 and 3), or ``None`` to hold; and whether the
        active trajectory finished at this joint state."""
        pending = self.pending
        if pending is not None and stamp >= pending[1]:
            self.active = (pending[0].with_start_state(q, qd), pending[1])
            self.pending = None
        active = self.active
        if active is None:
            return None, False
        t = (stamp - active[1]) * 1e-9
        if t > active[0].end_time:
            self.active = None
            self.ended = active[0].positions[-1]
            return None, True
        return active[0].sample(t), False

    def sample(self, stamp: int) -> TrajectorySample | None:
        """The active trajectory's desired state at ``stamp`` (ns), its first or last point at rest
        outside it; None when no trajectory is active. Changes nothing (the rules run in :meth:`step`)."""
        active = self.active
        return None if active is None else active[0].sample((stamp - active[1]) * 1e-9)


# ------------------------------------------------------------------------------------------------
# activation rules and law for a whole stream of joint states (a bag)
# ------------------------------------------------------------------------------------------------
class ReceivedTrajectory(Protocol):
    """A trajectory as received (e.g. :class:`robot_dynamics.bag.decode.TrajectoryMessage`)."""

    @property
    def timestamp(self) -> int:
        """Receive time (ns)."""
        ...

    @property
    def start(self) -> int:
        """Start time (ns): the header stamp, or the receive time when the stamp is zero (rule 1)."""
        ...

    @property
    def ended_before_receipt(self) -> bool:
        """Whether its last point lies before its receive time (the node refuses it)."""
        ...

    def sampler(self, joint_names: Sequence[str] | None = None) -> JointTrajectorySampler:
        """The trajectory in ``joint_names`` order."""
        ...


@dataclass(frozen=True)
class Segment:
    """One activated trajectory over a stream of joint states (:func:`active_segments`).

    ``index``: the trajectory's position in receive order; ``start``: its start (ns); ``activated``:
    the joint state that activated it; ``rows`` the joint states during which it is active and
    ``desired`` the desired state there ``(len(rows), n)``; ``end_position`` its last point
    ``(n,)``; ``finished_at`` the joint state at which it finished (the node holds from there), or
    ``None`` when a newer trajectory replaced it or the stream ended first; ``sampler`` the trajectory as
    activated (from the activating joint state's measured state when its first point is after ``t = 0``).
    """

    index: int
    start: int
    activated: int
    rows: IndexArray
    desired: TrajectorySample
    end_position: FloatArray
    finished_at: int | None
    sampler: JointTrajectorySampler


def active_segments(
    joint_names: Sequence[str],
    receive_times: NDArray[np.int64],
    stamps: NDArray[np.int64],
    q: FloatArray,
    qd: FloatArray,
    trajectories: Sequence[ReceivedTrajectory],
) -> list[Segment]:
    """Every activated trajectory (rules 1–3) with the joint states during which it is active.

    ``receive_times``, ``stamps`` ``(N,)`` ns and ``q``, ``qd`` ``(N, n)`` of the joint states in
    receive order. A trajectory that ends before it was received is refused, as the node refuses it
    (:meth:`TrajectorySchedule.submit`); one that activates after its end (rows empty) finishes at once.
    """
    accepted = (j for j, tr in enumerate(trajectories) if not tr.ended_before_receipt)
    order = sorted(accepted, key=lambda j: trajectories[j].timestamp)
    trajs = [trajectories[j] for j in order]
    activations: list[tuple[int, int]] = []  # (first sample, trajectory index)
    for j, tr in enumerate(trajs):
        eligible = (receive_times > tr.timestamp) & (stamps >= tr.start)
        if not eligible.any():
            continue
        a = int(np.argmax(eligible))
        if j + 1 < len(trajs) and trajs[j + 1].timestamp < receive_times[a]:
            continue  # replaced by a newer trajectory while still pending
        activations.append((a, j))
    out = []
    for k, (a, j) in enumerate(activations):
        tr = trajs[j]
        stop = activations[k + 1][0] if k + 1 < len(activations) else len(stamps)
        sampler = tr.sampler(joint_names).with_start_state(q[a], qd[a])
        rows = np.arange(a, stop)
        rows = rows[(stamps[rows] - tr.start) * 1e-9 <= sampler.end_time]  # afterwards the node holds again
        after = int(rows[-1]) + 1 if rows.size else a
        finished = after if after < stop else None
        desired = sampler.sample_many((stamps[rows] - tr.start) * 1e-9)
        out.append(Segment(order[j], tr.start, a, rows, desired, sampler.positions[-1].copy(), finished, sampler))
    return out


def tracking_segments(
    joint_names: Sequence[str],
    receive_times: NDArray[np.int64],
    stamps: NDArray[np.int64],
    q: FloatArray,
    qd: FloatArray,
    trajectories: Sequence[ReceivedTrajectory],
) -> list[tuple[IndexArray, TrajectorySample]]:
    """The joint states during which each trajectory is active (rules 1–3) and the desired state there.

    ``receive_times``, ``stamps`` ``(N,)`` ns and ``q``, ``qd`` ``(N, n)`` of the joint states in
    receive order; returns ``(rows, desired state (len(rows), n))`` per activated trajectory
    (:func:`active_segments` without the trajectories that were over before they activated).
    """
    segments = active_segments(joint_names, receive_times, stamps, q, qd, trajectories)
    return [(seg.rows, seg.desired) for seg in segments if seg.rows.size]


@dataclass(frozen=True)
class Feedforward:
    """The feed-forward torques of a stream of joint states: ``effort`` and the state it used
    (``position``/``velocity`` desired while tracking, measured otherwise); ``tracking`` ``(N,)`` bool."""

    effort: FloatArray
    position: FloatArray
    velocity: FloatArray
    tracking: np.ndarray


def feedforward_batch(
    law: FeedforwardLaw,
    receive_times: NDArray[np.int64],
    stamps: NDArray[np.int64],
    q: FloatArray,
    qd: FloatArray,
    trajectories: Sequence[ReceivedTrajectory] = (),
    *,
    friction: bool = True,
    smooth: bool = True,
    friction_velocity: FrictionVelocity = "desired",
) -> Feedforward:
    """What the live node publishes for these joint states (receive order), computed at once.

    The arrays are those of :func:`tracking_segments`; ``friction_velocity`` is the velocity of the
    friction compensation while tracking ("desired" or "measured").
    """
    n_msgs = len(stamps)
    effort = np.empty((n_msgs, law.model.dof))
    position = q.copy()
    velocity = qd.copy()
    tracking = np.zeros(n_msgs, dtype=bool)
    measured = friction_velocity == "measured"
    for rows, d in tracking_segments(law.model.joint_names, receive_times, stamps, q, qd, trajectories):
        effort[rows] = law.tracking(
            d.positions, d.velocities, d.accelerations, friction, smooth, qd[rows] if measured else None
        )
        position[rows] = d.positions
        velocity[rows] = d.velocities
        tracking[rows] = True
    hold = np.flatnonzero(~tracking)
    effort[hold] = law.holding(q[hold], qd[hold], friction, smooth)
    return Feedforward(effort, position, velocity, tracking)
