"""Identification from recordings that stick at velocity reversals: rows left out, friction laws compared.

The recordings are :func:`~robot_dynamics.identification.synthetic.stick_slip_record` (checked here
against the engine's stick-slip solver): a perturbed PUMA 560 whose joints rest at every reversal,
held by static friction 1.4 times their Coulomb level (with a Stribeck decay).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.cli import main
from robot_dynamics.dynamics.stick_slip import solve_stick_slip
from robot_dynamics.identification import nominal_parameters
from robot_dynamics.identification.fitting import fit_statistics
from robot_dynamics.identification.friction_laws import friction_parameter_set, reduction_parameter_set
from robot_dynamics.identification.result import IdentificationResult
from robot_dynamics.identification.samples import PipelineSettings, statistics_from_arrays
from robot_dynamics.identification.spans import plan, stick_band
from robot_dynamics.identification.synthetic import Recording, perturbed_model, record, stick_slip_record, write_bag
from robot_dynamics.model import RobotModel

NOISE = np.array([0.2, 0.2, 0.2, 0.02, 0.02, 0.02])


@pytest.fixture(scope="module")
def puma() -> RobotModel:
    return rd.load_robot("puma560")


@pytest.fixture(scope="module")
def truth(puma: RobotModel) -> RobotModel:
    model = perturbed_model(puma, seed=2)
    joints = []
    for j in model.joints:
        static = (1.4 * j.friction.coulomb[0], 1.4 * j.friction.coulomb[1])
        joints.append(replace(j, friction=replace(j.friction, static=static, stribeck_velocity=0.02)))
    return model.with_changes(joints=tuple(joints))


@pytest.fixture(scope="module")
def clean(truth: RobotModel) -> Recording:
    return stick_slip_record(truth, 8.0, 1000.0, seed=1)


def _fit(model: RobotModel, rec: Recording, settings: PipelineSettings, **options: object) -> IdentificationResult:
    superset = reduction_parameter_set()
    stats = statistics_from_arrays(model, superset, rec.t, rec.q, rec.qd, rec.tau, settings)
    law = str(options.pop("friction", "smooth-coulomb"))
    pset = friction_parameter_set(law)
    return fit_statistics(model, pset, [stats], settings=settings, reduced=superset, friction=law, **options)  # type: ignore[arg-type]


def test_the_recordings_obey_the_stick_slip_solver(truth: RobotModel, clean: Recording) -> None:
    rows = np.flatnonzero((clean.qd == 0.0).any(axis=1))[::40]
    assert len(rows) > 20
    state = solve_stick_slip(truth, clean.q[rows], clean.qd[rows], clean.tau[rows])
    np.testing.assert_array_equal(state.stuck, clean.qd[rows] == 0.0)  # resting joints stay, the others move
    np.testing.assert_allclose(state.qdd, clean.qdd[rows], atol=1e-9)
    assert 0.05 < float(np.mean(clean.qd == 0.0)) < 0.2


def test_noise_free_sigma_and_parameters(puma: RobotModel, truth: RobotModel, clean: Recording) -> None:
    """Leaving out the rows near reversals: the noise estimate drops below a tenth of what fitting every row
    reports (it was model error), and friction and base parameters come within 5 % of the truth."""
    every = _fit(puma, clean, PipelineSettings(reversal_velocity=0.0, stick_velocity=0.0), consistent=False)
    cut = _fit(puma, clean, PipelineSettings(), consistent=False)
    assert np.all(cut.noise_std <= 0.1 * every.noise_std), (cut.noise_std, every.noise_std)
    theta, true = dict(zip(cut.names, cut.fit.theta, strict=True)), nominal_parameters(truth, cut.pset)
    true_named = dict(zip(cut.names, true, strict=True))
    for kind in ("Fv", "Fc"):
        for j in range(puma.dof):
            name = f"{kind}{j + 1}"
            assert theta[name] == pytest.approx(true_named[name], rel=0.05), name
    expected = cut.base.to_base(true)
    large = np.abs(expected) > 1e-3 * np.max(np.abs(expected))
    error = np.abs(cut.fit.theta_base - expected)[large] / np.abs(expected[large])
    assert np.max(error) < 0.05, sorted(zip(error, np.array(cut.base.names)[large], strict=True))[-3:]


def test_noisy_truth_within_three_sigma(puma: RobotModel, truth: RobotModel) -> None:
    """With effort and velocity noise: the base parameters' truth within 3 standard deviations, and the
    noise estimate near the effort noise (the velocity noise enters the torques through qdd: above it)."""
    rec = stick_slip_record(truth, 8.0, 1000.0, seed=4, effort_noise=NOISE, velocity_noise=5e-4)
    result = _fit(puma, rec, PipelineSettings(), consistent=False)
    every = _fit(puma, rec, PipelineSettings(reversal_velocity=0.0, stick_velocity=0.0), consistent=False)
    assert np.all(result.noise_std >= 0.95 * NOISE) and np.all(result.noise_std <= 1.7 * NOISE), result.noise_std
    assert np.all(np.abs(result.noise_std - NOISE) < 0.2 * np.abs(every.noise_std - NOISE)), every.noise_std
    expected = result.base.to_base(nominal_parameters(truth, result.pset))
    z = np.abs(result.fit.theta_base - expected) / result.fit.std_base
    assert np.mean(z < 3.0) >= 0.95 and np.max(z) < 4.5, sorted(zip(z, result.base.names, strict=True))[-3:]


def test_real_shaped_recordings_hold_out_no_worse_than_plain_least_squares(puma: RobotModel, truth: RobotModel) -> None:
    """30 Hz, stiction at reversals, noise: held-out RMS of the default fit against ordinary least squares
    with a 0.05 rad/s reversal cut (the bag tools' window) on the same split."""
    rec = stick_slip_record(truth, 60.0, 30.0, seed=5, effort_noise=NOISE, velocity_noise=5e-4)
    ours = _fit(puma, rec, PipelineSettings())
    plain_settings = PipelineSettings(window_s=0.1, reversal_velocity=0.05, stick_velocity=0.0)
    plain = _fit(puma, rec, plain_settings, consistent=False, noise_std=np.ones(puma.dof))
    for key in ("identified_holdout", "identified_holdout_moving"):
        mine, theirs = ours.rms[key], plain.rms[key]
        assert mine is not None and theirs is not None
        assert np.sqrt(np.mean(mine**2 / NOISE**2)) <= 1.01 * np.sqrt(np.mean(theirs**2 / NOISE**2)), key


def test_every_law_is_the_superset_restricted(puma: RobotModel, clean: Recording) -> None:
    """The normal equations of a law, selected from the superset's, equal the law's own reduction; the
    moving held-out rows are the held-out rows less the slow ones."""
    settings = PipelineSettings(holdout=0.3)
    superset = reduction_parameter_set()
    whole = statistics_from_arrays(puma, superset, clean.t, clean.q, clean.qd, clean.tau, settings)
    for law in ("viscous-coulomb", "asymmetric-coulomb"):
        pset = friction_parameter_set(law)
        own = statistics_from_arrays(puma, pset, clean.t, clean.q, clean.qd, clean.tau, settings)
        keep = [superset.names(puma).index(name) for name in pset.names(puma)]
        chosen = whole.train.select(np.array(keep), nominal_parameters(puma, superset))
        scale = np.max(np.abs(own.train.ata_joint))
        np.testing.assert_allclose(chosen.ata_joint, own.train.ata_joint, atol=1e-10 * scale)
        np.testing.assert_allclose(chosen.atb_joint, own.train.atb_joint, rtol=1e-9, atol=1e-9 * scale)
        np.testing.assert_allclose(chosen.btb_joint, own.train.btb_joint, rtol=1e-9)
        np.testing.assert_array_equal(chosen.rows, own.train.rows)
    held = whole.holdout_sums
    assert held is not None and held.slow is not None
    cuts = plan(clean.t, clean.q, settings)
    cut, half = cuts.holdout, cuts.filt.window // 2
    assert cut is not None
    # a joint's slow rows, and every joint's rows near a joint's sticking (from the span with its halo)
    sticking = stick_band(clean.qd[cut.start - half : cut.stop + half], 0.005, half, np.ones(puma.dof, bool))
    assert 0.05 < float(np.mean(sticking[half:-half])) < 0.9
    slow = np.sum((np.abs(clean.qd[cut]) < 0.1) | sticking[half:-half, None], axis=0)
    np.testing.assert_array_equal(held.ne.rows, np.full(puma.dof, cut.stop - cut.start))
    np.testing.assert_array_equal(held.moving().ne.rows, held.ne.rows - slow)
    np.testing.assert_array_equal(held.slow.ne.rows, slow)


def test_stribeck_law_recovers_a_visible_stribeck_term(puma: RobotModel) -> None:
    """With a Stribeck term above the reversal cut, the stribeck law finds its excess and beats the others
    on the held-out data; its model file carries the static levels."""
    model = perturbed_model(puma, seed=6)
    joints = [
        replace(
            j,
            friction=replace(
                j.friction, static=(1.5 * j.friction.coulomb[0], 1.5 * j.friction.coulomb[1]), stribeck_velocity=0.3
            ),
        )
        for j in model.joints
    ]
    truth = model.with_changes(joints=tuple(joints))
    rec = stick_slip_record(truth, 8.0, 1000.0, seed=7, dwell=0.02)
    # the stick band off: it leaves out the rows just after a break-away, where a Stribeck term is largest
    settings = PipelineSettings(reversal_velocity=0.05, stick_velocity=0.0)
    viscous = _fit(puma, rec, settings, consistent=False)
    stribeck = _fit(puma, rec, settings, friction="stribeck")
    assert stribeck.stribeck is not None
    excess = 0.5 * np.array([j.friction.coulomb[0] - j.friction.coulomb[1] for j in truth.joints]) * 0.5
    np.testing.assert_allclose(stribeck.stribeck.excess, excess, rtol=0.25)
    a, b = stribeck.rms["identified_holdout_moving"], viscous.rms["identified_holdout_moving"]
    assert a is not None and b is not None and np.all(a[:3] < 0.8 * b[:3])
    assert stribeck.identified is not None and stribeck.identified.joints[0].friction.static is not None


def test_smooth_coulomb_finds_a_wide_coulomb_transition(puma: RobotModel) -> None:
    """A truth whose (symmetric) Coulomb friction saturates over 0.08 rad/s on joints 1 and 3 (as a physics
    engine's constraint friction does): the smooth-coulomb law finds those widths, keeps the others at 0.01,
    and beats viscous-coulomb on the held-out data; on data without such a transition it is viscous-coulomb."""
    perturbed = perturbed_model(puma, seed=9)
    symmetric = [
        replace(j.friction, coulomb=(0.5 * (j.friction.coulomb[0] - j.friction.coulomb[1]),) * 2)
        for j in perturbed.joints
    ]
    symmetric = [replace(f, coulomb=(f.coulomb[0], -f.coulomb[0])) for f in symmetric]
    model = perturbed.with_changes(
        joints=tuple(replace(j, friction=f) for j, f in zip(perturbed.joints, symmetric, strict=True))
    )
    stock = puma.with_changes(joints=tuple(replace(j, friction=f) for j, f in zip(puma.joints, symmetric, strict=True)))
    widths = np.array([0.08, 0.01, 0.08, 0.01, 0.01, 0.01])
    truth = model.with_changes(
        joints=tuple(
            replace(j, friction=replace(j.friction, smoothing_velocity=float(w)))
            for j, w in zip(model.joints, widths, strict=True)
        )
    )
    settings = PipelineSettings(polyorder=6, window_s=0.1, reversal_velocity=0.02)
    noise = NOISE / 4.0
    rec = record(truth, 6.0, 500.0, seed=10, effort_noise=noise)
    smooth = _fit(stock, rec, settings, consistent=False, friction="smooth-coulomb")
    plain = _fit(stock, rec, settings, consistent=False, friction="viscous-coulomb")
    assert smooth.coulomb_widths is not None
    np.testing.assert_allclose(smooth.coulomb_widths, widths)
    a, b = smooth.rms["identified_holdout"], plain.rms["identified_holdout"]
    assert a is not None and b is not None and np.all(a[[0, 2]] < 0.7 * b[[0, 2]])
    np.testing.assert_allclose(smooth.noise_std, noise, rtol=0.15)
    same = _fit(stock, record(model, 6.0, 500.0, seed=11, effort_noise=noise), settings, consistent=False)
    assert same.friction == "smooth-coulomb" and same.coulomb_widths is not None
    np.testing.assert_array_equal(same.coulomb_widths, np.full(6, 0.01))


def test_cli_friction_laws_and_bad_options(
    puma: RobotModel, truth: RobotModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bag = write_bag(tmp_path / "b", stick_slip_record(truth, 4.0, 100.0, seed=8, effort_noise=NOISE), puma.joint_names)
    out, report = tmp_path / "m.yaml", tmp_path / "r.json"
    argv = ["identify", str(bag), "--robot", "puma560", "--out", str(out), "--json", str(report), "--jobs", "1"]
    assert (
        main([*argv, "--friction", "asymmetric-coulomb", "--reversal-velocity", "0.05", "--stick-velocity", "0.01"])
        == 0
    )
    stdout = capsys.readouterr().out
    assert "held-out RMS per friction law" in stdout and "asymmetric-coulomb *" in stdout
    data = json.loads(report.read_text())
    assert data["friction"]["law"] == "asymmetric-coulomb" and data["friction"]["reversal_velocity"] == [0.05] * 6
    assert data["friction"]["stick_velocity"] == 0.01
    assert [row["friction"] for row in data["friction_comparison"]] == [
        "viscous-coulomb",
        "smooth-coulomb",
        "asymmetric-coulomb",
        "stribeck",
    ]
    assert "holdout_moving" in data["rms_note"] and data["joints"][0]["rms_identified_holdout_moving"] > 0.0
    assert rd.load_robot(out).dof == 6
    for bad, message in (
        (
            ["--friction", "dahl"],
            "friction must be one of viscous-coulomb, smooth-coulomb, asymmetric-coulomb, stribeck; got 'dahl'",
        ),
        (["--reversal-velocity", "0.1", "0.2"], "reversal velocity: expected one value or 6"),
        (["--stick-velocity", "-0.01"], "--stick-velocity: expected a finite number >= 0 or 'auto', got '-0.01'"),
        (["--reversal-velocity", "-1"], "--reversal-velocity: expected a finite number >= 0 or 'auto', got '-1'"),
    ):
        assert main([*argv, *bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err


def test_stick_band_marks_the_states_around_sticking_of_any_moving_joint() -> None:
    t = np.arange(400)
    qd = np.stack([np.sin(0.05 * t) + 2.0, np.full(400, 0.3), np.zeros(400)], axis=1)
    qd[100:200, 1] = 0.0  # joint 2 sticks from state 100 to 199; joint 3 stands still throughout
    band = stick_band(qd, 0.005, 10, np.array([True, True, True]))
    expected = np.zeros(400, dtype=bool)
    # a window of 10 states on either side spans the change between states 99 and 100 from state 90 to 109
    expected[90:110] = expected[190:210] = True
    np.testing.assert_array_equal(band, expected)
    assert not stick_band(qd, 0.005, 10, np.array([True, False, True])).any()  # joint 2 not moving: ignored
    assert not stick_band(qd[120:180], 0.005, 10, np.array([True, True, True])).any()  # stuck throughout
    qd[300:309, 0] = 0.0  # joint 1 passes through zero velocity: 9 states below, fewer than 10, no rest
    np.testing.assert_array_equal(stick_band(qd, 0.005, 10, np.array([True, True, True])), expected)


def test_rows_around_sticking_left_out_the_noise_estimate_is_the_noise(
    puma: RobotModel, truth: RobotModel, clean: Recording
) -> None:
    """Where a joint sticks and breaks away its acceleration jumps; the derivative filter spreads the jump
    over its window and the inertia couples it into every joint's torque. Leaving out the states within
    half a window of it (``stick_velocity``): noise-free, the noise estimate falls to a few percent of
    what it was (it was model error) and the base parameters come closer; with noise, it is the noise."""
    before = _fit(puma, clean, PipelineSettings(stick_velocity=0.0), consistent=False)
    after = _fit(puma, clean, PipelineSettings(), consistent=False)  # (the default: 0.005 rad/s)
    assert np.all(after.noise_std[:3] <= 0.05 * before.noise_std[:3]), (after.noise_std, before.noise_std)
    true = nominal_parameters(truth, after.pset)

    def worst(result: IdentificationResult) -> float:
        expected = result.base.to_base(true)
        large = np.abs(expected) > 1e-3 * np.max(np.abs(expected))
        return float(np.max(np.abs(result.fit.theta_base - expected)[large] / np.abs(expected[large])))

    assert worst(after) < worst(before) < 0.05
    noisy = stick_slip_record(truth, 8.0, 1000.0, seed=4, effort_noise=NOISE, velocity_noise=5e-4)
    result = _fit(puma, noisy, PipelineSettings(), consistent=False)
    assert np.all(np.abs(result.noise_std - NOISE) <= 0.05 * NOISE), result.noise_std
    expected = result.base.to_base(true)
    z = np.abs(result.fit.theta_base - expected) / result.fit.std_base
    assert np.max(z) < 3.5, sorted(zip(z, result.base.names, strict=True))[-3:]
