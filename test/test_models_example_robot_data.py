"""Acceptance: every URDF of example-robot-data with a serial chain of >= 2 joints loads, and agrees with Pinocchio.

``TABLE`` gives each file the options it needs (at most ``tip_link`` / ``locked_joints``); files
without such a chain are listed in ``NOT_SERIAL`` with the reason, and an independent count over
the XML checks both lists. For every robot, inverse dynamics (no friction, no motor inertia) and the
inertia matrix equal Pinocchio's ``buildModelFromUrdf`` (root fixed, as without a root joint)
reduced by ``buildReducedModel`` to the same chain, every other joint locked at the position the
loader used: the given ``locked_joints`` value, ``multiplier * master + offset`` for a mimic
joint, else zero. Branches off the chain (the other limbs, the head) are thereby merged into the
chain bodies by Pinocchio's own rules.

``python test/test_models_example_robot_data.py`` prints the table of ``docs/models.md``; a test
checks that the documentation holds every row.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from engine_reference import EXAMPLE_ROBOTS
from lxml import etree
from models_reference import compare_with_pinocchio

from robot_dynamics.model import RobotModel
from robot_dynamics.models import ModelWarning, load_robot

pin = pytest.importorskip("pinocchio")

DOCS = Path(__file__).resolve().parents[1] / "docs" / "models.md"
TOLERANCE = 1e-9
STATES = 3

# robot file (below example-robot-data's robots/) -> load_robot options
TABLE: dict[str, dict[str, Any]] = {
    "a1_description/urdf/a1.urdf": {"tip_link": "FL_foot"},
    "alex_description/urdf/alex_nub_hands.urdf": {"tip_link": "leftNub"},
    "alex_description/urdf/alex_psyonic_hands.urdf": {"tip_link": "Left_index_anchor"},
    "alex_description/urdf/alex_sake_hands.urdf": {"tip_link": "LeftSakeFingerTip1"},
    "alexander_description/urdf/alexander_v1.lowerBodyOnly.urdf": {"tip_link": "LEFT_FOOT_IMU_LINK"},
    "allegro_hand_description/urdf/allegro_left_hand.urdf": {"tip_link": "link_3.0_tip"},
    "allegro_hand_description/urdf/allegro_right_hand.urdf": {"tip_link": "link_3.0_tip"},
    "anymal_b_simple_description/robots/anymal-kinova.urdf": {"tip_link": "j2s6s200_end_effector"},
    "anymal_b_simple_description/robots/anymal.urdf": {"tip_link": "LF_FOOT"},
    "anymal_c_simple_description/urdf/anymal.urdf": {"tip_link": "LF_FOOT"},
    "asr_twodof_description/urdf/TwoDofs.urdf": {},
    "b1_description/urdf/b1-z1.urdf": {"tip_link": "gripperMover"},
    "b1_description/urdf/b1.urdf": {"tip_link": "FL_foot"},
    "baxter_description/urdf/baxter.urdf": {"tip_link": "left_gripper"},
    "bolt_description/robots/bolt.urdf": {"tip_link": "FL_FOOT"},
    "borinot_description/urdf/borinot_flying_arm_2.urdf": {},
    "centauro_description/urdf/centauro.urdf": {"tip_link": "arm1_8"},
    "double_pendulum_description/urdf/double_pendulum.urdf": {},
    "double_pendulum_description/urdf/double_pendulum_continuous.urdf": {},
    "double_pendulum_description/urdf/double_pendulum_simple.urdf": {},
    "finger_edu_description/robots/finger_edu.urdf": {},
    "g1_description/urdf/g1_29dof_rev_1_0.urdf": {"tip_link": "left_rubber_hand"},
    "g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf": {"tip_link": "left_hand_palm_link"},
    "go1_description/urdf/go1.urdf": {"tip_link": "FL_foot"},
    "go2_description/urdf/go2.urdf": {"tip_link": "FL_foot"},
    "hextilt_description/urdf/hextilt_flying_arm_5.urdf": {},
    "human_description/robots/human.urdf": {"tip_link": "left_hand"},
    "hyq_description/robots/hyq_no_sensors.urdf": {"tip_link": "lf_foot"},
    "icub_description/robots/icub.urdf": {"tip_link": "l_hand"},
    "icub_description/robots/icub_reduced.urdf": {"tip_link": "l_hand"},
    "kinova_description/robots/kinova.urdf": {},
    "laikago_description/urdf/laikago.urdf": {"tip_link": "FL_foot"},
    "panda_description/urdf/panda.urdf": {"locked_joints": {"panda_finger_joint1": 0.0}},
    "panda_description/urdf/panda_collision.urdf": {"locked_joints": {"panda_finger_joint1": 0.02}},
    "pr2_description/urdf/pr2.urdf": {"tip_link": "l_gripper_palm_link"},
    "quadruped_description/urdf/quadruped.urdf": {"tip_link": "FL_contact"},
    "romeo_description/urdf/romeo.urdf": {"tip_link": "l_wrist"},
    "romeo_description/urdf/romeo_laas_small.urdf": {"tip_link": "l_gripper"},
    "romeo_description/urdf/romeo_small.urdf": {"tip_link": "l_wrist"},
    "simple_humanoid_description/urdf/simple_humanoid.urdf": {"tip_link": "l_wrist"},
    "simple_humanoid_description/urdf/simple_humanoid_classical.urdf": {"tip_link": "l_wrist"},
    "so_arm_description/urdf/so100.urdf": {},
    "so_arm_description/urdf/so101.urdf": {},
    "solo_description/robots/solo.urdf": {"tip_link": "FL_FOOT"},
    "solo_description/robots/solo12.urdf": {"tip_link": "FL_FOOT"},
    "talos_data/robots/talos_full_v2.urdf": {"tip_link": "gripper_left_base_link"},
    "talos_data/robots/talos_full_v2_box.urdf": {"tip_link": "gripper_left_base_link"},
    "talos_data/robots/talos_left_arm.urdf": {"locked_joints": {"gripper_left_joint": 0.0}},
    "talos_data/robots/talos_reduced.urdf": {"tip_link": "gripper_left_base_link"},
    "talos_data/robots/talos_reduced_box.urdf": {"tip_link": "gripper_left_base_link"},
    "talos_data/robots/talos_reduced_corrected.urdf": {"tip_link": "gripper_left_base_link"},
    "tiago_description/robots/tiago.urdf": {"tip_link": "hand_palm_link"},
    "tiago_description/robots/tiago_dual.urdf": {"tip_link": "arm_left_tool_link"},
    "tiago_description/robots/tiago_no_hand.urdf": {"tip_link": "wrist_ft_tool_link"},
    "tiago_pro_description/robots/tiago_pro.urdf": {"tip_link": "gripper_left_base_link"},
    "ur_description/urdf/ur10_joint_limited_robot.urdf": {},
    "ur_description/urdf/ur10_robot.urdf": {},
    "ur_description/urdf/ur3_gripper.urdf": {},
    "ur_description/urdf/ur3_joint_limited_robot.urdf": {},
    "ur_description/urdf/ur3_robot.urdf": {},
    "ur_description/urdf/ur5_gripper.urdf": {},
    "ur_description/urdf/ur5_joint_limited_robot.urdf": {},
    "ur_description/urdf/ur5_robot.urdf": {},
    "xarm_description/urdf/xarm7.urdf": {},
    "z1_description/urdf/z1.urdf": {},
}
# files without a serial chain of >= 2 revolute/continuous/prismatic joints
NOT_SERIAL = {
    "hector_description/robots/quadrotor_base.urdf": "a quadrotor body, no joints",
    "iris_description/robots/iris.urdf": "four rotors, one joint each",
    "iris_description/robots/iris_simple.urdf": "fixed joints only",
    "ur_description/urdf/ur3.urdf": "an empty <robot> (no links)",
}
MOVABLE = ("revolute", "continuous", "prismatic")


def longest_movable_chain(path: Path) -> int:
    """The most revolute/continuous/prismatic joints on one root-to-leaf path (counted from the XML)."""
    root = etree.parse(str(path)).getroot()
    children: dict[str, list[etree._Element]] = {}
    for joint in root.findall("joint"):
        children.setdefault(joint.find("parent").get("link"), []).append(joint)

    def depth(link: str) -> int:
        return max(
            (int(j.get("type") in MOVABLE) + depth(j.find("child").get("link")) for j in children.get(link, [])),
            default=0,
        )

    return max((depth(link.get("name")) for link in root.findall("link")), default=0)


def reference_positions(path: Path, locked: Mapping[str, float]) -> dict[str, float]:
    """Positions of the joints off the chain, from the XML: locked value, mimic of one, or zero."""
    root = etree.parse(str(path)).getroot()
    names = {j.get("name") for j in root.findall("joint")}
    mimic = {}
    for joint in root.findall("joint"):
        element = joint.find("mimic")
        if joint.get("type") in MOVABLE and element is not None and element.get("joint") in names:
            mimic[joint.get("name")] = (
                element.get("joint"),
                float(element.get("multiplier", "1")),
                float(element.get("offset", "0")),
            )

    def position(name: str, depth: int = 0) -> float:
        if name in locked:
            return float(locked[name])
        if name in mimic and depth < len(names):
            master, multiplier, offset = mimic[name]
            return multiplier * position(master, depth + 1) + offset
        return 0.0

    return {name: position(name) for name in names}


@functools.cache
def load(file: str) -> tuple[RobotModel, list[str]]:
    """The model of ``file`` with the table's options and its warnings (each URDF is loaded once)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_robot(EXAMPLE_ROBOTS / file, **TABLE[file])
    assert all(issubclass(w.category, ModelWarning) for w in caught), [str(w.message) for w in caught]
    return model, [str(w.message) for w in caught]


