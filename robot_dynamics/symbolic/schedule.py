"""Layered task graphs and the thesis's list scheduling on p processors (Dhanaraj (1990) ch. 4).

Two task graphs:

* :func:`program_task_graph` — the generated inverse dynamics (:class:`~.program.Program`) split
  into single floating-point operations (each ``+``, ``-`` or ``*`` one unit task; sums and
  products of several terms as balanced binary trees), layered "as soon as possible". The thesis
  uses tasks of 3 flops; with 1-flop tasks ``T_1`` is the flop count of the program.
* :func:`thesis_task_graph` — the thesis's own decomposition: 43 subtasks of 3 flops per link
  (Table 4.1 and its precedences), minus the special cases of Table 4.2 (first link, last link,
  prismatic joints), layered as in Table 4.3 / Fig. 4.9 (forward recursion as soon as possible,
  each link's backward recursion in three layers ``{26..31}, {32..40}, {41..43}`` starting with the
  third layer of the next link's, after the whole forward recursion).

:func:`list_schedule` is the heuristic of §4.3.3 / Fig. 4.10 ("simplified bin packing"): cycle by
cycle, take the pending tasks of the lowest unfinished layer in order; if processors are left,
pull tasks whose predecessors all ran in earlier cycles from the following layers, nearest layer
first; otherwise leave processors idle. ``S_p = T_1 / T_p``, ``E_p = S_p / p`` (eqs. 4.1, 4.2).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import sympy as sp

from robot_dynamics.symbolic.program import Program

Task = str


@dataclass
class TaskGraph:
    """Tasks (unit time each), their predecessors and a layering (list of layers, ordered tasks)."""

    name: str
    preds: dict[Task, tuple[Task, ...]]
    layers: list[list[Task]]
    flops_per_task: int = 1
    info: dict[str, str] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.preds)

    @property
    def depth(self) -> int:
        return len(self.layers)

    def check(self) -> None:
        """Every task in exactly one layer, after all its predecessors."""
        where: dict[Task, int] = {}
        for k, layer in enumerate(self.layers):
            for t in layer:
                if t in where:
                    raise ValueError(f"task {t} appears in layers {where[t] + 1} and {k + 1}")
                where[t] = k
        missing = set(self.preds) - set(where)
        if missing:
            raise ValueError(f"tasks not in any layer: {sorted(missing)[:10]}")
        for t, ps in self.preds.items():
            for p in ps:
                if where[p] >= where[t]:
                    raise ValueError(
                        f"task {t} (layer {where[t] + 1}) before its predecessor {p} (layer {where[p] + 1})"
                    )


def asap_layers(preds: dict[Task, tuple[Task, ...]], order: Sequence[Task]) -> list[list[Task]]:
    """Level of each task = 1 + the highest level of its predecessors; tasks in ``order`` in a layer."""
    level: dict[Task, int] = {}
    for t in order:
        level[t] = 1 + max((level[p] for p in preds[t]), default=-1)
    layers: list[list[Task]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for t in order:
        layers[level[t]].append(t)
    return layers


@dataclass(frozen=True)
class Schedule:
    processors: int
    cycles: tuple[tuple[Task, ...], ...]  # tasks run in each cycle (at most ``processors``)
    tasks: int
    flops_per_task: int = 1

    @property
    def length(self) -> int:
        """``T_p`` in cycles (levels)."""
        return len(self.cycles)

    @property
    def speedup(self) -> float:
        return self.tasks / self.length if self.length else 0.0

    @property
    def efficiency(self) -> float:
        return self.speedup / self.processors

    def table(self) -> list[list[Task]]:
        return [list(c) + [""] * (self.processors - len(c)) for c in self.cycles]


def list_schedule(graph: TaskGraph, processors: int) -> Schedule:
    """The thesis's layered list-scheduling heuristic (Fig. 4.10) on ``processors`` processors."""
    if processors < 1:
        raise ValueError(f"processors must be >= 1, got {processors}")
    pending = [list(layer) for layer in graph.layers]
    done: set[Task] = set()  # finished in an earlier cycle
    cycles: list[tuple[Task, ...]] = []
    remaining = graph.size
    while remaining:
        current = next(k for k, layer in enumerate(pending) if layer)
        chosen: list[Task] = []
        for k in range(current, len(pending)):
            if len(chosen) == processors:
                break
            keep: list[Task] = []
            for t in pending[k]:
                if len(chosen) < processors and (k == current or all(p in done for p in graph.preds[t])):
                    chosen.append(t)
                else:
                    keep.append(t)
            pending[k] = keep
        if not chosen:  # cannot happen for a valid layering
            raise RuntimeError("list scheduling stalled: invalid layering")
        cycles.append(tuple(chosen))
        done.update(chosen)
        remaining -= len(chosen)
    return Schedule(processors, tuple(cycles), graph.size, graph.flops_per_task)


