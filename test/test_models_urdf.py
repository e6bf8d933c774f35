"""URDF loader: chain selection, body merging, safety, validation; agreement with Pinocchio.

The references are Pinocchio built from the same URDF (reduced to the chosen chain with the other
joints locked at zero) and, for the model data, the world-frame Newton-Euler of
``models_reference`` (independent of the engine under test).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS
from models_reference import compare_with_pinocchio, link_frames, pinocchio_q

from robot_dynamics.errors import ModelError
from robot_dynamics.model import JointFriction, RobotModel
from robot_dynamics.models import ModelWarning, load_robot, loads_urdf

pin = pytest.importorskip("pinocchio")

ROBOTS = EXAMPLE_ROBOTS

INERTIA = 'ixx="{0}" iyy="{0}" izz="{0}" ixy="0" ixz="0" iyz="0"'

SYNTHETIC = f"""<?xml version="1.0"?>
<robot name="synthetic">
  <link name="base_link">
    <inertial><mass value="5"/><inertia {INERTIA.format(1.0)}/></inertial>
  </link>
  <joint name="j1" type="revolute">
    <parent link="base_link"/><child link="l1"/>
    <origin xyz="0 0 0.3" rpy="0 0 0.1"/>
    <axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="50" velocity="3"/>
    <dynamics damping="0.5" friction="0.2"/>
  </joint>
  <link name="l1">
    <inertial>
      <origin xyz="0.05 0.01 0.1" rpy="0.3 -0.2 0.5"/>
      <mass value="2"/>
      <inertia ixx="0.02" ixy="0.001" ixz="0.002" iyy="0.03" iyz="0.003" izz="0.025"/>
    </inertial>
    <visual><geometry><mesh filename="package://nowhere/meshes/l1.dae"/></geometry></visual>
  </link>
  <joint name="l1_to_spacer" type="fixed">
    <parent link="l1"/><child link="spacer"/>
    <origin xyz="0.1 0 0.2" rpy="0.2 0.1 -0.3"/>
  </joint>
  <link name="spacer">
    <inertial>
      <origin xyz="0 0.02 0" rpy="1.0 0.5 0.2"/>
      <mass value="0.7"/>
      <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.003" iyz="0" izz="0.002"/>
    </inertial>
  </link>
  <joint name="sensor_mount" type="fixed">
    <parent link="l1"/><child link="sensor"/><origin xyz="0 0.1 0"/>
  </joint>
  <link name="sensor"><inertial><mass value="0.3"/><inertia {INERTIA.format(1e-4)}/></inertial></link>
  <joint name="j2" type="continuous">
    <parent link="spacer"/><child link="l2"/>
    <origin xyz="0 0 0.25" rpy="0 0.4 0"/>
    <axis xyz="0.6 0 0.8"/>
  </joint>
  <link name="l2">
    <inertial>
      <origin xyz="0.1 -0.02 0.03" rpy="-0.4 0.3 1.2"/>
      <mass value="1.2"/>
      <inertia ixx="0.01" ixy="-0.001" ixz="0.0005" iyy="0.012" iyz="0.0002" izz="0.006"/>
    </inertial>
  </link>
  <joint name="j3" type="prismatic">
    <parent link="l2"/><child link="l3"/>
    <origin xyz="0.2 0 0" rpy="0 0 0"/>
    <axis xyz="1 0 0"/>
    <limit lower="0" upper="0.3" effort="100" velocity="0.5"/>
  </joint>
  <link name="l3">
    <inertial>
      <origin xyz="0.05 0 0" rpy="0 0.1 0"/>
      <mass value="0.5"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.002"/>
    </inertial>
  </link>
  <joint name="cover_joint" type="fixed"><parent link="l3"/><child link="cover"/></joint>
  <link name="cover"><visual><geometry><box size="0.1 0.1 0.1"/></geometry></visual></link>
  <joint name="flange_joint" type="fixed">
    <parent link="l3"/><child link="flange"/><origin xyz="0.1 0 0" rpy="0 1.5707963267948966 0"/>
  </joint>
  <link name="flange">
    <inertial><origin xyz="0 0 0.01"/><mass value="0.2"/><inertia {INERTIA.format(2e-4)}/></inertial>
  </link>
  <joint name="tool_joint" type="fixed">
    <parent link="flange"/><child link="tool"/><origin xyz="0 0 0.05" rpy="0.1 0.2 0.3"/>
  </joint>
  <link name="tool"/>