def options_text(options: Mapping[str, Any]) -> str:
    parts = []
    if "tip_link" in options:
        parts.append(f"`tip_link={options['tip_link']}`")
    for name, value in options.get("locked_joints", {}).items():
        parts.append(f"`locked_joints={{{name}: {value:g}}}`")
    return ", ".join(parts) or "none"


def table_row(file: str, model: RobotModel) -> str:
    return f"| `{file}` | `{model.base_link}` → `{model.tip_link}` | {model.dof} | {options_text(TABLE[file])} |"


def test_the_table_covers_every_file_with_a_serial_chain() -> None:
    files = sorted(str(p.relative_to(EXAMPLE_ROBOTS)) for p in EXAMPLE_ROBOTS.rglob("*.urdf"))
    assert len(files) >= 60
    assert sorted([*TABLE, *NOT_SERIAL]) == files
    for file in files:
        longest = longest_movable_chain(EXAMPLE_ROBOTS / file)
        assert (longest >= 2) == (file in TABLE), (file, longest)


@pytest.mark.parametrize("file", sorted(TABLE))
def test_loads_with_the_table_options_and_agrees_with_pinocchio(file: str) -> None:
    path = EXAMPLE_ROBOTS / file
    model, messages = load(file)
    assert model.dof >= 2
    for message in messages:  # plain text naming the file, never a path
        assert message.startswith(f"{path.name}: ") and str(EXAMPLE_ROBOTS) not in message, message
    full = pin.buildModelFromUrdf(str(path))
    positions = reference_positions(path, TABLE[file].get("locked_joints", {}))
    q = pin.neutral(full)
    for i in range(1, full.njoints):
        name, joint = full.names[i], full.joints[i]
        if name in model.joint_names:
            continue
        if joint.nq == 1:
            q[joint.idx_q] = positions[name]
        elif joint.nq == 2:  # continuous: (cos, sin)
            q[joint.idx_q : joint.idx_q + 2] = (math.cos(positions[name]), math.sin(positions[name]))
    # the model is what is checked here: the engine's Python backend (compiling 60 models would cost
    # four fifths of the test; the compiled backend is checked against it in test_engine_native.py)
    err_tau, err_m = compare_with_pinocchio(model, full, states=STATES, seed=len(file), lock_q=q, backend="python")
    assert err_tau < TOLERANCE, err_tau
    assert err_m < TOLERANCE, err_m


def test_docs_hold_the_table() -> None:
    text = DOCS.read_text(encoding="utf-8")
    rows = [table_row(file, load(file)[0]) for file in sorted(TABLE)]
    missing = [row for row in rows if row not in text]
    assert not missing, (
        "docs/models.md lacks (regenerate: python test/test_models_example_robot_data.py):\n" + "\n".join(missing)
    )
    for file, reason in NOT_SERIAL.items():
        assert f"| `{file}` | {reason} |" in text


def main() -> None:
    """Print the documentation table."""
    warnings.simplefilter("ignore", ModelWarning)
    print("| robot file | chain (base → tip) | joints | options |")
    print("|---|---|---|---|")
    for file in sorted(TABLE):
        print(table_row(file, load(file)[0]))
    print()
    print("| file without a serial chain | why |")
    print("|---|---|")
    for file, reason in sorted(NOT_SERIAL.items()):
        print(f"| `{file}` | {reason} |")


if __name__ == "__main__":
    main()
