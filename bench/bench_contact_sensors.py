"""Contact detection with real arms' sensors on: every plant seen through a sensor profile, the package's commands.

    .venv/bin/python bench/bench_contact_sensors.py [--robots ur5 panda] [--sensors PROFILE ...]
        [--free-minutes 10] [--out DIR] [--fresh]

``bench/bench_contact.py`` proves contact detection on MuJoCo plants with ideal sensors. This bench does
the same with the sensors and actuators of real arms on (:class:`robot_dynamics.plant.SensedPlant`, the
profiles of ``config/sensors/``), and with ideal sensors in the same run, for the UR5 and the Panda of
example-robot-data (stock URDFs, the Panda with tip ``panda_hand_tcp`` and locked fingers). Per robot and
per sensor setup (``--sensors``: ``ideal`` — the bare plant at 1 kHz reading the motors' torque —,
``ideal_link`` — the same reading link-side torques —, and any sensor profile by name or file):

1. **Plant**: MuJoCo, deviated from the stock file as in ``bench_contact.py`` (the UR5 by
   ``config/plant_deviations.yaml``, Coulomb 4, 4, 3, 1, 1, 0.8 N·m; the Panda by damping 1, friction 1 N·m,
   armature 0.05, masses and inertias ±20 %), physics at 1 kHz (``max_timestep`` 1 ms: a control period of
   the profile's rate is several physics steps), MuJoCo's contacts off, reading the torque where the profile
   does (motor currents or link-side sensors), wrapped in the profile's sensors and actuators.
2. **Control** at the profile's rate: PD + the stock file's feed-forward (:mod:`robot_dynamics.control`),
   ``kp = D_ii ωn²``, ``kd = 2 ωn D_ii``, with the profile's delays told to the law (``measurement_delay``,
   ``command_delay``: a user knows their arm's) and ``ωn = min(20 rad/s, 0.25 / L)`` with ``L`` the loop's
   lag — the delays, one period of sampling and hold, and the velocity estimate's lag (half a period of the
   difference, ``1 / (2 π f_c)`` of its low-pass): a 125 Hz arm with two periods each way and a 10 Hz
   velocity filter is unstable at 20 rad/s (measured: stable at 5, limit-cycling at 6).
3. **Recordings** (what the arm publishes, ``joint_states``: the measured position, the driver's velocity
   estimate, the torque reading; the truth beside it on ``true_joint_states`` and, for the scoring, the push
   times and ``Jᵀ F`` from :func:`robot_dynamics.plant.run.run_plant`), each from rest:
   **identification** (excitation seeds 0, 2, 4 chained by 3 s moves, 72 s), **calibration** (seeds 6, 8,
   10: a separate free-motion recording), **free** (seeds 1, 3, 5, 7, ... chained to ``--free-minutes``:
   the false collisions), **pushed** (seeds 1, 3, 5: 24 pushes of 20 N at the tool, 0.3 s each, ±x, ±y,
   ±z and two diagonals, every 2.9 s), **slow** (seed 1 at a quarter of its speed, 8 pushes every 10 s),
   **rest** (8 pushes at a pose away from singularities).
4. **Identified model**: ``robot-dynamics identify`` on the identification recording (defaults).
5. **Thresholds**: ``robot-dynamics contact --calibrate --effort-timing auto`` on the calibration recording
   (reversal-aware, margin 2): the effort timing is chosen by the residual and written with the thresholds,
   as a user would run it. What the recordings carry as effort: ``run_plant`` records after each control
   period the plant's reading over it — with motor-current sensing the command the drive held over the period
   (plus offset and noise), with link-side sensing the mean link torque over it — so the torque held over the
   step into each state (``step``); a real drive's current reading is a sample (``sampled``).
6. **Detection**: ``robot-dynamics contact BAG`` with those thresholds and timing, on the free, pushed, slow
   and rest recordings. Latency = the first collision event after a push starts, in the recording's time (when
   the controller has the state: it includes the profile's measurement delay); the push's start is the
   period in which the plant first applied it. A false collision = a collision raised outside every push and
   the 0.3 s after it, counted per 10 minutes of free motion; those in the pushed runs are counted apart.
   The plant's own model (its true model; link-side: without friction and armature) is calibrated and
   scored the same way, to separate the sensors' share from the identification's.

Outputs in ``--out`` (default ``/tmp/bench_contact_sensors``): per robot and setup the bags, the identified
model, the parameter files and the commands' JSON; ``summary.json``. Excitation designs are shared with
``bench_contact.py``'s output layout (``excitation_SEED.yaml`` per robot) and reused unless ``--fresh``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_contact import (
    DIRECTIONS,
    FORCE,
    PUSH_S,
    REST_POSES,
    Robot,
    chain,
    command,
    design,
    robots,
    row,
    slowed,
)

import robot_dynamics as rd
from robot_dynamics.control import ControlLaw, Controller, ControlSettings
from robot_dynamics.models.chain_yaml import write_chain_yaml
from robot_dynamics.plant import MujocoPlant, SensedPlant, SensorProfile, load_sensor_profile, parse_deviations
from robot_dynamics.plant import plant_source as make_source
from robot_dynamics.plant.run import PlantRun, Push, push_schedule, run_plant, write_run_bag
from robot_dynamics.plant.true_model import link_side
from robot_dynamics.trajectory import JointTrajectorySampler

IDENTIFICATION_SEEDS, CALIBRATION_SEEDS, VALIDATION_SEEDS = (0, 2, 4), (6, 8, 10), (1, 3, 5)
IDEAL_RATE = 1000.0  # Hz, the bare plant's control rate
PHYSICS_STEP = 1e-3  # s, the largest physics step under any control period
WN_MAX, LOOP_PHASE = 20.0, 0.25  # rad/s; ωn * loop lag
CLEAR_S = 0.3  # s after a push in which its collision may still be raised or cleared
SETUPS = ("ideal", "ideal_link", "ur_e_series", "franka", "kuka_iiwa", "industrial_125hz")
LINK_SIDE_TARGET_MS, MOTOR_TARGET_MS = 10.0, 20.0


@dataclass(frozen=True)
class Setup:
    """A sensor setup: the profile (None: the bare plant), the control period, the torque reading."""

    name: str
    profile: SensorProfile | None
    period: float
    sensing: str

    @property
    def delays(self) -> tuple[int, int]:
        return (0, 0) if self.profile is None else (self.profile.measurement_delay, self.profile.command_delay)

    @property
    def velocity_lag(self) -> float:
        """The driver's velocity estimate's lag behind the position, s (half a period per difference, RC)."""
        p = self.profile
        if p is None or p.value("velocity.estimator") != "difference":
            return 0.0
        cutoff = float(p.value("velocity.cutoff"))
        stages = int(p.value("velocity.order")) if cutoff > 0.0 else 0
        return 0.5 * self.period + stages / (2.0 * math.pi * cutoff) if cutoff > 0.0 else 0.5 * self.period

    @property
    def loop_lag(self) -> float:
        m, c = self.delays
        return (m + c + 1) * self.period + self.velocity_lag

    @property
    def wn(self) -> float:
        return min(WN_MAX, LOOP_PHASE / self.loop_lag)

    @property
    def target_ms(self) -> float:
        return LINK_SIDE_TARGET_MS if self.sensing == "link" else MOTOR_TARGET_MS


def setup(name: str) -> Setup:
    if name in ("ideal", "ideal_link"):
        return Setup(name, None, 1.0 / IDEAL_RATE, "link" if name == "ideal_link" else "motor")
    profile = load_sensor_profile(name)
    if profile.rate is None:
        raise SystemExit(f"sensor profile {name}: no rate; give it one (the control loop runs at it)")
    return Setup(profile.name, profile, 1.0 / profile.rate, profile.torque_sensing)


class SensorLab:
    """One robot: stock model, deviated plant source, trajectories; its runs under each sensor setup."""

    def __init__(self, robot: Robot, out: Path, free_s: float, fresh: bool) -> None:
        self.robot, self.out = robot, out
        self.stock = rd.load_robot(robot.urdf, tip_link=robot.tip, locked_joints=robot.locks or None)
        rd.prepare(self.stock, "native")
        self.source = make_source(robot.urdf, None, robot.tip, robot.locks or None)
        self.deviations = parse_deviations(robot.deviations, f"{robot.name} deviations")
        self.identification = chain([design(robot, out, s, fresh) for s in IDENTIFICATION_SEEDS])
        self.calibration = chain([design(robot, out, s, fresh) for s in CALIBRATION_SEEDS])
        self.pushed = chain([design(robot, out, s, fresh) for s in VALIDATION_SEEDS])
        self.slow = slowed(design(robot, out, VALIDATION_SEEDS[0], fresh), 4.0)
        self.free = self._free_motion(free_s, fresh)
        self.rest_pose = np.array(REST_POSES[robot.name])
        self.D = np.diag(rd.inertia_matrix(self.stock, self.identification.positions[0]))

    def _free_motion(self, seconds: float, fresh: bool) -> JointTrajectorySampler:
        """Validation seeds 1, 3, 5, ... chained until the motion lasts ``seconds`` (with the start and end)."""
        parts, seed = [], 1
        while not parts or chain(parts).end_time + 1.5 < seconds:
            parts.append(design(self.robot, self.out, seed, fresh))
            seed += 2
        return chain(parts)

    def plant(self, s: Setup) -> MujocoPlant | SensedPlant:
        inner = MujocoPlant(
            self.source, self.stock, s.period, self.deviations, max_timestep=PHYSICS_STEP, torque_sensing=s.sensing
        )
        inner.mjmodel.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)  # bench_contact.py says why
        return inner if s.profile is None else SensedPlant(inner, s.profile)

    def controller(self, s: Setup) -> Controller:
        m, c = s.delays
        settings = ControlSettings(
            law="pd_feedforward",
            kp=self.D * s.wn**2,
            kd=2.0 * s.wn * self.D,
            measurement_delay=m * s.period,
            command_delay=c * s.period,
        )
        return Controller(ControlLaw(self.stock), settings)

    def run(
        self,
        s: Setup,
        out: Path,
        name: str,
        trajectory: JointTrajectorySampler | None,
        extra: float = 1.0,
        pushes: list[Push] | None = None,
    ) -> PlantRun:
        """Track ``trajectory`` from its first point at rest (from 0.5 s), ``extra`` s after its end (or hold
        the rest pose ``extra`` s); recorded as ``out / name`` with the truth beside it."""
        plant = self.plant(s)
        start = self.rest_pose if trajectory is None else trajectory.positions[0]
        plant.reset(start, np.zeros(self.stock.dof))
        duration = extra if trajectory is None else 0.5 + trajectory.end_time + extra
        run = run_plant(
            plant, self.controller(s), duration, trajectory=trajectory, trajectory_start=0.5, pushes=pushes or []
        )
        write_run_bag(out / name, run, overwrite=True, truth_topic="true_joint_states")
        if run.contacts.any() or plant.clamped_steps:
            print(f"  note: {name}: {int(run.contacts.max())} contacts, {plant.clamped_steps} clamped steps")
        return run


# ------------------------------------------------------------------------------------------------
# scoring
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Truth:
    """What the scoring needs of a run: the sample times, the wrench of each period, the period."""

    t: np.ndarray
    wrench: np.ndarray
    period: float

    @property
    def pushed(self) -> np.ndarray:
        return np.asarray(np.any(self.wrench != 0.0, axis=1))

    @classmethod
    def of(cls, run: PlantRun, path: Path) -> Truth:
        np.savez(path, t=run.t, wrench=run.wrench, period=run.period)
        return cls(run.t, run.wrench, run.period)

    @classmethod
    def load(cls, path: Path) -> Truth:
        data = np.load(path)
        return cls(data["t"], data["wrench"], float(data["period"]))


def applied_pushes(run: Truth, pushes: list[Push]) -> list[tuple[float, float]]:
    """Each push's ``(start, end)`` as the plant applied it (whole control periods; the truth of the run)."""
    out = []
    for p in pushes:
        k0, k1 = round(p.start / run.period), round(p.end / run.period)  # as run_plant schedules it
        assert run.pushed[k0 + 1] and not run.pushed[k0], "the push schedule differs from run_plant's"
        out.append((float(run.t[k0]), float(run.t[k1])))
    return out


