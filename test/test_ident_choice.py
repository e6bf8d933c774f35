"""The rows, friction law and window chosen by cross-validation; plain least squares; the sensor-noise figure.

Synthetic recordings whose best choice is known (a slow joint at 30 Hz, which a global 0.1 rad/s cut would
leave almost without rows), a hand-written weighted least-squares fit for the baseline, and torques with a
known sensor noise plus a controller's reaction to the velocity noise for the sensor-noise figure.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.cli import main
from robot_dynamics.identification.choice import PLAIN_VELOCITY, Candidate, Validator, choose, plain_selection
from robot_dynamics.identification.friction_laws import friction_parameter_set, reduction_parameter_set
from robot_dynamics.identification.noise import high_frequency_noise, second_difference
from robot_dynamics.identification.parameters import nominal_parameters
from robot_dynamics.identification.pipeline import identify
from robot_dynamics.identification.regressor import regressor
from robot_dynamics.identification.report import summary
from robot_dynamics.identification.report_text import format_table
from robot_dynamics.identification.rows import Selection
from robot_dynamics.identification.samples import BagTask, PipelineSettings, statistics_from_arrays, training_series
from robot_dynamics.identification.synthetic import Recording, perturbed_model, record, write_bag
from robot_dynamics.model import RobotModel

NOISE = np.array([0.2, 0.2, 0.2, 0.02, 0.02, 0.02])
SLOW = 2  # the joint that moves slowly in the slow recording


@pytest.fixture(scope="module")
def puma() -> RobotModel:
    return rd.load_robot("puma560")


@pytest.fixture(scope="module")
def truth(puma: RobotModel) -> RobotModel:
    return perturbed_model(puma, seed=3)


@pytest.fixture(scope="module")
def slow_recording(truth: RobotModel) -> Recording:
    """40 s at 30 Hz; joint 3 moves at most ~0.13 rad/s, so a 0.1 rad/s cut removes most of its rows."""
    t = np.asarray(np.arange(1200) / 30.0, dtype=np.float64)
    rng = np.random.default_rng(8)
    n = truth.dof
    w = 2.0 * np.pi * rng.uniform(0.05, 0.3, (3, n))
    a = rng.uniform(0.15, 0.35, (3, n)) / (w / w.min())  # rad; velocities about 0.1-0.6 rad/s
    a[:, SLOW] = 0.04 / w[:, SLOW] * np.array([1.0, 0.8, 0.6])  # peak |qd| about 0.1 rad/s
    phase = rng.uniform(0.0, 2.0 * np.pi, (3, n))
    arg = w[None] * t[:, None, None] + phase[None]
    q = np.sum(a * np.sin(arg), axis=1)
    qd = np.sum(a * w * np.cos(arg), axis=1)
    qdd = -np.sum(a * w**2 * np.sin(arg), axis=1)
    tau = np.asarray(rd.inverse_dynamics(truth, q, qd, qdd, friction=True, smooth=True))
    tau = tau + NOISE * np.random.default_rng(9).standard_normal(tau.shape)
    stamps = 1_700_000_000_000_000_000 + np.round(t * 1e9).astype(np.int64)
    return Recording(t, q, qd, qdd, tau, stamps)


def _validator(puma: RobotModel, rec: Recording, settings: PipelineSettings) -> Validator:
    stats = statistics_from_arrays(puma, reduction_parameter_set(), rec.t, rec.q, rec.qd, rec.tau, settings)
    return Validator(puma, [stats], reduction_parameter_set(), "tanh")


def test_a_slow_joint_keeps_its_rows(puma: RobotModel, slow_recording: Recording) -> None:
    """At 30 Hz, a joint that moves slower than ~0.13 rad/s loses most of its rows to a 0.1 cut; the data
    obey a law of the velocity everywhere (no stiction), so the known best keeps them: the chooser must
    not take 0.1 for that joint, and its score must beat the global 0.1 cut's."""
    assert np.mean(np.abs(slow_recording.qd[:, SLOW]) < 0.1) > 0.6
    validator = _validator(puma, slow_recording, PipelineSettings())
    choice = choose(validator, laws=["viscous-coulomb"])
    chosen = choice.chosen
    assert chosen.selection.reversal[SLOW] < 0.1, chosen.label()
    # the global cut leaves the slow joint too few rows to determine its own parameters
    global_cut = next(c for c in choice.candidates if c.selection == Selection((0.1,) * puma.dof, False))
    assert global_cut.score is None and global_cut.error is not None and "Fv3" in global_cut.error
    assert chosen.score is not None and choice.plain is not None and choice.plain.score is not None
    assert chosen.score <= choice.plain.score
    cut = sum(f.select(Selection((0.1,) * puma.dof, False)).ne.rows[SLOW] for f in validator.folds)
    assert chosen.rows is not None and chosen.rows[SLOW] > 2 * cut


