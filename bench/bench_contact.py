"""Contact awareness proven on the MuJoCo plant: estimate accuracy, detection, false positives, node cost.

    .venv/bin/python bench/bench_contact.py [--robots ur5 panda] [--out DIR] [--node-seconds 12] [--fresh]

For each robot of example-robot-data (the UR5, and the Panda with tip ``panda_hand_tcp`` and locked
fingers), everything a user would do, with the package's own commands, in one run:

1. **Plants** (MuJoCo, 1 kHz): the stock URDF deviated per joint (viscous damping, Coulomb friction =
   MuJoCo ``frictionloss``, armature) and per link (masses and inertias ±20 %, seeded) — the UR5 by
   ``config/plant_deviations.yaml``, the Panda by damping 1, friction 1, armature 0.05, ±20 % (the
   plant benchmark's deviations); and the same plant **without Coulomb friction**. MuJoCo's contacts
   are switched off: the stock collision meshes, compiled as convex hulls, touch in many poses (the
   UR5's forearm and wrist 2 in 28 % of poses drawn in ±1.5 rad, 2 cm deep), which is a contact the observer
   rightly reports but no free motion. And the deviated plant once more with **link-side joint torque
   sensors** (``torque_sensing="link"``: the effort is the torque the joints pass on to their links,
   after friction, damping and armature, as a Franka's ``tau_J``; the motors' torque otherwise).
2. **Motion**: ``robot-dynamics excitation`` designs six 20 s trajectories (0.1 Hz, 4 harmonics, 1 s
   ramps; seeds 0, 2, 4 for identification and calibration, seeds 1, 3, 5 for validation), each
   three chained by 3 s quintic moves (~72 s, of which 60 s of excitation); the plant tracks them under
   PD + the stock file's feed-forward (:mod:`robot_dynamics.control`, ``kp = D_ii ωn²``,
   ``kd = 2 ζ ωn D_ii``, ``ωn = 20 rad/s``, ``ζ = 1``) — :func:`robot_dynamics.plant.run.run_plant`;
   every run is recorded as a rosbag2 file (joint_states with effort = the applied torque) by the
   package's bag writer.
3. **Identified model**: ``robot-dynamics identify`` on the calibration recording (and on the link-side
   calibration recording for the link-side cases; the plant's own model there is its true model without
   friction and armature, :func:`robot_dynamics.plant.true_model.link_side`).
4. **Pushes**: 20 N at the tool (MuJoCo ``xfrc_applied``), 0.3 s steps along ±x, ±y, ±z and two
   diagonals (world axes): 24 during the validation motion (every 2.9 s), 8 at rest at a pose away
   from singularities (cond(J) ~ 9), and for the accuracy 8 during the first validation trajectory
   played at a quarter of its speed.
5. **Thresholds**: ``robot-dynamics contact --calibrate`` on the calibration recording, for each model
   (reversal-aware by default; ``--reversal-velocity 0``: one fixed threshold per joint).
6. **Detection**: ``robot-dynamics contact`` on the pushed and on the free validation recordings: the
   latency of the first collision event after each push starts, and every event outside a push (a
   false positive); the stock model's events at the identified model's thresholds.
7. **Accuracy** (the model the plant is built from, ``true_model``): per push, the RMS of ``r - Jᵀ F``
   from ``4 / K`` after the push starts to its end, relative to the RMS of ``Jᵀ F``; the settling time
   (after it the error stays within 5 % of ``|Jᵀ F|``); the wrench estimate (world axes) against ``F``
   where ``cond(J) < 50``. In motion ``Jᵀ F`` changes with the pose and a first-order observer lags it
   by ``1 / K``: the column "vs lag-free" compares ``r`` with ``Jᵀ F`` through the same first-order
   filter, which is the estimator's own error.
8. **Node** (``--node-seconds`` > 0): ``bench/bench_contact_node.py`` for the UR5 (latency beside the
   feed-forward node, the nodes' own compute).

Outputs in ``--out`` (default ``/tmp/bench_contact``): the bags, the models, the parameter files, the
commands' JSON, ``summary.json``. Excitation designs are reused from ``--out`` unless ``--fresh``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test"))

import robot_dynamics as rd
from robot_dynamics.bag.contact import ContactAnalysis, analyse
from robot_dynamics.bag.evaluate import read_inputs
from robot_dynamics.cli import main as cli
from robot_dynamics.control import ControlLaw, Controller, ControlSettings
from robot_dynamics.dynamics.contact_wrench import external_wrench
from robot_dynamics.dynamics.momentum_observer import scan_recurrence
from robot_dynamics.identification.excitation_files import read_trajectory
from robot_dynamics.models.chain_yaml import write_chain_yaml
from robot_dynamics.plant import MujocoPlant, parse_deviations, plant_source
from robot_dynamics.plant.run import PlantRun, Push, push_schedule, run_plant, write_run_bag
from robot_dynamics.plant.true_model import link_side
from robot_dynamics.trajectory import JointTrajectorySampler

REPO = Path(__file__).resolve().parents[1]
GAIN = 50.0  # K_O, 1/s
FORCE = 20.0  # N
PUSH_S = 0.3
DIRECTIONS = np.array(
    [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1], [1, 1, 1], [-1, 1, -1]], dtype=float
)
WN, ZETA = 20.0, 1.0
CALIBRATION_SEEDS, VALIDATION_SEEDS = (0, 2, 4), (1, 3, 5)
LINK_S = 3.0  # quintic move between chained trajectories
VARIANTS = {  # run suffix: (the Lab's deviations, torque sensing)
    "": ("deviated", "motor"),
    "_nc": ("frictionless", "motor"),
    "_link": ("deviated", "link"),
}
REST_POSES = {
    "ur5": [0.0, -1.2, 1.4, -1.6, -1.57, 0.3],
    "panda": [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785],
}


@dataclass(frozen=True)
class Robot:
    name: str
    urdf: str
    tip: str | None
    locks: dict[str, float]
    deviations: dict[str, Any]

    def options(self) -> list[str]:
        out = ["--tip-link", self.tip] if self.tip else []
        for joint in self.locks:
            out += ["--lock-joint", joint]
        return out


def robots() -> dict[str, Robot]:
    from engine_reference import EXAMPLE_ROBOTS

    ur5 = yaml.safe_load((REPO / "config" / "plant_deviations.yaml").read_text())
    panda = {"damping": 1.0, "friction": 1.0, "armature": 0.05, "random": {"seed": 7, "mass": 0.2, "inertia": 0.2}}
    return {
        "ur5": Robot("ur5", str(EXAMPLE_ROBOTS / "ur_description/urdf/ur5_robot.urdf"), None, {}, ur5),
        "panda": Robot(
            "panda",
            str(EXAMPLE_ROBOTS / "panda_description/urdf/panda.urdf"),
            "panda_hand_tcp",
            {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0},
            panda,
        ),
    }


def command(args: list[str], quiet: bool = True) -> str:
    """``robot-dynamics ARGS`` in this process (as on the command line); its standard output."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(args)
    if code not in (0, None):
        raise RuntimeError(f"robot-dynamics {' '.join(args)}: exit {code}\n{out.getvalue()}")
    if not quiet:
        print(out.getvalue(), end="")
    return out.getvalue()


