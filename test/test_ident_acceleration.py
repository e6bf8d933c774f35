"""The acceleration's estimate in identification: a simulator's recording fitted exactly.

A fixed-step simulator's velocity changes by each step's acceleration, so the forward difference of the
recorded velocity, paired with the effort of the step (lag 1), is exact
(:mod:`robot_dynamics.bag.step_difference`); a Savitzky–Golay derivative smooths over the controller's
step-to-step torque changes and the jumps of Coulomb friction. Checked on a UR5 (example-robot-data)
simulated by MuJoCo with friction, damping, armature and deviated masses, tracking a motion under PD +
the stock feed-forward: ``acceleration="auto"`` keeps the difference there and the Savitzky–Golay
derivative once the velocities carry sensor noise.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_contact_proof import HOME, URDF, stock_ur5, tracking

import robot_dynamics as rd
from robot_dynamics.bag.step_difference import step_accelerations
from robot_dynamics.cli import main
from robot_dynamics.errors import StateError
from robot_dynamics.experiment.parameters import base_parameter_summary
from robot_dynamics.identification import IdentificationError, ParameterSet
from robot_dynamics.identification.pipeline import identify
from robot_dynamics.identification.samples import PipelineSettings, read_bag, statistics_from_arrays
from robot_dynamics.plant import parse_deviations
from robot_dynamics.plant.run import run_plant, write_run_bag
from robot_dynamics.trajectory import JointTrajectorySampler

DEVIATIONS = {
    "damping": [0.5, 0.5, 0.4, 0.1, 0.1, 0.1],
    "friction": [2.0, 2.0, 1.5, 0.5, 0.5, 0.4],
    "armature": [0.1, 0.1, 0.08, 0.02, 0.02, 0.02],
    "random": {"seed": 5, "mass": 0.2, "inertia": 0.2},
}
VELOCITY_NOISE = 2e-3  # rad/s: an encoder-derived velocity's noise
DURATION = 8.0  # s of motion


def excitation(seed: int) -> JointTrajectorySampler:
    """From rest at ``HOME``: per joint three harmonics of 0.25 Hz (0.1-0.25 rad each), faded in over
    the first second and out over the last by a ``sin^2`` ramp."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, DURATION, 801)
    w = 2.0 * np.pi * 0.25 * np.arange(1, 4)
    a, phase = rng.uniform(0.1, 0.25, (3, 6)), rng.uniform(0.0, 2.0 * np.pi, (3, 6))
    arg = w[None, :, None] * t[:, None, None] + phase[None]  # (N, harmonic, joint)
    f = np.sum(a * np.sin(arg), axis=1)
    fd = np.sum(a * w[:, None] * np.cos(arg), axis=1)
    fdd = -np.sum(a * w[:, None] ** 2 * np.sin(arg), axis=1)
    k, end = np.pi / 2.0, t > DURATION / 2.0
    s = np.minimum(np.minimum(t, DURATION - t), 1.0)  # the ramp's argument: flat (1) in the middle
    ramp = s < 1.0
    e = np.sin(k * s) ** 2
    ed = np.where(ramp, k * np.sin(2 * k * s), 0.0) * np.where(end, -1.0, 1.0)
    edd = np.where(ramp, 2 * k**2 * np.cos(2 * k * s), 0.0)
    q = HOME + e[:, None] * f
    qd = ed[:, None] * f + e[:, None] * fd
    qdd = edd[:, None] * f + 2 * ed[:, None] * fd + e[:, None] * fdd
    return JointTrajectorySampler(t, q, qd, qdd)


def test_step_accelerations_are_a_semi_implicit_eulers_exactly() -> None:
    """``v_{k+1} = v_k + h_k a_k``, ``q_{k+1} = q_k + h_k v_{k+1}`` on irregular steps: both the velocity
    and (without it) the positions give back every ``a_k``."""
    rng = np.random.default_rng(3)
    h = rng.uniform(0.5e-3, 1.5e-3, 400)
    t = np.concatenate([[0.0], np.cumsum(h)])
    a = rng.normal(size=(401, 3))
    v = np.empty((401, 3))
    v[0] = rng.normal(size=3)
    v[1:] = v[0] + np.cumsum(h[:, None] * a[:-1], axis=0)
    q = np.zeros_like(v)
    q[1:] = np.cumsum(h[:, None] * v[1:], axis=0)
    qd, qdd = step_accelerations(t, q, v)
    assert np.array_equal(qd, v) and np.allclose(qdd[:-1], a[:-1], atol=1e-9)
    assert np.array_equal(qdd[-1], qdd[-2])
    qd_q, qdd_q = step_accelerations(t, q)  # positions only: v_k is the backward difference
    assert np.allclose(qd_q[1:], v[1:], atol=1e-9) and np.allclose(qdd_q[1:-1], a[1:-1], atol=1e-6)
    with pytest.raises(StateError, match="increase strictly"):
        step_accelerations(t[::-1], q, v)
    with pytest.raises(StateError, match="velocity shape"):
        step_accelerations(t, q, v[:, :2])
    with pytest.raises(IdentificationError, match="acceleration must be one of"):
        PipelineSettings(acceleration="spline")


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("acceleration")
    stock = stock_ur5()
    plant, controller = tracking(stock, parse_deviations(DEVIATIONS, "test"))
    run = run_plant(plant, controller, DURATION + 0.4, trajectory=excitation(4), trajectory_start=0.2)
    assert not run.contacts.any() and plant.clamped_steps == 0
    write_run_bag(out / "clean", run)
    noise = np.random.default_rng(11).normal(0.0, VELOCITY_NOISE, run.qd.shape)
    write_run_bag(out / "noisy", replace(run, qd=run.qd + noise))
    return {"out": out, "stock": stock, "truth": plant.true_model}


