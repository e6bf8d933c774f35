"""Bundled robots: sources, install locations, Robotics Toolbox Puma560, the books' closed forms,
the JSON schema and the documentation examples."""

from __future__ import annotations

import json
import math
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from models_reference import gravity_torques, link_frames, mass_matrix, rnea

import robot_dynamics
from robot_dynamics.errors import ModelError
from robot_dynamics.model import dh_joint_frames
from robot_dynamics.models import bundled_robots, load_robot, loads_dh_yaml, robots
from robot_dynamics.models.dh_yaml import read_yaml

REPO = Path(__file__).resolve().parents[1]
EXPECTED = [
    "fu_two_link",
    "one_axis",
    "puma560",
    "puma560_modified",
    "robmat_double_pendulum",
    "robmat_stanford_rrp",
    "scara",
    "schilling_two_link",
    "stanford",
]


def test_bundled_robots_load_and_cite_their_source() -> None:
    assert bundled_robots() == EXPECTED
    assert robot_dynamics.bundled_robots() == EXPECTED
    assert robot_dynamics.DEFAULT_ROBOT == "puma560"
    assert robot_dynamics.load_robot().name == "puma560"
    for name in EXPECTED:
        model = load_robot(name)
        assert model.name == name
        text = (REPO / "config" / "robots" / f"{name}.yaml").read_text()
        data = read_yaml(text, name)
        assert len(data["reference"]) > 20, name
        assert text.lstrip().startswith("#"), f"{name}: the header comment documents the source and readings"
        for pose in model.named_poses.values():
            assert pose.shape == (model.dof,)


@pytest.mark.parametrize("layout", ["sys.prefix", "AMENT_PREFIX_PATH"])
def test_bundled_robots_are_found_when_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    # setup.py installs config/robots/* into share/robot_dynamics/config/robots
    assert '(f"share/{PACKAGE}/config/robots", glob("config/robots/*"))' in (REPO / "setup.py").read_text()
    prefix = tmp_path / "install"
    shutil.copytree(REPO / "config" / "robots", prefix / "share" / "robot_dynamics" / "config" / "robots")
    monkeypatch.setattr(robots, "SOURCE_TREE_ROBOTS", tmp_path / "not-a-source-tree")
    if layout == "sys.prefix":
        monkeypatch.setattr(sys, "prefix", str(prefix))
    else:
        monkeypatch.setattr(sys, "prefix", str(tmp_path / "elsewhere"))
        monkeypatch.setenv("AMENT_PREFIX_PATH", f"{tmp_path / 'other'}:{prefix}")
    assert robots.robots_directory() == prefix / "share" / "robot_dynamics" / "config" / "robots"
    assert bundled_robots() == EXPECTED
    assert load_robot("scara").source == str(prefix / "share/robot_dynamics/config/robots/scara.yaml")
    monkeypatch.setenv("AMENT_PREFIX_PATH", "")
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "elsewhere"))
    with pytest.raises(ModelError, match=r"bundled robots: no robot files found \(searched "):
        bundled_robots()


