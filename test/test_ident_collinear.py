"""Offsets held at zero where the motion cannot tell them from the joint's other torques (.collinear)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS

import robot_dynamics as rd
from robot_dynamics.dynamics import inverse_dynamics
from robot_dynamics.identification.base import base_parameters
from robot_dynamics.identification.collinear import VIF_HOLD, held_offsets, hold_offsets, offset_vif
from robot_dynamics.identification.estimate import fit_least_squares, normal_equations
from robot_dynamics.identification.fitting import fit_statistics
from robot_dynamics.identification.friction_laws import friction_parameter_set, reduction_parameter_set
from robot_dynamics.identification.parameters import ParameterSet
from robot_dynamics.identification.pipeline import identify
from robot_dynamics.identification.regressor import regressor
from robot_dynamics.identification.report import summary
from robot_dynamics.identification.report_text import format_table
from robot_dynamics.identification.result import IdentificationResult
from robot_dynamics.identification.samples import PipelineSettings, statistics_from_arrays
from robot_dynamics.identification.synthetic import Recording, exciting_motion, perturbed_model, write_bag

UR5 = EXAMPLE_ROBOTS / "ur_description/urdf/ur5_robot.urdf"
SHOULDER = 1  # the UR5's shoulder lift: the joint whose gravity torque the small swing keeps nearly constant
SWING = 0.3  # its excursion scaled by this


def test_vif_is_one_over_one_minus_r_squared() -> None:
    """The offset's VIF equals ``1 / (1 - R^2)`` of its column regressed (uncentred) on the other columns."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.0, 1.0, 400)
    columns = np.stack([1.0 + 0.05 * x**2, x, np.ones_like(x)], axis=1)  # a nearly constant column, and the offset
    Y = columns[:, None, :]
    ne = normal_equations(Y, rng.normal(size=(400, 1)))

    class Base:  # the three columns are the base parameters, unscaled
        independent = np.arange(3)
        scale = np.ones(3)

    vif = offset_vif(ne, Base(), np.array([2]))  # type: ignore[arg-type]
    others = columns[:, :2]
    fitted = others @ np.linalg.lstsq(others, columns[:, 2], rcond=None)[0]
    r2 = float(fitted @ fitted) / float(columns[:, 2] @ columns[:, 2])
    assert vif[0] == pytest.approx(1.0 / (1.0 - r2), rel=1e-6)
    assert vif[0] > 100.0
    assert np.isnan(offset_vif(ne, Base(), np.array([-1]))[0])  # type: ignore[arg-type]  # no offset


def test_held_needs_both_collinear_and_insignificant() -> None:
    vif = np.array([1.0, 1e3, 1e3, np.nan])
    held = held_offsets(vif, np.array([0.0, 0.1, 1.0, 0.0]), np.array([1.0, 0.1, 0.1, 1.0]))
    assert held.tolist() == [False, True, False, False]
    assert VIF_HOLD > 1.0


def test_holding_fits_the_rest_without_the_offset() -> None:
    """A held offset's estimate is 0 and the other parameters are the least-squares fit without its column."""
    model = rd.load_robot("puma560")
    pset = ParameterSet()
    _, q, qd, qdd, _ = exciting_motion(model, 2.0, 100.0, seed=3)

    Y = regressor(model, q, qd, qdd, pset)
    tau = np.asarray(inverse_dynamics(model, q, qd, qdd, friction=True, smooth=True)) + 0.3
    base = base_parameters(model, pset, rng=np.random.default_rng(0))
    cols = pset.layout(model).joint_column["Fo"]
    held = np.zeros(model.dof, dtype=bool)
    held[1] = True
    fit = fit_least_squares(hold_offsets(normal_equations(Y, tau), cols, held), base)
    assert fit.theta[cols[1]] == 0.0
    keep = np.setdiff1d(np.arange(Y.shape[2]), [cols[1]])
    stacked = Y[:, :, keep].reshape(-1, keep.size)
    direct = np.linalg.lstsq(stacked, tau.reshape(-1), rcond=None)[0]  # the torques it predicts are unique
    predicted = np.einsum("ijk,k->ij", Y, fit.theta).reshape(-1)
    assert np.allclose(predicted, stacked @ direct, atol=1e-6 * float(np.abs(tau).max()))


def _shoulder_swing(truth: rd.RobotModel, noise: float, offset: np.ndarray) -> tuple[Any, ...]:
    """An exciting motion whose shoulder swings SWING times as far (its gravity torque nearly constant)."""
    t, q, qd, qdd, stamps = exciting_motion(truth, 6.0, 250.0, seed=5)
    centre = float(np.mean(q[:, SHOULDER]))
    q[:, SHOULDER] = centre + SWING * (q[:, SHOULDER] - centre)
    qd[:, SHOULDER] *= SWING
    qdd[:, SHOULDER] *= SWING
    tau = np.asarray(inverse_dynamics(truth, q, qd, qdd, friction=True, smooth=True)) + offset
    tau = tau + noise * np.random.default_rng(11).standard_normal(tau.shape)
    return t, q, qd, tau, Recording(t, q, qd, qdd, tau, stamps)