def test_the_choice_scores_every_row_of_the_left_out_fold(puma: RobotModel, slow_recording: Recording) -> None:
    """A candidate's validation rows do not depend on its selection (every row of each fold), and its
    training rows per joint are the rows its selection keeps."""
    settings = PipelineSettings()
    validator = _validator(puma, slow_recording, settings)
    a = validator.score(Candidate(Selection((0.0,) * puma.dof, False), "viscous-coulomb", "test"))
    b = validator.score(Candidate(Selection((0.05,) * puma.dof, False), "viscous-coulomb", "test"))
    assert a.rows is not None and b.rows is not None and a.rms is not None and b.rms is not None
    train = sum(f.total().ne.rows for f in validator.folds)
    np.testing.assert_array_equal(a.rows, train)
    stats = statistics_from_arrays(
        puma, reduction_parameter_set(), slow_recording.t, slow_recording.q, slow_recording.qd, slow_recording.tau
    )
    rows = stats.train.count
    qd = slow_recording.qd[slice(2, 2 + rows)]  # the training rows: after half the 5-sample window
    np.testing.assert_array_equal(b.rows, np.sum(np.abs(qd) >= 0.05, axis=0))


def test_plain_is_a_hand_written_weighted_least_squares(puma: RobotModel, truth: RobotModel, tmp_path: Path) -> None:
    rec = record(truth, 6.0, 100.0, seed=4, effort_noise=NOISE)
    bag = write_bag(tmp_path / "plain", rec, list(puma.joint_names))
    result = identify(str(bag), puma, jobs=1, method="plain", sensor_noise_estimate=False)
    assert result.choice is None and result.fit.method == "wls" and result.friction == "viscous-coulomb"
    pset = friction_parameter_set("viscous-coulomb")
    np.testing.assert_array_equal(result.settings.reversal(puma), np.full(puma.dof, PLAIN_VELOCITY))
    # by hand: the rows of every joint at or above 0.05 rad/s, weighted by 1 / sigma_j, one lstsq
    _, q, qd, qdd, tau = training_series(BagTask(str(bag), puma, pset, result.settings))
    Y = regressor(puma, q, qd, qdd, pset)  # (N, n, p)
    theta0 = nominal_parameters(puma, pset)
    fixed = np.asarray(rd.inverse_dynamics(puma, q, qd, qdd, friction=True, smooth=True)) - Y @ theta0
    target = tau - fixed
    keep = np.abs(qd) >= PLAIN_VELOCITY
    w = np.sqrt(result.weights)
    A = np.concatenate([w[j] * Y[keep[:, j], j][:, result.base.independent] for j in range(puma.dof)])
    b = np.concatenate([w[j] * target[keep[:, j], j] for j in range(puma.dof)])
    theta_base = np.linalg.lstsq(A, b, rcond=None)[0]
    np.testing.assert_allclose(result.fit.theta_base, theta_base, rtol=1e-6, atol=1e-8 * np.max(np.abs(theta_base)))
    np.testing.assert_array_equal(result.train.rows, keep.sum(axis=0))


def test_given_values_override_the_choice(puma: RobotModel, slow_recording: Recording, tmp_path: Path) -> None:
    bag = write_bag(tmp_path / "slow", slow_recording, list(puma.joint_names))
    chosen = identify(str(bag), puma, jobs=1, compare_friction=False, reversals=False, sensor_noise_estimate=False)
    assert chosen.choice is not None
    assert chosen.settings.reversal(puma)[SLOW] < 0.1  # the slow joint keeps its rows (as above)
    fixed = identify(
        str(bag), puma, jobs=1, compare_friction=False, reversals=False, sensor_noise_estimate=False,
        reversal_velocity=0.05, friction="viscous-coulomb",
    )  # fmt: skip
    assert fixed.choice is not None and fixed.friction == "viscous-coulomb"
    np.testing.assert_array_equal(fixed.settings.reversal(puma), np.full(puma.dof, 0.05))
    assert {c.friction for c in fixed.choice.candidates} == {"viscous-coulomb"}
    assert all(c.selection.reversal == (0.05,) * puma.dof for c in fixed.choice.candidates)
    assert fixed.choice.given == {"reversal_velocity": 0.05, "friction": "viscous-coulomb"}
    everything = identify(
        str(bag), puma, jobs=1, compare_friction=False, reversals=False, sensor_noise_estimate=False,
        reversal_velocity=0.05, friction="stribeck", stick_velocity=0.0, window=0.1,
    )  # fmt: skip
    assert everything.friction == "stribeck" and everything.settings.window_s == 0.1
    assert everything.choice is not None
    assert {(c.selection, c.friction) for c in everything.choice.candidates} == {
        (Selection((0.05,) * puma.dof, False), "stribeck")
    }


