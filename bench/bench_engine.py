"""Engine speed vs Pinocchio, python and native backends side by side.

  .venv/bin/python bench/bench_engine.py [--states 100000] [--generated]

Single calls (the public functions, input validation included): ``inverse_dynamics`` (rigid body +
motor inertia), ``inertia_matrix`` and ``forward_dynamics`` on the Python backend (traced programs as
Python floats) and the native backend (the same programs compiled to C), vs Pinocchio's Python binding
(``rnea``, ``crba``, ``aba``), for PUMA 560 (6 DoF, DH) and Panda (7 DoF, URDF). Batch: N states in one
call of ours vs Pinocchio called in a Python loop (throughput ratio = how many times faster we are).
Times are the minimum over repeats (the machine is shared). ``--generated`` adds the symbolic
package's generated C (``robot_dynamics.symbolic.get_backend(model).inverse_dynamics``).

The native libraries are built (or loaded from the cache, see docs/engine.md) before timing; the
first-use cost is printed.

Targets: single-call inverse dynamics <= 3x Pinocchio (aim 1x), D <= 3x ``crba``, batch
throughput >= 10x Pinocchio in a loop.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
import time
import timeit
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import robot_dynamics as rd
from robot_dynamics.dynamics import native
from robot_dynamics.symbolic import get_backend

ROBOTS = Path(
    str(
        importlib.metadata.distribution("example-robot-data").locate_file(
            "cmeel.prefix/share/example-robot-data/robots"
        )
    )
)


def best(function: Callable[[], object], number: int, repeat: int = 7) -> float:
    """Seconds per call: the minimum over ``repeat`` runs of ``number`` calls (many short runs: the
    minimum is the uncontended speed even on a busy machine)."""
    return min(timeit.repeat(function, number=number, repeat=repeat)) / number


def load(name: str):  # type: ignore[no-untyped-def]
    import pinocchio as pin

    if name == "puma560":
        model = rd.load_robot("puma560")
        pm = pin.Model()
        parent = 0
        for joint in model.joints:
            placement = pin.SE3(joint.origin[:3, :3].copy(), joint.origin[:3, 3].copy())
            along_z = np.array_equal(joint.axis, [0.0, 0.0, 1.0])  # Pinocchio's fastest joint type where possible
            kind = pin.JointModelRZ() if along_z else pin.JointModelRevoluteUnaligned(joint.axis.copy())
            jid = pm.addJoint(parent, kind, placement, joint.name)
            pm.appendBodyToJoint(
                jid, pin.Inertia(joint.link.mass, joint.link.com.copy(), joint.link.inertia.copy()), pin.SE3.Identity()
            )
            parent = jid
        pm.armature = np.array(model.arrays.reflected_motor_inertia)
        pm.gravity.linear = model.gravity_base.copy()
        return model, pm
    path = ROBOTS / "panda_description/urdf/panda.urdf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = rd.load_robot(str(path), tip_link="panda_hand")
    pm = pin.buildModelFromUrdf(str(path))
    pm = pin.buildReducedModel(
        pm, [pm.getJointId("panda_finger_joint1"), pm.getJointId("panda_finger_joint2")], pin.neutral(pm)
    )
    return model, pm


@dataclass
class Row:
    robot: str
    what: str
    python: float | None
    native: float | None
    pinocchio: float
    batch: bool


def measure(name: str, states: int, generated: bool) -> tuple[list[Row], str]:
    """The rows of one robot, and a note on the native library's first-use cost."""
    import pinocchio as pin

    model, pm = load(name)
    data = pm.createData()
    n = model.dof
    start = time.perf_counter()
    library = native.load(model)
    if library is None:
        raise SystemExit("the native backend is unavailable (no C compiler?)")
    loaded = time.perf_counter() - start
    meta = library.meta
    note = (
        f"{name}: native library ready in {loaded:.2f} s (built {meta['created']}: tracing "
        f"{meta['trace_seconds']:.2f} s + compiling {meta['compile_seconds']:.2f} s; a cached library loads in ms)"
    )
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-2, 2, (3, n))
    tau = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
    number = 2000
    rows: list[Row] = []

    def single(what: str, ours: Callable[[str], object], theirs: Callable[[], object], backends=("python", "native")):  # type: ignore[no-untyped-def]
        times = {b: best(lambda b=b: ours(b), number, 15) for b in backends}
        rows.append(Row(name, what, times.get("python"), times.get("native"), best(theirs, number, 15), False))

    single(
        "inverse dynamics",
        lambda b: rd.inverse_dynamics(model, q, qd, qdd, friction=False, backend=b),
        lambda: pin.rnea(pm, data, q, qd, qdd),
    )
    if generated:
        generated_id = get_backend(model).inverse_dynamics  # generate + compile once
        times = best(lambda: generated_id(q, qd, qdd), number)
        rows.append(
            Row(
                name,
                "  ID, backend=generated (native col.)",
                None,
                times,
                best(lambda: pin.rnea(pm, data, q, qd, qdd), number),
                False,
            )
        )
    single("inertia matrix D (crba)", lambda b: rd.inertia_matrix(model, q, backend=b), lambda: pin.crba(pm, data, q))
    single(
        "forward dynamics (aba)",
        lambda b: rd.forward_dynamics(model, q, qd, tau, friction=False, backend=b),
        lambda: pin.aba(pm, data, q, qd, tau),
    )

    Q, QD, QDD = rng.uniform(-2, 2, (3, states, n))
    TAU = rd.inverse_dynamics(model, Q, QD, QDD, friction=False)

    def loop(function: Callable[..., object], *arrays: np.ndarray) -> Callable[[], None]:
        def run() -> None:
            for row in zip(*arrays, strict=True):
                function(pm, data, *row)

        return run

    batches: list[tuple[str, Callable[[str], object], Callable[[], None]]] = [
        (
            "inverse dynamics",
            lambda b: rd.inverse_dynamics(model, Q, QD, QDD, friction=False, backend=b),
            loop(pin.rnea, Q, QD, QDD),
        ),
        ("inertia matrix D", lambda b: rd.inertia_matrix(model, Q, backend=b), loop(pin.crba, Q)),
        (
            "forward dynamics",
            lambda b: rd.forward_dynamics(model, Q, QD, TAU, friction=False, backend=b),
            loop(pin.aba, Q, QD, TAU),
        ),
    ]
    for what, ours, theirs in batches:
        python = best(lambda ours=ours: ours("python"), 1, 5)
        fast = best(lambda ours=ours: ours("native"), 1, 9)
        rows.append(Row(name, f"{what}, {states} states", python, fast, best(theirs, 1, 3), True))
    if generated:
        gen = best(lambda: get_backend(model).inverse_dynamics(Q, QD, QDD), 1, 5)
        rows.append(Row(name, f"  ID, {states} states, generated (native col.)", None, gen, rows[-3].pinocchio, True))
    return rows, note


