"""``robot-dynamics symbolic`` and ``robot-dynamics schedule``."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.cli import main


def test_markdown_report_with_symbols(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["symbolic", "robmat_double_pendulum", "--format", "md", "--out", str(tmp_path)]
    args += ["--symbols", "mass,length,gravity", "--rename", "a1=L1,a2=L2", "--ops"]
    assert main(args) == 0
    text = (tmp_path / "robmat_double_pendulum_dynamics.md").read_text()
    assert "D12 = L2*m2*(C2*L1 + L2)" in text
    assert "c2 = L2*S12*g*m2" in text
    assert "## Customised Newton–Euler inverse dynamics" in text
    out = capsys.readouterr().out
    assert "| generated (regrouped) |" in out


def test_latex_report(tmp_path: Path) -> None:
    assert main(["symbolic", "fu_two_link", "--format", "latex", "--out", str(tmp_path), "--symbols", "mass"]) == 0
    tex = (tmp_path / "fu_two_link_dynamics.tex").read_text()
    assert tex.startswith("\\documentclass") and tex.rstrip().endswith("\\end{document}")
    assert "D_{11}" in tex and "\\dot{q}_{1}" in tex and "\\ddot{q}_{1}" in tex


def test_python_output_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["symbolic", "scara", "--format", "python", "--out", str(tmp_path), "--ops", "--no-search"]) == 0
    path = tmp_path / "scara_inverse_dynamics.py"
    spec = importlib.util.spec_from_file_location("scara_gen", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = rd.load_robot("scara")
    q, qd, qdd = np.random.default_rng(0).uniform(-1, 1, (3, 5, 3))
    np.testing.assert_allclose(
        module.inverse_dynamics(q, qd, qdd), rd.inverse_dynamics(model, q, qd, qdd, friction=False), atol=1e-12
    )
    assert "multiplications" in capsys.readouterr().out


def test_c_output_and_table_2_10(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["symbolic", "stanford", "--format", "c", "--out", str(tmp_path), "--ops", "--no-search"]) == 0
    src = (tmp_path / "stanford_inverse_dynamics.c").read_text()
    assert "void rd_inverse_dynamics_batch(long count" in src
    out = capsys.readouterr().out
    assert "| Table 2.10 Stanford 6 DOF: thesis | 183 | 140 |" in out


def test_schedule_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schedule", "scara", "--processors", "9", "--thesis"]) == 0
    out = capsys.readouterr().out
    assert "generated scara" in out
    assert "| 9 | 30 | 90 | 7.70 | 85.6% | 30 |" in out  # the thesis graph, p = 9: 30 levels as in Table C.8


def test_errors_name_the_problem(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["symbolic", "scara", "--symbols", "mass,colour"]) == 2
    assert "unknown symbolic parameter groups ['colour']" in capsys.readouterr().err
    assert main(["symbolic", "scara", "--rename", "a1"]) == 2
    assert "--rename: expected OLD=NEW" in capsys.readouterr().err
    assert main(["schedule", "scara", "--processors", "0"]) == 2
    assert "--processors must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(("robot", "calls"), [("puma560_modified", 8), ("stanford", 6), ("scara", 2)])
def test_ops_reports_the_sin_cos_the_generated_code_computes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], robot: str, calls: int
) -> None:
    argv = ["symbolic", robot, "--format", "python", "--out", str(tmp_path), "--ops", "--no-search"]
    assert main([*argv, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    source = (tmp_path / f"{robot}_inverse_dynamics.py").read_text()
    in_code = len(re.findall(r"\b(?:sin|cos)\(", source))  # the calls the generated program makes
    assert payload["ops"]["trig"] == in_code == calls
    assert main(argv) == 0
    assert f"| {calls} sin/cos (computed once) |" in capsys.readouterr().out


def test_schedule_defaults_to_the_thesis_puma_and_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schedule", "--processors", "2", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["robot"] == "puma560_modified"  # Dhanaraj 1990's PUMA 560 (modified DH)
    (graph,) = payload["graphs"]
    rows = graph["schedules"]
    assert [r["processors"] for r in rows] == [1, 2]
    assert rows[0]["levels"] == graph["tasks"] and rows[1]["levels"] >= graph["tasks"] / 2
    assert rows[1]["speedup"] == pytest.approx(rows[0]["levels"] / rows[1]["levels"])


def test_symbolic_json_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["symbolic", "fu_two_link", "--format", "c", "--out", str(tmp_path), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert Path(payload["file"]) == tmp_path / "fu_two_link_inverse_dynamics.c" and Path(payload["file"]).is_file()
    assert payload["robot"] == "fu_two_link" and "ops" not in payload
