"""Acceptance: a bag "like one recorded on a real arm" evaluates exactly like its clean copy.

The bundled sample (``data/puma560_sample``, 200 Hz) is rewritten the way a real driver and a real
DDS stack would have recorded it: about 30 Hz, header stamps starting at zero (the driver's own
clock), and every CDR padding byte of every ``sensor_msgs/JointState`` filled with random bytes
(encapsulation options, alignment gaps, up to three trailing bytes), in sqlite3 and mcap. A clean
copy (the same messages as ``rosbags`` serializes them, zero padding) is written alongside.
``robot-dynamics evaluate`` must give the same JSON on both, in-process and as a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
from test_bag_fuzz import joint_state_padding, with_garbage

from robot_dynamics.bag import (
    FLOAT64_MULTIARRAY,
    JOINT_STATE,
    TIME_BASE_RECEIVE,
    TIME_BASE_STAMPS,
    RawTopic,
    _cdr,
    decode_joint_states,
    read_topics,
)
from robot_dynamics.cli import main

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "puma560_sample"
STORE = get_typestore(Stores.ROS2_KILTED)
RATE_HZ = 30.0
PLUGINS = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}


def resampled_sample(zero_start: bool) -> tuple[list[tuple[int, Any]], RawTopic]:
    """The sample's joint states at ~30 Hz (the first message at or after each tick), as messages."""
    raw = read_topics(SAMPLE)
    js = raw["/joint_states"]
    msgs = [STORE.deserialize_cdr(r, JOINT_STATE) for r in js.data]
    stamps = np.array([m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec for m in msgs])
    ticks = stamps[0] + np.arange(0.0, (stamps[-1] - stamps[0]) * 1e-9, 1.0 / RATE_HZ) * 1e9
    keep = np.unique(np.searchsorted(stamps, ticks))
    out = []
    for k in keep.tolist():
        msg = msgs[k]
        if zero_start:
            ns = int(stamps[k] - stamps[0])
            msg.header.stamp = STORE.types["builtin_interfaces/msg/Time"](
                sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000
            )
        out.append((int(js.timestamps[k]), msg))
    return out, raw["/joint_trajectory"]


def write_pair(
    tmp: Path, storage: str, *, zero_start: bool = True, style: str = "gaps", seed: int = 30
) -> tuple[Path, Path]:
    """``(clean, garbage)`` bags of the same messages, written with rosbags' Writer alone.

    ``style`` (see ``with_garbage``): ``"gaps"``, garbage in the alignment gaps only, is the bag
    that crashed ``evaluate`` (every message the length of its template, matching none of them);
    ``"dds"`` adds trailing padding counted in the options bytes; ``"all"`` random options bytes.
    """
    rng = np.random.default_rng(seed)
    messages, trajectory = resampled_sample(zero_start)
    paths = (tmp / f"clean_{storage}", tmp / f"garbage_{storage}")
    serialized = [with_garbage(rng, msg, JOINT_STATE, joint_state_padding, False, style=style) for _, msg in messages]
    for which, path in enumerate(paths):
        writer = Writer(path, version=Writer.VERSION_LATEST, storage_plugin=PLUGINS[storage])
        writer.open()
        traj = writer.add_connection(trajectory.topic, trajectory.msgtype, typestore=STORE)
        states = writer.add_connection("/joint_states", JOINT_STATE, typestore=STORE)
        writer.write(traj, int(trajectory.timestamps[0]), trajectory.data[0])
        for (timestamp, _), pair in zip(messages, serialized, strict=True):
            writer.write(states, timestamp, pair[which])
        writer.close()
    return paths