def _identify(bag: Path, stock: rd.RobotModel, **options: Any) -> Any:
    """identify with the rows and law fixed (the pairing is what these tests choose)."""
    fixed = {"reversal_velocity": 0.1, "stick_velocity": 0.005, "friction": "smooth-coulomb", "window": 0.05}
    return identify(
        str(bag),
        stock,
        jobs=1,
        consistent=False,
        reversals=False,
        compare_friction=False,
        holdout=0.25,
        **{**fixed, **options},
    )


def test_auto_pairs_a_simulators_effort_with_each_steps_velocity_change(simulated: dict[str, Any]) -> None:
    bag, stock, truth = simulated["out"] / "clean", simulated["stock"], simulated["truth"]
    auto = _identify(bag, stock, effort_lag="auto", acceleration="auto")
    assert (auto.settings.effort_lag, auto.settings.acceleration) == (1, "difference")
    scores = {(d["lag"], d["acceleration"]): d["score"] for d in auto.effort_lag_scores}
    assert len(scores) == 6 and scores[1, "difference"] < 0.02 * scores[1, "savgol"]
    smooth = _identify(bag, stock, effort_lag=1)
    assert smooth.settings.acceleration == "savgol" and not smooth.effort_lag_scores
    # what is left is the fit's friction law at the slowest kept rows: far below the filter's error
    held, held_smooth = auto.rms["identified_holdout_moving"], smooth.rms["identified_holdout_moving"]
    assert np.all(held < 0.2 * held_smooth) and held.max() < 0.01, (held, held_smooth)
    ours, theirs = (base_parameter_summary(stock, truth, r.identified) for r in (auto, smooth))
    assert ours["within_count"] == ours["significant"] and ours["max_relative_error"] < 0.01
    assert theirs["max_relative_error"] > 2 * ours["max_relative_error"]
    # MuJoCo integrates damping implicitly (D v_{k+1}): the difference books D h of it as armature
    h = 1e-3
    expected = _armature(truth) + np.array(DEVIATIONS["damping"]) * h
    armature = _armature(auto.identified)
    assert np.allclose(armature[2:], expected[2:], rtol=2e-3)  # (each alone in its base parameter)


def _armature(model: rd.RobotModel) -> np.ndarray:
    return np.array([0.0 if j.motor is None else j.motor.gear_ratio**2 * j.motor.inertia for j in model.joints])


def test_auto_keeps_the_filter_on_noisy_velocities(simulated: dict[str, Any]) -> None:
    auto = _identify(simulated["out"] / "noisy", simulated["stock"], effort_lag=1, acceleration="auto")
    assert auto.settings.acceleration == "savgol"
    scores = {d["acceleration"]: d["score"] for d in auto.effort_lag_scores}
    assert scores["difference"] > 3 * scores["savgol"]
    with pytest.raises(IdentificationError, match="acceleration must be one of"):
        _identify(simulated["out"] / "noisy", simulated["stock"], acceleration="splines")


def test_cli_acceleration_option(simulated: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bag, report = str(simulated["out"] / "clean"), tmp_path / "r.json"
    base = ["identify", bag, "--robot", URDF, "--out", str(tmp_path / "id.yaml"), "--no-compare-friction"]
    assert main([*base, "--json", str(report), "--effort-lag", "1", "--acceleration", "difference"]) == 0
    assert "effort lag 1 message(s), acceleration difference\n" in capsys.readouterr().out
    assert json.loads(report.read_text())["effort_lag"] == {"lag": 1, "acceleration": "difference"}
    assert main([*base, "--acceleration", "spline"]) == 2
    assert "--acceleration: invalid choice: 'spline'" in capsys.readouterr().err


def test_the_consistent_fit_of_an_exact_recording_keeps_its_accuracy(simulated: dict[str, Any]) -> None:
    """Noise-free: the joints' noise estimates differ by 10^2 or more, and the consistent fit's small pull
    toward the stock file must not grow with the best-fitted joint's weight (estimate.prior_information)."""
    stock, truth = simulated["stock"], simulated["truth"]
    fit = identify(
        str(simulated["out"] / "clean"),
        stock,
        jobs=1,
        reversals=False,
        compare_friction=False,
        holdout=0.25,
        effort_lag=1,
        acceleration="difference",
        consistent=True,
        reversal_velocity=0.1,
        friction="smooth-coulomb",
    )
    assert fit.consistent and np.max(fit.noise_std) > 30 * np.min(fit.noise_std)
    assert not [w for w in fit.warnings if "consistent fit's cost" in w]
    offsets = fit.offsets
    assert offsets is not None and np.abs(offsets).max() < 1e-3  # the plant has none
    summary = base_parameter_summary(stock, truth, fit.identified)
    assert summary["within_count"] == summary["significant"] and summary["max_relative_error"] < 0.01


def test_the_difference_is_the_same_however_the_rows_are_cut(simulated: dict[str, Any]) -> None:
    """Spans of 300 states with their halos give the one-span sums (each row needs only its next state)."""
    stock = simulated["stock"]
    series = read_bag(str(simulated["out"] / "clean"), stock, PipelineSettings())
    arrays = (series.times(), series.position, series.velocity, series.effort)
    cut, whole = (
        statistics_from_arrays(stock, ParameterSet(), *arrays, PipelineSettings(acceleration="difference", chunk=c))
        for c in (300, 10**6)
    )
    assert np.array_equal(cut.train.rows, whole.train.rows)
    for name in ("ata_joint", "atb_joint", "btb_joint"):  # the same to the rounding of the sums
        x, y = getattr(whole.train, name), getattr(cut.train, name)
        assert np.abs(x - y).max() <= 1e-12 * np.abs(x).max(), name
