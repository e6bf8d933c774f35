"""Sensors and actuators of a real arm around the plants (robot_dynamics.plant.sensors, .sensor_profile).

Every element against a hand computation on a stand-in plant whose motion is known in closed form
(:class:`Ramp`: constant velocity, whatever the torque; it records the torques it was given):
quantization, the velocity estimator's response, delays counted in steps, the torque constant on the
command and not on the reading, the ripple's period mean, the link-side scale, offset and drift, the
drive's torque loop. Then determinism from the seed, the profiles (load, extend, override, errors), both
engines wrapped, the ideal profile = the bare plant, the model engine's physics substeps, run_plant's
truth; on a MuJoCo plant with joint friction the torque loop's link torque following the command, and the
experiment's case D (the plant's link-side inverse dynamics through the loop).
"""

from __future__ import annotations

import math
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS

import robot_dynamics as rd
from robot_dynamics.bag import read_joint_states
from robot_dynamics.control import ControlLaw, Controller, ControlSettings
from robot_dynamics.errors import ModelError
from robot_dynamics.experiment.motion import drive_factor, drive_offset, planned_motion, plant_efforts
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.plant import (
    IDEAL,
    ModelPlant,
    MujocoPlant,
    Plant,
    PlantOptions,
    SensedPlant,
    bundled_profiles,
    load_sensor_profile,
    make_plant,
)
from robot_dynamics.plant.run import run_plant, write_run_bag
from robot_dynamics.plant.sensor_profile import parse_sensor_profile
from robot_dynamics.plant.true_model import link_side

UR5 = str(EXAMPLE_ROBOTS / "ur_description/urdf/ur5_robot.urdf")
T = 0.002
UR5_START = np.array([0.0, -1.2, 1.4, -1.6, -1.57, 0.3])
UR5_JOINT_TERMS = "damping: [2.0, 2.0, 1.5, 0.5, 0.5, 0.3]\nfriction: [4.0, 4.0, 3.0, 1.0, 1.0, 0.8]\n"
UR5_JOINT_TERMS += "armature: [0.15, 0.15, 0.1, 0.02, 0.02, 0.02]\n"
QUIET = {"torque": {"noise": 0.0, "offset": 0.0, "drift": {"random_walk": 0.0}}}  # franka's sensors without noise


@pytest.fixture(scope="module")
def puma() -> RobotModel:
    return rd.load_robot("puma560")


@pytest.fixture(scope="module")
def ur5() -> RobotModel:
    return rd.load_robot(UR5)


class Ramp(Plant):
    """q(t) = q0 + v t whatever the torque; the link-side torque is ``2 tau + 1``; records the torques."""

    engine = "ramp"

    def __init__(self, model: RobotModel, velocity: Sequence[float], period: float = T) -> None:
        super().__init__(model, period)
        self.v = np.asarray(velocity, dtype=np.float64)
        self._q, self._t = np.zeros(model.dof), 0.0
        self.given: list[FloatArray] = []

    @property
    def q(self) -> FloatArray:
        return self._q.copy()

    @property
    def qd(self) -> FloatArray:
        return self.v.copy()

    @property
    def time(self) -> float:
        return self._t

    def reset(self, q: FloatArray, qd: FloatArray) -> None:
        self._q, self._t = np.array(q, dtype=np.float64), 0.0

    def _advance(self, tau: FloatArray, duration: float) -> None:
        self.given.append(np.array(tau))
        self._link_torque = 2.0 * tau + 1.0
        self._q = self._q + self.v * duration
        self._t += duration


def sensed(model: RobotModel, document: dict[str, Any], velocity: Sequence[float] | None = None) -> SensedPlant:
    inner = Ramp(model, np.zeros(model.dof) if velocity is None else velocity)
    plant = SensedPlant(inner, parse_sensor_profile(document, "test.yaml")[0])
    plant.reset(np.zeros(model.dof), inner.qd)
    return plant


# -- each element against a hand computation --------------------------------------------------------------
@pytest.mark.parametrize("side", ["link", "motor"])
def test_encoder_quantizes_to_counts_per_revolution(puma: RobotModel, side: str) -> None:
    v = np.linspace(0.1, 0.6, 6)
    plant = sensed(puma, {"gear_ratio": 10.0, "encoder": {"side": side, "counts_per_revolution": 1000}}, v)
    step = 2.0 * math.pi / (1000 * (10.0 if side == "motor" else 1.0))  # finer at the link behind a gear
    for k in range(1, 40):
        plant.step(np.zeros(6))
        true = v * k * T
        assert np.allclose(plant.q, np.round(true / step) * step, rtol=0, atol=1e-15)
        assert np.all(np.abs(plant.q - plant.true_q) <= step / 2 + 1e-15)
    assert np.allclose(plant.true_q, v * 39 * T, rtol=0, atol=1e-15)


