"""Reactions to a collision (robot_dynamics.reaction), no ROS.

* each strategy's torque against its formula written out by hand (gravity from the engine, checked
  against Pinocchio elsewhere; the inertia matrix, Coriolis and friction terms likewise);
* the controller's sequence: trigger at the first joint state after the event, the trajectory cancelled,
  the hold where the reaction began (after the reflex, where the reflex ended), the report and its
  latency, trajectories refused until the contact cleared, re-arming at the new trajectory's activation;
* ``none``: the controller's commands bit for bit, whatever the events;
* the offline form (:func:`reaction_batch`) == the controller one joint state at a time, every strategy.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import replace

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS, URDF_ARMS

import robot_dynamics as rd
from robot_dynamics.bag.decode import TrajectoryMessage
from robot_dynamics.control import ControlLaw, Controller, ControlSettings
from robot_dynamics.errors import StateError
from robot_dynamics.feedforward import TrajectorySchedule
from robot_dynamics.reaction import (
    NO_REACTION,
    REACTIONS,
    CollisionReport,
    ReactingController,
    ReactionSettings,
    braking_delay_problem,
    braking_torque,
    float_torque,
    reaction_batch,
    reflex_torque,
    stop_torque,
)
from robot_dynamics.user_input import as_gains

PUMA = rd.load_robot("puma560")  # Coulomb + viscous friction, effort limits
RNG = np.random.default_rng(23)
T0 = 10**12
PERIOD = 2_000_000  # ns


def ur5() -> rd.RobotModel:
    path, tip, _ = URDF_ARMS["ur5"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_robot(str(EXAMPLE_ROBOTS / path), tip_link=tip)


def settings(law: str, n: int, **more: object) -> ControlSettings:
    kp, kd = as_gains(RNG.uniform(20, 200, n), n), as_gains(RNG.uniform(1, 20, n), n)
    return replace(ControlSettings(law=law, kp=kp, kd=kd), **more)  # type: ignore[arg-type]


def event(stamp: int, received: int, n: int, joint: int = 1, raised: bool = True, r: float = 5.0) -> CollisionReport:
    torque = np.zeros(n)
    torque[joint] = r if raised else 0.0
    torque[(joint + 1) % n] = -0.5 * r
    return CollisionReport(stamp, received, joint, raised, raised, torque)


# ------------------------------------------------------------------------------------------------
# the strategies' torques by hand
# ------------------------------------------------------------------------------------------------
def braking(model: rd.RobotModel, r: ReactionSettings, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """``-K_b D(q) qd`` from the inertia matrix (the strategies compute it by Newton–Euler)."""
    return -r.damping * np.einsum("...ij,...j->...i", rd.inertia_matrix(model, q), qd)


UNBRAKED = ReactionSettings("stop", damping=0.0)


@pytest.mark.parametrize("r", [UNBRAKED, ReactionSettings("stop"), ReactionSettings("stop", damping=200.0)])
def test_stop_is_pd_on_the_pose_at_detection_with_gravity_compensation_and_braking(r: ReactionSettings) -> None:
    model = ur5()
    n, law = model.dof, ControlLaw(model)
    q, qd, q_s = RNG.uniform(-2, 2, (3, 20, n))
    brake = braking(model, r, q, qd)
    assert r.damping == 0.0 or np.abs(brake).max() > 1.0  # a term the check can see
    for name in ("pd_feedforward", "feedforward", "pd"):  # the laws without a hold law react as pd_feedforward
        s = settings("pd_feedforward", n) if name == "pd_feedforward" else replace(settings(name, n), law=name)
        assert s.kp is not None and s.kd is not None
        expected = rd.gravity_torques(model, q) + s.kp * (q_s - q) - s.kd * qd + brake  # the UR5 file: no friction
        np.testing.assert_allclose(stop_torque(law, s, r, q, qd, q_s), expected, rtol=1e-10, atol=1e-9)
        for k in range(3):  # one state
            np.testing.assert_allclose(stop_torque(law, s, r, q[k], qd[k], q_s[k]), expected[k], rtol=1e-10, atol=1e-9)
    s = settings("computed_torque", n)
    assert s.kp is not None and s.kd is not None
    D = rd.inertia_matrix(model, q)
    v = s.kp * (q_s - q) - s.kd * qd
    expected = np.einsum("kij,kj->ki", D, v) + rd.coriolis_centrifugal(model, q, qd) + rd.gravity_torques(model, q)
    np.testing.assert_allclose(stop_torque(law, s, r, q, qd, q_s), expected + brake, rtol=1e-9, atol=1e-8)


def test_stop_holds_without_friction_compensation_at_rest() -> None:
    n, law = PUMA.dof, ControlLaw(PUMA)
    s = settings("pd_feedforward", n, friction_velocity="measured")  # stop holds at zero velocity regardless
    q, qd, q_s = RNG.uniform(-2, 2, (3, 10, n))
    assert s.kp is not None and s.kd is not None
    b0 = rd.friction_torques(PUMA, np.zeros((10, n)), smooth=True)
    expected = rd.gravity_torques(PUMA, q) + b0 + s.kp * (q_s - q) - s.kd * qd
    np.testing.assert_allclose(stop_torque(law, s, UNBRAKED, q, qd, q_s), expected, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize(("kappa", "damping"), [(0.0, 0.0), (0.5, 0.0), (1.0, 0.0), (0.5, 50.0), (0.0, 120.0)])
def test_float_is_gravity_plus_a_share_of_the_smooth_friction_at_the_measured_velocity_braked(
    kappa: float, damping: float
) -> None:
    n, law = PUMA.dof, ControlLaw(PUMA)
    s = settings("pd_feedforward", n, smooth=False)  # float uses the smooth model whatever the law's setting
    q, qd = RNG.uniform(-2, 2, (2, 20, n))
    r = ReactionSettings("float", float_friction=kappa, damping=damping)
    brake = braking(PUMA, r, q, qd)
    expected = rd.gravity_torques(PUMA, q) + kappa * rd.friction_torques(PUMA, qd, smooth=True) + brake
    np.testing.assert_allclose(float_torque(law, s, r, q, qd), expected, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(float_torque(law, s, r, q[3], qd[3]), expected[3], rtol=1e-10, atol=1e-9)
    no_friction = replace(s, friction=False)
    np.testing.assert_allclose(
        float_torque(law, no_friction, r, q, qd), rd.gravity_torques(PUMA, q) + brake, rtol=1e-10, atol=1e-9
    )


def test_braking_alone_decelerates_the_arm_at_the_set_rate() -> None:
    """Applied with gravity compensation to the model itself, the braking gives ``q'' = -K_b qd`` (forward
    dynamics of the file, friction off); too strong for the loop's delay, it is named."""
    model = ur5()
    law = ControlLaw(model)
    r = ReactionSettings("float", damping=80.0)
    q, qd = RNG.uniform(-2, 2, (2, 8, model.dof))
    tau = rd.gravity_torques(model, q) + rd.coriolis_centrifugal(model, q, qd) + braking_torque(law, r, q, qd)
    qdd = rd.forward_dynamics(model, q, qd, tau)
    np.testing.assert_allclose(qdd, -80.0 * qd, rtol=1e-8, atol=1e-8)
    assert braking_delay_problem(r, 0.003) is None  # 0.24
    problem = braking_delay_problem(r, 0.006)
    assert problem is not None and "use at most 50 1/s" in problem
    assert braking_delay_problem(ReactionSettings("none", damping=80.0), 0.1) is None  # nothing armed


