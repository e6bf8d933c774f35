"""Offsets as a torque the drive applies (``identify --offsets torque``, ``JointFriction.offset``).

A drive whose torque loop closes on the recorded sensor applies that sensor's offset for a zero command:
the fitted offsets are written into the robot file and every consumer of the model's joint torque adds
them (inverse dynamics with friction, the feed-forward law, the momentum observer, the stick-slip forward
dynamics). ``--offsets reading`` (the default) keeps the old output: a reading's bias, not deployed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.dynamics.stick_slip import forward_dynamics_with_friction
from robot_dynamics.errors import ModelError
from robot_dynamics.experiment.motion import Motion, fitted_efforts
from robot_dynamics.feedforward import FeedforwardLaw
from robot_dynamics.identification import IdentificationError, deploy_offsets, regressor
from robot_dynamics.identification.pipeline import identify
from robot_dynamics.identification.report import json_text, model_text, write_model
from robot_dynamics.identification.synthetic import perturbed_model, record, write_bag
from robot_dynamics.model import RobotModel
from robot_dynamics.models import model_to_urdf
from robot_dynamics.models.chain_yaml import dumps_chain_yaml

OFFSETS = np.array([-0.3, 0.25, 0.1])


@pytest.fixture(scope="module")
def scara() -> RobotModel:
    return rd.load_robot("scara")


@pytest.fixture(scope="module")
def fits(scara: RobotModel, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The same recording (a truth with constant offsets in its torques) fitted three ways."""
    tmp = tmp_path_factory.mktemp("offsets")
    truth = perturbed_model(scara, seed=2)
    rec = record(truth, 3.0, 250.0, seed=3, offset=OFFSETS, effort_noise=0.05)
    bag = str(write_bag(tmp / "scara", rec, truth.joint_names))
    options = {"jobs": 1, "reversals": False, "compare_friction": False, "sensor_noise_estimate": False}
    return {
        "default": identify(bag, scara, **options),
        "reading": identify(bag, scara, offsets="reading", **options),
        "torque": identify(bag, scara, offsets="torque", **options),
        "tmp": tmp,
        "bag": bag,
    }


def _states(n: int, rows: int = 20) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(4)
    q, qd, qdd = (rng.uniform(-1.0, 1.0, (rows, n)) for _ in range(3))
    return q, qd, qdd


def test_torque_offsets_are_written_and_read_back(scara: RobotModel, fits: dict[str, object]) -> None:
    result = fits["torque"]
    assert result.identified is not None and result.offsets is not None  # type: ignore[attr-defined]
    fitted = np.asarray(result.offsets)  # type: ignore[attr-defined]
    np.testing.assert_allclose(fitted, OFFSETS, atol=0.05)
    assert result.offsets_deployed  # type: ignore[attr-defined]
    loaded = rd.load_robot(str(write_model(Path(fits["tmp"]) / "torque.yaml", result)))  # type: ignore[arg-type]
    for model in (result.identified, loaded):  # type: ignore[attr-defined]
        np.testing.assert_allclose([j.friction.offset for j in model.joints], fitted, rtol=1e-12)
    # the model's inverse dynamics is the whole fit, Y theta with the offsets
    q, qd, qdd = _states(3)
    whole = regressor(scara, q, qd, qdd, result.pset) @ result.fit.theta  # type: ignore[attr-defined]
    tau = rd.inverse_dynamics(loaded, q, qd, qdd, smooth=True)
    np.testing.assert_allclose(tau, whole, rtol=0, atol=1e-9 * np.abs(whole).max())
    report = json.loads(json_text(result))  # type: ignore[arg-type]
    assert report["offsets"] == {"use": "torque", "deployed": True}
    text = model_text(result)  # type: ignore[arg-type]
    assert "offsets_deployed_values" in text and "offsets_not_deployed" not in text