def fmt(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds * 1e6:.2f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--states", type=int, default=100_000, help="batch size (default 100000)")
    parser.add_argument("--generated", action="store_true", help="also time the generated C backend")
    args = parser.parse_args()
    rows: list[Row] = []
    notes = []
    for name in ("puma560", "panda"):
        robot_rows, note = measure(name, args.states, args.generated)
        rows += robot_rows
        notes.append(note)

    print("| robot | computation | python | native | Pinocchio | python / Pinocchio | native / Pinocchio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        if r.batch:  # throughput: how many times faster than Pinocchio called in a loop
            ratios = [f"{r.pinocchio / t:.1f}× faster" if t else "" for t in (r.python, r.native)]
            theirs = f"{fmt(r.pinocchio)} (loop)"
        else:
            ratios = [f"{t / r.pinocchio:.2f}×" if t else "" for t in (r.python, r.native)]
            theirs = fmt(r.pinocchio)
        print(f"| {r.robot} | {r.what} | {fmt(r.python)} | {fmt(r.native)} | {theirs} | {ratios[0]} | {ratios[1]} |")
    print()
    print("single rows: time per call of the public function (ratio > 1: slower than Pinocchio);")
    print("batch rows: one call of ours for all states vs Pinocchio called once per state in a Python loop.")
    for note in notes:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
