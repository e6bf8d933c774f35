"""``robot-dynamics id | coefficients | fd``: values, JSON output and error messages."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS

import robot_dynamics as rd
from robot_dynamics.cli import main


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:  # type: ignore[type-arg]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_id_json_matches_the_engine(capsys: pytest.CaptureFixture[str]) -> None:
    model = rd.load_robot("puma560")
    q, qd, qdd = model.named_poses["qn"], np.array([0.1, -0.2, 0.3, 0.4, -0.5, 0.6]), np.ones(6)
    out = _json(
        capsys,
        [
            "id",
            "puma560",
            "--q",
            "qn",
            "--qd",
            "0.1,-0.2,0.3",
            "0.4",
            "-0.5",
            "0.6",
            "--qdd",
            *["1"] * 6,
            "--breakdown",
            "--json",
        ],
    )
    assert out["joint_names"] == model.joint_names
    expected = rd.inverse_dynamics(model, q, qd, qdd, breakdown=True)
    assert np.allclose(out["tau"], expected.total, rtol=1e-12, atol=1e-12)
    assert np.allclose(out["breakdown"]["gravity"], expected.gravity, rtol=1e-12, atol=1e-12)
    rigid = _json(capsys, ["id", "puma560", "--q", "qn", "--no-friction", "--wrench", "0 0 10 0 0 0", "--json"])
    assert np.allclose(
        rigid["tau"],
        rd.inverse_dynamics(model, q, np.zeros(6), np.zeros(6), friction=False, wrench=[0, 0, 10, 0, 0, 0]),
    )


def test_id_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["id", "fu_two_link", "--q", "0", "pi/2", "--breakdown"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].split()[:3] == ["joint", "tau", "inertial"]
    c1 = float(text.splitlines()[1].split()[1])
    assert math.isclose(c1, rd.gravity_torques(rd.load_robot("fu_two_link"), [0, math.pi / 2])[0], rel_tol=1e-5)


def test_coefficients_and_fd(capsys: pytest.CaptureFixture[str]) -> None:
    model = rd.load_robot("robmat_double_pendulum")
    out = _json(
        capsys, ["coefficients", "robmat_double_pendulum", "--q", "0.3", "-0.4", "--qd", "1", "2", "--tensor", "--json"]
    )
    assert np.allclose(out["D"], rd.inertia_matrix(model, [0.3, -0.4]))
    assert np.allclose(out["C"], rd.coriolis_matrix(model, [0.3, -0.4], [1, 2]))
    assert np.array(out["h_ikm"]).shape == (2, 2, 2)
    fd = _json(capsys, ["fd", "robmat_double_pendulum", "--q", "0.3", "-0.4", "--tau", "1", "0", "--json"])
    assert np.allclose(fd["qdd"], rd.forward_dynamics(model, [0.3, -0.4], [0, 0], [1, 0]))
    assert main(["coefficients", "scara", "--q", "0", "0", "0.1"]) == 0
    assert "D =" in capsys.readouterr().out


def test_task_space_json_and_text_match_the_engine(capsys: pytest.CaptureFixture[str]) -> None:
    model = rd.load_robot("puma560")
    q, qd = model.named_poses["qn"], np.array([0.1, -0.2, 0.3, 0.4, -0.5, 0.6])
    argv = ["task-space", "puma560", "--q", "qn", "--qd", "0.1,-0.2,0.3,0.4,-0.5,0.6", "--link", "link5"]
    out = _json(capsys, [*argv, "--axes", "link", "--inertia", "--rows", "linear", "--json"])
    expected = rd.task_space(model, q, qd, link="link5", axes="link", inertia=True, rows="linear")
    assert out["link"] == "link5" and out["base_link"] == "base_link" and out["axes"] == "link"
    for key in ("pose", "jacobian", "jdot_qdot"):
        assert np.allclose(out[key], getattr(expected, key), rtol=1e-12, atol=1e-12), key
    assert expected.inertia is not None and expected.condition is not None
    assert np.allclose(out["operational_space_inertia"], expected.inertia, rtol=1e-12, atol=1e-12)
    assert (
        out["rows"] == [0, 1, 2] and out["rank"] == 3 and out["condition"] == pytest.approx(float(expected.condition))
    )
    # the tip by default, an index names a link, a singular task with a pseudo-inverse: no infinity in JSON
    tip = _json(capsys, ["task-space", "puma560", "--q", "qz", "--json"])
    assert tip["link"] == "tool" and not any(tip["jdot_qdot"])
    assert _json(capsys, ["task-space", "puma560", "--q", "qn", "--link", "3", "--json"])["link"] == "link3"
    pinv = _json(
        capsys, ["task-space", "puma560", "--q", "qz", "--link", "2", "--inertia", "--rcond", "1e-9", "--json"]
    )
    assert pinv["condition"] is None and pinv["rank"] == 2
    assert main(["task-space", "puma560", "--q", "qn", "--inertia"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("robot puma560: frame tool in base_link") and "Lambda (rows vx vy vz wx wy wz" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["id", "puma560", "--q", "1", "2"], "--q: expected 6 values for robot 'puma560', got 2; named poses"),
        (["id", "puma560", "--q", "qn", "--qd", "__import__('os')"], "--qd: .* is not a number"),
        (
            ["fd", "puma560", "--q", "qn", "--tau", "nan", "0", "0", "0", "0", "0"],
            r"--tau: non-finite values \(nan or inf\) at joint 'joint1' \(nan\)",
        ),
        (
            ["id", "puma560", "--q", "0", "0", "1e999", "0", "0", "0"],
            r"--q: non-finite values \(nan or inf\) at joint 'joint3' \(inf\)",
        ),
        (["id", "no_such_robot", "--q", "0"], "no_such_robot"),
        (["id", "puma560", "--q", "qn", "--wrench", "1", "2"], "--wrench: expected 6 values"),
        (["id", "puma560"], "the following arguments are required: --q"),
        (["coefficients", "puma560", "--qd", "qn"], "the following arguments are required: --q"),
    ],
)
def test_errors(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(argv) == 2
    assert re.search(message, capsys.readouterr().err)


def test_id_says_which_vectors_default_to_zero(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, ["id", "puma560", "--q", "qn", "--qd", "0.1", "0", "0", "0", "0", "0", "--json"])
    assert out["qdd"] == [0.0] * 6 and out["qd"][0] == 0.1
    assert main(["id", "puma560", "--q", "qn"]) == 0
    assert capsys.readouterr().err == "robot-dynamics id: note: --qd, --qdd not given: zero\n"
    assert main(["fd", "puma560", "--q", "qn", "--qd", "qn", "--tau", "qn"]) == 0
    assert capsys.readouterr().err == ""


def test_info_json_matches_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    model = rd.load_robot("puma560")
    out = _json(capsys, ["info", "puma560", "--json"])
    assert out["joint_names"] == model.joint_names and out["dof"] == 6
    assert [j["mass"] for j in out["joints"]] == [j.link.mass for j in model.joints]
    assert np.allclose(out["named_poses"]["qn"], model.named_poses["qn"])
    assert out["joints"][1]["motor"]["gear_ratio"] == model.joints[1].motor.gear_ratio  # type: ignore[union-attr]
    assert out["joints"][0]["motor"]["coulomb"] == list(model.joints[0].motor.coulomb)  # type: ignore[union-attr]
    listing = _json(capsys, ["info", "--list", "--json"])
    assert "puma560_modified" in listing["robots"] and listing["default"] == "puma560"


@pytest.mark.parametrize("robot", ["puma560", "puma560_modified"])
def test_info_json_gives_every_friction_parameter_as_numbers(robot: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers, not the text table's rounded strings: every JointFriction field (bearing and
    transmission blocks of the thesis PUMA included) and the smoothing velocity the nodes use."""
    model = rd.load_robot(robot)
    out = _json(capsys, ["info", robot, "--json"])
    for joint, given in zip(model.joints, out["joints"], strict=True):
        expected = json.loads(json.dumps(dataclasses.asdict(joint.friction)))  # tuples as lists
        assert given["friction"] == expected, joint.name
        assert given["friction"]["smoothing_velocity"] == joint.friction.smoothing_velocity > 0
    assert any(j["friction"]["bearing"] for j in out["joints"]) == (robot == "puma560_modified")


