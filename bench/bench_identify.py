"""Identification at fleet scale: long recordings, many bags, parallel efficiency.

Usage: ``.venv/bin/python bench/bench_identify.py [--full] [--skip-dask] [--only a|b|c|d|e]``

(The script is longer than 400 lines because its five parts share the machine set-up, the robots and
the reporting; each part is one function.)

(a) **one long recording**: ``--seconds`` (default 600; ``--full``: 3600 = one hour) of 1 kHz joint
    states of the 7-DoF Franka Panda (example-robot-data URDF): a sum of sines per joint, torques of a
    perturbed "truth" with effort noise (synthesised first, not timed). Timed: its reduction
    (``statistics_from_arrays``: Savitzky–Golay derivatives, regressor rows, per-joint normal
    equations, stock-model errors) in time spans shared by 1 or 2 local processes, then the fits
    (weighted least squares, physically consistent). Wall and CPU seconds (this process and its
    workers), and the machine's load average: on a shared machine only the CPU seconds are stable.
(b) **bags**: a directory of ``--bags`` (20) PUMA 560 bags of ``--bag-seconds`` (30 s at 1 kHz):
    the per-bag reduction (``map_tasks``) with 1 vs 2 local processes and with a Dask
    ``LocalCluster`` of 1 vs 2 single-threaded worker processes (cluster start-up not timed). Per
    task its wall and CPU seconds and its worker: the parallel efficiency ``T1 / (2 T2)`` from the
    wall times, and from the CPU seconds with ``T2`` the busiest worker's (what two free cores give,
    overheads outside the tasks apart); the results are checked identical.
(c) **evaluate**: ``robot-dynamics evaluate``'s pipeline on a 100k-message bag (messages per second,
    best of 3, in a fresh interpreter), which the identification work must leave unchanged;
    ``--peer TREE`` runs the same with another source tree (e.g. the main checkout) for the ratio
    (``bench/bench_bag.py`` has the stages).

(d) **friction at velocity reversals**: a UR5 and a Panda (example-robot-data) whose perturbed truth
    sticks at every reversal (``stick_slip_record``: static friction 1.4 x Coulomb, Stribeck decay),
    60 s at 1 kHz (noise-free and with noise) and 120 s at 30 Hz with noise; side by side: the fit
    before (every row, 0.1 s window), ordinary least squares leaving out rows below 0.05 rad/s, and
    the current defaults with every friction law, and ``viscous-coulomb`` with the stick band off (0) or
    at 0.002 and 0.01 rad/s (default 0.005): noise estimate, held-out RMS (every row; rows at or above
    the cut), base parameters' relative error and the share of them within 3 sigma of the truth, and
    (with an identified model) how many significant base parameters lie within 5 % as the closed-loop
    report counts them (:func:`robot_dynamics.experiment.parameters.base_parameter_summary`).
(e) **plausible links**: every bundled robot and the UR5, UR10 and Panda, each identified (defaults)
    from 30 s at 250 Hz of its perturbed truth with stiction and noise: flagged links (mass outside
    [0.5, 2] x stock, centre of mass outside its bound) and where each link's bound came from.

BLAS is limited to one thread per process (``OPENBLAS_NUM_THREADS=1`` etc., set before NumPy loads)
so that "1 worker" means one core and the efficiency compares like with like.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import importlib.metadata  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.identification import ParameterSet  # noqa: E402
from robot_dynamics.identification.choice import Validator, choose  # noqa: E402
from robot_dynamics.identification.parallel import map_tasks  # noqa: E402
from robot_dynamics.identification.pipeline import fit_statistics  # noqa: E402
from robot_dynamics.identification.samples import (  # noqa: E402
    BagTask,
    PipelineSettings,
    SampleStatistics,
    bag_statistics,
    expand_bags,
    statistics_from_arrays,
)
from robot_dynamics.identification.synthetic import perturbed_model, record, write_bag  # noqa: E402
from robot_dynamics.model import RobotModel  # noqa: E402

RATE = 1000.0
NOISE = 0.05  # N m


def panda() -> RobotModel:
    root = Path(
        str(importlib.metadata.distribution("example-robot-data").locate_file("cmeel.prefix/share/example-robot-data"))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fingers are held at zero
        return rd.load_robot(str(root / "robots/panda_description/urdf/panda.urdf"), tip_link="panda_hand")


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the pool's workers, joined on return)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def load() -> str:
    return "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def long_recording(model: RobotModel, seconds: float, seed: int = 0) -> tuple[np.ndarray, ...]:
    """``t, q, qd, tau``: a sum of five sines per joint (periods 3-20 s, within the joint limits) at
    1 kHz, torques of a perturbed "truth" plus noise ``NOISE`` — one long recording."""
    rng = np.random.default_rng(seed)
    truth = perturbed_model(model, seed=1)
    t = np.arange(round(seconds * RATE) + 1) / RATE
    lower = np.array([j.limits.lower for j in model.joints])
    upper = np.array([j.limits.upper for j in model.joints])
    centre, half = 0.5 * (lower + upper), np.minimum(0.8, 0.4 * (upper - lower))
    omega = 2 * np.pi / rng.uniform(3.0, 20.0, (5, model.dof))
    amp = rng.uniform(0.5, 1.0, (5, model.dof)) * half / 5.0
    phase = rng.uniform(0.0, 2 * np.pi, (5, model.dof))
    q, qd, qdd = np.tile(centre, (t.size, 1)), np.zeros((t.size, model.dof)), np.zeros((t.size, model.dof))
    for k in range(5):
        arg = omega[k] * t[:, None] + phase[k]
        q += amp[k] * np.sin(arg)
        qd += amp[k] * omega[k] * np.cos(arg)
        qdd -= amp[k] * omega[k] ** 2 * np.sin(arg)
    tau = np.asarray(rd.inverse_dynamics(truth, q, qd, qdd, friction=True, smooth=True))
    tau += NOISE * rng.standard_normal(tau.shape)
    return t, q, qd, tau


def bench_arrays(seconds: float, jobs_list: tuple[int, ...] = (1, 2)) -> None:
    model = panda()
    start = time.perf_counter()
    t, q, qd, tau = long_recording(model, seconds)
    made = time.perf_counter() - start
    states = t.size
    print(
        f"(a) one recording of {states / 1e6:.2f} M joint states of the 7-DoF Panda at 1 kHz "
        f"(synthesised in {made:.1f} s, not timed); {load()}"
    )
    times: dict[int, tuple[float, float]] = {}
    reference = None
    for jobs in jobs_list:
        wall, cpu = time.perf_counter(), cpu_seconds()
        stats = statistics_from_arrays(model, ParameterSet(), t, q, qd, tau, name="recording", jobs=jobs)
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
        times[jobs] = (wall, cpu)
        start = time.perf_counter()
        wls = fit_statistics(model, ParameterSet(), [stats], consistent=False)
        wls_s = time.perf_counter() - start
        start = time.perf_counter()
        cons = fit_statistics(model, ParameterSet(), [stats], consistent=True)
        cons_s = time.perf_counter() - start
        start = time.perf_counter()  # identify's choice of rows and law (its window is not searched here)
        validator = Validator(model, [stats], ParameterSet(), "tanh")
        choice = choose(validator, laws=("viscous-coulomb", "smooth-coulomb", "stribeck"))
        choice_s = time.perf_counter() - start
        same = reference is None or all(
            np.array_equal(getattr(reference.train, k), getattr(stats.train, k))
            for k in ("ata_joint", "atb_joint", "btb_joint")
        )
        reference = reference or stats
        print(
            f"    {jobs} process(es): reduce {wall:6.1f} s, {cpu:6.1f} s CPU ({cpu / states * 1e6:4.1f} us/state); "
            f"WLS fit {wls_s:4.2f} s, consistent fit {cons_s:4.2f} s, choice of the rows and law {choice_s:4.2f} s "
            f"({len(choice.candidates)} candidates), end to end {wall + cons_s + choice_s:6.1f} s; "
            f"identical to 1 process: {same}; {load()}"
        )
        wls_held = float(np.max(wls.rms["identified_holdout"]))
        held = cons.rms["identified_holdout"]
        cons_held = float(np.max(held)) if held is not None else float("nan")
        print(
            f"      base parameters {len(wls.base.names)}, worst held-out RMS: WLS {wls_held:.4f}, "
            f"consistent {cons_held:.4f} N m (noise {NOISE})"
        )
    if 1 not in times or 2 not in times:
        return
    (w1, c1), (w2, c2) = times[1], times[2]
    print(
        f"    1 -> 2 processes: wall speed-up {w1 / w2:.2f} (efficiency {w1 / (2 * w2):.0%}); "
        f"CPU 1 / CPU 2 = {c1 / c2:.0%} (the work the split adds); one hour on two free cores: "
        f"{3.6e6 * c2 / states / 2:.0f} s of reduction"
    )


def warm_up() -> None:
    """Loads the package and builds the PUMA's kernels in a fresh worker process."""
    puma = rd.load_robot("puma560")
    q = np.zeros((2, puma.dof))
    rd.inverse_dynamics(puma, q, q, q, smooth=True)


