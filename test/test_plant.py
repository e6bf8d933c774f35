"""The physics plant (robot_dynamics.plant) without ROS: MuJoCo built from the robot file, checked against
the engine, Pinocchio and closed relations; deviations; bad input; effort limits; the external force.

MuJoCo is the reference here (``mj_fullM``, ``qfrc_bias``, ``mj_forward``), read directly from the
compiled model the plant steps; the engine's D, h, c are checked against Pinocchio elsewhere and here
once more for the URDF arms.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path

import mujoco
import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS, URDF_ARMS, pinocchio_puma560, pinocchio_urdf

import robot_dynamics as rd
from robot_dynamics.errors import ModelError, StateError
from robot_dynamics.model import RobotModel
from robot_dynamics.payload import check_payload
from robot_dynamics.plant import (
    NO_DEVIATIONS,
    Deviations,
    ModelPlant,
    MujocoPlant,
    load_deviations,
    parse_deviations,
    plant_source,
)
from robot_dynamics.plant.true_model import link_side
from robot_dynamics.user_input import renamed_model

UR5 = str(EXAMPLE_ROBOTS / "ur_description/urdf/ur5_robot.urdf")
PANDA = str(EXAMPLE_ROBOTS / "panda_description/urdf/panda.urdf")
FINGERS = {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}
ROBOTS = {  # name: (robot, tip link, locked joints)
    "puma560": ("puma560", None, {}),
    "ur5": (UR5, None, {}),
    "panda": (PANDA, "panda_hand_tcp", FINGERS),
}
DEVIATIONS = {
    "damping": [0.8, 0.8, 0.5, 0.2, 0.2, 0.1],
    "friction": {"shoulder_pan_joint": 3.0, "elbow_joint": 1.5},
    "armature": 0.05,
    "mass_scale": {"forearm_link": 1.25},
    "random": {"seed": 7, "mass": 0.2, "inertia": 0.2},
}
TOL = 1e-9
STATES = 25


def load(name: str) -> RobotModel:
    robot, tip, locks = ROBOTS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # held joints, massless frames: the loader's warnings
        return rd.load_robot(robot, tip_link=tip, locked_joints=locks)


def make_plant(name: str, deviations: Deviations = NO_DEVIATIONS, period: float = 0.001) -> MujocoPlant:
    robot, tip, locks = ROBOTS[name]
    return MujocoPlant(plant_source(robot, None, tip, locks), load(name), period, deviations)


def mujoco_terms(plant: MujocoPlant, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MuJoCo's mass matrix, bias forces (h + c) and gravity (bias at rest) at one state."""
    m, d = plant.mjmodel, mujoco.MjData(plant.mjmodel)
    dof = plant.compiled.dof
    d.qpos[plant.compiled.qpos], d.qvel[dof] = q, qd
    mujoco.mj_forward(m, d)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    bias = d.qfrc_bias[dof].copy()
    d.qvel[:] = 0.0
    mujoco.mj_forward(m, d)
    return full[np.ix_(dof, dof)], bias, d.qfrc_bias[dof].copy()


def relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(1.0, float(np.abs(b).max())))


def states(model: RobotModel, seed: int, count: int = STATES) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(-np.pi, np.pi, (count, model.dof)), rng.normal(0.0, 1.5, (count, model.dof))


@pytest.fixture(scope="module")
def ur5_deviated() -> MujocoPlant:
    return make_plant("ur5", parse_deviations(DEVIATIONS, "plant.yaml"))


# ------------------------------------------------------------------------------------------------
# the nominal plant equals the robot model (and Pinocchio)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ROBOTS))
def test_nominal_plant_has_the_engines_d_h_c(name: str) -> None:
    plant, model = make_plant(name), load(name)
    q, qd = states(model, seed=len(name))
    D = rd.inertia_matrix(model, q, backend="python")  # (the native backend is checked against Pinocchio elsewhere)
    h, c = rd.coriolis_centrifugal(model, q, qd, backend="python"), rd.gravity_torques(model, q, backend="python")
    for k in range(len(q)):
        M, bias, gravity = mujoco_terms(plant, q[k], qd[k])
        assert relative(M, D[k]) < TOL and relative(gravity, c[k]) < TOL and relative(bias - gravity, h[k]) < TOL
    if name == "puma560":  # the file's two inertias MuJoCo refuses are written exactly, and said so
        assert any("link1" in note and "link3" in note for note in plant.notes)