# ------------------------------------------------------------------------------------------------
# simulation
# ------------------------------------------------------------------------------------------------
def chain(parts: list[JointTrajectorySampler]) -> JointTrajectorySampler:
    """The trajectories one after the other, each joined to the next by a ``LINK_S`` quintic move (their
    end and start points are at rest: the sampler's segment between them is that move)."""
    times, q, qd, qdd, offset = [], [], [], [], 0.0
    for part in parts:
        assert part.velocities is not None and part.accelerations is not None
        times.append(part.times + offset)
        q.append(part.positions)
        qd.append(part.velocities)
        qdd.append(part.accelerations)
        offset += part.end_time + LINK_S
    return JointTrajectorySampler(np.concatenate(times), np.vstack(q), np.vstack(qd), np.vstack(qdd))


def slowed(part: JointTrajectorySampler, factor: float) -> JointTrajectorySampler:
    """``part`` played ``factor`` times slower."""
    assert part.velocities is not None and part.accelerations is not None
    return JointTrajectorySampler(
        part.times * factor, part.positions, part.velocities / factor, part.accelerations / factor**2
    )


def design(robot: Robot, out: Path, seed: int, fresh: bool) -> JointTrajectorySampler:
    """``robot-dynamics excitation`` (20 s, 0.1 Hz, 4 harmonics, 1 s ramps) with ``seed``, kept in ``out``
    (reused if present; the seeds after the first with a shorter search: only seed 0's conditioning matters)."""
    path = out / f"excitation_{seed}.yaml"
    if fresh or not path.exists():
        t0 = time.perf_counter()
        search = [] if seed == 0 else ["--starts", "1", "--iterations", "40"]
        command(
            [
                "excitation", robot.urdf, *robot.options(), "--duration", "20", "--base-frequency",
                "0.1", "--harmonics", "4", "--ramp", "1", "--seed", str(seed), *search, "--out", str(path),
                "--force",
            ]
        )  # fmt: skip
        print(f"  {robot.name}: robot-dynamics excitation (seed {seed}): {time.perf_counter() - t0:.0f} s")
    msg = read_trajectory(path)
    return JointTrajectorySampler(msg.times, msg.positions, msg.velocities, msg.accelerations)


