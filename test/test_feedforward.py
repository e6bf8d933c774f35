"""The feed-forward law (FeedforwardLaw) against direct engine calls, every bundled robot, one state
and batches; the activation rules one joint state at a time (TrajectorySchedule) and for a stream."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from robot_dynamics.dynamics import gravity_torques, inverse_dynamics, rnea_with_reactions
from robot_dynamics.errors import StateError
from robot_dynamics.feedforward import FeedforwardLaw, TrajectorySchedule, feedforward_batch, tracking_segments
from robot_dynamics.friction import apply_friction
from robot_dynamics.models import bundled_robots, load_robot
from robot_dynamics.trajectory import JointTrajectorySampler

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("name", bundled_robots())
def test_law_equals_the_engine(name: str) -> None:
    model = load_robot(name)
    law = FeedforwardLaw(model)
    n = model.dof
    for _ in range(20):
        q, qd, qdd, v = RNG.uniform(-1.5, 1.5, (4, n))
        zeros = np.zeros(n)
        for smooth in (True, False):
            # friction at the desired velocity = the engine's inverse dynamics with friction
            np.testing.assert_allclose(
                law.tracking(q, qd, qdd, True, smooth),
                inverse_dynamics(model, q, qd, qdd, friction=True, smooth=smooth),
                rtol=0,
                atol=1e-12,
            )
            # friction at another velocity: frictionless inverse dynamics + the friction terms at v
            tau_joint = inverse_dynamics(model, q, qd, qdd, friction=False)
            _, force, moment = rnea_with_reactions(model, q, qd, qdd)
            friction = apply_friction(model, v, tau_joint, force, moment, smooth=smooth).total
            np.testing.assert_allclose(
                law.tracking(q, qd, qdd, True, smooth, measured_velocity=v), tau_joint + friction, rtol=0, atol=1e-12
            )
            # holding: c(q) + b(v) with the static load
            c = gravity_torques(model, q)
            _, force, moment = rnea_with_reactions(model, q, zeros, zeros)
            b = apply_friction(model, v, c, force, moment, smooth=smooth).total
            np.testing.assert_allclose(law.holding(q, v, True, smooth), c + b, rtol=0, atol=1e-12)
            # at rest the holding torque is the engine's static inverse dynamics
            np.testing.assert_allclose(
                law.holding(q, zeros, True, True),
                inverse_dynamics(model, q, zeros, zeros, friction=True, smooth=True),
                rtol=0,
                atol=1e-12,
            )
        np.testing.assert_allclose(law.holding(q, qd, False, True), gravity_torques(model, q), rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            law.tracking(q, qd, qdd, False, True), inverse_dynamics(model, q, qd, qdd, friction=False), atol=1e-12
        )


@pytest.mark.parametrize("name", bundled_robots())
def test_batch_equals_one_state_at_a_time(name: str) -> None:
    """The batch path (vectorised friction) gives each state's single-state torque (compiled program)."""
    model = load_robot(name)
    law = FeedforwardLaw(model)
    q, qd, qdd, v = RNG.uniform(-1.5, 1.5, (4, 40, model.dof))
    for friction in (True, False):
        for smooth in (True, False):
            holding = law.holding(q, v, friction, smooth)
            desired = law.tracking(q, qd, qdd, friction, smooth)
            measured = law.tracking(q, qd, qdd, friction, smooth, measured_velocity=v)
            assert holding.shape == desired.shape == measured.shape == (40, model.dof)
            for k in range(0, 40, 7):
                np.testing.assert_allclose(holding[k], law.holding(q[k], v[k], friction, smooth), rtol=0, atol=1e-12)
                np.testing.assert_allclose(
                    desired[k], law.tracking(q[k], qd[k], qdd[k], friction, smooth), rtol=0, atol=1e-12
                )
                np.testing.assert_allclose(
                    measured[k], law.tracking(q[k], qd[k], qdd[k], friction, smooth, v[k]), rtol=0, atol=1e-12
                )
    empty = np.zeros((0, model.dof))
    assert law.holding(empty, empty, True, True).shape == (0, model.dof)
    assert law.tracking(empty, empty, empty, True, True, empty).shape == (0, model.dof)


# ------------------------------------------------------------------------------------------------
# activation rules
# ------------------------------------------------------------------------------------------------
MODEL = load_robot("puma560")
N = MODEL.dof
S = 1_000_000_000  # ns per second


def ramp(duration: float, offset: float = 0.0, first: float = 0.0) -> JointTrajectorySampler:
    """Positions only (linear): from ``offset`` to ``offset + 1`` rad on every joint."""
    times = [first, first + duration]
    return JointTrajectorySampler(times, [np.full(N, offset), np.full(N, offset + 1.0)])