def test_reflex_is_gravity_plus_the_bounded_external_torque() -> None:
    model = ur5()
    n, law = model.dof, ControlLaw(model)
    limits = np.array([j.limits.effort for j in model.joints])
    assert np.isfinite(limits).all()
    r = ReactionSettings("reflex", reflex_gain=2.0, reflex_fraction=0.1)
    q, qd = RNG.uniform(-2, 2, (2, 5, n))
    r0 = np.array([1.0, -400.0, 3.0, 0.0, 50.0, -0.2])
    push = np.array([min(max(2.0 * v, -0.1 * lim), 0.1 * lim) for v, lim in zip(r0, limits, strict=True)])
    assert (np.abs(push) < np.abs(2.0 * r0)).any() and (push == 2.0 * r0).any()  # some joints clipped, some not
    expected = rd.gravity_torques(model, q) + push
    np.testing.assert_allclose(reflex_torque(law, r, q, qd, r0), expected, rtol=1e-12, atol=1e-10)


def test_reaction_settings_are_checked() -> None:
    assert list(REACTIONS) == ["none", "stop", "float", "reflex"]
    assert not NO_REACTION.armed and ReactionSettings("stop").armed
    for bad, field in (
        ({"strategy": "brake"}, "reaction"),
        ({"float_friction": 1.5}, "float_friction"),
        ({"reflex_gain": -1.0}, "reflex_gain"),
        ({"reflex_fraction": float("nan")}, "reflex_fraction"),
        ({"reflex_duration": -0.1}, "reflex_duration"),
        ({"damping": -5.0}, "damping"),
    ):
        with pytest.raises(StateError, match=field):
            ReactionSettings(**bad)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------