class Lab:
    """One robot: its stock model, plants, controller gains, trajectories and runs."""

    def __init__(self, robot: Robot, out: Path, fresh: bool) -> None:
        self.robot, self.out = robot, out
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.stock = rd.load_robot(robot.urdf, tip_link=robot.tip, locked_joints=robot.locks or None)
        rd.prepare(self.stock, "native")
        self.source = plant_source(robot.urdf, None, robot.tip, robot.locks or None)
        self.deviated = parse_deviations(robot.deviations, f"{robot.name} deviations")
        self.frictionless = parse_deviations({**robot.deviations, "friction": 0.0}, f"{robot.name} without Coulomb")
        self.excitation = chain([self._design(seed, fresh) for seed in CALIBRATION_SEEDS])
        self.validation = chain([self._design(seed, fresh) for seed in VALIDATION_SEEDS])
        self.slow = slowed(self._design(VALIDATION_SEEDS[0], False), 4.0)
        self.rest_pose = np.array(REST_POSES[robot.name])
        D = np.diag(rd.inertia_matrix(self.stock, self.excitation.positions[0]))
        self.kp, self.kd = D * WN**2, 2.0 * ZETA * WN * D

    def _design(self, seed: int, fresh: bool) -> JointTrajectorySampler:
        return design(self.robot, self.out, seed, fresh)

    def plant(self, variant: str) -> MujocoPlant:
        """The plant of ``variant`` (:data:`VARIANTS`)."""
        deviations, sensing = VARIANTS[variant]
        plant = MujocoPlant(self.source, self.stock, 1e-3, getattr(self, deviations), torque_sensing=sensing)
        plant.mjmodel.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)  # see the module docstring
        return plant

    def run(
        self,
        name: str,
        variant: str,
        trajectory: JointTrajectorySampler | None,
        extra: float = 1.0,
        pushes: list[Push] = (),  # type: ignore[assignment]
    ) -> PlantRun:
        """Track ``trajectory`` from its first point at rest (it starts at 0.5 s), ``extra`` s after its
        end; without one, hold the rest pose for ``extra`` s."""
        plant = self.plant(variant)
        start = self.rest_pose if trajectory is None else trajectory.positions[0]
        plant.reset(start, np.zeros(self.stock.dof))
        law = ControlLaw(self.stock)
        controller = Controller(law, ControlSettings(law="pd_feedforward", kp=self.kp, kd=self.kd))
        duration = extra if trajectory is None else 0.5 + trajectory.end_time + extra
        run = run_plant(plant, controller, duration, trajectory=trajectory, trajectory_start=0.5, pushes=pushes)
        write_run_bag(self.out / name, run, overwrite=True)
        if run.contacts.any() or plant.clamped_steps:
            print(f"  note: {name}: {int(run.contacts.max())} contacts, {plant.clamped_steps} clamped steps")
        return run