def test_schedule_submit_starts_at_the_stamp_or_on_receipt_and_rejects_the_past() -> None:
    schedule = TrajectorySchedule()
    assert schedule.submit(ramp(1.0), 5 * S, 2 * S) == 5 * S
    assert schedule.pending is not None and schedule.pending[1] == 5 * S
    assert schedule.submit(ramp(1.0), 0, 2 * S) == 2 * S  # zero stamp: on receipt, replaces the pending one
    assert schedule.pending is not None and schedule.pending[1] == 2 * S
    before = schedule.pending
    with pytest.raises(StateError, match=r"trajectory ends in the past \(1\.000 s ago; start stamp 1000000000 ns\)"):
        schedule.submit(ramp(1.0), 1 * S, 3 * S)
    assert schedule.pending is before  # a rejected trajectory changes nothing


def test_schedule_activates_tracks_finishes_and_cancels() -> None:
    schedule = TrajectorySchedule()
    z = np.zeros(N)
    q0 = np.full(N, 0.3)
    schedule.submit(ramp(1.0, first=0.5), 10 * S, 9 * S)
    assert schedule.step(9 * S, z, z) == (None, False)  # pending: before its start
    assert schedule.active is None and schedule.pending is not None
    d, finished = schedule.step(10 * S, q0, z)  # activated; first point at 0.5 s: starts from the measured state
    assert d is not None and not finished and schedule.pending is None
    np.testing.assert_allclose(d.positions, q0)
    d, _ = schedule.step(10 * S + S // 2, z, z)
    assert d is not None
    np.testing.assert_allclose(d.positions, np.zeros(N))  # the first point
    d, _ = schedule.step(11 * S + S // 2, z, z)  # the end point, still active (stamp - start <= duration)
    assert d is not None
    np.testing.assert_allclose(d.positions, np.ones(N))
    assert schedule.step(11 * S + S // 2 + 1, z, z) == (None, True)  # finished: hold
    assert schedule.active is None
    assert schedule.step(12 * S, z, z) == (None, False)
    schedule.submit(ramp(1.0), 13 * S, 12 * S)
    schedule.step(13 * S, z, z)
    schedule.submit(ramp(1.0), 20 * S, 12 * S)
    assert schedule.cancel() == ["active", "pending"]
    assert schedule.active is None and schedule.pending is None and schedule.cancel() == []


@dataclass(frozen=True)
class Received:
    """A received trajectory (the ``ReceivedTrajectory`` protocol, as a bag's TrajectoryMessage)."""

    timestamp: int
    stamp: int
    trajectory: JointTrajectorySampler

    @property
    def start(self) -> int:
        return self.stamp if self.stamp > 0 else self.timestamp

    @property
    def ended_before_receipt(self) -> bool:
        return self.start + round(self.trajectory.end_time * 1e9) < self.timestamp

    def sampler(self, joint_names: object = None) -> JointTrajectorySampler:
        return self.trajectory


def test_stream_rules_give_the_rows_each_trajectory_tracks() -> None:
    """Samples every 0.1 s, received 1 ms after their stamp; the rows follow rules 1-3 by hand."""
    stamps = (100 + np.arange(60)) * S // 10  # 10.0 s, 10.1 s, ...
    received = stamps + S // 1000
    q = RNG.uniform(-1, 1, (60, N))
    qd = RNG.uniform(-1, 1, (60, N))
    trajectories = [
        Received(int(received[2]), 12 * S, ramp(0.5)),  # replaced while pending by the next one
        Received(int(received[3]), int(stamps[10]), ramp(1.0)),  # rows 10..20
        Received(int(received[30]) - 1, 0, ramp(0.45, 2.0)),  # zero stamp: from its receipt, rows 31..34
        Received(int(received[50]), int(stamps[40]), ramp(2.0)),  # starts in the past: from row 51 to 60
    ]
    segments = tracking_segments(MODEL.joint_names, received, stamps, q, qd, trajectories)
    rows = [r.tolist() for r, _ in segments]
    assert rows == [list(range(10, 21)), list(range(31, 35)), list(range(51, 60))]
    np.testing.assert_allclose(segments[0][1].positions[[0, -1]], [np.zeros(N), np.ones(N)], atol=1e-12)
    law = FeedforwardLaw(MODEL)
    ff = feedforward_batch(law, received, stamps, q, qd, trajectories, friction_velocity="measured")
    assert np.flatnonzero(ff.tracking).tolist() == [r for block in rows for r in block]
    hold = np.flatnonzero(~ff.tracking)
    np.testing.assert_allclose(ff.effort[hold], law.holding(q[hold], qd[hold], True, True), rtol=0, atol=1e-12)
    np.testing.assert_allclose(ff.position[hold], q[hold])
    for r, d in segments:
        np.testing.assert_allclose(
            ff.effort[r], law.tracking(d.positions, d.velocities, d.accelerations, True, True, qd[r]), atol=1e-12
        )
        np.testing.assert_allclose(ff.position[r], d.positions)
