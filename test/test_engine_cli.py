"""``robot-dynamics id | coefficients | fd``: values, JSON output and error messages."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

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


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["id", "puma560", "--q", "1", "2"], "--q: expected 6 values for robot 'puma560', got 2; named poses"),
        (["id", "puma560", "--qd", "__import__('os')"], "--qd: .* is not a number"),
        (["fd", "puma560", "--tau", "nan", "0", "0", "0", "0", "0"], "--tau: 'nan' is not a number"),
        (["id", "no_such_robot"], "no_such_robot"),
        (["id", "puma560", "--wrench", "1", "2"], "--wrench: expected 6 values"),
    ],
)
def test_errors(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(argv) == 2
    assert re.search(message, capsys.readouterr().err)