@pytest.mark.parametrize("order", [1, 2])
def test_velocity_estimate_is_the_filtered_difference(puma: RobotModel, order: int) -> None:
    v, cutoff = np.full(6, 0.3), 25.0
    plant = sensed(puma, {"velocity": {"estimator": "difference", "cutoff": cutoff, "order": order}})
    plant.inner.v = v  # type: ignore[attr-defined]  # from rest (the estimate's start) to v: the step response
    a = T / (T + 1.0 / (2.0 * math.pi * cutoff))
    b = 1.0 - a
    for k in range(1, 60):
        plant.step(np.zeros(6))
        # closed forms of one and two first-order stages driven by a unit step (y += a (x - y))
        expected = 1.0 - b**k if order == 1 else 1.0 - b**k - k * a * b**k
        assert np.allclose(plant.qd, 0.3 * expected, rtol=1e-12, atol=1e-15), k


def test_velocity_without_filter_is_the_difference_of_the_quantized_angle(puma: RobotModel) -> None:
    v = np.full(6, 0.0123)
    plant = sensed(puma, {"encoder": {"counts_per_revolution": 4096}, "velocity": {"estimator": "difference"}}, v)
    step, last = 2.0 * math.pi / 4096, np.zeros(6)
    for k in range(1, 30):
        plant.step(np.zeros(6))
        now = np.round(v * k * T / step) * step
        assert np.allclose(plant.qd, (now - last) / T, rtol=0, atol=1e-9)
        last = now


