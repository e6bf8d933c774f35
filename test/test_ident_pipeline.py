"""The identification pipeline on synthetic-truth bags: recovery, noise statistics, hold-out, scale.

Truth models are the bundled PUMA 560 with perturbed parameters (``synthetic.perturbed_model``);
the bags hold polynomial motions whose derivatives the Savitzky–Golay filter reproduces exactly
(``degree - 1 <= polyorder``), so noise-free data must give the base parameters to rounding.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.identification import (
    IdentificationError,
    ParameterSet,
    link_parameters,
    nominal_parameters,
    physical_problem,
)
from robot_dynamics.identification.pipeline import fit_statistics, identify
from robot_dynamics.identification.report import consistency, write_model
from robot_dynamics.identification.samples import PipelineSettings, expand_bags, statistics_from_arrays
from robot_dynamics.identification.synthetic import perturbed_model, record, write_bag
from robot_dynamics.model import Inertial, JointFriction, RobotModel

EFFORT_NOISE = np.array([0.2, 0.2, 0.2, 0.02, 0.02, 0.02])
# differentiates the degree-7 motions exactly; their torques follow the smooth friction law at every
# velocity (no stiction), so every row is kept
EXACT = PipelineSettings(polyorder=6, window_s=0.1, reversal_velocity=0.0)


@pytest.fixture(scope="module")
def puma() -> RobotModel:
    return rd.load_robot("puma560")


@pytest.fixture(scope="module")
def truth(puma: RobotModel) -> RobotModel:
    return perturbed_model(puma, seed=5)


def _offset(n: int) -> np.ndarray:
    return np.linspace(-0.3, 0.4, n)


def _truth_theta(truth: RobotModel, pset: ParameterSet) -> np.ndarray:
    theta = nominal_parameters(truth, pset)
    cols = pset.layout(truth).joint_column["Fo"]
    theta[cols] = _offset(truth.dof)
    return theta


def test_noise_free_bags_give_the_base_parameters(puma: RobotModel, truth: RobotModel, tmp_path: Path) -> None:
    paths = []
    for k in range(2):
        rec = record(truth, 2.0, 250.0, seed=10 + k, offset=_offset(truth.dof))
        paths.append(str(write_bag(tmp_path / f"bag{k}", rec, truth.joint_names)))
    result = identify(paths, puma, consistent=False, settings=EXACT, jobs=1)
    expected = result.base.to_base(_truth_theta(truth, result.pset))
    relative = np.abs(result.fit.theta_base - expected) / np.maximum(np.abs(expected), 1e-6 * np.abs(expected).max())
    assert relative.max() < 1e-8, dict(zip(result.base.names, relative, strict=True))
    # held-out residuals vanish (to the ~sqrt(eps) of RMS torque that sums of squares resolve)
    assert result.holdout is not None
    rms_tau = np.sqrt(result.holdout.btb_joint / result.holdout.count)
    assert np.all(result.rms["identified_holdout"] < 1e-7 * rms_tau)
    assert np.all(result.rms["nominal_holdout"] > 1e-3)
    assert result.offsets is not None
    np.testing.assert_allclose(result.offsets, _offset(truth.dof), atol=1e-8)
    # least squares spreads regrouped parameters anyhow: no rigid bodies, so no model file
    assert result.identified is None and "not physically realisable" in str(result.model_problem)


def test_deployed_model_is_the_fitted_model(tmp_path: Path) -> None:
    """The written model's inverse dynamics is the fitted ``Y theta`` without the offset (any fit)."""
    from robot_dynamics.identification import regressor

    scara = rd.load_robot("scara")
    truth = perturbed_model(scara, seed=2)
    rec = record(truth, 3.0, 250.0, seed=3, offset=_offset(3), effort_noise=0.05)
    bag = write_bag(tmp_path / "scara", rec, truth.joint_names)
    result = identify(str(bag), scara, jobs=1, reversals=False)
    assert result.identified is not None and result.fit.method == "consistent"
    loaded = rd.load_robot(str(write_model(tmp_path / "identified.yaml", result)))
    q, qd, qdd = (np.random.default_rng(3).uniform(-1, 1, (50, 3)) for _ in range(3))
    fitted = regressor(scara, q, qd, qdd, result.pset) @ result.fit.theta - result.offsets
    for model in (result.identified, loaded):
        tau = rd.inverse_dynamics(model, q, qd, qdd, smooth=True)
        np.testing.assert_allclose(tau, fitted, rtol=0, atol=1e-9 * np.abs(fitted).max())
    for joint in result.identified.joints:
        assert physical_problem(link_parameters(joint.link)) is None
    # by default each joint's Coulomb width then comes from the slow rows: only the widths differ
    widened = identify(str(bag), scara, jobs=1)
    assert widened.reversals is not None and widened.identified is not None
    np.testing.assert_array_equal(widened.fit.theta, result.fit.theta)
    expected = widened.reversals.apply(result.identified)
    assert [j.friction for j in widened.identified.joints] == [j.friction for j in expected.joints]
    assert rd.load_robot(str(write_model(tmp_path / "widened.yaml", widened))).joints[
        0
    ].friction.smoothing_velocity == (
        widened.reversals.width[0]
        if widened.reversals.rows[0]
        else result.identified.joints[0].friction.smoothing_velocity
    )


