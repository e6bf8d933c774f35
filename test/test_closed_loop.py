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
import yaml

from robot_dynamics.bag.decode import JointStateSeries
from robot_dynamics.experiment.motion import planned_motion, restricted_model, start_pose, workspace
from robot_dynamics.experiment.report import TRUTH_TOPIC as TRUTH
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
    argv += ["--cases", "A,B,B-exact,C,D"]  # C-plain: test_the_experiment_with_a_sensor_profile
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
    assert identification["robot"] == "fu_two_link"  # the law is identify's own choice (not imposed)
    assert identification["friction"]["law"] == identification["choice"]["chosen"]["friction"]
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


class _Stop(Exception):
    pass


@pytest.mark.parametrize(("more", "law"), [([], "auto"), (["--friction", "stribeck"], "stribeck")])
def test_identify_chooses_the_friction_law_unless_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, more: list[str], law: str
) -> None:
    """Case C's identify runs with its own choice of friction law (``--friction auto``) unless one is given:
    an imposed law also steers the choice of rows (on the UR5 at 500 Hz ``stribeck`` kept stuck rows and
    tracked 4x worse than identify's choice, docs/closing-the-loop.md)."""
    import robot_dynamics.ros.closed_loop as closed_loop_module
    from robot_dynamics.cli import main

    seen = []

    def stop(self: closed_loop_module.Experiment) -> None:
        seen.append(self.s)
        raise _Stop

    monkeypatch.setattr(closed_loop_module.Experiment, "prepare", stop)
    with pytest.raises(_Stop):
        main(["closed-loop", "fu_two_link", "--out", str(tmp_path / "out"), *more])
    assert seen[0].friction_law == law


@pytest.mark.parametrize(("profile", "use"), [("franka", "torque"), ("ur_e_series", "reading"), (None, "reading")])
def test_identify_deploys_the_offsets_behind_a_torque_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile: str | None, use: str
) -> None:
    """Behind a drive's torque loop on the recorded sensor (``franka``) the fitted offsets are torques it
    applies: identify (case C) and the plain fit (C-plain) both run with offsets "torque"; with
    motor-current sensing (``ur_e_series``) or no sensors, "reading" (a bias of the reading)."""
    import robot_dynamics.ros.closed_loop as closed_loop_module
    from robot_dynamics.cli import main

    prepare = closed_loop_module.Experiment.prepare
    seen = []

    def prepared(self: closed_loop_module.Experiment) -> None:
        prepare(self)
        seen.append(self.offset_use)
        raise _Stop

    monkeypatch.setattr(closed_loop_module.Experiment, "prepare", prepared)
    more = [] if profile is None else ["--sensors", profile]
    with pytest.raises(_Stop):
        main(["closed-loop", "fu_two_link", "--out", str(tmp_path / "out"), "--duration", "2", *more])
    assert seen == [use]


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
    # told a measurement delay, the node compares each state with the desired state of that much earlier
    behind = motion.sampler().sample_many((stamps - start) * 1e-9 - 0.008).positions
    delayed = JointStateSeries("/c", ("joint1", "joint2"), stamps, stamps, behind, behind * 0, None)
    assert late_activation(motion, delayed, int(stamps[0]), int(stamps[-1]), 8_000_000) is None
    assert late_activation(motion, delayed, int(stamps[0]), int(stamps[-1])) is not None


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


# ------------------------------------------------------------------------------------------------
# with a real arm's sensors
# ------------------------------------------------------------------------------------------------
SENSED_CASES = ("A", "B", "C", "C-plain", "D")


