"""Forward dynamics (Cholesky) and simulation (solve_ivp): inverse-of-inverse, energy conservation of a
frictionless unactuated arm, torque inputs, hand-over to the friction package's stick-slip solver."""

from __future__ import annotations

import numpy as np
import pytest
from engine_reference import double_pendulum, max_relative_error, puma560, random_states

import robot_dynamics as rd
from robot_dynamics.dynamics import TorqueProfile, kinetic_energy, potential_energy
from robot_dynamics.errors import StateError
from robot_dynamics.model import DHRow, DHTable, Inertial, from_dh


@pytest.mark.parametrize("name", ["puma560", "stanford", "scara", "puma560_modified"])
def test_forward_inverts_inverse(name: str) -> None:
    model = rd.load_robot(name)
    q, qd, qdd = random_states(60, model.dof, 100)
    tau = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
    assert max_relative_error(rd.forward_dynamics(model, q, qd, tau, friction=False), qdd) < 1e-9
    for s in range(5):
        assert max_relative_error(rd.forward_dynamics(model, q[s], qd[s], tau[s], friction=False), qdd[s]) < 1e-9
    w = np.random.default_rng(61).normal(0, 5, 6)
    loaded = rd.inverse_dynamics(model, q, qd, qdd, friction=False, wrench=w)
    assert max_relative_error(rd.forward_dynamics(model, q, qd, loaded, friction=False, wrench=w), qdd) < 1e-9


def test_forward_with_friction_delegates_to_stick_slip_solver() -> None:
    model = rd.load_robot("puma560")
    assert model.has_friction
    q, qd, qdd = random_states(62, 6, 20)
    tau = rd.inverse_dynamics(model, q, qd, qdd)  # with friction, all joints moving
    assert max_relative_error(rd.forward_dynamics(model, q, qd, tau), qdd) < 1e-8
    # at rest a small torque does not overcome the motor's Coulomb friction: the joint sticks
    zero = np.zeros(6)
    hold = rd.inverse_dynamics(model, q[0], zero, zero, friction=False)
    nudged = hold + np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.01])
    assert np.allclose(rd.forward_dynamics(model, q[0], zero, nudged), 0.0, atol=1e-9)
    assert abs(rd.forward_dynamics(model, q[0], zero, nudged, friction=False)[5]) > 1e-3


def test_forward_rejects_a_singular_inertia_matrix() -> None:
    massless = from_dh("massless", DHTable("standard", (DHRow("revolute", 1.0, 0.0, 0.0, 0.0),)), [Inertial()])
    with pytest.raises(StateError, match="not positive definite"):
        rd.forward_dynamics(massless, [0.1], [0.0], [1.0])
    with pytest.raises(StateError, match="not positive definite"):
        rd.forward_dynamics(massless, np.zeros((3, 1)), np.zeros((3, 1)), np.ones((3, 1)))


def test_energy_conservation_unactuated_puma() -> None:
    """Frictionless, unactuated PUMA 560 falling for 10 s: relative energy drift < 1e-6 (DOP853)."""
    model = puma560()
    q0 = np.array([0.3, -0.4, 0.8, 0.5, -0.7, 0.2])
    qd0 = np.array([0.5, -0.3, 0.2, 1.0, -1.5, 2.0])
    result = rd.simulate(model, q0, qd0, None, 10.0, dt=0.05, friction=False, rtol=1e-12, atol=1e-12)
    energy = kinetic_energy(model, result.q, result.qd) + potential_energy(model, result.q)
    scale = np.abs(kinetic_energy(model, result.q, result.qd)).max() + np.ptp(potential_energy(model, result.q))
    drift = np.abs(energy - energy[0]).max() / scale
    assert drift < 1e-6, drift
    assert np.ptp(potential_energy(model, result.q)) > 1.0  # it really moved
    # the recorded accelerations are the forward dynamics of the recorded states
    assert (
        max_relative_error(result.qdd, rd.forward_dynamics(model, result.q, result.qd, result.tau, friction=False))
        < 1e-12
    )


