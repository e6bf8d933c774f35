"""identify's defaults against plain weighted least squares, over rates, durations and real arms' sensors.

Usage: ``.venv/bin/python bench/bench_identify_grid.py [--quick] [--robots ur5,panda] [--rates 30,125,500,1000]
[--durations 20,60,600] [--profiles ideal,ur_e_series,franka,kuka_iiwa,industrial_125hz] [--out DIR] [--resume]``

Plants: MuJoCo models of the UR5 and the Panda of example-robot-data (Panda: tip ``panda_hand_tcp``, fingers
locked) that deviate from their stock URDFs as in ``config/plant_deviations.yaml`` (per-joint damping, Coulomb
``frictionloss``, armature; every moving link's mass and inertia x U[0.8, 1.2]), physics at 1 kHz or finer,
under computed torque around the stock file and its drives' data with gains set by the loop's delay (below)
along sums of three sines per joint (ramped in and out). Each run lasts the cell's duration and is seen
through a **sensor profile** of ``config/sensors`` (:class:`robot_dynamics.plant.SensedPlant`: quantized
encoders, the driver's velocity estimate, motor-current or link-side torques with torque-constant, scale and
offset errors, noise, ripple, drift, delays): the controller runs at the profile's rate on what the profile's
driver publishes (``ideal``: the plant's exact state at 1 kHz), and the recording is what the arm publishes,
every k-th sample to the cell's rate (a cell faster than the arm publishes is not run: "n/a"). The truth
beside it scores the noise estimates: the profile's torque noise per joint.

Per cell, ``identify`` with its defaults and ``identify --method plain`` on the same bag, the same held-out
part (the last 30 %), and the same effort lag and acceleration estimate. Printed: the held-out torque RMS
over every joint's held-out rows (pooled, N·m) of both, their ratio, what the defaults chose, the residual
sigma and the sensor-noise estimate as multiples of the true noise, and the CPU time of each ``identify``;
then the median and worst ratio over the cells. Targets: ratio <= 1.0 in every cell, <= 0.9 median, the
noise estimate within 20 % of the true noise. ``--quick``: 20 s and 60 s at 30 and 125 Hz, ideal and
ur_e_series, the UR5 only. ``--resume``: keep the cells already in ``DIR/cells.json`` (a long grid can be
stopped and continued); every cell is written there as soon as it is done.

**The recording controller** is tuned as an integrator tunes an arm for the loop it has. Its model is
the stock file with the drives' data an arm maker knows (:func:`drive_model`: each joint's reflected rotor
inertia, viscous and Coulomb friction, the plant's per-joint ``armature``, ``damping`` and ``frictionloss``;
not the links' mass deviations, which identification has to find). The law is computed torque around it
(:mod:`robot_dynamics.control`; Siciliano, Sciavicco, Villani & Oriolo, *Robotics: Modelling, Planning and
Control*, 2009, §8.5.2): ``τ = D(q) (qdd_d + kp e + kd ė) + h + c + b``, ``kp = ωn²``, ``kd = 2 ζ ωn``
(1/s², 1/s), ``ζ = 1``, so that the feedback torque is ``D(q) (ωn² e + 2 ωn ė)``: at ``ωn = 20`` rad/s its
diagonal is ``kp = 400 D_ii``, ``kd = 40 D_ii``. ``ωn`` is :func:`robot_dynamics.experiment.settings.
delay_bandwidth`: 20 rad/s, at most ``0.25 / (ζ L)``, ``L`` the loop's delay (:func:`~robot_dynamics.
experiment.settings.loop_delay`: one control period for the held command, the profile's measurement and
command delays, and a differenced velocity's lag, half a period plus ``1 / (2 π f_c)`` per low-pass stage).

The reasoning: with ``D(q)`` in the law every joint's error sees a double integrator ``1 / s²`` (to the
plant's deviation from the model), so the loop is ``(kd s + kp) e^(-s L) / s²``. A pure delay leaves a
loop's gain alone and adds the phase ``-ω L``. The PD part crosses over at ``ωc = sqrt(2 + sqrt(5)) ωn =
2.06 ωn`` (``ωc⁴ = kd² ωc² + kp²`` for ``ζ = 1``) with a phase lead of ``atan(kd ωc / kp) = 76°``, and
``2 ζ ωn L <= 0.5`` rad keeps the delay's lag there at ``ωc L <= 0.51`` rad (29°): a phase margin of 47° or
more. ``L`` and ``ωn`` per profile: ideal 1.0 ms and 20 rad/s, ur_e_series 8.6 ms and 20, franka 3.5 ms and
20, kuka_iiwa 21.5 ms and 11.6 (``kp = 135``), industrial_125hz 59.9 ms and 4.2 (``kp = 17``). Diagonal
gains (PD + feed-forward, ``kp = ωn² D_ii``) cannot be bounded this way: the modes of ``D ë = -Kp e`` have
frequencies ``ωn sqrt(μ)``, ``μ`` the eigenvalues of ``diag(D)^½ D⁻¹ diag(D)^½``, up to 3.4 on the UR5 and 24
on the stock Panda at their start poses (its joints 1 and 3 nearly aligned): behind kuka_iiwa's delays the
Panda's joints 1 and 3 oscillated at 14 Hz with diagonal gains at ``ωn = 11.6``, and bounding the fastest
mode instead left ``ωn`` at 0.5-3 rad/s and the arm a radian off its path. The drives' friction is in the
model because no stable loop behind industrial_125hz's 60 ms is stiff enough to break a light wrist's
friction away (``kp`` 17 1/s² on the UR5's last joint, 0.04 kg m² with its rotor, against 0.8 N m): without
it (the stock file alone) that joint never moved and the data could not determine its parameters.

Measured on 20 s runs, before (PD + the stock file's feed-forward, ``kp = 400 D_ii``, ``kd = 40 D_ii``, every
profile) and with this controller: the feedback torque's RMS above 5 Hz (N m; the motion's torques lie
below 3 Hz) and the true state's tracking RMS (mrad): UR5 ideal 0.33 / 0.11 and 50 / 1.4, ur_e_series
0.39 / 0.17 and 49 / 2.8, industrial_125hz 45.7 / 0.13 (feedback RMS 380 / 1.8) and 364 / 87; Panda franka
0.16 / 0.16 and 44 / 1.0, kuka_iiwa 151 / 0.13 (feedback RMS 152 / 0.5) and 63 / 5.3.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.control import ControlLaw, Controller, ControlSettings  # noqa: E402
from robot_dynamics.experiment.settings import delay_bandwidth, loop_delay  # noqa: E402
from robot_dynamics.identification.pipeline import identify  # noqa: E402
from robot_dynamics.model import Motor  # noqa: E402
from robot_dynamics.plant import (  # noqa: E402
    MujocoPlant,
    SensedPlant,
    SensorProfile,
    load_sensor_profile,
    parse_deviations,
    plant_source,
)
from robot_dynamics.plant.run import PlantRun, run_plant, write_run_bag  # noqa: E402
from robot_dynamics.trajectory import JointTrajectorySampler  # noqa: E402

ROBOTS_DIR = Path(
    str(
        importlib.metadata.distribution("example-robot-data").locate_file(
            "cmeel.prefix/share/example-robot-data/robots"
        )
    )
)
ROBOTS: dict[str, dict[str, Any]] = {
    "ur5": {
        "urdf": "ur_description/urdf/ur5_robot.urdf",
        "tip": None,
        "locks": {},
        "home": [0.0, -1.2, 1.4, -1.6, -1.57, 0.3],
        "plant": {
            "damping": [2.0, 2.0, 1.5, 0.5, 0.5, 0.3],
            "friction": [4.0, 4.0, 3.0, 1.0, 1.0, 0.8],
            "armature": [0.15, 0.15, 0.1, 0.02, 0.02, 0.02],
            "random": {"seed": 7, "mass": 0.2, "inertia": 0.2},
        },
    },
    "panda": {
        "urdf": "panda_description/urdf/panda.urdf",
        "tip": "panda_hand_tcp",
        "locks": {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0},
        "home": [0.0, -0.3, 0.0, -2.0, 0.0, 1.9, 0.785],
        "plant": {
            "damping": [1.0, 1.0, 1.0, 1.0, 0.3, 0.3, 0.2],
            "friction": [1.0, 1.0, 0.8, 0.8, 0.4, 0.4, 0.3],
            "armature": [0.1, 0.1, 0.1, 0.1, 0.03, 0.03, 0.03],
            "random": {"seed": 7, "mass": 0.2, "inertia": 0.2},
        },
    },
}
PROFILES = ("ideal", "ur_e_series", "franka", "kuka_iiwa", "industrial_125hz")  # config/sensors
IDEAL_RATE = 1000.0  # Hz: the control rate of a profile that states none (the ideal arm)
DAMPING_RATIO = 1.0  # ζ of the recording controller (critically damped)


def drive_model(stock: rd.RobotModel, plant: dict[str, Any]) -> rd.RobotModel:
    """The model the arm's controller runs (module docstring): the stock file with each drive's rotor
    inertia (reflected, joint side), viscous and Coulomb friction, the plant's per-joint values."""
    joints = tuple(
        replace(
            j,
            friction=replace(j.friction, viscous=float(v), coulomb=(float(c), -float(c))),
            motor=Motor(inertia=float(a), gear_ratio=1.0),
        )
        for j, v, c, a in zip(stock.joints, plant["damping"], plant["friction"], plant["armature"], strict=True)
    )
    return stock.with_changes(joints=joints)


