"""``robot-dynamics contact`` on made bags with a known push at the tool.

A PUMA 560 sways under a torque law (the engine's forward dynamics, no friction); from 0.4 s to 0.6 s
the environment pushes its tool with a constant force (``J(q)^T F`` added to the applied torque); the
bags record the motors' torque (plus sensor noise) as ``effort``. Thresholds are measured with
``--calibrate`` on a recording of the free motion alone; with them the push bag shows no collision
before the push and a collision of the pushed joints within a few ms of its start, cleared after
its end — also on the same bag recorded like a real arm (30 Hz, renamed joints, zero stamps,
garbage CDR padding).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from rosbags.rosbag2 import StoragePlugin, Writer
from test_bag_fuzz import STORE, joint_state_padding, with_garbage

from robot_dynamics.bag import JOINT_STATE, BagWriter
from robot_dynamics.cli import main
from robot_dynamics.contact import transitions
from robot_dynamics.dynamics import gravity_torques, jacobian, simulate
from robot_dynamics.dynamics.momentum_observer import observe
from robot_dynamics.models import load_robot

PUMA = load_robot("puma560")
NAMES = PUMA.joint_names
FORCE = np.array([0.0, 40.0, -30.0, 0.0, 0.0, 0.0])  # N on the tool, tool axes: ~50 N
T0 = 1_700_000_000_000_000_000
NOISE = 0.2  # N·m, sensor noise of the recorded efforts


def motors(t: float, q: np.ndarray) -> np.ndarray:
    return gravity_torques(PUMA, q) + np.array([3.0, 3.0, 3.0, 0.3, 0.3, 0.3]) * np.sin(2.5 * t + np.arange(6))


@pytest.fixture(scope="module")
def recording() -> dict[str, np.ndarray]:
    """1.0 s at 1 kHz; the push from 0.4 s to 0.6 s; efforts = the motors' torque + noise."""

    q0, qd0 = PUMA.named_poses["qn"], np.zeros(6)
    t = np.arange(1001) * 1e-3
    parts = []
    for a, b, pushed in ((0, 400, False), (400, 600, True), (600, 1000, False)):  # the push's edges: segments

        def applied(s: float, q: np.ndarray, qd: np.ndarray, start: float = t[a], on: bool = pushed) -> np.ndarray:
            push = jacobian(PUMA, q, frame="tool").T @ FORCE if on else 0.0
            return motors(start + s, q) + push

        grid = t[a : b + 1] - t[a]
        run = simulate(PUMA, q0, qd0, applied, grid[-1], t_eval=grid, friction=False, rtol=1e-8, atol=1e-8)
        parts.append(run)
        q0, qd0 = run.q[-1], run.qd[-1]
    q = np.vstack([parts[0].q[:-1], parts[1].q[:-1], parts[2].q])
    qd = np.vstack([parts[0].qd[:-1], parts[1].qd[:-1], parts[2].qd])
    tau = np.array([motors(tk, qk) for tk, qk in zip(t, q, strict=True)])
    tau += np.random.default_rng(6).normal(0.0, NOISE, tau.shape)
    return {"t": t, "q": q, "qd": qd, "tau": tau}