def score(found: list[dict[str, Any]], spans: list[tuple[float, float]]) -> tuple[list[float | None], int]:
    """Per push the latency (ms) of the first collision raised while it acts (None: missed); the collisions
    raised outside every push and ``CLEAR_S`` after it."""
    raised = np.array([e["time_s"] for e in found if e["event"] == "raised"])
    latency: list[float | None] = []
    inside = np.zeros(raised.size, dtype=bool)
    for start, end in spans:
        hits = raised[(raised >= start - 1e-9) & (raised <= end + 1e-9)]
        latency.append(float((hits.min() - start) * 1e3) if hits.size else None)
        inside |= (raised >= start - 1e-9) & (raised <= end + CLEAR_S)
    return latency, int((~inside).sum())


def latency_text(values: list[float | None], target: float) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return f"-, -; >{target:.0f} ms: 0, missed {len(values)}"
    late, missed = sum(1 for v in got if v > target + 1e-9), len(values) - len(got)
    return f"{max(got):.0f}, {np.median(got):.0f}; >{target:.0f} ms: {late}, missed {missed}"


@dataclass
class Calibrated:
    thresholds: list[float]
    reversal: list[float]
    velocity: list[float]
    timing: str
    timing_rms: dict[str, float]

    def args(self) -> list[str]:
        out = ["--thresholds", *map(repr, self.thresholds)]
        out += ["--reversal-thresholds", *map(repr, self.reversal), "--reversal-velocity", *map(repr, self.velocity)]
        return [*out, "--effort-timing", self.timing]