def test_delays_are_counted_in_steps(puma: RobotModel) -> None:
    v = np.arange(1.0, 7.0)
    plant = sensed(puma, {"delay": {"measurement": 2, "command": 3}}, v)
    inner = plant.inner
    assert isinstance(inner, Ramp)
    commands = [np.full(6, float(k + 1)) for k in range(12)]
    for k, command in enumerate(commands):
        plant.step(command)
        # the state reaches the controller two steps late (the reset state before that)
        assert np.allclose(plant.q, v * max(k + 1 - 2, 0) * T, rtol=1e-13, atol=0)
        assert np.allclose(plant.true_q, v * (k + 1) * T, rtol=1e-13, atol=0)
    # the drive applies the command of three steps before (the first one until then)
    applied = [c[0] for c in inner.given]
    assert applied == [1.0, 1.0, 1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    plant.reset(np.zeros(6), v)  # a reset starts the delays again
    plant.step(np.full(6, 50.0))
    assert inner.given[-1][0] == 50.0 and np.array_equal(plant.q, np.zeros(6))


def test_torque_constant_acts_on_the_command_not_on_the_reading(ur5: RobotModel) -> None:
    e = [0.05, -0.03, 0.02, 0.0, 0.04, -0.05]
    plant = sensed(ur5, {"actuator": {"constant_error": e}})
    limit = np.array([j.limits.effort for j in ur5.joints])
    assert np.isfinite(limit).all()
    tau = np.array([10.0, -20.0, 1e4, 0.5, -1e4, 2.0])  # two beyond their limits
    applied = plant.step(tau)
    limited = np.clip(tau, -limit, limit)
    assert np.allclose(applied, (1.0 + np.array(e)) * limited, rtol=1e-15)  # the motor: (1 + e) u
    assert np.array_equal(plant.applied, applied) and np.array_equal(plant.inner.given[-1], applied)  # type: ignore[attr-defined]
    assert np.array_equal(plant.effort, limited)  # K_t,nominal * current: the command, no (1 + e)
    assert plant.clamped_steps == 1 and plant.clamped_joints.tolist() == [0, 0, 1, 0, 1, 0]


def test_ripple_is_the_period_mean_over_the_rotor_angle(puma: RobotModel) -> None:
    v = np.array([0.0, 0.05, 0.3, 1.0, 2.0, 3.0])
    document = {"gear_ratio": 50.0, "actuator": {"ripple": {"amplitude": 0.02, "order": [6, 6, 6, 3, 2, 1]}}}
    document["actuator"]["ripple"]["phase"] = [0.0, 0.4, 1.0, -2.0, 3.0, 0.1]
    plant = sensed(puma, document, v)
    h, phase = np.array([6, 6, 6, 3, 2, 1.0]), np.array([0.0, 0.4, 1.0, -2.0, 3.0, 0.1])
    u = np.full(6, 10.0)
    for k in range(5):
        applied = plant.step(u)
        # an independent mean: the midpoint rule over the rotor angle swept in the period
        s = (np.arange(20000) + 0.5) / 20000 * T
        angle = h[:, None] * 50.0 * (v[:, None] * (k * T + s[None, :])) + phase[:, None]
        expected = u * (1.0 + 0.02 * np.sin(angle).mean(axis=1))
        assert np.allclose(applied, expected, rtol=1e-9, atol=0)
    assert np.array_equal(plant.effort, u)  # the drive does not see the ripple


def test_link_side_reading_scale_offset_and_drift(puma: RobotModel) -> None:
    s, o, rate = [0.01, -0.02, 0.0, 0.0, 0.0, 0.03], [0.1, 0.0, -0.2, 0.0, 0.0, 0.05], [0.5, 0, 0, 0, 0, -1.0]
    document = {"torque": {"sensing": "link", "scale_error": s, "offset": o, "drift": {"rate": rate}}}
    plant = sensed(puma, document)
    tau = np.linspace(-3.0, 3.0, 6)
    for k in range(1, 11):
        plant.step(tau)
        link = 2.0 * tau + 1.0  # the Ramp's link-side torque
        assert plant.true_link_torque is not None and np.array_equal(plant.true_link_torque, link)
        expected = (1.0 + np.array(s)) * link + np.array(o) + np.array(rate) * k * T
        assert np.allclose(plant.effort, expected, rtol=1e-14, atol=1e-14)


def test_noise_and_random_walk_have_their_standard_deviations(puma: RobotModel) -> None:
    document = {
        "encoder": {"noise": 1e-4},
        "torque": {"sensing": "link", "noise": [0.1, 0.1, 0.1, 0.2, 0.2, 0.2], "drift": {"random_walk": 0.05}},
    }
    plant = sensed(puma, document)
    q, effort = [], []
    for _ in range(4000):
        plant.step(np.zeros(6))
        q.append(plant.q - plant.true_q)
        effort.append(plant.effort - 1.0)  # link torque 2 * 0 + 1
    q_err, e_err = np.array(q), np.array(effort)
    assert np.allclose(q_err.std(axis=0), 1e-4, rtol=0.1)
    # reading = noise + drift: the first difference removes the drift's level: var = 2 s^2 + w^2 T
    increments = np.diff(e_err, axis=0).std(axis=0)
    expected = np.sqrt(2.0 * np.array([0.1, 0.1, 0.1, 0.2, 0.2, 0.2]) ** 2 + 0.05**2 * T)
    assert np.allclose(increments, expected, rtol=0.1)


def test_torque_loop_corrects_the_motor_command_from_the_link_side_reading(puma: RobotModel) -> None:
    e, s, o = np.array([0.04, -0.03, 0.0, 0.02, 0.0, 0.05]), np.array([0.01, 0.0, -0.02, 0.0, 0.03, 0.0]), 0.2
    f = np.array([100.0, 30.0, 100.0, 10.0, 0.0, 60.0])  # Hz; joint 5 has no loop
    document = {
        "actuator": {"constant_error": e.tolist(), "torque_loop": {"bandwidth": f.tolist()}},
        "torque": {"sensing": "link", "scale_error": s.tolist(), "offset": o},
    }
    plant = sensed(puma, document)
    a = 1.0 - np.exp(-2.0 * math.pi * f * T)
    u, c = np.linspace(-4.0, 4.0, 6), np.zeros(6)
    for k in range(200):
        applied = plant.step(u)
        # by hand: the motor applies (1 + e)(u + c), the Ramp's link torque is 2 tau + 1, the drive reads
        # (1 + s) tau_J + o and integrates the error into the next period's correction
        assert np.allclose(applied, (1.0 + e) * (u + c), rtol=1e-12, atol=1e-12), k
        link = 2.0 * applied + 1.0
        reading = (1.0 + s) * link + o
        assert np.allclose(plant.effort, reading, rtol=1e-12, atol=1e-12)
        c = c + a * (u - reading)
    # the link torque settles where the reading equals the command: (u - o) / (1 + s), whatever the motor's
    # constant and the torque lost between motor and link; without a loop (joint 5) it stays 2 u + 1
    link = plant.true_link_torque
    assert link is not None
    loop = f > 0
    assert np.allclose(link[loop], ((u - o) / (1.0 + s))[loop], rtol=0, atol=1e-9)
    assert link[4] == 2.0 * u[4] + 1.0
    plant.reset(np.zeros(6), np.zeros(6))  # a reset starts the correction again
    assert np.allclose(plant.step(u), (1.0 + e) * u, rtol=1e-15, atol=0)


def track_link_torque(loop: bool, plant_file: Path, ur5: RobotModel, steps: int = 1500) -> FloatArray:
    """RMS of (true link torque - the command the drive had) per joint, a PD about the start pose plus a
    1 Hz sine, on the deviated MuJoCo UR5 with franka's sensors (no noise), its torque loop or none."""
    overrides: dict[str, Any] = dict(QUIET)
    if not loop:
        overrides["actuator"] = {"torque_loop": {"bandwidth": 0.0}}
    options = PlantOptions(
        engine="mujoco", deviations=str(plant_file), sensor_profile="franka", sensor_overrides=overrides
    )
    plant = make_plant(options, ur5, 0.001, UR5)
    plant.reset(UR5_START, np.zeros(6))
    inertia = np.diag(rd.inertia_matrix(ur5, UR5_START))
    kp, kd, gravity = inertia * 100.0, inertia * 20.0, rd.gravity_torques(ur5, UR5_START)
    amplitude = np.array([6.0, 6.0, 4.0, 1.5, 1.5, 1.0])
    errors, held = [], None
    for k in range(steps):
        u = (
            gravity
            + kp * (UR5_START - plant.q)
            - kd * plant.qd
            + amplitude * np.sin(2 * math.pi * k * 1e-3 + np.arange(6))
        )
        plant.step(u)
        if held is not None and k >= 300:  # the command delay: the drive applies the command of the step before
            errors.append(plant.true_link_torque - held)
        held = plant.limit(u)
    return np.sqrt(np.mean(np.square(errors), axis=0))


def test_torque_loop_makes_the_link_torque_follow_the_command_despite_joint_friction(
    ur5: RobotModel, tmp_path: Path
) -> None:
    plant_file = tmp_path / "plant.yaml"
    plant_file.write_text(UR5_JOINT_TERMS)
    with_loop, without = track_link_torque(True, plant_file, ur5), track_link_torque(False, plant_file, ur5)
    # without the loop the link lacks the joint's friction, damping and rotor torque (Coulomb 0.8-4 N m)
    assert np.all(without > 0.5), without
    # with it the link receives the command, up to the loop's response to friction reversals and inertia
    assert np.all(with_loop < 0.2 * without), (with_loop, without)


# -- determinism and draws --------------------------------------------------------------------------------
def record(plant: Plant, steps: int = 50) -> FloatArray:
    rows = []
    for k in range(steps):
        plant.step(np.full(plant.model.dof, 5.0 * math.sin(0.1 * k)))
        rows.append(np.concatenate([plant.q, plant.qd, plant.effort, plant.applied]))
    return np.array(rows)


def test_everything_random_comes_from_the_seed_and_a_reset_repeats_it(puma: RobotModel) -> None:
    def make(seed: int) -> SensedPlant:
        plant = make_plant(
            PlantOptions(sensor_profile="ur_e_series", sensor_overrides={"seed": seed}), puma, T, "puma560"
        )
        assert isinstance(plant, SensedPlant)
        plant.reset(puma.named_poses["qn"], np.zeros(6))
        return plant

    a, b, c = make(3), make(3), make(4)
    first = record(a)
    assert np.array_equal(first, record(b))  # same seed: the same numbers
    assert not np.allclose(first, record(c))
    a.reset(puma.named_poses["qn"], np.zeros(6))
    assert np.array_equal(record(a), first)  # a reset starts the streams, filters and delays again


def test_the_torque_loop_repeats_after_a_reset(puma: RobotModel) -> None:
    def make() -> SensedPlant:
        plant = make_plant(PlantOptions(sensor_profile="franka"), puma, 0.001, "puma560")
        assert isinstance(plant, SensedPlant) and plant.torque_loop
        plant.reset(puma.named_poses["qn"], np.zeros(6))
        return plant

    a = make()
    first = record(a, 300)
    assert np.array_equal(first, record(make(), 300))  # the same profile: the same numbers
    a.reset(puma.named_poses["qn"], np.zeros(6))
    assert np.array_equal(record(a, 300), first)  # the correction starts again from zero
    quiet = make_plant(PlantOptions(sensor_profile="franka", sensor_overrides=QUIET), puma, 0.001, "puma560")
    quiet.reset(puma.named_poses["qn"], np.zeros(6))
    # the commands do not depend on the state: without the loop the applied torques would be equal
    assert not np.allclose(record(quiet, 300)[:, -6:], first[:, -6:])  # the sensor's noise reaches them


def test_draws_lie_in_their_distribution_and_keys_draw_apart(puma: RobotModel) -> None:
    names = [[n] for n in puma.joint_names]
    base = load_sensor_profile(IDEAL, {"seed": 9, "actuator": {"constant_error": {"uniform": 0.05}}})
    e = base.resolve(names)["actuator.constant_error"]
    assert np.all(np.abs(e) <= 0.05) and np.unique(e).size == 6
    # another key drawn too: the constant errors stay the same numbers (each key its own stream)
    both = load_sensor_profile(base, {"torque": {"offset": {"normal": 0.1}}}).resolve(names)
    assert np.array_equal(both["actuator.constant_error"], e) and np.unique(both["torque.offset"]).size == 6
    # a named joint overrides its draw, the others keep theirs
    named = load_sensor_profile(base, {"actuator": {"constant_error": {"joint3": 0.0}}}).resolve(names)
    drawn = named["actuator.constant_error"]
    assert drawn[2] == 0.0 and np.array_equal(drawn[[0, 1, 3, 4, 5]], e[[0, 1, 3, 4, 5]])


# -- profiles -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["ideal", "ur_e_series", "franka", "kuka_iiwa", "industrial_125hz"])
def test_bundled_profiles_load_and_fit_six_and_seven_joint_arms(name: str) -> None:
    assert name in bundled_profiles()
    profile = load_sensor_profile(name)
    for dof in (6, 7):
        resolved = profile.resolve([[f"j{i}"] for i in range(dof)])
        assert all(v.shape == (dof,) and np.isfinite(v).all() for v in resolved.values.values())
        assert (resolved["gear_ratio"] > 0).all() and (resolved["actuator.constant_error"] > -1).all()


def test_profile_values_as_documented() -> None:
    ur, franka = load_sensor_profile("ur_e_series"), load_sensor_profile("franka")
    assert (ur.rate, ur.period, ur.measurement_delay, ur.command_delay) == (500.0, 0.002, 1, 1)
    assert (franka.rate, franka.measurement_delay, franka.command_delay) == (1000.0, 1, 1)
    assert (ur.torque_sensing, franka.torque_sensing) == ("motor", "link")
    assert load_sensor_profile("industrial_125hz").measurement_delay == 2
    assert IDEAL.rate is None and IDEAL.measurement_delay == 0 and IDEAL.torque_sensing == "motor"
    r = ur.resolve([[f"j{i}"] for i in range(7)])  # a 7-joint arm: the last (wrist) value repeats
    assert r["torque.noise"].tolist() == [0.6, 0.6, 0.6, 0.15, 0.15, 0.15, 0.15] and r.notes
    assert np.all(np.abs(r["actuator.constant_error"]) <= 0.05)


def test_a_profile_file_extends_another_and_overrides_apply_on_top(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text("base: ur_e_series\nname: my_ur\ndelay: {command: 2}\ntorque: {noise: 0.3}\n")
    (tmp_path / "lab.yaml").write_text("base: mine.yaml\nencoder: {noise: 1.0e-6}\n")  # relative to this file
    profile = load_sensor_profile(tmp_path / "lab.yaml", "{seed: 5, torque: {noise: {j2: 0.9}}}")
    assert profile.name == "lab" and profile.sources == ("ur_e_series.yaml", "mine.yaml", "lab.yaml", "overrides")
    assert (profile.rate, profile.measurement_delay, profile.command_delay, profile.seed) == (500.0, 1, 2, 5)
    r = profile.resolve([[f"j{i}"] for i in range(6)])
    assert r["torque.noise"].tolist() == [0.3, 0.3, 0.9, 0.3, 0.3, 0.3]
    assert r["encoder.noise"].tolist() == [1e-6] * 6 and r["gear_ratio"].tolist() == [101.0] * 6


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"torque": {"nosie": 0.1}}, "test.yaml: torque.nosie: unknown key (did you mean 'torque.noise'?)"),
        ({"torque": {"noise": [0.1, -0.1]}}, "test.yaml: torque.noise[1]: must be >= 0, got -0.1"),
        ({"torque": {"sensing": "current"}}, "test.yaml: torque.sensing: must be one of ['motor', 'link']"),
        ({"delay": {"command": 1.5}}, "test.yaml: delay.command: expected an integer >= 0"),
        ({"encoder": {"noise": {"normal": 0.1}}}, "test.yaml: encoder.noise.normal: this key cannot be drawn"),
        ({"actuator": {"constant_error": {"uniform": 1.2}}}, "test.yaml: actuator.constant_error.uniform: must be < 1"),
        ({"gear_ratio": 0}, "test.yaml: gear_ratio: must be > 0, got 0"),
        ({"velocity": {"order": 3}}, "test.yaml: velocity.order: must be one of [1, 2], got 3"),
        ({"rate": "fast"}, "test.yaml: rate: expected a number"),
        (
            {"actuator": {"torque_loop": {"bandwidth": [100.0, -5.0]}}},
            "test.yaml: actuator.torque_loop.bandwidth[1]: must be >= 0, got -5.0",
        ),
        (
            {"actuator": {"torque_loop": {"bandwith": 100.0}}},
            "test.yaml: actuator.torque_loop.bandwith: unknown key (did you mean 'actuator.torque_loop.bandwidth'?)",
        ),
        ({"actuator": {"torque_loop": 100.0}}, "test.yaml: actuator.torque_loop: expected a mapping, got 100.0"),
        (
            {"actuator": {"torque_loop": {"bandwidth": {"uniform": 10.0}}}},
            "test.yaml: actuator.torque_loop.bandwidth.uniform: this key cannot be drawn",
        ),
        ([1, 2], "test.yaml: expected a mapping of profile keys"),
    ],
)
def test_bad_profiles_name_the_file_and_the_field(document: Any, message: str) -> None:
    with pytest.raises(ModelError, match=None) as info:
        parse_sensor_profile(document, "test.yaml")
    assert str(info.value).startswith(message), str(info.value)


