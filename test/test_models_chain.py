"""Chain choice with locked and mimic joints, inertia checks with a tolerance, warnings, export flags, DH locking.

References: Pinocchio (``buildModelFromXML`` / a model built from our joint frames, reduced by
``buildReducedModel`` with the locked joints at the same positions) and the world-frame kinematics
of ``models_reference``.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS, pinocchio_from_model
from models_reference import compare_with_pinocchio, link_frames
from test_models_urdf import SYNTHETIC, edit

from robot_dynamics.errors import ModelError, ModelWarning
from robot_dynamics.model import RobotModel
from robot_dynamics.models import load_robot, loads_urdf, model_to_urdf
from robot_dynamics.models.lock import lock_joints
from robot_dynamics.models.validation import inertia_definiteness_problem, inertia_tolerance

pin = pytest.importorskip("pinocchio")
pytestmark = pytest.mark.filterwarnings("ignore::robot_dynamics.errors.ModelWarning")  # asserted where they matter

PANDA = EXAMPLE_ROBOTS / "panda_description/urdf/panda.urdf"
UR5 = EXAMPLE_ROBOTS / "ur_description/urdf/ur5_robot.urdf"


def quiet(text: str, **kwargs: object) -> RobotModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        return loads_urdf(text, **kwargs)  # type: ignore[arg-type]


def pinocchio_lock_q(full: object, positions: dict[str, float]) -> np.ndarray:
    q = pin.neutral(full)
    for name, value in positions.items():
        joint = full.joints[full.getJointId(name)]  # type: ignore[attr-defined]
        if joint.nq == 2:
            q[joint.idx_q : joint.idx_q + 2] = (math.cos(value), math.sin(value))
        else:
            q[joint.idx_q] = value
    return q


# ----------------------------------------------------------------------------------------------
# locked joints and mimic joints (URDF)
# ----------------------------------------------------------------------------------------------
def test_a_locked_chain_joint_becomes_fixed_like_pinocchio() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = load_robot(UR5, locked_joints={"elbow_joint": 0.7, "wrist_3_joint": -1.2})
    assert model.joint_names == ["shoulder_pan_joint", "shoulder_lift_joint", "wrist_1_joint", "wrist_2_joint"]
    assert model.tip_link == "wrist_3_link"  # ee_link and tool0 hang on it; wrist 3 is locked: rigid on wrist 2
    full = pin.buildModelFromUrdf(str(UR5))
    q = pinocchio_lock_q(full, {"elbow_joint": 0.7, "wrist_3_joint": -1.2})
    err_tau, err_m = compare_with_pinocchio(model, full, states=20, lock_q=q)
    assert err_tau < 1e-12 and err_m < 1e-12


MIMIC = SYNTHETIC.replace(
    "</robot>",
    """  <joint name="finger_a" type="prismatic">
    <parent link="l3"/><child link="finger_a_link"/><origin xyz="0.02 0.01 0" rpy="0 0 0.2"/>
    <axis xyz="0 1 0"/><limit lower="0" upper="0.05" effort="10" velocity="1"/>
  </joint>
  <link name="finger_a_link">
    <inertial><origin xyz="0 0.01 0.02"/><mass value="0.3"/>
      <inertia ixx="1e-4" ixy="0" ixz="0" iyy="2e-4" iyz="0" izz="1.5e-4"/></inertial>
  </link>
  <joint name="finger_b" type="prismatic">
    <parent link="l3"/><child link="finger_b_link"/><origin xyz="0.02 -0.01 0"/>
    <axis xyz="0 -1 0"/><limit lower="0" upper="0.05" effort="10" velocity="1"/>
    <mimic joint="finger_a" multiplier="1" offset="0.001"/>
  </joint>
  <link name="finger_b_link">
    <inertial><origin xyz="0.01 -0.01 0.02"/><mass value="0.25"/>
      <inertia ixx="1e-4" ixy="0" ixz="0" iyy="2e-4" iyz="0" izz="1.5e-4"/></inertial>
  </link>
  <joint name="finger_b_tip" type="revolute">
    <parent link="finger_b_link"/><child link="finger_b_tip_link"/><origin xyz="0 0 0.04"/>
    <axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="10" velocity="1"/>
    <mimic joint="finger_b" multiplier="-20" offset="0.1"/>
  </joint>
  <link name="finger_b_tip_link">
    <inertial><origin xyz="0 0 0.01"/><mass value="0.1"/>
      <inertia ixx="2e-5" ixy="0" ixz="0" iyy="2e-5" iyz="0" izz="1e-5"/></inertial>
  </link>
