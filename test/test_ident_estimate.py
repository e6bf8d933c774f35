"""Estimators on synthetic truth: torques from ``rd.inverse_dynamics`` of a model with known, perturbed
parameters (plus Gaussian noise), normal equations by hand, and the physically consistent fit."""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS, URDF_ARMS

import robot_dynamics as rd
from robot_dynamics.errors import StateError
from robot_dynamics.identification import (
    IdentificationError,
    NormalEquations,
    ParameterSet,
    accumulate,
    apply_parameters,
    base_parameters,
    fit_consistent,
    fit_least_squares,
    nominal_parameters,
    normal_equations,
    physical_problem,
    regressor,
    with_coulomb_velocity,
)
from robot_dynamics.identification.base import random_states
from robot_dynamics.identification.estimate import base_problem
from robot_dynamics.model import JointFriction, RobotModel

PSET = ParameterSet(asymmetric=True, coulomb_velocity=0.02)


def _panda() -> RobotModel:
    path, tip, _ = URDF_ARMS["panda"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_robot(str(EXAMPLE_ROBOTS / path), tip_link=tip)


def _truth(model: RobotModel, pset: ParameterSet, seed: int) -> RobotModel:
    """A consistent 'true' robot: every link's body scaled, friction and armature drawn at random."""
    rng = np.random.default_rng(seed)
    theta = nominal_parameters(model, pset)
    lay = pset.layout(model)
    for i in lay.links:
        theta[lay.link_slice(i)] *= rng.uniform(0.7, 1.3)
    cols = lay.joint_column
    theta[cols["Ia"]] = rng.uniform(0.01, 0.5, model.dof)
    theta[cols["Fv"]] = rng.uniform(0.1, 2.0, model.dof)
    theta[cols["Fc"]] = rng.uniform(0.5, 3.0, model.dof)
    if pset.asymmetric:
        theta[cols["Fa"]] = rng.uniform(-0.4, 0.4, model.dof) * theta[cols["Fc"]]
    theta[cols["Fo"]] = 0.0
    return apply_parameters(model, theta, pset, check=False)  # the bundled PUMA's link 1 has no mass


def _data(truth: RobotModel, pset: ParameterSet, count: int, seed: int, sigma=None):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    q, qd, qdd = random_states(truth, count, rng)
    tau = rd.inverse_dynamics(with_coulomb_velocity(truth, pset.coulomb_velocity), q, qd, qdd, smooth=True)
    if sigma is not None:
        tau = tau + rng.normal(0.0, sigma, tau.shape)
    return q, qd, qdd, tau


# ----------------------------------------------------------------------------------------------
# normal equations
# ----------------------------------------------------------------------------------------------
def test_normal_equations_by_hand_add_reweight_and_save(tmp_path: Path) -> None:
    model = rd.load_robot("stanford")
    pset = ParameterSet()
    q, qd, qdd, tau = _data(model, pset, 300, seed=1, sigma=0.3)
    Y = regressor(model, q, qd, qdd, pset)
    w = np.array([1.0, 2.0, 0.5, 4.0, 3.0, 1.5])
    ne = normal_equations(Y, tau, w)
    A = (Y * np.sqrt(w)[None, :, None]).reshape(-1, Y.shape[2])
    b = (tau * np.sqrt(w)).reshape(-1)
    np.testing.assert_allclose(ne.ata, A.T @ A, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(ne.atb, A.T @ b, rtol=1e-12, atol=1e-9)
    assert ne.btb == pytest.approx(b @ b, rel=1e-12) and ne.count == 300 and ne.joints == 6
    # two halves add up to the whole; weights can be applied afterwards; chunked accumulation agrees
    halves = normal_equations(Y[:120], tau[:120]) + normal_equations(Y[120:], tau[120:])
    np.testing.assert_allclose(halves.with_weights(w).ata, ne.ata, rtol=1e-12, atol=1e-9)
    chunked = accumulate(model, q, qd, qdd, tau, pset, w, chunk=7)
    np.testing.assert_allclose(chunked.ata, ne.ata, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(chunked.atb, ne.atb, rtol=1e-12, atol=1e-9)
    # per-joint residual RMS from the sums equals the direct one
    theta = nominal_parameters(model, pset)
    direct = np.sqrt(np.mean((tau - Y @ theta) ** 2, axis=0))
    np.testing.assert_allclose(ne.residual_rms(theta), direct, rtol=1e-8)
    path = tmp_path / "ne.npz"
    ne.save(path)
    back = NormalEquations.load(path)
    np.testing.assert_array_equal(back.ata_joint, ne.ata_joint)
    np.testing.assert_array_equal(back.weights, w)
    assert back.count == ne.count
    with pytest.raises(IdentificationError, match="weights"):
        ne.with_weights([1.0, -1.0, 1.0, 1.0, 1.0, 1.0])
    bad = tau.copy()
    bad[7, 2] = np.nan
    with pytest.raises(StateError, match="tau has non-finite values in 1 states"):
        accumulate(model, q, qd, qdd, bad, pset)
    with pytest.raises(IdentificationError, match="no data"):
        fit_least_squares(NormalEquations.empty(6, ne.parameters), base_parameters(model, pset), prior_weight=1.0)


# ----------------------------------------------------------------------------------------------
# weighted least squares
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["puma560", "stanford", "panda"])
def test_noise_free_data_recover_the_base_parameters(name: str) -> None:
    model = _panda() if name == "panda" else rd.load_robot(name)
    truth = _truth(model, PSET, seed=2)
    base = base_parameters(model, PSET)
    ne = accumulate(model, *_data(truth, PSET, 2000, seed=3), PSET)
    fit = fit_least_squares(ne, base, nominal_parameters(model, PSET))
    expected = base.to_base(nominal_parameters(truth, PSET))
    # relative to each parameter's own size, floored at 1e-3 of the largest torque contribution
    floor = 1e-3 * np.max(np.abs(expected) * base.scale) / base.scale
    err = np.abs(fit.theta_base - expected) / np.maximum(np.abs(expected), floor)
    assert err.max() < 1e-8, (base.names[int(np.argmax(err))], err.max())
    assert fit.residual_rms.max() < 1e-6 * np.sqrt(ne.btb_joint.max() / ne.count)
    # the identified model reproduces the truth's torques
    identified = fit.model(model, PSET, check=False)
    q, qd, qdd, tau = _data(truth, PSET, 50, seed=4)
    predicted = rd.inverse_dynamics(identified, q, qd, qdd, smooth=True)
    assert np.abs(predicted - tau).max() < 1e-7 * np.abs(tau).max()


def test_noisy_data_estimates_lie_within_three_sigma() -> None:
    model = rd.load_robot("puma560")
    truth = _truth(model, PSET, seed=5)
    base = base_parameters(model, PSET)
    sigma = np.array([0.8, 1.2, 0.6, 0.05, 0.04, 0.03])
    ne = accumulate(model, *_data(truth, PSET, 4000, seed=6, sigma=sigma), PSET)
    # two passes: unweighted, then weights from the per-joint residual variance
    first = fit_least_squares(ne, base)
    weighted = ne.with_weights(1.0 / first.residual_rms**2)
    fit = fit_least_squares(weighted, base)
    np.testing.assert_allclose(fit.residual_rms, sigma, rtol=0.06)
    assert 0.9 < fit.sigma2 < 1.1
    z = (fit.theta_base - base.to_base(nominal_parameters(truth, PSET))) / fit.std_base
    assert np.sum(np.abs(z) > 3.0) <= 1, dict(zip(base.names, np.round(z, 2), strict=True))
    assert np.all(np.isfinite(fit.std_base)) and 1.0 <= fit.condition_number < 1e4


def test_weights_alone_do_not_make_a_joint_unexcited() -> None:
    """Noise-free data weighed as a nearly noise-free recording is (five joints at the noise floor, ``sigma``
    1e-6 of the sixth's): every joint moves, so the fit is made, and it is the truth."""
    model = rd.load_robot("puma560")
    truth = _truth(model, PSET, seed=2)
    base = base_parameters(model, PSET)
    ne = accumulate(model, *_data(truth, PSET, 2000, seed=3), PSET)
    weighted = ne.with_weights(np.array([1e12, 1e12, 1e12, 1e12, 1e12, 1.0]))
    assert base_problem(weighted, base, None, 0.0).poorly_excited  # what the eigenvalue ratio alone says
    fit = fit_least_squares(weighted, base, nominal_parameters(model, PSET))
    expected = base.to_base(nominal_parameters(truth, PSET))
    floor = 1e-3 * np.max(np.abs(expected) * base.scale) / base.scale
    err = np.abs(fit.theta_base - expected) / np.maximum(np.abs(expected), floor)
    assert err.max() < 1e-6, (base.names[int(np.argmax(err))], err.max())


def test_unexcited_joint_is_named_or_held_by_the_prior() -> None:
    model = rd.load_robot("puma560")
    base = base_parameters(model, PSET)
    q, qd, qdd, tau = _data(model, PSET, 1000, seed=7)
    q[:, 5], qd[:, 5], qdd[:, 5] = 0.3, 0.0, 0.0  # joint 6 never moves
    tau = rd.inverse_dynamics(with_coulomb_velocity(model, PSET.coulomb_velocity), q, qd, qdd, smooth=True)
    ne = accumulate(model, q, qd, qdd, tau, PSET)
    with pytest.raises(IdentificationError, match=r"do not excite.*(Fv6|Fc6|Ia6)"):
        fit_least_squares(ne, base)
    nominal = nominal_parameters(model, PSET)
    fit = fit_least_squares(ne, base, nominal, prior_weight=1e-6)
    assert {"Fv6", "Fc6"} <= set(fit.poorly_excited)
    expected = base.to_base(nominal)
    for name in ("Fv6", "Fc6"):
        k = base.names.index(name)
        assert fit.theta_base[k] == pytest.approx(expected[k], rel=1e-6, abs=1e-9)
    assert fit.residual_rms.max() < 1e-3
    # the consistent fit's default prior holds the same directions
    consistent = fit_consistent(ne, model, PSET, base)
    assert {"Fv6", "Fc6"} <= set(consistent.poorly_excited)
    assert consistent.theta_base[base.names.index("Fv6")] == pytest.approx(expected[base.names.index("Fv6")], rel=1e-4)


# ----------------------------------------------------------------------------------------------
# physically consistent fit
# ----------------------------------------------------------------------------------------------
def _consistent_everywhere(theta, model: RobotModel, pset: ParameterSet) -> None:  # type: ignore[no-untyped-def]
    lay = pset.layout(model)
    for i in lay.links:
        assert physical_problem(theta[lay.link_slice(i)]) is None, i
    for kind in ("Ia", "Fv", "Fc"):
        assert np.all(theta[lay.joint_column[kind]] >= 0.0), kind
    assert np.all(np.abs(theta[lay.joint_column["Fa"]]) <= theta[lay.joint_column["Fc"]] + 1e-15)


def test_consistent_fit_with_consistent_truth_matches_least_squares() -> None:
    model = _panda()
    truth = _truth(model, PSET, seed=9)
    base = base_parameters(model, PSET)
    sigma = np.full(model.dof, 0.2)
    ne = accumulate(model, *_data(truth, PSET, 3000, seed=10, sigma=sigma), PSET, 1.0 / sigma**2)
    nominal = nominal_parameters(model, PSET)
    wls = fit_least_squares(ne, base, nominal)
    fit = fit_consistent(ne, model, PSET, base, nominal, prior_weight=0.0)
    assert fit.method == "consistent"
    _consistent_everywhere(fit.theta, model, PSET)
    assert fit.cost <= wls.cost * (1.0 + 1e-6)
    identified = fit.model(model, PSET)  # passes apply_parameters' own checks
    assert identified.dof == model.dof
    # noise free: the consistent fit recovers the base parameters too
    ne0 = accumulate(model, *_data(truth, PSET, 2000, seed=11), PSET)
    fit0 = fit_consistent(ne0, model, PSET, base, nominal, prior_weight=0.0)
    expected = base.to_base(nominal_parameters(truth, PSET))
    assert np.abs(fit0.theta_base - expected).max() < 1e-6 * np.abs(expected).max()


def test_consistent_fit_from_an_inconsistent_nominal_puma() -> None:
    """The bundled PUMA 560 (link 1 without mass, links 1 and 3 violating the triangle inequality) fitted
    to data of a consistent truth: every link comes out a rigid body, friction non-negative."""
    model = rd.load_robot("puma560")
    pset = ParameterSet(coulomb_velocity=0.02)
    consistent_links = list(model.joints)
    rng = np.random.default_rng(12)
    for i, joint in enumerate(model.joints):  # make the truth consistent: a real body per link
        if physical_problem(nominal_parameters(model, ParameterSet(links=(i,)))[:10]) is not None:
            consistent_links[i] = replace(
                joint, link=replace(joint.link, mass=max(joint.link.mass, 5.0), inertia=np.diag([0.3, 0.35, 0.4]))
            )
        consistent_links[i] = replace(
            consistent_links[i], friction=JointFriction(rng.uniform(0.1, 1.0), (1.0, -1.0)), motor=joint.motor
        )
    truth = model.with_changes(joints=tuple(consistent_links))
    base = base_parameters(model, pset)
    sigma = np.array([0.5, 0.5, 0.5, 0.05, 0.05, 0.05])
    ne = accumulate(model, *_data(truth, pset, 3000, seed=13, sigma=sigma), pset, 1.0 / sigma**2)
    fit = fit_consistent(ne, model, pset, base)
    lay = pset.layout(model)
    for i in lay.links:
        assert physical_problem(fit.theta[lay.link_slice(i)]) is None, i
    assert np.all(fit.theta[lay.joint_column["Fv"]] >= 0.0) and np.all(fit.theta[lay.joint_column["Fc"]] >= 0.0)
    wls = fit_least_squares(ne, base, nominal_parameters(model, pset), prior_weight=1e-6)
    assert fit.cost <= wls.cost * 1.01
    np.testing.assert_allclose(fit.residual_rms, sigma, rtol=0.1)


def test_fixed_torques_use_the_engines_smooth_friction_law() -> None:
    """What a parameter set leaves at stock is computed with the friction law the engine applies to
    the model: with ``coulomb="none"`` the Coulomb torque stays outside ``Y theta`` and is the smooth
    ``A tanh(qd / v_s) + B |tanh(qd / v_s)|`` with each joint's own width ``v_s`` (``A``, ``B`` the odd
    and even parts of its levels), as the nodes compensate it, not the exact sign."""
    from robot_dynamics.identification import fixed_torques
    from robot_dynamics.identification.synthetic import perturbed_model

    truth = perturbed_model(rd.load_robot("scara"), seed=4)
    widths = (0.03, 0.05, 0.002)
    joints = [
        replace(j, friction=replace(j.friction, smoothing_velocity=v))
        for j, v in zip(truth.joints, widths, strict=True)
    ]
    model = truth.with_changes(joints=tuple(joints))
    q, qd, qdd = random_states(model, 300, np.random.default_rng(5))
    qd[:50] *= 0.01  # slow states, where tanh and sign differ
    levels = np.array([j.friction.coulomb for j in model.joints])
    odd, even = 0.5 * (levels[:, 0] - levels[:, 1]), 0.5 * (levels[:, 0] + levels[:, 1])
    s = np.tanh(qd / np.array(widths))
    expected = odd * s + even * np.abs(s)
    fixed = fixed_torques(model, q, qd, qdd, ParameterSet(coulomb="none"))
    np.testing.assert_allclose(fixed, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())
    # Coulomb identified (tanh of the set's width, or the exact sign): nothing is left outside Y theta
    for pset in (ParameterSet(asymmetric=True), ParameterSet(coulomb="sign", asymmetric=True)):
        scale = np.abs(rd.inverse_dynamics(model, q, qd, qdd, smooth=True)).max()
        assert np.abs(fixed_torques(model, q, qd, qdd, pset)).max() < 1e-10 * scale


def test_payload_on_the_last_link_alone() -> None:
    """Payload identification: only the last link's 10 parameters, everything else a known torque
    (fixed_torques of the stock model); a 2 kg payload on the PUMA's link 6 is recovered exactly."""
    from robot_dynamics.identification import fixed_torques
    from robot_dynamics.model import Inertial

    model = rd.load_robot("puma560")
    pset = ParameterSet(links=(5,), armature=False, viscous=False, coulomb="none", offset=False)
    base = base_parameters(model, pset)
    assert base.rank == 10 and base.names == pset.names(model)  # nothing regroups: the rest is known
    j6 = model.joints[5]
    payload = Inertial(2.0, np.array([0.01, 0.02, 0.1]), np.diag([0.01, 0.012, 0.005]))
    truth = model.with_changes(joints=(*model.joints[:5], replace(j6, link=j6.link + payload)))
    q, qd, qdd = random_states(model, 1500, np.random.default_rng(14))
    tau = rd.inverse_dynamics(truth, q, qd, qdd, smooth=True)  # the smooth friction the nodes use
    ne = accumulate(model, q, qd, qdd, tau - fixed_torques(model, q, qd, qdd, pset), pset)
    expected = nominal_parameters(truth, pset)
    for fit in (fit_least_squares(ne, base), fit_consistent(ne, model, pset, base, prior_weight=0.0)):
        np.testing.assert_allclose(fit.theta, expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())
    assert physical_problem(fit.theta) is None


def _stribeck_truth(model: RobotModel, eps, delta, velocity: float):  # type: ignore[no-untyped-def]
    joints = []
    for j, joint in enumerate(model.joints):
        fr = JointFriction(1.0, (2.0, -1.5), (2.0 + delta[j], -1.5 - delta[j]), float(eps[j]), velocity)
        motor = replace(joint.motor, viscous=0.0, coulomb=(0.0, 0.0)) if joint.motor else None
        joints.append(replace(joint, friction=fr, motor=motor))
    return model.with_changes(joints=tuple(joints))


def test_stribeck_refinement_recovers_velocity_and_excess() -> None:
    """Schilling eq. 6-3-3 friction in the truth: with Stribeck velocities on the search grid the
    separable fit recovers them exactly and the excess to rounding; off the grid, within the fine
    grid's spacing, and the residual falls far below the linear model's."""
    from robot_dynamics.identification.stribeck import GRID, fit_stribeck

    model = rd.load_robot("puma560")
    pset = ParameterSet(asymmetric=True, coulomb_velocity=0.02)
    base = base_parameters(model, pset)
    nominal = nominal_parameters(model, pset)
    rng = np.random.default_rng(15)
    q, qd, qdd = random_states(model, 3000, rng)
    qd = qd * rng.uniform(0.0, 1.0, qd.shape) ** 2  # plenty of slow motion
    eps, delta = GRID[[5, 7, 9, 11, 3, 8]], rng.uniform(0.5, 2.0, 6)
    truth = _stribeck_truth(model, eps, delta, pset.coulomb_velocity)
    tau = rd.inverse_dynamics(truth, q, qd, qdd, smooth=True)
    sf = fit_stribeck(model, q, qd, qdd, tau, pset, base, nominal=nominal)
    np.testing.assert_allclose(sf.velocity, eps, rtol=1e-12)
    np.testing.assert_allclose(sf.excess, delta, rtol=1e-9)
    identified = sf.model(model, pset, check=False)  # the stock PUMA's link 1 has no mass
    np.testing.assert_allclose(rd.inverse_dynamics(identified, q, qd, qdd, smooth=True), tau, atol=1e-9)
    # off-grid velocities, noisy torques
    eps2 = np.array([0.004, 0.011, 0.03, 0.07, 0.15, 0.02])
    truth2 = _stribeck_truth(model, eps2, delta, pset.coulomb_velocity)
    sigma = 0.02
    tau2 = rd.inverse_dynamics(truth2, q, qd, qdd, smooth=True) + rng.normal(0.0, sigma, tau.shape)
    sf2 = fit_stribeck(model, q, qd, qdd, tau2, pset, base, np.full(6, 1 / sigma**2), nominal)
    ratio = np.exp(np.mean(np.diff(np.log(GRID)))) ** 0.2  # the fine grid's step
    assert np.all(np.abs(np.log(sf2.velocity / eps2)) <= np.log(ratio) * 1.5), sf2.velocity
    # (joint 1's eps = 0.004 lies inside the tanh width 0.02, where Stribeck and Coulomb look alike)
    assert np.all(np.abs(sf2.excess - delta) < 0.15 * delta)
    linear = fit_least_squares(accumulate(model, q, qd, qdd, tau2, pset, np.full(6, 1 / sigma**2)), base, nominal)
    assert sf2.cost < 0.2 * linear.cost
    np.testing.assert_allclose(sf2.fit.residual_rms, sigma, rtol=0.3)


def test_the_priors_information_follows_the_joints_a_column_acts_on() -> None:
    """Column 0 in joint 0's rows only, column 1 in both joints', column 2 in none: each column's prior
    is ``count * (joints it acts on) * (their least weight)``, every joint for a column without data."""
    from robot_dynamics.identification.estimate import prior_information

    ata = np.zeros((2, 3, 3))
    ata[0, 0, 0], ata[0, 1, 1], ata[1, 1, 1] = 4.0, 1.0, 9.0
    ne = NormalEquations(ata, np.zeros((2, 3)), np.zeros(2), 10, np.array([1.0, 100.0]), np.array([10.0, 10.0]))
    assert np.allclose(prior_information(ne, [0, 1, 2], 1e-3), 1e-3 * 10 * np.array([1.0, 2.0, 2.0]))
    equal = ne.with_weights([5.0, 5.0])  # equal weights: count * the sum of the acting joints' weights
    assert np.allclose(prior_information(equal, [0, 1, 2], 1.0), 10 * np.array([5.0, 10.0, 10.0]))