def calibrate(bag: Path, model: str, extra: list[str], out: Path) -> Calibrated:
    """``robot-dynamics contact BAG --calibrate --effort-timing auto``: the parameter file it wrote."""
    params, report = out.with_suffix(".yaml"), out.with_suffix(".json")
    command(
        [
            "contact",
            str(bag),
            "--robot",
            model,
            *extra,
            "--calibrate",
            "--effort-timing",
            "auto",
            "--params",
            str(params),
            "--json",
            str(report),
        ]
    )
    p = yaml.safe_load(params.read_text())["/**/contact_node"]["ros__parameters"]
    rms = json.loads(report.read_text())["settings"]["effort_timing_rms"]
    return Calibrated(p["thresholds"], p["reversal_thresholds"], p["reversal_velocity"], p["effort_timing"], rms)


def events(bag: Path, model: str, extra: list[str], th: Calibrated, report: Path) -> list[dict[str, Any]]:
    command(["contact", str(bag), "--robot", model, *extra, *th.args(), "--json", str(report)])
    return list(json.loads(report.read_text())["events"])


def case(
    lab: SensorLab, s: Setup, runs: dict[str, Truth], schedules: dict[str, list[Push]], model: str, tag: str
) -> dict[str, Any]:
    """Calibrate ``model`` on the calibration bag, score the free, pushed, slow and rest bags."""
    out = lab.out / s.name
    extra = [] if model.endswith(".yaml") else lab.robot.options()
    th = calibrate(out / "calibration", model, extra, out / f"contact_{tag}")
    result: dict[str, Any] = {"thresholds": th.__dict__}
    free = events(out / "free", model, extra, th, out / f"free_{tag}.json")
    seconds = float(runs["free"].t[-1])
    raised = [e for e in free if e["event"] == "raised"]
    result["free"] = {
        "seconds": seconds,
        "false": len(raised),
        "per_10_min": len(raised) * 600.0 / seconds,
        "times": [e["time_s"] for e in raised][:20],
        "joints": [e["joint"] for e in raised][:20],
    }
    false_pushed = 0
    for name in ("pushed", "slow", "rest"):
        spans = applied_pushes(runs[name], schedules[name])
        latency, false = score(events(out / name, model, extra, th, out / f"{name}_{tag}.json"), spans)
        result[name] = {"latency_ms": latency, "false": false}
        false_pushed += false
    result["false_in_pushed_runs"] = false_pushed
    return result