def _controller(model: rd.RobotModel, sensors: SensorProfile, rate: float) -> Controller:
    """Computed torque around ``model`` with the gains of the module docstring for the loop of ``sensors``."""
    wn = delay_bandwidth(loop_delay(rate, sensors), DAMPING_RATIO)
    ones = np.ones(model.dof)
    settings = ControlSettings("computed_torque", kp=wn**2 * ones, kd=2.0 * DAMPING_RATIO * wn * ones)
    return Controller(ControlLaw(model), settings)


def motion(home: np.ndarray, duration: float, seed: int) -> JointTrajectorySampler:
    """Three sines per joint (0.2-0.8 Hz, 0.08-0.2 rad each) about ``home``, ramped in and out over 1 s."""
    rng = np.random.default_rng(seed)
    n = home.size
    t = np.linspace(0.0, duration, int(duration * 50) + 1)
    f = rng.uniform(0.2, 0.8, (3, n))
    a, phase = rng.uniform(0.08, 0.2, (3, n)), rng.uniform(0.0, 2.0 * np.pi, (3, n))
    w = 2.0 * np.pi * f
    arg = w[None] * t[:, None, None] + phase[None]
    g, gd, gdd = (np.sum(a * np.sin(arg), 1), np.sum(a * w * np.cos(arg), 1), -np.sum(a * w**2 * np.sin(arg), 1))
    s = np.clip(np.minimum(t, duration - t), 0.0, 1.0)
    k, sign = np.pi / 2.0, np.where(t > duration / 2.0, -1.0, 1.0)
    ramp = s < 1.0
    e = np.sin(k * s) ** 2
    ed = np.where(ramp, k * np.sin(2 * k * s), 0.0) * sign
    edd = np.where(ramp, 2 * k**2 * np.cos(2 * k * s), 0.0)
    q = home + e[:, None] * g
    qd = ed[:, None] * g + e[:, None] * gd
    qdd = edd[:, None] * g + 2 * ed[:, None] * gd + e[:, None] * gdd
    return JointTrajectorySampler(t, q, qd, qdd)


