"""Chain YAML (``format: chain``): any model -> file -> ``load_robot`` keeps the dynamics exactly."""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS, URDF_ARMS, random_states

import robot_dynamics as rd
from robot_dynamics.errors import ModelError
from robot_dynamics.model import JointFriction, Motor, RobotModel
from robot_dynamics.models.chain_yaml import (
    chain_metadata,
    dumps_chain_yaml,
    load_chain_yaml,
    loads_chain_yaml,
    write_chain_yaml,
)

TOL = 1e-12


def _urdf(name: str) -> RobotModel:
    path, tip, _ = URDF_ARMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # off-chain joints held at zero (panda's fingers)
        return rd.load_robot(str(EXAMPLE_ROBOTS / path), tip_link=tip)


def _with_friction(model: RobotModel, seed: int) -> RobotModel:
    """Every joint with asymmetric Coulomb, viscous, Stribeck, a motor: all blocks exercised."""
    rng = np.random.default_rng(seed)
    joints = []
    for joint in model.joints:
        tc = (float(rng.uniform(0.1, 2.0)), -float(rng.uniform(0.1, 2.0)))
        friction = JointFriction(
            viscous=float(rng.uniform(0.0, 3.0)),
            coulomb=tc,
            static=(tc[0] * 1.5, tc[1] * 1.5),
            stribeck_velocity=0.05,
            smoothing_velocity=float(rng.uniform(0.005, 0.05)),
        )
        motor = Motor(float(rng.uniform(1e-5, 1e-4)), float(rng.uniform(20, 100)), 1e-4, (0.01, -0.02))
        joints.append(replace(joint, friction=friction, motor=motor))
    return model.with_changes(joints=tuple(joints))


def _roundtrip(model: RobotModel, tmp_path: Path) -> RobotModel:
    path = write_chain_yaml(tmp_path / f"{model.name}.yaml", model, identified={"method": "test"})
    return rd.load_robot(str(path))