@pytest.mark.parametrize("name", ["puma560", "ur5", "panda"])
def test_nominal_plant_has_pinocchios_mass_matrix_and_bias(name: str) -> None:
    pin = pytest.importorskip("pinocchio")
    if name == "puma560":
        pm, plant = pinocchio_puma560(motor_inertia=True), make_plant("puma560")
    else:
        robot, tip, locks = (UR5, None, {}) if name == "ur5" else (PANDA, URDF_ARMS["panda"][1], FINGERS)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = rd.load_robot(robot, tip_link=tip, locked_joints=locks)
        pm, plant = pinocchio_urdf(name), MujocoPlant(plant_source(robot, None, tip, locks), model, 0.001)
    data = pm.createData()
    q, qd = states(plant.model, seed=3)
    for k in range(len(q)):
        M, bias, _ = mujoco_terms(plant, q[k], qd[k])
        expected = pin.crba(pm, data, q[k])
        assert relative(M, np.triu(expected) + np.triu(expected, 1).T) < TOL
        assert relative(bias, pin.nonLinearEffects(pm, data, q[k], qd[k])) < TOL


def test_the_plants_tip_body_is_the_tool_frame() -> None:
    plant, model = make_plant("panda"), load("panda")
    q = np.array([0.3, -0.5, 0.2, -2.0, 0.4, 1.8, -0.6])
    plant.reset(q, np.zeros(7))
    tool = rd.forward_kinematics(model, q)
    tip = plant.compiled.tip_body
    assert np.abs(plant.data.xpos[tip] - tool[:3, 3]).max() < 1e-12
    assert np.abs(plant.data.xmat[tip].reshape(3, 3) - tool[:3, :3]).max() < 1e-12


# ------------------------------------------------------------------------------------------------
# deviations and the true model
# ------------------------------------------------------------------------------------------------
def test_true_model_of_a_deviated_plant_equals_mujoco(ur5_deviated: MujocoPlant) -> None:
    plant, nominal = ur5_deviated, load("ur5")
    true = plant.true_model
    q, qd = states(nominal, seed=5)
    D = rd.inertia_matrix(true, q, backend="python")
    h, c = rd.coriolis_centrifugal(true, q, qd, backend="python"), rd.gravity_torques(true, q, backend="python")
    for k in range(len(q)):
        M, bias, gravity = mujoco_terms(plant, q[k], qd[k])
        assert relative(M, D[k]) < TOL and relative(gravity, c[k]) < TOL and relative(bias - gravity, h[k]) < TOL
    # the deviations are there: armature on D's diagonal, scaled masses, the joint terms as given
    rigid = true.with_changes(joints=tuple(replace(j, motor=None) for j in true.joints))
    armature = rd.inertia_matrix(true, q[0], backend="python") - rd.inertia_matrix(rigid, q[0], backend="python")
    assert np.allclose(armature, 0.05 * np.eye(6), atol=1e-12)
    assert relative(rd.inertia_matrix(nominal, q[0], backend="python"), D[0]) > 1e-2
    assert [j.friction.viscous for j in true.joints] == DEVIATIONS["damping"]
    assert [j.friction.coulomb[0] for j in true.joints] == [3.0, 0.0, 1.5, 0.0, 0.0, 0.0]
    masses = {j.link_name: j.link.mass for j in true.joints}
    assert masses["forearm_link"] == pytest.approx(1.25 * load("ur5").joints[2].link.mass, rel=1e-12)


def test_random_factors_are_seeded_and_explicit_values_override() -> None:
    first = make_plant("ur5", parse_deviations({"random": {"seed": 7, "mass": 0.2, "inertia": 0.2}}, "a.yaml"))
    again = make_plant("ur5", parse_deviations({"random": {"seed": 7, "mass": 0.2, "inertia": 0.2}}, "a.yaml"))
    other = make_plant("ur5", parse_deviations({"random": {"seed": 8, "mass": 0.2, "inertia": 0.2}}, "a.yaml"))
    nominal = make_plant("ur5")
    ratio = first.mjmodel.body_mass[1:] / np.where(nominal.mjmodel.body_mass[1:] > 0, nominal.mjmodel.body_mass[1:], 1)
    moving = nominal.mjmodel.body_mass[1:] > 0
    assert np.array_equal(first.mjmodel.body_mass, again.mjmodel.body_mass)
    assert not np.array_equal(first.mjmodel.body_mass, other.mjmodel.body_mass)
    assert ((ratio[moving] >= 0.8) & (ratio[moving] <= 1.2)).all() and np.ptp(ratio[moving]) > 0.05
    fixed = make_plant(
        "ur5", parse_deviations({"random": {"seed": 7, "mass": 0.2}, "mass_scale": {"wrist_1_link": 1.0}}, "a.yaml")
    )
    wrist = mujoco.mj_name2id(fixed.mjmodel, mujoco.mjtObj.mjOBJ_BODY, "wrist_1_link")
    assert fixed.mjmodel.body_mass[wrist] == nominal.mjmodel.body_mass[wrist]


