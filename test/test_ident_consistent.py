"""The physically consistent fit (a semidefinite program solved by a barrier method) against independent
references: the pseudo-inertia of point masses summed by hand, the cost at the (feasible) truth,
bounded least squares by ``scipy.optimize.lsq_linear`` when only the friction bounds are active, and a
Cholesky-factor parametrisation minimised by ``scipy.optimize.minimize`` when a link's LMI is active."""

from __future__ import annotations

import functools
import warnings
from dataclasses import replace

import numpy as np
import pytest
import scipy.optimize
from engine_reference import EXAMPLE_ROBOTS, URDF_ARMS

import robot_dynamics as rd
from robot_dynamics.identification import (
    BaseParameters,
    IdentificationError,
    NormalEquations,
    ParameterSet,
    accumulate,
    base_parameters,
    fit_consistent,
    fit_least_squares,
    fixed_torques,
    link_parameters,
    nominal_parameters,
    physical_problem,
)
from robot_dynamics.identification.consistent import (
    parameters_of_pseudo_inertia,
    pseudo_inertia,
    strictly_consistent_link,
)
from robot_dynamics.identification.synthetic import perturbed_model, record
from robot_dynamics.model import Inertial, RobotModel

PSET = ParameterSet()


@functools.cache
def _robot(name: str) -> RobotModel:
    if name == "panda":
        path, tip, _ = URDF_ARMS["panda"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return rd.load_robot(str(EXAMPLE_ROBOTS / path), tip_link=tip)
    return rd.load_robot(name)


@functools.cache
def _base(name: str, pset: ParameterSet = PSET) -> BaseParameters:
    return base_parameters(_robot(name), pset)


def _normal_equations(
    model: RobotModel, truth: RobotModel, pset: ParameterSet, seeds: tuple[int, ...], noise: float, duration: float
) -> NormalEquations:
    """Recordings of ``truth`` (``synthetic.record``), the torque outside ``Y theta`` removed."""
    total: NormalEquations | None = None
    for seed in seeds:
        rec = record(truth, duration, 250.0, seed=seed, effort_noise=noise)
        tau = rec.tau - fixed_torques(model, rec.q, rec.qd, rec.qdd, pset)
        part = accumulate(model, rec.q, rec.qd, rec.qdd, tau, pset)
        total = part if total is None else total + part
    assert total is not None
    return total


def _assert_consistent(theta: np.ndarray, model: RobotModel, pset: ParameterSet) -> None:
    lay = pset.layout(model)
    for i in lay.links:
        assert physical_problem(theta[lay.link_slice(i)]) is None, i
        assert np.linalg.eigvalsh(pseudo_inertia(theta[lay.link_slice(i)]))[0] > 0.0, i
    for kind in ("Ia", "Fv", "Fc"):
        cols = lay.joint_column[kind]
        assert np.all(theta[cols[cols >= 0]] >= 0.0), kind


# ----------------------------------------------------------------------------------------------
# pseudo-inertia
# ----------------------------------------------------------------------------------------------
def test_pseudo_inertia_of_point_masses_and_its_inverse() -> None:
    """``J = sum m_k [r_k; 1][r_k; 1]^T`` for point masses (Wensing, Kim & Slotine 2017), from
    the standard parameters of the same masses summed by hand; positive definite iff a rigid body."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        m = rng.uniform(0.1, 2.0, 6)
        r = rng.normal(0.0, 0.3, (6, 3))
        h = np.hstack([r, np.ones((6, 1))])
        J = np.einsum("k,ka,kb->ab", m, h, h)
        inertia = np.einsum(
            "k,kab->ab", m, np.einsum("ka,ka->k", r, r)[:, None, None] * np.eye(3) - r[:, :, None] * r[:, None, :]
        )
        phi = np.array([m.sum(), *(m @ r), *inertia[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]])
        np.testing.assert_allclose(pseudo_inertia(phi), J, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(parameters_of_pseudo_inertia(J), phi, rtol=1e-12, atol=1e-12)
        assert physical_problem(phi) is None
        # a batch (..., 10) gives (..., 4, 4)
        assert pseudo_inertia(np.stack([phi, phi])).shape == (2, 4, 4)
    # the triangle inequality violated (I_c = diag(1, 1, 3)): J has a negative eigenvalue
    bad = link_parameters(Inertial(1.0, np.zeros(3), np.diag([1.0, 1.0, 3.0])))
    assert physical_problem(bad) is not None and np.linalg.eigvalsh(pseudo_inertia(bad))[0] < 0.0


def test_start_projection_makes_the_published_puma_links_strictly_consistent() -> None:
    puma = _robot("puma560")
    for i in (0, 2):  # link 1 has no mass, link 3 violates the triangle inequality as published
        phi = link_parameters(puma.joints[i].link)
        assert physical_problem(phi) is not None
        fixed = strictly_consistent_link(phi)
        eig = np.linalg.eigvalsh(pseudo_inertia(fixed))
        assert physical_problem(fixed) is None and eig[0] >= 0.99e-4 * eig[-1]
    good = link_parameters(puma.joints[1].link)
    np.testing.assert_array_equal(strictly_consistent_link(good), good)


# ----------------------------------------------------------------------------------------------
# rigid-body truths: never worse than the truth, close to least squares
# ----------------------------------------------------------------------------------------------
CASES = [("scara", 9), ("scara", 1), ("scara", 4), ("puma560", 0), ("puma560", 2), ("puma560", 5)]
CASES += [("fu_two_link", 0), ("fu_two_link", 7), ("panda", 0), ("panda", 3)]


@pytest.mark.parametrize(("name", "seed"), CASES)
def test_consistent_fit_of_a_rigid_body_truth(name: str, seed: int) -> None:
    """The truth is feasible, so the consistent optimum costs at most what the truth costs; with the
    truth strictly inside the set the price of consistency is small (within 1 % of least squares)."""
    model = _robot(name)
    truth = perturbed_model(model, seed=seed)
    base = _base(name)
    ne = _normal_equations(model, truth, PSET, (100, 101), 0.05, 1.5)
    nominal = nominal_parameters(model, PSET)
    truth_cost = float(ne.weights @ ne.residual_sum(nominal_parameters(truth, PSET)))
    wls = fit_least_squares(ne, base, nominal, prior_weight=1e-9)
    fit = fit_consistent(ne, model, PSET, base, nominal, prior_weight=0.0)
    assert 0.0 < fit.optimality_gap <= 1e-9 * wls.cost
    _assert_consistent(fit.theta, model, PSET)
    assert fit.cost <= truth_cost * (1.0 + 1e-7)
    assert fit.cost <= wls.cost * 1.01
    fit.model(model, PSET)  # apply_parameters' own checks pass
    # the default prior (1e-6) moves the cost by far less than the noise
    assert fit_consistent(ne, model, PSET, base, nominal).cost <= truth_cost * (1.0 + 1e-4)


# ----------------------------------------------------------------------------------------------
# independent optimisers on the same cost
# ----------------------------------------------------------------------------------------------
def _least_squares_form(ne: NormalEquations) -> tuple[np.ndarray, np.ndarray, float]:
    """``A, b, c`` with ``|A theta - b|^2 + c`` = the weighted cost (a square root of ``ata``)."""
    eig, vec = np.linalg.eigh(ne.ata)
    keep = eig > 1e-13 * eig[-1]
    A = (vec[:, keep] * np.sqrt(eig[keep])).T
    b = (vec[:, keep].T @ ne.atb) / np.sqrt(eig[keep])
    return A, b, ne.btb - float(b @ b)


def test_friction_bounds_active_agrees_with_bounded_least_squares() -> None:
    """A SCARA whose joint 1 has no Coulomb friction and joint 3 no viscous friction: the noisy
    least-squares levels come out negative, the bounds are active and the links strictly inside, so
    the optimum is that of bounded least squares (``scipy.optimize.lsq_linear``, a lower bound)."""
    model = _robot("scara")
    truth = perturbed_model(model, seed=2)
    joints = list(truth.joints)
    joints[0] = replace(joints[0], friction=replace(joints[0].friction, coulomb=(0.0, 0.0)))
    joints[2] = replace(joints[2], friction=replace(joints[2].friction, viscous=0.0))
    truth = truth.with_changes(joints=tuple(joints))
    pset = ParameterSet(offset=False)
    base = _base("scara", pset)
    ne = _normal_equations(model, truth, pset, (30, 31, 32), 0.3, 1.5)
    lay = pset.layout(model)
    wls = fit_least_squares(ne, base, nominal_parameters(model, pset))
    bounded = [int(lay.joint_column[k][j]) for k in ("Ia", "Fv", "Fc") for j in range(model.dof)]
    assert np.min(wls.theta[bounded]) < 0.0  # the bounds matter
    A, b, c = _least_squares_form(ne)
    lower = np.full(lay.size, -np.inf)
    lower[bounded] = 0.0
    ref = scipy.optimize.lsq_linear(A, b, bounds=(lower, np.inf), tol=1e-14, lsmr_tol="auto", max_iter=10000)
    ref_cost = float(np.sum((A @ ref.x - b) ** 2) + c)
    fit = fit_consistent(ne, model, pset, base, prior_weight=0.0)
    _assert_consistent(fit.theta, model, pset)
    assert fit.cost >= ref_cost * (1.0 - 1e-9)  # fewer constraints cannot cost more
    assert fit.cost <= ref_cost * (1.0 + 1e-7)
    active = fit.theta[bounded] < 1e-6 * np.abs(fit.theta[bounded]).max()
    np.testing.assert_array_equal(active, ref.x[bounded] < 1e-6 * np.abs(ref.x[bounded]).max())


def _factor_search(ne: NormalEquations, start: np.ndarray) -> float:
    """The least cost of one link's 10 parameters over ``J = L L^T`` (any upper-triangular 4x4 ``L``):
    ``scipy.optimize.minimize`` (BFGS) from ``start``'s factor and three random ones, the best."""
    A, b, c = _least_squares_form(ne)
    rows, cols = np.triu_indices(4)

    def cost(x: np.ndarray) -> float:
        L = np.zeros((4, 4))
        L[rows, cols] = x
        return float(np.sum((A @ parameters_of_pseudo_inertia(L @ L.T) - b) ** 2) + c)

    flip = np.arange(3, -1, -1)
    J0 = pseudo_inertia(start)
    J0 = J0 + max(1e-3, -2.0 * float(np.linalg.eigvalsh(J0)[0])) * np.eye(4)
    U0 = np.linalg.cholesky(J0[np.ix_(flip, flip)])[np.ix_(flip, flip)]  # J0 = U0 U0^T, U0 upper
    starts = [U0[rows, cols], *(np.random.default_rng(k).normal(0.0, 0.5, 10) for k in range(3))]
    options = {"gtol": 1e-12, "maxiter": 20000}
    return min(float(scipy.optimize.minimize(cost, x, method="BFGS", options=options).fun) for x in starts)


def _payload_data(payload: Inertial) -> tuple[RobotModel, RobotModel, ParameterSet]:
    model = _robot("puma560")
    joints = list(model.joints)
    joints[-1] = replace(joints[-1], link=payload)
    pset = ParameterSet(armature=False, viscous=False, coulomb="none", offset=False, links=(model.dof - 1,))
    return model, model.with_changes(joints=tuple(joints)), pset


def test_point_mass_payload_on_the_lmi_boundary_agrees_with_a_cholesky_factor_search() -> None:
    """A point-mass payload (pseudo-inertia of rank 1, on the boundary of the set): its noisy
    least-squares estimate is no rigid body; the consistent estimate minimises the cost over
    ``J = L L^T`` (:func:`_factor_search`)."""
    payload = Inertial(2.0, np.array([0.01, -0.02, 0.05]), np.zeros((3, 3)))
    model, truth, pset = _payload_data(payload)
    base = base_parameters(model, pset)
    ne = _normal_equations(model, truth, pset, (40, 41), 0.05, 1.5)
    wls = fit_least_squares(ne, base)
    assert physical_problem(wls.theta) is not None
    fit = fit_consistent(ne, model, pset, base, prior_weight=0.0)
    _assert_consistent(fit.theta, model, pset)
    reference = _factor_search(ne, link_parameters(payload))
    assert fit.cost > wls.cost * (1.0 + 1e-6)  # the constraint costs something
    assert fit.cost <= reference * (1.0 + 1e-9)
    assert fit.cost == pytest.approx(reference, rel=1e-6)
    eig = np.linalg.eigvalsh(pseudo_inertia(fit.theta))
    assert eig[0] < 1e-5 * eig[-1]  # on the boundary, like the truth


def test_data_of_a_non_physical_body_cost_more_and_the_pipeline_warns() -> None:
    """Torques of a payload no rigid body has (inertia about the centre of mass ``diag(0.01, 0.01,
    0.1)``: the triangle inequality fails): the consistent optimum (checked against the factor
    search) costs clearly more than least squares, and the pipeline says so."""
    from robot_dynamics.identification.pipeline import fit_statistics
    from robot_dynamics.identification.samples import statistics_from_arrays

    payload = Inertial(2.0, np.array([0.01, -0.02, 0.05]), np.diag([0.01, 0.01, 0.1]))
    model, truth, pset = _payload_data(payload)
    base = base_parameters(model, pset)
    ne = _normal_equations(model, truth, pset, (50, 51), 0.05, 1.5)
    wls = fit_least_squares(ne, base)
    fit = fit_consistent(ne, model, pset, base, prior_weight=0.0)
    _assert_consistent(fit.theta, model, pset)
    assert fit.cost > 10.0 * wls.cost
    assert fit.cost == pytest.approx(_factor_search(ne, link_parameters(payload)), rel=1e-6)
    recs = [record(truth, 1.5, 250.0, seed=seed, effort_noise=0.05) for seed in (50, 51)]
    stats = [statistics_from_arrays(model, pset, r.t, r.q, r.qd, r.tau) for r in recs]
    result = fit_statistics(model, pset, stats)
    assert any("times the least-squares cost" in w for w in result.warnings)


def test_bad_settings_and_the_step_limit() -> None:
    model = _robot("fu_two_link")
    base = _base("fu_two_link")
    ne = _normal_equations(model, perturbed_model(model, seed=0), PSET, (1,), 0.05, 1.0)
    with pytest.raises(IdentificationError, match="null_weight"):
        fit_consistent(ne, model, PSET, base, null_weight=0.0)
    # a step limit too small to finish: still a consistent estimate, but no optimality bound
    early = fit_consistent(ne, model, PSET, base, max_steps=3)
    _assert_consistent(early.theta, model, PSET)
    assert early.optimality_gap == float("inf")
    assert fit_least_squares(ne, base, prior_weight=1e-6).optimality_gap == 0.0
