"""Excitation design (finite Fourier series, Swevers et al. 1997): limits, conditioning, files, CLI."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from robot_dynamics.bag import (
    FLOAT64_MULTIARRAY,
    JOINT_STATE,
    JOINT_TRAJECTORY,
    bag_summary,
    decode_joint_states,
    decode_joint_trajectories,
    read_topics,
)
from robot_dynamics.cli import main
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.identification import ParameterSet, regressor
from robot_dynamics.identification.base import base_parameters
from robot_dynamics.identification.excitation import (
    ExcitationResult,
    _Objective,
    condition_number,
    design_excitation,
)
from robot_dynamics.identification.excitation_files import (
    read_trajectory,
    read_trajectory_yaml,
    trajectory_condition_number,
    write_trajectory,
)
from robot_dynamics.identification.fourier import (
    ExcitationError,
    ExcitationLimits,
    FourierSeries,
    fourier_basis,
)
from robot_dynamics.model import Limits, RobotModel
from robot_dynamics.models.robots import load_robot

SAMPLE_BAG = Path(__file__).resolve().parents[1] / "data" / "puma560_sample"


def two_link() -> RobotModel:
    """The planar 2R arm of Fu, Gonzalez & Lee with limits (joint 2 with its own velocity limit)."""
    model = load_robot("fu_two_link")
    limits = (Limits(-2.0, 2.5), Limits(-1.5, 1.0, velocity=0.6))
    return model.with_changes(joints=tuple(replace(j, limits=lim) for j, lim in zip(model.joints, limits, strict=True)))


@pytest.fixture(scope="module")
def planar() -> ExcitationResult:
    return design_excitation(two_link(), 4.0, 3, rate=50.0, seed=3, starts=2, max_iterations=60)


@pytest.fixture(scope="module")
def scara() -> ExcitationResult:
    model = load_robot("scara")  # joints 1-2 without position limits: the given range
    return design_excitation(
        model, 3.0, 2, rate=40.0, seed=1, starts=1, max_iterations=40, position_range=2.0, ramp=1.0
    )


def test_series_derivatives_are_the_analytic_ones_and_periodic() -> None:
    rng = np.random.default_rng(0)
    series = FourierSeries(0.25, rng.normal(size=3), rng.normal(size=(3, 4)), rng.normal(size=(3, 4)))
    t = np.linspace(0.0, 8.0, 401)
    h = 1e-5
    q, qd, qdd = series.evaluate(t)
    qp, qdp, _ = series.evaluate(t + h)
    qm, qdm, _ = series.evaluate(t - h)
    np.testing.assert_allclose(qd, (qp - qm) / (2 * h), atol=1e-8)
    np.testing.assert_allclose(qdd, (qdp - qdm) / (2 * h), atol=1e-7)
    end = series.evaluate(np.array([4.0]))  # one period 1 / 0.25 Hz
    np.testing.assert_allclose(np.vstack(end)[:, :], np.vstack([a[:1] for a in (q, qd, qdd)]), atol=1e-12)
    # the mean over a period is q0 (the offset): the sines and cosines average out
    np.testing.assert_allclose(series.evaluate(np.arange(64) * 4.0 / 64)[0].mean(axis=0), series.offset, atol=1e-12)
    c = FourierSeries.from_coefficients(0.25, series.coefficients())
    np.testing.assert_array_equal(c.a, series.a)
    np.testing.assert_array_equal(c.b, series.b)


def test_objective_gradient_matches_central_differences() -> None:
    model = two_link()
    pset = ParameterSet()
    base = base_parameters(model, pset)
    omega, k = 2 * math.pi / 4.0, 3
    objective = _Objective(model, base, pset, fourier_basis(np.arange(60) * 4.0 / 60, omega, k))
    rng = np.random.default_rng(5)
    x = np.concatenate([[0.2], 0.3 * rng.normal(size=6), [-0.1], 0.3 * rng.normal(size=6)])  # per joint q0, a, b
    value, grad = objective(x)
    direct = math.log(condition_number(model, *_states(x, omega, k), base, pset))
    assert value == pytest.approx(direct, rel=1e-9)
    for _ in range(3):
        d = rng.normal(size=x.size)
        eps = 1e-5
        numeric = (objective.value(x + eps * d) - objective.value(x - eps * d)) / (2 * eps)
        assert grad @ d == pytest.approx(numeric, rel=2e-3, abs=1e-5)


def _states(x: np.ndarray, omega: float, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = np.arange(60) * (2 * math.pi / omega) / 60
    series = FourierSeries.from_coefficients(omega / (2 * math.pi), x.reshape(2, 2 * k + 1))
    return series.evaluate(t)


def _check_within(result: ExcitationResult, t: np.ndarray, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> None:
    lim = result.limits
    tol = 1e-9
    assert np.all(q <= lim.upper + tol) and np.all(q >= lim.lower - tol), "position limit"
    assert np.all(np.abs(qd) <= lim.velocity + tol), "velocity limit"
    assert np.all(np.abs(qdd) <= lim.acceleration + tol), "acceleration limit"


def test_limits_respected_on_a_fine_grid(planar: ExcitationResult, scara: ExcitationResult) -> None:
    for result in (planar, scara):
        period = 1.0 / result.series.frequency
        t = np.linspace(0.0, period, 40001)
        _check_within(result, t, *result.series.evaluate(t))  # the analytic series
        sampled = result.sampler().sample_many(np.linspace(0.0, result.times[-1], 40001))  # what a node runs
        _check_within(result, t, sampled.positions, sampled.velocities, sampled.accelerations)
        assert all(np.all(m >= 0.0) for m in result.margins.values())
        # the optimum uses the room it has: some limit is nearly reached
        assert min(float(m.min()) for m in result.margins.values()) < 0.2
    # the model's own velocity limit of joint 2 (0.6 rad/s) is used, the default 1 rad/s elsewhere
    np.testing.assert_allclose(planar.limits.velocity, [1.0, 0.6])
    assert any("velocity limit 1" in n and "joint1" in n and "joint2" not in n for n in planar.notes)
    assert any("acceleration limit 5" in n for n in planar.notes)
    assert any("+-2" in n for n in scara.notes)


def test_condition_number_strictly_better_than_the_random_start(planar: ExcitationResult) -> None:
    for before, after in zip(planar.start_condition_numbers, planar.final_condition_numbers, strict=True):
        assert after < before
    assert planar.condition_number == min(planar.final_condition_numbers)
    assert planar.condition_number < 0.5 * planar.initial_condition_number
    # the reported number is the conditioning of the written points over one period
    period = 1.0 / planar.series.frequency
    q, qd, qdd = planar.series.evaluate(np.arange(round(period * planar.rate)) / planar.rate)
    pset = ParameterSet()
    w = planar.base.independent
    y = regressor(planar.model, q, qd, qdd, pset)[:, :, w] / planar.base.scale
    assert planar.condition_number == pytest.approx(np.linalg.cond(y.reshape(-1, len(w))), rel=1e-6)


def test_design_is_deterministic_for_a_seed() -> None:
    model = two_link()
    a = design_excitation(model, 2.0, 2, rate=20.0, seed=7, starts=1, max_iterations=10)
    b = design_excitation(model, 2.0, 2, rate=20.0, seed=7, starts=1, max_iterations=10)
    c = design_excitation(model, 2.0, 2, rate=20.0, seed=8, starts=1, max_iterations=10)
    np.testing.assert_array_equal(a.positions, b.positions)
    assert not np.array_equal(a.positions, c.positions)


def test_ramp_starts_and_ends_at_rest(scara: ExcitationResult) -> None:
    for k in (0, -1):
        np.testing.assert_array_equal(scara.velocities[k], 0.0)
        np.testing.assert_array_equal(scara.accelerations[k], 0.0)
    assert scara.ramp >= 1.0
    assert scara.times[-1] == pytest.approx(3.0 + 2 * scara.ramp)
    # between the ramps the points are the series (shifted to its calm start phase)
    phase = float(scara.settings["start_phase_s"])
    inner = scara.times[1:-1] - scara.ramp
    np.testing.assert_allclose(scara.positions[1:-1], scara.series.evaluate(phase + inner)[0], atol=1e-12)


def test_yaml_round_trip_through_the_reader_and_the_node_converter(planar: ExcitationResult, tmp_path: Path) -> None:
    path = write_trajectory(planar, tmp_path / "traj.yaml")
    msg = read_trajectory_yaml(path)
    assert msg.names == tuple(planar.model.joint_names) and msg.stamp == 0
    np.testing.assert_array_equal(msg.positions, planar.positions)  # repr floats: exact
    np.testing.assert_array_equal(msg.accelerations, planar.accelerations)
    np.testing.assert_allclose(msg.times, planar.times, atol=1e-9)
    t = np.random.default_rng(2).uniform(0.0, planar.times[-1], 50)
    got = msg.sampler(planar.model.joint_names).sample_many(t)
    np.testing.assert_allclose(got.positions, planar.sampler().sample_many(t).positions, atol=1e-9)
    with pytest.raises(RobotDynamicsError, match="exists"):
        write_trajectory(planar, path)

    # the feed-forward node's converter accepts the message built from the YAML fields
    pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from robot_dynamics.ros.messages import trajectory_from_msg

    data = yaml.safe_load(path.read_text())
    ros = JointTrajectory()
    ros.joint_names = list(reversed(data["joint_names"]))  # any order: matched by name
    for p in data["points"]:
        ros.points.append(
            JointTrajectoryPoint(
                positions=list(reversed(p["positions"])),
                velocities=list(reversed(p["velocities"])),
                accelerations=list(reversed(p["accelerations"])),
                time_from_start=Duration(**p["time_from_start"]),
            )
        )
    node_sampler = trajectory_from_msg(ros, planar.model.joint_names)
    assert node_sampler.kind == "quintic"
    np.testing.assert_allclose(node_sampler.sample_many(t).velocities, got.velocities, atol=1e-12)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_bag_round_trip_through_the_bag_decoder(planar: ExcitationResult, tmp_path: Path, storage: str) -> None:
    path = write_trajectory(planar, tmp_path / "excite", storage=storage)
    summary = bag_summary(path)
    assert summary.topics["/joint_trajectory"].msgtype == JOINT_TRAJECTORY
    assert summary.topics["/joint_trajectory"].count == 1
    raw = read_topics(path, ["joint_trajectory"])
    (msg,) = decode_joint_trajectories(raw["/joint_trajectory"])
    assert msg.stamp == 0  # start on receipt
    np.testing.assert_array_equal(msg.positions, planar.positions)
    np.testing.assert_array_equal(msg.velocities, planar.velocities)
    np.testing.assert_allclose(msg.times, planar.times, atol=1e-9)
    assert read_trajectory(path).names == msg.names


def test_puma_design_beats_random_and_the_sample_trajectory() -> None:
    model = load_robot("puma560")
    result = design_excitation(model, 4.0, 2, rate=25.0, seed=0, starts=1, max_iterations=15)
    assert result.condition_number < result.initial_condition_number
    t = np.linspace(0.0, 4.0, 8001)
    _check_within(result, t, *result.series.evaluate(t))
    assert result.base.rank == len(result.base.names)
    sample = trajectory_condition_number(model, SAMPLE_BAG, result.base, ParameterSet(), rate=25.0)
    assert math.isfinite(sample) and result.condition_number < sample


def test_cli_writes_yaml_and_bag_and_reports_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    robot = tmp_path / "robot.yaml"
    robot.write_text(_robot_with_limits_yaml())
    out_yaml, out_bag = tmp_path / "x.yaml", tmp_path / "x_bag"
    argv = ["excitation", str(robot), "--duration", "2", "--harmonics", "2", "--out", str(out_yaml)]
    argv += ["--out", str(out_bag), "--rate", "20", "--starts", "1", "--iterations", "15", "--json"]
    argv += ["--storage", "sqlite3"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["condition_number"] < report["random_condition_number"]
    assert report["harmonics"] == 2 and report["joints"] == ["j1", "j2"]
    assert report["limits"]["velocity"] == [1.2, 1.0]  # the file's limit for j1, the default for j2
    assert set(report["margins"]) == {"position", "velocity", "acceleration"}
    assert out_yaml.is_file() and (out_bag / "metadata.yaml").is_file()
    assert read_trajectory(out_bag).names == ("j1", "j2")
    assert main(argv) == 2  # exists: not overwritten without --force
    assert "exists" in capsys.readouterr().err
    kept = tmp_path / "kept.yaml"
    out_yaml.rename(kept)
    assert main([*argv, "--force", "--compare", str(kept)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["condition_number"] == report["condition_number"]  # same seed, same design
    assert again["compare"][str(kept)] == pytest.approx(report["condition_number"], rel=0.05)


def _robot_with_limits_yaml() -> str:
    return """name: two_link_limits