def test_deviation_file_with_topic_names(tmp_path: Path) -> None:
    file = tmp_path / "plant.yaml"
    file.write_text("damping: {arm_elbow: 2.5}\nfriction: [1, 1, 1, 0.5, 0.5, 0.5]\n")
    model = renamed_model(load("ur5"), {"arm_elbow": "elbow_joint"})
    plant = MujocoPlant(plant_source(UR5), model, 0.001, load_deviations(file))
    assert plant.true_model.joints[2].friction.viscous == 2.5
    assert plant.true_model.joint_names[2] == "arm_elbow"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"damping": [1.0, 2.0]}, "plant.yaml: damping: 2 values for the 6 joints"),
        ({"friction": -1.0}, "plant.yaml: friction: must be >= 0"),
        ({"armature": {"elbow_joint": -0.1}}, "plant.yaml: armature[elbow_joint]: must be >= 0"),
        ({"damping": {"elbow": 1.0}}, "plant.yaml: damping[elbow]: no such joint (did you mean 'elbow_joint'?)"),
        (
            {"mass_scale": {"forearm": 1.1}},
            "plant.yaml: mass_scale[forearm]: no such link (did you mean 'forearm_link'?)",
        ),
        ({"inertia_scale": {"forearm_link": 0.0}}, "plant.yaml: inertia_scale[forearm_link]: must be > 0"),
        ({"damping": float("nan")}, "plant.yaml: damping: must be finite"),
        ({"dampng": 1.0}, "plant.yaml: dampng: unknown key (did you mean 'damping'?)"),
        ({"random": {"mass": 0.2}}, "plant.yaml: random.seed: required with random factors"),
        ({"random": {"seed": 1, "mass": 1.5}}, "plant.yaml: random.mass: must be < 1"),
        ({"friction": "high"}, "plant.yaml: friction: expected a number, got 'high'"),
    ],
)
def test_bad_deviations_name_the_file_and_the_field(document: dict, message: str) -> None:
    with pytest.raises(ModelError) as caught:
        make_plant("ur5", parse_deviations(document, "plant.yaml"))
    assert str(caught.value).startswith(message), str(caught.value)