def test_noisy_estimates_lie_within_their_standard_deviations(puma: RobotModel, truth: RobotModel) -> None:
    pset = ParameterSet()
    stats = []
    for k in range(3):
        rec = record(truth, 4.0, 250.0, seed=20 + k, effort_noise=EFFORT_NOISE, offset=_offset(6))
        stats.append(statistics_from_arrays(puma, pset, rec.t, rec.q, rec.qd, rec.tau, EXACT, name=f"r{k}"))
    result = fit_statistics(puma, pset, stats, settings=EXACT, consistent=False)
    expected = result.base.to_base(_truth_theta(truth, pset))
    z = (result.fit.theta_base - expected) / result.fit.std_base
    assert np.mean(np.abs(z) > 3.0) <= 0.05, sorted(zip(np.abs(z), result.base.names, strict=True))[-5:]
    assert np.abs(z).max() < 5.0
    # the two-pass weights found the noise; the hold-out residual is the noise
    np.testing.assert_allclose(result.noise_std, EFFORT_NOISE, rtol=0.15)
    holdout = result.rms["identified_holdout"]
    assert holdout is not None
    np.testing.assert_allclose(holdout, EFFORT_NOISE, rtol=0.2)
    assert 0.7 < result.fit.sigma2 < 1.3


def test_consistent_fit_on_noisy_data() -> None:
    """Stanford arm (a prismatic joint): every link a rigid body, friction >= 0, a loadable model,
    where the least-squares estimate of the same data is no rigid body."""
    stanford = rd.load_robot("stanford")
    truth = perturbed_model(stanford, seed=4)
    noise = np.full(6, 0.05)
    pset = ParameterSet()
    rec = record(truth, 4.0, 250.0, seed=31, effort_noise=noise, offset=_offset(6))
    stats = [statistics_from_arrays(stanford, pset, rec.t, rec.q, rec.qd, rec.tau, EXACT)]
    wls = fit_statistics(stanford, pset, stats, settings=EXACT, consistent=False)
    assert wls.identified is None
    cons = fit_statistics(stanford, pset, stats, settings=EXACT, consistent=True)
    assert cons.identified is not None and cons.model_problem is None
    for joint in cons.identified.joints:
        assert physical_problem(link_parameters(joint.link)) is None, joint.name
        assert joint.friction.viscous >= 0.0 and joint.friction.coulomb[0] >= 0.0 >= joint.friction.coulomb[1]
    assert all(row["physical"] for row in consistency(cons))
    assert cons.fit.cost >= wls.fit.cost * (1 - 1e-9)  # least squares is the unconstrained minimum
    held = cons.rms["identified_holdout"]
    assert held is not None and np.all(held < cons.rms["nominal_holdout"])


def test_held_out_rms_far_below_a_wrong_nominal(puma: RobotModel) -> None:
    """Nominal without friction: its held-out error is the friction; the identified model's is the noise."""
    frictionless = puma.with_changes(
        joints=tuple(
            replace(j, friction=JointFriction(), motor=replace(j.motor, viscous=0.0, coulomb=(0.0, 0.0)))
            for j in puma.joints
        )
    )
    truth = perturbed_model(frictionless, seed=6)  # symmetric Coulomb and viscous friction on every joint
    pset = ParameterSet()
    stats = []
    for k in range(3):
        rec = record(truth, 4.0, 250.0, seed=41 + k, effort_noise=EFFORT_NOISE)
        stats.append(statistics_from_arrays(frictionless, pset, rec.t, rec.q, rec.qd, rec.tau, EXACT))
    result = fit_statistics(frictionless, pset, stats, settings=EXACT, consistent=False)
    nominal, identified = result.rms["nominal_holdout"], result.rms["identified_holdout"]
    assert nominal is not None and identified is not None
    assert np.all(nominal > 5.0 * EFFORT_NOISE)
    np.testing.assert_allclose(identified, EFFORT_NOISE, rtol=0.15)


