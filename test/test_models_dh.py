"""DH YAML loader: every feature, and every validation failure with its message."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
from models_reference import link_frames

from robot_dynamics.errors import ModelError
from robot_dynamics.model import (
    BearingFriction,
    DHRow,
    DHTable,
    Inertial,
    JointFriction,
    Motor,
    TransmissionFriction,
    dh_joint_frames,
    from_dh,
    rot_x,
    rpy_matrix,
    trans,
)
from robot_dynamics.models import load_robot, loads_dh_yaml

BASE = """\
name: test_arm
convention: standard
joints:
  - name: j1
    type: revolute
    a: 0.4
    alpha: pi/2
    d: 0.1
    theta: 0.2
    limits: {lower: -2, upper: 2}
    link: {mass: 2.0, com: [-0.2, 0.01, 0.02], inertia: [0.01, 0.03, 0.03, 0.001, 0.002, 0.003]}
  - name: j2
    type: revolute
    a: 0.3
    link: {mass: 1.0, com: [-0.15, 0, 0], inertia: [0.001, 0.008, 0.008]}
"""


def load(text: str) -> object:
    return loads_dh_yaml(textwrap.dedent(text), source="arm.yaml")


# ----------------------------------------------------------------------------------------------
# features
# ----------------------------------------------------------------------------------------------
def test_standard_dh_transforms_inertials_into_joint_frames() -> None:
    model = load(BASE)
    table = DHTable("standard", (DHRow("revolute", 0.4, math.pi / 2, 0.1, 0.2), DHRow("revolute", 0.3, 0.0, 0.0, 0.0)))
    links = [
        Inertial.from_components(2.0, [-0.2, 0.01, 0.02], 0.01, 0.03, 0.03, 0.001, 0.002, 0.003),
        Inertial.from_components(1.0, [-0.15, 0, 0], 0.001, 0.008, 0.008),
    ]
    expected = from_dh("test_arm", table, links)
    _, link_poses, _ = dh_joint_frames(table)
    for got, want, pose, raw in zip(model.joints, expected.joints, link_poses, links, strict=True):
        np.testing.assert_allclose(got.origin, want.origin, atol=1e-15)
        np.testing.assert_allclose(got.link.com, want.link.com, atol=1e-15)
        np.testing.assert_allclose(got.link.inertia, want.link.inertia, atol=1e-15)
        # the DH link frame is not the joint frame: the data were moved, not copied
        np.testing.assert_allclose(got.link.com, pose[:3, :3] @ raw.com + pose[:3, 3], atol=1e-15)
    assert not np.allclose(model.joints[0].link.com, links[0].com)
    # product-of-inertia order [Ixx, Iyy, Izz, Ixy, Iyz, Ixz] (checked in the DH frame)
    rot = link_poses[0][:3, :3]
    raw_inertia = rot.T @ model.joints[0].link.inertia @ rot
    assert raw_inertia[0, 1] == pytest.approx(0.001) and raw_inertia[1, 2] == pytest.approx(0.002)
    assert raw_inertia[0, 2] == pytest.approx(0.003)
    assert model.joint_names == ["j1", "j2"] and model.dof == 2
    assert model.dh is not None and model.dh.convention == "standard"
    assert model.joints[0].limits.lower == -2.0 and model.joints[0].limits.upper == 2.0
    assert math.isinf(model.joints[1].limits.upper)
    np.testing.assert_array_equal(model.gravity, [0.0, 0.0, -9.81])
    assert model.source == "arm.yaml" and model.motor_inertia_in_d


def test_modified_dh_keeps_link_data_in_frame_i_and_prismatic_offset() -> None:
    model = load(
        """\
        name: rp
        convention: modified
        joints:
          - type: revolute
            d: 0.3
            link: {mass: 1.0, com: [0.1, 0.2, 0.3], inertia: [0.01, 0.02, 0.025, 0.001, 0.002, 0.003]}
          - type: prismatic
            alpha: -pi/2
            a: 0.1
            theta: 0.5
            d: 0.05
            limits: {lower: 0, upper: 0.5}
            link: {mass: 1.5, com: [0, 0, -0.2], inertia: [0.02, 0.02, 0.001]}
        """
    )
    np.testing.assert_array_equal(model.joints[0].link.com, [0.1, 0.2, 0.3])
    assert model.joints[0].link.inertia[1, 2] == 0.002
    assert model.joints[1].is_prismatic
    expected = (
        rot_x(-math.pi / 2)
        @ trans(x=0.1)
        @ np.array(
            [[math.cos(0.5), -math.sin(0.5), 0, 0], [math.sin(0.5), math.cos(0.5), 0, 0], [0, 0, 1, 0.05], [0, 0, 0, 1]]
        )
    )
    np.testing.assert_allclose(model.joints[1].origin, expected, atol=1e-15)
    frames = link_frames(model, np.array([0.0, 0.2]))
    np.testing.assert_allclose(
        frames[1][:3, 3], frames[0][:3, :3] @ (expected[:3, 3] + expected[:3, 2] * 0.2) + [0, 0, 0.3]
    )


def test_degrees_base_tool_named_poses_continuous_and_names() -> None:
    deg = load(
        """\
        name: tilted
        convention: standard
        angle_unit: deg
        base: {xyz: [0, 0, 0.5], rpy: [0, 90, 0]}
        tool: {xyz: [0, 0, 0.12], rpy: [0, 0, 45]}
        motor_inertia_in_d: false
        dof: 2
        joints:
          - type: revolute
            a: 0.3
            alpha: 90
            theta: 10
            limits: {lower: -170, upper: 170, velocity: 180}
            link: {name: upper, mass: 1.0, com: [-0.15, 0, 0], inertia: [0.001, 0.008, 0.008]}
          - type: continuous
            a: 0.2
            link: {name: fore}
        named_poses:
          home: [0, 0]
          up: [90, -45]
        """
    )
    rad = load(
        """\
        name: tilted
        convention: standard
        base: {xyz: [0, 0, 0.5], rpy: [0, pi/2, 0]}
        tool: {xyz: [0, 0, 0.12], rpy: [0, 0, pi/4]}
        joints:
          - type: revolute
            a: 0.3
            alpha: pi/2
            theta: 10*pi/180
            link: {mass: 1.0, com: [-0.15, 0, 0], inertia: [0.001, 0.008, 0.008]}
          - type: revolute
            a: 0.2
        """
    )
    q = np.array([0.3, -1.2])
    for a, b in zip(link_frames(deg, q), link_frames(rad, q), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-14)
    np.testing.assert_allclose(deg.base[:3, :3], rpy_matrix(0, math.pi / 2, 0), atol=1e-15)
    np.testing.assert_allclose(deg.named_poses["up"], [math.pi / 2, -math.pi / 4])
    assert deg.joints[0].limits.lower == pytest.approx(-170 * math.pi / 180)
    assert deg.joints[0].limits.velocity == pytest.approx(math.pi)
    assert deg.joints[1].continuous and not deg.joints[0].continuous
    assert [j.link_name for j in deg.joints] == ["upper", "fore"]
    assert deg.joints[1].link.mass == 0.0
    assert deg.joint_names == ["joint1", "joint2"]
    assert not deg.motor_inertia_in_d


def test_motor_and_friction_blocks() -> None:
    model = load(
        """\
        name: blocks
        convention: modified
        joints:
          - type: revolute
            motor: {Jm: 200e-6, G: -62.6111, B: 1.48e-3, Tc: [0.395, -0.435]}
            friction:
              viscous: 0.05
              coulomb: 0.2
              static: [0.3, -0.25]
              stribeck_velocity: 0.05
              smoothing_velocity: 0.02
              bearing: {kind: journal, mu: 0.1, radius: 0.08, spacing: 0.16}
              transmission:
                efficiency: [[0.0, 0.3], [0.5, 0.8], [1.0, 0.85]]
                breakaway: 5.5
                max_torque: 186.4
          - type: prismatic
            motor: {Jm: 0.782}
            friction: {coulomb: [0.4, -0.1], bearing: {kind: thrust, mu: 0.05, radius: 0.02}}
        """
    )
    j1, j2 = model.joints
    assert j1.motor == Motor(inertia=200e-6, gear_ratio=-62.6111, viscous=1.48e-3, coulomb=(0.395, -0.435))
    assert j1.friction == JointFriction(
        viscous=0.05,
        coulomb=(0.2, -0.2),
        static=(0.3, -0.25),
        stribeck_velocity=0.05,
        smoothing_velocity=0.02,
        bearing=BearingFriction("journal", 0.1, 0.08, 0.16),
        transmission=TransmissionFriction(((0.0, 0.3), (0.5, 0.8), (1.0, 0.85)), 5.5, 186.4),
    )
    assert j2.motor == Motor(inertia=0.782, gear_ratio=1.0)
    assert j2.friction.coulomb == (0.4, -0.1) and j2.friction.bearing == BearingFriction("thrust", 0.05, 0.02, 0.0)
    assert model.has_motors and model.has_friction


def test_check_triangle_inequality_can_be_switched_off_per_link() -> None:
    model = load(
        """\
        name: lumped
        convention: standard
        joints:
          - type: revolute
            link: {inertia: [0, 0.35, 0], check_triangle_inequality: false}
        """
    )
    assert model.joints[0].link.inertia.trace() == pytest.approx(0.35)


def test_load_robot_reads_yaml_files_by_path(tmp_path: Path) -> None:
    path = tmp_path / "my_arm.yaml"
    path.write_text(BASE)
    model = load_robot(path)
    assert model.name == "test_arm" and model.source == str(path)
    assert load_robot(str(path)).dof == 2
    other = tmp_path / "arm_without_suffix"
    other.write_text(BASE)
    assert load_robot(other).dof == 2


# ----------------------------------------------------------------------------------------------
# failures: each names the file and the field
# ----------------------------------------------------------------------------------------------
def replace(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


FAILURES = [
    (
        replace("convention: standard\n", "convention: standard\ngravty: [0, 0, -9.81]\n"),
        "arm.yaml: gravty: unknown key (did you mean 'gravity'?)",
    ),
    (replace("{mass: 2.0,", "{mas: 2.0,"), "arm.yaml: joints[0].link.mas: unknown key (did you mean 'mass'?)"),
    (replace("    a: 0.4\n", "    a: 0.4\n    alhpa: 1\n"), "joints[0].alhpa: unknown key (did you mean 'alpha'?)"),
    (replace("convention: standard\n", ""), "arm.yaml: convention: required key is missing"),
    (replace("  - name: j2\n    type: revolute\n", "  - name: j2\n"), "joints[1].type: required key is missing"),
    (
        replace("convention: standard", "convention: standart"),
        "convention: 'standart' is not one of modified, standard (did you mean 'standard'?)",
    ),
    (
        replace("type: revolute", "type: revolut"),
        "joints[0].type: 'revolut' is not one of continuous, prismatic, revolute (did you mean 'revolute'?)",
    ),
    (replace("mass: 2.0", "mass: heavy"), "joints[0].link.mass: expected a number, got str 'heavy'"),
    (replace("mass: 2.0", "mass: true"), "joints[0].link.mass: expected a number, got bool True"),
    (replace("a: 0.4", "a: [0.4]"), "joints[0].a: expected a number, got list [0.4]"),
    (replace("alpha: pi/2", "alpha: pi/x"), "joints[0].alpha: expected a number, got str 'pi/x'"),
    (replace("mass: 2.0", "mass: .nan"), "joints[0].link.mass: must be a finite number, got nan"),
    (
        replace("com: [-0.2, 0.01, 0.02]", "com: [-0.2, .inf, 0.02]"),
        "joints[0].link.com[1]: must be a finite number, got inf",
    ),
    (replace("mass: 2.0", "mass: -1"), "arm.yaml: joints[0].link.mass: negative mass -1 kg"),
    (
        replace("inertia: [0.001, 0.008, 0.008]", "inertia: [1, 1, 1, 2, 0, 0]"),
        "joints[1].link.inertia: is not positive semi-definite (principal moments -1, 1, 3)",
    ),
    (
        replace("inertia: [0.001, 0.008, 0.008]", "inertia: [0.066, 0.086, 0.0125]"),
        "arm.yaml: joints[1].link.inertia: violates the triangle inequality (Ixx + Iyy >= Izz",
    ),
    (
        replace("inertia: [0.001, 0.008, 0.008]", "inertia: [0.001, 0.008, 0.008, 0]"),
        "joints[1].link.inertia: expected 3 or 6 numbers, got 4",
    ),
    (replace("com: [-0.15, 0, 0]", "com: [-0.15, 0]"), "joints[1].link.com: expected 3 numbers, got 2"),
    (
        replace("convention: standard\n", "convention: standard\ndof: 3\n"),
        "arm.yaml: dof: dof is 3 but 2 joints are listed",
    ),
    (BASE + "named_poses: {home: [0, 0, 0]}\n", "named_poses.home: expected 2 numbers, got 3"),
    (BASE + "named_poses: {far: [3, 0]}\n", "named_poses.far[0]: 3 is outside the limits of joint 'j1' [-2, 2]"),
    (replace("name: j2", "name: j1"), "joints[1].name: duplicate joint name 'j1' (also joints[0])"),
    (
        replace("{mass: 1.0,", "{name: link1, mass: 1.0,").replace("{mass: 2.0,", "{name: link1, mass: 2.0,"),
        "joints[1].link.name: duplicate link name 'link1'",
    ),
    (replace("{mass: 1.0,", "{name: tool, mass: 1.0,"), "joints[1].link.name: 'tool' is reserved"),
    (
        replace("{lower: -2, upper: 2}", "{lower: 1, upper: -1}"),
        "arm.yaml: joints[0].limits: lower limit 1 > upper limit -1",
    ),
    (
        replace("{lower: -2, upper: 2}", "{lower: -2, upper: 2, velocity: 0}"),
        "joints[0].limits.velocity: must be > 0, got 0",
    ),
    (replace("type: revolute", "type: continuous"), "joints[0].limits: a continuous joint has no position limits"),
    (replace("    a: 0.3\n", "    a: 0.3\n    motor: {G: 2}\n"), "joints[1].motor.Jm: required key is missing"),
    (
        replace("    a: 0.3\n", "    a: 0.3\n    motor: {Jm: 1e-4, G: 0}\n"),
        "joints[1].motor.G: gear ratio must be non-zero",
    ),
    (
        replace("    a: 0.3\n", "    a: 0.3\n    motor: {Jm: 1e-4, Tc: [-0.1, 0.1]}\n"),
        "joints[1].motor.Tc[0]: the positive-direction level must be >= 0, got -0.1",
    ),
    (
        replace("    a: 0.3\n", "    a: 0.3\n    friction: {coulomb: -0.2}\n"),
        "joints[1].friction.coulomb: a symmetric level must be >= 0, got -0.2",
    ),
    (
        replace("    a: 0.3\n", "    a: 0.3\n    friction: {static: 0.3}\n"),
        "joints[1].friction.stribeck_velocity: a static friction level needs stribeck_velocity > 0",
    ),
    (
        replace("    a: 0.3\n", "    a: 0.3\n    friction: {smoothing_velocity: 0}\n"),
        "joints[1].friction.smoothing_velocity: must be > 0, got 0",
    ),
    (
        replace("    a: 0.3\n", "    a: 0.3\n    friction: {bearing: {kind: journal, mu: 0.1, radius: 0.1}}\n"),
        "joints[1].friction.bearing.spacing: a journal bearing needs spacing > 0",
    ),
    (
        replace("    a: 0.3\n", "    a: 0.3\n    friction: {bearing: {kind: roller, mu: 0.1}}\n"),
        "joints[1].friction.bearing.kind: 'roller' is not one of journal, linear, thrust",
    ),
    (
        replace(
            "    a: 0.3\n",
            "    a: 0.3\n    friction: {transmission: {efficiency: [[0, 0.5], [1, 1.2]], breakaway: 1, max_torque: 9}}"
            "\n",
        ),
        "joints[1].friction.transmission.efficiency[1][1]: efficiency must be in (0, 1], got 1.2",
    ),
    (
        replace(
            "    a: 0.3\n",
            "    a: 0.3\n    friction: {transmission: {efficiency: [[0.5, 0.5], [0.2, 0.6]], breakaway: 1,"
            " max_torque: 9}}"
            "\n",
        ),
        "joints[1].friction.transmission.efficiency[1][0]: torque ratios must be strictly ascending",
    ),
    (
        replace("    a: 0.3\n", "    a: 0.3\n    friction: {transmission: {efficiency: [[0, 0.5]], breakaway: 1}}\n"),
        "joints[1].friction.transmission.max_torque: required key is missing",
    ),
    (
        replace("name: test_arm", "name: test_arm\nname: again"),
        "arm.yaml: line 2, column 1: invalid YAML: duplicate key 'name'",
    ),
    (replace("joints:\n", "joints: [\n"), "arm.yaml: line"),
    ("name: x\nconvention: standard\njoints: []\n", "arm.yaml: joints: a robot needs at least one joint"),
    ("name: x\nconvention: standard\njoints: {a: 1}\n", "arm.yaml: joints: expected a list, got dict"),
    ("- just\n- a list\n", "arm.yaml: expected a mapping (key: value block), got list"),
    (replace("  - name: j2\n", "  - 7\n  - name: j2\n"), "joints[1]: expected a mapping (key: value block), got int 7"),
    (BASE + "tool: {xyz: [0, 0], rpy: [0, 0, 0]}\n", "arm.yaml: tool.xyz: expected 3 numbers, got 2"),
    (BASE + "motor_inertia_in_d: yes please\n", "motor_inertia_in_d: expected true or false, got str 'yes please'"),
    (BASE + "smooth_kind: cubic\n", "arm.yaml: smooth_kind: 'cubic' is not one of linear, tanh"),
]


def test_smooth_kind_names_the_direction_function_of_the_smooth_friction() -> None:
    assert load(BASE).smooth_kind == "tanh"  # type: ignore[attr-defined]
    assert load(BASE + "smooth_kind: linear\n").smooth_kind == "linear"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("text", "message"), FAILURES, ids=[m[:60] for _, m in FAILURES])
def test_invalid_dh_files_name_file_and_field(text: str, message: str) -> None:
    with pytest.raises(ModelError) as info:
        loads_dh_yaml(text, source="arm.yaml")
    assert message in str(info.value)
    assert str(info.value).startswith("arm.yaml")


def test_unknown_file_and_unknown_bundled_name(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"not a bundled robot \(did you mean 'puma560'\?\); bundled: "):
        load_robot("puma56")
    with pytest.raises(ModelError, match=r"missing\.yaml: no such file, and not URDF XML text"):
        load_robot(tmp_path / "missing.yaml")
    with pytest.raises(ModelError, match=r"tip_link: 'link6' contradicts the file, whose chain has tip_link 'tool'"):
        load_robot("puma560", tip_link="link6")
    assert load_robot("puma560", base_link="base_link", tip_link="tool").dof == 6  # its own chain: a no-op