def test_bad_deviation_files(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"missing.yaml: cannot read the file"):
        load_deviations(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("damping: [1, 2\n")
    with pytest.raises(ModelError, match=r"broken.yaml: line 2, column 1: invalid YAML"):
        load_deviations(broken)


# ------------------------------------------------------------------------------------------------
# stepping: exact inverse dynamics, effort limits, the external force, payload
# ------------------------------------------------------------------------------------------------
def test_inverse_dynamics_gives_back_the_acceleration_and_equals_the_true_model(ur5_deviated: MujocoPlant) -> None:
    plant = ur5_deviated
    m, d = plant.mjmodel, mujoco.MjData(plant.mjmodel)
    rng = np.random.default_rng(11)
    checked = 0
    while checked < 15:
        q = rng.uniform(-1.5, 1.5, 6)
        qd = rng.choice([-1.0, 1.0], 6) * rng.uniform(0.5, 2.0, 6)  # the friction loss is saturated
        qdd = rng.normal(0.0, 3.0, 6)
        tau = plant.inverse_dynamics(q, qd, qdd)
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q, qd, tau
        mujoco.mj_forward(m, d)
        if d.ncon:  # a self-collision: contact forces are the plant's too, but not the true model's
            continue
        assert np.abs(d.qacc - qdd).max() < 1e-8 * max(1.0, np.abs(qdd).max())
        expected = rd.inverse_dynamics(plant.true_model, q, qd, qdd, backend="python")  # + armature, friction
        assert relative(tau, expected) < TOL
        checked += 1
    with pytest.raises(StateError, match="qdd: expected 6 finite values"):
        plant.inverse_dynamics(q, qd, np.full(6, np.nan))


@pytest.mark.parametrize("engine", ["model", "mujoco"])
def test_effort_limits_clamp_the_applied_torque_and_count(engine: str) -> None:
    model = load("ur5")
    rd.prepare(model, "python")
    plant = make_plant("ur5") if engine == "mujoco" else ModelPlant(model, 0.001)
    plant.reset(np.zeros(6), np.zeros(6))
    limit = np.array([j.limits.effort for j in model.joints])  # 150 150 150 28 28 28 N m
    command = np.array([200.0, -10.0, -400.0, 5.0, 30.0, -28.0])
    applied = plant.step(command)
    assert applied.tolist() == [150.0, -10.0, -150.0, 5.0, 28.0, -28.0]
    assert plant.clamped_steps == 1 and plant.clamped_joints.tolist() == [1, 0, 1, 0, 1, 0]
    plant.step(0.5 * limit)
    assert plant.clamped_steps == 1 and plant.steps == 2
    with pytest.raises(StateError, match="tau: expected 6 finite torques"):
        plant.step(np.full(6, np.inf))


def test_a_non_finite_mujoco_state_is_an_error_naming_mujocos_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # MuJoCo writes its warnings to MUJOCO_LOG.TXT in the working directory
    plant = make_plant("ur5")
    plant.mjmodel.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_AUTORESET  # else MuJoCo resets the data itself
    plant.reset(np.zeros(6), np.zeros(6))
    plant.data.qvel[0] = np.nan
    with pytest.raises(StateError, match=r"became non-finite \(warnings: mjWARN_BADQVEL: 1"):
        plant.step(np.zeros(6))


@pytest.mark.parametrize("engine", ["model", "mujoco"])
def test_external_force_at_the_tool_acts_as_jacobian_transpose(engine: str) -> None:
    # the Panda up to panda_hand (its centre of mass is off the tool point), without its joint damping
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hand = rd.load_robot(PANDA, tip_link="panda_hand", locked_joints=FINGERS)
    model = hand.with_changes(joints=tuple(replace(j, friction=rd.model.JointFriction()) for j in hand.joints))
    rd.prepare(model, "python")
    source = plant_source(PANDA, None, "panda_hand", FINGERS)
    plant = MujocoPlant(source, model, 0.001) if engine == "mujoco" else ModelPlant(model, 0.001)
    q = np.array([0.3, -0.5, 0.2, -2.0, 0.4, 1.8, -0.6])
    qd = np.array([0.2, -0.1, 0.3, 0.1, -0.2, 0.1, 0.4])
    push = np.array([12.0, -20.0, 7.0, 0.6, -1.1, 0.4])  # force and moment at the tool, world axes
    after = []
    for wrench in (np.zeros(6), push):
        plant.external_wrench = wrench
        plant.reset(q, qd)
        plant.step(np.zeros(7))
        after.append(plant.qd)
    jacobian = rd.jacobian(model, q, frame="world")  # rows [v; w] of the tool-frame origin
    expected = np.linalg.solve(rd.inertia_matrix(model, q), jacobian.T @ push)
    assert np.abs((after[1] - after[0]) / plant.period - expected).max() < 1e-9 * np.abs(expected).max()
    with pytest.raises(StateError, match="external_wrench: expected 6 finite numbers"):
        plant.external_wrench = np.array([1.0, 2.0])


def test_real_time_durations_are_whole_physics_steps_with_the_remainder_carried() -> None:
    plant = make_plant("ur5")
    plant.reset(np.full(6, 0.2), np.zeros(6))
    hold = rd.gravity_torques(load("ur5"), np.full(6, 0.2), backend="python")
    plant.step(hold, 0.0025)  # 2 steps of 1 ms, 0.5 ms carried
    assert plant.time == pytest.approx(0.002, abs=1e-12)
    plant.step(hold, 0.0025)  # 3 steps
    assert plant.time == pytest.approx(0.005, abs=1e-12)
    assert make_plant("ur5", period=0.005).substeps == 5


def test_payload_rebuilds_the_plant_with_the_loaded_dynamics() -> None:
    plant, model = make_plant("ur5"), load("ur5")
    plant.reset(np.full(6, 0.4), np.full(6, 0.1))
    plant.step(np.zeros(6))
    q, qd = plant.q, plant.qd
    payload = check_payload(2.5, [0.01, 0.0, 0.08], np.diag([0.012, 0.015, 0.009]))
    loaded = rd.with_payload(model, 2.5, [0.01, 0.0, 0.08], np.diag([0.012, 0.015, 0.009]))
    plant.set_payload(payload, loaded)
    assert np.array_equal(plant.q, q) and np.array_equal(plant.qd, qd)
    M, _, gravity = mujoco_terms(plant, q, qd)
    assert relative(M, rd.inertia_matrix(loaded, q, backend="python")) < TOL
    assert relative(gravity, rd.gravity_torques(loaded, q, backend="python")) < TOL
    assert relative(rd.inertia_matrix(plant.true_model, q, backend="python"), M) < TOL


# ------------------------------------------------------------------------------------------------
# sources: MJCF, meshes, bad files
# ------------------------------------------------------------------------------------------------
# One small arm written twice by hand, as URDF and as MJCF (same numbers; rpy (pi/2, 0, 0) is the
# quaternion (cos pi/4, sin pi/4, 0, 0)): a revolute, a tilted revolute, a prismatic joint and a finger.
INERTIAL = {
    "l1": ("0.01 0 0.1", "2.0", "0.02 0.025 0.01 0.001 0 0"),
    "l2": ("0.15 0 0", "1.5", "0.004 0.03 0.031 0 0.002 0"),
    "l3": ("0.05 0.01 0", "0.8", "0.002 0.003 0.0025 0 0 0.0004"),
    "f": ("0 0.01 0", "0.1", "0.0001 0.0001 0.0001 0 0 0"),
}


def _urdf_inertial(link: str) -> str:
    com, mass, (xx, yy, zz, xy, xz, yz) = *INERTIAL[link][:2], INERTIAL[link][2].split()
    return (
        f'<link name="{link}"><inertial><origin xyz="{com}"/><mass value="{mass}"/>'
        f'<inertia ixx="{xx}" iyy="{yy}" izz="{zz}" ixy="{xy}" ixz="{xz}" iyz="{yz}"/></inertial></link>'
    )


ARM_URDF = f"""<robot name="arm3"><link name="base"/>
<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.3"/>
  <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="50" velocity="2"/></joint>{_urdf_inertial("l1")}
<joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
  <origin xyz="0 0.05 0.2" rpy="1.5707963267948966 0 0"/><axis xyz="0 0 1"/>
  <limit lower="-3" upper="3" effort="50" velocity="2"/></joint>{_urdf_inertial("l2")}
<joint name="j3" type="prismatic"><parent link="l2"/><child link="l3"/><origin xyz="0.3 0 0"/>
  <axis xyz="1 0 0"/><limit lower="-0.2" upper="0.2" effort="50" velocity="2"/></joint>{_urdf_inertial("l3")}
<joint name="finger" type="prismatic"><parent link="l3"/><child link="f"/><origin xyz="0.1 0 0"/>
  <axis xyz="0 1 0"/><limit lower="0" upper="0.04" effort="5" velocity="1"/></joint>{_urdf_inertial("f")}
</robot>"""


def _mjcf_inertial(link: str) -> str:
    com, mass, full = INERTIAL[link]
    return f'<inertial pos="{com}" mass="{mass}" fullinertia="{full}"/>'


ARM_MJCF = f"""<mujoco model="arm3"><compiler angle="radian"/><worldbody><body name="base">
<body name="l1" pos="0 0 0.3">{_mjcf_inertial("l1")}<joint name="j1" type="hinge" axis="0 0 1" range="-3 3"/>
<body name="l2" pos="0 0.05 0.2" quat="0.7071067811865476 0.7071067811865476 0 0">{_mjcf_inertial("l2")}
  <joint name="j2" type="hinge" axis="0 0 1" range="-3 3"/>
<body name="l3" pos="0.3 0 0">{_mjcf_inertial("l3")}<joint name="j3" type="slide" axis="1 0 0" range="-0.2 0.2"/>
<body name="f" pos="0.1 0 0">{_mjcf_inertial("f")}<joint name="finger" type="slide" axis="0 1 0" range="0 0.04"/>
</body></body></body></body></body></worldbody></mujoco>"""


def test_an_mjcf_file_with_a_locked_joint_equals_its_urdf_twin(tmp_path: Path) -> None:
    mjcf = tmp_path / "arm3.xml"
    mjcf.write_text(ARM_MJCF)
    model = rd.load_robot(ARM_URDF, tip_link="f", locked_joints={"finger": 0.03})  # the project's own loader
    assert model.joint_names == ["j1", "j2", "j3"]
    free = plant_source("", None, "f", mjcf=mjcf, joint_names=model.joint_names)
    with pytest.raises(ModelError, match=r"arm3.xml: joint\[finger\]: moves a body that rides on the chain"):
        MujocoPlant(free, model, 0.001)
    locked = plant_source("", None, "f", {"finger": 0.03}, mjcf=mjcf, joint_names=model.joint_names)
    plant = MujocoPlant(locked, model, 0.001)
    q, qd = states(model, seed=9)
    q[:, 2] *= 0.05
    D = rd.inertia_matrix(model, q, backend="python")
    h, c = rd.coriolis_centrifugal(model, q, qd, backend="python"), rd.gravity_torques(model, q, backend="python")
    for k in range(len(q)):
        M, bias, gravity = mujoco_terms(plant, q[k], qd[k])
        assert relative(M, D[k]) < TOL and relative(gravity, c[k]) < TOL and relative(bias - gravity, h[k]) < TOL
    true = plant.true_model  # read back from MuJoCo: the same dynamics
    assert relative(rd.inertia_matrix(true, q, backend="python"), D) < TOL


def test_refused_inertias_in_rotated_inertial_frames_are_written_back_exactly() -> None:
    """Both links violate the triangle inequality, in inertial frames with rpy: MuJoCo's compiler refuses
    them, the plant writes the file's principal moments and axes back, the dynamics are the loader's."""
    urdf = """<robot name="r"><link name="base"/>
    <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.3"/>
      <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="50" velocity="2"/></joint>
    <link name="l1"><inertial><origin xyz="0.1 0.02 0.1" rpy="0.3 -0.4 1.1"/><mass value="2.0"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.02"/></inertial></link>
    <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.2 0 0.1" rpy="0.2 0.1 0"/>
      <axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="50" velocity="2"/></joint>
    <link name="l2"><inertial><origin xyz="0.1 0 0" rpy="0.5 0.2 -0.3"/><mass value="1.0"/>
      <inertia ixx="0.001" ixy="0.0002" ixz="0.0001" iyy="0.002" iyz="0" izz="0.004"/></inertial></link>
    </robot>"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loader warns about the triangle inequality
        model = rd.load_robot(urdf)
    plant = MujocoPlant(plant_source(urdf), model, 0.001)
    assert any("['l1', 'l2']" in note for note in plant.notes)
    q, qd = states(model, seed=4, count=10)
    D = rd.inertia_matrix(model, q, backend="python")
    h, c = rd.coriolis_centrifugal(model, q, qd, backend="python"), rd.gravity_torques(model, q, backend="python")
    for k in range(len(q)):
        M, bias, gravity = mujoco_terms(plant, q[k], qd[k])
        assert relative(M, D[k]) < TOL and relative(gravity, c[k]) < TOL and relative(bias - gravity, h[k]) < TOL


def test_meshes_are_resolved_or_dropped_with_a_reason() -> None:
    assert make_plant("ur5").mjmodel.ngeom == 8  # 7 meshes (package://example-robot-data/... found) and a box
    text = Path(UR5).read_text().replace("package://example-robot-data/robots/ur_description/", "")
    source = plant_source(text)  # URDF text: relative mesh paths cannot be resolved
    assert len(source.dropped) == 7 and "a relative path in a URDF given as text" in source.dropped[0]
    assert source.dropped[0].startswith("link[base_link]/collision[0] 'meshes/ur5/collision/base.stl'")
    plant = MujocoPlant(source, load("ur5"), 0.001)
    assert plant.mjmodel.ngeom == 1 and any("collision geometry dropped" in note for note in plant.notes)  # ee box


def test_bad_sources_are_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><body><joint name='j' type='hinge'/></body></worldbody></mujoco>")
    one_joint = load("ur5").with_changes(joints=load("ur5").joints[:1])
    with pytest.raises(ModelError, match=r"^bad.xml: MuJoCo cannot compile it: .*mass and inertia"):
        MujocoPlant(plant_source("", mjcf=bad, joint_names=["j"]), one_joint, 0.001)
    with pytest.raises(ModelError, match=r"^missing.xml: MuJoCo cannot read it"):
        plant_source("", mjcf=tmp_path / "missing.xml", joint_names=["j"])
    with pytest.raises(ModelError, match=r"bad.xml: joint\[elbow\]: the MJCF has no such joint"):
        plant_source("", mjcf=bad, joint_names=["elbow"])
    entity = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e SYSTEM "file:///etc/passwd">]><robot name="r">&e;</robot>'
    with pytest.raises(ModelError, match="entity declarations are not allowed"):
        plant_source(entity)


# ------------------------------------------------------------------------------------------------
# the model engine (the simulator's integrator of the robot file itself)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("friction", [False, True])
@pytest.mark.parametrize("integrator", ["fixed_step", "adaptive"])
def test_model_engine_integrators_follow_the_engine(integrator: str, friction: bool) -> None:
    puma = load("puma560")
    rd.prepare(puma, "python")  # (the native programs are checked against these elsewhere)
    q0 = np.array([0.0, 0.8, -1.0, 0.2, 0.6, -0.3])
    qd0 = np.array([0.0, 0.3, -0.2, 0.0, 0.0, 0.1])
    tau = rd.gravity_torques(puma, q0) + np.array([0.0, 40.0, -10.0, 0.0, 0.0, 0.0])
    plant = ModelPlant(puma, 0.005, integrator, friction)
    plant.reset(q0, qd0)
    plant.step(tau)
    if integrator == "adaptive":
        ref = rd.simulate(puma, q0, qd0, tau, 0.005, t_eval=(0.0, 0.005), friction=friction)
        np.testing.assert_allclose(plant.q, ref.q[-1], atol=1e-12)
        np.testing.assert_allclose(plant.qd, ref.qd[-1], atol=1e-12)
        return
    qdd = rd.forward_dynamics(puma, q0, qd0, tau, friction=friction)  # constant acceleration (no reversal)
    np.testing.assert_allclose(plant.qd, qd0 + 0.005 * qdd, atol=1e-12)
    np.testing.assert_allclose(plant.q, q0 + 0.005 * qd0 + 0.5 * 0.005**2 * qdd, atol=1e-12)
    assert plant.time == 0.005
    # two periods' worth of lag are split into steps of at most one period
    plant.reset(q0, qd0)
    plant.step(tau, 0.01)
    ref = rd.simulate(puma, q0, qd0, tau, 0.01, t_eval=(0.0, 0.01), friction=friction)
    np.testing.assert_allclose(plant.q, ref.q[-1], atol=1e-4)


def test_model_engine_stops_a_sticky_joint_instead_of_reversing() -> None:
    puma = load("puma560")
    rd.prepare(puma, "python")
    q0 = np.array([0.0, 0.8, -1.0, 0.2, 0.6, -0.3])
    plant = ModelPlant(puma, 0.005)
    plant.reset(q0, np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1e-3]))
    tau = rd.gravity_torques(puma, q0)
    plant.step(tau)
    assert plant.qd[5] == 0.0 and q0[5] < plant.q[5] < q0[5] + 0.005 * 1e-3
    plant.step(tau)  # held by stiction from now on
    np.testing.assert_array_equal(plant.qd, np.zeros(6))


def test_the_example_deviation_file_fits_the_ur5() -> None:
    example = Path(__file__).resolve().parent.parent / "config" / "plant_deviations.yaml"
    plant = make_plant("ur5", load_deviations(example))
    true = plant.true_model
    assert [j.friction.coulomb[0] for j in true.joints] == [4.0, 4.0, 3.0, 1.0, 1.0, 0.8]
    assert [j.motor.inertia for j in true.joints if j.motor] == [0.15, 0.15, 0.1, 0.02, 0.02, 0.02]


# ------------------------------------------------------------------------------------------------
# link-side joint torque sensing
# ------------------------------------------------------------------------------------------------
def test_link_side_torque_is_the_rigid_links_torque_of_the_step_mujoco() -> None:
    # MuJoCo's equation of motion with the armature and friction loss moved to the right-hand side:
    # what the joints pass on is M_rigid qacc + bias - J^T F of the true model without friction/armature
    plant = make_plant("ur5", parse_deviations({**DEVIATIONS, "friction": 2.0}, "plant.yaml"))
    plant.torque_sensing = "link"
    plant.mjmodel.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)  # (contacts act on links)
    rigid = link_side(plant.true_model)
    rd.prepare(rigid, "python")
    rng = np.random.default_rng(5)
    for wrench in (np.zeros(6), np.array([8.0, -15.0, 20.0, 0.5, -1.0, 0.3])):
        plant.external_wrench = wrench
        for _ in range(6):
            q, qd = rng.uniform(-1.2, 1.2, 6), rng.normal(0.0, 1.0, 6)
            plant.reset(q, qd)
            applied = plant.step(rng.normal(0.0, 20.0, 6))
            qacc = plant.data.qacc[plant.compiled.dof]  # the step's acceleration (before integration)
            jt_f = rd.jacobian(rigid, q, frame="world").T @ wrench
            expected = rd.inverse_dynamics(rigid, q, qd, qacc) - jt_f
            assert relative(plant.effort, expected) < TOL
            assert np.abs(plant.effort - applied).max() > 0.1  # friction, damping, armature: not the motors'


def test_a_push_the_joint_friction_holds_shows_link_side_only() -> None:
    # stiction (friction loss 40 N m on every joint) holds a 20 N push: the motors' torque does not
    # change, the link-side reading changes by -J^T F
    plant = make_plant("ur5", parse_deviations({"friction": 40.0}, "plant.yaml"))
    q = np.array([0.0, -1.2, 1.4, -1.6, -1.57, 0.3])
    hold = rd.gravity_torques(plant.true_model, q, backend="python")
    readings = {}
    for sensing in ("motor", "link"):
        plant.torque_sensing = sensing
        for label, push in (("free", np.zeros(6)), ("pushed", np.array([0.0, 0.0, 20.0, 0.0, 0.0, 0.0]))):
            plant.reset(q, np.zeros(6))
            plant.external_wrench = push
            for _ in range(50):
                plant.step(hold)
            readings[sensing, label] = plant.effort
            assert np.abs(plant.q - q).max() < 5e-3  # held (MuJoCo's friction loss is soft: it creeps)
    jt_f = rd.jacobian(plant.true_model, q, frame="world").T @ np.array([0.0, 0.0, 20.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(readings["motor", "pushed"], readings["motor", "free"])
    change = readings["link", "pushed"] - readings["link", "free"]
    assert np.abs(change + jt_f).max() < 0.05 * np.abs(jt_f).max()  # (the creep's inertia torque)


def test_link_side_torque_of_the_model_engine() -> None:
    puma = load("puma560")
    rd.prepare(puma, "python")
    assert puma.has_friction and any(j.motor for j in puma.joints)
    q0 = np.array([0.0, 0.8, -1.0, 0.2, 0.6, -0.3])
    qd0 = np.array([0.4, 0.3, -0.2, 0.5, -0.6, 0.1])  # sliding: no stick-slip decision within the step
    tau = rd.gravity_torques(puma, q0) + np.array([5.0, 40.0, -10.0, 1.0, 0.5, -0.3])
    push = np.array([10.0, -5.0, 20.0, 0.0, 1.0, 0.0])
    plant = ModelPlant(puma, 0.005, torque_sensing="link")
    plant.reset(q0, qd0)
    plant.external_wrench = push
    applied = plant.step(tau)
    qdd = (plant.qd - qd0) / 0.005  # constant acceleration over the step
    rigid = link_side(puma)
    rd.prepare(rigid, "python")
    expected = rd.inverse_dynamics(rigid, q0, qd0, qdd) - rd.jacobian(puma, q0, frame="world").T @ push
    np.testing.assert_allclose(plant.effort, expected, atol=1e-9 * np.abs(expected).max())
    # = the applied torque less the friction and the motor inertia's torque
    full = rd.inverse_dynamics(puma, q0, qd0, qdd, wrench=-push, wrench_frame="world")
    np.testing.assert_allclose(full, applied, atol=1e-9 * np.abs(applied).max())
    with pytest.raises(ValueError, match="torque_sensing 'link' needs the fixed_step integrator"):
        ModelPlant(puma, 0.005, "adaptive", torque_sensing="link")
    with pytest.raises(ValueError, match=r"torque_sensing must be one of \['motor', 'link'\], got 'joint'"):
        ModelPlant(puma, 0.005, torque_sensing="joint")


def test_the_torque_reading_is_checked_when_changed_too() -> None:
    puma = load("puma560")
    plant = ModelPlant(puma, 0.005, "adaptive")
    with pytest.raises(ValueError, match="torque_sensing 'link' needs the fixed_step integrator"):
        plant.torque_sensing = "link"  # it would read nothing
    with pytest.raises(ValueError, match="torque_sensing must be one of"):
        plant.torque_sensing = "motors"
    assert plant.torque_sensing == "motor"