@pytest.mark.timeout(2400)
def test_the_experiment_with_a_sensor_profile(tmp_path: Path) -> None:
    """``--sensors ur_e_series`` (at 100 Hz, so that two seconds stay short): the profile reaches the
    simulator, the controller is told its delays (and each case also runs without them), the truth is
    recorded and tracking scored on it, D's efforts are the plant's inverse dynamics divided by the drive's
    torque-constant factors, and C-plain exists beside C."""
    from robot_dynamics.bag.decode import decode_joint_states, decode_joint_trajectories
    from robot_dynamics.bag.reader import read_topics
    from robot_dynamics.plant import PlantOptions, load_sensor_profile, make_plant

    (tmp_path / "plant.yaml").write_text(PLANT)
    out = tmp_path / "out"
    overrides = "{rate: 100, seed: 2}"
    argv = ["closed-loop", "fu_two_link", "--plant", str(tmp_path / "plant.yaml"), "--out", str(out)]
    argv += ["--sensors", "ur_e_series", "--sensor-overrides", overrides, "--cases", ",".join(SENSED_CASES)]
    argv += ["--duration", "2", "--excitation-duration", "3", "--harmonics", "2", "--hold", "1", "--json"]
    argv += ["--excitation-option=--starts=1", "--excitation-option=--iterations=30"]
    done = subprocess.run(
        [sys.executable, "-m", "robot_dynamics.cli", *argv], capture_output=True, text=True, timeout=2000, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    settings, cases = summary["settings"], summary["cases"]
    # the profile's rate is the control rate; the simulator runs the profile and says so
    profile = settings["sensor_profile"]
    assert settings["rate"] == 100.0 and profile["name"] == "ur_e_series" and profile["simulator"] == "ur_e_series"
    simulator = yaml.safe_load((out / "params" / "simulator.yaml").read_text())["/**/simulator_node"]["ros__parameters"]
    assert simulator["sensor_profile"] == "ur_e_series" and simulator["sensor_overrides"] == overrides
    assert simulator["timestep"] == 0.001 and simulator["rate"] == 100.0  # 1 kHz physics under a 100 Hz loop
    # the delays: one period each way, given to the feed-forward node; every case also without them
    assert profile["measurement_delay_s"] == pytest.approx(0.01) and profile["command_delay_s"] == pytest.approx(0.01)
    controller = yaml.safe_load((out / "params" / "feedforward.yaml").read_text())["/**/feedforward_node"]
    assert controller["ros__parameters"]["measurement_delay"] == pytest.approx(0.01)
    assert controller["ros__parameters"]["command_delay"] == pytest.approx(0.01)
    expected = {*SENSED_CASES, *(k + "-uncomp" for k in SENSED_CASES), "excitation"}
    assert set(cases) == expected
    assert all(cases[k]["delays_compensated"] for k in SENSED_CASES)
    assert not any(cases[k + "-uncomp"]["delays_compensated"] for k in SENSED_CASES)
    for tag in ("stock", "identified", "plain"):
        assert summary["simulator"][tag]["missed_commands"] == 0
    names = ("joint1", "joint2")
    motion = planned_motion(load_robot("fu_two_link"), np.zeros(2), duration=2.0, reach=0.6, seed=0)
    for key in ("B", "B-uncomp"):  # the delay reached the node: its answers compare with q_d(t - 10 ms), or q_d(t)
        topics = read_topics(out / "bags" / key, ["/joint_commands", "/joint_trajectory"])
        commands = decode_joint_states(topics["/joint_commands"], names)
        start = decode_joint_trajectories(topics["/joint_trajectory"])[0].stamp
        active = (commands.stamps > start) & (commands.stamps <= start + round(motion.duration * 1e9))
        delay = 0.01 if key == "B" else 0.0
        t = (commands.stamps[active] - start) * 1e-9 - delay
        np.testing.assert_allclose(commands.position[active], motion.sampler().sample_many(t).positions, atol=1e-9)
    # the truth is recorded beside the measured states and tracking is scored on it
    topics = read_topics(out / "bags" / "C", ["/joint_states", TRUTH])
    measured, truth = (decode_joint_states(topics[t], names) for t in ("/joint_states", TRUTH))
    # every state has its truth; the recorder's two subscriptions may match a state apart at the start
    # (discovery on a loaded machine): the stamps agree but for at most one at each end
    common, in_measured, in_truth = np.intersect1d(measured.stamps, truth.stamps, return_indices=True)
    assert common.size >= max(measured.stamps.size, truth.stamps.size) - 2, (measured.stamps.size, truth.stamps.size)
    np.testing.assert_array_equal(np.diff(in_measured), 1)  # one contiguous run in both
    np.testing.assert_array_equal(np.diff(in_truth), 1)
    assert not np.array_equal(measured.position[in_measured], truth.position[in_truth])  # quantized, delayed, noisy
    for key in cases:
        if key != "excitation":
            assert cases[key]["rms_position_error"] != cases[key]["measured"]["rms_position_error"]
    command = ["tracking", str(out / "bags" / "C"), "--robot", "fu_two_link", "--joint-states", TRUTH, "--json", "-"]
    tracked = subprocess.run(
        [sys.executable, "-m", "robot_dynamics.cli", *command],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    joints = json.loads(tracked.stdout)["overall"]
    assert [j["rms_position_error"] for j in joints] == [j["rms_position_error"] for j in cases["C"]["joints"]]
    # D: the plant's exact inverse dynamics as the drive must be commanded, mj_inverse / (1 + e)
    e = load_sensor_profile("ur_e_series", overrides).resolve([[n] for n in names])["actuator.constant_error"]
    assert np.all(e != 0.0) and np.allclose(profile["drive_factor"], 1.0 + e)
    bare = make_plant(
        PlantOptions(engine="mujoco", deviations=str(tmp_path / "plant.yaml")),
        load_robot("fu_two_link"),
        0.01,
        "fu_two_link",
    )
    sent = decode_joint_trajectories(read_topics(out / "bags" / "D", ["/joint_trajectory"])["/joint_trajectory"])[0]
    assert sent.velocities is not None and sent.accelerations is not None and sent.efforts is not None
    points = zip(sent.positions, sent.velocities, sent.accelerations, strict=True)
    exact = np.array([bare.inverse_dynamics(q, qd, qdd) for q, qd, qdd in points])
    np.testing.assert_allclose(sent.efforts * (1.0 + e), exact, rtol=1e-9, atol=1e-9)
    # C-plain: the plain least-squares fit of the same recording, its report beside identify's
    plain = json.loads((out / "identification_plain.json").read_text())
    assert plain["consistent"] is False and plain["friction"]["law"] == "viscous-coulomb"
    assert {r["ratio"] for r in summary["ratios"]} >= {"C/B", "C/D", "C/C-plain", "B/B-uncomp", "C/C-uncomp"}
    targets = {r["ratio"]: r["target"] for r in summary["ratios"]}
    assert targets["C/B"] == 0.6 and targets["C/D"] == 1.5 and targets["C/C-plain"] == 1.0
    # the standstill after each motion: the commanded torque's spread per joint, at 100 Hz nothing above 100 Hz
    for key in SENSED_CASES:
        held = cases[key]["standstill"]
        assert held["samples"] == 51 and len(held["torque_std"]) == 2 and all(v > 0 for v in held["torque_std"])
        assert held["torque_share_above"] == [0.0, 0.0] and len(held["position_std"]) == 2
    assert "## Standstill" in (out / "report.md").read_text()


def test_the_loop_delay_sets_the_gains() -> None:
    """Without sensors the rule is the one of one control period (``kd Δt / D_ii <= 0.5``); a profile's
    delays and velocity filter lengthen the loop's delay and lower ωn and the floor's cap."""
    from robot_dynamics.experiment.settings import Settings, bandwidth, delay_bandwidth, gains, loop_delay
    from robot_dynamics.plant import load_sensor_profile

    model = load_robot("puma560")
    q0 = start_pose(model)
    s = Settings(robot="puma560", out=Path("."), rate=1000.0)
    assert loop_delay(1000.0) == 1e-3 and bandwidth(s, 1e-3) == 20.0
    kp, kd = gains(model, q0, s)
    from robot_dynamics.dynamics import inertia_matrix

    diagonal = np.diag(inertia_matrix(model, q0))
    expected = np.maximum(diagonal, np.minimum(0.1 * diagonal.max(), diagonal * 1000.0 / 80.0))  # the 1 kHz rule
    np.testing.assert_allclose(kp, expected * 400.0, rtol=5e-3)
    np.testing.assert_allclose(kd, expected * 40.0, rtol=5e-3)
    slow = load_sensor_profile("industrial_125hz")  # 2 + 2 periods of 8 ms, a 10 Hz velocity filter
    delay = loop_delay(125.0, slow)
    assert delay == pytest.approx(5 * 0.008 + 0.004 + 1.0 / (2.0 * np.pi * 10.0))
    wn = bandwidth(Settings(robot="puma560", out=Path("."), rate=125.0), delay)
    assert wn == pytest.approx(0.25 / delay) and wn < 5.0
    assert bandwidth(Settings(robot="puma560", out=Path("."), bandwidth=12.0), delay) == 12.0  # as given
    # the same bound without the command's settings, for other loops (a damping ratio halves or doubles it)
    assert delay_bandwidth(delay) == wn and delay_bandwidth(1e-3) == 20.0
    assert delay_bandwidth(delay, 0.5) == pytest.approx(0.5 / delay)
    assert delay_bandwidth(delay, 2.0) == pytest.approx(wn / 2)
    assert delay_bandwidth(1e-3, ceiling=60.0) == 60.0 and delay_bandwidth(0.01, ceiling=60.0) == pytest.approx(25.0)
    kp_slow, kd_slow = gains(model, q0, Settings(robot="puma560", out=Path("."), rate=125.0), delay)
    assert np.all(kd_slow * delay / diagonal <= 0.5 * 1.005)  # every joint within the phase budget
    assert np.all(kp_slow < kp)


def test_standstill_figures_of_a_known_signal() -> None:
    """Torques of known sines on a 1 kHz stream: the standard deviation of the variation faster than 1 Hz
    (a slow drift and a 0.5 Hz swing, the PD's settling, left out of it but not of the total) and the
    share of its variance above 100 Hz (Parseval)."""
    from robot_dynamics.experiment.standstill import standstill

    stamps = np.arange(2000) * 1_000_000
    t = stamps * 1e-9
    settling = 0.5 * t + 0.2 * np.cos(2 * np.pi * 0.5 * t)  # cosines: no share in the straight-line trend
    effort = np.stack(
        [
            3.0 + settling + 0.3 * np.sin(2 * np.pi * 10 * t),
            0.4 * np.sin(2 * np.pi * 150 * t) + 0.3 * np.cos(2 * np.pi * 10 * t),
        ],
        axis=1,
    )
    commands = JointStateSeries("/c", ("joint1", "joint2"), stamps, stamps, effort * 0, effort * 0, effort)
    truth = JointStateSeries("/t", ("joint1", "joint2"), stamps, stamps, effort * 1e-3, effort * 0, None)
    held = standstill(commands, truth, 0, int(stamps[-1]), 1000.0)
    assert held["samples"] == 2000 and held["slow_hz"] == 1.0
    # rtol: the straight-line trend taken out also takes the sine's small share along a ramp (~0.1 %)
    np.testing.assert_allclose(held["torque_std"], [0.3 / np.sqrt(2), 0.5 / np.sqrt(2)], rtol=3e-3)
    np.testing.assert_allclose(held["torque_share_above"], [0.0, 0.16 / 0.25], atol=2e-3)
    assert held["torque_std_total"][0] > 1.5 * held["torque_std"][0]  # the settling is in the total
    np.testing.assert_allclose(held["position_std"], 1e-3 * np.array(held["torque_std_total"]), rtol=1e-9)
    slow = standstill(commands, None, 0, int(stamps[-1]), 125.0)  # no frequency above 100 Hz at 125 Hz
    assert slow["torque_share_above"] == [0.0, 0.0] and "position_std" not in slow


def test_a_fit_s_efforts_are_its_model_s_inverse_dynamics() -> None:
    """The torques of identified parameters that make a robot file equal that file's inverse dynamics
    (the regressor is checked against the engine elsewhere); the offsets (sensor biases) are left out."""
    from robot_dynamics.dynamics import inverse_dynamics
    from robot_dynamics.experiment.motion import fitted_efforts
    from robot_dynamics.identification.parameters import ParameterSet, apply_parameters, nominal_parameters

    stock = load_robot("puma560")
    pset = ParameterSet(coulomb_velocity=0.02)
    theta = nominal_parameters(stock, pset) * np.random.default_rng(4).uniform(0.8, 1.2, pset.size(stock))
    fitted = apply_parameters(stock, theta, pset, check=False)
    fitted = fitted.with_changes(
        joints=tuple(replace(j, friction=replace(j.friction, smoothing_velocity=0.02)) for j in fitted.joints)
    )
    motion = planned_motion(stock, start_pose(stock), duration=3.0, reach=0.4, seed=2)
    expected = inverse_dynamics(
        fitted,
        motion.positions,
        motion.velocities,
        motion.accelerations,
        friction=True,
        smooth=True,
        smooth_kind="tanh",
    )
    offsets = pset.layout(stock).joint_column["Fo"]
    theta[offsets] = 5.0  # a bias of 5 N m per joint: not a torque the arm needs
    np.testing.assert_allclose(fitted_efforts(stock, motion, theta, pset), expected, atol=1e-9)
