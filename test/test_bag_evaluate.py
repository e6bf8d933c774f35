"""Offline evaluation: exact recovery on polynomial motions, the sample bag, node-equivalent feed-forward."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

from robot_dynamics import inverse_dynamics, load_robot
from robot_dynamics.bag import BagError, BagWriter, JointStateSeries
from robot_dynamics.bag import evaluate as ev_mod
from robot_dynamics.bag.report import (
    OUT_ACCELERATION,
    OUT_EFFORTS,
    OUT_EFFORTS_NO_FRICTION,
    OUT_FEEDFORWARD,
    format_table,
    write_csv,
    write_json,
    write_output_bag,
    write_plot,
)
from robot_dynamics.bag.sample import EFFORT_NOISE
from robot_dynamics.feedforward import FeedforwardLaw, TrajectorySchedule

MODEL = load_robot("puma560")
NAMES = MODEL.joint_names
T0 = 1_700_000_000_000_000_000
RNG = np.random.default_rng(11)
SAMPLE = Path(__file__).resolve().parent.parent / "data" / "puma560_sample"


def cubic_motion(t: np.ndarray):
    """q = a0 + a1 t + a2 t^2 + a3 t^3 per joint (Savitzky-Golay of degree 3 is exact on it)."""
    a = np.array([MODEL.named_poses["qn"], [0.8, -0.5, 0.6, 1.0, -0.7, 0.9], [-0.3, 0.4, -0.2, 0.5, 0.3, -0.6]])
    a3 = np.array([0.05, -0.08, 0.06, -0.1, 0.09, 0.07])
    tt = t[:, None]
    q = a[0] + a[1] * tt + a[2] * tt**2 + a3 * tt**3
    qd = a[1] + 2 * a[2] * tt + 3 * a3 * tt**2
    qdd = 2 * a[2] + 6 * a3 * tt
    return q, qd, qdd


def make_bag(path: Path, *, n: int = 300, with_trajectory: bool = False, names=NAMES, stamped: bool = True):
    ns = np.round(np.cumsum(np.r_[0.0, RNG.uniform(0.003, 0.007, n - 1)]) * 1e9).astype(np.int64)
    t = ns * 1e-9  # jittered ~200 Hz, exactly representable as stamps
    q, qd, qdd = cubic_motion(t)
    tau = inverse_dynamics(MODEL, q, qd, qdd, friction=True, smooth=True)
    stamps = T0 + ns
    with BagWriter(path) as w:
        w.write_joint_states(
            "joint_states", stamps + 300_000, names, q, qd, tau, stamps=stamps if stamped else np.zeros(n, np.int64)
        )
        if with_trajectory:
            tk = np.round(np.linspace(0.0, t[-1] + 0.01, 40), 9)  # whole nanoseconds, as written
            qk, qdk, qddk = cubic_motion(tk)
            w.write_joint_trajectory("joint_trajectory", T0 - 10**8, names, tk, qk, qdk, qddk, stamp=T0)
    return t, q, qd, qdd, tau


@pytest.mark.parametrize("accel", ["velocity", "position", "trajectory"])
def test_exact_recovery_on_a_polynomial_motion(tmp_path, accel):
    """Every stage (read, stamps, differentiation, batched inverse dynamics) is exact on a cubic motion."""
    _, q, qd, qdd, tau = make_bag(tmp_path / "bag", with_trajectory=True)
    inputs = ev_mod.read_inputs(tmp_path / "bag", MODEL)
    ev = ev_mod.evaluate(MODEL, inputs.series, inputs.trajectories, accel_source=accel, window_s=0.08)
    assert np.max(np.abs(ev.qdd - qdd)) < 1e-7
    assert np.max(np.abs(ev.model - tau)) < 1e-7
    errors = ev.errors()
    assert np.all(errors["friction"].rms < 1e-7)
    assert np.all(errors["no_friction"].rms > 1e-2)  # the friction terms are there
    # batched == one state at a time (vectorisation check at a few samples)
    for k in (0, 123, len(q) - 1):
        single = inverse_dynamics(MODEL, q[k], qd[k], ev.qdd[k], friction=False)
        assert np.max(np.abs(ev.model_no_friction[k] - single)) < 1e-10


def test_sample_bag_recovers_the_simulated_efforts():
    """Error at the noise level with friction, an order of magnitude and more without."""
    inputs = ev_mod.read_inputs(SAMPLE, MODEL)
    ev = ev_mod.evaluate(MODEL, inputs.series, inputs.trajectories)
    sigma = np.array(EFFORT_NOISE)
    e = ev.errors()
    assert np.all(e["friction"].rms <= 1.5 * sigma), e["friction"].rms / sigma
    assert np.all(e["friction"].rms >= 0.9 * sigma)  # the noise is really there
    assert np.all(e["no_friction"].rms >= 20 * e["friction"].rms), e["no_friction"].rms / e["friction"].rms
    assert ev.count == 801 and ev.filter is not None and ev.filter.window == 21
    stamps_dt = np.diff(inputs.series.stamps) * 1e-9
    assert stamps_dt.min() < 0.0045 and stamps_dt.max() > 0.0055  # non-uniform stamps in the sample


@pytest.mark.parametrize("friction_velocity", ["desired", "measured"])
def test_feedforward_follows_the_activation_rules(tmp_path, friction_velocity):
    """Trajectories that start later, replace a pending one, start on receipt, start after t = 0.

    The rows that track are the ones the rules give (checked by index); the torques and desired
    states equal the node's own one-message-at-a-time form (TrajectorySchedule + FeedforwardLaw).
    """
    n = 200
    t = np.arange(n) * 0.005
    q, qd, _ = cubic_motion(t)
    q = q + 0.01 * RNG.normal(size=q.shape)
    stamps = T0 + np.round(t * 1e9).astype(np.int64)
    received = stamps + 100_000
    tk = np.linspace(0.0, 0.2, 9)
    qk, qdk, qddk = cubic_motion(tk + 0.1)
    path = tmp_path / "bag"
    with BagWriter(path) as w:
        w.write_joint_states("joint_states", received, NAMES, q, qd, None, stamps=stamps)
        # 1: starts at sample 20, replaced while pending by 2 (received at sample 10)
        w.write_joint_trajectory("joint_trajectory", int(received[5]), NAMES, tk, qk, qdk, qddk, stamp=int(stamps[20]))
        # 2: first point at 0.05 s -> starts from the measured state; positions and velocities only (cubic)
        w.write_joint_trajectory(
            "joint_trajectory",
            int(received[10]),
            NAMES[::-1],
            tk + 0.05,
            qk[:, ::-1],
            qdk[:, ::-1],
            stamp=int(stamps[30]),
        )
        # 3: zero stamp -> starts when received (sample 120), positions only (linear)
        w.write_joint_trajectory("joint_trajectory", int(received[120]) - 1, NAMES, tk, qk)
    inputs = ev_mod.read_inputs(path, MODEL)
    ff = ev_mod.feedforward_torques(MODEL, inputs.series, inputs.trajectories, friction_velocity=friction_velocity)
    law, schedule = FeedforwardLaw(MODEL), TrajectorySchedule()
    measured = friction_velocity == "measured"
    trajs = iter(inputs.trajectories)
    upcoming = next(trajs, None)
    expected = np.empty((n, MODEL.dof))
    for k in range(n):
        while upcoming is not None and upcoming.timestamp < received[k]:
            schedule.submit(upcoming.sampler(NAMES), upcoming.stamp, upcoming.timestamp)
            upcoming = next(trajs, None)
        d, _ = schedule.step(int(stamps[k]), q[k], qd[k])
        if d is None:
            expected[k] = law.holding(q[k], qd[k], True, True)
        else:
            expected[k] = law.tracking(
                d.positions, d.velocities, d.accelerations, True, True, qd[k] if measured else None
            )
            np.testing.assert_allclose(ff.position[k], d.positions, rtol=0, atol=1e-12)
            np.testing.assert_allclose(ff.velocity[k], d.velocities, rtol=0, atol=1e-12)
    assert np.max(np.abs(ff.effort - expected)) < 1e-9
    tracking = np.flatnonzero(ff.tracking)
    assert tracking[0] == 30 and 80 in tracking and 81 not in tracking  # 2 runs 0..0.25 s from its start
    assert 120 not in tracking and 121 in tracking  # 3 starts when received, just after stamp 120
    assert not ff.tracking[:30].any() and not ff.tracking[81:121].any()


def test_output_bag_csv_json_and_plot(tmp_path):
    make_bag(tmp_path / "in", n=120)
    inputs = ev_mod.read_inputs(tmp_path / "in", MODEL)
    ev = ev_mod.evaluate(MODEL, inputs.series, inputs.trajectories, bag=str(tmp_path / "in"))
    out = write_output_bag(tmp_path / "out", ev, inputs, storage="sqlite3")
    store = get_typestore(Stores.ROS2_JAZZY)
    counts: dict[str, int] = {}
    with Reader(out) as reader:
        for conn, timestamp, raw in reader.messages():
            k = counts.get(conn.topic, 0)
            counts[conn.topic] = k + 1
            assert timestamp == inputs.series.timestamps[k]  # same receive times
            msg = store.deserialize_cdr(raw, conn.msgtype)
            if conn.topic == OUT_EFFORTS:
                assert msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec == inputs.series.stamps[k]
                assert np.array_equal(msg.effort, ev.model[k]) and msg.name == NAMES
            elif conn.topic == OUT_ACCELERATION:
                assert np.array_equal(msg.data, ev.qdd[k])
    assert counts == dict.fromkeys(
        [
            "/joint_states",
            OUT_EFFORTS,
            OUT_EFFORTS_NO_FRICTION,
            OUT_ACCELERATION,
            OUT_FEEDFORWARD,
        ],
        120,
    )
    rows = list(csv.DictReader(write_csv(tmp_path / "s.csv", ev).open()))
    assert [r["joint"] for r in rows] == NAMES
    assert float(rows[1]["rms_error_no_friction"]) == pytest.approx(ev.errors()["no_friction"].rms[1], rel=1e-8)
    summary = json.loads(write_json(tmp_path / "s.json", ev).read_text())
    assert summary["messages"] == 120 and summary["acceleration"]["source"] == "velocity"
    assert set(summary["joints"][0]) >= {"rms_error_friction", "max_error_no_friction", "rms_measured"}
    assert write_plot(tmp_path / "p.png", ev).read_bytes()[:4] == b"\x89PNG"
    assert "RMS err" in format_table(ev)


def test_errors_name_the_problem(tmp_path):
    make_bag(tmp_path / "names", n=40, names=[f"j{i}" for i in range(6)])
    with pytest.raises(BagError, match=r"joint names do not match: missing \['joint1'.*robot 'puma560'"):
        ev_mod.read_inputs(tmp_path / "names", MODEL)
    make_bag(tmp_path / "plain", n=40)
    with pytest.raises(BagError, match="no topic /traj in the bag"):
        ev_mod.read_inputs(tmp_path / "plain", MODEL, trajectory="traj", require_trajectory=True)
    inputs = ev_mod.read_inputs(tmp_path / "plain", MODEL)
    with pytest.raises(ev_mod.EvaluationError, match="needs a trajectory topic"):
        ev_mod.evaluate(MODEL, inputs.series, [], accel_source="trajectory")
    with pytest.raises(ev_mod.EvaluationError, match="unknown acceleration source 'jerk'"):
        ev_mod.evaluate(MODEL, inputs.series, accel_source="jerk")  # type: ignore[arg-type]
    with pytest.raises(ev_mod.EvaluationError, match=r"40 messages, fewer than the \d+-sample differentiation window"):
        ev_mod.evaluate(MODEL, inputs.series, window_s=0.5)
    s = inputs.series
    no_velocity = JointStateSeries(s.topic, s.names, s.timestamps, s.stamps, s.position, None, s.effort)
    with pytest.raises(ev_mod.EvaluationError, match="carry no velocity"):
        ev_mod.evaluate(MODEL, no_velocity)
    stamps = s.stamps.copy()
    stamps[7] = stamps[6]
    repeated = JointStateSeries(s.topic, s.names, s.timestamps, stamps, s.position, s.velocity, s.effort)
    with pytest.raises(ev_mod.EvaluationError, match="header stamps do not increase at message 7"):
        ev_mod.evaluate(MODEL, repeated)
    make_bag(tmp_path / "unstamped", n=40, stamped=False)
    unstamped = ev_mod.read_inputs(tmp_path / "unstamped", MODEL).series
    ev = ev_mod.evaluate(MODEL, unstamped)  # differentiates on receive times, no node-equivalent torques
    assert ev.feedforward is None and ev.errors()["friction"].rms.max() < 1e-6
    with pytest.raises(ev_mod.EvaluationError, match="40 joint states have a zero header stamp"):
        ev_mod.feedforward_torques(MODEL, unstamped)