def write(path: Path, rec: dict[str, np.ndarray], rows: slice | np.ndarray) -> Path:
    stamps = T0 + np.round(rec["t"][rows] * 1e9).astype(np.int64)
    with BagWriter(path) as w:
        w.write_joint_states("joint_states", stamps, NAMES, rec["q"][rows], rec["qd"][rows], rec["tau"][rows])
    return path


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    status = main(["contact", *argv, "--json", "-"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    out: dict[str, Any] = json.loads(captured.out)
    return out


def test_calibrate_on_free_motion_then_detect_the_push(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recording: dict[str, np.ndarray]
) -> None:
    free = write(tmp_path / "free", recording, slice(0, 400))
    params = tmp_path / "contact.yaml"
    assert main(["contact", str(free), "--robot", "puma560", "--friction-model", "off", "--calibrate",
                 "--margin", "2", "--params", str(params)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "calibrated" in out and f"wrote {params}" in out
    node = yaml.safe_load(params.read_text())["/**/contact_node"]["ros__parameters"]
    thresholds = np.array(node["thresholds"])
    assert node["observer_gain"] == [50.0] * 6 and node["clear_ratio"] == 0.5
    assert all(isinstance(v, float) for v in node["thresholds"])  # ROS reads "3" as an integer
    free_r = observe(PUMA, recording["t"][:400], recording["q"][:400], recording["qd"][:400],
                     recording["tau"][:400], 50.0, friction=False).r  # fmt: skip
    peak = np.abs(free_r).max(axis=0)
    assert np.all(thresholds >= 2 * peak) and np.all(thresholds <= 2 * peak * 1.001)
    # the push, with those thresholds
    push = write(tmp_path / "push", recording, slice(None))
    summary = run_json(capsys, str(push), "--robot", "puma560", "--friction-model", "off",
                       "--thresholds", ",".join(map(str, thresholds)))  # fmt: skip
    assert summary["samples"] == 1001 and summary["skipped"] == 0 and summary["time_base"] == "header stamps"
    r = observe(PUMA, recording["t"], recording["q"], recording["qd"], recording["tau"], 50.0, friction=False).r
    expected = transitions(recording["t"], r, thresholds, 0.5)
    assert [(e["joint"], e["event"], e["stamp_ns"]) for e in summary["events"]] == [
        (NAMES[e.joint], "raised" if e.raised else "cleared", T0 + e.sample * 1_000_000) for e in expected
    ]
    raised = [e for e in summary["events"] if e["event"] == "raised"]
    pushed = np.abs(jacobian(PUMA, recording["q"][400], frame="tool").T @ FORCE) > 10 * thresholds
    assert {e["joint"] for e in raised} >= {NAMES[j] for j in np.flatnonzero(pushed)} and pushed.any()
    assert all(0.4 < e["time_s"] <= 0.41 for e in raised)  # detected within 10 ms, no false positive before
    cleared = [e for e in summary["events"] if e["event"] == "cleared"]
    assert len(cleared) == len(raised) and all(0.6 < e["time_s"] < 0.75 for e in cleared)
    assert summary["collisions"] == len(raised)
    # the plot
    png = tmp_path / "contact.png"
    assert main(["contact", str(push), "--robot", "puma560", "--thresholds", "5", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_bag_recorded_like_a_real_arm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recording: dict[str, np.ndarray]
) -> None:
    """~30 Hz, joints named arm_1.., every header stamp zero (receive times), garbage in the CDR padding."""
    rows = np.arange(0, 1001, 33)
    path = tmp_path / "real"
    writer = Writer(path, version=Writer.VERSION_LATEST, storage_plugin=StoragePlugin.MCAP)
    writer.open()
    conn = writer.add_connection("/joint_states", JOINT_STATE, typestore=STORE)
    rng = np.random.default_rng(33)
    T = STORE.types
    for k in rows.tolist():
        msg = T["sensor_msgs/msg/JointState"](
            header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=0, nanosec=0), frame_id=""),
            name=[f"arm_{j + 1}" for j in range(6)],
            position=recording["q"][k],
            velocity=recording["qd"][k],
            effort=recording["tau"][k],
        )
        _, garbage = with_garbage(rng, msg, JOINT_STATE, joint_state_padding, False, style="dds")
        writer.write(conn, T0 + round(recording["t"][k] * 1e9), garbage)
    writer.close()
    joint_map = [x for j in range(6) for x in ("--joint-map", f"arm_{j + 1}={NAMES[j]}")]
    summary = run_json(capsys, str(path), "--robot", "puma560", "--friction-model", "off", "--thresholds", "4",
                       *joint_map)  # fmt: skip
    assert summary["samples"] == len(rows) and summary["time_base"].startswith("receive times")
    assert [j["joint"] for j in summary["joints"]] == [f"arm_{j + 1}" for j in range(6)]
    r = observe(PUMA, recording["t"][rows], recording["q"][rows], recording["qd"][rows], recording["tau"][rows],
                50.0, friction=False).r  # fmt: skip
    assert [j["max_abs_residual"] for j in summary["joints"]] == pytest.approx(np.abs(r).max(axis=0), rel=1e-9)
    raised = [e for e in summary["events"] if e["event"] == "raised"]
    assert raised and all(0.4 < e["time_s"] <= 0.44 for e in raised)  # the first sample in the push
    assert all(e["joint"].startswith("arm_") for e in summary["events"])
