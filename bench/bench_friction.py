"""Friction cost in inverse dynamics: time per call with and without friction, python and native.

Usage: ``.venv/bin/python bench/bench_friction.py [--batch 1000 100000] [--repeat 7]``

For each robot case, input (one state, batches) and backend: ``inverse_dynamics(...,
friction=False)`` (rigid body + motor inertia) vs ``inverse_dynamics(..., friction=True)`` (the
friction traced into the Newton–Euler program on the Python backend, one state or a batch; friction
translated to C and fused into the same call on the native backend), best of ``--repeat`` rounds timed alternately
(a busy spell on the shared machine hits both), and what friction adds.

Target: friction adds at most 20 % to inverse-dynamics time per call. Robots: ``puma560``
(motor viscous + Coulomb, Robotics Toolbox data), the same with smooth (tanh) compensation, and
``puma560_modified`` (journal bearings from the joint reactions + transmissions, Dhanaraj (1990)).
Velocities are random (every sign pattern), so no branch is predictable.
"""

from __future__ import annotations

import argparse
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from robot_dynamics import load_robot
from robot_dynamics.dynamics import inverse_dynamics, native


def paired_times(plain: Callable[[], object], other: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best seconds per call of both functions, timed alternately (``repeat`` rounds of a number of
    calls auto-ranged to ~0.2 s), so that a busy spell on the shared machine hits both alike."""
    a, b = timeit.Timer(plain), timeit.Timer(other)
    number, _ = a.autorange()
    best_a = best_b = float("inf")
    for _ in range(repeat):
        best_a = min(best_a, a.timeit(number) / number)
        best_b = min(best_b, b.timeit(number) / number)
    return best_a, best_b


def fmt(seconds: float) -> str:
    return f"{seconds * 1e6:.2f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[1000, 100_000])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("| robot | input | backend | ID without friction | ID with friction | friction adds |")
    print("|---|---|---|---:|---:|---:|")
    for name, smooth in (("puma560", False), ("puma560", True), ("puma560_modified", False)):
        model = load_robot(name)
        if native.load(model) is None:
            raise SystemExit("the native backend is unavailable (no C compiler?)")
        n = model.dof
        shapes = [("single", (n,))] + [(f"batch {b}", (b, n)) for b in args.batch]
        for label, shape in shapes:
            q, qd, qdd = (rng.uniform(-2, 2, shape) for _ in range(3))
            for backend in ("python", "native"):
                plain, with_friction = paired_times(
                    lambda: inverse_dynamics(model, q, qd, qdd, friction=False, backend=backend),  # noqa: B023
                    lambda: inverse_dynamics(model, q, qd, qdd, smooth=smooth, backend=backend),  # noqa: B023
                    args.repeat,
                )
                case = f"{name}{' smooth' if smooth else ''}"
                added = (with_friction - plain) / plain
                print(f"| {case} | {label} | {backend} | {fmt(plain)} | {fmt(with_friction)} | {added * 100:+.0f} % |")


if __name__ == "__main__":
    main()
