"""``robot-dynamics evaluate | replay | make-sample-bag``: outputs and the one-line error messages."""

from __future__ import annotations

import csv
import io as stdio
import json
from pathlib import Path

import numpy as np
import pytest

from robot_dynamics.bag import BagWriter, bag_summary, read_joint_states
from robot_dynamics.cli import main
from robot_dynamics.cli.bag import parse_record

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "puma560_sample"
T0 = 1_700_000_000_000_000_000


def test_evaluate_writes_every_output(tmp_path, capsys):
    out = tmp_path / "o"
    status = main(
        [
            "evaluate",
            str(SAMPLE),
            "--out",
            str(out / "bag"),
            "--storage",
            "sqlite3",
            "--csv",
            str(out / "s.csv"),
            "--json",
            str(out / "s.json"),
            "--plot",
            str(out / "p.png"),
        ]
    )
    assert status == 0
    text = capsys.readouterr().out
    assert "801 joint states" in text and "joint1" in text and "without friction" in text
    assert bag_summary(out / "bag").storage == "sqlite3"
    assert (out / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((out / "s.json").read_text())["messages"] == 801
    assert len(list(csv.DictReader((out / "s.csv").open()))) == 6
    # an existing output bag is not replaced without --force
    assert main(["evaluate", str(SAMPLE), "--out", str(out / "bag")]) == 2
    assert "exists already" in capsys.readouterr().err
    assert main(["evaluate", str(SAMPLE), "--out", str(out / "bag"), "--force", "--accel", "trajectory"]) == 0


def test_csv_to_stdout_keeps_the_table_on_stderr(capsys):
    assert main(["evaluate", str(SAMPLE), "--csv", "-", "--friction-model", "exact"]) == 0
    captured = capsys.readouterr()
    rows = list(csv.DictReader(stdio.StringIO(captured.out)))
    assert [r["joint"] for r in rows] == [f"joint{i}" for i in range(1, 7)]
    assert "RMS err" in captured.err and "friction model: exact" in captured.err


@pytest.fixture(scope="module")
def odd_bag(tmp_path_factory):
    path = tmp_path_factory.mktemp("odd") / "bag"
    with BagWriter(path) as w:
        w.write_joint_states("joint_states", T0 + np.arange(30), [f"j{i}" for i in range(6)], np.zeros((30, 6)))
        w.write_float64_multiarray("commands", [T0], [[1.0]])
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["evaluate", "{tmp}/nothing"], "bag '{tmp}/nothing' does not exist"),
        (["evaluate", "{odd}", "--joint-states", "states"], "no topic /states in the bag (topics: /commands"),
        (["evaluate", "{odd}", "--joint-states", "commands"], "topic /commands has type std_msgs/Float64MultiArray"),
        (["evaluate", "{odd}"], "joint names do not match: missing ['joint1', 'joint2'"),
        (["evaluate", "{odd}", "--robot", "no_such_robot"], "no_such_robot"),
        (["evaluate", "{odd}", "--trajectory", "commands"], "topic /commands has type std_msgs/Float64MultiArray"),
        (["replay", "{odd}", "--record", "/x"], "--record /x: give the message type as /x:pkg/msg/Name"),
        (["replay", "{odd}", "--record", "/x:Foo"], "message type must look like pkg/msg/Name"),
        (["make-sample-bag", "{tmp}/s", "--duration", "1"], "--duration must be more than 1.5 s"),
    ],
)
def test_errors_are_one_clear_line(tmp_path, odd_bag, capsys, args, message):
    fill = {"tmp": str(tmp_path), "odd": str(odd_bag)}
    status = main([a.format(**fill) for a in args])
    err = capsys.readouterr().err
    assert status == 2
    assert message.format(**fill) in err
    assert err.count("\n") == 1 and err.startswith(f"robot-dynamics {args[0]}: error: ")


def test_parse_record_defaults_to_the_feedforward_outputs():
    assert parse_record(None) == {
        "/feedforward/efforts": "sensor_msgs/msg/JointState",
        "/feedforward/commands": "std_msgs/msg/Float64MultiArray",
    }
    assert parse_record(["feedforward/efforts", "diag:diagnostic_msgs/msg/DiagnosticArray"]) == {
        "/feedforward/efforts": "sensor_msgs/msg/JointState",
        "/diag": "diagnostic_msgs/msg/DiagnosticArray",
    }


def test_joint_map_renames_bag_joints_to_model_joints(tmp_path, capsys):
    """A bag whose driver names the joints ``arm_1..6`` evaluates as the bag with the model's names."""
    mapping = [f"arm_{i}=joint{i}" for i in range(1, 7)]
    plain, renamed = tmp_path / "plain", tmp_path / "renamed"
    common = ["--duration", "2", "--rate", "100", "--storage", "sqlite3"]
    assert main(["make-sample-bag", str(plain), *common]) == 0
    assert "/joint_states" in capsys.readouterr().out
    joint_map_args = [a for m in mapping for a in ("--joint-map", m)]
    assert main(["make-sample-bag", str(renamed), *common, *joint_map_args, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert {t["topic"] for t in summary["topics"]} == {"/joint_states", "/joint_trajectory"}
    names = read_joint_states(renamed).names
    assert names == tuple(f"arm_{i}" for i in range(1, 7))

    assert main(["evaluate", str(plain), "--json", "-"]) == 0
    expected = json.loads(capsys.readouterr().out)
    out_bag = tmp_path / "out"
    assert main(["evaluate", str(renamed), *joint_map_args, "--json", "-", "--out", str(out_bag)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["joints"] == expected["joints"]  # same numbers, reported with the model's joint names
    assert got["messages"] == expected["messages"] > 100 and got["settings"]["trajectories"] == 1
    assert got["settings"]["joint_map"] == {f"arm_{i}": f"joint{i}" for i in range(1, 7)}
    assert "joint_map" not in expected["settings"]
    # the output bag speaks the bag's names, as the feed-forward node publishes them
    for topic in ("/robot_dynamics/model_efforts", "/robot_dynamics/feedforward_efforts"):
        assert read_joint_states(out_bag, topic).names == names

    # without the map the names do not match; a map to a joint the model lacks is refused up front
    assert main(["evaluate", str(renamed)]) == 2
    assert "joint names do not match: missing ['joint1'" in capsys.readouterr().err
    assert main(["evaluate", str(renamed), "--joint-map", "arm_1=joint7"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("robot-dynamics evaluate: error: --joint-map: robot 'puma560' has no joint 'joint7'")