convention: standard
gravity: [0, -9.81, 0]
joints:
  - name: j1
    type: revolute
    a: 0.4
    alpha: 0
    d: 0
    theta: 0
    limits: {lower: -1.5, upper: 1.5, velocity: 1.2}
    link: {mass: 2.0, com: [-0.2, 0, 0], inertia: [0.01, 0.03, 0.03, 0, 0, 0]}
  - name: j2
    type: revolute
    a: 0.3
    alpha: 0
    d: 0
    theta: 0
    limits: {lower: -2, upper: 2}
    link: {mass: 1.0, com: [-0.15, 0, 0], inertia: [0.005, 0.01, 0.01, 0, 0, 0]}
"""


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--duration", "0", "--harmonics", "2"], "duration must be a positive"),
        (["--duration", "-3", "--harmonics", "2"], "duration must be a positive"),
        (["--duration", "2", "--harmonics", "0"], "harmonics must be an integer >= 1"),
        (["--duration", "2", "--harmonics", "2", "--base-frequency", "0.3"], "whole number of periods"),
        (["--duration", "2", "--harmonics", "2", "--rate", "0"], "rate must be a positive"),
    ],
)
def test_cli_bad_numbers_exit_2_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    robot = tmp_path / "robot.yaml"
    robot.write_text(_robot_with_limits_yaml())
    out = tmp_path / "x.yaml"
    assert main(["excitation", str(robot), *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_robot_without_position_limits_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.yaml"
    assert main(["excitation", "fu_two_link", "--duration", "2", "--harmonics", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "fu_two_link" in err and "joint1, joint2 have no position limits" in err and "--position-range" in err
    assert not out.exists()
    with pytest.raises(ExcitationError, match="default velocity limit must be a positive"):
        ExcitationLimits.of(two_link(), velocity=0.0)


def _limited_robot(tmp_path: Path) -> RobotModel:
    path = tmp_path / "robot.yaml"
    path.write_text(_robot_with_limits_yaml())
    return load_robot(str(path))


def test_dry_run_bag_is_what_the_feedforward_law_computes(tmp_path: Path) -> None:
    from robot_dynamics.bag import evaluate
    from robot_dynamics.bag import report as bag_report

    model = load_robot("puma560")
    result = design_excitation(model, 2.0, 2, rate=50.0, seed=4, starts=1, max_iterations=10, ramp=0.5)
    bag = write_trajectory(result, tmp_path / "dry", joint_states=True)
    inputs = evaluate.read_inputs(bag, model, require_trajectory=True)
    assert len(inputs.series) == round(result.times[-1] * 50.0) + 1
    t = (inputs.series.stamps - inputs.series.stamps[0]) * 1e-9
    np.testing.assert_allclose(inputs.series.position, result.sampler().sample_many(t).positions, atol=1e-9)
    offline = evaluate.feedforward_torques(model, inputs.series, inputs.trajectories)  # the node's law, offline
    cmp = bag_report.compare_feedforward(inputs.series, offline, inputs.series)
    assert cmp.tracking == len(inputs.series)  # every joint state falls inside the trajectory
    assert cmp.ok(1e-9), cmp.describe()


def test_identify_recovers_the_model_from_the_dry_run_bag(tmp_path: Path) -> None:
    import robot_dynamics as rd
    from robot_dynamics.identification import nominal_parameters

    model = _limited_robot(tmp_path)
    result = design_excitation(model, 4.0, 3, rate=100.0, seed=2, starts=1, max_iterations=40)
    bag = write_trajectory(result, tmp_path / "dry", joint_states=True)
    identified = rd.identify([str(bag)], model, consistent=False, jobs=1, holdout=0.25)
    truth = identified.base.to_base(nominal_parameters(model, identified.pset))
    big = np.abs(truth) > 1e-2 * np.abs(truth).max()
    np.testing.assert_allclose(identified.fit.theta_base[big], truth[big], rtol=2e-3)


def test_cli_joint_states_need_a_bag_and_an_unexciting_comparison_is_null(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from robot_dynamics.identification.excitation_files import trajectory_yaml

    robot = tmp_path / "robot.yaml"
    robot.write_text(_robot_with_limits_yaml())
    base = ["excitation", str(robot), "--duration", "2", "--harmonics", "1", "--rate", "10", "--iterations", "5"]
    assert main([*base, "--out", str(tmp_path / "x.yaml"), "--joint-states"]) == 2
    assert "--joint-states needs a bag output" in capsys.readouterr().err
    still = tmp_path / "still.yaml"  # the robot standing still: nothing is excited
    zeros = np.zeros((3, 2))
    still.write_text(trajectory_yaml(["j1", "j2"], np.array([0.0, 1.0, 2.0]), zeros, zeros, zeros))
    assert main([*base, "--out", str(tmp_path / "y.yaml"), "--compare", str(still), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["compare"] == {str(still): None}


@pytest.mark.ros
def test_replay_of_the_dry_run_bag_through_the_live_feedforward_node(tmp_path: Path) -> None:
    """The written bag is played by ``replay`` to the running node, which tracks the trajectory."""
    pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")
    import os

    from robot_dynamics.bag import evaluate
    from robot_dynamics.bag import report as bag_report
    from robot_dynamics.ros import demo
    from robot_dynamics.ros.replay import replay

    model = load_robot("puma560")
    result = design_excitation(model, 2.0, 2, rate=50.0, seed=4, starts=1, max_iterations=10, ramp=0.5)
    bag = write_trajectory(result, tmp_path / "dry", joint_states=True)
    count = round(result.times[-1] * 50.0) + 1
    record = {"/feedforward/efforts": JOINT_STATE, "/feedforward/commands": FLOAT64_MULTIARRAY}
    with open(tmp_path / "nodes.log", "wb") as log:
        nodes = demo.start_nodes("puma560", log, dict(os.environ), service=False)
        try:
            replayed = replay(
                bag,
                record=record,
                rate=1.0,
                clock=True,
                expect=dict.fromkeys(record, count),
                ready=demo.outputs_matched(),
            )
        finally:
            demo.stop_nodes(nodes)
    report = f"{replayed.describe()}\n{(tmp_path / 'nodes.log').read_text()}"
    assert replayed.published == {"/joint_states": count, "/joint_trajectory": 1}, report
    inputs = evaluate.read_inputs(bag, model)
    recorded = decode_joint_states(replayed.recordings["/feedforward/efforts"], model.joint_names)
    cmp = bag_report.compare_feedforward(
        inputs.series, evaluate.feedforward_torques(model, inputs.series, inputs.trajectories), recorded
    )
    assert cmp.matched == count and cmp.tracking == count, report + cmp.describe()
    np.testing.assert_allclose(np.sort(recorded.effort, axis=0), np.sort(inputs.series.effort, axis=0), atol=1e-9)


def test_several_periods_repeat_the_series(tmp_path: Path) -> None:
    model = _limited_robot(tmp_path)
    result = design_excitation(model, 4.0, 2, base_frequency=0.5, rate=25.0, seed=1, starts=1, max_iterations=10)
    assert result.settings["periods"] == 2
    half = len(result.times) // 2  # 101 points: 0..4 s; the second period repeats the first
    np.testing.assert_allclose(result.positions[half:], result.positions[: half + 1], atol=1e-12)
    np.testing.assert_allclose(result.accelerations[half:], result.accelerations[: half + 1], atol=1e-12)