def test_bad_profile_files(tmp_path: Path, puma: RobotModel) -> None:
    (tmp_path / "a.yaml").write_text("base: b.yaml\n")
    (tmp_path / "b.yaml").write_text("base: a.yaml\n")
    with pytest.raises(ModelError, match=r"a\.yaml: base: profiles extend each other in a circle"):
        load_sensor_profile(tmp_path / "a.yaml")
    with pytest.raises(ModelError, match=r"ur_e_serie: not a bundled sensor profile \(did you mean 'ur_e_series'\?\)"):
        load_sensor_profile("ur_e_serie")
    with pytest.raises(ModelError, match=r"sensor_overrides: line \d+, column \d+: invalid YAML"):
        load_sensor_profile("franka", "{seed: [", label="sensor_overrides")
    with pytest.raises(ModelError, match="overrides: base: overrides cannot name a base"):
        load_sensor_profile("franka", {"base": "ideal"})
    (tmp_path / "names.yaml").write_text("torque: {noise: {jiont3: 0.2}}\n")
    unknown = r"names\.yaml: torque\.noise\[jiont3\]: no such joint \(did you mean 'joint3'\?\)"
    with pytest.raises(ModelError, match=unknown):
        make_plant(PlantOptions(sensor_profile=str(tmp_path / "names.yaml")), puma, T, "puma560")