def test_payload_only(puma: RobotModel, tmp_path: Path) -> None:
    payload = Inertial.from_components(1.5, (0.01, -0.02, 0.05), 0.004, 0.005, 0.003, 0.0002, 0.0, -0.0001)
    last = puma.joints[-1]
    # the payload given in the tool frame, attached to the last link (frame F_n)
    in_link = payload.transformed(puma.tool)
    truth = puma.with_changes(joints=(*puma.joints[:-1], replace(last, link=last.link + in_link)))
    rec = record(truth, 3.0, 250.0, seed=51)
    bag = write_bag(tmp_path / "payload", rec, truth.joint_names)
    result = identify(bag, puma, payload_only=True, settings=EXACT, jobs=1, consistent=False)  # a Path
    assert result.payload is not None
    assert result.pset.links == (5,) and not result.pset.armature
    assert result.payload["mass"] == pytest.approx(1.5, rel=1e-6)
    np.testing.assert_allclose(result.payload["com"], payload.com, atol=1e-6)
    i = payload.inertia
    np.testing.assert_allclose(
        result.payload["inertia"], [i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[1, 2], i[0, 2]], atol=1e-6
    )
    # every other parameter stays nominal
    for a, b in zip(result.identified.joints[:-1], puma.joints[:-1], strict=True):
        np.testing.assert_array_equal(link_parameters(a.link), link_parameters(b.link))
        assert a.motor == b.motor and a.friction == b.friction


def test_results_do_not_depend_on_the_partitioning(
    puma: RobotModel,
    truth: RobotModel,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dask.config
    from distributed import LocalCluster

    folder = tmp_path / "bags"
    for k in range(3):
        rec = record(truth, 1.5, 200.0, seed=60 + k, effort_noise=EFFORT_NOISE)
        write_bag(folder / f"b{k}", rec, truth.joint_names)
    assert [Path(p).name for p in expand_bags([str(folder)])] == ["b0", "b1", "b2"]
    runs = [identify(str(folder), puma, jobs=jobs, consistent=False) for jobs in (1, 2)]
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        runs.append(identify(str(folder), puma, scheduler=cluster.scheduler_address, consistent=False))
    # Dask's default worker environment trims malloc (twice the CPU per task): a warning says so
    assert "2 of 2 Dask workers run with MALLOC_TRIM_THRESHOLD_=65536" in caplog.text
    caplog.clear()
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)  # LocalCluster's nannies set it here too
    key = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"
    with (
        dask.config.set({key: None}),
        LocalCluster(n_workers=1, processes=True, threads_per_worker=1, dashboard_address=None) as cluster,
    ):
        runs.append(identify(str(folder), puma, scheduler=cluster.scheduler_address, consistent=False))
    assert "MALLOC_TRIM_THRESHOLD_" not in caplog.text
    ref = runs[0]
    for other in runs[1:]:
        for name in ("ata_joint", "atb_joint", "btb_joint"):
            a, b = getattr(ref.train, name), getattr(other.train, name)
            assert np.abs(a - b).max() <= 1e-12 * np.abs(a).max()
        assert other.train.count == ref.train.count
        np.testing.assert_allclose(other.fit.theta, ref.fit.theta, rtol=1e-12, atol=1e-12 * np.abs(ref.fit.theta).max())


def test_a_joint_that_never_moves(puma: RobotModel, truth: RobotModel) -> None:
    rec = record(truth, 3.0, 250.0, seed=70)
    q = rec.q.copy()
    q[:, 3] = 0.2  # joint4 held still (sensor noise only)
    q[:, 3] += 1e-5 * np.random.default_rng(0).standard_normal(len(q))
    qd = rec.qd.copy()
    qd[:, 3] = 5e-4 * np.random.default_rng(1).standard_normal(len(q))
    tau = rd.inverse_dynamics(truth, q, np.where(np.arange(6) == 3, 0.0, qd), np.where(np.arange(6) == 3, 0.0, rec.qdd))
    pset = ParameterSet()
    stats = [statistics_from_arrays(puma, pset, rec.t, q, qd, tau, EXACT)]
    assert stats[0].static == ("joint4",)
    with pytest.raises(IdentificationError) as info:
        fit_statistics(puma, pset, stats, settings=EXACT)
    message = str(info.value)
    assert "joint4" in message and "Fv4" in message and "--prior" in message
    # with a prior the unexcited parameters keep their nominal values, and the result says so
    result = fit_statistics(puma, pset, stats, settings=EXACT, prior_weight=1e-6, consistent=False)
    assert any("Fv4" in w for w in result.warnings)
    theta = dict(zip(result.names, result.fit.theta, strict=True))
    nominal = dict(zip(result.names, nominal_parameters(puma, pset), strict=True))
    assert theta["Fv4"] == pytest.approx(nominal["Fv4"], rel=1e-3)