def evaluate_json(bag: Path, tmp: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    out = tmp / f"{bag.name}.json"
    assert main(["evaluate", str(bag), "--json", str(out)]) == 0, capsys.readouterr().err
    summary: dict[str, Any] = json.loads(out.read_text())
    summary.pop("bag")
    return summary


@pytest.mark.parametrize(
    ("storage", "style"), [("sqlite3", "gaps"), ("mcap", "gaps"), ("sqlite3", "dds"), ("mcap", "all")]
)
def test_garbage_padding_30hz_zero_start_evaluates_like_the_clean_copy(tmp_path, capsys, storage, style):
    clean, garbage = write_pair(tmp_path, storage, style=style)
    # the bytes really differ, and the fast decoder still takes the whole stream in one block
    raw_clean = read_topics(clean, ["joint_states"])["/joint_states"]
    raw_garbage = read_topics(garbage, ["joint_states"])["/joint_states"]
    assert all(a != b for a, b in zip(raw_clean.data, raw_garbage.data, strict=True))
    groups, rest = _cdr.group_by_layout(raw_garbage.data, _cdr.parse_joint_state_layout)
    assert rest.size == 0 and sum(g.rows.size for g in groups) == len(raw_garbage)

    expected = evaluate_json(clean, tmp_path, capsys)
    assert evaluate_json(garbage, tmp_path, capsys) == expected
    assert expected["messages"] == 120 and 3.9 < expected["duration_s"] < 4.0
    assert expected["acceleration"] == {"source": "velocity", "window_samples": 5, "polyorder": 3}
    assert expected["settings"]["time_base"] == TIME_BASE_STAMPS
    assert expected["settings"]["feedforward_friction_velocity"] is None  # a zero stamp: the node's own clock
    assert expected["has_measured_effort"]
    # the model explains the measured efforts (sensor noise 0.2 N·m on joints 1-3; 30 Hz differentiation)
    rms = [j["rms_error_friction"] for j in expected["joints"]]
    measured = [j["rms_measured"] for j in expected["joints"]]
    assert all(0.0 < e < 0.25 * m for e, m in zip(rms, measured, strict=True)), (rms, measured)


def run_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "robot_dynamics.cli", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_garbage_padding_bag_as_a_subprocess(tmp_path, capsys):
    clean, garbage = write_pair(tmp_path, "sqlite3", style="all", seed=31)
    expected = evaluate_json(clean, tmp_path, capsys)
    result = run_cli("evaluate", str(garbage), "--json", "-")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary.pop("bag") == str(garbage)
    assert summary == expected
    assert "puma560: 120 joint states" in result.stderr  # the human-readable summary goes to stderr


def rewrite_stamps(tmp: Path, name: str, stamps: np.ndarray) -> Path:
    """The ~30 Hz sample with the given header stamps (garbage padding, sqlite3)."""
    rng = np.random.default_rng(5)
    messages, _ = resampled_sample(zero_start=False)
    path = tmp / name
    writer = Writer(path, version=Writer.VERSION_LATEST, storage_plugin=StoragePlugin.SQLITE3)
    writer.open()
    conn = writer.add_connection("/joint_states", JOINT_STATE, typestore=STORE)
    for (timestamp, msg), ns in zip(messages, stamps.tolist(), strict=True):
        msg.header.stamp = STORE.types["builtin_interfaces/msg/Time"](sec=ns // 10**9, nanosec=ns % 10**9)
        writer.write(conn, timestamp, with_garbage(rng, msg, JOINT_STATE, joint_state_padding, False)[1])
    writer.close()
    return path


def test_unstamped_and_backwards_bags_through_the_cli(tmp_path, capsys):
    n = 120
    unstamped = rewrite_stamps(tmp_path, "unstamped", np.zeros(n, dtype=np.int64))
    result = run_cli("evaluate", str(unstamped), "--json", str(tmp_path / "u.json"))  # a user's terminal
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        "/joint_states: every header stamp is zero; using the bag's receive times as sample times\n"
    )
    summary = json.loads((tmp_path / "u.json").read_text())
    assert summary["settings"]["time_base"] == TIME_BASE_RECEIVE and summary["messages"] == n

    stamps = np.arange(n, dtype=np.int64) * 33_333_333 + 10**9
    stamps[60:] -= 10**9  # the driver's clock was reset
    backwards = rewrite_stamps(tmp_path, "backwards", stamps)
    assert main(["evaluate", str(backwards)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(
        "robot-dynamics evaluate: error: /joint_states: header stamps do not increase at message 60 "
        "(2966666647 -> 1999999980 ns; stamps that go backwards cannot be differentiated"
    ), err


def test_too_short_bag_through_the_cli(tmp_path, capsys):
    short = rewrite_stamps(tmp_path, "short", np.arange(120, dtype=np.int64) * 33_333_333)
    raw = read_topics(short)["/joint_states"]
    with Writer(tmp_path / "three", version=Writer.VERSION_LATEST) as writer:
        conn = writer.add_connection("/joint_states", JOINT_STATE, typestore=STORE)
        for k in range(3):
            writer.write(conn, int(raw.timestamps[k]), raw.data[k])
    assert main(["evaluate", str(tmp_path / "three")]) == 2
    err = capsys.readouterr().err
    assert err == (
        "robot-dynamics evaluate: error: /joint_states: 3 messages, too few to differentiate: a degree-3 "
        "Savitzky-Golay fit needs at least 5 samples\n"
    )


@pytest.mark.ros
def test_replay_of_the_garbage_padding_bag_matches_the_offline_torques(tmp_path):
    """The raw garbage-padded CDR goes over DDS to the live feed-forward node (its own deserializer);
    its torques equal the offline ones. Original (absolute) stamps: a zero stamp would make the node
    use its own clock, which the offline computation cannot reproduce. Options bytes as DDS writes
    them (the trailing padding count): Fast-CDR reads them, and drops messages whose options claim
    padding that is not there."""
    pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")
    from robot_dynamics import load_robot
    from robot_dynamics.bag import evaluate as ev_mod
    from robot_dynamics.bag.report import compare_feedforward
    from robot_dynamics.ros import demo
    from robot_dynamics.ros.replay import replay

    _, garbage = write_pair(tmp_path, "mcap", zero_start=False, style="dds", seed=32)
    record = {"/feedforward/efforts": JOINT_STATE, "/feedforward/commands": FLOAT64_MULTIARRAY}
    model = load_robot("puma560")
    with open(tmp_path / "nodes.log", "wb") as log:
        nodes = demo.start_nodes("puma560", log, dict(os.environ), {}, service=False)
        try:
            result = replay(
                garbage,
                record=record,
                rate=2.0,
                clock=True,
                expect=dict.fromkeys(record, 120),
                ready=demo.outputs_matched(),
            )
        finally:
            demo.stop_nodes(nodes)
    inputs = ev_mod.read_inputs(garbage, model)
    offline = ev_mod.feedforward_torques(model, inputs.series, inputs.trajectories)
    recorded = decode_joint_states(result.recordings["/feedforward/efforts"], model.joint_names)
    cmp = compare_feedforward(inputs.series, offline, recorded)
    report = f"{cmp.describe()}\n{result.describe()}\n{(tmp_path / 'nodes.log').read_text()}"
    assert result.lost == dict.fromkeys(record, 0), report
    assert cmp.ok(1e-9), report
    assert cmp.matched == 120 and 0 < cmp.tracking < 120, report