def test_a_torque_loop_needs_link_side_torque_sensors(puma: RobotModel, tmp_path: Path) -> None:
    names = [[n] for n in puma.joint_names]
    message = (
        "sensor_overrides: actuator.torque_loop.bandwidth: the drive's torque loop closes on link-side joint torque "
        "sensors: it needs torque.sensing: link (the profile reads 'motor')"
    )
    overrides = {"actuator": {"torque_loop": {"bandwidth": 50.0}}}
    with pytest.raises(ModelError) as info:
        load_sensor_profile("ur_e_series", overrides, label="sensor_overrides").resolve(names)
    assert str(info.value) == message
    (tmp_path / "loop.yaml").write_text("base: ur_e_series\nactuator: {torque_loop: {bandwidth: {joint2: 50.0}}}\n")
    with pytest.raises(ModelError, match=r"^loop\.yaml: actuator\.torque_loop\.bandwidth: the drive's torque loop"):
        make_plant(PlantOptions(sensor_profile=str(tmp_path / "loop.yaml")), puma, T, "puma560")
    # the bundled arms with link-side sensors close the loop; the others do not
    for name, on in (("franka", True), ("kuka_iiwa", True), ("ur_e_series", False), ("industrial_125hz", False)):
        bandwidth = load_sensor_profile(name).resolve(names)["actuator.torque_loop.bandwidth"]
        assert bool(bandwidth.all()) is on and bool(bandwidth.any()) is on, name