def test_reading_offsets_keep_the_old_output(scara: RobotModel, fits: dict[str, object]) -> None:
    default, reading, torque = fits["default"], fits["reading"], fits["torque"]
    np.testing.assert_array_equal(reading.fit.theta, default.fit.theta)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(torque.fit.theta, default.fit.theta)  # type: ignore[attr-defined]
    for result in (default, reading):
        assert not result.offsets_deployed  # type: ignore[attr-defined]
        assert all(j.friction.offset == 0.0 for j in result.identified.joints)  # type: ignore[attr-defined]
        text = model_text(result)  # type: ignore[arg-type]
        assert "offsets_not_deployed" in text and not re.search(r"\boffset: -?[0-9]", text)
        assert json.loads(json_text(result))["offsets"] == {"use": "reading", "deployed": False}  # type: ignore[arg-type]
    # the written model: Y theta without the offsets, as before the option existed
    q, qd, qdd = _states(3)
    fitted = regressor(scara, q, qd, qdd, reading.pset) @ reading.fit.theta - reading.offsets  # type: ignore[attr-defined]
    tau = rd.inverse_dynamics(reading.identified, q, qd, qdd, smooth=True)  # type: ignore[attr-defined]
    np.testing.assert_allclose(tau, fitted, rtol=0, atol=1e-9 * np.abs(fitted).max())
    assert [j.friction for j in reading.identified.joints] == [  # type: ignore[attr-defined]
        replace(j.friction, offset=0.0)
        for j in torque.identified.joints  # type: ignore[attr-defined]
    ]


def test_fitted_efforts_keep_the_offsets_behind_a_torque_loop(scara: RobotModel, fits: dict[str, object]) -> None:
    result = fits["torque"]
    q, qd, qdd = _states(3, 10)
    motion = Motion(tuple(scara.joint_names), np.arange(10) * 0.01, q, qd, qdd)
    theta, pset = result.fit.theta, result.pset  # type: ignore[attr-defined]
    applied = fitted_efforts(scara, motion, theta, pset, "torque")
    read = fitted_efforts(scara, motion, theta, pset)
    np.testing.assert_allclose(applied - read, np.broadcast_to(result.offsets, q.shape), atol=1e-12)  # type: ignore[attr-defined]
    with pytest.raises(IdentificationError, match="offsets must be one of reading, torque"):
        fitted_efforts(scara, motion, theta, pset, "bias")


def test_bad_offset_settings_are_rejected(scara: RobotModel, fits: dict[str, object]) -> None:
    with pytest.raises(IdentificationError, match="offsets must be one of reading, torque; got 'bias'"):
        identify(str(fits["bag"]), scara, offsets="bias", jobs=1)
    with pytest.raises(IdentificationError, match="expected 3 finite values"):
        deploy_offsets(scara, [0.1, 0.2])
    with pytest.raises(IdentificationError, match="expected 3 finite values"):
        deploy_offsets(scara, [0.1, np.nan, 0.2])
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "robot_dynamics.cli",
            "identify",
            str(fits["bag"]),
            "--robot",
            "scara",
            "--offsets",
            "x",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "--offsets" in run.stderr and "'torque'" in run.stderr


def test_robot_files_hold_the_offset(scara: RobotModel, tmp_path: Path) -> None:
    model = deploy_offsets(scara, OFFSETS)
    for name, text in (("m.yaml", dumps_chain_yaml(model)), ("m.urdf", model_to_urdf(model))):
        path = tmp_path / name
        path.write_text(text)
        loaded = rd.load_robot(str(path))
        assert [j.friction.offset for j in loaded.joints] == pytest.approx(OFFSETS.tolist(), abs=1e-12)
    # no offset: no key (the files of models without one are unchanged)
    assert "offset" not in str(dumps_chain_yaml(scara)).split("joints:")[1].replace("origin", "")