</robot>
"""


def load_synthetic(text: str = SYNTHETIC, **kwargs: Any) -> RobotModel:
    kwargs.setdefault("tip_link", "tool")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        return loads_urdf(text, **kwargs)


# ----------------------------------------------------------------------------------------------
# features
# ----------------------------------------------------------------------------------------------
def test_synthetic_chain_merges_fixed_links_like_pinocchio() -> None:
    model = load_synthetic()
    assert model.name == "synthetic" and model.joint_names == ["j1", "j2", "j3"]
    assert model.base_link == "base_link" and model.tip_link == "tool"
    assert [j.link_name for j in model.joints] == ["l1", "l2", "l3"]
    # l1 + spacer (between actuated joints, rotated inertial) + sensor (side branch); base inertia ignored
    assert model.joints[0].link.mass == pytest.approx(3.0)
    assert model.joints[1].link.mass == pytest.approx(1.2)
    assert model.joints[2].link.mass == pytest.approx(0.7)  # l3 + flange after the last actuated joint
    j1, j2, j3 = model.joints
    assert j1.friction == JointFriction(viscous=0.5, coulomb=(0.2, -0.2))
    assert (j1.limits.lower, j1.limits.upper, j1.limits.effort, j1.limits.velocity) == (-2.0, 2.0, 50.0, 3.0)
    np.testing.assert_allclose(j1.axis, [0, 1, 0])
    assert j2.continuous and math.isinf(j2.limits.lower) and j2.kind == "revolute"
    np.testing.assert_allclose(j2.axis, [0.6, 0, 0.8])
    assert j3.is_prismatic and (j3.limits.lower, j3.limits.upper) == (0.0, 0.3)
    np.testing.assert_array_equal(model.gravity, [0, 0, -9.81])

    full = pin.buildModelFromXML(SYNTHETIC)
    err_tau, err_m = compare_with_pinocchio(model, full, states=100)
    assert err_tau < 1e-12 and err_m < 1e-12
    # the tool frame (fixed joints after the last actuated joint)
    data = full.createData()
    rng = np.random.default_rng(3)
    for _ in range(10):
        q = rng.uniform(-1, 1, 3)
        pin.framesForwardKinematics(full, data, pinocchio_q(full, q))
        tool = data.oMf[full.getFrameId("tool")].homogeneous
        np.testing.assert_allclose(link_frames(model, q)[-1], tool, atol=1e-12)


def test_root_inertia_is_ignored_and_massless_links_warn() -> None:
    heavier_root = SYNTHETIC.replace(
        f'<mass value="5"/><inertia {INERTIA.format(1.0)}/>',
        '<mass value="500"/><inertia ixx="9" iyy="9" izz="9" ixy="0" ixz="0" iyz="0"/>',
    )
    a, b = load_synthetic(), load_synthetic(heavier_root)
    assert a.fingerprint() == b.fingerprint()
    with pytest.warns(ModelWarning, match=r"links without <inertial> are massless: cover"):
        loads_urdf(SYNTHETIC, tip_link="tool")


@pytest.mark.filterwarnings("ignore:.*massless")
def test_sub_chain_and_base_pose() -> None:
    model = load_synthetic(base_link="l1", tip_link="l3")
    assert model.joint_names == ["j2", "j3"]
    whole = load_synthetic()  # the base pose is l1's pose in the root frame with j1 held at zero
    np.testing.assert_allclose(model.base, whole.base @ whole.joints[0].origin, atol=1e-15)
    # l3's tool is the l3 frame itself; the flange stays part of l3's body
    np.testing.assert_allclose(model.tool, np.eye(4))
    assert model.joints[-1].link.mass == pytest.approx(0.7)
    with pytest.warns(ModelWarning, match=r"joints above base link 'l1' are held at zero: j1"):
        loads_urdf(SYNTHETIC, base_link="l1", tip_link="l3")
    # Pinocchio with j1 locked at zero (gravity in the root frame) sees the same dynamics
    err_tau, err_m = compare_with_pinocchio(model, pin.buildModelFromXML(SYNTHETIC), states=20)
    assert err_tau < 1e-12 and err_m < 1e-12


def test_package_uris_are_not_resolved_and_yaml_path_detection(tmp_path: Path) -> None:
    path = tmp_path / "synthetic.urdf"
    path.write_text(SYNTHETIC)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        model = load_robot(path, tip_link="tool")
        model_no_suffix = load_robot(str(path).removesuffix(".urdf") + ".urdf", tip_link="tool")
    assert model.source == str(path) and model.fingerprint() == model_no_suffix.fingerprint()
    other = tmp_path / "robot_description"
    other.write_text(SYNTHETIC)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        assert load_robot(other, tip_link="tool").dof == 3


def test_panda_fingers_are_ambiguous_until_locked() -> None:
    path = ROBOTS / "panda_description/urdf/panda.urdf"
    with pytest.raises(ModelError) as info:
        load_robot(path)
    assert str(info.value) == (
        "panda.urdf: tip_link: the chain is ambiguous: the leaf links below 'panda_link0' reach different movable "
        "joints: 'panda_leftfinger' (8 movable joints), 'panda_rightfinger' (8 movable joints); pass tip_link "
        "(or lock the joints where they differ with locked_joints)"
    )
    with pytest.warns(ModelWarning, match=r"held at zero .*panda_finger_joint1, panda_finger_joint2"):
        model = load_robot(path, tip_link="panda_hand_tcp")
    assert model.dof == 7
    # finger joint 2 mimics finger joint 1: locking joint 1 locks both, and the three leaves share the chain
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        locked = load_robot(path, locked_joints={"panda_finger_joint1": 0.0})
    assert locked.dof == 7 and locked.tip_link == "panda_hand"
    assert locked.joints[-1].link.mass == pytest.approx(model.joints[-1].link.mass)
    with pytest.raises(
        ModelError,
        match=r"panda\.urdf: joint\[panda_finger_joint2\]: mimic joints on the chain are unsupported \(it follows "
        r"'panda_finger_joint1'\): lock it or 'panda_finger_joint1' with locked_joints, or choose another tip_link",
    ):
        load_robot(path, tip_link="panda_rightfinger")
    with pytest.raises(
        ModelError,
        match=r"joint\[panda_finger_joint2\]: is a mimic joint following chain joint 'panda_finger_joint1', so the "
        r"links it carries move on the chain",
    ):
        load_robot(path, tip_link="panda_leftfinger")
    # an explicit position: both fingers open by 4 cm (mimic multiplier 1), Pinocchio locked the same way
    opened = load_robot(path, locked_joints={"panda_finger_joint1": 0.04})
    full = pin.buildModelFromUrdf(str(path))
    q = pin.neutral(full)
    for name in ("panda_finger_joint1", "panda_finger_joint2"):
        q[full.joints[full.getJointId(name)].idx_q] = 0.04
    err_tau, err_m = compare_with_pinocchio(opened, full, states=10, lock_q=q)
    assert err_tau < 1e-12 and err_m < 1e-12


# ----------------------------------------------------------------------------------------------
# example-robot-data arms against Pinocchio (acceptance)
# ----------------------------------------------------------------------------------------------
ARMS = [
    # (file, tip_link): z1 has a fixed joint between actuated joints, baxter rotated inertial frames,
    # kinova continuous joints, panda/talos/baxter grippers held at zero
    ("panda_description/urdf/panda.urdf", "panda_hand_tcp"),
    ("ur_description/urdf/ur5_robot.urdf", "tool0"),
    ("z1_description/urdf/z1.urdf", None),
    ("talos_data/robots/talos_left_arm.urdf", "gripper_left_base_link"),
    ("kinova_description/robots/kinova.urdf", "j2s6s200_end_effector"),
    ("baxter_description/urdf/baxter.urdf", "left_gripper"),
    ("so_arm_description/urdf/so100.urdf", None),
]


@pytest.mark.parametrize(("file", "tip"), ARMS, ids=[Path(f).stem for f, _ in ARMS])
def test_example_robot_data_arms_agree_with_pinocchio(file: str, tip: str | None) -> None:
    path = ROBOTS / file
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        model = load_robot(path, tip_link=tip)
    assert model.dof >= 6
    err_tau, err_m = compare_with_pinocchio(model, pin.buildModelFromUrdf(str(path)), states=100)
    assert err_tau < 1e-9, err_tau
    assert err_m < 1e-9, err_m


def test_acceptance_set_covers_fixed_joints_between_actuated_ones_and_rotated_inertials() -> None:
    from lxml import etree

    z1 = etree.parse(str(ROBOTS / "z1_description/urdf/z1.urdf")).getroot()
    fixed_between = [
        j.get("name")
        for j in z1.findall("joint")
        if j.get("type") == "fixed" and j.find("parent").get("link") == "link06"
    ]
    assert fixed_between == ["gripperStator"]
    baxter = etree.parse(str(ROBOTS / "baxter_description/urdf/baxter.urdf")).getroot()
    rotated = [
        link.get("name")
        for link in baxter.findall("link")
        if link.find("inertial/origin") is not None
        and any(float(v) != 0.0 for v in link.find("inertial/origin").get("rpy", "0 0 0").split())
    ]
    assert "left_gripper_base_link" in rotated


# ----------------------------------------------------------------------------------------------
# safety
# ----------------------------------------------------------------------------------------------
def test_external_entities_are_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-7731")
    in_text = f"""<?xml version="1.0"?>
