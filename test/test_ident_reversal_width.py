"""Identification beyond the fit: the effort's pairing with the state, and each joint's Coulomb width
(and the reversal's timing) from the rows the fit leaves out near velocity reversals."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.friction.combine import friction_torques
from robot_dynamics.identification import IdentificationError
from robot_dynamics.identification.friction_laws import with_coulomb_widths
from robot_dynamics.identification.pipeline import identify
from robot_dynamics.identification.reversals import LEADS, WIDTHS, fit_reversals
from robot_dynamics.identification.samples import PipelineSettings, lagged
from robot_dynamics.identification.synthetic import perturbed_model, record, write_bag


def test_lagged_pairs_each_state_with_the_effort_lag_messages_later() -> None:
    t = np.arange(5.0)
    q, qd, tau = t[:, None] * 10, t[:, None] * 100, t[:, None] * 1000
    t1, q1, qd1, tau1 = lagged(1, t, q, qd, tau)
    assert (
        t1.tolist() == [0, 1, 2, 3]
        and q1[:, 0].tolist() == [0, 10, 20, 30]
        and tau1[:, 0].tolist() == [1e3, 2e3, 3e3, 4e3]
    )
    assert qd1 is not None and qd1[:, 0].tolist() == [0, 100, 200, 300]
    t2, _, none, tau2 = lagged(-2, t, q, None, tau)
    assert t2.tolist() == [2, 3, 4] and tau2[:, 0].tolist() == [0, 1e3, 2e3] and none is None
    assert lagged(0, t, q, qd, tau)[3] is tau
    for bad in (6, -6, 1.5, True):
        with pytest.raises(IdentificationError, match="effort lag must be an integer"):
            PipelineSettings(effort_lag=bad)  # type: ignore[arg-type]


def test_auto_finds_the_simulators_one_message_lag(tmp_path: Path) -> None:
    """A simulator's bag: each message carries the torque applied over the step into it, i.e. the torque
    of the state one message earlier. ``auto`` finds lag 1 and then fits the truth."""
    scara = rd.load_robot("scara")
    truth = perturbed_model(scara, seed=4)
    rec = record(truth, 3.0, 250.0, seed=7)
    late = replace(rec, tau=np.vstack([rec.tau[:1], rec.tau[:-1]]))  # message k holds the torque of state k-1
    bag = write_bag(tmp_path / "sim", late, truth.joint_names)
    settings = PipelineSettings(polyorder=6, window_s=0.1, reversal_velocity=0.0)
    auto = identify(str(bag), scara, settings=settings, effort_lag="auto", consistent=False, jobs=1, reversals=False)
    assert auto.settings.effort_lag == 1
    scores = {d["lag"]: d["score"] for d in auto.effort_lag_scores}
    assert set(scores) == {0, 1, -1} and scores[1] < 1e-3 * min(scores[0], scores[-1])
    plain = identify(str(bag), scara, settings=settings, consistent=False, jobs=1, reversals=False)
    assert plain.settings.effort_lag == 0 and not plain.effort_lag_scores
    rms_tau = np.sqrt(auto.train.btb_joint / auto.train.count)
    assert np.all(auto.rms["identified_train"] < 1e-6 * rms_tau)  # lag 1: the exact fit
    assert np.all(plain.rms["identified_train"] > 1e3 * auto.rms["identified_train"])
    with pytest.raises(IdentificationError, match="effort lag must be an integer or 'auto'"):
        identify(str(bag), scara, effort_lag="later")


def test_cli_effort_lag_is_checked_and_reported(tmp_path: Path) -> None:
    scara = rd.load_robot("scara")
    rec = record(perturbed_model(scara, seed=4), 3.0, 250.0, seed=7)
    bag = write_bag(tmp_path / "bag", rec, scara.joint_names)
    base = [sys.executable, "-m", "robot_dynamics.cli", "identify", str(bag), "--robot", "scara"]
    bad = subprocess.run(
        [*base, "--out", str(tmp_path / "x.yaml"), "--effort-lag", "late"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "--effort-lag: expected an integer or 'auto', got 'late'" in bad.stderr
    bad = subprocess.run(
        [*base, "--out", str(tmp_path / "x.yaml"), "--effort-lag", "9"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "effort lag must be an integer from -5 to 5, got 9" in bad.stderr
    ok = subprocess.run(
        [
            *base,
            "--out",
            str(tmp_path / "id.yaml"),
            "--effort-lag",
            "auto",
            "--reversal-velocity",
            "0.1",
            "--json",
            str(tmp_path / "r.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert "effort lag 0 message(s), acceleration savgol, chosen by training score (0: " in ok.stdout
    import json

    report = json.loads((tmp_path / "r.json").read_text())
    assert report["effort_lag"]["lag"] == 0 and [d["lag"] for d in report["effort_lag"]["scores"]] == [0, 1, -1]
    assert report["effort_lag"]["acceleration"] == "savgol"
    assert [r["joint"] for r in report["friction"]["reversals"]] == ["joint1", "joint2", "joint3"]
    assert "Coulomb width (reversal timing) from the slow rows" in ok.stdout or not any(
        r["rows"] for r in report["friction"]["reversals"]
    )
    off = subprocess.run(
        [*base, "--out", str(tmp_path / "off.yaml"), "--no-reversal-fit", "--json", str(tmp_path / "off.json")],
        capture_output=True,
        text=True,
    )
    assert off.returncode == 0, off.stderr
    assert "reversals" not in json.loads((tmp_path / "off.json").read_text())["friction"]


@pytest.mark.parametrize("shape", ["tanh", "linear"])
def test_the_width_and_timing_of_a_reversal_are_found_on_the_slow_rows(shape: str) -> None:
    """Slow rows whose friction changes sign ahead of the velocity, ``Fc s((qd + l qdd) / w)`` with a
    width and a lead of each joint and ``s`` tanh or the linear window: the search finds them (grid
    points) and the direction function, everything else held; the model file keeps the choice."""
    model = rd.load_robot("scara")
    friction = [replace(j.friction, viscous=0.5 + k, coulomb=(2.0 + k, -(2.0 + k))) for k, j in enumerate(model.joints)]
    model = model.with_changes(
        joints=tuple(replace(j, friction=f) for j, f in zip(model.joints, friction, strict=True))
    )
    width, lead = np.array([WIDTHS[4], WIDTHS[10], WIDTHS[16]]), np.array([LEADS[18], LEADS[10], LEADS[12]])
    rng = np.random.default_rng(1)
    n_rows = 4000
    q = rng.uniform(-1, 1, (n_rows, 3))
    qd = rng.uniform(-0.12, 0.12, (n_rows, 3))
    qdd = rng.uniform(-3, 3, (n_rows, 3))
    qd[:200] = 0.0  # standing rows: say nothing, left out
    qdd[:200] = 0.0
    viscous = np.array([f.viscous for f in friction])
    led = qd + lead * qdd
    tau = (
        np.asarray(rd.inverse_dynamics(model, q, qd, qdd, friction=False))
        + friction_torques(with_coulomb_widths(model, width), led, smooth=True, smooth_kind=shape)
        + viscous * (qd - led)
    )
    tau[:200] += 1.5  # held by static friction: any torque
    fit = fit_reversals(model, [(q, qd, qdd, tau)], np.full(3, 0.1))
    np.testing.assert_allclose(fit.width, width, rtol=1e-12)
    np.testing.assert_allclose(fit.lead, lead, atol=1e-12)
    assert np.all(fit.rms_after < 1e-9) and np.all(fit.rms_before > 0.1)
    assert np.all(fit.rows < n_rows - 200) and np.all(fit.rows > 0.5 * n_rows)
    assert fit.shape == shape and fit.costs is not None and fit.costs[shape] < 1e-12
    assert min(fit.costs.values()) == fit.costs[shape] and max(fit.costs.values()) > 1.0
    deployed = fit.apply(model)
    assert [j.friction.smoothing_velocity for j in deployed.joints] == width.tolist()
    assert deployed.smooth_kind == shape
    reloaded = rd.models.chain_yaml.loads_chain_yaml(rd.models.chain_yaml.dumps_chain_yaml(deployed))
    assert reloaded.smooth_kind == shape
    np.testing.assert_allclose(  # the default direction function is the model's
        rd.inverse_dynamics(reloaded, q[:50], qd[:50], qdd[:50], smooth=True),
        rd.inverse_dynamics(deployed, q[:50], qd[:50], qdd[:50], smooth=True, smooth_kind=shape),
        rtol=0,
        atol=1e-12,
    )
    # no slow rows: the model keeps its widths
    fast = fit_reversals(model, [(q, qd + 1.0, qdd, tau)], np.full(3, 0.1))
    assert not fast.rows.any() and [j.friction for j in fast.apply(model).joints] == friction