def report(lab: SensorLab, s: Setup, label: str, res: dict[str, Any]) -> str:
    th = res["thresholds"]
    per = res["free"]["per_10_min"]
    return row(
        s.name,
        label,
        f"{th['timing']} ({', '.join(f'{k} {v:.3g}' for k, v in th['timing_rms'].items())})",
        np.round(th["thresholds"], 2).tolist(),
        np.round(th["reversal"], 1).tolist(),
        f"{res['free']['false']} in {res['free']['seconds']:.0f} s ({per:.1f} / 10 min)",
        latency_text(res["pushed"]["latency_ms"], s.target_ms),
        latency_text(res["slow"]["latency_ms"], s.target_ms),
        latency_text(res["rest"]["latency_ms"], s.target_ms),
        res["false_in_pushed_runs"],
    )


def bench(lab: SensorLab, s: Setup, reuse: bool) -> dict[str, Any]:
    out = lab.out / s.name
    out.mkdir(parents=True, exist_ok=True)
    m, c = s.delays
    print(
        f"\n### {lab.robot.name}, {s.name}: control at {1.0 / s.period:g} Hz, physics {PHYSICS_STEP * 1e3:g} ms, "
        f"torque {s.sensing}, delays {m}/{c} periods, velocity lag {s.velocity_lag * 1e3:.1f} ms, "
        f"ωn {s.wn:.1f} rad/s",
        flush=True,
    )
    schedules = {
        "pushed": push_schedule(np.tile(DIRECTIONS, (3, 1)), FORCE, 1.7, 2.9, PUSH_S),
        "slow": push_schedule(DIRECTIONS, FORCE, 6.0, 10.0, PUSH_S),
        "rest": push_schedule(DIRECTIONS, FORCE, 1.0, 1.0, PUSH_S),
    }
    runs: dict[str, Truth] = {}
    timing: dict[str, float] = {}
    for name, trajectory, extra, pushes in (
        ("identification", lab.identification, 1.0, None),
        ("calibration", lab.calibration, 1.0, None),
        ("free", lab.free, 1.0, None),
        ("pushed", lab.pushed, 1.0, schedules["pushed"]),
        ("slow", lab.slow, 1.0, schedules["slow"]),
        ("rest", None, 9.5, schedules["rest"]),
    ):
        truth = out / f"{name}_truth.npz"
        if reuse and truth.exists() and (out / name).exists():
            runs[name] = Truth.load(truth)
            continue
        t0 = time.perf_counter()
        run = lab.run(s, out, name, trajectory, extra, pushes)
        runs[name] = Truth.of(run, truth)
        timing[name] = time.perf_counter() - t0
        track = np.abs(run.q_desired - run.true_q).max(0)
        print(
            f"  {name}: {run.t[-1]:.0f} s of plant in {timing[name]:.0f} s; "
            f"max tracking error {np.round(track, 2).tolist()} rad",
            flush=True,
        )
    identified = out / "identified.yaml"
    if not (reuse and identified.exists()):
        t0 = time.perf_counter()
        command(
            [
                "identify",
                str(out / "identification"),
                "--robot",
                lab.robot.urdf,
                *lab.robot.options(),
                "--out",
                str(identified),
                "--json",
                str(out / "identify.json"),
                "--jobs",
                "1",
            ]
        )
        timing["identify"] = time.perf_counter() - t0
    true = lab.plant(s).true_model
    exact = out / "exact.yaml"
    write_chain_yaml(exact, link_side(true) if s.sensing == "link" else true)
    results = {}
    for tag, model in (("identified", str(identified)), ("exact", str(exact))):
        t0 = time.perf_counter()
        results[tag] = case(lab, s, runs, schedules, model, tag)
        timing[f"contact_{tag}"] = time.perf_counter() - t0
        print(report(lab, s, tag, results[tag]), flush=True)
    print(f"  seconds: {', '.join(f'{k} {v:.0f}' for k, v in timing.items())}", flush=True)
    return {
        "robot": lab.robot.name,
        "setup": s.name,
        "rate_hz": 1.0 / s.period,
        "sensing": s.sensing,
        "delays": list(s.delays),
        "wn": s.wn,
        "target_ms": s.target_ms,
        "seconds": timing,
        **results,
    }