def timed_bag(task: BagTask) -> tuple[SampleStatistics, float, float, int]:
    """``bag_statistics`` with the task's wall and CPU (this thread) seconds and the worker's pid."""
    wall, cpu = time.perf_counter(), time.thread_time()
    stats = bag_statistics(task)
    return stats, time.perf_counter() - wall, time.thread_time() - cpu, os.getpid()


def bench_bags(count: int, seconds: float, dask: bool, dask_malloc: bool = False) -> None:
    puma = rd.load_robot("puma560")
    truth = perturbed_model(puma, seed=2)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bags"
        for k in range(count):
            rec = record(truth, seconds, 1000.0, seed=k, effort_noise=0.1)
            write_bag(folder / f"run{k:02d}", rec, puma.joint_names)
        paths = expand_bags([str(folder)])
        tasks = [BagTask(p, puma, ParameterSet(), PipelineSettings()) for p in paths]
        print(f"(b) {count} PUMA 560 bags of {seconds:.0f} s at 1 kHz ({count * seconds / 1e3:.1f} M states); {load()}")
        times: dict[str, tuple[float, float, float]] = {}
        reference: list[SampleStatistics] | None = None

        def timed(label: str, **kwargs: object) -> None:
            nonlocal reference
            start = time.perf_counter()
            out = map_tasks(timed_bag, tasks, **kwargs)  # type: ignore[arg-type]
            wall = time.perf_counter() - start
            stats = [s for s, _, _, _ in out]
            task_wall, task_cpu = sum(w for _, w, _, _ in out), sum(c for _, _, c, _ in out)
            per_worker: dict[int, float] = {}
            for _, _, c, pid in out:
                per_worker[pid] = per_worker.get(pid, 0.0) + c
            times[label] = (wall, task_cpu, max(per_worker.values()))
            if reference is None:
                reference = stats
            same = all(
                np.array_equal(a.train.ata_joint, b.train.ata_joint) for a, b in zip(reference, stats, strict=True)
            )
            print(
                f"    {label:<32} {wall:6.2f} s wall; tasks {task_cpu:5.2f} s CPU in {len(per_worker)} worker(s) "
                f"(busiest {max(per_worker.values()):5.2f} s), {task_wall:5.2f} s wall ({task_cpu / task_wall:.0%} "
                f"of a core); identical: {same}; {load()}"
            )

        def efficiency(one: str, two: str) -> str:
            (w1, c1, _), (w2, c2, busiest) = times[one], times[two]
            # wall times on a loaded machine measure the load; CPU seconds do not. T1 / (2 T2) with T the
            # busiest worker's CPU seconds is the efficiency on free cores, overheads outside the tasks apart
            return (
                f"wall {w1 / (2 * w2):.0%}; CPU (busiest worker) {c1 / (2 * busiest):.0%}; "
                f"task CPU 1 vs 2 workers {c1 / c2:.0%}"
            )

        timed("1 local process", jobs=1)
        timed("2 local processes", jobs=2)
        print(f"    local efficiency: {efficiency('1 local process', '2 local processes')}")
        if dask:
            import dask.config
            from distributed import Client, LocalCluster

            # Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which also fixes glibc's mmap
            # threshold at 128 kB: every freed temporary goes back to the system and is faulted in again
            # (2-3 times the CPU per task here). Unset unless asked to measure Dask's default.
            environ = {"MALLOC_TRIM_THRESHOLD_": 65536 if dask_malloc else None}
            tag = "default malloc" if dask_malloc else "no malloc trim"
            for workers in (1, 2):
                with (
                    dask.config.set({f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in environ.items()}),
                    LocalCluster(
                        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
                    ) as cluster,
                ):
                    with Client(cluster.scheduler_address) as client:
                        client.run(warm_up)  # imports and the engine's kernels: part of the start-up
                    timed(f"Dask {workers} worker(s), {tag}", scheduler=cluster.scheduler_address)
            print(f"    Dask efficiency: {efficiency(f'Dask 1 worker(s), {tag}', f'Dask 2 worker(s), {tag}')}")