def schedule_table(graph: TaskGraph, processors: Iterable[int]) -> list[Schedule]:
    return [list_schedule(graph, p) for p in processors]


def format_schedule_table(
    graph: TaskGraph, schedules: Sequence[Schedule], reference: dict[int, int] | None = None
) -> str:
    """Markdown: p, T_p (levels), flops, speed-up, efficiency (and the thesis's levels if given)."""
    head = "| p | T_p (levels) | T_p (flops) | speed-up S_p | efficiency E_p |"
    sep = "|---|---|---|---|---|"
    if reference:
        head += " thesis T_p |"
        sep += "---|"
    lines = [
        f"{graph.name}: {graph.size} tasks of {graph.flops_per_task} flop(s), "
        f"T_1 = {graph.size} levels ({graph.size * graph.flops_per_task} flops), "
        f"{graph.depth} layers (critical path {graph.depth * graph.flops_per_task} flops)",
        "",
        head,
        sep,
    ]
    for s in schedules:
        row = (
            f"| {s.processors} | {s.length} | {s.length * s.flops_per_task} | {s.speedup:.2f} | "
            f"{100 * s.efficiency:.1f}% |"
        )
        if reference:
            ref = reference.get(s.processors)
            row += f" {ref if ref is not None else '-'} |"
        lines.append(row)
    return "\n".join(lines)


# -------------------------------------------------------------------------------------------
# the generated program as a graph of single operations
# -------------------------------------------------------------------------------------------
def program_task_graph(program: Program) -> TaskGraph:
    """One task per ``+``/``-``/``*`` of ``program`` (sin/cos of the joint angles are inputs)."""
    preds: dict[Task, tuple[Task, ...]] = {}
    order: list[Task] = []
    env: dict[sp.Symbol, Task | None] = {}
    counter = [0]

    def node(kind: str, inputs: Sequence[Task | None]) -> Task:
        counter[0] += 1
        name = f"{kind}{counter[0]}"
        preds[name] = tuple(dict.fromkeys(x for x in inputs if x is not None))
        order.append(name)
        return name

    def reduce(kind: str, values: list[Task | None]) -> Task | None:
        # balanced binary tree: pairwise, level by level
        while len(values) > 1:
            nxt: list[Task | None] = []
            for k in range(0, len(values) - 1, 2):
                nxt.append(node(kind, [values[k], values[k + 1]]))
            if len(values) % 2:
                nxt.append(values[-1])
            values = nxt
        return values[0] if values else None

    def value(e: sp.Expr) -> Task | None:
        if e.is_Symbol:
            return env.get(e)
        if e.is_Number:
            return None
        if isinstance(e, sp.Add):
            return reduce("add", [value(t) for t in e.args])
        if isinstance(e, sp.Mul):
            c, rest = e.as_coeff_Mul()
            operands: list[Task | None] = [value(f) for f in sp.Mul.make_args(rest)]
            if c.is_number and abs(c) != 1:
                operands.append(None)
            return reduce("mul", operands)
        if isinstance(e, sp.Pow) and e.exp.is_Integer and int(e.exp) >= 2:
            b = value(e.base)
            return reduce("mul", [b] * int(e.exp))
        if isinstance(e, (sp.sin, sp.cos)):
            return None
        raise ValueError(f"cannot schedule {type(e).__name__}: {e}")

    for s, _ in program.trig:
        env[s] = None
    for s, e in program.assignments:
        env[s] = value(e)
    for o in program.outputs:
        value(sp.sympify(o))
    layers = asap_layers(preds, order)
    return TaskGraph(f"generated {program.notes.get('robot', program.name)}", preds, layers, 1)