# ------------------------------------------------------------------------------------------------
# analysis
# ------------------------------------------------------------------------------------------------
@dataclass
class Thresholds:
    base: np.ndarray
    reversal: np.ndarray | None
    velocity: np.ndarray | None

    def args(self) -> list[str]:
        out = ["--thresholds", *map(repr, self.base.tolist())]
        if self.reversal is not None and self.velocity is not None:
            out += ["--reversal-thresholds", *map(repr, self.reversal.tolist())]
            out += ["--reversal-velocity", *map(repr, self.velocity.tolist())]
        else:
            out += ["--reversal-velocity", "0"]
        return out


def calibrate(bag: Path, model_file: str, extra: list[str], params: Path, reversal: bool) -> Thresholds:
    """``robot-dynamics contact BAG --calibrate`` (reversal-aware or fixed); the thresholds it wrote."""
    command(
        ["contact", str(bag), "--robot", model_file, *extra, "--calibrate", "--params", str(params)]
        + ([] if reversal else ["--reversal-velocity", "0"])
    )
    p = yaml.safe_load(params.read_text())["/**/contact_node"]["ros__parameters"]
    rev = p.get("reversal_thresholds")
    return Thresholds(
        np.array(p["thresholds"]), None if rev is None else np.array(rev), np.array(p.get("reversal_velocity", [0.0]))
    )


def events(bag: Path, model_file: str, extra: list[str], th: Thresholds, report: Path) -> list[dict[str, Any]]:
    """The collision events of ``robot-dynamics contact BAG --thresholds ... --json``."""
    command(["contact", str(bag), "--robot", model_file, *extra, *th.args(), "--json", str(report)])
    return list(json.loads(report.read_text())["events"])


def detection(found: list[dict[str, Any]], pushes: list[Push], clear_s: float = 0.3) -> tuple[list[float | None], int]:
    """Per push the latency (ms) of the first raised event from its start to its end (None: missed), and
    the raised events outside every ``[start, end + clear_s]`` (false positives)."""
    raised = np.array([e["time_s"] for e in found if e["event"] == "raised"])
    latency: list[float | None] = []
    inside = np.zeros(raised.size, dtype=bool)
    for p in pushes:
        hits = raised[(raised >= p.start - 1e-9) & (raised <= p.end + 1e-9)]
        latency.append(float((hits.min() - p.start) * 1e3) if hits.size else None)
        inside |= (raised >= p.start - 1e-9) & (raised <= p.end + clear_s)
    return latency, int((~inside).sum())


def observer_run(run: PlantRun, model: rd.RobotModel, bag: Path) -> ContactAnalysis:
    """The contact command's analysis of ``bag`` (the same code, in memory, for the accuracy figures)."""
    series = read_inputs(bag, model, trajectory=None).series
    return analyse(model, series, gain=GAIN)


def lag_free(run: PlantRun) -> np.ndarray:
    """``Jᵀ F`` through the observer's first-order filter (discrete form (3) with the interval's value)."""
    a = np.full((run.t.size - 1, run.tau_ext.shape[1]), np.exp(-GAIN * run.period))
    return scan_recurrence(a, (1.0 - a) * run.tau_ext[1:], np.zeros(run.tau_ext.shape[1]))


def accuracy(
    run: PlantRun, analysis: ContactAnalysis, model: rd.RobotModel, pushes: list[Push]
) -> list[dict[str, float]]:
    """Per push: relative RMS error once settled, against ``Jᵀ F`` and lag-free; settling (ms); wrench error."""
    r, truth, ideal = analysis.run.r, run.tau_ext, lag_free(run)
    out = []
    for p in pushes:
        k0, k1 = round(p.start / run.period) + 1, round(p.end / run.period) + 1  # samples after pushed periods
        settled = slice(k0 + round(4.0 / GAIN / run.period), k1)
        scale = np.sqrt(np.mean(truth[settled] ** 2))
        error = np.sqrt(np.mean((r[settled] - truth[settled]) ** 2)) / scale
        error_ideal = np.sqrt(np.mean((r[settled] - ideal[settled]) ** 2)) / scale
        norm = np.linalg.norm(r[k0:k1] - truth[k0:k1], axis=1) / np.linalg.norm(truth[k0:k1], axis=1)
        late = np.flatnonzero(norm > 0.05)
        settling = None if late.size and late[-1] == norm.size - 1 else (0 if not late.size else late[-1] + 1)
        est = external_wrench(model, run.q[settled], r[settled], frame="world")
        good = est.condition < 50.0
        applied = run.wrench[settled]
        werr = np.linalg.norm(est.wrench - applied, axis=1) / np.linalg.norm(applied, axis=1)
        out.append(
            {
                "start_s": p.start,
                "error": float(error),
                "error_lag_free": float(error_ideal),
                "settling_ms": None if settling is None else float(settling * run.period * 1e3),
                "wrench_error_max": float(werr[good].max()) if good.any() else float("nan"),
                "wrench_error_rms": float(np.sqrt(np.mean(werr[good] ** 2))) if good.any() else float("nan"),
                "well_conditioned": float(good.mean()),
                "torque_rms": float(scale),
            }
        )
    return out


