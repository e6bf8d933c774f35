"""Thesis ch. 4: the 43-subtasks-per-link task graph, its layering (Table 4.3) and list schedules
(Tables C.1-C.8), and the schedule of the generated computation."""

from __future__ import annotations

import pytest

import robot_dynamics as rd
from robot_dynamics.symbolic.model import symbolic_robot
from robot_dynamics.symbolic.newton_euler import inverse_dynamics_program
from robot_dynamics.symbolic.schedule import (
    TABLE_4_3,
    THESIS_LEVELS,
    Schedule,
    TaskGraph,
    format_schedule_table,
    list_schedule,
    program_task_graph,
    thesis_task_graph,
)


def valid(graph: TaskGraph, s: Schedule) -> None:
    when: dict[str, int] = {}
    for k, cycle in enumerate(s.cycles):
        assert 0 < len(cycle) <= s.processors
        for t in cycle:
            assert t not in when, f"{t} scheduled twice"
            when[t] = k
    assert set(when) == set(graph.preds)
    for t, ps in graph.preds.items():
        for p in ps:
            assert when[p] < when[t], f"{t} in cycle {when[t]} not after {p} ({when[p]})"
    assert s.length >= max(graph.depth, -(-graph.size // s.processors))


def test_thesis_graph_size_and_critical_path() -> None:
    g = thesis_task_graph(6)
    assert g.size == 231  # 6 * 43 - 19 (first link) - 8 (last link), Table 4.2
    assert g.depth == 27  # 4n + 3 layers
    assert max(len(layer) for layer in g.layers) == 13  # maximum concurrency
    assert thesis_task_graph(6, first_link="appendix-c").size == 230
    for n in (3, 4, 5, 8):
        assert thesis_task_graph(n).depth == 4 * n + 3


def test_layering_reproduces_table_4_3() -> None:
    g = thesis_task_graph(6, first_link="appendix-c")
    where = {t: k for k, layer in enumerate(g.layers) for t in layer}
    absent = []
    for k, row in enumerate(TABLE_4_3):
        for t in row:
            if t in where:
                assert where[t] == k, f"task {t}: layer {where[t] + 1}, Table 4.3 layer {k + 1}"
            else:
                absent.append(t)
    # Table 4.3 lists all 43 subtasks of link 6 (Table 4.2 removes eight) and T27, T28 of link 1
    assert sorted(absent) == ["127", "128", "630", "631", "632", "633", "634", "635", "639", "640"]


def test_schedules_reproduce_the_thesis_levels() -> None:
    g = thesis_task_graph(6)
    levels = {p: list_schedule(g, p).length for p in range(1, 14)}
    for p in range(1, 14):
        valid(g, list_schedule(g, p))
    assert levels[1] == 231
    for p in (2, 4, 5, 6, 7, 8, 9):
        assert levels[p] == THESIS_LEVELS[p], p
    assert levels[3] == 77  # thesis 78: its Table C.2 runs 526 and 527 twice and idles two slots
    s13 = list_schedule(g, 13)
    assert s13.length == 27 and round(s13.speedup, 2) == 8.56 and round(100 * s13.efficiency, 2) == 65.81


def test_generated_program_schedule() -> None:
    model = rd.load_robot("puma560_modified")
    program = inverse_dynamics_program(symbolic_robot(model), search=False)
    g = program_task_graph(program)
    g.check()
    ops = program.ops()
    assert g.size == ops.mul + ops.add  # one task per flop
    previous = g.size + 1
    for p in range(1, 14):
        s = list_schedule(g, p)
        valid(g, s)
        assert s.length <= previous
        previous = s.length
    text = format_schedule_table(g, [list_schedule(g, p) for p in (1, 2)])
    assert "| 1 | " + str(g.size) + " |" in text


def test_bad_processor_count() -> None:
    with pytest.raises(ValueError, match="processors must be >= 1, got 0"):
        list_schedule(thesis_task_graph(3), 0)
