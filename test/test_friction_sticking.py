"""Stick-slip forward dynamics and integration (robot_dynamics.dynamics.stick_slip).

Analytic checks on a single joint (Coulomb stop time, stiction hold, break-away, ramp), a brute-force
enumeration of the coupled stick/slip modes at rest, the forward/inverse round trip with bearing and
transmission friction, and a comparison of the hybrid integrator with a stiff regularised simulation.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from robot_dynamics.dynamics import inertia_matrix, rnea_with_reactions
from robot_dynamics.dynamics.stick_slip import forward_dynamics_with_friction, integrate, solve_stick_slip
from robot_dynamics.errors import StateError
from robot_dynamics.friction import apply_friction, friction_torques
from robot_dynamics.model import (
    BearingFriction,
    Inertial,
    Joint,
    JointFriction,
    Motor,
    RobotModel,
    TransmissionFriction,
    trans,
)

J = 0.5  # inertia about the joint axis


def one_axis(
    friction: JointFriction, motor: Motor | None = None, gravity: tuple[float, ...] = (0, 0, -9.81)
) -> RobotModel:
    """A link turning about z; gravity along the axis exerts no torque unless given otherwise."""
    link = Inertial(2.0, np.array([0.3, 0.0, 0.0]), np.diag([0.1, 0.1, J - 2.0 * 0.3**2]))
    return RobotModel(
        "one", [Joint("j", "revolute", np.eye(4), link=link, friction=friction, motor=motor)], gravity=np.array(gravity)
    )


def zero_torque(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    return np.zeros(len(q))


# ---------------------------------------------------------------------------------------------- single joint
def stop_time(model: RobotModel, qd0: float, t_guess: float) -> tuple[float, np.ndarray, np.ndarray]:
    t = np.linspace(0.0, 2.0 * t_guess, 2001)
    _, q, qd, qdd, _ = integrate(model, [0.0], [qd0], zero_torque, t, rtol=1e-10, atol=1e-12)
    k = int(np.argmax(qd[:, 0] == 0.0))
    assert k > 0
    # stops between samples k-1 and k: refine with the (linear) velocity of sample k-1
    t_stop = t[k - 1] - qd[k - 1, 0] / qdd[k - 1, 0]
    return t_stop, q, qd


def test_coulomb_stop_time_and_stays_stopped() -> None:
    model = one_axis(JointFriction(coulomb=(2.0, -2.0)))
    t_expected = J * 3.0 / 2.0  # J qdd = -Tc
    t_stop, q, qd = stop_time(model, 3.0, t_expected)
    assert t_stop == pytest.approx(t_expected, rel=1e-6)  # acceptance: +-1 %
    stopped = np.flatnonzero(qd[:, 0] == 0.0)
    assert np.all(np.diff(stopped) == 1) and stopped[-1] == len(qd) - 1  # never moves again
    assert np.all(q[stopped, 0] == q[stopped[0], 0])
    assert q[-1, 0] == pytest.approx(3.0 * t_expected / 2.0, rel=1e-9)


def test_asymmetric_coulomb_and_motor_stop_time() -> None:
    # moving backwards uses Tc- (joint) and |G| Tc- (motor); reflected inertia G^2 Jm adds to J
    motor = Motor(inertia=1e-4, gear_ratio=-20.0, viscous=0.0, coulomb=(0.05, -0.02))
    model = one_axis(JointFriction(coulomb=(0.9, -0.6)), motor)
    inertia = J + 400 * 1e-4
    t_expected = inertia * 2.5 / (0.6 + 20 * 0.02)
    t_stop, _, _ = stop_time(model, -2.5, t_expected)
    assert t_stop == pytest.approx(t_expected, rel=1e-6)


def test_viscous_coulomb_stop_time() -> None:
    b, tc, v0 = 0.7, 2.0, 3.0
    model = one_axis(JointFriction(viscous=b, coulomb=(tc, -tc)))
    t_expected = J / b * np.log(1.0 + b * v0 / tc)  # J qdd = -b qd - Tc
    t_stop, _, _ = stop_time(model, v0, t_expected)
    assert t_stop == pytest.approx(t_expected, rel=1e-6)


@pytest.mark.parametrize("torque", [2.9, -2.9, 0.0, 1.0])
def test_stiction_holds_below_the_static_level(torque: float) -> None:
    model = one_axis(JointFriction(coulomb=(2.0, -2.0), static=(3.0, -3.0), stribeck_velocity=0.0))
    _t, q, qd, qdd, tau = integrate(model, [0.4], [0.0], lambda t, q, qd: np.array([torque]), np.linspace(0, 2, 21))
    assert np.all(q == 0.4) and np.all(qd == 0.0) and np.all(qdd == 0.0)
    assert np.all(tau == torque)


@pytest.mark.parametrize("torque", [3.1, -3.1])
def test_break_away_above_the_static_level(torque: float) -> None:
    # eps = 0: the static level 3 only sets break-away, moving friction is Coulomb 2
    model = one_axis(JointFriction(coulomb=(2.0, -2.0), static=(3.0, -3.0), stribeck_velocity=0.0))
    t = np.linspace(0, 1, 11)
    _, q, _qd, qdd, _ = integrate(model, [0.0], [0.0], lambda t, q, qd: np.array([torque]), t, rtol=1e-10)
    a = (abs(torque) - 2.0) / J * np.sign(torque)
    assert np.allclose(qdd[1:, 0], a, rtol=1e-12)
    assert np.allclose(q[:, 0], 0.5 * a * t**2, rtol=1e-8, atol=1e-12)


def test_ramp_breaks_away_when_the_torque_reaches_the_static_level() -> None:
    k, tc = 2.0, 1.5
    model = one_axis(JointFriction(coulomb=(tc, -tc)))
    t = np.linspace(0, 2, 201)
    _, q, _, _, _ = integrate(model, [0.0], [0.0], lambda t, q, qd: np.array([k * t]), t, rtol=1e-11, atol=1e-13)
    tb = tc / k
    want = np.where(t > tb, k * (t - tb) ** 3 / (6 * J), 0.0)  # J qdd = k t - Tc after t_b
    assert np.all(q[t <= tb, 0] == 0.0)
    assert np.allclose(q[:, 0], want, rtol=1e-7, atol=1e-10)


def test_gravity_pendulum_held_or_released_by_static_friction() -> None:
    gravity_torque = 2.0 * 9.81 * 0.3  # link mass 2 at 0.3 m, horizontal, gravity -y
    for level, moves in ((gravity_torque * 1.01, False), (gravity_torque * 0.99, True)):
        model = one_axis(JointFriction(coulomb=(level, -level)), gravity=(0, -9.81, 0))
        _, q, _, qdd, _ = integrate(model, [0.0], [0.0], zero_torque, np.linspace(0, 0.5, 6))
        assert bool(q[-1, 0] != 0.0) is moves
        if moves:
            assert q[-1, 0] < 0 and qdd[0, 0] == pytest.approx(-(gravity_torque - level) / J, rel=1e-9)


def test_reversal_after_stop_when_the_load_exceeds_friction() -> None:
    # a constant torque 3 against Coulomb 2 stops the joint moving backward, then drives it forward
    model = one_axis(JointFriction(coulomb=(2.0, -2.0)))
    t = np.linspace(0, 2, 2001)
    _, q, _qd, _, _ = integrate(model, [0.0], [-1.0], lambda t, q, qd: np.array([3.0]), t, rtol=1e-11, atol=1e-13)
    t1 = J * 1.0 / 5.0  # decelerates with (3 + 2)/J
    q1 = -0.5 * 1.0 * t1
    want = np.where(t < t1, -t + 0.5 * 5.0 / J * t**2, q1 + 0.5 * 1.0 / J * (t - t1) ** 2)
    assert np.allclose(q[:, 0], want, atol=1e-8)


# ---------------------------------------------------------------------------------------------- coupled joints
def two_link(friction: tuple[JointFriction, JointFriction], gravity: tuple[float, ...] = (0, -9.81, 0)) -> RobotModel:
    links = [
        Inertial(3.0, np.array([0.25, 0.0, 0.0]), np.diag([0.01, 0.06, 0.07])),
        Inertial(1.5, np.array([0.2, 0.02, 0.0]), np.diag([0.005, 0.03, 0.03])),
    ]
    joints = [
        Joint("j1", "revolute", np.eye(4), link=links[0], friction=friction[0]),
        Joint("j2", "revolute", trans(0.5, 0.0, 0.0), link=links[1], friction=friction[1]),
    ]
    return RobotModel("two", joints, gravity=np.array(gravity))


def brute_force_modes(model: RobotModel, q: np.ndarray, tau: np.ndarray, levels: np.ndarray) -> list[tuple[int, ...]]:
    """All consistent mode combinations (0 stuck, +1/-1 slipping) at rest, by enumeration."""
    n = model.dof
    D = inertia_matrix(model, q)
    bias = rnea_with_reactions(model, q, np.zeros(n), np.zeros(n))[0]
    found = []
    for modes in itertools.product((0, 1, -1), repeat=n):
        stuck = [i for i in range(n) if modes[i] == 0]
        free = [i for i in range(n) if modes[i] != 0]
        link = tau - levels * np.array(modes)
        qdd = np.zeros(n)
        if free:
            qdd[free] = np.linalg.solve(D[np.ix_(free, free)], (link - bias)[free])
        lam = D @ qdd + bias
        slipping_ok = all(modes[i] * qdd[i] > 0 for i in free)
        if slipping_ok and all(tau[i] - levels[i] <= lam[i] <= tau[i] + levels[i] for i in stuck):
            found.append(modes)
    return found


def test_coupled_modes_at_rest_match_brute_force_enumeration() -> None:
    levels = np.array([4.0, 1.2])
    model = two_link((JointFriction(coulomb=(4.0, -4.0)), JointFriction(coulomb=(1.2, -1.2))))
    rng = np.random.default_rng(11)
    q = rng.uniform(-np.pi, np.pi, (200, 2))
    tau = rng.uniform(-12, 12, (200, 2))
    state = solve_stick_slip(model, q, np.zeros_like(q), tau)
    seen = set()
    for k in range(200):
        modes = brute_force_modes(model, q[k], tau[k], levels)
        assert len(modes) == 1  # the problem has a unique solution
        got = tuple(0 if state.stuck[k, i] else int(state.sigma[k, i]) for i in range(2))
        assert got == modes[0]
        seen.add(got)
    assert len(seen) >= 6  # stuck/stuck, stuck/slip, slip/slip in several directions were exercised
    single = forward_dynamics_with_friction(model, q[7], np.zeros(2), tau[7])
    assert single.shape == (2,) and np.array_equal(single, state.qdd[7])


def test_three_coupled_joints_at_rest_match_brute_force_enumeration() -> None:
    levels = np.array([3.0, 1.5, 0.4])
    base = two_link((JointFriction(coulomb=(3.0, -3.0)), JointFriction(coulomb=(1.5, -1.5))))
    third = Joint(
        "j3",
        "revolute",
        trans(0.4, 0.0, 0.0),
        link=Inertial(0.8, np.array([0.15, 0.0, 0.0]), np.diag([0.002, 0.01, 0.01])),
        friction=JointFriction(coulomb=(0.4, -0.4)),
    )
    model = base.with_changes(joints=(*base.joints, third))
    rng = np.random.default_rng(15)
    q = rng.uniform(-np.pi, np.pi, (150, 3))
    tau = rng.uniform(-8, 8, (150, 3))
    state = solve_stick_slip(model, q, np.zeros_like(q), tau)
    seen = set()
    for k in range(150):
        modes = brute_force_modes(model, q[k], tau[k], levels)
        assert len(modes) == 1
        got = tuple(0 if state.stuck[k, i] else int(state.sigma[k, i]) for i in range(3))
        assert got == modes[0]
        seen.add(got)
    assert len(seen) >= 8


def thesis_puma_like() -> RobotModel:
    """Three joints with Coulomb, motor, journal bearings and transmissions (Dhanaraj (1990) Table 3.4 values)."""
    from robot_dynamics.model import DHRow, DHTable, from_dh

    table = DHTable(
        "standard",
        (
            DHRow("revolute", 0.0, np.pi / 2, 0.0, 0.0),
            DHRow("revolute", 0.4318, 0.0, 0.0, 0.0),
            DHRow("revolute", 0.0203, -np.pi / 2, 0.15005, 0.0),
        ),
    )
    links = [
        Inertial.from_components(2.0, [0, 0, 0], 0.1, 0.35, 0.1),
        Inertial.from_components(17.4, [-0.3638, 0.006, 0.2275], 0.13, 0.524, 0.539),
        Inertial.from_components(4.8, [-0.0203, -0.0141, 0.070], 0.066, 0.086, 0.0125),
    ]
    eff = ((0.0, 0.30), (0.0076, 0.346), (0.0307, 0.454), (0.0856, 0.562), (0.3, 0.75), (1.0, 0.85))
    friction = [
        JointFriction(
            viscous=0.2,
            coulomb=(0.5, -0.4),
            bearing=BearingFriction("journal", 0.1, r, 0.1),
            transmission=TransmissionFriction(eff, tb, tm),
        )
        for r, tb, tm in ((0.10, 6.3, 97.6), (0.08, 5.5, 186.4), (0.07, 2.6, 89.4))
    ]
    motors = [
        Motor(200e-6, -62.6111, 1.48e-3, (0.395, -0.435)),
        Motor(200e-6, 107.815, 0.817e-3, (0.126, -0.071)),
        None,
    ]
    return from_dh("puma3_thesis", table, links, friction=friction, motors=motors)


def test_forward_inverse_round_trip_with_bearing_and_transmission() -> None:
    model = thesis_puma_like()
    rng = np.random.default_rng(12)
    q = rng.uniform(-2, 2, (60, 3))
    qd = rng.uniform(-2, 2, (60, 3))
    tau = rng.uniform(-150, 150, (60, 3))
    qdd = forward_dynamics_with_friction(model, q, qd, tau)
    rigid, force, moment = rnea_with_reactions(model, q, qd, qdd)
    tau_joint = rigid + model.arrays.reflected_motor_inertia * qdd
    terms = apply_friction(model, qd, tau_joint, force, moment)
    assert np.max(np.abs(tau_joint + terms.total - tau)) < 1e-9
    assert np.all(np.abs(terms.bearing) > 0) and np.all(np.abs(terms.transmission) > 0)
    # with a tool load: it enters the link torques and the reactions behind the bearing friction
    wrench = rng.normal(scale=20, size=(60, 6))
    qdd_w = forward_dynamics_with_friction(model, q, qd, tau, wrench=wrench)
    rigid, force, moment = rnea_with_reactions(model, q, qd, qdd_w, wrench=wrench)
    tau_joint = rigid + model.arrays.reflected_motor_inertia * qdd_w
    terms = apply_friction(model, qd, tau_joint, force, moment)
    assert np.max(np.abs(tau_joint + terms.total - tau)) < 1e-9
    assert np.max(np.abs(qdd_w - qdd)) > 1e-3


def test_resting_joints_with_load_dependent_friction_respect_their_intervals() -> None:
    model = thesis_puma_like()
    rng = np.random.default_rng(13)
    q = rng.uniform(-2, 2, (100, 3))
    qd = np.where(rng.uniform(size=(100, 3)) < 0.5, 0.0, rng.uniform(-1, 1, (100, 3)))
    tau = rng.uniform(-60, 60, (100, 3))
    s = solve_stick_slip(model, q, qd, tau)
    rest = qd == 0.0
    stuck = s.stuck
    assert np.all(stuck <= rest) and stuck.any() and (rest & ~stuck).any()
    assert np.all(s.qdd[stuck] == 0.0)
    assert np.all((s.lower[stuck] <= s.link_torque[stuck] + 1e-9) & (s.link_torque[stuck] <= s.upper[stuck] + 1e-9))
    slipping = rest & ~stuck
    assert np.all(s.sigma[slipping] * s.qdd[slipping] > -1e-9)
    assert np.allclose(s.link_torque[slipping], np.where(s.sigma[slipping] > 0, s.lower[slipping], s.upper[slipping]))


def smooth_reference(model: RobotModel, q0: np.ndarray, torque: callable, t: np.ndarray, vs: float) -> np.ndarray:  # type: ignore[valid-type]
    """Independent regularised simulation: Coulomb replaced by a steep linear window, stiff solver."""
    smooth_model = model.with_changes(
        joints=tuple(
            j.__class__(
                **{**j.__dict__, "friction": JointFriction(**{**j.friction.__dict__, "smoothing_velocity": vs})}
            )
            for j in model.joints
        )
    )

    def rhs(tt: float, y: np.ndarray) -> np.ndarray:
        q, qd = y[:2], y[2:]
        D = inertia_matrix(smooth_model, q)
        bias = rnea_with_reactions(smooth_model, q, qd, np.zeros(2))[0]
        b = friction_torques(smooth_model, qd, smooth=True, smooth_kind="linear")
        return np.concatenate([qd, np.linalg.solve(D, torque(tt, q, qd) - bias - b)])

    sol = solve_ivp(
        rhs, (t[0], t[-1]), np.concatenate([q0, np.zeros(2)]), method="Radau", t_eval=t, rtol=1e-8, atol=1e-10
    )
    return sol.y[:2].T


def test_hybrid_simulation_matches_a_stiff_regularised_simulation() -> None:
    model = two_link(
        (JointFriction(coulomb=(3.0, -3.0), viscous=0.1), JointFriction(coulomb=(1.0, -1.0), viscous=0.05))
    )

    def torque(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        return np.array([6.0 * np.sin(3 * t) + 8.0, 2.5 * np.cos(5 * t)])

    t = np.linspace(0, 1.5, 151)
    _, q, qd, _, _ = integrate(model, [0.3, -0.4], [0.0, 0.0], torque, t, rtol=1e-9, atol=1e-11)
    stuck_samples = (qd == 0.0).sum(axis=0)
    assert stuck_samples[1] > 10  # joint 2 sticks for part of the motion
    reference = smooth_reference(model, np.array([0.3, -0.4]), torque, t, 1e-5)
    assert np.max(np.abs(q - reference)) < 2e-5  # the regularisation error is O(v_s): 4.8e-6 here


def test_puma_like_simulation_finite_and_stuck_joints_exactly_still() -> None:
    model = thesis_puma_like()
    t = np.linspace(0, 0.6, 31)
    _, q, qd, qdd, _tau = integrate(
        model, [0.1, 0.5, -0.5], [0.0, 0.0, 0.0], lambda t, q, qd: 40 * np.sin(4 * t) * np.ones(3), t
    )
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(qd)) and np.all(np.abs(qd) < 50)
    still = qd[1:] == 0.0  # (at t = 0 a resting joint may be breaking away)
    assert still.any() and (~still).any()
    assert np.all(qdd[1:][still] == 0.0)


def test_integrate_argument_errors() -> None:
    model = one_axis(JointFriction(coulomb=(1.0, -1.0)))
    with pytest.raises(ValueError, match=r"integrate: unknown options \['rtl'\]"):
        integrate(model, [0.0], [0.0], zero_torque, [0.0, 1.0], rtl=1e-3)
    with pytest.raises(StateError, match=r"torque_fn\(t, q, qd\) must return shape \(1,\), got \(2,\)"):
        integrate(model, [0.0], [0.0], lambda t, q, qd: np.zeros(2), [0.0, 1.0])
    with pytest.raises(StateError, match=r"t_eval: expected ascending finite times"):
        integrate(model, [0.0], [0.0], zero_torque, [1.0, 0.0])
    with pytest.raises(StateError, match=r"qd: expected shape \(1,\) or \(N, 1\), got \(2,\)"):
        forward_dynamics_with_friction(model, [0.0], [0.0, 1.0], [0.0])


def test_engine_delegates_forward_dynamics_and_simulate() -> None:
    from robot_dynamics import forward_dynamics, simulate

    model = thesis_puma_like()
    rng = np.random.default_rng(14)
    q, qd, tau = rng.uniform(-2, 2, (3, 3)), rng.uniform(-1, 1, (3, 3)), rng.uniform(-50, 50, (3, 3))
    qd[0, 1] = 0.0
    assert np.array_equal(
        forward_dynamics(model, q, qd, tau, friction=True), forward_dynamics_with_friction(model, q, qd, tau)
    )
    t = np.linspace(0, 0.2, 11)
    result = simulate(
        model, [0.1, 0.5, -0.5], [0.0, 0.0, 0.0], lambda t, q, qd: 40 * np.sin(4 * t) * np.ones(3), 0.2, t_eval=t
    )
    _, q_ref, qd_ref, _, _ = integrate(
        model,
        [0.1, 0.5, -0.5],
        [0.0, 0.0, 0.0],
        lambda t, q, qd: 40 * np.sin(4 * t) * np.ones(3),
        t,
        method="DOP853",
        rtol=1e-9,
        atol=1e-9,
    )
    assert np.allclose(result.q, q_ref, atol=1e-12) and np.array_equal(result.qd == 0.0, qd_ref == 0.0)