def test_energy_conservation_double_pendulum() -> None:
    model = double_pendulum()
    result = rd.simulate(model, [1.0, -0.5], [0.0, 2.0], None, 10.0, dt=0.1, friction=False, rtol=1e-12, atol=1e-12)
    energy = kinetic_energy(model, result.q, result.qd) + potential_energy(model, result.q)
    assert np.abs(energy - energy[0]).max() / np.abs(energy).max() < 1e-6


def test_torque_inputs_constant_callable_profile() -> None:
    model = double_pendulum()
    hold = rd.gravity_torques(model, [0.4, 0.3])
    still = rd.simulate(model, [0.4, 0.3], [0.0, 0.0], hold, 1.0, dt=0.25, friction=False)
    assert np.allclose(still.q, [0.4, 0.3], atol=1e-9) and np.allclose(still.tau, hold)
    assert still.t.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]

    def controller(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:  # PD + gravity: settles at 0
        return rd.gravity_torques(model, q) - 40.0 * q - 12.0 * qd

    settled = rd.simulate(model, [0.4, 0.3], [0.0, 0.0], controller, 6.0, friction=False)
    assert np.abs(settled.q[-1]).max() < 1e-3

    profile = TorqueProfile(np.array([0.0, 1.0]), np.array([[0.0, 0.0], [2.0, -1.0]]))
    assert np.allclose(profile(0.5), [1.0, -0.5]) and np.allclose(profile(3.0), [2.0, -1.0])
    as_tuple = rd.simulate(model, [0.0, 0.0], [0.0, 0.0], (profile.times, profile.values), 1.0, friction=False)
    as_object = rd.simulate(model, [0.0, 0.0], [0.0, 0.0], profile, 1.0, friction=False)
    assert np.array_equal(as_tuple.q, as_object.q)
    assert np.allclose(as_object.tau[50], [1.0, -0.5])


def test_simulate_with_friction_uses_the_stick_slip_integrator() -> None:
    """One-axis arm with Coulomb/static friction held by a torque inside the friction band stays at rest."""
    model = rd.load_robot("one_axis")
    static = model.joints[0].friction.static[0]  # type: ignore[index]
    hold = rd.gravity_torques(model, [0.5]) + 0.5 * static
    result = rd.simulate(model, [0.5], [0.0], hold, 0.5, dt=0.1)
    assert np.allclose(result.q, 0.5, atol=1e-12) and np.allclose(result.qd, 0.0, atol=1e-12)
    slipping = rd.simulate(model, [0.5], [0.0], hold + 2.0 * static, 0.5, dt=0.1)
    assert slipping.q[-1, 0] > 0.5 + 1e-3


def test_simulate_input_errors() -> None:
    model = double_pendulum()
    with pytest.raises(StateError, match=r"q0: expected shape \(2,\)"):
        rd.simulate(model, [0.0], [0.0, 0.0], None, 1.0)
    with pytest.raises(StateError, match=r"t_eval: times must lie in \[0, duration=1.0\]"):
        rd.simulate(model, [0.0, 0.0], [0.0, 0.0], None, 1.0, t_eval=[0.0, 1.1])
    rounded = rd.simulate(model, [0.0, 0.0], [0.0, 0.0], None, 0.3, t_eval=np.arange(4) * 0.1, friction=False)
    assert rounded.t[-1] == 3 * 0.1 > 0.3  # k * period may overshoot the duration by rounding
    with pytest.raises(StateError, match="duration: expected a positive"):
        rd.simulate(model, [0.0, 0.0], [0.0, 0.0], None, -1.0)
    with pytest.raises(StateError, match="torque profile: expected times"):
        rd.simulate(model, [0.0, 0.0], [0.0, 0.0], TorqueProfile(np.zeros(3), np.zeros((2, 2))), 1.0)
    with pytest.raises(StateError, match=r"torque\(0, q, qd\): expected 2 finite values"):
        rd.simulate(model, [0.0, 0.0], [0.0, 0.0], lambda t, q, qd: [np.nan, 0.0], 1.0, friction=False)
    with pytest.raises(StateError, match=r"q0, qd0: simulate takes one initial state"):
        rd.simulate(model, np.zeros((2, 2)), np.zeros((2, 2)), None, 1.0)