def test_the_report_says_what_was_chosen_and_the_rows_kept(
    puma: RobotModel, slow_recording: Recording, tmp_path: Path
) -> None:
    bag = write_bag(tmp_path / "slow", slow_recording, list(puma.joint_names))
    result = identify(str(bag), puma, jobs=1, compare_friction=False)
    block = summary(result)["choice"]
    assert block["chosen"]["rows"] == dict(zip(puma.joint_names, map(int, result.train.rows), strict=True))
    assert block["plain"]["reversal_velocity"] == [PLAIN_VELOCITY] * puma.dof
    assert all(set(c["rows"]) == set(puma.joint_names) for c in block["candidates"] if "error" not in c)
    assert all(isinstance(c["score"], float) for c in block["candidates"] if "error" not in c)
    assert any(c["stage"] == "per joint" for c in block["candidates"])
    table = format_table(result)
    assert "rows kept per joint" in table and "chosen:" in table and "sensor" in table
    assert result.sensor_noise is not None and summary(result)["joints"][0]["sensor_noise_std"] > 0.0


def test_high_frequency_noise_of_white_noise_and_a_reaction() -> None:
    """The residual: slow model error, white sensor noise, and a controller's reaction to the measured
    velocity's noise (Kd times it, one step late too): the estimate is the sensor noise alone."""
    rng = np.random.default_rng(3)
    count, n = 20_000, 3
    t = np.arange(count) * 1e-3
    sigma = np.array([0.3, 0.05, 0.2])
    nv = rng.normal(0.0, 0.01, (count, n))
    q = np.sin(t[:, None] * np.array([1.0, 2.0, 3.0]))
    qd_measured = np.cos(t[:, None] * np.array([1.0, 2.0, 3.0])) + nv
    reaction = 40.0 * nv + 15.0 * np.roll(nv, 1, axis=0) + 5.0 * nv[:, ::-1]
    residual = 0.5 * np.sin(2.0 * t)[:, None] + reaction + sigma * rng.standard_normal((count, n))
    estimate, rows = high_frequency_noise(residual, q, qd_measured)
    np.testing.assert_allclose(estimate, sigma, rtol=0.05)
    assert np.all(np.std(second_difference(residual), axis=0) / np.sqrt(6.0) > 1.2 * sigma)  # without step 3
    assert np.all(rows > 0.99 * count - 10)