# -- wiring: make_plant, both engines, the ideal profile, substeps -----------------------------------------------
def test_no_profile_is_the_bare_plant_and_the_ideal_profile_changes_nothing(puma: RobotModel) -> None:
    assert type(make_plant(PlantOptions(), puma, T, "puma560")) is ModelPlant
    bare = ModelPlant(puma, T)
    wrapped = make_plant(PlantOptions(sensor_profile="ideal"), puma, T, "puma560")
    assert isinstance(wrapped, SensedPlant) and wrapped.physics is not wrapped
    q0 = puma.named_poses["qn"]
    for plant in (bare, wrapped):
        plant.reset(q0, np.zeros(6))
    a, b = record(bare, 200), record(wrapped, 200)
    assert np.array_equal(a, b)  # bit for bit: no quantization, no noise, no delay, the plant's velocity


def test_both_engines_wrapped_with_their_truth(ur5: RobotModel) -> None:
    q0 = np.array([0.0, -1.2, 1.4, -1.6, -1.57, 0.3])
    for engine in ("model", "mujoco"):
        for name in ("ur_e_series", "franka"):
            plant = make_plant(PlantOptions(engine=engine, sensor_profile=name), ur5, 0.002, UR5)
            assert isinstance(plant, SensedPlant) and plant.engine == engine
            assert isinstance(plant.physics, ModelPlant if engine == "model" else MujocoPlant)
            plant.reset(q0, np.zeros(6))
            hold = rd.gravity_torques(ur5, q0)
            for _ in range(100):
                plant.step(hold)
            link = plant.true_link_torque
            assert link is not None and np.abs(link - hold).max() < 5.0  # near gravity, the arm about still
            assert not np.array_equal(plant.q, plant.true_q) or not np.array_equal(plant.effort, plant.applied)
            if name == "franka":  # link side, about 0.1 N m of noise and offsets
                assert np.abs(plant.effort - link).max() < 2.0
    assert hasattr(plant, "true_model") and plant.inverse_dynamics(q0, np.zeros(6), np.zeros(6)).shape == (6,)


