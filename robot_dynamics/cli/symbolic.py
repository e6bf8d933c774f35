"""``robot-dynamics symbolic ROBOT --format md|latex|python|c --out DIR [--ops]`` and
``robot-dynamics schedule ROBOT --processors 13 [--thesis]``.

``symbolic`` writes the robot's equations: a Markdown/LaTeX report (closed-form Lagrange–Euler
D, h_ikm, h, c and ROBMAT's M, B, C, G for robots of up to ``--closed-form-max`` joints, plus the
customised Newton–Euler program), or generated Python/C inverse dynamics. ``--symbols`` keeps
parameter groups symbolic (``mass,length,com,inertia,gravity,motor``); ``--ops`` prints the
operation count. ``schedule`` prints the thesis's parallel schedule (T_1, T_p, speed-up,
efficiency) of the generated computation, and with ``--thesis`` the reproduction of the thesis's
own 43-subtasks-per-link graph (six links).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..models.robots import DEFAULT_ROBOT
from ._options import add_robot_options, load_robot_from_args

#: ``schedule``'s default robot: the thesis's PUMA 560 (modified DH, Dhanaraj 1990).
SCHEDULE_ROBOT = "puma560_modified"
FORMATS = ("md", "latex", "python", "c")
SUFFIX = {"md": "_dynamics.md", "latex": "_dynamics.tex", "python": "_inverse_dynamics.py", "c": "_inverse_dynamics.c"}


def register(subparsers: argparse._SubParsersAction) -> None:
    sym = subparsers.add_parser("symbolic", help="symbolic equations: Markdown/LaTeX report or generated Python/C")
    add_robot_options(sym, positional=True, default=DEFAULT_ROBOT, joint_map=False)
    sym.add_argument("--format", "-f", choices=FORMATS, default="md", help="output format (default md)")
    sym.add_argument("--out", "-o", default=".", help="output directory (default: current directory)")
    sym.add_argument("--ops", action="store_true", help="print the operation count (vs thesis Table 2.10)")
    sym.add_argument("--json", action="store_true", help="print the file written and the operation count as JSON")
    sym.add_argument(
        "--symbols",
        default="",
        help="comma-separated parameter groups kept symbolic: mass,length,com,inertia,gravity,motor",
    )
    sym.add_argument("--rename", default="", help="rename symbols, e.g. a1=L1,a2=L2 (ROBMAT's L[i])")
    sym.add_argument(
        "--method",
        choices=("regrouped", "origin", "thesis"),
        default="regrouped",
        help="Newton-Euler variant (default: regrouped = base parameters + moments about joint origins)",
    )
    sym.add_argument("--no-search", action="store_true", help="skip the frame/regrouping search (faster)")
    sym.add_argument("--no-motor", action="store_true", help="leave the reflected motor inertia out")
    sym.add_argument(
        "--closed-form-max", type=int, default=3, help="closed-form Lagrange-Euler up to this many joints (default 3)"
    )
    sym.set_defaults(func=run_symbolic)

    sch = subparsers.add_parser("schedule", help="parallel schedule of the generated inverse dynamics (thesis ch. 4)")
    add_robot_options(sch, positional=True, default=SCHEDULE_ROBOT, joint_map=False)
    sch.add_argument("--processors", "-p", type=int, default=13, help="largest number of processors (default 13)")
    sch.add_argument("--thesis", action="store_true", help="also reproduce the thesis's own six-link task graph")
    sch.add_argument("--no-motor", action="store_true", help="leave the reflected motor inertia out")
    sch.add_argument("--json", action="store_true", help="print the schedules as JSON")
    sch.set_defaults(func=run_schedule)


def _groups(text: str) -> tuple[str, ...]:
    return tuple(g.strip() for g in text.split(",") if g.strip())


def _renames(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in _groups(text):
        old, sep, new = item.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise ValueError(f"--rename: expected OLD=NEW items separated by commas, got {item!r}")
        out[old.strip()] = new.strip()
    return out


def run_symbolic(args: argparse.Namespace) -> int:
    from ..symbolic.codegen_c import c_source
    from ..symbolic.codegen_python import python_source
    from ..symbolic.lagrange import closed_form
    from ..symbolic.model import symbolic_robot
    from ..symbolic.newton_euler import inverse_dynamics_program
    from ..symbolic.opcount import TABLE_2_10, trig_calls
    from ..symbolic.report import latex_report, markdown_report

    model = load_robot_from_args(args)
    robot = symbolic_robot(
        model, _groups(args.symbols), names=_renames(args.rename), motor_inertia=False if args.no_motor else None
    )
    start = time.perf_counter()
    program = inverse_dynamics_program(robot, method=args.method, search=not args.no_search)
    seconds = time.perf_counter() - start
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{model.name}{SUFFIX[args.format]}"
    if args.format in ("md", "latex"):
        closed = closed_form(robot) if robot.n <= args.closed_form_max else None
        writer = markdown_report if args.format == "md" else latex_report
        target.write_text(writer(robot, closed, program), encoding="utf-8")
    elif args.format == "python":
        target.write_text(python_source(program, fingerprint=model.fingerprint(), doc=model.name), encoding="utf-8")
    else:
        target.write_text(c_source(program, fingerprint=model.fingerprint(), doc=model.name), encoding="utf-8")
    ops = program.ops()
    trig = trig_calls(program.all_assignments())
    key = {"puma560_modified": "PUMA 6 DOF", "puma560": "PUMA 6 DOF", "stanford": "Stanford 6 DOF"}.get(model.name)
    table = {source: counts for source, counts in TABLE_2_10[key].items() if counts} if key else {}
    if args.json:
        payload: dict[str, Any] = {
            "robot": model.name,
            "dof": model.dof,
            "format": args.format,
            "file": str(target),
            "seconds": seconds,
        }
        if args.ops:
            payload["ops"] = {"method": args.method, **ops.as_dict(), "trig": trig}
            payload["table_2_10"] = {source: {"mul": m, "add": a} for source, (m, a) in table.items()}
        print(json.dumps(payload))
        return 0
    print(f"wrote {target} ({model.name}, {model.dof} joints; inverse dynamics generated in {seconds:.1f} s)")
    if args.ops:
        print()
        print(f"| {model.name} inverse dynamics | multiplications | additions | sign changes | trig |")
        print("|---|---|---|---|---|")
        print(f"| generated ({args.method}) | {ops.mul} | {ops.add} | {ops.neg} | {trig} sin/cos (computed once) |")
        for source, (m, a) in table.items():
            print(f"| Table 2.10 {key}: {source} | {m} | {a} | | |")
    return 0


def run_schedule(args: argparse.Namespace) -> int:
    from ..symbolic.model import symbolic_robot
    from ..symbolic.newton_euler import inverse_dynamics_program
    from ..symbolic.schedule import (
        THESIS_LEVELS,
        format_schedule_table,
        program_task_graph,
        schedule_table,
        thesis_task_graph,
    )

    if args.processors < 1:
        raise ValueError(f"--processors must be at least 1, got {args.processors}")
    model = load_robot_from_args(args)
    robot = symbolic_robot(model, motor_inertia=False if args.no_motor else None)
    program = inverse_dynamics_program(robot)
    graph = program_task_graph(program)
    ps = range(1, args.processors + 1)
    tables: list[tuple[Any, Any, dict[int, int] | None]] = [(graph, schedule_table(graph, ps), None)]
    if args.thesis:
        for first in ("table-4.2", "appendix-c"):
            tg = thesis_task_graph(6, first_link=first)
            tables.append((tg, schedule_table(tg, ps), THESIS_LEVELS))
    if args.json:
        print(json.dumps({"robot": model.name, "graphs": [_schedule_json(g, s, ref) for g, s, ref in tables]}))
        return 0
    for k, (g, schedules, reference) in enumerate(tables):
        if k:
            print()
        print(format_schedule_table(g, schedules, reference))
    sys.stdout.flush()
    return 0


def _schedule_json(graph: Any, schedules: Any, reference: dict[int, int] | None) -> dict[str, Any]:
    rows = []
    for s in schedules:
        row = {
            "processors": s.processors,
            "levels": s.length,
            "flops": s.length * s.flops_per_task,
            "speedup": s.speedup,
            "efficiency": s.efficiency,
        }
        if reference:
            row["thesis_levels"] = reference.get(s.processors)
        rows.append(row)
    return {
        "name": graph.name,
        "tasks": graph.size,
        "flops_per_task": graph.flops_per_task,
        "layers": graph.depth,
        "schedules": rows,
    }