def fmt_ms(values: list[float | None]) -> str:
    """Latencies as ``worst, median; over 10 ms, missed``."""
    got = [v for v in values if v is not None]
    worst, median = (f"{max(got):.0f}", f"{np.median(got):.0f}") if got else ("-", "-")
    late, missed = sum(1 for v in got if v > 10.0), len(values) - len(got)
    return f"{worst} ms max, {median} median; >10 ms: {late}, missed: {missed} of {len(values)}"


def row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def simulate(lab: Lab, moving: list[Push], rest: list[Push], slow: list[Push]) -> dict[str, PlantRun]:
    """Every run of the proof, each written as a bag in ``lab.out`` (suffix: the plant's variant)."""
    t0 = time.perf_counter()
    runs = {}
    for suffix in VARIANTS:
        runs["calibration" + suffix] = lab.run("calibration" + suffix, suffix, lab.excitation)
        runs["free" + suffix] = lab.run("free" + suffix, suffix, lab.validation)
        runs["pushed" + suffix] = lab.run("pushed" + suffix, suffix, lab.validation, pushes=moving)
        runs["rest" + suffix] = lab.run("rest" + suffix, suffix, None, extra=9.5, pushes=rest)
    runs["slow_nc"] = lab.run("slow_nc", "_nc", lab.slow, pushes=slow)
    print(f"  simulated {sum(r.t[-1] for r in runs.values()):.0f} s of plant in {time.perf_counter() - t0:.0f} s")
    return runs


def model_files(lab: Lab) -> dict[str, tuple[str, list[str]]]:
    """The robot files with their chain options: identified (``robot-dynamics identify`` on the
    calibration bag; ``identified_link`` on the link-side one), stock, and the plants' own models
    (``exact``, ``exact_nc``, ``exact_link``) as chain YAML."""
    robot, out = lab.robot, lab.out
    files = {"stock": (robot.urdf, robot.options())}
    for suffix in ("", "_link"):
        t0 = time.perf_counter()
        identified = out / f"identified{suffix}.yaml"
        calibration = str(out / f"calibration{suffix}")
        command(["identify", calibration, "--robot", robot.urdf, *robot.options(), "--out", str(identified)])
        print(f"  robot-dynamics identify ({calibration}): {time.perf_counter() - t0:.0f} s")
        files["identified" + suffix] = (str(identified), [])
    for suffix in VARIANTS:
        path = out / f"true_exact{suffix}.yaml"
        true = lab.plant(suffix).true_model
        write_chain_yaml(path, link_side(true) if VARIANTS[suffix][1] == "link" else true)
        files["exact" + suffix] = (str(path), [])
    return files


CASES = [  # (label, model, runs' suffix, reversal-aware thresholds)
    ("exact model, plant without Coulomb friction", "exact_nc", "_nc", True),
    ("exact model, deviated plant", "exact", "", True),
    ("identified model, deviated plant", "identified", "", True),
    ("identified model, deviated plant, fixed thresholds", "identified", "", False),
    ("stock model, deviated plant, own thresholds", "stock", "", True),
    ("exact model, deviated plant, link-side torque sensors", "exact_link", "_link", True),
    ("identified model, deviated plant, link-side torque sensors", "identified_link", "_link", True),
]