def test_profile_and_plant_options_must_agree(puma: RobotModel) -> None:
    with pytest.raises(ValueError, match="torque_sensing 'link' contradicts sensor profile 'ur_e_series'"):
        make_plant(PlantOptions(sensor_profile="ur_e_series", torque_sensing="link"), puma, T, "puma560")
    with pytest.raises(ValueError, match="the sensor profile reads link-side torques: torque_sensing 'link' needs"):
        make_plant(PlantOptions(sensor_profile="franka", integrator="adaptive"), puma, T, "puma560")
    with pytest.raises(ValueError, match="model_timestep must be >= 0 s"):
        make_plant(PlantOptions(model_timestep=-1.0), puma, T, "puma560")


def test_model_engine_substeps_are_physics_steps_within_the_control_period(puma: RobotModel) -> None:
    q0 = puma.named_poses["qn"]
    coarse = make_plant(PlantOptions(model_timestep=0.0005), puma, 0.002, "puma560")  # 4 steps a period
    fine = ModelPlant(puma, 0.0005)
    coarse.reset(q0, np.zeros(6))
    fine.reset(q0, np.zeros(6))
    for k in range(50):
        tau = rd.gravity_torques(puma, q0) + 5.0 * math.sin(0.2 * k)
        coarse.step(tau)
        for _ in range(4):
            fine.step(tau)
    assert np.allclose(coarse.q, fine.q, rtol=0, atol=1e-12) and np.allclose(coarse.qd, fine.qd, rtol=0, atol=1e-10)


# -- run_plant's truth --------------------------------------------------------------------------------------------
def test_run_plant_records_the_measured_and_the_true_signals(puma: RobotModel, tmp_path: Path) -> None:
    overrides = {"torque": {"noise": 0.0, "offset": 0.0}, "actuator": {"ripple": {"amplitude": 0.0}}}
    plant = make_plant(
        PlantOptions(sensor_profile="ur_e_series", sensor_overrides=overrides, friction=False), puma, T, "puma560"
    )
    assert isinstance(plant, SensedPlant)
    q0 = puma.named_poses["qn"]
    plant.reset(q0, np.zeros(6))
    kp, kd = np.full(6, 100.0), np.full(6, 20.0)
    controller = Controller(ControlLaw(puma), ControlSettings("pd_feedforward", kp=kp, kd=kd))
    run = run_plant(plant, controller, 0.2)
    e = plant.sensors["actuator.constant_error"]
    # the reading of a period is published one period late (measurement delay 1): applied = (1 + e) reading
    assert np.allclose(run.applied[1:-1], (1.0 + e) * run.effort[2:], rtol=1e-12, atol=1e-12)
    step = 2.0 * math.pi / (65536 * 101)
    assert np.all(np.abs(run.q[1:] - run.true_q[:-1]) <= step / 2 + 1e-12)  # quantized, one period late
    assert run.true_link_torque is not None and not np.array_equal(run.q, run.true_q)
    path = write_run_bag(tmp_path / "run", run, truth_topic="true_joint_states")
    measured, true = read_joint_states(path), read_joint_states(path, "true_joint_states")
    assert np.array_equal(measured.position, run.q) and np.array_equal(true.position, run.true_q)
    assert true.effort is not None and np.array_equal(true.effort, run.applied)
    assert np.array_equal(measured.stamps, true.stamps)