def _fit(stock: rd.RobotModel, rec: tuple[Any, ...], hold: bool) -> IdentificationResult:
    superset, pset = reduction_parameter_set(), friction_parameter_set("viscous-coulomb")
    settings = PipelineSettings(polyorder=6, window_s=0.1, reversal_velocity=0.0)
    t, q, qd, tau, _ = rec
    stats = [statistics_from_arrays(stock, superset, t, q, qd, tau, settings)]
    return fit_statistics(stock, pset, stats, settings=settings, reduced=superset, consistent=False, hold=hold)


def _gravity(model: rd.RobotModel, q: np.ndarray) -> np.ndarray:
    zero = np.zeros_like(q)
    return np.asarray(inverse_dynamics(model, q, zero, zero, friction=False))


def _fitted_gravity(result: IdentificationResult, q: np.ndarray) -> np.ndarray:
    """The gravity torque of the fitted parameters (offsets left out: they are not deployed)."""
    zero = np.zeros_like(q)
    theta = result.fit.theta.copy()
    theta[result.pset.layout(result.model).joint_column["Fo"]] = 0.0
    return np.einsum("ijk,k->ij", regressor(result.model, q, zero, zero, result.pset), theta)


def test_a_collinear_offset_is_held_and_the_gravity_is_right() -> None:
    """True offsets 0, torque noise: the shoulder's offset is collinear with its gravity (VIF > 10^3); held,
    the fitted gravity torque at the motion's posture is right to 2 %;
    fitted, the offset takes a share of it that the deployed model lacks."""
    stock = rd.load_robot(UR5, tip_link="tool0")
    truth = perturbed_model(stock, seed=2)
    rec = _shoulder_swing(truth, 0.3, np.zeros(6))
    held, free = _fit(stock, rec, True), _fit(stock, rec, False)
    assert held.offset_vif is not None and held.offset_vif[SHOULDER] > 1e3
    assert held.offsets_held is not None and held.offsets_held[SHOULDER]
    assert free.offsets_held is not None and not free.offsets_held.any()
    assert held.offsets is not None and held.offsets[SHOULDER] == 0.0
    posture = np.mean(rec[1], axis=0, keepdims=True)
    want = _gravity(truth, posture)[0, SHOULDER]
    err_held = abs(_fitted_gravity(held, posture)[0, SHOULDER] - want)
    err_free = abs(_fitted_gravity(free, posture)[0, SHOULDER] - want)
    assert err_held < 0.02 * abs(want)  # within 2 % (the friction law fitted is not the truth's)
    assert err_free > 10.0 * err_held
    # reported per joint, in the JSON and the text
    rows = summary(held)["joints"]
    assert rows[SHOULDER]["offset_held"] is True and rows[SHOULDER]["offset_vif"] > 1e3
    assert [row["offset_held"] for row in rows] == held.offsets_held.tolist()
    assert not all(held.offsets_held)
    assert "held at 0" in format_table(held)


def test_a_collinear_offset_of_noise_free_data_is_recovered() -> None:
    """The same motion, noise-free, true offsets up to 2 N m: nothing is held, every offset is exact."""
    stock = rd.load_robot(UR5, tip_link="tool0")
    truth = perturbed_model(stock, seed=2)
    offset = np.array([0.5, 2.0, -1.0, 0.3, -0.2, 0.1])
    result = _fit(stock, _shoulder_swing(truth, 0.0, offset), True)
    assert result.offset_vif is not None and result.offset_vif[SHOULDER] > 1e3
    assert result.offsets_held is not None and not result.offsets_held.any()
    assert result.offsets is not None and np.allclose(result.offsets, offset, atol=1e-6)


def test_identify_holds_and_plain_least_squares_does_not(tmp_path: Path) -> None:
    """identify holds the collinear offset; its baseline, plain least squares, fits every offset."""
    stock = rd.load_robot(UR5, tip_link="tool0")
    rec = _shoulder_swing(perturbed_model(stock, seed=2), 0.3, np.zeros(6))
    bag = str(write_bag(tmp_path / "swing", rec[4], list(stock.joint_names)))
    options = {"jobs": 1, "sensor_noise_estimate": False, "friction": "viscous-coulomb", "compare_friction": False}
    held = identify(bag, stock, consistent=False, reversals=False, **options)  # type: ignore[arg-type]
    plain = identify(bag, stock, method="plain", **options)  # type: ignore[arg-type]
    assert held.offsets_held is not None and held.offsets_held[SHOULDER]
    assert held.offsets is not None and held.offsets[SHOULDER] == 0.0
    assert plain.offsets_held is not None and not plain.offsets_held.any()
    assert plain.offset_vif is not None and plain.offset_vif[SHOULDER] > 1e3
    assert any("offsets held at zero" in w for w in held.warnings)
    # deployed offsets (a drive's torque loop applies them) go to the robot file beside the gravity
    # parameters: their shares do not matter there, nothing is held
    deployed = identify(bag, stock, consistent=False, reversals=False, offsets="torque", **options)  # type: ignore[arg-type]
    assert deployed.offsets_held is not None and not deployed.offsets_held.any()
    assert deployed.offsets is not None and deployed.offsets[SHOULDER] != 0.0