def test_sensor_noise_apart_from_the_reaction_to_velocity_noise(
    puma: RobotModel, truth: RobotModel, tmp_path: Path
) -> None:
    """A recording whose torque holds the sensor noise and a PD's reaction to noisy velocities: the fit's
    residual sigma holds both, the sensor-noise figure the sensor's (within 15 %)."""
    rec = record(truth, 20.0, 250.0, seed=6, effort_noise=NOISE)
    nv = np.random.default_rng(12).normal(0.0, 0.005, rec.qd.shape)
    kd = np.array([20.0, 20.0, 20.0, 2.0, 2.0, 2.0])
    noisy = Recording(rec.t, rec.q, rec.qd + nv, rec.qdd, rec.tau - kd * nv, rec.stamps)
    bag = write_bag(tmp_path / "reaction", noisy, list(puma.joint_names))
    result = identify(
        str(bag), puma, jobs=1, compare_friction=False, reversal_velocity=0.02, stick_velocity=0.0,
        friction="viscous-coulomb", window=0.05,
    )  # fmt: skip
    assert result.sensor_noise is not None
    np.testing.assert_allclose(result.sensor_noise, NOISE, rtol=0.15)
    assert np.all(result.noise_std > 1.2 * NOISE), result.noise_std


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--method", "fast"], "--method must be identify or plain"),
        (["--reversal-velocity", "-1"], "--reversal-velocity: expected a finite number >= 0 or 'auto', got '-1'"),
        (["--reversal-velocity", "0.1", "x"], "--reversal-velocity: expected a finite number >= 0"),
        (["--stick-velocity", "nan"], "--stick-velocity: expected a finite number >= 0 or 'auto', got 'nan'"),
        (["--window", "soon"], "--window: expected a finite number >= 0 or 'auto', got 'soon'"),
        (["--window", "0"], "--window: expected a positive number of seconds or 'auto'"),
        (["--friction", "dahl"], "friction must be one of"),
        (["--reversal-velocity", "0.1", "0.1"], "reversal velocity: expected one value or 6"),
    ],
)
def test_cli_bad_values(
    options: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], truth: RobotModel
) -> None:
    bag = write_bag(tmp_path / "b", record(truth, 2.0, 100.0, seed=1), list(truth.joint_names))
    out = tmp_path / "m.yaml"
    assert main(["identify", str(bag), "--robot", "puma560", "--out", str(out), *options]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not out.exists()


def test_cli_method_plain_and_the_choice(
    puma: RobotModel, truth: RobotModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arm = rd.load_robot("fu_two_link")
    bag = write_bag(tmp_path / "b", record(perturbed_model(arm, seed=1), 6.0, 100.0, seed=4), list(arm.joint_names))
    report = tmp_path / "plain.json"
    common = ["identify", str(bag), "--robot", "fu_two_link", "--no-compare-friction"]
    # the baseline's report without a model file (its parameters are rarely a robot model)
    assert main([*common, "--method", "plain", "--json", str(report)]) == 0
    assert main([*common, "--json", str(report)]) == 2
    assert "required: --out (only --method plain may leave it out)" in capsys.readouterr().err
    data = json.loads(report.read_text())
    assert data["identify_method"] == "plain" and data["choice"] is None and data["method"] == "wls"
    assert data["friction"]["reversal_velocity"] == [PLAIN_VELOCITY] * arm.dof and not data["friction"]["stick_band"]
    capsys.readouterr()
    report = tmp_path / "auto.json"
    args = [
        *common,
        "--out",
        str(tmp_path / "a.yaml"),
        "--json",
        str(report),
        "--window",
        "auto",
        "--reversal-velocity",
        "auto",
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    data = json.loads(report.read_text())
    assert data["choice"]["chosen"]["window_s"] in (0.05, 0.1)
    assert "chosen:" in printed and "plain least squares" in printed
    assert data["friction"]["reversal_velocity"] == data["choice"]["chosen"]["reversal_velocity"]


def test_plain_selection() -> None:
    puma = rd.load_robot("puma560")
    assert plain_selection(puma) == Selection((PLAIN_VELOCITY,) * puma.dof, False)


class _Scripted:
    """A validator whose scores are given: plain least squares 1.0, least squares on every joint's rows (no
    cut, no stick band) 0.9, every other least-squares candidate 1.1, and the consistent fits of those
    two row selections ``every_row`` and ``plain``."""

    def __init__(self, model: RobotModel, every_row: float, plain: float) -> None:
        self.model, self.consistent, self.folds = model, {}, [None] * 5
        self.rigid = {Selection((0.0,) * model.dof, False): every_row, plain_selection(model): plain}

    def score(self, c: Candidate) -> Candidate:
        if c.consistent:
            c.score = self.rigid[c.selection] if c.friction == "viscous-coulomb" else 2.0
        elif c.friction == "viscous-coulomb" and c.selection in self.rigid:
            c.score = 1.0 if c.selection == plain_selection(self.model) else 0.9
        else:
            c.score = 1.1
        return c


@pytest.mark.parametrize(
    ("every_row", "plain", "chosen", "fallback"),
    [
        (0.95, 1.2, "every_row", "every_row"),  # the consistent fit of the chosen rows validates: deployed
        (1.2, 0.98, "plain", "plain"),  # it does not, plain least squares' rows' does: deployed
        (1.2, 1.05, None, "plain"),  # neither: least squares chosen, the better consistent fit in reserve
        (1.05, 1.2, None, "every_row"),
    ],
)
def test_the_consistent_fit_of_plain_rows_when_the_chosen_rows_one_validates_worse(
    puma: RobotModel, every_row: float, plain: float, chosen: str | None, fallback: str
) -> None:
    """Step 4 of the choice: the physically consistent fit of the chosen rows and law is deployed if it
    validates no worse than plain least squares; else the one of plain least squares' rows and law is
    scored too (either may be what is deployed when the least-squares parameters make no robot model)."""
    rows = {"every_row": Selection((0.0,) * puma.dof, False), "plain": plain_selection(puma)}
    choice = choose(_Scripted(puma, every_row, plain))  # type: ignore[arg-type]
    assert choice.fallback is not None and choice.fallback.consistent
    assert choice.fallback.selection == rows[fallback] and choice.fallback.score == min(every_row, plain)
    if chosen is None:
        assert not choice.chosen.consistent and choice.chosen.selection == rows["every_row"]
        assert choice.chosen.score == 0.9
    else:
        assert choice.chosen is choice.fallback and choice.chosen.selection == rows[chosen]
    scored_plain_rigid = any(c.consistent and c.selection == rows["plain"] for c in choice.candidates)
    assert scored_plain_rigid == (every_row > 1.0)  # only scored where the chosen rows' one validates worse
