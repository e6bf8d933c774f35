"""Obstacles in the MuJoCo plant (robot_dynamics.plant.obstacles, .mujoco_obstacles), no ROS.

* a UR5 pressed statically against a rigid wall by a PD law: the contact forces, through the contact
  points' Jacobians (MuJoCo's ``mj_jac``), balance the torque applied less gravity (``J^T f = c(q) - τ``);
* a compliant wall: its deflection is the contact force over its stiffness, and the same balance holds;
* contacts only between the arm and the obstacles: at a pose where the stock meshes touch each other the
  plant with obstacles reports no contact, without obstacles it does; the obstacle force on the plant and
  in run_plant's record;
* bad obstacle files name the file and the field.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import mujoco
import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS

import robot_dynamics as rd
from robot_dynamics.control import ControlLaw, Controller, ControlSettings
from robot_dynamics.errors import ModelError
from robot_dynamics.plant import MujocoPlant, parse_deviations, plant_source
from robot_dynamics.plant.obstacles import load_obstacles, parse_obstacles
from robot_dynamics.plant.run import run_plant
from robot_dynamics.user_input import as_gains

UR5 = str(EXAMPLE_ROBOTS / "ur_description/urdf/ur5_robot.urdf")
Q0 = np.array([0.0, -1.2, 1.5, -1.9, -1.57, 0.0])
TARGET = Q0 + np.array([0.0, 0.346, -0.46, 0.0, 0.0, 0.0])  # the tool 0.15 m further along x
KP = np.array([300.0, 300.0, 200.0, 50.0, 50.0, 20.0])


def ur5() -> rd.RobotModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_robot(UR5)


MODEL = ur5()
TOOL = rd.forward_kinematics(MODEL, Q0)[:3, 3]


def wall(**more: object) -> dict[str, object]:
    """A 4 cm wall across x, 8 cm ahead of the tool at Q0."""
    position = [float(TOOL[0]) + 0.08, 0.0, float(TOOL[2])]
    return {"name": "wall", "shape": "box", "position": position, "size": [0.04, 0.8, 0.8]} | more


def plant_with(*obstacles: dict[str, object]) -> MujocoPlant:
    no_friction = parse_deviations({"friction": 0.0}, "plant.yaml")  # static balance without joint friction
    parsed = parse_obstacles({"obstacles": list(obstacles)}, "obstacles.yaml")
    return MujocoPlant(plant_source(UR5), MODEL, 0.001, no_friction, obstacles=parsed)


def press(plant: MujocoPlant, seconds: float = 6.0) -> None:
    """PD with gravity compensation towards TARGET, beyond the wall, until the arm rests on it."""
    plant.reset(Q0, np.zeros(6))
    kd = 2.0 * np.sqrt(KP)
    for _ in range(round(seconds / plant.period)):
        q, qd = plant.q, plant.qd
        plant.step(rd.gravity_torques(MODEL, q) + KP * (TARGET - q) - kd * qd)


def contact_torque(plant: MujocoPlant) -> np.ndarray:
    """``Σ J_c(p_c)^T f_c`` over the contacts, the forces on the arm (geom2 of each pair) in world axes."""
    m, d = plant.mjmodel, plant.data
    total = np.zeros(m.nv)
    for i in range(d.ncon):
        c, local = d.contact[i], np.zeros(6)
        mujoco.mj_contactForce(m, d, i, local)
        jacp = np.zeros((3, m.nv))
        mujoco.mj_jac(m, d, jacp, None, c.pos, m.geom_bodyid[c.geom2])
        total += jacp.T @ (c.frame.reshape(3, 3).T @ local[:3])
    return total[plant.compiled.dof]


@pytest.mark.parametrize("stiffness", [None, 20000.0])
def test_a_static_press_balances_the_applied_torque_and_a_soft_wall_gives_way_by_f_over_k(
    stiffness: float | None,
) -> None:
    plant = plant_with(wall() if stiffness is None else wall(stiffness=stiffness))
    press(plant)
    assert np.abs(plant.qd).max() < 1e-3 and plant.data.ncon >= 1
    force = plant.obstacle_force[0]
    assert force[0] < -50.0  # the wall pushes the arm back along -x
    balance = rd.gravity_torques(MODEL, plant.q) - plant.applied  # at rest: J^T f + τ - c(q) = 0
    np.testing.assert_allclose(contact_torque(plant), balance, rtol=0, atol=1e-3 * np.abs(balance).max())
    if stiffness is None:
        assert not plant.obstacle_deflection.any()
        return
    deflection = plant.obstacle_deflection[0]  # along the force the arm exerts on the wall
    assert np.linalg.norm(deflection) == pytest.approx(np.linalg.norm(force) / stiffness, rel=1e-4)
    np.testing.assert_allclose(deflection, -force / stiffness, rtol=0, atol=1e-3 * np.linalg.norm(deflection))


def test_contacts_only_between_the_arm_and_the_obstacles() -> None:
    plant = plant_with(wall(), {"name": "post", "shape": "cylinder", "position": [0.0, 0.6, 0.3], "size": [0.05, 0.6]})
    bare = MujocoPlant(plant_source(UR5), MODEL, 0.001)
    rng = np.random.default_rng(5)
    touching = next(q for q in rng.uniform(-1.5, 1.5, (400, 6)) if bare.contacts(q))  # the stock meshes touch
    pairs = plant.contacts(touching)
    assert all("wall" in a + b or "post" in a + b for a, b in pairs), pairs
    m = plant.mjmodel
    assert not m.geom_contype.any() and not m.geom_conaffinity.any()
    obstacle_geoms = {mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"obstacle:{n}") for n in ("wall", "post")}
    assert set(m.pair_geom1.tolist()) == obstacle_geoms
    moving = {int(m.geom_bodyid[g]) for g in m.pair_geom2}
    assert 0 not in moving and all(m.body_rootid[b] != 0 or b != 0 for b in moving)
    assert m.npair == 2 * len(set(m.pair_geom2.tolist()))  # each arm geom with each obstacle, nothing else


def test_run_plant_records_the_contact_force_as_ground_truth() -> None:
    plant = plant_with(wall())
    plant.reset(Q0, np.zeros(6))
    s = ControlSettings(law="pd_feedforward", kp=as_gains(KP, 6), kd=as_gains(2.0 * np.sqrt(KP), 6))
    controller = Controller(ControlLaw(MODEL), s)
    controller.hold = None
    trajectory = rd.JointTrajectorySampler([0.0, 1.0], np.stack([Q0, TARGET]), np.zeros((2, 6)), np.zeros((2, 6)))
    run = run_plant(plant, controller, 2.0, trajectory=trajectory)
    assert run.obstacle_names == ("wall",) and run.obstacle_force is not None
    force = run.contact_force
    touch = int(np.argmax(force > 0.0))
    assert 0.2 < run.t[touch] < 1.0 and force.max() > 50.0  # it ran into the wall on its way to TARGET
    assert not force[:touch].any()
    free = run_plant(MujocoPlant(plant_source(UR5), MODEL, 0.001), Controller(ControlLaw(MODEL), s), 0.01)
    assert free.obstacle_force is None and not free.contact_force.any()


BOX = {"shape": "box", "position": [0, 0, 0], "size": [1, 1, 1]}


@pytest.mark.parametrize(
    ("document", "field", "problem"),
    [
        ({"obstacles": [{"shape": "sphere", "position": [0, 0, 0], "size": [1, 1, 1]}]}, "obstacles[0].shape", "box"),
        ({"obstacles": [{"shape": "box", "position": [0, 0], "size": [1, 1, 1]}]}, "obstacles[0].position", "3"),
        ({"obstacles": [{"shape": "box", "position": [0, 0, 0], "size": [1, 1]}]}, "obstacles[0].size", "edge"),
        ({"obstacles": [{"shape": "cylinder", "position": [0, 0, 0], "size": [0.1, -1]}]}, "obstacles[0].size", "> 0"),
        ({"obstacles": [{"shape": "box", "size": [1, 1, 1]}]}, "obstacles[0].position", "required"),
        ({"obstacles": [BOX | {"stifness": 5}]}, "stifness", "stiffness"),
        ({"obstacles": [BOX | {"stiffness": 0}]}, "stiffness", "> 0"),
        ({"obstacles": [BOX | {"damping": 5}]}, "damping", "needs"),
        ({"obstacles": [BOX | {"name": "a"}] * 2}, "[1].name", "twice"),
        ({"obstacle": []}, "obstacle", "'obstacles'"),
        ({"obstacles": {"shape": "box"}}, "obstacles", "list"),
    ],
)
def test_bad_obstacle_files_name_the_file_and_the_field(document: object, field: str, problem: str) -> None:
    with pytest.raises(ModelError, match=r"obstacles\.yaml") as info:
        parse_obstacles(document, "obstacles.yaml")
    assert field in str(info.value) and problem in str(info.value)


def test_an_obstacle_file_is_read_and_yaml_errors_name_it(tmp_path: Path) -> None:
    good = tmp_path / "obstacles.yaml"
    good.write_text("obstacles:\n  - {name: w, shape: box, position: [1, 0, 0], size: [0.1, 1, 1], stiffness: 10000}\n")
    (o,) = load_obstacles(good).items
    assert o.stiffness == 1.0e4 and o.damping == pytest.approx(2.0 * np.sqrt(1.0e4 * 0.1)) and o.mass == 0.1
    bad = tmp_path / "broken.yaml"
    bad.write_text("obstacles: [\n")
    with pytest.raises(ModelError, match=r"broken\.yaml"):
        load_obstacles(bad)