# -------------------------------------------------------------------------------------------
# the thesis's 43 subtasks per link
# -------------------------------------------------------------------------------------------
def _table_4_1() -> dict[int, tuple[tuple[str, int], ...]]:
    """Predecessors of subtask T_k of link i (Table 4.1): ("", j) = T_j of the same link,
    ("p", j) = of the previous link, ("s", j) = of the succeeding link."""
    s = lambda *ks: tuple(("", k) for k in ks)  # noqa: E731
    p = lambda *ks: tuple(("p", k) for k in ks)  # noqa: E731
    nx = lambda *ks: tuple(("s", k) for k in ks)  # noqa: E731
    deps: dict[int, tuple[tuple[str, int], ...]] = {
        1: p(1, 2, 3),
        2: p(1, 2, 3),
        3: s(1, 2),
        4: p(6),
        5: p(6),
        6: s(3, 4, 5),
        7: s(1, 2, 3),
        8: s(1, 2, 3),
        9: s(8),
        10: s(6, 7),
        11: s(6, 7),
        18: s(15, 16, 17),
        19: s(15, 16, 17),
        26: s(23, 24, 25),
        27: s(6, 7),
        28: s(6, 7),
        29: s(6, 7),
        30: nx(32),
        31: nx(32),
        32: s(26, 30, 31),
        39: nx(41, 42, 43),
        40: nx(41, 42, 43),
        41: s(27, 28, 29, 33, 34, 35, 36, 37, 38, 39, 40),
        42: s(27, 28, 29, 33, 34, 35, 36, 37, 38, 39, 40),
        43: s(27, 28, 29, 33, 34, 35, 36, 37, 38, 39, 40),
    }
    for k in (12, 13, 14):
        deps[k] = p(9, 10, 11)
    for k in (15, 16, 17):
        deps[k] = p(18, 19) + s(12, 13, 14)
    for k in (20, 21, 22):
        deps[k] = s(9, 10, 11)
    for k in (23, 24, 25):
        deps[k] = s(18, 19, 20, 21, 22)
    for k in (33, 34, 35):
        deps[k] = s(30, 31)
    for k in (36, 37, 38):
        deps[k] = s(26)
    return deps


TABLE_4_2_FIRST = (1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 26, 27)
"""Table 4.2 as printed: subtasks of the first link that need not be executed (19)."""
APPENDIX_C_FIRST = (1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 27, 28)
"""The first-link subtasks actually absent from the schedules of Appendix C (Tables C.2-C.7): T19
(the second half of ``a_1 = R^T a''``, constant) instead of T26, and T27, T28 (``N_x``, ``N_y`` are zero
for the first link) instead of T26, T27 (20 tasks; ``T_1 = 230``)."""
TABLE_4_2_LAST = (30, 31, 32, 33, 34, 35, 39, 40)
TABLE_4_2_PRISMATIC = (1, 2, 4, 5, 7, 8, 9, 10, 11)
THESIS_LEVELS = {2: 116, 3: 78, 4: 58, 5: 47, 6: 39, 7: 34, 8: 31, 9: 30}
"""Levels T_p reported for the six-link manipulator (Tables C.1-C.8)."""

FirstLink = Literal["table-4.2", "appendix-c"]