# ----------------------------------------------------------------------------------------------
# PUMA 560 against Robotics Toolbox
# ----------------------------------------------------------------------------------------------
def test_puma560_reproduces_robotics_toolbox() -> None:
    rtb = pytest.importorskip("roboticstoolbox")
    puma = rtb.models.DH.Puma560()
    model = load_robot("puma560")
    link_poses = dh_joint_frames(model.dh)[1]  # type: ignore[arg-type]
    gear = np.array([j.motor.gear_ratio for j in model.joints])  # type: ignore[union-attr]
    jm = np.array([j.motor.inertia for j in model.joints])  # type: ignore[union-attr]
    viscous = np.array([j.motor.viscous for j in model.joints])  # type: ignore[union-attr]
    coulomb = np.array([j.motor.coulomb for j in model.joints])  # type: ignore[union-attr]
    rng = np.random.default_rng(7)
    errors = {"fkine": 0.0, "frames": 0.0, "gravload": 0.0, "inertia": 0.0, "rne": 0.0}
    for _ in range(50):
        q = rng.uniform(-math.pi, math.pi, 6)
        qd, qdd = rng.normal(size=6), rng.normal(size=6)
        frames = link_frames(model, q)
        errors["fkine"] = max(errors["fkine"], np.abs(frames[-1] - puma.fkine(q).A).max())
        rtb_frames = puma.fkine_all(q)
        for i in range(6):
            errors["frames"] = max(errors["frames"], np.abs(frames[i] @ link_poses[i] - rtb_frames[i + 1].A).max())
        errors["gravload"] = max(errors["gravload"], np.abs(gravity_torques(model, q) - puma.gravload(q)).max())
        d = mass_matrix(model, q) + np.diag(gear**2 * jm)  # RTB's inertia includes G^2 Jm
        errors["inertia"] = max(errors["inertia"], np.abs(d - puma.inertia(q)).max())
        # RTB's rne adds G^2 Jm qdd and the motor friction G^2 B qd + |G| Tc(sign qd)
        tc = np.where(qd > 0, coulomb[:, 0], np.where(qd < 0, coulomb[:, 1], 0.0))
        tau = rnea(model, q, qd, qdd) + gear**2 * jm * qdd + gear**2 * viscous * qd + np.abs(gear) * tc
        errors["rne"] = max(errors["rne"], np.abs(tau - puma.rne(q, qd, qdd)).max())
    assert max(errors.values()) < 1e-10, errors
    for name, values in (("qz", puma.qz), ("qr", puma.qr), ("qs", puma.qs), ("qn", puma.qn)):
        np.testing.assert_allclose(model.named_poses[name], values, atol=1e-15)
    np.testing.assert_allclose([j.limits.lower for j in model.joints], puma.qlim[0], atol=1e-15)
    np.testing.assert_allclose([j.limits.upper for j in model.joints], puma.qlim[1], atol=1e-15)


# ----------------------------------------------------------------------------------------------
# textbook arms against the books' closed forms (docs/references.md)
# ----------------------------------------------------------------------------------------------
def states(n: int, count: int = 20, seed: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-math.pi, math.pi, n), rng.normal(size=n)) for _ in range(count)]


def test_fu_two_link_closed_forms() -> None:
    model = load_robot("fu_two_link")
    ell, m1, m2, g = 0.5, 2.0, 1.0, 9.8062
    for q, qd in states(2):
        c2, s2 = math.cos(q[1]), math.sin(q[1])
        c1, c12 = math.cos(q[0]), math.cos(q[0] + q[1])
        d = [
            [m1 * ell**2 / 3 + 4 / 3 * m2 * ell**2 + m2 * c2 * ell**2, m2 * ell**2 / 3 + m2 * ell**2 * c2 / 2],
            [m2 * ell**2 / 3 + m2 * ell**2 * c2 / 2, m2 * ell**2 / 3],
        ]
        h = [-m2 * s2 * ell**2 * qd[1] ** 2 / 2 - m2 * s2 * ell**2 * qd[0] * qd[1], m2 * s2 * ell**2 * qd[0] ** 2 / 2]
        c = [(m1 / 2 + m2) * g * ell * c1 + m2 * g * ell * c12 / 2, m2 * g * ell * c12 / 2]
        np.testing.assert_allclose(mass_matrix(model, q), d, atol=1e-13)
        np.testing.assert_allclose(gravity_torques(model, q), c, atol=1e-13)
        np.testing.assert_allclose(rnea(model, q, qd, np.zeros(2)) - gravity_torques(model, q), h, atol=1e-13)


