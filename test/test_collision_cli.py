"""``robot-dynamics collision``: bad input refused before any node starts, and a small case through the
real nodes over DDS (the simulator with a table, the contact node, the feed-forward node; lock-step):
without a reaction the arm presses on the table, with ``stop`` the reaction is reported and the force
0.5 s after the contact is far below.

The small case gives the model (the stock file: the plant has no deviations) and the contact node's
thresholds instead of identifying and calibrating (those are the commands' own tests).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml
from engine_reference import EXAMPLE_ROBOTS

import robot_dynamics as rd
from robot_dynamics.cli import main
from robot_dynamics.reaction import BRAKING_DELAY_BOUND

UR5 = str(EXAMPLE_ROBOTS / "ur_description/urdf/ur5_robot.urdf")
START = [0.0, -1.2, 1.4, -1.6, -1.57, 0.3]


def table(tmp_path: Path, name: str = "table", **more: object) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = rd.forward_kinematics(rd.load_robot(UR5), np.array(START))[:3, 3]
    entry = {"name": "table", "shape": "box", "position": [float(p[0]), float(p[1]), float(p[2]) - 0.12]}
    entry |= {"size": [0.6, 0.6, 0.04]} | more
    path = tmp_path / f"{name}.yaml"
    path.write_text(json.dumps({"obstacles": [entry]}))  # JSON is YAML
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"--reactions": "none,brake"}, "--reactions"),
        ({"--speed": "0"}, "--speed"),
        ({"--obstacles": "BAD"}, "obstacles[0].size"),
        ({"--reaction-option": "reflex_duration=-1"}, "reflex_duration"),
        ({"--identified": "/nonexistent.yaml"}, "no such file"),
        ({"--start": "0 0 0"}, "--start"),
        ({"--direction": "0 0 0"}, "direction"),
        ({"--friction": "sticky"}, "--friction must be auto or one of"),
        ({"--sensor-profile": "no_such_arm"}, "no_such_arm"),
    ],
)
def test_bad_input_is_one_line_before_any_node_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, str], message: str
) -> None:
    options = {
        "--obstacles": str(table(tmp_path)),
        "--start": " ".join(map(str, START)),
        "--out": str(tmp_path / "out"),
        "--reactions": "none,stop",
        "--speed": "0.4",
    }
    bad = tmp_path / "bad.yaml"
    bad.write_text("obstacles: [{shape: box, position: [0, 0, 0], size: [1, 1]}]\n")
    for key, value in change.items():
        options[key] = str(bad) if value == "BAD" else value
    argv = ["collision", UR5]
    for key, value in options.items():
        argv += [key, *value.split()]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("robot-dynamics collision: error:") and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "logs").exists()  # no node was started


@pytest.mark.ros
def test_a_small_case_through_the_nodes(tmp_path: Path) -> None:
    pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")
    contact = tmp_path / "contact.yaml"  # the exact model: small residuals; a 5 N m threshold
    contact.write_text(
        "/**/contact_node:\n  ros__parameters:\n    observer_gain: [50.0]\n    thresholds: [5.0]\n"
        "    clear_ratio: 0.5\n    effort_timing: step\n"
    )
    out = tmp_path / "out"
    argv = ["collision", UR5, "--obstacles", str(table(tmp_path)), "--start", *map(str, START)]
    argv += ["--direction", "0", "0", "-1", "--speed", "0.3", "--reactions", "none,stop", "--after", "0.8"]
    argv += ["--identified", UR5, "--contact-params", str(contact), "--free-duration", "0", "--out", str(out)]
    # a real arm's sensors (link-side torques, quantized encoders, a cycle of delay each way): the reset
    # state is found in the recorded truth, the node is told the delays
    argv += ["--sensor-profile", "franka"]
    assert main(argv) == 0
    summary = json.loads((out / "report.json").read_text())
    rows = {row["reaction"]: row for row in summary["cases"]["table"]["rows"]}
    none, stop = rows["none"], rows["stop"]
    assert none["contact"] is not None and stop["contact"] is not None
    assert none["tool_speed"] > 0.1 and stop["detection"] is not None
    assert stop["first_command"] is not None and stop["first_command"] >= stop["detection"]
    # the node's report: event stamp -> its first reaction command, in simulated time. In lock-step the
    # feed-forward node answers the detecting state itself (0) when the event overtakes that state, else the
    # next one (one period); never more: each step waits for the contact node's answer (lockstep_observers)
    latency = stop["reported_latency"]
    assert latency is not None and 0.0 <= latency <= 1e-3 + 1e-9
    assert latency == pytest.approx(stop["first_command"] - stop["detection"], abs=1e-6)
    # without a reaction the PD keeps pressing towards the trajectory's end beyond the table (about 14 N here)
    assert none["late_force"] > 5.0 and stop["late_force"] < 0.5 * none["late_force"]
    assert (out / "force.png").is_file() and "| stop |" in (out / "report.md").read_text()
    # the node is told the delays and brakes as hard as they allow: K_b (d_m + d_c) at the bound
    node = yaml.safe_load((out / "params" / "feedforward_table_stop.yaml").read_text())
    values = next(iter(node.values()))["ros__parameters"]
    delay = values["measurement_delay"] + values["command_delay"]
    assert delay > 0.0 and values["reaction_damping"] * delay == pytest.approx(BRAKING_DELAY_BOUND, rel=1e-9)