def test_bad_inputs_are_named(puma: RobotModel, truth: RobotModel, tmp_path: Path) -> None:
    rec = record(truth, 1.0, 200.0, seed=80)
    no_effort = write_bag(tmp_path / "no_effort", rec, truth.joint_names, effort=False)
    with pytest.raises(IdentificationError, match=r"no_effort.*carry no effort"):
        identify(str(no_effort), puma, jobs=1)
    short = write_bag(tmp_path / "short", record(truth, 0.1, 200.0, seed=81), truth.joint_names)
    with pytest.raises(IdentificationError, match=r"short.*too short"):
        identify(str(short), puma, jobs=1)
    renamed = write_bag(tmp_path / "renamed", rec, [f"j{k}" for k in range(6)])
    with pytest.raises(IdentificationError, match=r"renamed.*joint names do not match"):
        identify(str(renamed), puma, jobs=1)
    with pytest.raises(IdentificationError, match="no such bag"):
        identify(str(tmp_path / "missing"), puma, jobs=1)
    (tmp_path / "empty").mkdir()
    with pytest.raises(IdentificationError, match="without bags"):
        identify(str(tmp_path / "empty"), puma, jobs=1)
    with pytest.raises(IdentificationError, match="has no joint 'joint9'"):
        identify(str(renamed), puma, joint_map={"j0": "joint9"}, jobs=1)


def test_joint_map_renames_bag_joints(puma: RobotModel, truth: RobotModel, tmp_path: Path) -> None:
    rec = record(truth, 2.0, 250.0, seed=90)
    bag = write_bag(tmp_path / "renamed", rec, [f"j{k}" for k in range(6)])
    mapping = {f"j{k}": f"joint{k + 1}" for k in range(6)}
    result = identify(str(bag), puma, joint_map=mapping, settings=None, jobs=1, consistent=False)
    assert result.train.count > 0
    assert np.all(result.rms["identified_holdout"] < result.rms["nominal_holdout"])


def test_velocity_free_streams_differentiate_positions(puma: RobotModel, truth: RobotModel) -> None:
    rec = record(truth, 2.0, 250.0, seed=95)
    pset = ParameterSet()
    stats = [statistics_from_arrays(puma, pset, rec.t, rec.q, None, rec.tau, PipelineSettings(polyorder=7))]
    result = fit_statistics(puma, pset, stats, consistent=False)
    expected = result.base.to_base(nominal_parameters(truth, pset))
    assert np.abs(result.fit.theta_base - expected).max() < 1e-6 * np.abs(expected).max()


def test_bundled_sample_bag(puma: RobotModel) -> None:
    """The simulated PUMA bag (stick-slip plant, sensor noise): the noise is found, the least-squares
    model is as good as the simulated plant on held-out data; the published inertias are no rigid
    bodies', so the consistent fit costs more than least squares, but only slightly (no warning)."""
    from robot_dynamics.bag.sample import EFFORT_NOISE as SAMPLE_NOISE

    bag = str(Path(__file__).resolve().parent.parent / "data" / "puma560_sample")
    wls = identify(bag, puma, consistent=False, jobs=1)
    np.testing.assert_allclose(wls.noise_std, SAMPLE_NOISE, rtol=0.35)  # joint 1: stiction adds to the noise
    assert wls.rms["identified_holdout"] is not None and wls.rms["nominal_holdout"] is not None
    assert np.all(wls.rms["identified_holdout"] < 1.1 * wls.rms["nominal_holdout"])
    assert wls.fit.sigma2 == pytest.approx(1.0, rel=0.1)
    consistent = identify(bag, puma, jobs=1)
    assert consistent.identified is not None
    assert wls.fit.cost < consistent.fit.cost < 1.01 * wls.fit.cost
    assert not any("times the least-squares cost" in w for w in consistent.warnings)


def test_a_failing_bag_in_worker_processes_is_named(puma: RobotModel, truth: RobotModel, tmp_path: Path) -> None:
    from robot_dynamics.identification.parallel import map_tasks

    good = write_bag(tmp_path / "a_good", record(truth, 1.0, 200.0, seed=1), truth.joint_names)
    bad = write_bag(tmp_path / "b_bad", record(truth, 1.0, 200.0, seed=2), truth.joint_names, effort=False)
    with pytest.raises(IdentificationError, match=r"b_bad: the joint states .* carry no effort"):
        identify([str(good), str(bad)], puma, jobs=2)
    with pytest.raises(IdentificationError, match="jobs must be >= 1"):
        map_tasks(abs, [1, 2], jobs=0)
    assert map_tasks(abs, [-1, -2, 3], jobs=2) == [1, 2, 3]  # results in task order