# -- the experiment's case D through the drive ------------------------------------------------------------------
def test_case_d_commands_the_link_side_torques_through_a_torque_loop(ur5: RobotModel, tmp_path: Path) -> None:
    plant_file = tmp_path / "plant.yaml"
    plant_file.write_text(UR5_JOINT_TERMS)
    motion = planned_motion(ur5, UR5_START, duration=3.0, reach=0.4, seed=1)
    points = list(zip(motion.positions, motion.velocities, motion.accelerations, strict=True))
    franka = make_plant(
        PlantOptions(engine="mujoco", deviations=str(plant_file), sensor_profile="franka"), ur5, 0.001, UR5
    )
    assert isinstance(franka, SensedPlant)
    s = franka.sensors["torque.scale_error"]
    assert np.all(s != 0.0) and np.array_equal(drive_factor(franka, 6), 1.0 / (1.0 + s))
    link = np.array([franka.inverse_dynamics(q, qd, qdd, link_side=True) for q, qd, qdd in points])
    # the link-side torques: the rigid links' inverse dynamics of the plant's true model, without the
    # joints' friction, damping and rotor inertia (which the loop supplies)
    rigid = rd.inverse_dynamics(link_side(franka.true_model), motion.positions, motion.velocities, motion.accelerations)
    assert np.allclose(link, rigid, rtol=0, atol=1e-8 * np.abs(rigid).max())
    full = np.array([franka.inverse_dynamics(q, qd, qdd) for q, qd, qdd in points])
    assert np.abs(full - link).max() > 1.0  # the joint terms are not small here
    # the loop makes the reading (1 + s) tau_J + o equal the command: the command for tau_J
    o = franka.sensors["torque.offset"]
    assert np.all(o != 0.0) and np.array_equal(drive_offset(franka, 6), o)
    assert np.allclose(plant_efforts(franka, motion), link * (1.0 + s) + o, rtol=1e-14, atol=1e-14)
    # a drive without the loop (motor-current sensing): mj_inverse through the torque constants, as before
    ur = make_plant(
        PlantOptions(engine="mujoco", deviations=str(plant_file), sensor_profile="ur_e_series"), ur5, 0.002, UR5
    )
    e = ur.sensors["actuator.constant_error"]  # type: ignore[attr-defined]
    assert np.array_equal(drive_factor(ur, 6), 1.0 + e) and not drive_offset(ur, 6).any()  # offsets: the reading's
    assert np.allclose(plant_efforts(ur, motion), full / (1.0 + e), rtol=1e-14, atol=0)  # type: ignore[arg-type]


@pytest.mark.parametrize("layout", ["sys.prefix", "AMENT_PREFIX_PATH"])
def test_bundled_profiles_are_found_when_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    # an install puts config/sensors/*.yaml into share/robot_dynamics/config/sensors (setup.py data_files)
    from robot_dynamics.plant import sensor_profile

    prefix = tmp_path / "install"
    shutil.copytree(sensor_profile.SOURCE_TREE_PROFILES, prefix / "share" / "robot_dynamics" / "config" / "sensors")
    monkeypatch.setattr(sensor_profile, "SOURCE_TREE_PROFILES", tmp_path / "not-a-source-tree")
    if layout == "sys.prefix":
        monkeypatch.setattr(sys, "prefix", str(prefix))
    else:
        monkeypatch.setattr(sys, "prefix", str(tmp_path / "elsewhere"))
        monkeypatch.setenv("AMENT_PREFIX_PATH", f"{tmp_path / 'other'}:{prefix}")
    assert "franka" in bundled_profiles() and load_sensor_profile("franka").rate == 1000.0
