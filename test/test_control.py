"""The control law (robot_dynamics.control) against independent references, one state and batches.

* computed torque == Pinocchio's ``rnea`` at the measured state and the commanded acceleration
  ``qdd_d + Kp e + Kd ė`` (+ the friction package's friction at the desired or the measured velocity);
* PD + feed-forward == the feed-forward law + ``Kp e + Kd ė`` written out by hand, holding with no
  friction compensation at rest unless it is asked for at the measured velocity; zero gains == the
  pure feed-forward to the bit while tracking; PD alone == ``Kp e + Kd ė``; the trajectory source == the
  trajectory's efforts + the PD terms;
* a batch == a loop over single states (1e-12), for every law, tracking and holding mixed;
* gains validation, the effort clamp and its counters, the hold position, the stale-state rule;
* :func:`control_batch` over a stream == the :class:`Controller` one joint state at a time.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import replace

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS, URDF_ARMS, pinocchio_puma560, pinocchio_urdf

import robot_dynamics as rd
from robot_dynamics.control import (
    ControlLaw,
    Controller,
    ControlSettings,
    control_batch,
)
from robot_dynamics.errors import StateError
from robot_dynamics.feedforward import FeedforwardLaw
from robot_dynamics.friction import friction_torques
from robot_dynamics.trajectory import TrajectorySample
from robot_dynamics.user_input import as_gains, gains_error

pin = pytest.importorskip("pinocchio")

PUMA = rd.load_robot("puma560")
PUMA_MOD = rd.load_robot("puma560_modified")  # load-dependent (bearing) friction
RNG = np.random.default_rng(18)
COUNT = 60


def ur5() -> rd.RobotModel:
    path, tip, _ = URDF_ARMS["ur5"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_robot(str(EXAMPLE_ROBOTS / path), tip_link=tip)


UR5 = ur5()


def states(n: int, count: int) -> tuple[np.ndarray, ...]:
    """Measured q, qd and desired q_d, qd_d, qdd_d (count, n)."""
    q, q_d = RNG.uniform(-np.pi, np.pi, (2, count, n))
    qd, qd_d = RNG.uniform(-1.5, 1.5, (2, count, n))
    qdd_d = RNG.uniform(-3.0, 3.0, (count, n))
    return q, qd, q_d, qd_d, qdd_d


def settings(law: str, n: int, **more: object) -> ControlSettings:
    kp, kd = RNG.uniform(0.0, 400.0, n), RNG.uniform(0.0, 40.0, n)
    return ControlSettings(law=law, kp=kp, kd=kd, **more)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------
# the laws against references
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("model", "pm"), [(PUMA, "puma"), (UR5, "ur5")], ids=["puma560", "ur5"])
def test_computed_torque_is_pinocchio_rnea_at_the_commanded_acceleration(model: rd.RobotModel, pm: str) -> None:
    pmodel = pinocchio_puma560(motor_inertia=True) if pm == "puma" else pinocchio_urdf("ur5")
    data = pmodel.createData()
    law = ControlLaw(model)
    q, qd, q_d, qd_d, qdd_d = states(model.dof, COUNT)
    s = settings("computed_torque", model.dof)
    assert s.kp is not None and s.kd is not None
    tau = law.torque(q, qd, TrajectorySample(q_d, qd_d, qdd_d), np.ones(COUNT, bool), s)
    v = qdd_d + s.kp * (q_d - q) + s.kd * (qd_d - qd)  # the commanded acceleration, by hand
    rigid = np.array([pin.rnea(pmodel, data, a, b, c) for a, b, c in zip(q, qd, v, strict=True)])
    expected = rigid + friction_torques(model, qd_d, smooth=True)  # friction at the desired velocity
    scale = max(1.0, float(np.abs(expected).max()))
    assert np.abs(tau - expected).max() / scale < 1e-9
    for k in range(5):  # one state at a time (the traced scalar path)
        one = law.torque(q[k], qd[k], TrajectorySample(q_d[k], qd_d[k], qdd_d[k]), True, s)
        assert np.abs(one - expected[k]).max() / scale < 1e-9
    measured = replace(s, friction_velocity="measured")  # friction at the measured velocity
    tau = law.torque(q, qd, TrajectorySample(q_d, qd_d, qdd_d), np.ones(COUNT, bool), measured)
    assert np.abs(tau - (rigid + friction_torques(model, qd, smooth=True))).max() / scale < 1e-9
    # holding: the same law with the hold position at rest (q_d, 0, 0): no friction compensation at rest
    zeros = np.zeros_like(q)
    held = law.torque(q, qd, TrajectorySample(q_d, zeros, zeros), np.zeros(COUNT, bool), s)
    v = s.kp * (q_d - q) - s.kd * qd
    expected = np.array([pin.rnea(pmodel, data, a, b, c) for a, b, c in zip(q, qd, v, strict=True)])
    np.testing.assert_allclose(held, expected, rtol=0, atol=1e-9 * scale)
    held = law.torque(q, qd, TrajectorySample(q_d, zeros, zeros), np.zeros(COUNT, bool), measured)
    np.testing.assert_allclose(held, expected + friction_torques(model, qd, smooth=True), rtol=0, atol=1e-9 * scale)


def test_pd_feedforward_is_the_feedforward_plus_the_pd_terms_by_hand() -> None:
    law, ff = ControlLaw(PUMA), FeedforwardLaw(PUMA)
    q, qd, q_d, qd_d, qdd_d = states(6, COUNT)
    for friction_velocity in ("desired", "measured"):
        s = settings("pd_feedforward", 6, friction_velocity=friction_velocity)
        assert s.kp is not None and s.kd is not None
        measured = qd if friction_velocity == "measured" else None
        desired = TrajectorySample(q_d, qd_d, qdd_d)
        tau = law.torque(q, qd, desired, np.ones(COUNT, bool), s)
        tau_ff = ff.tracking(q_d, qd_d, qdd_d, True, True, measured)
        pd = np.array([[s.kp[j] * (q_d[k, j] - q[k, j]) + s.kd[j] * (qd_d[k, j] - qd[k, j]) for j in range(6)]
                       for k in range(COUNT)])  # fmt: skip
        np.testing.assert_allclose(tau, tau_ff + pd, rtol=1e-14, atol=1e-12)
    # holding: gravity (+ friction at the measured velocity only when asked) plus PD towards the hold
    # position at rest
    zeros = np.zeros_like(q)
    for friction_velocity in ("desired", "measured"):
        s = replace(s, friction_velocity=friction_velocity)
        held = law.torque(q, qd, TrajectorySample(q_d, zeros, zeros), np.zeros(COUNT, bool), s)
        expected = rd.gravity_torques(PUMA, q) + s.kp * (q_d - q) - s.kd * qd
        if friction_velocity == "measured":
            expected += friction_torques(PUMA, qd, smooth=True)
        np.testing.assert_allclose(held, expected, rtol=0, atol=1e-9)


def test_pd_is_the_pd_terms_alone_and_holds_without_a_model() -> None:
    law = ControlLaw(PUMA)
    q, qd, q_d, qd_d, qdd_d = states(6, COUNT)
    s = settings("pd", 6)
    assert s.kp is not None and s.kd is not None
    tracking = RNG.random(COUNT) < 0.5
    zeros = np.zeros_like(q)
    desired = TrajectorySample(q_d, np.where(tracking[:, None], qd_d, zeros), qdd_d)
    tau = law.torque(q, qd, desired, tracking, s)
    pd = np.array([[s.kp[j] * (q_d[k, j] - q[k, j]) + s.kd[j] * (desired.velocities[k, j] - qd[k, j])
                    for j in range(6)] for k in range(COUNT)])  # fmt: skip
    np.testing.assert_allclose(tau, pd, rtol=1e-15, atol=1e-12)
    controller = Controller(law, s)  # at rest: PD to the hold position, no gravity term
    held, q_hold, _ = controller.command(1, q[0], qd[0], None)
    np.testing.assert_allclose(held, -s.kd * qd[0], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(q_hold, q[0])


def test_the_trajectory_source_takes_the_trajectorys_efforts() -> None:
    """``feedforward_source: trajectory``: tau_ff = the sample's efforts while tracking (one state, a batch,
    the rows whose trajectory has efforts); the model where it has none and while holding."""
    law, ff = ControlLaw(PUMA), FeedforwardLaw(PUMA)
    q, qd, q_d, qd_d, qdd_d = states(6, COUNT)
    planned = RNG.uniform(-50, 50, (COUNT, 6))
    planned[::4] = np.nan  # rows tracking a trajectory without efforts
    s = settings("pd_feedforward", 6, feedforward_source="trajectory")
    assert s.kp is not None and s.kd is not None
    tracking = RNG.random(COUNT) < 0.7
    tau = law.torque(q, qd, TrajectorySample(q_d, qd_d, qdd_d, planned), tracking, s)
    pd = s.kp * (q_d - q) + s.kd * (qd_d - qd)
    model = ff.tracking(q_d, qd_d, qdd_d, True, True) + pd
    held = ff.holding(q, qd_d, True, True) + pd  # holding rows: friction at their desired velocity
    given = tracking & np.isfinite(planned).all(axis=1)
    expected = np.where(given[:, None], planned + pd, np.where(tracking[:, None], model, held))
    np.testing.assert_allclose(tau, expected, rtol=1e-12, atol=1e-9)
    for k in np.flatnonzero(given)[:5]:
        one = law.torque(q[k], qd[k], TrajectorySample(q_d[k], qd_d[k], qdd_d[k], planned[k]), True, s)
        np.testing.assert_allclose(one, planned[k] + pd[k], rtol=1e-15, atol=1e-12)
    no_source = settings("pd_feedforward", 6)  # feedforward_source model: the efforts are ignored
    np.testing.assert_array_equal(
        law.torque(q, qd, TrajectorySample(q_d, qd_d, qdd_d, planned), np.ones(COUNT, bool), no_source),
        law.torque(q, qd, TrajectorySample(q_d, qd_d, qdd_d), np.ones(COUNT, bool), no_source),
    )


def test_zero_gains_are_the_pure_feedforward_to_the_bit() -> None:
    law, ff = ControlLaw(PUMA_MOD), FeedforwardLaw(PUMA_MOD)
    q, qd, q_d, qd_d, qdd_d = states(6, 20)
    desired = TrajectorySample(q_d, qd_d, qdd_d)
    for s in (ControlSettings(law="pd_feedforward"), ControlSettings(law="pd_feedforward", kp=np.zeros(6))):
        for k in range(20):
            np.testing.assert_array_equal(law.torque(q[k], qd[k], desired_k(desired, k), True, s),
                                          ff.tracking(q_d[k], qd_d[k], qdd_d[k], True, True))  # fmt: skip
            np.testing.assert_array_equal(  # holding: no friction compensation at rest (friction_velocity desired)
                law.torque(q[k], qd[k], rest_k(desired, k), False, s), ff.holding(q[k], np.zeros(6), True, True)
            )
        np.testing.assert_array_equal(
            law.torque(q, qd, desired, np.ones(20, bool), s), ff.tracking(q_d, qd_d, qdd_d, True, True)
        )


def desired_k(d: TrajectorySample, k: int) -> TrajectorySample:
    return TrajectorySample(d.positions[k], d.velocities[k], d.accelerations[k])


def rest_k(d: TrajectorySample, k: int) -> TrajectorySample:
    """The hold at the desired position of sample ``k``: at rest."""
    return TrajectorySample(d.positions[k], np.zeros_like(d.velocities[k]), np.zeros_like(d.accelerations[k]))


@pytest.mark.parametrize("law_name", ["feedforward", "pd", "pd_feedforward", "computed_torque"])
@pytest.mark.parametrize("model", [PUMA, PUMA_MOD, UR5], ids=["puma560", "puma560_modified", "ur5"])
def test_a_batch_is_the_loop_over_single_states(law_name: str, model: rd.RobotModel) -> None:
    law = ControlLaw(model)
    q, qd, q_d, qd_d, qdd_d = states(model.dof, 30)
    tracking = RNG.random(30) < 0.6
    for friction in (True, False):
        s = settings(law_name, model.dof, friction=friction, friction_velocity="measured" if friction else "desired")
        batch = law.torque(q, qd, TrajectorySample(q_d, qd_d, qdd_d), tracking, s)
        loop = [
            law.torque(q[k], qd[k], TrajectorySample(q_d[k], qd_d[k], qdd_d[k]), bool(tracking[k]), s)
            for k in range(30)
        ]
        np.testing.assert_allclose(batch, np.array(loop), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# gains, limits, hold, stale
# ------------------------------------------------------------------------------------------------
def test_gains_are_validated_with_a_one_line_reason() -> None:
    assert gains_error(None, 6) is None and gains_error([], 6) is None
    assert gains_error([100, 100, 50, 10, 10, 5], 6) is None  # integers, as a ROS user writes them
    np.testing.assert_array_equal(as_gains([100, 100, 50, 10, 10, 5], 6), [100.0, 100.0, 50.0, 10.0, 10.0, 5.0])
    np.testing.assert_array_equal(as_gains(20.0, 3), [20.0, 20.0, 20.0])  # one number: every joint
    np.testing.assert_array_equal(as_gains(None, 2), [0.0, 0.0])
    assert gains_error([1.0, 2.0], None) is None  # the model's joint count not known yet
    cases = {
        "nan": ([1.0, float("nan"), 1.0], "gain 1 is not finite (nan)"),
        "inf": ([float("inf")] * 3, "gain 0 is not finite (inf)"),
        "negative": ([1.0, 1.0, -2.0], "gain 2 is negative (-2); gains must be >= 0"),
        "length": ([1.0, 2.0], "expected 3 gains (one per joint, model joint order) or one for all, got 2"),
        "strings": (["a", "b", "c"], "expected numbers (one per joint), got ['a', 'b', 'c']"),
        "bools": ([True, False, True], "expected numbers"),
    }
    for value, reason in cases.values():
        error = gains_error(value, 3)
        assert error is not None and reason in error and "\n" not in error, (value, error)
        with pytest.raises(StateError, match=r"gain|expected"):
            as_gains(value, 3)


def test_the_clamp_limits_the_command_to_the_file_and_counts_joints() -> None:
    law = ControlLaw(UR5)
    limits = np.array([j.limits.effort for j in UR5.joints])
    assert np.isfinite(limits).all() and law.limited
    s = ControlSettings(law="pd_feedforward", kp=np.full(6, 2000.0), limit_efforts=True)
    controller = Controller(law, s)
    q = np.zeros(6)
    far = np.array([0.5, -0.5, 0.001, 0.0, 0.0, 0.0])  # joints 1 and 2 saturate, 3 not
    tau, _, _ = controller.command(1, q, q, TrajectorySample(far, q, q))
    unclamped = law.torque(q, q, TrajectorySample(far, q, q), True, s)
    over = np.abs(unclamped) > limits
    assert over[:2].all() and not over[2]
    np.testing.assert_array_equal(tau[over], np.sign(unclamped[over]) * limits[over])
    np.testing.assert_array_equal(tau[~over], unclamped[~over])
    controller.command(2, q, q, TrajectorySample(far, q, q))
    c = controller.counters
    assert c.commands == 2 and c.clamped_commands == 2
    np.testing.assert_array_equal(c.clamped_joints, 2 * over.astype(int))
    controller.settings = ControlSettings(law="pd_feedforward", kp=np.full(6, 2000.0), limit_efforts=False)
    np.testing.assert_array_equal(controller.command(3, q, q, TrajectorySample(far, q, q))[0], unclamped)
    assert controller.counters.clamped_commands == 2


def test_the_hold_position_begins_where_the_hold_begins() -> None:
    law = ControlLaw(PUMA)
    s = ControlSettings(law="pd_feedforward", kp=np.full(6, 50.0), kd=np.full(6, 5.0), friction=False)
    controller = Controller(law, s)
    q0, q1, q2, goal = RNG.uniform(-1, 1, (4, 6))
    zeros = np.zeros(6)

    def pd_toward(target: np.ndarray, q: np.ndarray) -> np.ndarray:
        return rd.gravity_torques(PUMA, q) + 50.0 * (target - q)

    tau, q_d, _ = controller.command(1, q0, zeros, None)  # start-up: the measured position
    np.testing.assert_array_equal(q_d, q0)
    np.testing.assert_allclose(controller.command(2, q1, zeros, None)[0], pd_toward(q0, q1), atol=1e-9)
    controller.command(3, q1, zeros, TrajectorySample(goal, zeros, zeros))  # tracking
    tau, q_d, _ = controller.command(4, q2, zeros, None, ended=goal)  # finished: hold the goal
    np.testing.assert_array_equal(q_d, goal)
    np.testing.assert_allclose(tau, pd_toward(goal, q2), atol=1e-9)
    controller.release_hold()  # a cancel: hold where the arm is
    np.testing.assert_array_equal(controller.command(5, q1, zeros, None)[1], q1)


def test_stale_state_stops_the_command_zero_or_hold_and_counts() -> None:
    law = ControlLaw(PUMA)
    s = ControlSettings(law="pd_feedforward", kp=np.full(6, 50.0), state_timeout=0.1, stale_action="zero")
    controller = Controller(law, s)
    assert controller.stale_command(10**12) is None  # no joint state yet: nothing to stop
    q = RNG.uniform(-1, 1, 6)
    controller.command(1_000_000_000, q, np.zeros(6), None)
    assert controller.stale_command(1_100_000_000) is None  # exactly the timeout: still fresh
    tau = controller.stale_command(1_100_000_001)
    assert tau is not None and not tau.any() and controller.stale
    assert controller.stale_command(1_200_000_000) is not None
    assert (controller.counters.stale_events, controller.counters.stale_commands) == (1, 2)
    controller.settings = ControlSettings(law="pd_feedforward", state_timeout=0.1, stale_action="hold")
    hold = controller.stale_command(1_300_000_000)
    assert hold is not None
    expected = rd.gravity_torques(PUMA, q) + friction_torques(PUMA, np.zeros(6), smooth=True)  # at rest
    np.testing.assert_allclose(hold, expected, rtol=0, atol=1e-9)
    # a fresh state resumes the law, and a new hold begins there
    q_new = q + 0.3
    _, q_d, _ = controller.command(1_400_000_000, q_new, np.zeros(6), None)
    assert not controller.stale and np.array_equal(q_d, q_new)
    controller.stale_command(1_600_000_000)
    assert controller.counters.stale_events == 2
    controller.settings = ControlSettings(state_timeout=0.0)  # 0: never stale
    assert controller.stale_command(10**15) is None


def test_control_batch_is_the_controller_one_state_at_a_time() -> None:
    """A stream with trajectories: the first finishes (a hold at its goal), one is refused (it ends
    before it was received), one is over before the next joint state (activates and finishes at once:
    a hold at its goal), the last is replaced while pending; holds in between."""
    from robot_dynamics.bag.decode import TrajectoryMessage

    model, n = PUMA_MOD, 6
    times = np.array([0.0, 0.3, 0.6])
    q_pts, qd_pts, qdd_pts = RNG.uniform(-1, 1, (3, 3, n))
    t0 = 10**12
    trajs = [
        TrajectoryMessage(t0 + 50_000_000, t0 + 100_000_000, PUMA_MOD.joint_names, times, q_pts, qd_pts, qdd_pts),
        TrajectoryMessage(t0 + 900_000_000, 0, PUMA_MOD.joint_names, times[1:], q_pts[1:], None, None),
        TrajectoryMessage(t0 + 1_601_000_000, t0 + 1_000_000_000, PUMA_MOD.joint_names, times, q_pts[::-1], None, None),
        TrajectoryMessage(t0 + 1_625_000_000, t0 + 1_030_000_000, PUMA_MOD.joint_names, times, q_pts / 2, None, None),
        TrajectoryMessage(t0 + 1_701_000_000, t0 + 1_900_000_000, PUMA_MOD.joint_names, times, -q_pts, None, None),
        TrajectoryMessage(
            t0 + 1_702_000_000, t0 + 1_950_000_000, PUMA_MOD.joint_names, times[:2], q_pts[:2], None, None
        ),
    ]
    stamps = t0 + np.arange(0, 2_000_000_000, 20_000_000, dtype=np.int64)
    received = stamps + 300_000
    q, qd = RNG.uniform(-1, 1, (2, stamps.size, n))
    trajs[0] = replace(trajs[0], efforts=RNG.uniform(-20, 20, (3, n)))  # a planner's efforts
    cases = [(law, "model", 0.0) for law in ("feedforward", "pd", "pd_feedforward", "computed_torque")]
    cases += [("pd_feedforward", "trajectory", 0.0), ("feedforward", "trajectory", 0.0)]
    cases += [(law, "model", 0.004) for law in ("pd_feedforward", "computed_torque")]  # delays: 4 ms and 6 ms
    cases += [("pd_feedforward", "trajectory", 0.004)]
    for law_name, source, delay in cases:
        s = settings(law_name, n, limit_efforts=False, feedforward_source=source)
        s = replace(s, measurement_delay=delay, command_delay=1.5 * delay)
        law = ControlLaw(model)
        batch = control_batch(law, s, received, stamps, q, qd, trajs)
        assert batch.tracking.sum() > 20 and (~batch.tracking).sum() > 20
        # the node's way: the schedule one joint state at a time, the controller on its output
        from robot_dynamics.feedforward import TrajectorySchedule

        schedule, controller = TrajectorySchedule(), Controller(law, s)
        pending = list(trajs)
        for k in range(stamps.size):
            while pending and pending[0].timestamp < received[k]:
                tr = pending.pop(0)
                with contextlib.suppress(StateError):  # refused: it ends before it was received
                    schedule.submit(tr.sampler(model.joint_names), tr.stamp, tr.timestamp)
            tau, q_d, qd_d, _ = controller.step(schedule, int(stamps[k]), int(received[k]), q[k], qd[k])
            np.testing.assert_allclose(batch.effort[k], tau, rtol=1e-12, atol=1e-10, err_msg=f"{law_name} {k}")
            np.testing.assert_allclose(batch.position[k], q_d, rtol=0, atol=1e-12)
            np.testing.assert_allclose(batch.velocity[k], qd_d, rtol=0, atol=1e-12)


def test_delays_compare_the_measurement_with_the_desired_state_of_its_time() -> None:
    """``measurement_delay``: an arm that tracks perfectly, measured ``L_m`` late, shows no error (without
    the delay the PD reads ``qd L_m`` as one); ``command_delay``: the feed-forward (and computed torque's
    ``qdd_d``) at ``t + L_c``; outside the trajectory its ends at rest; activation follows the stamps."""
    from robot_dynamics.feedforward import TrajectorySchedule
    from robot_dynamics.trajectory import JointTrajectorySampler

    model, n = PUMA, 6
    times = np.linspace(0.0, 1.0, 6)
    sampler = JointTrajectorySampler(times, RNG.uniform(-1, 1, (6, n)), RNG.uniform(-1, 1, (6, n)))
    L_m, L_c = 0.002, 0.003
    start = 5 * 10**9
    for law_name in ("pd_feedforward", "computed_torque"):
        s = replace(settings(law_name, n), measurement_delay=L_m, command_delay=L_c)
        law = ControlLaw(model)
        schedule, controller = TrajectorySchedule(), Controller(law, s)
        schedule.submit(sampler, start, start - 1)
        for t in (0.0, 0.0015, 0.4, 0.9995, 1.0):
            stamp = start + round(t * 1e9)
            measured = sampler.sample(t - L_m)  # a perfect arm, measured L_m late (at rest before its start)
            tau, q_d, qd_d, finished = controller.step(schedule, stamp, stamp, measured.positions, measured.velocities)
            assert not finished
            np.testing.assert_allclose(q_d, measured.positions, rtol=0, atol=1e-12)  # compared like with like
            np.testing.assert_allclose(qd_d, measured.velocities, rtol=0, atol=1e-12)
            ahead = sampler.sample(t + L_c)
            if law_name == "pd_feedforward":  # tau_ff at t + L_c and no feedback
                expected = law.feedforward.tracking(ahead.positions, ahead.velocities, ahead.accelerations, True, True)
            else:  # NE at the measured state with qdd_d(t + L_c), friction at qd_d(t + L_c)
                expected = law.feedforward.torque(
                    measured.positions, measured.velocities, ahead.accelerations, True, True, ahead.velocities
                )
            np.testing.assert_allclose(tau, expected, rtol=1e-12, atol=1e-10)
        # the same arm without the delay compensation: the PD term pushes against the lag
        plain = Controller(law, replace(s, measurement_delay=0.0, command_delay=0.0))
        schedule = TrajectorySchedule()
        schedule.submit(sampler, start, start - 1)
        t = 0.4
        measured = sampler.sample(t - L_m)
        tau, q_d, _, _ = plain.step(schedule, start + round(t * 1e9), 0, measured.positions, measured.velocities)
        assert np.abs(q_d - measured.positions).max() > 1e-4
    # after the end: the hold at the last point, as without delays
    stamp = start + 1_000_000_001
    _, q_d, qd_d, finished = controller.step(schedule, stamp, stamp, sampler.positions[-1], np.zeros(n))
    assert finished and np.array_equal(q_d, sampler.positions[-1]) and not qd_d.any()