def _assert_same_dynamics(a: RobotModel, b: RobotModel, seed: int) -> None:
    q, qd, qdd = random_states(seed, a.dof, 200)
    for smooth in (True, False):
        # the file's round trip is what is checked: the Python backend (no compile of each model)
        ta = rd.inverse_dynamics(a, q, qd, qdd, friction=True, smooth=smooth, backend="python")
        tb = rd.inverse_dynamics(b, q, qd, qdd, friction=True, smooth=smooth, backend="python")
        scale = max(1.0, float(np.abs(ta).max()))
        assert float(np.abs(ta - tb).max()) <= TOL * scale
    assert a.joint_names == b.joint_names
    assert [j.limits for j in a.joints] == [j.limits for j in b.joints]
    assert [j.continuous for j in a.joints] == [j.continuous for j in b.joints]
    assert [j.link_name for j in a.joints] == [j.link_name for j in b.joints]
    assert set(a.named_poses) == set(b.named_poses)
    for key, pose in a.named_poses.items():
        np.testing.assert_array_equal(pose, b.named_poses[key])
    np.testing.assert_allclose(b.tool, a.tool, rtol=0, atol=1e-15)
    np.testing.assert_allclose(b.base, a.base, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(b.gravity, a.gravity)
    assert b.motor_inertia_in_d == a.motor_inertia_in_d
    assert (b.base_link, b.tip_link) == (a.base_link, a.tip_link)


@pytest.mark.parametrize("name", rd.bundled_robots())
def test_bundled_robot_roundtrip(name: str, tmp_path: Path) -> None:
    model = rd.load_robot(name)
    back = _roundtrip(model, tmp_path)
    _assert_same_dynamics(model, back, seed=len(name))
    assert back.dh == model.dh  # the DH table is kept (symbolic generation, display)
    # friction on every joint too
    rich = _with_friction(model, seed=3)
    _assert_same_dynamics(rich, _roundtrip(rich, tmp_path), seed=4)


@pytest.mark.parametrize("name", ["panda", "ur5"])
def test_urdf_arm_roundtrip(name: str, tmp_path: Path) -> None:
    model = _with_friction(_urdf(name), seed=7)
    back = _roundtrip(model, tmp_path)
    assert back.dh is None
    _assert_same_dynamics(model, back, seed=11)


def test_base_and_tool_and_prismatic(tmp_path: Path) -> None:
    model = rd.load_robot("stanford")  # has a prismatic joint
    base = np.eye(4)
    base[:3, :3] = rd.forward_kinematics(rd.load_robot("puma560"), np.full(6, 0.3))[:3, :3]
    base[:3, 3] = (0.1, -0.2, 0.3)
    model = model.with_changes(base=base, gravity=np.array([0.5, -0.3, -9.7]))
    assert any(j.is_prismatic for j in model.joints)
    _assert_same_dynamics(model, _roundtrip(model, tmp_path), seed=5)


def test_metadata_and_header(tmp_path: Path) -> None:
    model = rd.load_robot("fu_two_link")
    meta = {"source_robot": "fu_two_link", "bags": ["a", "b"], "rms": np.array([0.1, 0.2]), "count": np.int64(3)}
    path = write_chain_yaml(tmp_path / "m.yaml", model, identified=meta, header="identified model\nsecond line")
    text = path.read_text()
    assert text.startswith("# identified model\n# second line\nformat: chain\n")
    assert chain_metadata(path) == {"source_robot": "fu_two_link", "bags": ["a", "b"], "rms": [0.1, 0.2], "count": 3}
    assert load_chain_yaml(path).name == model.name
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_nonphysical_published_inertia_is_kept() -> None:
    model = rd.load_robot("puma560")  # links 1 and 3 violate the triangle inequality as published
    text = dumps_chain_yaml(model)
    assert text.count("check_triangle_inequality: false") == 2
    back = loads_chain_yaml(text)
    np.testing.assert_array_equal(back.joints[2].link.inertia, model.joints[2].link.inertia)


CHAIN = """
format: chain
name: two
joints:
  - name: a
    type: revolute
    origin: {xyz: [0, 0, 0.5], rpy: [0, 0, 0]}
    link: {mass: 1.0, com: [0.1, 0, 0], inertia: [0.01, 0.01, 0.01, 0, 0, 0]}
  - name: b
    type: continuous
    origin: {xyz: [0.4, 0, 0], rpy: [1.5707963267948966, 0, 0]}
    axis: [0, 1, 0]
    link: {mass: 0.5, com: [0.1, 0, 0], inertia: [0.01, 0.01, 0.01, 0, 0, 0]}
"""


def test_minimal_file_defaults() -> None:
    model = loads_chain_yaml(CHAIN, "two.yaml")
    assert model.joint_names == ["a", "b"]
    assert model.joints[1].continuous and not model.joints[0].continuous
    np.testing.assert_array_equal(model.joints[1].axis, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(model.gravity, [0.0, 0.0, -9.81])
    assert model.joints[0].link_name == "a_link"
    assert model.smooth_kind == "tanh"
    assert loads_chain_yaml(CHAIN.replace("name: two", "name: two\nsmooth_kind: linear"), "two.yaml").smooth_kind == (
        "linear"
    )


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("format: chain", "format: chains", "format"),
        ("    type: continuous", "    type: hinge", "joints[1].type"),
        ("    origin: {xyz: [0, 0, 0.5], rpy: [0, 0, 0]}\n", "", "joints[0]"),
        ("mass: 0.5", "mass: -0.5", "joints[1].link.mass"),
        ("axis: [0, 1, 0]", "axis: [0, 0, 0]", "joints[1].axis"),
        ("  - name: b", "  - name: a", "joints[1].name"),
        (
            "inertia: [0.01, 0.01, 0.01, 0, 0, 0]}\n  - name: b",
            "inertia: [0.01, 0.01, 0.05, 0, 0, 0]}\n  - name: b",
            "joints[0].link.inertia",
        ),
        ("name: two", "name: two\nnamed_poses: {up: [0]}", "named_poses.up"),
        (
            "name: two",
            "name: two\ndh: {convention: standard, rows: [{type: revolute}, {type: revolute}]}",
            "dh.rows[0]",
        ),
        ("name: two", "name: two\nidentified: [1, 2]", "identified"),
        ("    type: continuous", "    type: continuous\n    limits: {lower: -1, upper: 1}", "joints[1].limits"),
        ("name: two", "name: two\nfrobnicate: 1", "frobnicate"),
        ("name: two", "name: two\nsmooth_kind: cubic", "smooth_kind"),
    ],
)
def test_errors_name_the_field(old: str, new: str, field: str) -> None:
    assert old in CHAIN
    with pytest.raises(ModelError) as info:
        loads_chain_yaml(CHAIN.replace(old, new, 1), "two.yaml")
    assert str(info.value).startswith("two.yaml")
    assert field in str(info.value)


def test_dh_files_still_load_through_the_dispatch(tmp_path: Path) -> None:
    source = Path(rd.models.robots.bundled_robot_path("scara"))
    copy = tmp_path / "scara_copy.yaml"
    copy.write_text(source.read_text())
    loaded, bundled = rd.load_robot(str(copy)), rd.load_robot("scara")
    assert loaded.dh == bundled.dh
    x = np.linspace(0.1, 0.9, bundled.dof)
    np.testing.assert_array_equal(rd.inverse_dynamics(loaded, x, x, x), rd.inverse_dynamics(bundled, x, x, x))
