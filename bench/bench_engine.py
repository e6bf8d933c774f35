"""Engine speed vs Pinocchio: the python and native backends and the default path side by side.

  .venv/bin/python bench/bench_engine.py [--states 100000] [--generated] [--robots puma560,ur5,panda]

Single calls (the public functions, input validation included): ``inverse_dynamics`` (rigid body +
motor inertia), ``inertia_matrix`` and ``forward_dynamics`` on the Python backend (traced programs as
Python floats), the native backend (the same programs compiled to C, called through the model's
CPython extension module) and the **default path** (``backend=None`` on a model that was never
``prepare`` d: the ``auto`` backend, i.e. native when a C compiler exists), vs Pinocchio's Python
binding (``rnea``, ``crba``, ``aba``), for PUMA 560 (6 DoF, DH), UR5 (6 DoF, URDF) and Panda (7 DoF,
URDF). Batch: N states in one call of ours vs Pinocchio called in a Python loop (throughput ratio =
how many times faster we are); our batches run on ``rd.batch_threads()`` threads (the CPUs, here
2), and a second table gives them on one thread. Times are the minimum over repeats (the machine is
shared).
``--generated`` adds the symbolic package's generated C
(``robot_dynamics.symbolic.get_backend(model).inverse_dynamics``).

The default path's first call builds the model's library (or loads it from the cache, see
docs/engine.md); that first-use cost is printed, then the timed calls follow.

Targets (default path): inverse dynamics and D per call <= 1.0x Pinocchio, forward dynamics
<= 0.7x ``aba``, a 100k batch >= 20x Pinocchio called in a loop.
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


URDFS = {
    "panda": ("panda_description/urdf/panda.urdf", "panda_hand"),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", "tool0"),
}


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
    relative, tip = URDFS[name]
    path = ROBOTS / relative
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # panda: the fingers are held at zero
        model = rd.load_robot(str(path), tip_link=tip)
    pm = pin.buildModelFromUrdf(str(path))
    if name == "panda":
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
    default: float | None
    pinocchio: float
    batch: bool
    one_thread: float | None = None  # a batch's native time on one thread


def measure(name: str, states: int, generated: bool) -> tuple[list[Row], str]:
    """The rows of one robot, and a note on the native library's first-use cost."""
    import pinocchio as pin

    model, pm = load(name)
    data = pm.createData()
    n = model.dof
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-2, 2, (3, n))
    start = time.perf_counter()
    tau = rd.inverse_dynamics(model, q, qd, qdd, friction=False)  # the default path's first use
    first = time.perf_counter() - start
    library = native.load(model)
    if library is None:
        raise SystemExit("the native backend is unavailable (no C compiler?)")
    meta = library.meta
    note = (
        f"{name}: default backend {rd.default_backend()!r}, first call {first:.2f} s (library built "
        f"{meta['created']}: tracing {meta['trace_seconds']:.2f} s + compiling {meta['compile_seconds']:.2f} s; "
        "a cached library loads in ms)"
    )
    number = 2000
    rows: list[Row] = []

    def single(what: str, ours: Callable[[str | None], object], theirs: Callable[[], object]) -> None:
        times = {b: best(lambda b=b: ours(b), number, 15) for b in ("python", "native", None)}
        rows.append(Row(name, what, times["python"], times["native"], times[None], best(theirs, number, 15), False))

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
                None,
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

    batches: list[tuple[str, Callable[[str | None], object], Callable[[], None]]] = [
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
        python = best(lambda ours=ours: ours("python"), 1, 3)
        fast = best(lambda ours=ours: ours("native"), 1, 7)
        default = best(lambda ours=ours: ours(None), 1, 7)
        rd.set_batch_threads(1)
        try:
            one = best(lambda ours=ours: ours("native"), 1, 7)
        finally:
            rd.set_batch_threads(None)
        rows.append(Row(name, f"{what}, {states} states", python, fast, default, best(theirs, 1, 3), True, one))
    if generated:
        gen = best(lambda: get_backend(model).inverse_dynamics(Q, QD, QDD), 1, 5)
        rows.append(
            Row(name, f"  ID, {states} states, generated (native col.)", None, gen, None, rows[-3].pinocchio, True)
        )
    return rows, note


def fmt(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds * 1e6:.2f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--states", type=int, default=100_000, help="batch size (default 100000)")
    parser.add_argument("--generated", action="store_true", help="also time the generated C backend")
    parser.add_argument("--robots", default="puma560,ur5,panda", help="comma-separated: puma560, ur5, panda")
    args = parser.parse_args()
    rows: list[Row] = []
    notes = []
    for name in args.robots.split(","):
        robot_rows, note = measure(name, args.states, args.generated)
        rows += robot_rows
        notes.append(note)

    print(
        "| robot | computation | python | native | default | Pinocchio "
        "| python / Pinocchio | native / Pinocchio | default / Pinocchio |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        times = (r.python, r.native, r.default)
        if r.batch:  # throughput: how many times faster than Pinocchio called in a loop
            ratios = [f"{r.pinocchio / t:.1f}× faster" if t else "" for t in times]
            theirs = f"{fmt(r.pinocchio)} (loop)"
        else:
            ratios = [f"{t / r.pinocchio:.2f}×" if t else "" for t in times]
            theirs = fmt(r.pinocchio)
        print(f"| {r.robot} | {r.what} | {' | '.join(fmt(t) for t in times)} | {theirs} | {' | '.join(ratios)} |")
    print()
    print("single rows: time per call of the public function (ratio > 1: slower than Pinocchio); default:")
    print("backend=None on a model never prepared (backend 'auto');")
    print("batch rows: one call of ours for all states vs Pinocchio called once per state in a Python loop;")
    print(f"our batches run on rd.batch_threads() = {rd.batch_threads()} threads. The same batches on one thread:")
    print()
    print("| robot | computation | native, 1 thread | Pinocchio | native 1 thread vs Pinocchio |")
    print("|---|---|---:|---:|---:|")
    for r in rows:
        if r.batch and r.one_thread:
            print(
                f"| {r.robot} | {r.what} | {fmt(r.one_thread)} | {fmt(r.pinocchio)} (loop) | "
                f"{r.pinocchio / r.one_thread:.1f}× faster |"
            )
    print()
    for note in notes:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
