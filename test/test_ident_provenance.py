"""One parameter file for the stock and the identified model: an identified file takes the chain options
it was made with (as a no-op) and refuses contradicting ones in one line naming both values, in the
loader, every command (shared options) and every node (the nodes' shared loading function)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS

import robot_dynamics as rd
from robot_dynamics.cli import main
from robot_dynamics.errors import ModelError
from robot_dynamics.identification.synthetic import perturbed_model, record, write_bag
from robot_dynamics.models.chain_yaml import write_chain_yaml
from robot_dynamics.models.provenance import Provenance

UR5 = EXAMPLE_ROBOTS / "ur_description/urdf/ur5_robot.urdf"
PANDA = EXAMPLE_ROBOTS / "panda_description/urdf/panda.urdf"
PANDA_LOCKS = {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}  # the chain other tests compile too


def _same_dynamics(a: rd.RobotModel, b: rd.RobotModel) -> None:
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-1.0, 1.0, (3, 20, a.dof))
    np.testing.assert_allclose(rd.inverse_dynamics(a, q, qd, qdd), rd.inverse_dynamics(b, q, qd, qdd), atol=1e-9)


@pytest.fixture(scope="module")
def panda_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stock Panda's chain (tip, locked fingers) written as a generated file with its provenance."""
    model = rd.load_robot(PANDA, tip_link="panda_hand", locked_joints=PANDA_LOCKS)
    path = tmp_path_factory.mktemp("prov") / "panda_id.yaml"
    prov = Provenance(str(PANDA), None, "panda_hand", PANDA_LOCKS, {"fer_joint1": "panda_joint1"})
    return write_chain_yaml(path, model, provenance=prov.block())


def test_the_options_a_file_was_made_with_are_a_no_op(panda_file: Path) -> None:
    plain = rd.load_robot(panda_file)
    again = rd.load_robot(panda_file, base_link=plain.base_link, tip_link="panda_hand", locked_joints=PANDA_LOCKS)
    assert again.joint_names == plain.joint_names
    _same_dynamics(plain, again)
    _same_dynamics(plain, rd.load_robot(PANDA, tip_link="panda_hand", locked_joints=PANDA_LOCKS))
    # a subset of the recorded locks, and a further lock of a joint the file still moves
    assert rd.load_robot(panda_file, locked_joints={"panda_finger_joint1": 0.0}).dof == 7
    assert rd.load_robot(panda_file, locked_joints={"panda_joint7": 0.5, **PANDA_LOCKS}).dof == 6


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"tip_link": "panda_link8"},
            "tip_link: 'panda_link8' contradicts the file, whose chain has tip_link 'panda_hand'",
        ),
        (
            {"base_link": "panda_link1"},
            "base_link: 'panda_link1' contradicts the file, whose chain has base_link 'panda_link0'",
        ),
        (
            {"locked_joints": {"panda_finger_joint2": 0.03}},
            "locked_joints[panda_finger_joint2]: 0.03 contradicts the file, made with panda_finger_joint2 locked at 0",
        ),
        ({"locked_joints": {"panda_joint9": 0.0}}, "locked_joints: unknown joint 'panda_joint9'"),
    ],
)
def test_a_contradicting_option_is_refused_naming_both_values(
    panda_file: Path, options: dict[str, object], message: str
) -> None:
    with pytest.raises(ModelError) as info:
        rd.load_robot(panda_file, **options)  # type: ignore[arg-type]
    assert str(info.value).startswith("panda_id.yaml: ") and message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_dh_file_takes_its_own_chain() -> None:
    puma = rd.load_robot("puma560")
    assert rd.load_robot("puma560", base_link=puma.base_link, tip_link=puma.tip_link).dof == 6
    with pytest.raises(ModelError, match="tip_link: 'link3' contradicts the file, whose chain has tip_link 'tool'"):
        rd.load_robot("puma560", tip_link="link3")


def test_the_issue_commands_and_the_nodes_loader(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``identify`` on a URDF with --tip-link writes a file that ``info`` (every command: shared options) and
    the nodes' loading function accept with the same --tip-link, and refuse with another one."""
    from robot_dynamics.ros.robot_node import StartupError, load_robot_model

    stock = rd.load_robot(UR5, tip_link="tool0")
    bag = write_bag(tmp_path / "exc", record(perturbed_model(stock, seed=2), 2.0, 200.0, seed=3), stock.joint_names)
    out = tmp_path / "id.yaml"
    ur5 = str(UR5)
    argv = ["identify", str(bag), "--robot", ur5, "--tip-link", "tool0", "--out", str(out), "--jobs", "1"]
    assert main([*argv, "--no-compare-friction"]) == 0
    capsys.readouterr()
    assert main(["info", str(out), "--tip-link", "tool0"]) == 0
    capsys.readouterr()
    assert main(["info", str(out), "--tip-link", "wrist_3_link"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "robot-dynamics info: error: id.yaml: tip_link: 'wrist_3_link' contradicts the file, whose chain has tip_link "
        f"'tool0' (made from {ur5} with tip_link tool0); use tip_link 'tool0' or load the original robot file"
    ]
    # the function every node loads its robot with (robot_config + tip_link + joint_map parameters)
    node_model = load_robot_model("", str(out), tip_link="tool0", joint_map={"bag_pan": "shoulder_pan_joint"})
    assert node_model.joint_names[0] == "bag_pan"
    _same_dynamics(node_model, rd.load_robot(out))
    with pytest.raises(StartupError, match="contradicts the file, whose chain has tip_link 'tool0'"):
        load_robot_model("", str(out), tip_link="wrist_3_link")


def test_malformed_provenance_names_the_field(tmp_path: Path) -> None:
    path = write_chain_yaml(tmp_path / "m.yaml", rd.load_robot("scara"), provenance={"robot": "x.urdf"})
    text = path.read_text().replace("provenance:", "provenance:\n  locked_joints: {j1: open}\n  colour: red\n  x:")
    path.write_text(text.replace("  x: {robot: x.urdf}", "  robot: x.urdf"))
    with pytest.raises(ModelError, match=r"m.yaml: provenance.colour: unknown key"):
        rd.load_robot(path)