def detection_table(
    lab: Lab, files: dict[str, tuple[str, list[str]]], free_s: float, moving: list[Push], rest: list[Push]
) -> tuple[list[dict[str, Any]], dict[str, Thresholds]]:
    """Calibrate every case on its calibration bag, then the events on the free, pushed and rest bags."""
    out = lab.out
    rows, thresholds = [], {}
    heads = ["model, plant", "thresholds away from reversals (N·m)", "+ near reversals", "in motion (24 pushes)"]
    heads += ["at rest (8)", f"false positives, {free_s:.0f} s free", "in the pushed runs"]
    print("\n" + row(*heads))
    print("|---|---|---|---|---|---:|---:|")
    for label, key, suffix, reversal in CASES:
        file, extra = files[key]
        tag = f"{key}_{'reversal' if reversal else 'fixed'}"
        th = thresholds[tag] = calibrate(
            out / f"calibration{suffix}", file, extra, out / f"contact_{tag}.yaml", reversal
        )
        moving_events = events(out / f"pushed{suffix}", file, extra, th, out / f"pushed_{tag}.json")
        lat_moving, fp_moving = detection(moving_events, moving)
        lat_rest, fp_rest = detection(events(out / f"rest{suffix}", file, extra, th, out / f"rest_{tag}.json"), rest)
        free = events(out / f"free{suffix}", file, extra, th, out / f"free_{tag}.json")
        fp_free = sum(1 for e in free if e["event"] == "raised")
        rev = "-" if th.reversal is None else np.round(th.reversal, 2).tolist()
        print(
            row(
                label,
                np.round(th.base, 3).tolist(),
                rev,
                fmt_ms(lat_moving),
                fmt_ms(lat_rest),
                fp_free,
                fp_moving + fp_rest,
            )
        )
        rows.append(
            {
                "case": label,
                "thresholds": th.base.tolist(),
                "reversal_thresholds": None if th.reversal is None else th.reversal.tolist(),
                "latency_moving_ms": lat_moving,
                "latency_rest_ms": lat_rest,
                "false_positives_free": fp_free,
                "false_positives_pushed_runs": fp_moving + fp_rest,
            }
        )
    return rows, thresholds


def stock_at_identified(lab: Lab, runs: dict[str, PlantRun], th: Thresholds) -> dict[str, Any]:
    """The stock model's false positives at the identified model's thresholds, its free-motion residual."""
    robot, out = lab.robot, lab.out
    found = events(out / "free", robot.urdf, robot.options(), th, out / "free_stock_at_identified.json")
    count = sum(1 for e in found if e["event"] == "raised")
    residual = np.abs(observer_run(runs["free"], lab.stock, out / "free").run.r).max(0)
    seconds = runs["free"].t[-1]
    print(
        f"\nstock model at the identified model's thresholds: {count} false positives in {seconds:.0f} s of free "
        f"motion ({count / seconds * 60.0:.0f} per minute); its free-motion max |r| per joint (N·m): "
        f"{np.round(residual, 2).tolist()}"
    )
    return {"false_positives": count, "seconds": seconds, "free_residual_max": residual.tolist()}


def rest_table(lab: Lab, run: PlantRun, rest: list[Push], latency: list[float | None]) -> None:
    """At rest on the deviated plant: each push's joint torque against the joints' Coulomb friction."""
    coulomb = np.array([j.friction.coulomb[0] for j in lab.plant("").true_model.joints])
    print("\nat rest (deviated plant, identified model): |Jᵀ F| per joint, its largest ratio to F_c, the latency")
    for p, lat in zip(rest, latency, strict=True):
        torque = np.abs(run.tau_ext[round(p.start / run.period) + 1])
        ratio = float(np.max(torque / np.maximum(coulomb, 1e-9)))
        print(
            f"  F = {np.round(p.wrench[:3], 1).tolist()} N: |Jᵀ F| = {np.round(torque, 1).tolist()} N·m, "
            f"{ratio:.1f} x F_c: {'missed' if lat is None else f'{lat:.0f} ms'}"
        )


