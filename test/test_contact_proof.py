"""Contact awareness on a MuJoCo plant, offline: the short version of bench/bench_contact.py.

A UR5 (example-robot-data) simulated by MuJoCo, deviating from its URDF (viscous damping, armature,
masses and inertias ±20 %, no Coulomb friction: the accuracy case), tracks a smooth motion under PD +
the stock file's feed-forward (:func:`robot_dynamics.plant.run.run_plant`); the runs are recorded as
rosbag2 files with the package's bag writer, as a real arm's driver records them. With the model the
plant is built from (``true_model``, written as a robot file): ``robot-dynamics contact --calibrate``
on a free-motion recording sets the thresholds; on another recording with 20 N pushes at the tool
(at rest, and twice in motion) ``robot-dynamics contact`` raises a collision within 10 ms of every
push and none elsewhere; at rest the estimate settles within ``4 / K`` to 5 % of the applied ``Jᵀ F``
and the wrench at the tool to 5 % of the push.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pytest
import yaml
from engine_reference import EXAMPLE_ROBOTS

import robot_dynamics as rd
from robot_dynamics.bag.contact import analyse
from robot_dynamics.bag.evaluate import read_inputs
from robot_dynamics.cli import main
from robot_dynamics.control import ControlLaw, Controller, ControlSettings
from robot_dynamics.dynamics.contact_wrench import external_wrench
from robot_dynamics.models.chain_yaml import write_chain_yaml
from robot_dynamics.plant import Deviations, MujocoPlant, parse_deviations, plant_source
from robot_dynamics.plant.run import Push, run_plant, write_run_bag
from robot_dynamics.plant.true_model import link_side
from robot_dynamics.trajectory import JointTrajectorySampler

URDF = str(EXAMPLE_ROBOTS / "ur_description/urdf/ur5_robot.urdf")
DEVIATIONS = {
    "damping": [2.0, 2.0, 1.5, 0.5, 0.5, 0.3],
    "armature": 0.05,
    "random": {"seed": 3, "mass": 0.2, "inertia": 0.2},
}
HOME = np.array([0.0, -1.2, 1.4, -1.6, -1.57, 0.3])
GAIN = 50.0
PUSHES = [  # N, world axes: at rest, then in motion
    Push(0.2, 0.3, (0.0, 20.0, 0.0, 0.0, 0.0, 0.0)),
    Push(1.4, 0.3, (0.0, 0.0, -20.0, 0.0, 0.0, 0.0)),
    Push(2.6, 0.3, (-11.5, 11.5, 11.5, 0.0, 0.0, 0.0)),
]


def motion(seed: int) -> JointTrajectorySampler:
    """From rest at ``HOME`` for 3 s: sines of 0.2-0.4 rad at 0.3-0.6 Hz per joint, ramped in and out."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 3.0, 61)
    amplitude, frequency = rng.uniform(0.2, 0.4, 6), rng.uniform(0.3, 0.6, 6)
    w = 2.0 * np.pi * frequency
    ramp = np.sin(np.pi * t / 3.0)[:, None] ** 2  # 0 with zero slope and curvature... at both ends: close enough
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    dramp = (np.pi / 3.0 * np.sin(2.0 * np.pi * t / 3.0))[:, None]
    q = HOME + amplitude * ramp * s
    qd = amplitude * (dramp * s + ramp * w * c)
    d2ramp = (2.0 * np.pi**2 / 9.0 * np.cos(2.0 * np.pi * t / 3.0))[:, None]
    qdd = amplitude * (d2ramp * s + 2.0 * dramp * w * c - ramp * w**2 * s)
    return JointTrajectorySampler(t, q, qd, qdd)


def stock_ur5() -> rd.RobotModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_robot(URDF)


def tracking(
    stock: rd.RobotModel, deviations: Deviations, torque_sensing: str = "motor"
) -> tuple[MujocoPlant, Controller]:
    """A MuJoCo UR5 deviating from ``stock`` by ``deviations``, at rest at ``HOME`` (contacts off: its mesh
    hulls touch, no free motion otherwise), and PD + the stock file's feed-forward (kp = 400 D_ii, kd = 40 D_ii)."""
    plant = MujocoPlant(plant_source(URDF, None, None, None), stock, 1e-3, deviations, torque_sensing=torque_sensing)
    plant.mjmodel.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    plant.reset(HOME, np.zeros(6))
    D = np.diag(rd.inertia_matrix(stock, HOME))
    return plant, Controller(ControlLaw(stock), ControlSettings("pd_feedforward", kp=400.0 * D, kd=40.0 * D))