<!DOCTYPE robot [<!ENTITY xxe SYSTEM "file://{secret}">]>
<robot name="evil"><link name="a">&xxe;</link><link name="b"/>
  <joint name="j" type="revolute"><parent link="a"/><child link="b"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""
    in_attribute = in_text.replace('<robot name="evil">', '<robot name="&xxe;">')
    parameter = f"""<?xml version="1.0"?>
<!DOCTYPE robot [<!ENTITY % p SYSTEM "file://{secret}"> %p;]>
<robot name="evil"><link name="a"/></robot>"""
    for text, message in (
        (in_text, "<robot_description>: DOCTYPE: XML entity declarations are not allowed in a URDF (found 'xxe')"),
        (in_attribute, "<robot_description>: not well-formed XML"),
        (parameter, "<robot_description>: DOCTYPE: XML entity declarations are not allowed in a URDF (found 'p')"),
    ):
        with pytest.raises(ModelError) as info:
            loads_urdf(text)
        assert message in str(info.value)
        assert "TOP-SECRET" not in str(info.value)
    path = tmp_path / "evil.urdf"
    path.write_text(in_text)
    with pytest.raises(ModelError, match=r"evil\.urdf: DOCTYPE: XML entity declarations are not allowed") as info:
        load_robot(path)
    assert "TOP-SECRET" not in str(info.value)


