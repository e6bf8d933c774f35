"""Replay through live nodes over DDS: same torques as the offline evaluation, no message lost; the demo."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

from robot_dynamics import load_robot
from robot_dynamics.bag import (
    FLOAT64_MULTIARRAY,
    JOINT_STATE,
    BagWriter,
    bag_summary,
    decode_float64_multiarray,
    decode_joint_states,
)
from robot_dynamics.bag import evaluate as ev_mod
from robot_dynamics.bag.report import compare_feedforward
from robot_dynamics.ros import demo
from robot_dynamics.ros.replay import ReplayError, message_class, replay

pytestmark = pytest.mark.ros

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "puma560_sample"
MODEL = load_robot("puma560")
RECORD = {"/feedforward/efforts": JOINT_STATE, "/feedforward/commands": FLOAT64_MULTIARRAY}


def test_replay_through_the_live_feedforward_node_matches_the_offline_torques(tmp_path):
    """friction_velocity=measured here (the demo covers the default, desired)."""
    parameters = {"friction": "true", "smooth_friction": "true", "friction_velocity": "measured"}
    with open(tmp_path / "nodes.log", "wb") as log:
        nodes = demo.start_nodes("puma560", log, dict(os.environ), parameters, service=False)
        try:
            result = replay(
                SAMPLE,
                record=RECORD,
                out=tmp_path / "recorded",
                rate=1.0,
                clock=True,
                expect=dict.fromkeys(RECORD, 801),
                ready=demo.outputs_matched(),
            )
        finally:
            demo.stop_nodes(nodes)
    assert result.published == {"/joint_states": 801, "/joint_trajectory": 1}
    inputs = ev_mod.read_inputs(SAMPLE, MODEL)
    offline = ev_mod.feedforward_torques(MODEL, inputs.series, inputs.trajectories, friction_velocity="measured")
    recorded = decode_joint_states(result.recordings["/feedforward/efforts"], MODEL.joint_names)
    cmp = compare_feedforward(inputs.series, offline, recorded)
    report = f"{cmp.describe()}\n{result.describe()}\n{(tmp_path / 'nodes.log').read_text()}"
    assert result.lost == dict.fromkeys(RECORD, 0), report
    assert cmp.ok(1e-9), report
    assert cmp.matched == 801 and cmp.tracking == 601  # holds, tracks the 3 s trajectory, holds again
    commands = decode_float64_multiarray(result.recordings["/feedforward/commands"])
    assert commands.labels == ("joints",)
    assert np.max(np.abs(np.sort(commands.data, axis=0) - np.sort(offline.effort, axis=0))) < 1e-9
    # the recorded bag is a standard rosbag2 bag
    store = get_typestore(Stores.ROS2_KILTED)
    with Reader(tmp_path / "recorded") as reader:
        assert {c.topic: c.msgcount for c in reader.connections} == dict.fromkeys(RECORD, 801)
        conn, _, raw = next(reader.messages())
        store.deserialize_cdr(raw, conn.msgtype)


def test_demo_end_to_end(tmp_path, capsys):
    out = tmp_path / "demo"
    out.mkdir()
    for stale in ("replay_bag", "evaluation_bag"):  # outputs of an earlier run are replaced
        with BagWriter(out / stale) as w:
            w.write_float64_multiarray("stale", [1], [[0.0]])
    status = demo.run(out=out, domain_id=int(os.environ["ROS_DOMAIN_ID"]))
    text = capsys.readouterr().out
    assert status == 0, text + (out / "nodes.log").read_text()
    assert "801/801 joint states answered" in text and "lost 0" in text and ": OK" in text
    assert "with friction" in text and "without friction" in text and "joint6" in text
    for name in ("evaluation.png", "evaluation.csv", "evaluation.json", "nodes.log"):
        assert (out / name).is_file()
    assert set(bag_summary(out / "replay_bag").topics) == set(RECORD)
    assert "/stale" not in bag_summary(out / "evaluation_bag").topics


def test_replay_errors_name_the_problem(tmp_path):
    with pytest.raises(ReplayError, match=r"nodes not ready after 0.3 s: no subscriber on \['/joint_states'"):
        replay(SAMPLE, topics=["joint_states"], wait_timeout=0.3)
    with pytest.raises(ReplayError, match="message type my_pkg/msg/Thing is not available to rclpy here"):
        message_class("my_pkg/msg/Thing")
    with pytest.raises(ReplayError, match="unrecognised message type 'Thing'"):
        message_class("Thing")
    never = lambda node: lambda: False  # noqa: E731
    with pytest.raises(ReplayError, match=r"no subscriber on \['/joint_states'\]; the ready condition does not hold"):
        replay(SAMPLE, topics=["joint_states"], wait_timeout=0.3, ready=never)
    with pytest.raises(ReplayError, match="rate must be positive"):
        replay(SAMPLE, rate=0.0)
    with pytest.raises(ReplayError, match="expected messages on /x, which is not recorded"):
        replay(SAMPLE, expect={"x": 1})


def test_replay_cli_waits_for_the_node_and_checks(tmp_path, capsys):
    """``robot-dynamics replay --clock --check --wait-for-node``: the documented loop, node defaults."""
    from robot_dynamics.cli import main

    with open(tmp_path / "nodes.log", "wb") as log:
        nodes = demo.start_nodes("puma560", log, dict(os.environ), {}, service=False)
        try:
            status = main(
                [
                    "replay",
                    str(SAMPLE),
                    "--clock",
                    "--check",
                    "--robot",
                    "puma560",
                    "--wait-for-node",
                    "/feedforward_node",
                    "--out",
                    str(tmp_path / "recorded"),
                ]
            )
        finally:
            demo.stop_nodes(nodes)
    captured = capsys.readouterr()
    report = captured.out + captured.err + (tmp_path / "nodes.log").read_text()
    assert status == 0, report
    assert "801/801 joint states answered" in captured.out and ": OK" in captured.out, report
    assert bag_summary(tmp_path / "recorded").topics["/feedforward/commands"].count == 801


def test_replay_cli_waiting_for_an_absent_node_is_one_clear_error(capsys):
    from robot_dynamics.cli import main

    status = main(["replay", str(SAMPLE), "--topics", "joint_states", "--wait", "0.3", "--wait-for-node", "/nope"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("robot-dynamics replay: error: nodes not ready after 0.3 s")
    assert "the ready condition does not hold" in err