ROBOT_COMMANDS = (
    "info",
    "export-urdf",
    "id",
    "coefficients",
    "fd",
    "evaluate",
    "replay",
    "demo",
    "make-sample-bag",
    "symbolic",
    "schedule",
)
BAG_COMMANDS = ("evaluate", "replay", "demo", "make-sample-bag")


def test_every_robot_command_takes_the_chain_options() -> None:
    from robot_dynamics.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command in ROBOT_COMMANDS:
        options = {s for a in sub.choices[command]._actions for s in a.option_strings}
        assert {"--base-link", "--tip-link", "--lock-joint"} <= options, command
        assert ("--joint-map" in options) == (command in BAG_COMMANDS), command
        assert "--json" in options or command in ("export-urdf", "demo"), command  # URDF text; demo writes JSON


def test_tip_link_reaches_the_loader_and_model_warnings_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    urdf = EXAMPLE_ROBOTS / "ur_description" / "urdf" / "ur5_robot.urdf"
    with pytest.warns(UserWarning, match="held at zero"):
        model = rd.load_robot(urdf, tip_link="wrist_2_link")
    q = [0.1, 0.2, 0.3, 0.4, 0.5]
    assert main(["id", str(urdf), "--tip-link", "wrist_2_link", "--q", *map(str, q), "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["joint_names"] == model.joint_names and len(q) == model.dof
    assert np.allclose(out["tau"], rd.inverse_dynamics(model, q, [0] * 5, [0] * 5), rtol=1e-12, atol=1e-12)
    warning, note = captured.err.splitlines()
    assert warning.startswith("robot-dynamics id: warning: ur5_robot.urdf: movable joints not on the chain")
    assert ".py" not in warning and "Warning" not in warning
    assert note == "robot-dynamics id: note: --qd, --qdd not given: zero"
    assert main(["info", "puma560", "--tip-link", "link4"]) == 2
    assert "tip_link: 'link4' contradicts the file, whose chain has tip_link 'tool'" in capsys.readouterr().err


def test_lock_joint_freezes_a_joint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    urdf = tmp_path / "puma.urdf"
    assert main(["export-urdf", "puma560", "--out", str(urdf)]) == 0
    locks = {"joint6": 0.0, "joint5": math.pi / 2}
    model = rd.load_robot(urdf, locked_joints=locks)  # type: ignore[call-arg,unused-ignore]
    argv = ["id", str(urdf), "--lock-joint", "joint6", "--lock-joint", "joint5=pi/2", "--q", "0.1,0.2,0.3,0.4"]
    out = _json(capsys, [*argv, "--json"])
    assert out["joint_names"] == model.joint_names == ["joint1", "joint2", "joint3", "joint4"]
    assert np.allclose(out["tau"], rd.inverse_dynamics(model, [0.1, 0.2, 0.3, 0.4], [0] * 4, [0] * 4))
