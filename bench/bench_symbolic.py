"""Benchmark of the symbolic code generation. Prints side-by-side tables:

1. generation time of the PUMA 6-DoF inverse dynamics (target <= 60 s);
2. operation counts of the generated inverse dynamics next to the thesis's Table 2.10;
3. call time of the generated C and Python backends vs the numeric engine vs Pinocchio (ratios);
4. the parallel schedule (thesis ch. 4) of the generated PUMA computation and of the thesis's graph.

Run: ``.venv/bin/python bench/bench_symbolic.py [--quick]`` (uses a temporary code cache).
"""

from __future__ import annotations

import argparse
import atexit
import importlib.metadata
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import robot_dynamics as rd
from robot_dynamics.model import DHRow, DHTable, Inertial, RobotModel, from_dh

ROOT = Path(__file__).resolve().parents[1]
URDF = Path(
    str(
        importlib.metadata.distribution("example-robot-data").locate_file(
            "cmeel.prefix/share/example-robot-data/robots"
        )
    )
)


def per_call(fn: Callable[[], object], seconds: float = 0.5) -> float:
    """Median over 5 runs of the mean time per call, in microseconds."""
    fn()
    count = 1
    while True:
        start = time.perf_counter()
        for _ in range(count):
            fn()
        if time.perf_counter() - start > seconds / 5:
            break
        count *= 2
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(count):
            fn()
        runs.append((time.perf_counter() - start) / count * 1e6)
    return float(np.median(runs))


def pinocchio_model(model: RobotModel) -> object:
    """The same chain as a Pinocchio model: joint placements = origins, unaligned axes, armature =
    reflected motor inertia (when ``model.motor_inertia_in_d``)."""
    import pinocchio as pin

    pm = pin.Model()
    parent = 0
    for k, j in enumerate(model.joints):
        placement = pin.SE3(np.array(j.origin[:3, :3]), np.array(j.origin[:3, 3]))
        if k == 0:
            placement = pin.SE3(np.array(model.base[:3, :3]), np.array(model.base[:3, 3])) * placement
        axis = np.array(j.axis)
        joint = (
            pin.JointModelRevoluteUnaligned(axis) if j.kind == "revolute" else pin.JointModelPrismaticUnaligned(axis)
        )
        jid = pm.addJoint(parent, joint, placement, j.name)
        inertia = pin.Inertia(j.link.mass, np.array(j.link.com), np.array(j.link.inertia))
        pm.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
        parent = jid
    pm.gravity = pin.Motion(np.array(model.gravity), np.zeros(3))
    if model.motor_inertia_in_d:
        pm.armature = np.array([j.motor.reflected_inertia if j.motor else 0.0 for j in model.joints])
    return pm


def thesis_reduce_puma() -> RobotModel:
    """The parameter set of the thesis's REDUCE program (App. D.2), which produced 208/152: motor
    inertia folded into Izz, centres of mass reduced to one component, g = 9.8."""
    pi = math.pi
    rows = [
        (0, 0, 0),
        (-pi / 2, 0, 0.2435),
        (0, 0.4318, -0.0934),
        (pi / 2, -0.0203, 0.4331),
        (-pi / 2, 0, 0),
        (pi / 2, 0, 0),
    ]
    table = DHTable("modified", tuple(DHRow("revolute", a, al, d, 0.0) for al, a, d in rows))
    masses = [0, 17.4, 4.8, 0.82, 0.34, 0.09]
    coms = [(0, 0, 0), (-0.068, 0, 0), (0, -0.07, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0.032)]
    inertias = [
        (0, 0, 1.49),
        (0.1351, 0.6089, 5.3301),
        (0.066, 0.0134, 0.9395),
        (0.0021, 0.0021, 0.2013),
        (0.0003, 0.0003, 0.1794),
        (0.0002422, 0.0002422, 0.193),
    ]
    links = [Inertial.from_components(m, c, *i) for m, c, i in zip(masses, coms, inertias, strict=True)]
    return from_dh("puma560_thesis_reduce", table, links, gravity=(0, 0, -9.8))


def first_joints(model: RobotModel, k: int) -> RobotModel:
    return model.with_changes(joints=model.joints[:k], dh=None, name=f"{model.name}[:{k}]", named_poses={})