HEADS = [
    "setup",
    "model",
    "effort timing (RMS r)",
    "thresholds (N·m)",
    "+ near reversals",
    "false collisions, free motion",
    "in motion (24): max, median ms; late, missed",
    "slow motion (8)",
    "at rest (8)",
    "false in pushed runs",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--robots", nargs="+", default=["ur5", "panda"], choices=["ur5", "panda"])
    parser.add_argument(
        "--sensors", nargs="+", default=list(SETUPS), metavar="PROFILE", help="ideal, ideal_link, or a profile"
    )
    parser.add_argument(
        "--free-minutes", type=float, default=10.0, help="free motion for false collisions (%(default)s)"
    )
    parser.add_argument("--out", default="/tmp/bench_contact_sensors", help="bags, models, reports (%(default)s)")
    parser.add_argument("--fresh", action="store_true", help="design the excitation trajectories again")
    parser.add_argument("--reuse", action="store_true", help="keep the recordings and models found in --out")
    args = parser.parse_args(argv)
    setups = [setup(name) for name in args.sensors]
    summary = []
    for name in args.robots:
        out = Path(args.out) / name
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        lab = SensorLab(robots()[name], out, args.free_minutes * 60.0, args.fresh)
        print(f"## {name}: {lab.free.end_time + 1.5:.0f} s of free motion ({time.perf_counter() - t0:.0f} s to design)")
        rows = []
        for s in setups:
            summary.append(bench(lab, s, args.reuse))
            rows += [report(lab, s, tag, summary[-1][tag]) for tag in ("identified", "exact")]
            Path(args.out, "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
        print(f"\n## {name}\n\n" + row(*HEADS) + "\n|" + "---|" * len(HEADS) + "\n" + "\n".join(rows), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
