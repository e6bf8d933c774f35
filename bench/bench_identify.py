"""Identification at fleet scale: long recordings, many bags, parallel efficiency.

Usage: ``.venv/bin/python bench/bench_identify.py [--full] [--skip-dask]``

(a) **arrays**: ``--seconds`` (default 600; ``--full``: 3600 = one hour) of 1 kHz joint states of the
    7-DoF Franka Panda (example-robot-data URDF) with a perturbed "truth" and effort noise, cut into
    60 s segments, each synthesised and reduced by a worker (Savitzky–Golay derivatives, regressor,
    per-joint normal equations, stock-model errors), then the fit (weighted least squares and the
    physically consistent fit). Wall time with 1 and 2 local processes; the segment synthesis (the
    truth's inverse dynamics) is included, so the times are an upper bound.
(b) **bags**: a directory of ``--bags`` (20) PUMA 560 bags of ``--bag-seconds`` (30 s at 1 kHz):
    the per-bag reduction (``map_tasks``) with 1 vs 2 local processes and with a Dask
    ``LocalCluster`` of 1 vs 2 worker processes (cluster start-up not timed); parallel efficiency
    ``T1 / (2 T2)``; the results are checked identical.
(c) **evaluate**: ``robot-dynamics evaluate``'s pipeline on a 100k-message bag (messages per second,
    best of 3, in a fresh interpreter), which the identification work must leave unchanged;
    ``--peer TREE`` runs the same with another source tree (e.g. the main checkout) for the ratio
    (``bench/bench_bag.py`` has the stages).

BLAS is limited to one thread per process (``OPENBLAS_NUM_THREADS=1`` etc., set before NumPy loads)
so that "1 worker" means one core and the efficiency compares like with like.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import importlib.metadata  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.identification import ParameterSet  # noqa: E402
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

SEGMENT_S = 60.0
RATE = 1000.0
NOISE = 0.05  # N m


def panda() -> RobotModel:
    root = Path(
        str(importlib.metadata.distribution("example-robot-data").locate_file("cmeel.prefix/share/example-robot-data"))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fingers are held at zero
        return rd.load_robot(str(root / "robots/panda_description/urdf/panda.urdf"), tip_link="panda_hand")


def segment(task: tuple[RobotModel, RobotModel, int, float]) -> SampleStatistics:
    """One segment: synthesise (truth + noise) and reduce. Module level: runs in worker processes."""
    model, truth, seed, seconds = task
    rec = record(truth, seconds, RATE, seed=seed, effort_noise=NOISE)
    return statistics_from_arrays(model, ParameterSet(), rec.t, rec.q, rec.qd, rec.tau, name=f"segment {seed}")


def bench_arrays(seconds: float) -> None:
    model = panda()
    truth = perturbed_model(model, seed=1)
    count = max(1, round(seconds / SEGMENT_S))
    tasks = [(model, truth, k, seconds / count) for k in range(count)]
    states = round(seconds * RATE)
    length = seconds / count
    print(f"(a) {states / 1e6:.2f} M joint states of the 7-DoF Panda at 1 kHz, {count} segments of {length:.0f} s")
    results = {}
    for jobs in (1, 2):
        start = time.perf_counter()
        stats = map_tasks(segment, tasks, jobs=jobs)
        reduce_s = time.perf_counter() - start
        start = time.perf_counter()
        wls = fit_statistics(model, ParameterSet(), stats, consistent=False)
        wls_s = time.perf_counter() - start
        start = time.perf_counter()
        cons = fit_statistics(model, ParameterSet(), stats, consistent=True)
        cons_s = time.perf_counter() - start
        results[jobs] = reduce_s
        held = cons.rms["identified_holdout"]
        print(
            f"    {jobs} process(es): reduce {reduce_s:7.1f} s ({reduce_s / states * 1e6 * jobs:5.1f} us/state/core), "
            f"WLS fit {wls_s:5.2f} s, consistent fit {cons_s:5.2f} s, end to end {reduce_s + cons_s:6.1f} s"
        )
        wls_held = float(np.max(wls.rms["identified_holdout"]))
        cons_held = float(np.max(held)) if held is not None else float("nan")
        print(
            f"      base parameters {len(wls.base.names)}, worst held-out RMS: WLS {wls_held:.4f}, "
            f"consistent {cons_held:.4f} N m (noise {NOISE})"
        )
    speedup = results[1] / results[2]
    print(f"    speed-up 1 -> 2 processes: {speedup:.2f} (efficiency {speedup / 2:.0%})")


def warm_up() -> None:
    """Loads the package and builds the PUMA's kernels in a fresh worker process."""
    puma = rd.load_robot("puma560")
    q = np.zeros((2, puma.dof))
    rd.inverse_dynamics(puma, q, q, q, smooth=True)


