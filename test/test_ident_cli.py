"""``robot-dynamics identify``: outputs every command accepts, one clear error and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.cli import main
from robot_dynamics.identification.synthetic import Recording, perturbed_model, record, write_bag
from robot_dynamics.model import RobotModel
from robot_dynamics.models.chain_yaml import chain_metadata


@pytest.fixture(scope="module")
def scara() -> RobotModel:
    return rd.load_robot("scara")


@pytest.fixture(scope="module")
def bags(scara: RobotModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two bags of a perturbed SCARA with sensor noise, in one directory."""
    folder = tmp_path_factory.mktemp("bags")
    truth = perturbed_model(scara, seed=9)
    for k in range(2):
        rec = record(truth, 3.0, 250.0, seed=100 + k, effort_noise=0.05)
        write_bag(folder / f"run{k}", rec, truth.joint_names)
    return folder


def _frozen(truth: RobotModel, seed: int, joint: int) -> Recording:
    """A recording in which ``joint`` stands still (torques consistent with that)."""
    rec = record(truth, 2.0, 250.0, seed=seed)
    q, qd, qdd = rec.q.copy(), rec.qd.copy(), rec.qdd.copy()
    q[:, joint], qd[:, joint], qdd[:, joint] = 0.3, 0.0, 0.0
    tau = rd.inverse_dynamics(truth, q, qd, qdd, smooth=True)
    return Recording(rec.t, q, qd, qdd, tau, rec.stamps)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["identify", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_identify_writes_model_report_and_plot(bags: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, report, plot = tmp_path / "scara_id.yaml", tmp_path / "report.json", tmp_path / "holdout.png"
    status, stdout, _ = _run(
        capsys,
        str(bags),
        "--robot",
        "scara",
        "--out",
        str(out),
        "--json",
        str(report),
        "--plot",
        str(plot),
        "--jobs",
        "1",
    )
    assert status == 0
    assert "held-out RMS" in stdout and f"wrote {out}" in stdout
    model = rd.load_robot(str(out))
    assert model.joint_names == ["joint1", "joint2", "joint3"]
    meta = chain_metadata(out)
    assert meta["method"] == "consistent" and len(meta["bags"]) == 2 and meta["from_robot"] == "scara"
    data = json.loads(report.read_text())
    assert {"base_parameters", "condition_number", "joints", "consistency", "parameters"} <= set(data)
    assert all(row["physical"] for row in data["consistency"])
    assert all(b["std"] is not None and b["expression"].startswith(b["name"]) for b in data["base_parameters"])
    for row in data["joints"]:  # (the noise-level check of the estimate is in test_ident_pipeline)
        assert row["rms_identified_holdout"] < 0.1 * row["rms_nominal_holdout"]
        assert row["rms_identified_train"] < 0.1 * row["rms_nominal_train"]
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["holdout.png", "report.json", "scara_id.yaml"]
    # evaluate and the nodes' loader accept the identified model
    status, stdout, _ = _run_evaluate(capsys, str(bags / "run0"), "--robot", str(out))
    assert status == 0
    pytest.importorskip("rclpy")
    from robot_dynamics.ros.robot_node import load_robot_model

    node_model = load_robot_model("", str(out))
    q = np.full(3, 0.1)
    np.testing.assert_array_equal(rd.inverse_dynamics(node_model, q, q, q), rd.inverse_dynamics(model, q, q, q))


def _run_evaluate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["evaluate", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_urdf_output_has_the_same_dynamics(bags: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    yaml_out, urdf_out = tmp_path / "m.yaml", tmp_path / "m.urdf"
    for out in (yaml_out, urdf_out):
        assert _run(capsys, str(bags), "--robot", "scara", "--out", str(out), "--jobs", "1")[0] == 0
    text = urdf_out.read_text()
    assert "<robot_dynamics" in text and "symmetric Coulomb friction only" in text
    a, b = rd.load_robot(str(yaml_out)), rd.load_robot(str(urdf_out))
    q, qd, qdd = (np.random.default_rng(1).uniform(-1, 1, (20, 3)) for _ in range(3))
    np.testing.assert_allclose(
        rd.inverse_dynamics(a, q, qd, qdd, smooth=True), rd.inverse_dynamics(b, q, qd, qdd, smooth=True), atol=1e-9
    )


def test_payload_only_reports_the_payload(
    scara: RobotModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dataclasses import replace

    from robot_dynamics.model import Inertial

    payload = Inertial.from_components(0.8, (0.0, 0.0, -0.05), 0.002, 0.002, 0.001)
    last = scara.joints[-1]
    truth = scara.with_changes(
        joints=(*scara.joints[:-1], replace(last, link=last.link + payload.transformed(scara.tool)))
    )
    bag = write_bag(tmp_path / "payload", record(truth, 3.0, 250.0, seed=7, effort_noise=0.01), truth.joint_names)
    out, report = tmp_path / "with_payload.yaml", tmp_path / "payload.json"
    status, stdout, _ = _run(
        capsys, str(bag), "--robot", "scara", "--payload-only", "--out", str(out), "--json", str(report), "--jobs", "1"
    )
    assert status == 0 and "payload:" in stdout
    data = json.loads(report.read_text())
    assert data["parameter_set"]["links"] == [2]
    assert data["payload"]["mass"] == pytest.approx(0.8, rel=0.05)
    assert data["payload"]["frame"] == "tool"


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("no_effort", "carry no effort"),
        ("short", "too short"),
        ("static", "never moved"),
        ("missing", "no such bag"),
        ("joint_map", "has no joint 'elbow'"),
        ("holdout", "--holdout must be in [0, 1)"),
        ("noise", "noise_std: expected 3 positive values"),
    ],
)
def test_bad_input_one_message_exit_2_nothing_written(
    case: str, expected: str, scara: RobotModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truth = perturbed_model(scara, seed=1)
    data = tmp_path / "data"
    data.mkdir()
    extra: list[str] = []
    if case == "no_effort":
        bag = write_bag(data / "b", record(truth, 2.0, 250.0, seed=1), truth.joint_names, effort=False)
    elif case == "short":
        bag = write_bag(data / "b", record(truth, 0.08, 250.0, seed=1), truth.joint_names)
    elif case == "static":
        bag = write_bag(data / "b", _frozen(truth, 1, 1), truth.joint_names)
    elif case == "missing":
        bag = data / "nothing_here"
    else:
        bag = write_bag(data / "b", record(truth, 2.0, 250.0, seed=1), truth.joint_names)
        extra = {
            "joint_map": ["--joint-map", "joint2=elbow"],
            "holdout": ["--holdout", "1.5"],
            "noise": ["--noise", "0.1", "0.1"],
        }[case]
    out = tmp_path / "out" / "model.yaml"
    report = tmp_path / "out" / "r.json"
    status, _, err = _run(capsys, str(bag), "--robot", "scara", "--out", str(out), "--json", str(report), *extra)
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("robot-dynamics identify: error: ") and expected in err
    if case == "static":
        assert "joint2" in err and "--prior" in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_static_joint_with_prior_falls_back_and_says_so(
    scara: RobotModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truth = perturbed_model(scara, seed=1)
    bag = write_bag(tmp_path / "b", _frozen(truth, 1, 1), truth.joint_names)
    out = tmp_path / "m.yaml"
    status, stdout, _ = _run(
        capsys, str(bag), "--robot", "scara", "--out", str(out), "--prior", "1e-6", "--noise", "0.05", "0.05", "0.05"
    )
    assert status == 0
    assert "warning: not determined by the data, kept at nominal values by the prior" in stdout
    assert "joint2" in stdout
    assert rd.load_robot(str(out)).dof == 3


def test_the_help_states_the_pipelines_defaults() -> None:
    """The command's help repeats the pipeline's defaults (the CLI does not import the pipeline to start)."""
    import argparse

    from robot_dynamics.cli import identify
    from robot_dynamics.identification.choice import PLAIN_VELOCITY, VELOCITIES, WINDOW_STATES, WINDOWS
    from robot_dynamics.identification.samples import STICK_VELOCITY, WINDOW_S

    parser = argparse.ArgumentParser()
    identify.register(parser.add_subparsers())
    text = " ".join(parser._subparsers._group_actions[0].choices["identify"].format_help().split())  # type: ignore[union-attr]
    windows = " or ".join(f"{w:g}" for w in WINDOWS)
    states = f"{WINDOW_STATES:,}".replace(",", " ")
    assert f"auto: {windows} chosen by cross-validation (default up to {states} states" in text
    assert f"else {WINDOW_S:g})" in text
    assert f"chosen from {', '.join(f'{v:g}' for v in VELOCITIES)} by cross-validation" in text
    assert f"auto (default): {STICK_VELOCITY:g}, the band on or off chosen" in text
    assert f"slower than {PLAIN_VELOCITY:g} rad/s left out (the baseline)" in text