@dataclass
class Recording:
    """What the arm of one profile published along one run, and the truth to score against."""

    stock: rd.RobotModel
    run: PlantRun  # q, qd, effort: the driver's; at the arm's rate
    rate: float  # Hz: the arm's rate
    true_noise: np.ndarray  # (n,) the profile's torque noise, N m
    simulate_s: float  # CPU s


def simulate(name: str, duration: float, profile: str, seed: int) -> Recording:
    """The plant of ``name`` under PD + stock feed-forward along :func:`motion`, seen through sensor
    ``profile`` at its rate: the joint states and efforts its driver publishes, and its true torque noise."""
    began = time.process_time()
    spec = ROBOTS[name]
    urdf = str(ROBOTS_DIR / spec["urdf"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stock = rd.load_robot(urdf, tip_link=spec["tip"], locked_joints=spec["locks"])
    sensors = load_sensor_profile(profile)
    rate = sensors.rate or IDEAL_RATE
    plant = MujocoPlant(
        plant_source(urdf, None, spec["tip"], spec["locks"]), stock, 1.0 / rate, parse_deviations(spec["plant"], name)
    )
    plant.mjmodel.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    arm = SensedPlant(plant, sensors)
    home = np.asarray(spec["home"], dtype=float)
    arm.reset(home, np.zeros(stock.dof))
    control = _controller(drive_model(stock, spec["plant"]), sensors, rate)
    run = run_plant(arm, control, duration + 0.4, trajectory=motion(home, duration, seed), trajectory_start=0.2)
    noise = np.asarray(arm.sensors.values["torque.noise"], dtype=float)
    return Recording(stock, run, rate, noise, time.process_time() - began)


def at_rate(run: PlantRun, rate: float) -> PlantRun:
    """Every k-th sample of ``run`` (``k`` the nearest whole number of the run's periods per ``1 / rate``)."""
    k = max(1, round(1.0 / (rate * run.period)))
    steps = run.t.size
    cut = {
        f.name: getattr(run, f.name)[::k]
        for f in fields(run)
        if isinstance(getattr(run, f.name), np.ndarray) and getattr(run, f.name).shape[:1] == (steps,)
    }
    return replace(run, period=run.period * k, **cut)


def pooled(result: Any) -> float:
    """Held-out torque RMS over every joint's held-out rows, N·m."""
    ne = result.holdout
    return float(np.sqrt(ne.residual_sum(result.fit.theta).sum() / ne.rows.sum()))


def cell(stock: rd.RobotModel, bag: Path) -> dict[str, Any]:
    """identify's defaults and plain least squares on ``bag``: held-out RMS, choice, noise estimates, CPU s."""
    began = time.process_time()
    default = identify(str(bag), stock, jobs=1, compare_friction=False)
    t_default = time.process_time() - began
    began = time.process_time()
    plain = identify(str(bag), stock, jobs=1, method="plain", sensor_noise_estimate=False)
    t_plain = time.process_time() - began
    choice = default.choice
    return {
        "default": pooled(default),
        "plain": pooled(plain),
        "chosen": None if choice is None else choice.chosen.as_dict(stock.joint_names),
        "chosen_label": None if choice is None else f"{choice.chosen.label()}, {choice.chosen.window_s} s",
        "candidates": 0 if choice is None else len(choice.candidates),
        "sigma": default.noise_std.tolist(),
        "sensor_noise": None if default.sensor_noise is None else default.sensor_noise.tolist(),
        "states": int(sum(b.messages for b in default.bags)),
        "cpu_default_s": t_default,
        "cpu_plain_s": t_plain,
        "choice_s": default.elapsed.get("choice_s"),
    }


def _ratios(estimate: list[float] | None, truth: list[float]) -> str:
    if estimate is None or not any(truth):
        return "-"
    r = np.asarray(estimate) / np.asarray(truth)
    return f"{r.min():.2f}-{r.max():.2f}"


def _key(r: dict[str, Any]) -> tuple[str, float, float, str]:
    return (r["robot"], float(r["duration"]), float(r["rate"]), r["profile"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="UR5, 20 and 60 s, 30 and 125 Hz, ideal and ur_e_series")
    ap.add_argument("--robots", default="ur5,panda")
    ap.add_argument("--rates", default="30,125,500,1000")
    ap.add_argument("--durations", default="20,60,600")
    ap.add_argument("--profiles", default=",".join(PROFILES))
    ap.add_argument("--out", default=None, help="directory for the bags and cells.json (default: a temporary one)")
    ap.add_argument("--resume", action="store_true", help="keep the cells already in OUT/cells.json")
    ap.add_argument("--keep-bags", action="store_true", help="keep each cell's bag in OUT (default: deleted)")
    args = ap.parse_args()
    if args.quick:
        args.robots, args.rates, args.durations, args.profiles = "ur5", "30,125", "20,60", "ideal,ur_e_series"
    robots = args.robots.split(",")
    rates = [float(v) for v in args.rates.split(",")]
    durations = [float(v) for v in args.durations.split(",")]
    profiles = args.profiles.split(",")
    out = Path(args.out or tempfile.mkdtemp(prefix="identify_grid_"))
    out.mkdir(parents=True, exist_ok=True)
    store = out / "cells.json"
    rows: list[dict[str, Any]] = json.loads(store.read_text()) if args.resume and store.exists() else []
    done = {_key(r) for r in rows}
    print(
        f"{'robot':<6}{'dur s':>6}{'Hz':>6} {'profile':<17}{'defaults':>9}{'plain':>9}{'ratio':>7}"
        f"{'sigma/true':>11}{'sensor/true':>12}{'CPU s':>14}  chosen"
    )
    for name in robots:
        for duration in durations:
            for profile in profiles:
                wanted = [rate for rate in rates if (name, duration, rate, profile) not in done]
                if not wanted:
                    continue
                rec = simulate(name, duration, profile, seed=1)
                for rate in wanted:
                    if rate > rec.rate * 1.001:
                        print(f"{name:<6}{duration:6g}{rate:6g} {profile:<17} n/a: the arm publishes at {rec.rate:g}")
                        continue
                    bag = out / f"{name}_{duration:g}s_{rate:g}Hz_{profile}"
                    write_run_bag(bag, at_rate(rec.run, rate), overwrite=True)
                    r = cell(rec.stock, bag)
                    if not args.keep_bags:
                        shutil.rmtree(bag, ignore_errors=True)
                    r.update(robot=name, duration=duration, rate=rate, profile=profile, simulate_cpu_s=rec.simulate_s)
                    r["true_noise"] = rec.true_noise.tolist()
                    r["ratio"] = r["default"] / r["plain"]
                    rows.append(r)
                    store.write_text(json.dumps(rows, indent=1))
                    print(
                        f"{name:<6}{duration:6g}{rate:6g} {profile:<17}{r['default']:9.4f}{r['plain']:9.4f}"
                        f"{r['ratio']:7.3f}{_ratios(r['sigma'], r['true_noise']):>11}"
                        f"{_ratios(r['sensor_noise'], r['true_noise']):>12}"
                        f"{r['cpu_default_s']:8.1f}/{r['cpu_plain_s']:<5.1f}  {r['chosen_label']}",
                        flush=True,
                    )
    ratios = [r["ratio"] for r in rows]
    if ratios:
        print(
            f"cells {len(rows)}: median ratio {statistics.median(ratios):.3f} (target <= 0.9), worst "
            f"{max(ratios):.3f} (target <= 1.0); cells above 1.0: {sum(v > 1.0 for v in ratios)}"
        )
    print(f"wrote {store}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