def thesis_task_graph(
    n: int = 6,
    *,
    prismatic: Sequence[int] = (),
    first_link: FirstLink = "table-4.2",
    backward_layering: Literal["template", "asap"] = "template",
) -> TaskGraph:
    """The thesis's layered task graph of an n-link manipulator (tasks named ``"<link><kk>"``).

    ``first_link`` picks which special-case list of the first link is used (see
    :data:`TABLE_4_2_FIRST`, :data:`APPENDIX_C_FIRST`). Eliminated tasks are bypassed: a task that
    needed one depends on the eliminated task's own predecessors instead (``f_n = F_n`` for the last
    link, values known in advance for the first link).
    """
    if n < 2:
        raise ValueError("the thesis's task graph needs at least two links")
    deps = _table_4_1()
    first = set(TABLE_4_2_FIRST if first_link == "table-4.2" else APPENDIX_C_FIRST)
    removed: set[tuple[int, int]] = set()
    for k in first:
        removed.add((1, k))
    for k in TABLE_4_2_LAST:
        removed.add((n, k))
    for i in prismatic:
        for k in TABLE_4_2_PRISMATIC:
            removed.add((i, k))

    def raw_preds(i: int, k: int) -> list[tuple[int, int]]:
        out = []
        for where, j in deps[k]:
            link = i - 1 if where == "p" else i + 1 if where == "s" else i
            if 1 <= link <= n:
                out.append((link, j))
        return out

    def resolve(i: int, k: int, seen: set[tuple[int, int]]) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for pred in raw_preds(i, k):
            if pred in removed:
                if pred not in seen:
                    seen.add(pred)
                    out.extend(resolve(*pred, seen))
            else:
                out.append(pred)
        return out

    def name(i: int, k: int) -> Task:
        return f"{i}{k:02d}"

    preds: dict[Task, tuple[Task, ...]] = {}
    for i in range(1, n + 1):
        for k in range(1, 44):
            if (i, k) in removed:
                continue
            ps = resolve(i, k, set())
            if i == 1 and k in (20, 21, 22):
                ps = []  # Table 4.3 runs 120-122 with 110 in layer 1: lambda_1 needs only the input qd1
            preds[name(i, k)] = tuple(dict.fromkeys(name(*x) for x in ps))

    forward = [name(i, k) for i in range(1, n + 1) for k in range(1, 26) if name(i, k) in preds]
    backward_order = [name(i, k) for i in range(n, 0, -1) for k in range(26, 44) if name(i, k) in preds]
    if backward_layering == "template":
        # Fig. 4.7/4.9: link i's six forward layers start two layers after link i-1's; the first
        # link's few remaining tasks go as soon as possible (Table 4.3, layers 1-2)
        offset = dict.fromkeys((1, 2), 0) | dict.fromkeys((3, 4, 5), 1) | dict.fromkeys((6, 7, 8, 12, 13, 14), 2)
        offset |= dict.fromkeys((9, 10, 11, 15, 16, 17), 3) | dict.fromkeys(range(18, 23), 4)
        offset |= dict.fromkeys((23, 24, 25), 5)
        first_tasks = [t for t in forward if t.startswith("1") and len(t) == 3]
        level = {
            t: k for k, layer in enumerate(asap_layers({t: preds[t] for t in first_tasks}, first_tasks)) for t in layer
        }
        for t in forward:
            if t not in level:
                level[t] = offset[int(t[-2:])] + 2 * (int(t[:-2]) - 2)
        f_layers: list[list[Task]] = [[] for _ in range(max(level.values()) + 1)]
        for t in forward:
            f_layers[level[t]].append(t)
    else:
        f_layers = asap_layers({t: preds[t] for t in forward}, forward)
    if backward_layering == "asap":
        level = {t: k for k, layer in enumerate(f_layers) for t in layer}
        start = len(f_layers)
        for t in backward_order:
            level[t] = max([start] + [level[p] + 1 for p in preds[t]])
        layers: list[list[Task]] = [[] for _ in range(max(level.values()) + 1)]
        for t in forward + backward_order:
            layers[level[t]].append(t)
        layers = [sorted(layer, key=lambda x: (int(x[:-2]), x[-2:])) for layer in layers]
    else:
        start = len(f_layers)
        layers = [list(layer) for layer in f_layers]
        for i in range(n, 0, -1):
            base = start + 2 * (n - i)
            for step, ks in enumerate((range(26, 32), range(32, 41), range(41, 44))):
                while len(layers) <= base + step:
                    layers.append([])
                layers[base + step].extend(name(i, k) for k in ks if name(i, k) in preds)
        # within a layer the thesis lists lower links first (Table 4.3)
        layers = [sorted(layer, key=lambda x: (int(x[:-2]), x[-2:])) for layer in layers]
        layers = [layer for layer in layers if layer]
    graph = TaskGraph(
        f"thesis task graph, n = {n}, first link per {first_link}",
        preds,
        layers,
        3,
        {"first_link": first_link, "backward_layering": backward_layering},
    )
    graph.check()
    return graph


