"""``robot-dynamics closed-loop`` end to end, through the real nodes over DDS in lock-step time.

One short run on the bundled two-link arm (100 Hz, 2 s motions, a 3 s excitation): the simulator
(MuJoCo, a deviation file) and the feed-forward node in processes of their own, every case; the report's
structure, the plant's parameters as the deviation file states them, the loop's health (every joint state
answered and recorded), the bags readable by ``robot-dynamics tracking`` with the report's numbers, and
the inequalities that must hold whatever the machine: the identified feed-forward beats the stock one,
which beats PD alone; the node's stock feed-forward is the stock file's own inverse dynamics; the plant's
exact inverse dynamics beat the stock file. The ROS-free parts of the report are checked on their own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from robot_dynamics.bag.decode import JointStateSeries
from robot_dynamics.experiment.motion import planned_motion, restricted_model, start_pose, workspace
from robot_dynamics.experiment.report import late_activation, loop_counters, timing
from robot_dynamics.models import load_robot
from robot_dynamics.models.chain_yaml import dumps_chain_yaml, loads_chain_yaml

pytestmark = pytest.mark.ros

PLANT = (
    "damping: [0.3, 0.2]\nfriction: [0.5, 0.3]\narmature: [0.02, 0.01]\nrandom: {seed: 3, mass: 0.2, inertia: 0.2}\n"
)
CASES = ("A", "B", "B-exact", "C", "D", "excitation", "B-realtime")


@pytest.mark.timeout(2400)  # the whole experiment through three processes: minutes on a loaded machine
def test_every_case_through_the_nodes(tmp_path: Path) -> None:
    (tmp_path / "plant.yaml").write_text(PLANT)
    out = tmp_path / "out"
    argv = ["closed-loop", "fu_two_link", "--plant", str(tmp_path / "plant.yaml"), "--out", str(out), "--rate", "100"]
    argv += ["--duration", "2", "--excitation-duration", "3", "--harmonics", "2", "--realtime", "--json"]
    argv += ["--excitation-option=--starts=1", "--excitation-option=--iterations=30"]
    done = subprocess.run(
        [sys.executable, "-m", "robot_dynamics.cli", *argv], capture_output=True, text=True, timeout=2000, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    cases = summary["cases"]
    assert set(cases) == set(CASES)
    for key, case in cases.items():
        assert [j["joint"] for j in case["joints"]] == ["joint1", "joint2"]
        assert case["rms_position_error"] > 0 and case["max_position_error"] >= case["rms_position_error"]
        assert (out / "bags" / key / "metadata.yaml").is_file()
        if key == "B-realtime":  # the wall clock: how many states and answers depends on the machine
            realtime = case["realtime"]
            assert realtime["target_rate_hz"] == 100.0 and realtime["rate_hz"] > 0 and realtime["joint_states"] >= 2
            assert realtime["latency_ms"]["p50"] > 0 and realtime["latency_ms"]["p99"] >= realtime["latency_ms"]["p50"]
            at_plant = realtime["at_plant"]  # the simulator's own record since the case's reset
            assert at_plant["commands"] >= 2 and at_plant["overruns"] >= 0
            assert 0 < at_plant["latency_ms"]["p50"] <= at_plant["latency_ms"]["p99"] <= at_plant["latency_ms"]["max"]
            continue
        expected = 501 if key == "excitation" else 201  # 100 Hz: 2 s motions; 3 s excitation + two 1 s ramps
        counters = dict(case["counters"])
        assert 0 <= counters.pop("restarts") < 3  # a case started again on a busy machine is counted
        assert counters == {"joint_states": expected, "unanswered": 0, "clamped": 0, "not_recorded": 0}
    assert summary["simulator"]["stock"]["missed_commands"] == 0
    assert summary["simulator"]["identified"]["missed_commands"] == 0
    rms = {key: case["rms_position_error"] for key, case in cases.items()}
    assert rms["C"] < rms["B"] < rms["A"], rms
    assert rms["D"] < rms["B"] and abs(rms["B"] / rms["B-exact"] - 1.0) < 0.02, rms
    ratios = {r["ratio"]: r for r in summary["ratios"]}
    assert set(ratios) == {"C/A", "C/B", "C/D", "B/A", "B/B-exact"}
    assert ratios["B/B-exact"]["met"] and ratios["C/A"]["value"] == pytest.approx(rms["C"] / rms["A"])
    # the plant as the deviation file says; the identified file is a robot file every command loads
    plant = {p["parameter"]: p["plant"] for p in summary["parameters"]}
    assert [plant[k] for k in ("Fv1", "Fv2", "Fc1", "Fc2", "Ia1", "Ia2")] == pytest.approx(
        [0.3, 0.2, 0.5, 0.3, 0.02, 0.01]
    )
    assert all("identified" in p and "error" in p for p in summary["parameters"])
    base = summary["base_parameters"]
    assert base["count"] == len(base["rows"]) and 0 <= base["within_count"] <= base["significant"] <= base["count"]
    assert "## Base parameters: identified vs plant" in (out / "report.md").read_text()
    assert load_robot(str(out / "identified.yaml")).dof == 2
    identification = json.loads((out / "identification.json").read_text())
    assert identification["robot"] == "fu_two_link" and identification["friction"]["law"] == "stribeck"
    assert (out / "tracking.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| C/B |" in (out / "report.md").read_text()
    # a kept bag is a bag `robot-dynamics tracking` reads, with the report's numbers
    bag = str(out / "bags" / "C")
    tracked = subprocess.run(
        [sys.executable, "-m", "robot_dynamics.cli", "tracking", bag, "--robot", "fu_two_link", "--json", "-"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    joints = json.loads(tracked.stdout)["overall"]
    assert [j["rms_position_error"] for j in joints] == [j["rms_position_error"] for j in cases["C"]["joints"]]


def series(stamps: list[int], effort: list[list[float]] | None = None) -> JointStateSeries:
    n = len(stamps)
    values = np.zeros((n, 2))
    return JointStateSeries(
        "/s",
        ("joint1", "joint2"),
        np.array(stamps),
        np.array(stamps),
        values,
        values,
        None if effort is None else np.array(effort),
    )


def test_loop_counters_and_real_time_figures_from_a_recording() -> None:
    two = load_robot("fu_two_link")
    limited = replace(two, joints=tuple(replace(j, limits=replace(j.limits, effort=5.0)) for j in two.joints))
    states = series([10, 20, 40, 50, 60])  # 30 not recorded
    commands = series([10, 20, 50, 60], [[0, 0], [5, 0], [0, -5], [0, 4.9]])  # 40 unanswered; two clamped
    assert loop_counters(limited, states, commands, 10, 60, 10) == {
        "joint_states": 5,
        "unanswered": 1,
        "clamped": 2,
        "not_recorded": 1,
    }
    assert loop_counters(two, states, commands, 10, 60)["clamped"] == 0  # no limits, nothing clamped
    states = series([k * 1_000_000 for k in range(1, 1002)])
    received = np.array([k * 1_000_000 + 300_000 + (700_000 if k % 100 == 0 else 0) for k in range(1, 1002)])
    figures = timing(states.stamps, states.stamps, received, 1000.0)
    assert figures["rate_hz"] == pytest.approx(1000.0) and figures["unanswered"] == 0
    assert figures["latency_ms"]["p50"] == pytest.approx(0.3) and figures["latency_ms"]["max"] == pytest.approx(1.0)


def test_a_motion_tracked_late_is_told_from_one_tracked_from_its_start() -> None:
    model = load_robot("fu_two_link")
    motion = planned_motion(model, np.zeros(2), duration=3.0, reach=0.5, seed=1)
    start = 5_000_000_000
    stamps = start + np.arange(0, 3_000_000_001, 4_000_000)  # 250 Hz joint states
    desired = motion.sampler().sample_many((stamps - start) * 1e-9).positions
    on_time = JointStateSeries("/c", ("joint1", "joint2"), stamps, stamps, desired, desired * 0, None)
    assert late_activation(motion, on_time, int(stamps[0]), int(stamps[-1])) is None
    held = desired.copy()
    held[:25] = motion.positions[0]  # the node held the start for the first 0.1 s: it got the motion late
    late = JointStateSeries("/c", ("joint1", "joint2"), stamps, stamps, held, held * 0, None)
    assert late_activation(motion, late, int(stamps[0]), int(stamps[-1])) == pytest.approx(0.004)


def test_the_motion_stays_in_its_workspace_and_limits() -> None:
    model = load_robot("puma560")
    q0 = start_pose(model)
    lower, upper = workspace(model, q0, 0.4)
    motion = planned_motion(model, q0, duration=6.0, reach=0.4, rate=200.0, seed=3)
    assert motion.times.size == 1201 and motion.times[-1] == 6.0
    np.testing.assert_array_equal(motion.positions[0], q0)
    np.testing.assert_array_equal(motion.positions[-1], q0)
    assert not motion.velocities[[0, -1]].any()
    # the way points lie in the workspace; between them a quintic segment may pass them by a little
    overshoot = max((lower - motion.positions).max(), (motion.positions - upper).max())
    assert 0.0 < overshoot < 0.25 * 0.4
    limits = np.array([[j.limits.lower, j.limits.upper] for j in model.joints])
    assert (motion.positions > limits[:, 0]).all() and (motion.positions < limits[:, 1]).all()
    # velocity and acceleration are the derivatives of the positions (the node samples this motion)
    np.testing.assert_allclose(
        np.gradient(motion.positions, motion.times, axis=0)[1:-1], motion.velocities[1:-1], atol=2e-3
    )
    narrowed = restricted_model(model, q0, 0.4)  # the excitation's robot file: it loads again
    reloaded = loads_chain_yaml(dumps_chain_yaml(narrowed))
    np.testing.assert_array_equal([j.limits.lower for j in reloaded.joints], lower)
    np.testing.assert_array_equal([j.limits.upper for j in reloaded.joints], upper)
    inside = {k for k, v in model.named_poses.items() if ((lower <= v) & (v <= upper)).all()}
    assert set(reloaded.named_poses) == inside != set(model.named_poses)  # the poses outside are dropped


def test_base_parameters_of_a_plant_against_itself_and_a_perturbed_fit() -> None:
    """Identified = plant: every base parameter exact. A fit whose second link is 10 % heavier: the base
    parameters that hold that mass are off by their share of it, significant ones counted as off."""
    from dataclasses import replace

    from robot_dynamics.experiment.parameters import base_parameter_lines, base_parameter_summary

    plant = load_robot("puma560")
    same = base_parameter_summary(plant, plant, plant)
    assert same["within_count"] == same["significant"] > 10 and same["max_error_nm"] == 0.0
    assert all(r["error"] == 0.0 for r in same["rows"])
    joints = list(plant.joints)
    joints[1] = replace(joints[1], link=replace(joints[1].link, mass=joints[1].link.mass * 1.1))
    fit = plant.with_changes(joints=joints)
    off = base_parameter_summary(plant, plant, fit)
    assert off["within_count"] < off["significant"] and off["max_error_nm"] > 0.01
    rows = {r["name"]: r for r in off["rows"]}
    assert any(r["significant"] and abs(r["relative_error"]) > 0.05 for r in rows.values())
    assert all(r["relative_error"] is None or r["relative_error"] * r["error"] >= 0.0 for r in rows.values())
    text = "\n".join(base_parameter_lines(off))
    assert f"**{off['within_count']} of them within 5 %**" in text and "| base parameter |" in text
    assert base_parameter_lines(None) == []
