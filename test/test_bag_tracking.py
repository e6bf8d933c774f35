"""``robot-dynamics tracking``: tracking errors of a bag's joint states against its trajectories.

* a made bag with known errors injected (two trajectories, one stamped, one starting on receipt;
  joint states before, between and after them that must not count): per segment and overall RMS and
  max of position and velocity errors equal the injected ones;
* the sample bag rewritten as a real arm records it (about 30 Hz, header stamps of the driver's own
  clock starting at zero, garbage in every CDR padding byte, joints renamed): the same JSON as its
  clean copy, close to the original 200 Hz recording's, in-process and as a subprocess.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rosbags.rosbag2 import Writer
from rosbags.typesys import Stores, get_typestore
from test_bag_fuzz import joint_state_padding, with_garbage
from test_bag_real_world import PLUGINS, SAMPLE, resampled_sample

from robot_dynamics.bag import JOINT_STATE, JOINT_TRAJECTORY, BagWriter, read_topics
from robot_dynamics.bag.evaluate import read_inputs
from robot_dynamics.bag.tracking import TIME_BASE_OWN, TIME_BASE_RECEIVE, TIME_BASE_SAME, Tracking, tracking
from robot_dynamics.cli import main
from robot_dynamics.models import load_robot
from robot_dynamics.trajectory import JointTrajectorySampler

PUMA = load_robot("puma560")
NAMES = PUMA.joint_names
STORE = get_typestore(Stores.ROS2_KILTED)
T0 = 1_700_000_000_000_000_000
RNG = np.random.default_rng(1803)


def made_bag(path: Path) -> dict[str, Any]:
    """Two trajectories and joint states that follow them with known errors; the injected errors."""
    times = np.array([0.0, 0.4, 1.0])
    a = JointTrajectorySampler(times, *RNG.normal(size=(3, 3, 6)))  # quintic, stamped start T0 + 0.5 s
    b = JointTrajectorySampler(times, RNG.normal(size=(3, 6)))  # linear, zero stamp: starts on receipt
    stamps = T0 + np.arange(0, 3_500_000_000, 10_000_000, dtype=np.int64)  # 100 Hz for 3.5 s
    received = stamps + 200_000
    b_received = T0 + 2_000_000_000 + 100_000  # between two joint states
    t = (stamps - T0) * 1e-9
    in_a, in_b = (t >= 0.5) & (t <= 1.5), (received > b_received) & (stamps >= b_received) & (t <= 3.0001)
    q, qd = RNG.uniform(-3, 3, (2, stamps.size, 6))  # outside the trajectories: anything
    e, e_dot = np.zeros((stamps.size, 6)), np.zeros((stamps.size, 6))
    e[in_a] = np.array([0.01, -0.02, 0.005, 0.0, 0.03, -0.001])  # constant errors during a
    e_dot[in_a] = np.array([0.1, 0.0, -0.2, 0.05, 0.0, 0.3])
    e[in_b] = 0.02 * np.sin(7.0 * t[in_b, None] + np.arange(6))  # sinusoidal errors during b
    e_dot[in_b] = RNG.normal(0.0, 0.05, (int(in_b.sum()), 6))
    da = a.sample_many(t[in_a] - 0.5)
    db = b.sample_many((stamps[in_b] - b_received) * 1e-9)
    q[in_a], qd[in_a] = da.positions - e[in_a], da.velocities - e_dot[in_a]  # e = q_d - q
    q[in_b], qd[in_b] = db.positions - e[in_b], db.velocities - e_dot[in_b]
    with BagWriter(path) as w:
        w.write_joint_trajectory(
            "joint_trajectory", T0 + 100_000_000, NAMES, times, a.positions, a.velocities, a.accelerations,
            stamp=T0 + 500_000_000,
        )  # fmt: skip
        w.write_joint_trajectory("joint_trajectory", b_received, NAMES, times, b.positions)
        w.write_joint_states("joint_states", received, NAMES, q, qd, stamps=stamps)
    return {"a": (e[in_a], e_dot[in_a]), "b": (e[in_b], e_dot[in_b]), "all": (e[in_a | in_b], e_dot[in_a | in_b])}


def check_errors(joints: list[dict[str, Any]], e: np.ndarray, e_dot: np.ndarray) -> None:
    got = {k: np.array([j[k] for j in joints]) for k in joints[0] if k != "joint"}
    np.testing.assert_allclose(got["rms_position_error"], np.sqrt(np.mean(e**2, axis=0)), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got["max_position_error"], np.abs(e).max(axis=0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got["rms_velocity_error"], np.sqrt(np.mean(e_dot**2, axis=0)), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got["max_velocity_error"], np.abs(e_dot).max(axis=0), rtol=1e-9, atol=1e-12)


def test_known_injected_errors_per_segment_and_overall(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    injected = made_bag(tmp_path / "made")
    out = tmp_path / "report.json"
    argv = ["tracking", str(tmp_path / "made"), "--robot", "puma560", "--json", str(out)]
    assert main([*argv, "--csv", str(tmp_path / "r.csv"), "--plot", str(tmp_path / "r.png")]) == 0
    printed = capsys.readouterr().out
    assert "2 trajectories" in printed and "joint6" in printed
    report = json.loads(out.read_text())
    assert report["settings"]["time_base"] == TIME_BASE_SAME
    a, b = report["segments"]
    assert (a["trajectory"], b["trajectory"]) == (0, 1) and a["finished"] and b["finished"]
    assert a["samples"] == len(injected["a"][0]) == 101 and b["samples"] == len(injected["b"][0])
    assert a["start_s"] == pytest.approx(0.5) and a["end_s"] == pytest.approx(1.5)
    check_errors(a["joints"], *injected["a"])
    check_errors(b["joints"], *injected["b"])
    check_errors(report["overall"], *injected["all"])
    assert report["tracking_samples"] == len(injected["all"][0])
    rows = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert [r["segment"] for r in rows] == ["0"] * 6 + ["1"] * 6 + ["all"] * 6
    assert float(rows[-1]["max_position_error"]) == pytest.approx(report["overall"][-1]["max_position_error"])
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def renamed_real_world_pair(
    tmp: Path, storage: str, *, zero_start: bool = True, unstamped: bool = False
) -> tuple[Path, Path]:
    """The sample at ~30 Hz, driver-clock stamps from zero (or none), joints renamed, (clean, garbage)."""
    rng = np.random.default_rng(30)
    messages, trajectory = resampled_sample(zero_start=zero_start)
    for _, msg in messages:
        msg.name = [f"arm_{n}" for n in msg.name]
        if unstamped:
            msg.header.stamp = STORE.types["builtin_interfaces/msg/Time"](sec=0, nanosec=0)
    traj = STORE.deserialize_cdr(trajectory.data[0], JOINT_TRAJECTORY)
    traj.joint_names = [f"arm_{n}" for n in traj.joint_names]
    serialized = [with_garbage(rng, msg, JOINT_STATE, joint_state_padding, False, style="gaps") for _, msg in messages]
    kind = "unstamped" if unstamped else "driver" if zero_start else "recorder"
    paths = (tmp / f"clean_{kind}_{storage}", tmp / f"garbage_{kind}_{storage}")
    for which, path in enumerate(paths):
        writer = Writer(path, version=Writer.VERSION_LATEST, storage_plugin=PLUGINS[storage])
        writer.open()
        tc = writer.add_connection(trajectory.topic, trajectory.msgtype, typestore=STORE)
        sc = writer.add_connection("/joint_states", JOINT_STATE, typestore=STORE)
        writer.write(tc, int(trajectory.timestamps[0]), bytes(STORE.serialize_cdr(traj, JOINT_TRAJECTORY)))
        for (timestamp, _), pair in zip(messages, serialized, strict=True):
            writer.write(sc, timestamp, pair[which])
        writer.close()
    return paths


JOINT_MAP = [arg for n in NAMES for arg in ("--joint-map", f"arm_{n}={n}")]


def tracking_json(bag: Path, tmp: Path, *more: str) -> dict[str, Any]:
    out = tmp / f"{bag.name}.json"
    assert main(["tracking", str(bag), "--json", str(out), *more]) == 0
    summary: dict[str, Any] = json.loads(out.read_text())
    summary.pop("bag")
    return summary


def report_of(bag: Path, joint_map: dict[str, str] | None = None) -> Tracking:
    inputs = read_inputs(bag, PUMA, joint_map=joint_map)
    return tracking(PUMA, inputs.series, inputs.trajectories)


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_a_real_world_recording_tracks_like_its_clean_copy_and_the_original(
    tmp_path: Path, storage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    clean, garbage = renamed_real_world_pair(tmp_path, storage)
    raw_clean = read_topics(clean, ["joint_states"])["/joint_states"]
    raw_garbage = read_topics(garbage, ["joint_states"])["/joint_states"]
    assert all(x != y for x, y in zip(raw_clean.data, raw_garbage.data, strict=True))
    expected = tracking_json(clean, tmp_path, *JOINT_MAP)
    assert tracking_json(garbage, tmp_path, *JOINT_MAP) == expected
    assert expected["settings"]["time_base"] == TIME_BASE_OWN
    assert expected["settings"]["joint_map"] == {f"arm_{n}": n for n in NAMES}
    assert expected["messages"] == 120 and len(expected["segments"]) == 1
    assert 85 <= expected["tracking_samples"] <= 92  # 3 s of a 30 Hz stream
    # The same 30 Hz messages with the recorder's stamps: the node's rules exactly, so at every joint
    # state the errors of the 200 Hz original (the same message there).
    mapping = {f"arm_{n}": n for n in NAMES}
    original = report_of(SAMPLE)
    assert original.settings["time_base"] == TIME_BASE_SAME and original.overall.samples == 601
    recorder_clock = report_of(renamed_real_world_pair(tmp_path, storage, zero_start=False)[1], mapping)
    assert recorder_clock.settings["time_base"] == TIME_BASE_SAME
    series = read_inputs(SAMPLE, PUMA).series
    rows = np.searchsorted(series.timestamps, read_inputs(clean, PUMA, joint_map=mapping).series.timestamps)
    np.testing.assert_array_equal(recorder_clock.position_error, original.position_error[rows])
    assert recorder_clock.velocity_error is not None and original.velocity_error is not None
    np.testing.assert_array_equal(recorder_clock.velocity_error, original.velocity_error[rows])
    # On the driver's clock the trajectory's start is known to within the smallest transport delay
    # (the offset of the two clocks is taken as the smallest receive - stamp): the errors differ by at
    # most that delay times the desired velocity.
    driver_clock = report_of(garbage, mapping)
    delay = int((series.timestamps - series.stamps).min()) * 1e-9
    desired_speed = np.nanmax(np.abs(recorder_clock.velocity_error + series.velocity[rows]), axis=0)
    gap = np.nanmax(np.abs(driver_clock.position_error - recorder_clock.position_error), axis=0)
    assert 0.0 < delay < 1e-3 and np.all(gap <= 1.05 * delay * desired_speed), (gap, delay * desired_speed)
    # without the joint map the bag's names match nothing: one line, exit 2
    assert main(["tracking", str(garbage)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("robot-dynamics tracking: error: ") and "arm_joint1" in err[0]


def test_unstamped_recording_uses_receive_times_and_a_subprocess_agrees(tmp_path: Path) -> None:
    clean, garbage = renamed_real_world_pair(tmp_path, "sqlite3", unstamped=True)
    expected = tracking_json(clean, tmp_path, *JOINT_MAP)
    assert expected["settings"]["time_base"] == TIME_BASE_RECEIVE and len(expected["segments"]) == 1
    cli = [sys.executable, "-m", "robot_dynamics.cli", "tracking", str(garbage), *JOINT_MAP, "--json", "-"]
    result = subprocess.run(cli, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    got.pop("bag")
    assert got == expected


def test_a_bag_without_trajectories_or_overlap_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stamps = T0 + np.arange(50, dtype=np.int64) * 10_000_000
    q = np.zeros((50, 6))
    with BagWriter(tmp_path / "none") as w:
        w.write_joint_states("joint_states", stamps, NAMES, q, q)
    with BagWriter(tmp_path / "later") as w:  # the trajectory starts after the last joint state
        w.write_joint_states("joint_states", stamps, NAMES, q, q)
        w.write_joint_trajectory("joint_trajectory", T0, NAMES, [0.0, 1.0], np.zeros((2, 6)), stamp=T0 + 10**10)
    cases = {
        "none": "trajectory",
        "later": "no joint state falls inside any of the 1 trajectories",
    }
    for name, expected in cases.items():
        assert main(["tracking", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("robot-dynamics tracking: error: "), err
        assert expected in err[0], err