def test_schilling_two_link_closed_forms() -> None:
    model = load_robot("schilling_two_link")
    a1, a2, m1, m2, g0 = 0.4, 0.3, 3.0, 2.0, 9.8062
    np.testing.assert_allclose(model.named_poses["home"], [math.pi / 3, -math.pi / 3])
    for q, _ in states(2):
        c2, c1, c12 = math.cos(q[1]), math.cos(q[0]), math.cos(q[0] + q[1])
        d = [
            [m1 * a1**2 / 3 + m2 * (a1**2 + a1 * a2 * c2 + a2**2 / 3), m2 * (a1 * a2 * c2 / 2 + a2**2 / 3)],
            [m2 * (a1 * a2 * c2 / 2 + a2**2 / 3), m2 * a2**2 / 3],
        ]
        grav = [g0 * ((m1 / 2 + m2) * a1 * c1 + m2 * a2 * c12 / 2), g0 * m2 * a2 * c12 / 2]
        np.testing.assert_allclose(mass_matrix(model, q), d, atol=1e-13)
        np.testing.assert_allclose(gravity_torques(model, q), grav, atol=1e-13)


def test_scara_closed_forms() -> None:
    model = load_robot("scara")
    a1, a2, m1, m2, m3, g0 = 0.425, 0.375, 8.0, 5.0, 2.0, 9.8062
    np.testing.assert_allclose(model.named_poses["home"], [0, 0, 0.2])
    for q, _ in states(3):
        q[2] = abs(q[2]) % 0.4
        c2 = math.cos(q[1])
        d12 = -(m2 / 2 + m3) * a1 * a2 * c2 - (m2 / 3 + m3) * a2**2
        d = [
            [(m1 / 3 + m2 + m3) * a1**2 + (m2 + 2 * m3) * a1 * a2 * c2 + (m2 / 3 + m3) * a2**2, d12, 0.0],
            [d12, (m2 / 3 + m3) * a2**2, 0.0],
            [0.0, 0.0, m3],
        ]
        np.testing.assert_allclose(mass_matrix(model, q), d, atol=1e-13)
        np.testing.assert_allclose(gravity_torques(model, q), [0, 0, -g0 * m3], atol=1e-13)


def test_one_axis_closed_form_and_friction() -> None:
    model = load_robot("one_axis")
    a, m, g0 = 0.5, 2.0, 9.8062
    for q, _ in states(1):
        np.testing.assert_allclose(mass_matrix(model, q), [[m * a**2 / 3]], atol=1e-14)
        np.testing.assert_allclose(gravity_torques(model, q), [g0 * m * a * math.cos(q[0]) / 2], atol=1e-14)
    friction = model.joints[0].friction
    assert (friction.viscous, friction.coulomb, friction.static, friction.stribeck_velocity) == (
        0.05,
        (0.2, -0.2),
        (0.3, -0.3),
        0.05,
    )
    np.testing.assert_allclose(model.named_poses["home"], [math.pi / 3])


def test_robmat_double_pendulum_closed_forms() -> None:
    model = load_robot("robmat_double_pendulum")
    l1, l2, m1, m2, g = 1.0, 0.7, 1.5, 1.0, 9.81
    np.testing.assert_array_equal(model.gravity, [g, 0, 0])
    for q, _ in states(2):
        c2, s1, s12 = math.cos(q[1]), math.sin(q[0]), math.sin(q[0] + q[1])
        m12 = l2 * (c2 * l1 + l2) * m2
        mm = [[l1**2 * m1 + l1**2 * m2 + 2 * c2 * l1 * l2 * m2 + l2**2 * m2, m12], [m12, l2**2 * m2]]
        grav = [g * (l1 * m1 * s1 + l1 * m2 * s1 + l2 * m2 * s12), g * l2 * m2 * s12]
        np.testing.assert_allclose(mass_matrix(model, q), mm, atol=1e-13)
        np.testing.assert_allclose(gravity_torques(model, q), grav, atol=1e-13)


def test_robmat_stanford_rrp_matches_the_robmat_input() -> None:
    model = load_robot("robmat_stanford_rrp")
    assert [j.kind for j in model.joints] == ["revolute", "revolute", "prismatic"]
    assert model.dh is not None and model.dh.convention == "standard"
    rows = [(r.a, r.alpha, r.d, r.theta) for r in model.dh.rows]
    assert rows == [(0.0, -math.pi / 2, 0.0, 0.0), (0.0, math.pi / 2, 0.154, 0.0), (0.0, 0.0, 0.0, 0.0)]
    # centres of mass (0, y1, z1), (0, y2, 0), (0, 0, z3) and diagonal inertias, in the DH frames
    poses = dh_joint_frames(model.dh)[1]
    for joint, pose, zero_axes in zip(model.joints, poses, ([0], [0, 2], [0, 1]), strict=True):
        com = pose[:3, :3].T @ (joint.link.com - pose[:3, 3])
        inertia = pose[:3, :3].T @ joint.link.inertia @ pose[:3, :3]
        assert np.all(np.abs(com[zero_axes]) < 1e-15)
        assert np.abs(inertia - np.diag(np.diag(inertia))).max() < 1e-15
    np.testing.assert_array_equal(model.gravity, [0, 0, -9.81])


