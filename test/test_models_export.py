"""DH -> URDF export (valid URDF, same dynamics after the round trip) and the models CLI."""

from __future__ import annotations

import importlib.metadata
import math
import os
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS
from lxml import etree
from models_reference import link_frames, world_inertials

from robot_dynamics.cli import main
from robot_dynamics.dynamics import inverse_dynamics
from robot_dynamics.errors import ModelError
from robot_dynamics.model import RobotModel
from robot_dynamics.models import ModelWarning, bundled_robots, load_robot, loads_urdf, model_to_urdf

ROBOTS = EXAMPLE_ROBOTS


def reload(model: RobotModel, **kwargs: bool) -> RobotModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)  # published non-physical inertias (puma links 1, 3)
        return loads_urdf(model_to_urdf(model, **kwargs))


def random_states(model: RobotModel, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    lower = np.array([max(j.limits.lower, -math.pi) for j in model.joints])
    upper = np.array([min(j.limits.upper, math.pi) for j in model.joints])
    q = rng.uniform(lower, upper, (count, model.dof))
    return q, rng.normal(size=q.shape), rng.normal(size=q.shape)


@pytest.mark.parametrize("name", bundled_robots())
def test_dh_urdf_round_trip_preserves_dynamics(name: str) -> None:
    model = load_robot(name)
    again = reload(model)
    assert again.joint_names == model.joint_names and again.name == model.name
    assert [j.motor for j in again.joints] == [j.motor for j in model.joints]
    assert [j.friction for j in again.joints] == [j.friction for j in model.joints]
    np.testing.assert_array_equal(again.gravity, model.gravity)
    assert again.motor_inertia_in_d == model.motor_inertia_in_d
    assert again.named_poses.keys() == model.named_poses.keys()
    for key, pose in model.named_poses.items():
        np.testing.assert_array_equal(again.named_poses[key], pose)
    q, qd, qdd = random_states(model, 100)
    # every link frame and every link's spatial inertia in the world frame (which fixes the dynamics)
    for k in range(0, 100, 10):
        for a, b in zip(link_frames(model, q[k]), link_frames(again, q[k]), strict=True):
            np.testing.assert_allclose(a, b, atol=1e-12)
        for (m1, c1, i1), (m2, c2, i2) in zip(world_inertials(model, q[k]), world_inertials(again, q[k]), strict=True):
            assert m1 == m2
            np.testing.assert_allclose(c1, c2, atol=1e-12)
            np.testing.assert_allclose(i1, i2, atol=1e-12)
    # the full inverse dynamics (rigid body, motor inertia, every friction term)
    tau, tau_again = inverse_dynamics(model, q, qd, qdd), inverse_dynamics(again, q, qd, qdd)
    assert np.max(np.abs(tau - tau_again)) <= 1e-10 * max(1.0, float(np.max(np.abs(tau))))
    # the limits survive too (revolute without limits -> continuous)
    for a, b in zip(model.joints, again.joints, strict=True):
        assert (a.limits.lower, a.limits.upper, a.limits.velocity, a.limits.effort) == (
            b.limits.lower,
            b.limits.upper,
            b.limits.velocity,
            b.limits.effort,
        )


def test_urdf_model_round_trip_and_no_visuals() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        z1 = load_robot(ROBOTS / "z1_description/urdf/z1.urdf")
    again = reload(z1, visuals=False)
    assert "<visual>" not in model_to_urdf(z1, visuals=False) and "<visual>" in model_to_urdf(z1)
    q, qd, qdd = random_states(z1, 50)
    tau = inverse_dynamics(z1, q, qd, qdd)
    assert np.max(np.abs(tau - inverse_dynamics(again, q, qd, qdd))) <= 1e-10 * max(1.0, float(np.max(np.abs(tau))))
    np.testing.assert_allclose(link_frames(again, q[0])[-1], link_frames(z1, q[0])[-1], atol=1e-12)


def check_urdf_binary() -> tuple[Path, Path] | None:
    try:
        prefix = Path(str(importlib.metadata.distribution("cmeel-urdfdom").locate_file("cmeel.prefix")))
    except importlib.metadata.PackageNotFoundError:
        return None
    binary = prefix / "bin" / "check_urdf"
    return (binary, prefix / "lib") if binary.exists() else None


@pytest.mark.parametrize("name", ["puma560", "scara", "stanford", "robmat_double_pendulum"])
def test_exported_urdf_is_valid_for_urdfdom_and_pinocchio(name: str, tmp_path: Path) -> None:
    pin = pytest.importorskip("pinocchio")
    model = load_robot(name)
    if name == "robmat_double_pendulum":  # exercise a base transform (world -> base_link)
        base = np.eye(4)
        base[:3, :3] = [[0, 0, 1], [0, 1, 0], [-1, 0, 0]]
        base[:3, 3] = [0.1, 0.2, 0.3]
        model = model.with_changes(base=base)
    text = model_to_urdf(model)
    path = tmp_path / f"{name}.urdf"
    path.write_text(text)
    found = check_urdf_binary()
    if found is not None:  # urdfdom, the parser robot_state_publisher uses
        binary, lib = found
        env = dict(os.environ, LD_LIBRARY_PATH=f"{lib}:{os.environ.get('LD_LIBRARY_PATH', '')}")
        result = subprocess.run([str(binary), str(path)], capture_output=True, text=True, env=env, timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Successfully Parsed XML" in result.stdout
    root = etree.fromstring(text.encode())
    assert root.tag == "robot" and root.find("link").get("name") in ("base_link", "world")
    # Pinocchio (urdfdom inside) reads the same rigid-body dynamics
    pm = pin.buildModelFromXML(text)
    assert list(pm.names)[1:] == model.joint_names
    pm.gravity.linear = model.gravity
    data = pm.createData()
    q, qd, qdd = random_states(model, 50)
    tau = inverse_dynamics(model, q, qd, qdd, friction=False, motor_inertia=False)
    for k in range(50):
        qp = []
        for i, qi in enumerate(q[k]):
            qp += [math.cos(qi), math.sin(qi)] if pm.joints[i + 1].nq == 2 else [qi]
        tau_pin = pin.rnea(pm, data, np.array(qp), qd[k], qdd[k])
        assert np.max(np.abs(tau[k] - tau_pin)) <= 1e-10 * max(1.0, float(np.max(np.abs(tau_pin))))


def test_exported_urdf_frames_follow_the_model_not_the_dh_frames() -> None:
    model = load_robot("puma560")
    root = etree.fromstring(model_to_urdf(model).encode())
    inertial = root.find("link[@name='link2']/inertial")
    com = [float(v) for v in inertial.find("origin").get("xyz").split()]
    np.testing.assert_allclose(com, model.joints[1].link.com)  # joint frame, not the DH r = (-0.3638, 0.006, 0.2275)
    assert not np.allclose(com, [-0.3638, 0.006, 0.2275])
    tool = root.find("joint[@name='tool_joint']")
    assert tool.get("type") == "fixed" and tool.find("child").get("link") == "tool"
    assert root.find("joint[@name='joint1']/limit").get("effort") == "0"  # not specified


# ----------------------------------------------------------------------------------------------
# CLI
# ----------------------------------------------------------------------------------------------
def test_cli_info_prints_chain_masses_limits_motors_poses(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for expected in (
        "robot:      puma560",
        "config/robots/puma560.yaml",
        "reference:  Corke & Armstrong-Hélouvry 1994",
        "convention: standard DH",
        "dof:        6",
        "gravity:    [0, 0, -9.81] m/s^2 (world frame)",
        "motor inertia G^2 Jm in D: yes",
        "2  joint2  revolute  [0, 0, 1]  -45 deg   225 deg  link2  17.4     [-0.3638, 0.006, 0.2275]",
        "Jm=0.0002 G=107.815 B=0.000817 Tc=[0.126, -0.071]",
        "qn: [0, 0.7854, -3.142, 0, 0.7854, 0]",
    ):
        assert expected in out, expected
    assert main(["info", "puma560_modified"]) == 0
    out = capsys.readouterr().out
    assert "convention: modified DH" in out
    assert "joint1: journal bearing mu=0.1 r=0.1 d=0.2; transmission tau_B=6.3 tau_max=97.6 (8-point efficiency)" in out
    assert main(["info", "scara"]) == 0
    assert "3  joint3  prismatic  [0, 0, 1]  0 m    0.4 m  link3  2        [0, 0, -0.2]" in capsys.readouterr().out
    assert main(["info", "--list"]) == 0
    assert "puma560 (default)" in capsys.readouterr().out.splitlines()


def test_cli_info_on_a_urdf_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    path = ROBOTS / "ur_description/urdf/ur5_robot.urdf"
    assert main(["info", str(path), "--tip-link", "tool0"]) == 0
    out = capsys.readouterr().out
    assert "convention: URDF" in out and "chain:      world -> tool0" in out
    assert "shoulder_pan_joint" in out and "com/m (link frame)" in out
    assert main(["info", "puma56"]) == 2
    assert (
        "robot-dynamics info: error: puma56: not a bundled robot (did you mean 'puma560'?)" in capsys.readouterr().err
    )
    assert main(["info", str(ROBOTS / "panda_description/urdf/panda.urdf")]) == 2
    assert "tip_link: the chain is ambiguous" in capsys.readouterr().err


def test_cli_export_urdf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "puma.urdf"
    assert main(["export-urdf", "puma560", "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        again = load_robot(out)
    assert again.joint_names == load_robot("puma560").joint_names
    assert main(["export-urdf", "scara", "--no-visuals"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("<?xml") and "<visual>" not in text and 'name="joint3" type="prismatic"' in text


def test_the_smooth_direction_function_survives_the_urdf_round_trip(capsys: pytest.CaptureFixture[str]) -> None:
    """``smooth_kind`` goes into the ``<robot_dynamics>`` element (only when not the default) and back;
    ``info`` names it; a bad value names the element and the attribute."""
    model = load_robot("puma560")
    assert "smooth_kind" not in model_to_urdf(model) and reload(model).smooth_kind == "tanh"
    linear = model.with_changes(smooth_kind="linear")
    text = model_to_urdf(linear)
    assert '<smooth_kind value="linear"/>' in text and reload(linear).smooth_kind == "linear"
    with pytest.raises(ModelError, match=r"<robot_dynamics>/smooth_kind@value.*'cubic'"):
        loads_urdf(text.replace('<smooth_kind value="linear"/>', '<smooth_kind value="cubic"/>'))
    with pytest.raises(ValueError, match="smooth_kind must be one of"):
        model.with_changes(smooth_kind="cubic")
    assert main(["info", "one_axis"]) == 0  # a robot with joint friction
    assert "friction (smooth direction function: tanh):" in capsys.readouterr().out