@pytest.mark.parametrize("bad", ["abc", ".nan", "[1, 2]"])
def test_a_bad_offset_in_a_robot_file_is_named(scara: RobotModel, tmp_path: Path, bad: str) -> None:
    text = dumps_chain_yaml(deploy_offsets(scara, OFFSETS)).replace("offset: -0.3", f"offset: {bad}", 1)
    assert f"offset: {bad}" in text
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ModelError) as info:
        rd.load_robot(str(path))
    message = str(info.value)
    assert "bad.yaml" in message and "friction.offset" in message


def test_a_bad_offset_in_a_urdf_is_named(scara: RobotModel, tmp_path: Path) -> None:
    text = model_to_urdf(deploy_offsets(scara, OFFSETS))
    assert 'offset="-0.3"' in text
    path = tmp_path / "bad.urdf"
    path.write_text(text.replace('offset="-0.3"', 'offset="x"', 1))
    with pytest.raises(ModelError) as info:
        rd.load_robot(str(path))
    assert "bad.urdf" in str(info.value) and "offset" in str(info.value)


def test_every_joint_torque_consumer_adds_the_offset(scara: RobotModel) -> None:
    model = deploy_offsets(scara, OFFSETS)
    q, qd, qdd = _states(3)
    for smooth in (False, True):  # inverse dynamics with friction, a batch and one state
        delta = rd.inverse_dynamics(model, q, qd, qdd, smooth=smooth) - rd.inverse_dynamics(
            scara, q, qd, qdd, smooth=smooth
        )
        np.testing.assert_allclose(delta, np.broadcast_to(OFFSETS, q.shape), atol=1e-12)
        one = rd.inverse_dynamics(model, q[0], qd[0], qdd[0], smooth=smooth)
        np.testing.assert_allclose(one - rd.inverse_dynamics(scara, q[0], qd[0], qdd[0], smooth=smooth), OFFSETS)
    # the feed-forward node's law: moving (friction at a given velocity), and holding at rest
    plain, shifted = FeedforwardLaw(scara), FeedforwardLaw(model)
    for rows in (slice(0, 1), slice(None)):
        a, b, c = (x[rows].squeeze() if rows == slice(0, 1) else x[rows] for x in (q, qd, qdd))
        got = shifted.torque(a, b, c, True, True, b) - plain.torque(a, b, c, True, True, b)
        np.testing.assert_allclose(got, np.broadcast_to(OFFSETS, np.shape(a)), atol=1e-12)
        held = shifted.holding(a, np.zeros_like(a), True, True) - plain.holding(a, np.zeros_like(a), True, True)
        np.testing.assert_allclose(held, np.broadcast_to(OFFSETS, np.shape(a)), atol=1e-12)
    # the momentum observer: a drive at rest reading gravity + its offset sees no external torque
    gravity = rd.inverse_dynamics(scara, q[0], np.zeros(3), np.zeros(3), friction=False)
    for observed, residual in ((model, np.zeros(3)), (scara, -OFFSETS)):  # r: the external torque
        observer = rd.MomentumObserver(observed, 50.0)
        for k in range(400):
            r = observer.update(k * 0.001, q[0], np.zeros(3), gravity + OFFSETS)
        np.testing.assert_allclose(r, residual, atol=1e-6)
    # forward dynamics with friction: the drive applies the command less the offset
    tau = rd.inverse_dynamics(model, q, qd, qdd, smooth=False)
    np.testing.assert_allclose(forward_dynamics_with_friction(model, q, qd, tau), qdd, atol=1e-8)


def test_a_mujoco_plant_of_a_model_says_it_cannot_hold_the_offset(scara: RobotModel) -> None:
    from robot_dynamics.plant.mujoco_model import nominal_joint_terms

    _, notes = nominal_joint_terms(deploy_offsets(scara, OFFSETS))
    assert any("constant offset" in note and "joint1" in note for note in notes)
    assert not any("offset" in note for note in nominal_joint_terms(scara)[1])