def time_case(label: str, model: RobotModel, pm: Any, seconds: float) -> None:
    """One row pair (single state, batch) of the call-time table."""
    import pinocchio as pin

    from robot_dynamics.symbolic.backend import get_backend

    pdata = pm.createData()  # type: ignore[attr-defined]
    c_backend = get_backend(model, "c")
    py_backend = get_backend(model, "python")
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-1, 1, (3, model.dof))
    ref = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
    pin_tau = pin.rnea(pm, pdata, q, qd, qdd)
    assert np.abs(c_backend.inverse_dynamics(q, qd, qdd) - ref).max() < 1e-12
    assert np.abs(pin_tau - ref).max() < 1e-9, np.abs(pin_tau - ref).max()
    t_pin = per_call(lambda: pin.rnea(pm, pdata, q, qd, qdd), seconds)
    t_c = per_call(lambda: c_backend.inverse_dynamics(q, qd, qdd), seconds)
    t_py = per_call(lambda: py_backend.inverse_dynamics(q, qd, qdd), seconds)
    t_eng = per_call(lambda: rd.inverse_dynamics(model, q, qd, qdd, friction=False), seconds)
    print(
        f"| {label} | single state | {t_pin:.2f} | {t_c:.2f} | {t_py:.2f} | {t_eng:.2f} | "
        f"{t_c / t_pin:.2f} | {t_py / t_pin:.2f} | {t_eng / t_pin:.2f} |"
    )
    nb = 1000
    qb, qdb, qddb = rng.uniform(-1, 1, (3, nb, model.dof))

    def pin_batch() -> None:
        for k in range(nb):
            pin.rnea(pm, pdata, qb[k], qdb[k], qddb[k])

    t_pin_b = per_call(pin_batch, seconds) / nb
    t_c_b = per_call(lambda: c_backend.inverse_dynamics(qb, qdb, qddb), seconds) / nb
    t_py_b = per_call(lambda: py_backend.inverse_dynamics(qb, qdb, qddb), seconds) / nb
    t_eng_b = per_call(lambda: rd.inverse_dynamics(model, qb, qdb, qddb, friction=False), seconds) / nb
    print(
        f"| {label} | batch of {nb} (per state) | {t_pin_b:.3f} (Python loop) | {t_c_b:.3f} | {t_py_b:.3f} | "
        f"{t_eng_b:.3f} | {t_c_b / t_pin_b:.2f} | {t_py_b / t_pin_b:.2f} | {t_eng_b / t_pin_b:.2f} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing runs")
    args = parser.parse_args()
    seconds = 0.2 if args.quick else 0.6
    if "ROBOT_DYNAMICS_CACHE" not in os.environ:  # a private code cache, removed at exit
        private = tempfile.mkdtemp(prefix="rd_bench_cache_")
        os.environ["ROBOT_DYNAMICS_CACHE"] = private
        atexit.register(shutil.rmtree, private, True)

    from robot_dynamics.symbolic.codegen_c import c_source, compile_shared
    from robot_dynamics.symbolic.model import symbolic_robot
    from robot_dynamics.symbolic.newton_euler import inverse_dynamics_program
    from robot_dynamics.symbolic.opcount import TABLE_2_10
    from robot_dynamics.symbolic.schedule import (
        THESIS_LEVELS,
        format_schedule_table,
        program_task_graph,
        schedule_table,
        thesis_task_graph,
    )

    # ---------------------------------------------------------------- 1. generation time
    print("## 1. Generation time (PUMA 6-DoF inverse dynamics; target <= 60 s)\n")
    print("| robot | symbolic model | NE generation + search + passes | C source + compile | total |")
    print("|---|---|---|---|---|")
    programs = {}
    for name in ("puma560_modified", "puma560", "stanford"):
        model = rd.load_robot(name)
        t0 = time.perf_counter()
        robot = symbolic_robot(model)
        t1 = time.perf_counter()
        program = inverse_dynamics_program(robot)
        t2 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "g.c"
            src.write_text(c_source(program))
            compile_shared(src, Path(tmp) / "g.so")
        t3 = time.perf_counter()
        programs[name] = program
        print(f"| {name} | {t1 - t0:.2f} s | {t2 - t1:.2f} s | {t3 - t2:.2f} s | {t3 - t0:.2f} s |")

    # ---------------------------------------------------------------- 2. operation counts
    print("\n## 2. Operation counts of the generated inverse dynamics vs thesis Table 2.10\n")
    print("Counted: every binary * (constants and squares included), every binary +/- ; sign changes")
    print("reported apart (free, as in the thesis's listings); sin/cos of the joint angles are inputs;")
    print("gravity numeric; qd, qdd inputs; reflected motor inertia included where the model has it.\n")
    print("| robot | program | mult | add | (sign changes) | thesis (Table 2.10, Method I) | best other column |")
    print("|---|---|---|---|---|---|---|")

    def row(label: str, program_name: str, model: RobotModel, key: str, **kw: object) -> None:
        program = inverse_dynamics_program(symbolic_robot(model, motor_inertia=kw.pop("motor", None)), **kw)  # type: ignore[arg-type]
        o = program.ops()
        ref = TABLE_2_10[key]
        thesis = ref["thesis"]
        others = [f"{v[0]}/{v[1]} ({k})" for k, v in ref.items() if k != "thesis" and v]
        best = min(others, key=lambda s: sum(int(x) for x in s.split(" ")[0].split("/"))) if others else "-"
        assert thesis is not None
        print(f"| {label} | {program_name} | {o.mul} | {o.add} | {o.neg} | {thesis[0]}/{thesis[1]} | {best} |")

    puma = rd.load_robot("puma560_modified")
    stanford = rd.load_robot("stanford")
    reduce = thesis_reduce_puma()
    row("PUMA 6 DOF (puma560_modified)", "regrouped + search (default)", puma, "PUMA 6 DOF")
    row("PUMA 6 DOF (puma560_modified)", "same, no motor inertia", puma, "PUMA 6 DOF", motor=False)
    row(
        "PUMA 6 DOF (puma560_modified)",
        "Table 2.4 customised (method thesis)",
        puma,
        "PUMA 6 DOF",
        method="thesis",
        search=False,
    )
    row("PUMA 6 DOF (thesis App. D.2 data)", "regrouped + search", reduce, "PUMA 6 DOF")
    row("PUMA 6 DOF (puma560, RTB data)", "regrouped + search", rd.load_robot("puma560"), "PUMA 6 DOF")
    row("Stanford 6 DOF (stanford)", "regrouped + search (default)", stanford, "Stanford 6 DOF")
    row("Stanford 6 DOF (stanford)", "same, no motor inertia", stanford, "Stanford 6 DOF", motor=False)
    row(
        "Stanford 6 DOF (stanford)",
        "Table 2.4 customised (method thesis)",
        stanford,
        "Stanford 6 DOF",
        method="thesis",
        search=False,
    )
    row("PUMA 3 DOF (puma560_modified[:3])", "regrouped + search", first_joints(puma, 3), "PUMA 3 DOF")
    row("Stanford 3 DOF (stanford[:3])", "regrouped + search", first_joints(stanford, 3), "Stanford 3 DOF")

    # ---------------------------------------------------------------- 3. call time
    print("\n## 3. Inverse dynamics call time (us per call; ratio to Pinocchio)\n")
    import pinocchio as pin

    cases: list[tuple[str, RobotModel, object]] = []
    puma_std = rd.load_robot("puma560")
    cases.append(("puma560 (DH)", puma_std, pinocchio_model(puma_std)))
    ur5_path = URDF / "ur_description/urdf/ur5_robot.urdf"
    if ur5_path.exists():
        ur5 = rd.load_robot(str(ur5_path), tip_link="tool0")
        pm = pin.buildModelFromUrdf(str(ur5_path))
        cases.append(("ur5 (URDF)", ur5, pm))
    print("| robot | call | Pinocchio rnea | generated C | generated Python | numeric engine |", end="")
    print(" C/Pin | Py/Pin | engine/Pin |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, model, pm in cases:
        time_case(label, model, pm, seconds)

    # ---------------------------------------------------------------- 4. schedules
    print("\n## 4. Parallel schedule (thesis ch. 4 heuristic)\n")
    graph = program_task_graph(programs["puma560_modified"])
    print(format_schedule_table(graph, schedule_table(graph, range(1, 14))))
    print()
    for first in ("table-4.2", "appendix-c"):
        tg = thesis_task_graph(6, first_link=first)
        print(format_schedule_table(tg, schedule_table(tg, range(1, 14)), THESIS_LEVELS))
        print()
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
