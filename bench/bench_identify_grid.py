"""identify's defaults against plain weighted least squares, over rates, durations and sensor profiles.

Usage: ``.venv/bin/python bench/bench_identify_grid.py [--quick] [--robots ur5,panda] [--rates 30,125,500,1000]
[--durations 20,60,600] [--profiles ideal,noisy] [--out DIR]``

Plants: MuJoCo 1 kHz models of the UR5 and the Panda of example-robot-data (Panda: tip ``panda_hand_tcp``,
fingers locked) that deviate from their stock URDFs as in ``config/plant_deviations.yaml`` (per-joint
damping, Coulomb ``frictionloss``, armature; every moving link's mass and inertia × U[0.8, 1.2]), under
PD + the stock file's feed-forward (``kp = 400 D_ii``, ``kd = 40 D_ii``) along sums of three sines per
joint (0.1 Hz apart from joint to joint, ramped in and out). Each run lasts the cell's duration; it is
measured through a sensor profile (:class:`SensedPlant` for the joint states the controller and the
recording see, :func:`measure` for the efforts: the only places that know the profile, so that a sensor
model can be put in their place), cut to the cell's rate (every k-th sample) and
written as a bag; then ``identify`` with its defaults and ``identify --method plain`` on the same bag,
the same held-out part (the last 30 %), and the same effort lag and acceleration estimate.

Printed per cell: the held-out torque RMS over every joint's held-out rows (pooled, N·m) of both, their
ratio, what the defaults chose, the sensor-noise estimate against the true noise, and the time of each
``identify``; then the median ratio over the cells. Targets: ratio ≤ 1.0 in every cell, ≤ 0.9 median.
``--quick``: 20 s and 60 s at 30 and 125 Hz, both profiles, the UR5 only.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.control import ControlLaw, Controller, ControlSettings  # noqa: E402
from robot_dynamics.identification.pipeline import identify  # noqa: E402
from robot_dynamics.plant import MujocoPlant, parse_deviations, plant_source  # noqa: E402
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
# sensor profiles: what :func:`measure` does to the plant's true signals
PROFILES: dict[str, dict[str, float]] = {
    "ideal": {},
    # a 19-bit encoder, the driver's velocity the difference of the encoder over 1 ms, low-passed (5 ms),
    # motor-current torque: torque constants +-5 %, 0.6 N m white noise, one 1 ms step late
    "noisy": {"encoder_bits": 19, "velocity_tau": 0.005, "kt_error": 0.05, "torque_noise": 0.6, "delay_steps": 1},
}


def _controller(stock: rd.RobotModel, home: np.ndarray) -> Controller:
    D = np.diag(rd.inertia_matrix(stock, home))
    return Controller(ControlLaw(stock), ControlSettings("pd_feedforward", kp=400.0 * D, kd=40.0 * D))


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


class SensedPlant:
    """A plant as its controller sees it through a sensor ``profile`` (:data:`PROFILES`): a quantized
    encoder, and the driver's velocity (the encoder's difference over a step, low-passed). The loop
    reacts to the sensors' noise, as a real arm's does; ``q``, ``qd`` are what the driver reports."""

    def __init__(self, plant: MujocoPlant, profile: dict[str, float]) -> None:
        self.plant, self.profile = plant, profile
        self.q_measured = self._encoder(plant.q)
        self.qd_measured = np.array(plant.qd, dtype=float)

    def _encoder(self, q: np.ndarray) -> np.ndarray:
        if "encoder_bits" not in self.profile:
            return np.array(q, dtype=float)
        step = 2.0 * np.pi / 2 ** self.profile["encoder_bits"]
        return np.asarray(np.round(q / step) * step)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.plant, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "external_wrench":
            self.plant.external_wrench = value
        else:
            object.__setattr__(self, name, value)

    @property
    def q(self) -> np.ndarray:
        return self.q_measured if self.profile else self.plant.q

    @property
    def qd(self) -> np.ndarray:
        return self.qd_measured if self.profile else self.plant.qd

    def step(self, tau: np.ndarray) -> None:
        self.plant.step(tau)
        if not self.profile:
            return
        q = self._encoder(self.plant.q)
        h = self.plant.period
        alpha = h / (self.profile["velocity_tau"] + h)
        self.qd_measured = self.qd_measured + alpha * ((q - self.q_measured) / h - self.qd_measured)
        self.q_measured = q


def simulate(name: str, duration: float, profile: str, seed: int) -> tuple[rd.RobotModel, PlantRun]:
    """The plant of ``name`` under PD + stock feed-forward along :func:`motion`, its joint states as the
    driver of sensor ``profile`` reports them and its true joint torques."""
    spec = ROBOTS[name]
    urdf = str(ROBOTS_DIR / spec["urdf"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stock = rd.load_robot(urdf, tip_link=spec["tip"], locked_joints=spec["locks"])
    plant = MujocoPlant(
        plant_source(urdf, None, spec["tip"], spec["locks"]), stock, 1e-3, parse_deviations(spec["plant"], name)
    )
    plant.mjmodel.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    home = np.asarray(spec["home"], dtype=float)
    plant.reset(home, np.zeros(stock.dof))
    sensed = SensedPlant(plant, PROFILES[profile])
    trajectory = motion(home, duration, seed)
    run = run_plant(sensed, _controller(stock, home), duration + 0.4, trajectory=trajectory, trajectory_start=0.2)  # type: ignore[arg-type]
    return stock, run


def measure(run: PlantRun, profile: str, seed: int) -> tuple[PlantRun, np.ndarray]:
    """The efforts a driver of sensor ``profile`` (:data:`PROFILES`) reports for the run's true joint
    torques (its joint states are already the driver's: :class:`SensedPlant`), and the true torque noise
    per joint (standard deviation)."""
    p = PROFILES[profile]
    n = run.q.shape[1]
    if not p:
        return run, np.zeros(n)
    rng = np.random.default_rng(seed)
    kt = 1.0 + rng.uniform(-p["kt_error"], p["kt_error"], n)
    d = int(p["delay_steps"])
    effort = np.vstack([np.repeat(run.effort[:1], d, axis=0), run.effort[: len(run.effort) - d]]) if d else run.effort
    noise = np.full(n, p["torque_noise"])
    effort = kt * effort + rng.normal(0.0, 1.0, effort.shape) * noise
    return replace(run, effort=effort), noise


def at_rate(run: PlantRun, rate: float) -> PlantRun:
    k = max(1, round(1.0 / (rate * float(run.t[1] - run.t[0]))))
    return replace(
        run,
        t=run.t[::k],
        q=run.q[::k],
        qd=run.qd[::k],
        effort=run.effort[::k],
        q_desired=run.q_desired[::k],
        wrench=run.wrench[::k],
        tau_ext=run.tau_ext[::k],
        contacts=run.contacts[::k],
    )


def pooled(result: Any) -> float:
    """Held-out torque RMS over every joint's held-out rows, N·m."""
    ne = result.holdout
    return float(np.sqrt(ne.residual_sum(result.fit.theta).sum() / ne.rows.sum()))


def cell(stock: rd.RobotModel, bag: Path) -> dict[str, Any]:
    began = time.perf_counter()
    default = identify(str(bag), stock, jobs=1, compare_friction=False)
    t_default = time.perf_counter() - began
    began = time.perf_counter()
    plain = identify(str(bag), stock, jobs=1, method="plain", sensor_noise_estimate=False)
    t_plain = time.perf_counter() - began
    choice = default.choice
    return {
        "default": pooled(default),
        "plain": pooled(plain),
        "chosen": None if choice is None else choice.chosen.as_dict(stock.joint_names),
        "sigma": default.noise_std.tolist(),
        "sensor_noise": None if default.sensor_noise is None else default.sensor_noise.tolist(),
        "time_default_s": t_default,
        "time_plain_s": t_plain,
        "choice_s": default.elapsed.get("choice_s"),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="UR5, 20 and 60 s, 30 and 125 Hz, both profiles")
    ap.add_argument("--robots", default="ur5,panda")
    ap.add_argument("--rates", default="30,125,500,1000")
    ap.add_argument("--durations", default="20,60,600")
    ap.add_argument("--profiles", default="ideal,noisy")
    ap.add_argument("--out", default=None, help="directory for the bags and cells.json (default: a temporary one)")
    args = ap.parse_args()
    if args.quick:
        args.robots, args.rates, args.durations = "ur5", "30,125", "20,60"
    robots = args.robots.split(",")
    rates = [float(v) for v in args.rates.split(",")]
    durations = [float(v) for v in args.durations.split(",")]
    profiles = args.profiles.split(",")
    out = Path(args.out or tempfile.mkdtemp(prefix="identify_grid_"))
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"{'robot':<6}{'dur s':>6}{'Hz':>6} {'profile':<7}{'defaults':>10}{'plain':>10}{'ratio':>7}  chosen")
    for name in robots:
        for duration in durations:
            for profile in profiles:
                began = time.perf_counter()
                stock, run = simulate(name, duration, profile, seed=1)
                sim_s = time.perf_counter() - began
                measured, noise = measure(run, profile, seed=2)
                for rate in rates:
                    bag = out / f"{name}_{duration:g}s_{rate:g}Hz_{profile}"
                    write_run_bag(bag, at_rate(measured, rate), overwrite=True)
                    r = cell(stock, bag)
                    r.update(robot=name, duration=duration, rate=rate, profile=profile, simulate_s=sim_s)
                    r["true_noise"] = noise.tolist()
                    r["ratio"] = r["default"] / r["plain"]
                    rows.append(r)
                    c = r["chosen"] or {}
                    chosen = (
                        f"cut {'/'.join(f'{v:g}' for v in c.get('reversal_velocity', []))}, band "
                        f"{'on' if c.get('stick_band') else 'off'}, {c.get('friction')}, {c.get('fit')}, "
                        f"{c.get('window_s')} s"
                    )
                    sn = r["sensor_noise"]
                    print(
                        f"{name:<6}{duration:6g}{rate:6g} {profile:<7}{r['default']:10.4f}{r['plain']:10.4f}"
                        f"{r['ratio']:7.3f}  {chosen}; sigma {np.round(r['sigma'], 3).tolist()}, sensor "
                        f"{None if sn is None else np.round(sn, 3).tolist()} (true {noise[0]:g}); "
                        f"{r['time_default_s']:.1f} s (choice {r['choice_s'] or 0:.1f} s) vs {r['time_plain_s']:.1f} s",
                        flush=True,
                    )
    ratios = [r["ratio"] for r in rows]
    print(
        f"cells {len(rows)}: median ratio {statistics.median(ratios):.3f} (target <= 0.9), worst {max(ratios):.3f} "
        f"(target <= 1.0); cells above 1.0: {sum(v > 1.0 for v in ratios)}"
    )
    (out / "cells.json").write_text(json.dumps(rows, indent=1))
    print(f"wrote {out / 'cells.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