</robot>""",
)


def test_mimic_joints_follow_a_locked_master_transitively_like_pinocchio() -> None:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model = loads_urdf(MIMIC, tip_link="tool", locked_joints={"finger_a": 0.03})
    assert [str(w.message) for w in record] == ["<robot_description>: links without <inertial> are massless: cover"]
    assert model.joint_names == ["j1", "j2", "j3"]
    b = 0.03 + 0.001
    positions = {"finger_a": 0.03, "finger_b": b, "finger_b_tip": -20 * b + 0.1}
    full = pin.buildModelFromXML(MIMIC)
    err_tau, err_m = compare_with_pinocchio(model, full, states=20, lock_q=pinocchio_lock_q(full, positions))
    assert err_tau < 1e-12 and err_m < 1e-12
    # without the lock the fingers are held (finger_b at its offset, its tip following) and that is said
    with pytest.warns(ModelWarning, match=r"held at zero .*: finger_a, finger_b, finger_b_tip"):
        held = loads_urdf(MIMIC, tip_link="tool")
    positions = {"finger_a": 0.0, "finger_b": 0.001, "finger_b_tip": -20 * 0.001 + 0.1}
    err_tau, err_m = compare_with_pinocchio(held, full, states=5, lock_q=pinocchio_lock_q(full, positions))
    assert err_tau < 1e-12 and err_m < 1e-12


def test_mimic_errors_say_what_to_lock() -> None:
    with pytest.raises(ModelError) as info:
        quiet(MIMIC, tip_link="finger_b_tip_link")
    assert str(info.value) == (
        "<robot_description>: joint[finger_b]: mimic joints on the chain are unsupported (it follows 'finger_a'): "
        "lock it or 'finger_a' with locked_joints, or choose another tip_link"
    )
    with pytest.raises(ModelError) as info:
        quiet(MIMIC, tip_link="finger_a_link")
    assert str(info.value) == (
        "<robot_description>: joint[finger_b]: is a mimic joint following chain joint 'finger_a', so the links it "
        "carries move on the chain in a way a serial chain cannot express: lock 'finger_a' or 'finger_b' with "
        "locked_joints, or choose another tip_link"
    )
    # locking the mimic joint itself (its own follower follows it) makes the finger-a chain valid
    model = quiet(MIMIC, tip_link="finger_a_link", locked_joints={"finger_b": 0.02})
    assert model.joint_names == ["j1", "j2", "j3", "finger_a"]
    unknown_master = MIMIC.replace('<mimic joint="finger_a"', '<mimic joint="finger_c"')
    with pytest.warns(
        ModelWarning,
        match=r"joint\[finger_b\]/mimic@joint: unknown joint 'finger_c' \(did you mean 'finger_a'\?\); the <mimic> is "
        r"ignored",
    ):
        loads_urdf(unknown_master, tip_link="tool")


def test_mimic_cycles_and_explicit_locks_of_mimic_joints() -> None:
    cycle = MIMIC.replace(
        '<parent link="l3"/><child link="finger_a_link"/>',
        '<parent link="l3"/><child link="finger_a_link"/><mimic joint="finger_b_tip"/>',
    )
    held = quiet(cycle, tip_link="tool")  # a <mimic> loop off the chain terminates (held at the offsets)
    assert held.joint_names == ["j1", "j2", "j3"]
    locked = quiet(cycle, tip_link="tool", locked_joints={"finger_a": 0.01, "finger_b": 0.04})
    b = 0.04  # explicit wins over finger_a's mimic rule; the tip follows finger_b
    positions = {"finger_a": 0.01, "finger_b": b, "finger_b_tip": -20 * b + 0.1}
    full = pin.buildModelFromXML(MIMIC)
    err_tau, err_m = compare_with_pinocchio(locked, full, states=5, lock_q=pinocchio_lock_q(full, positions))
    assert err_tau < 1e-12 and err_m < 1e-12


@pytest.mark.parametrize(
    ("locked", "message"),
    [
        (
            {"panda_fnger_joint1": 0.0},
            "panda.urdf: locked_joints: unknown joint 'panda_fnger_joint1' (did you mean 'panda_finger_joint1'?) "
            "(movable joints: panda_joint1, ",
        ),
        (
            {"panda_hand_joint": 0.0},
            "panda.urdf: locked_joints[panda_hand_joint]: joint 'panda_hand_joint' is fixed: only revolute, "
            "continuous and prismatic joints lock",
        ),
        (
            {"panda_finger_joint1": 0.5},
            "panda.urdf: locked_joints[panda_finger_joint1]: 0.5 is outside the joint's limits [0, 0.04]",
        ),
        ({"panda_finger_joint1": "open"}, "panda.urdf: locked_joints[panda_finger_joint1]: expected a position"),
        ({"panda_finger_joint1": math.nan}, "panda.urdf: locked_joints[panda_finger_joint1]: must be finite"),
        ({"panda_finger_joint1": True}, "panda.urdf: locked_joints[panda_finger_joint1]: expected a position"),
        (["panda_finger_joint1"], "panda.urdf: locked_joints: expected a mapping joint name -> position"),
        (
            {f"panda_joint{k}": 0.0 for k in range(1, 8)} | {"panda_joint4": -1.0, "panda_finger_joint1": 0.0},
            "panda.urdf: tip_link: no movable joint below base link 'panda_link0'",
        ),
    ],
)
def test_locked_joint_errors_name_the_field(locked: dict[str, object], message: str) -> None:
    with pytest.raises(ModelError) as info:
        load_robot(PANDA, locked_joints=locked)  # type: ignore[arg-type]
    assert str(info.value).startswith(message), str(info.value)


def test_unknown_base_and_tip_suggest_a_link() -> None:
    with pytest.raises(
        ModelError, match=r"^panda\.urdf: tip_link: unknown link 'panda_hnd' \(did you mean 'panda_hand'"
    ):
        load_robot(PANDA, tip_link="panda_hnd")
    with pytest.raises(ModelError, match=r"^panda\.urdf: base_link: unknown link 'panda_link' \(did you mean"):
        load_robot(PANDA, base_link="panda_link", tip_link="panda_hand")
    # the leaves still differ in movable joints: the message lists them and asks for tip_link
    with pytest.raises(ModelError, match=r"reach different movable joints: .*'panda_leftfinger' .*; pass tip_link"):
        load_robot(PANDA, locked_joints={"panda_joint7": 0.0})


# ----------------------------------------------------------------------------------------------
# inertia checks with a tolerance
# ----------------------------------------------------------------------------------------------
def test_inertia_tolerance_is_relative_with_an_absolute_floor() -> None:
    rounding = np.diag([2.4e-35, 0.0, -2.4e-35])  # iCub's head: round-off, passes
    assert inertia_definiteness_problem(rounding) is None
    assert inertia_tolerance(np.diag([1.0, 2.0, 3.0])) == pytest.approx(6e-9 + 1e-12)
    assert inertia_definiteness_problem(np.diag([1.0, 1.0, -1.5e-9])) is None  # tolerance 2e-9 + 1e-12
    assert "not positive semi-definite" in str(inertia_definiteness_problem(np.diag([1.0, 1.0, -3e-9])))
    assert "not positive semi-definite" in str(inertia_definiteness_problem(np.diag([1e-6, 1e-6, -2e-12])))


def test_a_defect_merged_into_a_heavy_body_is_a_warning_naming_the_link() -> None:
    # the spacer (0.7 kg) is merged into l1 (2 kg) whose merged inertia stays positive definite
    text = edit('ixx="0.004" ixy="0"', 'ixx="-0.004" ixy="0"')
    with pytest.warns(ModelWarning) as record:
        loads_urdf(text, tip_link="tool")
    messages = [str(w.message) for w in record]
    assert (
        "<robot_description>: link[spacer]/inertial/inertia: is not positive semi-definite (principal moments "
        "-0.004, 0.002, 0.003); negligible: merged into the body of joint 'j1' (3 kg) the inertia is positive "
        "semi-definite" in messages
    )
    # a defect too large for the body it joins is an error naming the link
    worse = edit('ixx="0.004" ixy="0"', 'ixx="-0.4" ixy="0"')
    with pytest.raises(
        ModelError,
        match=r"link\[spacer\]/inertial/inertia: is not positive semi-definite \(principal moments -0\.4, .*\); merged "
        r"into the body of joint 'j1' the inertia still is not positive semi-definite",
    ):
        quiet(worse, tip_link="tool")


def test_a_defect_off_the_chain_is_a_warning() -> None:
    base_defect = SYNTHETIC.replace(
        '<mass value="5"/><inertia ixx="1.0" iyy="1.0" izz="1.0"',
        '<mass value="5"/><inertia ixx="-1.0" iyy="1.0" izz="1.0"',
    )
    assert base_defect != SYNTHETIC
    with pytest.warns(
        ModelWarning,
        match=r"link\[base_link\]/inertial/inertia: is not positive semi-definite .*; ignored: the link does not move "
        r"with the chain 'base_link' -> 'tool'",
    ):
        loads_urdf(base_defect, tip_link="tool")
    # TIAGo's 1 mg antennas fixed to the base
    with pytest.warns(ModelWarning, match=r"tiago\.urdf: link\[base_antenna_left_link\]/inertial/inertia: .*ignored"):
        load_robot(EXAMPLE_ROBOTS / "tiago_description/robots/tiago.urdf", tip_link="arm_7_link")


def test_warnings_point_at_the_caller_not_at_the_library() -> None:
    with pytest.warns(ModelWarning) as record:
        load_robot(PANDA, tip_link="panda_hand_tcp")
    assert record[0].filename == __file__
    assert "/" not in str(record[0].message).split(":")[0]


# ----------------------------------------------------------------------------------------------
# export flags: published-as-is inertias round-trip silently
# ----------------------------------------------------------------------------------------------
def test_export_marks_published_inertias_and_reload_is_silent(tmp_path: Path) -> None:
    model = load_robot("puma560")
    text = model_to_urdf(model)
    assert text.count('<robot_dynamics check_triangle_inequality="false"/>') == 2  # links 1 and 3
    path = tmp_path / "puma560.urdf"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = load_robot(path)
    assert again.joint_names == model.joint_names
    # without the flag the same data warn (the flag is what keeps it silent)
    with pytest.warns(ModelWarning, match=r"link\[link1\]/inertial/inertia: violates the triangle inequality"):
        loads_urdf(text.replace('<robot_dynamics check_triangle_inequality="false"/>', ""))
    with pytest.raises(
        ModelError, match=r"link\[link1\]/robot_dynamics@check_triangle_inequality: expected true or false, got 'no'"
    ):
        loads_urdf(text.replace('check_triangle_inequality="false"', 'check_triangle_inequality="no"', 1))


# ----------------------------------------------------------------------------------------------
# locked joints on DH robots and models
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "locked",
    [{"joint4": 0.3}, {"joint1": -0.4, "joint6": 1.1}, {"joint2": 0.2, "joint3": -0.5, "joint5": 0.9}],
    ids=["middle", "first-and-last", "three"],
)
def test_dh_locked_joints_match_pinocchio_reduced(locked: dict[str, float]) -> None:
    model = load_robot("puma560")
    reduced = load_robot("puma560", locked_joints=locked)
    assert reduced.dh is None and reduced.joint_names == [n for n in model.joint_names if n not in locked]
    assert set(reduced.named_poses) == set(model.named_poses)
    full = pinocchio_from_model(model, motor_inertia=False)
    for joint_id in range(1, full.njoints):
        full.addJointFrame(joint_id)  # buildReducedModel needs the joints' frames
    err_tau, err_m = compare_with_pinocchio(reduced, full, states=20, lock_q=pinocchio_lock_q(full, locked))
    assert err_tau < 1e-12 and err_m < 1e-12
    # the tool pose is unchanged at the same full configuration
    rng = np.random.default_rng(1)
    q = rng.uniform(-1, 1, model.dof)
    for name, value in locked.items():
        q[model.joint_names.index(name)] = value
    keep = [k for k, name in enumerate(model.joint_names) if name not in locked]
    np.testing.assert_allclose(link_frames(reduced, q[keep])[-1], link_frames(model, q)[-1], atol=1e-12)


def test_dh_locked_joint_errors() -> None:
    with pytest.raises(ModelError, match=r"^puma560\.yaml: locked_joints: unknown joint 'joint7' \(did you mean"):
        load_robot("puma560", locked_joints={"joint7": 0.0})
    with pytest.raises(ModelError, match=r"locked_joints\[joint2\]: 4 is outside the joint's limits"):
        load_robot("puma560", locked_joints={"joint2": 4.0})
    every = {f"joint{k}": 0.0 for k in range(1, 7)}
    with pytest.raises(ModelError, match=r"locked_joints: every joint is locked"):
        load_robot("puma560", locked_joints=every)
    model = load_robot("scara")
    assert load_robot(model, locked_joints={}) is model
    assert lock_joints(model, {"joint3": 0.1}).dof == 2