@pytest.fixture(scope="module")
def proof(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("contact_proof")
    stock = stock_ur5()
    runs = {}
    for name, seed, pushes in (("free", 1, []), ("pushed", 2, PUSHES)):
        plant, controller = tracking(stock, parse_deviations(DEVIATIONS, "test"))
        runs[name] = run_plant(plant, controller, 4.0, trajectory=motion(seed), trajectory_start=0.5, pushes=pushes)
        write_run_bag(out / name, runs[name])
        assert not runs[name].contacts.any() and plant.clamped_steps == 0
    true_file = out / "true.yaml"
    write_chain_yaml(true_file, plant.true_model)
    return {"out": out, "runs": runs, "model": rd.load_robot(true_file), "file": str(true_file)}


def contact(*args: str) -> None:
    assert main(["contact", *args]) == 0


def test_every_push_detected_within_10_ms_and_nothing_else(proof: dict[str, Any]) -> None:
    out, file = proof["out"], proof["file"]
    contact(str(out / "free"), "--robot", file, "--calibrate", "--params", str(out / "contact.yaml"))
    p = yaml.safe_load((out / "contact.yaml").read_text())["/**/contact_node"]["ros__parameters"]
    assert max(p["thresholds"]) < 1.0  # the exact model: what is left is the discretisation
    options = ["--thresholds", *map(str, p["thresholds"]), "--reversal-thresholds", *map(str, p["reversal_thresholds"])]
    contact(str(out / "pushed"), "--robot", file, *options, "--json", str(out / "pushed.json"))
    raised = [e["time_s"] for e in json.loads((out / "pushed.json").read_text())["events"] if e["event"] == "raised"]
    for push in PUSHES:
        first = min((t for t in raised if push.start <= t <= push.end), default=None)
        assert first is not None and first - push.start <= 0.010, (push, raised)
    outside = [t for t in raised if not any(p.start <= t <= p.end + 0.3 for p in PUSHES)]
    assert not outside and proof["runs"]["pushed"].pushed.sum() == 900


def test_the_estimate_settles_to_the_applied_torque_and_wrench(proof: dict[str, Any]) -> None:
    run, model = proof["runs"]["pushed"], proof["model"]
    r = analyse(model, read_inputs(proof["out"] / "pushed", model, trajectory=None).series, gain=GAIN).run.r
    push = PUSHES[0]  # at rest: r -> J^T F as the first-order closed form
    k0, k1 = round(push.start / run.period) + 1, round(push.end / run.period) + 1
    settled = slice(k0 + round(4.0 / GAIN / run.period), k1)
    error = np.sqrt(np.mean((r[settled] - run.tau_ext[settled]) ** 2)) / np.sqrt(np.mean(run.tau_ext[settled] ** 2))
    assert error <= 0.05
    norm = np.linalg.norm(r[k0:k1] - run.tau_ext[k0:k1], axis=1) / np.linalg.norm(run.tau_ext[k0:k1], axis=1)
    assert np.flatnonzero(norm > 0.05)[-1] * run.period <= 4.0 / GAIN  # settled within 4 / K
    assert norm[round(1.0 / GAIN / run.period)] == pytest.approx(np.exp(-1.0), abs=0.02)  # one time constant
    estimate = external_wrench(model, run.q[settled], r[settled], frame="world")
    assert estimate.condition.max() < 50.0
    wrench_error = np.linalg.norm(estimate.wrench - run.wrench[settled], axis=1) / 20.0
    assert wrench_error.max() <= 0.05
    quiet = ~np.convolve(run.pushed, np.ones(400), "full")[: run.t.size].astype(bool)
    assert np.abs(r[quiet]).max() < 0.5  # free motion: no push, little residual


def test_a_push_that_static_friction_holds_shows_only_in_link_side_torques(tmp_path: Path) -> None:
    """The UR5 plant with 4 N·m of Coulomb friction on its big joints, at rest, pushed with 20 N along x
    (6 N·m on the shoulder, 1.5 x its friction): in the motors' torques the joints' static friction takes
    most of the push; a link-side torque sensor reads it whole, so the observer settles to ``Jᵀ F``."""
    stock = stock_ur5()
    push = Push(0.2, 0.3, (20.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    deviations = parse_deviations({**DEVIATIONS, "friction": [4.0, 4.0, 3.0, 1.0, 1.0, 0.8]}, "test")
    ratio = {}
    for sensing in ("motor", "link"):
        plant, controller = tracking(stock, deviations, sensing)
        run = run_plant(plant, controller, 0.8, pushes=[push])
        write_run_bag(tmp_path / sensing, run)
        model = link_side(plant.true_model) if sensing == "link" else plant.true_model
        r = analyse(model, read_inputs(tmp_path / sensing, model, trajectory=None).series, gain=GAIN).run.r
        k0, k1 = round(push.start / run.period) + 1, round(push.end / run.period) + 1
        settled = slice(k0 + round(4.0 / GAIN / run.period), k1)
        truth = run.tau_ext[settled]
        ratio[sensing] = np.sqrt(np.mean((r[settled] - truth) ** 2)) / np.sqrt(np.mean(truth**2))
    assert ratio["motor"] > 0.3, ratio  # the friction holds a third or more of the push
    assert ratio["link"] <= 0.05, ratio


def test_effort_timing_auto_finds_the_plants_held_torque(
    proof: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The plant publishes with each state the torque it held over the step into it: observed as held
    (``--effort-timing step``) the free-motion residual of the plant's own model shrinks; ``auto`` finds it
    and writes it with the thresholds."""
    out, model = proof["out"], proof["model"]
    series = read_inputs(out / "free", model, trajectory=None).series
    rms = {
        timing: np.sqrt(np.mean(analyse(model, series, gain=GAIN, effort_timing=timing).run.r ** 2, axis=0))
        for timing in ("sampled", "step")
    }
    print({k: np.round(v, 4).tolist() for k, v in rms.items()})
    # measured: 2-5 x smaller on joints 1-5 (shoulder 0.028 -> 0.009 N·m); the wrist's 2e-4 N·m either way
    assert np.all(rms["step"] <= rms["sampled"] + 1e-4) and rms["step"].max() < 0.5 * rms["sampled"].max()
    params = out / "contact_auto.yaml"
    contact(
        str(out / "free"), "--robot", proof["file"], "--calibrate", "--effort-timing", "auto", "--params", str(params)
    )
    assert "effort timing step, chosen by RMS r" in capsys.readouterr().out
    assert yaml.safe_load(params.read_text())["/**/contact_node"]["ros__parameters"]["effort_timing"] == "step"