def accuracy_table(
    lab: Lab, files: dict[str, tuple[str, list[str]]], runs: dict[str, PlantRun], schedules: dict[str, list[Push]]
) -> dict[str, Any]:
    """The exact model's estimate against the applied torque and wrench, per plant and kind of push."""
    heads = ["plant (exact model)", "pushes", "error once settled (RMS / RMS Jᵀ F)", "vs lag-free", "settling (5 %)"]
    heads += ["wrench error (cond < 50) RMS / max", "samples with cond < 50"]
    print("\n" + row(*heads))
    print("|---|---|---:|---:|---:|---:|---:|")
    out: dict[str, Any] = {}
    for label, key, suffix in (
        ("without Coulomb friction", "exact_nc", "_nc"),
        ("deviated (Coulomb)", "exact", ""),
        ("deviated, link-side torque sensors", "exact_link", "_link"),
    ):
        model = rd.load_robot(files[key][0])
        for part, name in (("in motion", "pushed"), ("in motion at 1/4 speed", "slow"), ("at rest", "rest")):
            if name + suffix not in runs:
                continue
            run = runs[name + suffix]
            acc = out[f"{label}, {part}"] = accuracy(
                run, observer_run(run, model, lab.out / (name + suffix)), model, schedules[name]
            )
            errors = [a["error"] for a in acc]
            settle = [a["settling_ms"] for a in acc]
            settled = [s for s in settle if s is not None]
            settle_text = (f"{max(settled):.0f} ms max" if settled else "-") + (
                f" ({len(settle) - len(settled)} not settled)" if len(settled) < len(settle) else ""
            )
            wrench = [(a["wrench_error_rms"], a["wrench_error_max"]) for a in acc if np.isfinite(a["wrench_error_rms"])]
            wrench_text = f"{max(w[0] for w in wrench):.1%} / {max(w[1] for w in wrench):.1%}" if wrench else "-"
            print(
                row(
                    label,
                    f"{part} ({len(acc)})",
                    f"{max(errors):.1%} max, {np.median(errors):.1%} median",
                    f"{max(a['error_lag_free'] for a in acc):.1%} max",
                    settle_text,
                    wrench_text,
                    f"{np.mean([a['well_conditioned'] for a in acc]):.0%}",
                )
            )
    return out


def proof(lab: Lab) -> dict[str, Any]:
    """Every table of the module docstring for one robot; the figures as a dictionary."""
    print(
        f"\n## {lab.robot.name}: {lab.stock.dof} joints, K_O = {GAIN:g}/s, {FORCE:g} N pushes, PD kp "
        f"{np.round(lab.kp, 1).tolist()}"
    )
    schedules = {
        "pushed": push_schedule(np.tile(DIRECTIONS, (3, 1)), FORCE, 1.7, 2.9, PUSH_S),
        "rest": push_schedule(DIRECTIONS, FORCE, 1.0, 1.0, PUSH_S),
        "slow": push_schedule(DIRECTIONS, FORCE, 6.0, 10.0, PUSH_S),
    }
    runs = simulate(lab, schedules["pushed"], schedules["rest"], schedules["slow"])
    files = model_files(lab)
    detection_rows, thresholds = detection_table(lab, files, runs["free"].t[-1], schedules["pushed"], schedules["rest"])
    stock = stock_at_identified(lab, runs, thresholds["identified_reversal"])
    rest_table(lab, runs["rest"], schedules["rest"], detection_rows[2]["latency_rest_ms"])
    figures = accuracy_table(lab, files, runs, schedules)
    return {"robot": lab.robot.name, "detection": detection_rows, "stock": stock, "accuracy": figures}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--robots", nargs="+", default=["ur5", "panda"], choices=["ur5", "panda"])
    parser.add_argument("--out", default="/tmp/bench_contact", help="bags, models, reports (default: %(default)s)")
    parser.add_argument("--node-seconds", type=float, default=12.0, help="node benchmark duration; 0 = skip")
    parser.add_argument("--fresh", action="store_true", help="design the excitation trajectories again")
    args = parser.parse_args(argv)
    summary = []
    for name in args.robots:
        out = Path(args.out) / name
        out.mkdir(parents=True, exist_ok=True)
        summary.append(proof(Lab(robots()[name], out, args.fresh)))
    Path(args.out, "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    if args.node_seconds > 0:
        import bench_contact_node

        print("\n## contact_node beside the feed-forward node (UR5, 1 kHz)")
        bench_contact_node.main(
            ["--robot", robots()["ur5"].urdf, "--duration", str(args.node_seconds), "--rounds", "4"]
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