TABLE_4_3: tuple[tuple[str, ...], ...] = (
    (
        "110",
        "120",
        "121",
        "122",
        "201",
        "202",
    ),
    (
        "123",
        "124",
        "125",
        "203",
        "204",
        "205",
    ),
    (
        "206",
        "207",
        "208",
        "212",
        "213",
        "214",
        "301",
        "302",
    ),
    (
        "209",
        "210",
        "211",
        "215",
        "216",
        "217",
        "303",
        "304",
        "305",
    ),
    (
        "218",
        "219",
        "220",
        "221",
        "222",
        "306",
        "307",
        "308",
        "312",
        "313",
        "314",
        "401",
        "402",
    ),
    (
        "223",
        "224",
        "225",
        "309",
        "310",
        "311",
        "315",
        "316",
        "317",
        "403",
        "404",
        "405",
    ),
    (
        "318",
        "319",
        "320",
        "321",
        "322",
        "406",
        "407",
        "408",
        "412",
        "413",
        "414",
        "501",
        "502",
    ),
    (
        "323",
        "324",
        "325",
        "409",
        "410",
        "411",
        "415",
        "416",
        "417",
        "503",
        "504",
        "505",
    ),
    (
        "418",
        "419",
        "420",
        "421",
        "422",
        "506",
        "507",
        "508",
        "512",
        "513",
        "514",
        "601",
        "602",
    ),
    (
        "423",
        "424",
        "425",
        "509",
        "510",
        "511",
        "515",
        "516",
        "517",
        "603",
        "604",
        "605",
    ),
    (
        "518",
        "519",
        "520",
        "521",
        "522",
        "606",
        "607",
        "608",
        "612",
        "613",
        "614",
    ),
    (
        "523",
        "524",
        "525",
        "609",
        "610",
        "611",
        "615",
        "616",
        "617",
    ),
    (
        "618",
        "619",
        "620",
        "621",
        "622",
    ),
    (
        "623",
        "624",
        "625",
    ),
    (
        "626",
        "627",
        "628",
        "629",
        "630",
        "631",
    ),
    (
        "632",
        "633",
        "634",
        "635",
        "636",
        "637",
        "638",
        "639",
        "640",
    ),
    (
        "641",
        "642",
        "643",
        "526",
        "527",
        "528",
        "529",
        "530",
        "531",
    ),
    (
        "532",
        "533",
        "534",
        "535",
        "536",
        "537",
        "538",
        "539",
        "540",
    ),
    (
        "541",
        "542",
        "543",
        "426",
        "427",
        "428",
        "429",
        "430",
        "431",
    ),
    (
        "432",
        "433",
        "434",
        "435",
        "436",
        "437",
        "438",
        "439",
        "440",
    ),
    (
        "441",
        "442",
        "443",
        "326",
        "327",
        "328",
        "329",
        "330",
        "331",
    ),
    (
        "332",
        "333",
        "334",
        "335",
        "336",
        "337",
        "338",
        "339",
        "340",
    ),
    (
        "341",
        "342",
        "343",
        "226",
        "227",
        "228",
        "229",
        "230",
        "231",
    ),
    (
        "232",
        "233",
        "234",
        "235",
        "236",
        "237",
        "238",
        "239",
        "240",
    ),
    (
        "241",
        "242",
        "243",
        "126",
        "127",
        "128",
        "129",
        "130",
        "131",
    ),
    (
        "132",
        "133",
        "134",
        "135",
        "136",
        "137",
        "138",
        "139",
        "140",
    ),
    (
        "141",
        "142",
        "143",
    ),
)
"""Table 4.3 of the thesis (layers of the six-link task graph, as printed): 240 entries, which include
the tasks Table 4.2 removes from the last link, and T26, T27 but not T19 of the first link."""