# ----------------------------------------------------------------------------------------------
# failures
# ----------------------------------------------------------------------------------------------
def edit(old: str, new: str) -> str:
    assert old in SYNTHETIC, old
    return SYNTHETIC.replace(old, new, 1)


URDF_FAILURES = [
    ("<robot", "not well-formed XML"),
    (
        '<?xml version="1.0"?><model name="x"/>',
        "<robot_description>: <model>: the root element of a URDF must be <robot>",
    ),
    (
        '<robot name="x" xmlns:xacro="http://www.ros.org/wiki/xacro"><xacro:macro name="m"/></robot>',
        "this is a xacro file",
    ),
    (edit('<robot name="synthetic">', "<robot>"), "<robot>: the robot has no name attribute"),
    (edit('<mass value="2"/>', '<mass value="two"/>'), "link[l1]/inertial/mass@value: not a number: 'two'"),
    (edit('<mass value="2"/>', '<mass value="-2"/>'), "link[l1]/inertial/mass@value: negative mass -2 kg"),
    (edit('<mass value="2"/>', ""), "link[l1]/inertial/mass: an <inertial> needs a <mass value=...>"),
    (edit('ixx="0.02" ixy="0.001"', 'ixy="0.001"'), "link[l1]/inertial/inertia@ixx: required attribute is missing"),
    (
        edit('ixx="0.02" ixy="0.001"', 'ixx="nan" ixy="0.001"'),
        "link[l1]/inertial/inertia@ixx: must be finite, got 'nan'",
    ),
    (
        edit('ixx="0.01" ixy="-0.001"', 'ixx="-0.01" ixy="-0.001"'),
        "link[l2]/inertial/inertia: is not positive semi-definite (principal moments -0.0100",
    ),
    (
        edit('<origin xyz="0 0 0.3" rpy="0 0 0.1"/>', '<origin xyz="0 0.3" rpy="0 0 0.1"/>'),
        "joint[j1]/origin@xyz: expected 3 numbers, got '0 0.3'",
    ),
    (
        edit('<limit lower="-2" upper="2"', '<limit lower="2" upper="-2"'),
        "joint[j1]/limit: lower limit 2 > upper limit -2",
    ),
    (edit('effort="50"', 'effort="-50"'), "joint[j1]/limit@effort: must be >= 0, got -50"),
    (edit('<dynamics damping="0.5"', '<dynamics damping="-0.5"'), "joint[j1]/dynamics@damping: must be >= 0, got -0.5"),
    (edit('<axis xyz="0 1 0"/>', '<axis xyz="0 0 0"/>'), "joint[j1]/axis@xyz: the joint axis must be non-zero"),
    (
        edit('name="j1" type="revolute"', 'name="j1" type="revolve"'),
        "joint[j1]@type: 'revolve' is not a URDF joint type",
    ),
    (
        edit('<child link="l2"/>', '<child link="l22"/>'),
        "joint[j2]/child@link: unknown link 'l22' (did you mean 'l2'?)",
    ),
    (edit('<parent link="l2"/><child link="l3"/>', '<parent link="l2"/>'), "joint[j3]/child: missing <child link=...>"),
    (edit('<link name="sensor">', '<link name="l1">'), "link[l1]: duplicate link name"),
    (edit('name="j3" type="prismatic"', 'name="j2" type="prismatic"'), "joint[j2]: duplicate joint name"),
    (
        edit('<parent link="l1"/><child link="sensor"/>', '<parent link="l1"/><child link="l2"/>'),
        "link[l2]: has two parent joints ('sensor_mount', 'j2'): a URDF must be a tree",
    ),
    (edit('name="j2" type="continuous"', 'name="j2" type="floating"'), "joint[j2]: floating joints are unsupported"),
    (edit('name="j2" type="continuous"', 'name="j2" type="planar"'), "joint[j2]: planar joints are unsupported"),
    (
        edit('<axis xyz="0.6 0 0.8"/>', '<axis xyz="0.6 0 0.8"/><mimic joint="j1" multiplier="2"/>'),
        "joint[j2]: mimic joints on the chain are unsupported (it follows 'j1')",
    ),
    (
        edit("</robot>", '<robot_dynamics><joint name="j9"><motor inertia="1e-4"/></joint></robot_dynamics></robot>'),
        "<robot_dynamics>/joint[j9]: no such joint in the file (chain joints: j1, j2, j3)",
    ),
    (
        edit(
            "</robot>",
            '<robot_dynamics><joint name="j1"><motor inertia="1e-4" gear_ratio="0"/></joint></robot_dynamics></robot>',
        ),
        "<robot_dynamics>/joint[j1]/motor: needs inertia >= 0, gear_ratio != 0, viscous >= 0",
    ),
    (
        edit("</robot>", '<robot_dynamics><gravity xyz="0 0"/></robot_dynamics></robot>'),
        "<robot_dynamics>/gravity@xyz: expected 3 numbers, got '0 0'",
    ),
    (
        edit('<link name="tool"/>', '<link name="tool"/><link name="island"/>'),
        "base_link: the URDF has several root links ['base_link', 'island']: pass base_link",
    ),
]