def test_thesis_robots_readings() -> None:
    stanford = load_robot("stanford")
    assert [j.kind for j in stanford.joints] == [
        "revolute",
        "revolute",
        "prismatic",
        "revolute",
        "revolute",
        "revolute",
    ]
    rows = [(round(r.alpha, 12), r.a, r.d, r.theta) for r in stanford.dh.rows]  # type: ignore[union-attr]
    half = round(math.pi / 2, 12)
    assert rows == [
        (0, 0, 0, 0),
        (-half, 0, 0.1524, 0),
        (half, 0, 0, 0),
        (0, 0, 0, 0),
        (-half, 0, 0, 0),
        (half, 0, 0, 0),
    ]
    assert [j.motor.inertia for j in stanford.joints] == [0.953, 2.193, 0.782, 0.106, 0.097, 0.020]  # type: ignore[union-attr]
    # the boom: the prismatic joint moves the whole link 3 along z3 (c.o.m. (0, 0, 0.6447) in frame 3)
    q = np.array([0.0, 0.0, 0.5, 0, 0, 0])
    q2 = q.copy()
    q2[2] += 0.1
    shift = link_frames(stanford, q2)[2][:3, 3] - link_frames(stanford, q)[2][:3, 3]
    assert np.linalg.norm(shift) == pytest.approx(0.1)

    modified = load_robot("puma560_modified")
    assert [j.motor.inertia for j in modified.joints] == [1.14, 4.71, 0.83, 0.20, 0.179, 0.193]  # type: ignore[union-attr]
    assert all(j.motor.gear_ratio == 1.0 for j in modified.joints)  # type: ignore[union-attr]
    frictions = [j.friction for j in modified.joints]
    assert [f.bearing.radius for f in frictions[:3]] == [0.10, 0.08, 0.07]  # type: ignore[union-attr]
    assert [f.bearing.mu for f in frictions[:3]] == [0.1, 0.1, 0.1]  # type: ignore[union-attr]
    assert [f.transmission.breakaway for f in frictions[:3]] == [6.3, 5.5, 2.6]  # type: ignore[union-attr]
    assert [f.transmission.max_torque for f in frictions[:3]] == [97.6, 186.4, 89.4]  # type: ignore[union-attr]
    assert all(f.is_zero for f in frictions[3:])
    np.testing.assert_allclose(np.diag(modified.joints[4].link.inertia), [0.0003, 0.0003, 0.0004])


# ----------------------------------------------------------------------------------------------
# schema and documentation
# ----------------------------------------------------------------------------------------------
def doc_examples() -> list[str]:
    text = (REPO / "docs" / "models.md").read_text()
    return re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)


def test_schema_accepts_every_bundled_robot_and_doc_example() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "docs" / "robot-dh.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    documents = [read_yaml((REPO / "config/robots" / f"{n}.yaml").read_text(), n) for n in EXPECTED]
    documents += [read_yaml(text, "models.md") for text in doc_examples()]
    for document in documents:
        errors = [e.message for e in validator.iter_errors(document)]
        assert not errors, (document.get("name"), errors)
    bad = dict(documents[0], gravty=[0, 0, -9.81])
    assert any("gravty" in e.message for e in validator.iter_errors(bad))


def test_documentation_examples_load() -> None:
    examples = doc_examples()
    assert len(examples) >= 7
    for text in examples:
        model = loads_dh_yaml(text, source="models.md")
        assert model.dof >= 1