EVALUATE = """
import sys, tempfile, time
from pathlib import Path
import numpy as np
import robot_dynamics as rd
from robot_dynamics.bag import evaluate as ev_mod
from robot_dynamics.bag import BagWriter

messages = int(sys.argv[1])
puma = rd.load_robot("puma560")
t = np.arange(messages) / 1000.0
w = 2 * np.pi * np.array([0.3, 0.5, 0.7, 1.1, 1.3, 1.7])
q = puma.named_poses["qn"] + 0.5 * np.sin(w * t[:, None])
qd = 0.5 * w * np.cos(w * t[:, None])
tau = rd.inverse_dynamics(puma, q, qd, -0.5 * w**2 * np.sin(w * t[:, None]), smooth=True)
stamps = 1_700_000_000_000_000_000 + np.round(t * 1e9).astype(np.int64)
with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "eval"
    with BagWriter(path) as writer:
        writer.write_joint_states("joint_states", stamps + 300_000, puma.joint_names, q, qd, tau, stamps=stamps)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        inputs = ev_mod.read_inputs(path, puma, trajectory=None)
        ev_mod.evaluate(puma, inputs.series, inputs.trajectories)
        best = min(best, time.perf_counter() - start)
print(messages / best)
"""


def evaluate_rate(messages: int, tree: Path) -> float:
    """``evaluate``'s messages per second (best of 3) with the package of source tree ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", EVALUATE, str(messages)], env=env, check=True, capture_output=True, text=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def bench_evaluate(messages: int, peer: str | None) -> None:
    here = Path(__file__).resolve().parents[1]
    trees = [here] + ([Path(peer)] if peer else [])
    rates = [0.0] * len(trees)
    for _ in range(3 if peer else 1):  # interleaved, best of each: load on a shared machine hits both alike
        for k, tree in enumerate(trees):
            rates[k] = max(rates[k], evaluate_rate(messages, tree))
    line = f"(c) evaluate (read, derivatives, model, feed-forward), {messages} messages: {rates[0] / 1e3:.0f} k msg/s"
    if peer:
        line += f"; {peer}: {rates[1] / 1e3:.0f} k msg/s (ratio {rates[0] / rates[1]:.2f})"
    print(line)


ERD = Path(
    str(
        importlib.metadata.distribution("example-robot-data").locate_file(
            "cmeel.prefix/share/example-robot-data/robots"
        )
    )
)
ARMS = {
    "ur5": (ERD / "ur_description/urdf/ur5_robot.urdf", "tool0", {}),
    "ur10": (ERD / "ur_description/urdf/ur10_robot.urdf", "tool0", {}),
    "panda": (
        ERD / "panda_description/urdf/panda.urdf",
        "panda_hand",
        {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0},
    ),
}


def sticking_truth(stock: RobotModel, seed: int) -> RobotModel:
    from dataclasses import replace

    truth = perturbed_model(stock, seed=seed)
    static = [(1.4 * j.friction.coulomb[0], 1.4 * j.friction.coulomb[1]) for j in truth.joints]
    return truth.with_changes(
        joints=tuple(
            replace(j, friction=replace(j.friction, static=s, stribeck_velocity=0.02))
            for j, s in zip(truth.joints, static, strict=True)
        )
    )


def bench_reversals() -> None:
    from robot_dynamics.experiment.parameters import base_parameter_summary
    from robot_dynamics.identification import nominal_parameters
    from robot_dynamics.identification.friction_laws import (
        FRICTION_LAWS,
        friction_parameter_set,
        reduction_parameter_set,
    )
    from robot_dynamics.identification.pipeline import robot_geometry
    from robot_dynamics.identification.synthetic import stick_slip_record

    before = (
        "before: every row, 0.1 s",
        PipelineSettings(window_s=0.1, reversal_velocity=0.0, stick_velocity=0.0),
        "viscous-coulomb",
        True,
    )
    plain = (
        "least squares, cut 0.05, 0.1 s",
        PipelineSettings(window_s=0.1, reversal_velocity=0.05, stick_velocity=0.0),
        "viscous-coulomb",
        None,
    )
    cases = [before, plain] + [(f"now: {law}", PipelineSettings(), law, True) for law in FRICTION_LAWS]
    cases += [
        (f"viscous-coulomb, stick {v:g}", PipelineSettings(stick_velocity=v), "viscous-coulomb", True)
        for v in (0.0, 0.002, 0.01)
    ]
    print("(d) friction at velocity reversals: sigma (N m) per joint, held-out RMS over joints (every row / moving),")
    print("    base parameters: p90 relative error (noise-free) and share within 3 sigma (noise)")
    for name, (urdf, tip, locks) in ARMS.items():
        if name == "ur10":
            continue
        stock = rd.load_robot(urdf, tip_link=tip, locked_joints=locks or None)
        truth, n = sticking_truth(stock, 3), stock.dof
        noise = np.array([0.3, 0.3, 0.2, 0.05, 0.05, 0.05, 0.05][:n])
        data = {
            "1 kHz": stick_slip_record(truth, 60.0, 1000.0, seed=1),
            "1 kHz noise": stick_slip_record(truth, 60.0, 1000.0, seed=1, effort_noise=noise, velocity_noise=5e-4),
            "30 Hz noise": stick_slip_record(truth, 120.0, 30.0, seed=2, effort_noise=noise, velocity_noise=5e-4),
        }
        geometry = robot_geometry(str(urdf), stock, None)
        superset = reduction_parameter_set()
        for label, rec in data.items():
            print(f"  {name}, {label}")
            for case, settings, law, consistent in cases:
                stats = [statistics_from_arrays(stock, superset, rec.t, rec.q, rec.qd, rec.tau, settings)]
                pset = friction_parameter_set(law)
                options = {"noise_std": np.ones(n)} if consistent is None else {}
                r = fit_statistics(
                    stock,
                    pset,
                    stats,
                    settings=settings,
                    reduced=superset,
                    friction=law,
                    consistent=bool(consistent),
                    geometry=geometry,
                    **options,
                )  # type: ignore[arg-type]
                truth_base = r.base.to_base(nominal_parameters(truth, pset))
                big = np.abs(truth_base) > 1e-3 * np.max(np.abs(truth_base))
                error = np.abs(r.fit.theta_base - truth_base)[big]
                rel, z = error / np.abs(truth_base[big]), error / np.maximum(r.fit.std_base[big], 1e-300)
                held, moving = (
                    float(np.sqrt(np.mean(r.rms[k] ** 2))) for k in ("identified_holdout", "identified_holdout_moving")
                )
                sigma = " ".join(f"{v:.3g}" for v in r.noise_std)
                quality = f"p90 {np.quantile(rel, 0.9):6.2%}  3sigma {np.mean(z < 3):5.0%}"
                if r.identified is not None:  # as the closed-loop report counts them (significant: >= 0.01 N m)
                    s = base_parameter_summary(stock, truth, r.identified)
                    quality += (
                        f"  within 5 %: {s['within_count']}/{s['significant']} (max {s['max_relative_error']:.1%})"
                    )
                print(f"    {case:34s} sigma {sigma:48s} held-out {held:.4f} / {moving:.4f}  {quality}")


def bench_plausible() -> None:
    from robot_dynamics.identification.friction_laws import friction_parameter_set, reduction_parameter_set
    from robot_dynamics.identification.pipeline import fit_statistics as fit
    from robot_dynamics.identification.pipeline import robot_geometry
    from robot_dynamics.identification.synthetic import stick_slip_record
    from robot_dynamics.models import bundled_robots

    robots: dict[str, tuple[RobotModel, list[np.ndarray | None] | None]] = {}
    for name in bundled_robots():
        robots[name] = (rd.load_robot(name), None)
    for name, (urdf, tip, locks) in ARMS.items():
        stock = rd.load_robot(urdf, tip_link=tip, locked_joints=locks or None)
        robots[name] = (stock, robot_geometry(str(urdf), stock, None))
    print("(e) plausible links (defaults, 30 s at 250 Hz of a perturbed truth with stiction and noise)")
    for name, (stock, geometry) in robots.items():
        rec = stick_slip_record(sticking_truth(stock, 5), 30.0, 250.0, seed=6, effort_noise=0.02)
        superset, settings = reduction_parameter_set(), PipelineSettings()
        stats = [statistics_from_arrays(stock, superset, rec.t, rec.q, rec.qd, rec.tau, settings)]
        try:
            r = fit(
                stock,
                friction_parameter_set("smooth-coulomb"),
                stats,
                settings=settings,
                reduced=superset,
                geometry=geometry,
                prior_weight=1e-6,
            )
        except ValueError as exc:
            print(f"  {name:24s} failed: {exc}")
            continue
        flags = [f"{row['joint']}: {f}" for row in r.plausibility for f in row["flags"]]
        sources = sorted({e.source for e in r.ellipsoids})
        print(f"  {name:24s} {stock.dof} joints, bounds from {', '.join(sources):24s} flags: {flags or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="one hour of 1 kHz states in (a)")
    parser.add_argument("--seconds", type=float, default=600.0, help="length of (a) in seconds (default 600)")
    parser.add_argument("--jobs", default="1,2", help="(a): process counts to run, comma-separated (default 1,2)")
    parser.add_argument("--bags", type=int, default=20)
    parser.add_argument("--bag-seconds", type=float, default=30.0)
    parser.add_argument("--messages", type=int, default=100_000, help="bag size of (c)")
    parser.add_argument("--skip-dask", action="store_true")
    parser.add_argument("--dask-malloc", action="store_true", help="(b): Dask workers with its MALLOC_TRIM_THRESHOLD_")
    parser.add_argument("--only", choices=("a", "b", "c", "d", "e"), help="run one part")
    parser.add_argument("--peer", metavar="TREE", help="another source tree to compare evaluate's throughput with")
    args = parser.parse_args()
    if args.only in (None, "a"):
        bench_arrays(3600.0 if args.full else args.seconds, tuple(int(j) for j in args.jobs.split(",")))
    if args.only in (None, "b"):
        bench_bags(args.bags, args.bag_seconds, not args.skip_dask, args.dask_malloc)
    if args.only in (None, "c"):
        bench_evaluate(args.messages, args.peer)
    if args.only in (None, "d"):
        bench_reversals()
    if args.only in (None, "e"):
        bench_plausible()


if __name__ == "__main__":
    main()