@pytest.mark.parametrize(("text", "message"), URDF_FAILURES, ids=[m[:60] for _, m in URDF_FAILURES])
def test_invalid_urdf_names_element(text: str, message: str) -> None:
    with pytest.raises(ModelError) as info:
        load_synthetic(text)
    assert message in str(info.value)
    assert str(info.value).startswith("<robot_description>: ")


def test_default_tip_skips_rigid_leaves_and_merges_leaves_sharing_the_chain() -> None:
    # 'sensor' (on l1) has a subset of the movable joints: rigidly on the chain, not a candidate;
    # 'cover' and 'tool' share j1, j2, j3: the tip is their deepest common link, l3
    default = load_synthetic(tip_link=None)
    assert default.tip_link == "l3" and default.joint_names == ["j1", "j2", "j3"]
    np.testing.assert_array_equal(default.tool, np.eye(4))
    to_tool = load_synthetic()
    for a, b in zip(default.joints, to_tool.joints, strict=True):
        assert a.link.mass == b.link.mass
        np.testing.assert_array_equal(a.link.inertia, b.link.inertia)
        np.testing.assert_array_equal(a.origin, b.origin)


def test_chain_selection_errors() -> None:
    sensor_moves = edit('<joint name="sensor_mount" type="fixed">', '<joint name="sensor_mount" type="continuous">')
    with pytest.raises(ModelError) as info:
        load_synthetic(sensor_moves, tip_link=None)
    assert str(info.value) == (
        "<robot_description>: tip_link: the chain is ambiguous: the leaf links below 'base_link' reach different "
        "movable joints: 'sensor' (2 movable joints), 'cover' (3 movable joints), 'tool' (3 movable joints); pass "
        "tip_link (or lock the joints where they differ with locked_joints)"
    )
    # locking the sensor joint (or the chain's j2 and j3) resolves it
    assert load_synthetic(sensor_moves, tip_link=None, locked_joints={"sensor_mount": 0.3}).tip_link == "l3"
    assert load_synthetic(sensor_moves, tip_link=None, locked_joints={"j2": 0.0, "j3": 0.1}).tip_link == "sensor"
    with pytest.raises(ModelError, match=r"tip_link: unknown link 'tol' \(did you mean 'tool'\?\)"):
        loads_urdf(SYNTHETIC, tip_link="tol")
    with pytest.raises(ModelError, match=r"base_link: unknown link 'bas_link' \(did you mean 'base_link'\?\)"):
        loads_urdf(SYNTHETIC, base_link="bas_link", tip_link="tool")
    with pytest.raises(ModelError, match=r"tip_link: link 'sensor' is not below base link 'l2'"):
        loads_urdf(SYNTHETIC, base_link="l2", tip_link="sensor")
    with pytest.raises(ModelError, match=r"tip_link: no movable joint between 'l3' and 'tool'"):
        loads_urdf(SYNTHETIC, base_link="l3", tip_link="tool")
    cycle = (
        '<robot name="c"><link name="a"/><link name="b"/>'
        '<joint name="x" type="fixed"><parent link="a"/><child link="b"/></joint>'
        '<joint name="y" type="fixed"><parent link="b"/><child link="a"/></joint></robot>'
    )
    with pytest.raises(ModelError, match=r"the joints form a cycle through links \['a', 'b'\]"):
        loads_urdf(cycle)


@pytest.mark.filterwarnings("ignore:.*massless")
def test_triangle_inequality_violation_in_a_urdf_is_a_warning() -> None:
    text = edit(
        'ixx="0.02" ixy="0.001" ixz="0.002" iyy="0.03" iyz="0.003" izz="0.025"',
        'ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.05"',
    )
    with pytest.warns(
        ModelWarning, match=r"link\[l1\]/inertial/inertia: violates the triangle inequality .*0\.01 \+ 0\.01 < 0\.05"
    ):
        loads_urdf(text, tip_link="tool")