def test_time_spans_do_not_change_the_result(puma: RobotModel, truth: RobotModel, tmp_path: Path) -> None:
    """One recording cut into spans of 300 states: the same normal equations bit for bit in 1 or 2
    processes, the same (to rounding of the sums) as one span, whose derivatives come from the whole
    series; one bag with 2 jobs (spans shared by the processes) equals 1 job bit for bit."""
    rec = record(truth, 3.0, 500.0, seed=71, effort_noise=EFFORT_NOISE)
    pset = ParameterSet()
    fine = PipelineSettings(chunk=300)
    one = statistics_from_arrays(puma, pset, rec.t, rec.q, rec.qd, rec.tau, PipelineSettings(chunk=10**6))
    for velocity in (rec.qd, None):  # differentiated velocity, or twice-differentiated position
        serial = statistics_from_arrays(puma, pset, rec.t, rec.q, velocity, rec.tau, fine, jobs=1)
        spread = statistics_from_arrays(puma, pset, rec.t, rec.q, velocity, rec.tau, fine, jobs=2)
        assert serial.holdout is not None and spread.holdout is not None
        for a, b in ((serial.train, spread.train), (serial.holdout, spread.holdout)):
            for name in ("ata_joint", "atb_joint", "btb_joint"):
                np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
            assert a.count == b.count
        np.testing.assert_array_equal(serial.nominal_sse_train, spread.nominal_sse_train)
        np.testing.assert_array_equal(serial.excitation, spread.excitation)
    whole = statistics_from_arrays(puma, pset, rec.t, rec.q, rec.qd, rec.tau, fine)
    assert one.holdout is not None and whole.holdout is not None
    assert whole.train.count == one.train.count and whole.holdout.count == one.holdout.count
    for a, b in ((one.train, whole.train), (one.holdout, whole.holdout)):
        for name in ("ata_joint", "atb_joint", "btb_joint"):
            x, y = getattr(a, name), getattr(b, name)
            assert np.abs(x - y).max() <= 1e-12 * np.abs(x).max(), name
    np.testing.assert_allclose(whole.nominal_sse_holdout, one.nominal_sse_holdout, rtol=1e-12)
    np.testing.assert_array_equal(whole.excitation, one.excitation)
    bag = write_bag(tmp_path / "long", rec, truth.joint_names)
    runs = [identify(bag, puma, jobs=jobs, consistent=False, settings=fine) for jobs in (1, 2)]
    for name in ("ata_joint", "atb_joint", "btb_joint"):
        np.testing.assert_array_equal(getattr(runs[0].train, name), getattr(runs[1].train, name))
    np.testing.assert_array_equal(runs[0].fit.theta, runs[1].fit.theta)


def test_a_bad_span_in_worker_processes_is_named(puma: RobotModel, truth: RobotModel) -> None:
    rec = record(truth, 2.0, 500.0, seed=72)
    qd = rec.qd.copy()
    qd[700, 2] = np.nan  # inside the second span of 300 states
    with pytest.raises(IdentificationError, match=r"run7: values to differentiate are not all finite"):
        statistics_from_arrays(
            puma, ParameterSet(), rec.t, rec.q, qd, rec.tau, PipelineSettings(chunk=300), jobs=2, name="run7"
        )


def _blas_threads_of_worker(_: int) -> list[int]:
    from robot_dynamics.identification.parallel import blas_threads

    return blas_threads()


def test_worker_processes_use_one_blas_thread() -> None:
    """Two worker processes with a multi-threaded BLAS each would oversubscribe the cores."""
    from robot_dynamics.identification.parallel import blas_threads, limit_blas_threads, map_tasks

    here = blas_threads()
    if not here:
        pytest.skip("no OpenBLAS loaded (another BLAS)")
    limit_blas_threads(2)  # as if on a machine with two or more cores, where OpenBLAS starts that many
    try:
        assert blas_threads() == [2] * len(here)
        workers = map_tasks(_blas_threads_of_worker, [0, 1], jobs=2)
        assert workers == [[1] * len(here)] * 2
        assert blas_threads() == [2] * len(here)  # this process is left alone
    finally:
        limit_blas_threads(max(here))