def bench_bags(count: int, seconds: float, dask: bool) -> None:
    puma = rd.load_robot("puma560")
    truth = perturbed_model(puma, seed=2)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bags"
        for k in range(count):
            rec = record(truth, seconds, 1000.0, seed=k, effort_noise=0.1)
            write_bag(folder / f"run{k:02d}", rec, puma.joint_names)
        paths = expand_bags([str(folder)])
        tasks = [BagTask(p, puma, ParameterSet(), PipelineSettings()) for p in paths]
        print(f"(b) {count} PUMA 560 bags of {seconds:.0f} s at 1 kHz ({count * seconds / 1e3:.1f} M states)")
        times: dict[str, float] = {}
        reference: list[SampleStatistics] | None = None

        def timed(label: str, **kwargs: object) -> None:
            nonlocal reference
            start = time.perf_counter()
            stats = map_tasks(bag_statistics, tasks, **kwargs)  # type: ignore[arg-type]
            times[label] = time.perf_counter() - start
            if reference is None:
                reference = stats
            same = all(
                np.array_equal(a.train.ata_joint, b.train.ata_joint) for a, b in zip(reference, stats, strict=True)
            )
            print(f"    {label:<24} {times[label]:7.2f} s   identical to 1 process: {same}")

        timed("1 local process", jobs=1)
        timed("2 local processes", jobs=2)
        print(f"    local efficiency: {times['1 local process'] / (2 * times['2 local processes']):.0%}")
        if dask:
            from distributed import Client, LocalCluster

            for workers in (1, 2):
                with LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
                ) as cluster:
                    with Client(cluster.scheduler_address) as client:
                        client.run(warm_up)  # imports and the engine's kernels: part of the start-up
                    timed(f"LocalCluster {workers} worker(s)", scheduler=cluster.scheduler_address)
            one, two = times["LocalCluster 1 worker(s)"], times["LocalCluster 2 worker(s)"]
            print(f"    Dask efficiency: {one / (2 * two):.0%}")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="one hour of 1 kHz states in (a)")
    parser.add_argument("--seconds", type=float, default=600.0, help="length of (a) in seconds (default 600)")
    parser.add_argument("--bags", type=int, default=20)
    parser.add_argument("--bag-seconds", type=float, default=30.0)
    parser.add_argument("--messages", type=int, default=100_000, help="bag size of (c)")
    parser.add_argument("--skip-dask", action="store_true")
    parser.add_argument("--only", choices=("a", "b", "c"), help="run one part")
    parser.add_argument("--peer", metavar="TREE", help="another source tree to compare evaluate's throughput with")
    args = parser.parse_args()
    if args.only in (None, "a"):
        bench_arrays(3600.0 if args.full else args.seconds)
    if args.only in (None, "b"):
        bench_bags(args.bags, args.bag_seconds, not args.skip_dask)
    if args.only in (None, "c"):
        bench_evaluate(args.messages, args.peer)


if __name__ == "__main__":
    main()