# one joint state at a time
# ------------------------------------------------------------------------------------------------
def trajectory(start: int, received: int, q_from: np.ndarray, duration: float = 0.4) -> TrajectoryMessage:
    n = q_from.size
    times = np.array([0.0, duration / 2, duration])
    points = np.stack([q_from, q_from + 0.2, q_from + 0.4])
    return TrajectoryMessage(received, start, PUMA.joint_names, times, points, np.zeros((3, n)), np.zeros((3, n)))


def node_run(
    controller: Controller,
    stamps: np.ndarray,
    received: np.ndarray,
    q: np.ndarray,
    qd: np.ndarray,
    trajs: list[TrajectoryMessage],
    events: list[CollisionReport],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """The node's way: events and trajectories delivered between the joint states, as received."""
    schedule = TrajectorySchedule()
    inputs = sorted(
        [(e.received, 0, k) for k, e in enumerate(events)] + [(t.timestamp, 1, k) for k, t in enumerate(trajs)]
    )
    taus, q_ds, qd_ds, refused = [], [], [], []
    for k in range(stamps.size):
        while inputs and inputs[0][0] < received[k]:
            _, kind, j = inputs.pop(0)
            if kind == 0:
                if isinstance(controller, ReactingController):
                    controller.collision(events[j])
                continue
            tr = trajs[j]
            if isinstance(controller, ReactingController) and controller.reaction.trajectory_problem():
                refused.append(j)
                continue
            with contextlib.suppress(StateError):
                schedule.submit(tr.sampler(PUMA.joint_names), tr.stamp, tr.timestamp)
                if isinstance(controller, ReactingController):
                    controller.reaction.accepted()
        tau, q_d, qd_d, _ = controller.step(schedule, int(stamps[k]), int(received[k]), q[k], qd[k])
        taus.append(tau)
        q_ds.append(q_d)
        qd_ds.append(qd_d)
    return np.array(taus), np.array(q_ds), np.array(qd_ds), refused


def stream(count: int = 200) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    stamps = T0 + PERIOD * np.arange(count, dtype=np.int64)
    received = stamps + 300_000
    q, qd = RNG.uniform(-1, 1, (2, count, PUMA.dof))
    return stamps, received, q, qd


def scenario(stamps: np.ndarray, q: np.ndarray) -> tuple[list[TrajectoryMessage], list[CollisionReport]]:
    """Tracking; a collision at state 40 (seen at 41); a trajectory while still in contact (refused);
    the clear at 90; a trajectory starting at state 130 (re-arms: it takes over there); a second
    collision at 170 (a second reaction)."""
    n = PUMA.dof
    trajs = [
        trajectory(int(stamps[5]), int(stamps[2]), q[0]),
        trajectory(0, int(stamps[60]) + 500_000, q[0]),  # refused: in collision
        trajectory(int(stamps[130]), int(stamps[100]) + 500_000, q[0], duration=0.06),
    ]
    events = [
        event(int(stamps[40]), int(stamps[40]) + 800_000, n, joint=1),
        event(int(stamps[40]), int(stamps[40]) + 900_000, n, joint=2),  # the same state, another joint
        event(int(stamps[90]), int(stamps[90]) + 800_000, n, joint=1, raised=False),
        CollisionReport(int(stamps[91]), int(stamps[91]) + 800_000, 2, False, False, np.zeros(n)),
        event(int(stamps[170]), int(stamps[170]) + 700_000, n, joint=4, r=-8.0),
    ]
    return trajs, events


def test_stop_cancels_holds_reports_refuses_and_rearms() -> None:
    n = PUMA.dof
    stamps, received, q, qd = stream()
    trajs, events = scenario(stamps, q)
    law, s = ControlLaw(PUMA), settings("pd_feedforward", n)
    r = ReactionSettings("stop")
    controller = ReactingController(law, s, r)
    tau, q_d, qd_d, refused = node_run(controller, stamps, received, q, qd, trajs, events)
    assert refused == [1]
    reports = controller.reaction.reports
    assert [(r.active, r.command_stamp, r.stamp) for r in reports] == [
        (True, stamps[41], stamps[41]),
        (False, stamps[41], stamps[130]),
        (True, stamps[171], stamps[171]),
    ]
    assert reports[0].joints == (1, 2) and reports[0].latency == pytest.approx(PERIOD * 1e-9)
    np.testing.assert_array_equal(reports[0].external_torque, events[1].external_torque)  # the newest raise
    assert reports[2].joints == (4,) and reports[2].collision_stamp == stamps[170]
    for rows, hold in ((np.arange(41, 130), q[41]), (np.arange(171, 200), q[171])):
        np.testing.assert_allclose(tau[rows], stop_torque(law, s, r, q[rows], qd[rows], hold), rtol=1e-12, atol=1e-10)
        np.testing.assert_array_equal(q_d[rows], np.broadcast_to(hold, (rows.size, n)))
        assert not qd_d[rows].any()
    plain = Controller(law, s)  # before the collision, and while the new trajectory runs: the law's own command
    tau_plain, _, _, _ = node_run(plain, stamps[:41], received[:41], q[:41], qd[:41], trajs[:1], [])
    np.testing.assert_array_equal(tau[:41], tau_plain)
    sample = trajs[2].sampler(PUMA.joint_names).with_start_state(q[130], qd[130])
    desired = sample.sample(0.0)
    assert np.allclose(q_d[130], desired.positions)
    c = controller.reaction.counters
    assert (c.events, c.reactions, c.rearmed) == (5, 2, 1)


def test_reflex_pushes_along_r_then_holds_where_the_reflex_ended() -> None:
    n = PUMA.dof
    stamps, received, q, qd = stream()
    trajs, events = scenario(stamps, q)
    law, s = ControlLaw(PUMA), settings("pd_feedforward", n)
    r = ReactionSettings("reflex", reflex_duration=0.02, reflex_fraction=0.3)  # 10 states of 2 ms
    controller = ReactingController(law, s, r)
    tau, q_d, _, _ = node_run(controller, stamps, received, q, qd, trajs, events)
    reflex, held = np.arange(41, 51), np.arange(51, 130)
    r0 = events[1].external_torque
    np.testing.assert_allclose(tau[reflex], reflex_torque(law, r, q[reflex], qd[reflex], r0), rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(tau[held], stop_torque(law, s, r, q[held], qd[held], q[51]), rtol=1e-12, atol=1e-10)
    np.testing.assert_array_equal(q_d[reflex], q[reflex])


def test_none_is_the_controller_bit_for_bit() -> None:
    n = PUMA.dof
    stamps, received, q, qd = stream()
    trajs, events = scenario(stamps, q)
    for law_name in ("feedforward", "pd_feedforward", "computed_torque"):
        s = settings(law_name, n, limit_efforts=True)
        plain = node_run(Controller(ControlLaw(PUMA), s), stamps, received, q, qd, trajs, [])
        reacting = ReactingController(ControlLaw(PUMA), s, NO_REACTION)
        same = node_run(reacting, stamps, received, q, qd, trajs, events)
        for a, b in zip(plain[:3], same[:3], strict=True):
            np.testing.assert_array_equal(a, b)
        assert reacting.reaction.counters.events == len(events) and not reacting.reaction.reports


# ------------------------------------------------------------------------------------------------
# the offline form
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", ["none", "stop", "float", "reflex"])
@pytest.mark.parametrize("law_name", ["pd_feedforward", "computed_torque"])
def test_reaction_batch_is_the_controller_one_state_at_a_time(strategy: str, law_name: str) -> None:
    n = PUMA.dof
    stamps, received, q, qd = stream()
    trajs, events = scenario(stamps, q)
    trajs.append(trajectory(0, int(stamps[41]) + 100_000, q[0]))  # while the reaction runs: refused
    law, s = ControlLaw(PUMA), settings(law_name, n, limit_efforts=True)
    r = ReactionSettings(strategy, reflex_duration=0.03)  # type: ignore[arg-type]
    controller = ReactingController(law, s, r)
    tau, q_d, qd_d, refused = node_run(controller, stamps, received, q, qd, trajs, events)
    replay = reaction_batch(law, s, r, received, stamps, q, qd, trajs, events)
    np.testing.assert_allclose(replay.commands.effort, tau, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(replay.commands.position, q_d, rtol=0, atol=1e-12)
    np.testing.assert_allclose(replay.commands.velocity, qd_d, rtol=0, atol=1e-12)
    assert replay.reports == controller.reaction.reports or all(
        (a.strategy, a.active, a.stamp, a.collision_stamp, a.command_stamp, a.joints)
        == (b.strategy, b.active, b.stamp, b.collision_stamp, b.command_stamp, b.joints)
        for a, b in zip(replay.reports, controller.reaction.reports, strict=True)
    )
    assert len(replay.reports) == len(controller.reaction.reports) == (0 if strategy == "none" else 3)
    expected_kept = [0, 3, 1, 2] if strategy == "none" else [0, 2]  # receive order
    assert replay.kept == expected_kept and (refused == [] if strategy == "none" else refused == [3, 1])
