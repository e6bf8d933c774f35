"""Straight-line programs (named intermediates) and the passes that shrink them.

A :class:`Program` is what the thesis's symbolic customisation produces (Dhanaraj (1990) §2.4): a list
of assignments ``name = expression`` in terms of the inputs (``q``, ``qd``, ``qdd``; ``s_i = sin q_i``,
``c_i = cos q_i`` computed once) and earlier names, and the outputs. Passes:

* :func:`eliminate_dead_code` — drop assignments no output depends on;
* :func:`propagate_copies` — drop ``a = b`` copies;
* :func:`inline_single_use` — substitute an intermediate used once into its user when SymPy's
  automatic folding (constants multiplied out, like terms combined) makes the result cheaper;
* :func:`eliminate_common_subexpressions` — SymPy ``cse`` across the whole program, kept only if
  it lowers the operation count;
* :func:`factor_coefficients` — ``c*x + c*y -> c*(x + y)`` through a new intermediate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import sympy as sp

from robot_dynamics.symbolic.opcount import Ops, count, count_all

Assignment = tuple[sp.Symbol, sp.Expr]


@dataclass(frozen=True)
class Program:
    """``outputs = f(q, qd, qdd; parameters)`` as a sequence of assignments."""

    name: str
    q: tuple[sp.Symbol, ...]
    qd: tuple[sp.Symbol, ...]
    qdd: tuple[sp.Symbol, ...]
    parameters: tuple[sp.Symbol, ...]  # symbols kept symbolic (arguments of the generated code)
    trig: tuple[Assignment, ...]  # s_i = sin(q_i), c_i = cos(q_i)
    assignments: tuple[Assignment, ...]
    outputs: tuple[sp.Expr, ...]
    output_names: tuple[str, ...] = ()
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.q)

    def ops(self) -> Ops:
        """Operation count without the ``sin``/``cos`` of the joint angles (thesis convention)."""
        return count_all(e for _, e in self.assignments) + count_all(self.outputs)

    def ops_with_trig(self) -> Ops:
        return self.ops() + count_all(e for _, e in self.trig)

    def all_assignments(self) -> Iterator[Assignment]:
        yield from self.trig
        yield from self.assignments

    def evaluate(self, q: Sequence[float], qd: Sequence[float], qdd: Sequence[float]) -> list[float]:
        """Evaluate with Python floats (slow; for checks). Parameters must have been substituted."""
        import math

        env: dict[sp.Symbol, float] = {}
        for s, v in zip(self.q + self.qd + self.qdd, list(q) + list(qd) + list(qdd), strict=False):
            env[s] = float(v)
        for s, e in self.trig:
            arg = float(e.args[0].xreplace(env))
            env[s] = math.sin(arg) if isinstance(e, sp.sin) else math.cos(arg)
        for s, e in self.assignments:
            env[s] = float(e.xreplace(env))
        return [float(sp.sympify(o).xreplace(env)) for o in self.outputs]


def _uses(program: Program) -> Counter[sp.Symbol]:
    uses: Counter[sp.Symbol] = Counter()
    for _, e in program.assignments:
        for s in e.free_symbols:
            uses[s] += 1
    for o in program.outputs:
        for s in sp.sympify(o).free_symbols:
            uses[s] += 1
    return uses


def eliminate_dead_code(program: Program) -> Program:
    needed: set[sp.Symbol] = set()
    for o in program.outputs:
        needed |= sp.sympify(o).free_symbols
    kept: list[Assignment] = []
    for s, e in reversed(program.assignments):
        if s in needed:
            kept.append((s, e))
            needed |= e.free_symbols
    trig = tuple((s, e) for s, e in program.trig if s in needed)
    return replace(program, assignments=tuple(reversed(kept)), trig=trig)


def _flops(o: Ops) -> tuple[int, int]:
    return (o.mul + o.add + o.div, o.mul)


def propagate_copies(program: Program) -> Program:
    """Replace ``a = b`` and ``a = -b`` (left behind by CSE) by their right-hand side."""
    sub: dict[sp.Symbol, sp.Expr] = {}
    out: list[Assignment] = []
    for s, e in program.assignments:
        e = e.xreplace(sub)
        if e.is_Symbol or e.is_Number or (isinstance(e, sp.Mul) and len(e.args) == 2 and e.args[0] == -1):
            sub[s] = e
        else:
            out.append((s, e))
    outputs = tuple(sp.sympify(o).xreplace(sub) for o in program.outputs)
    return replace(program, assignments=tuple(out), outputs=outputs)


def inline_single_use(program: Program, *, max_rounds: int = 5) -> Program:
    """Substitute intermediates used exactly once unless that raises the count (ties inline: the
    merged expression may fold further, e.g. ``1.85*qdd1 + ... + 1.14*qdd1``)."""
    assignments = list(program.assignments)
    outputs = list(program.outputs)
    for _ in range(max_rounds):
        changed = False
        uses = _uses(replace(program, assignments=tuple(assignments), outputs=tuple(outputs)))
        index = {s: k for k, (s, _) in enumerate(assignments)}
        users: dict[sp.Symbol, int] = {}  # symbol -> index of its user (>= len(assignments): an output)
        for k, (_, e) in enumerate(assignments):
            for s in e.free_symbols:
                users[s] = k
        for k, o in enumerate(outputs):
            for s in sp.sympify(o).free_symbols:
                users[s] = len(assignments) + k
        removed: set[int] = set()
        for s, k in list(index.items()):
            if uses[s] != 1 or k in removed:
                continue
            u = users.get(s)
            if u is None or u in removed:
                continue
            definition = assignments[k][1]
            old_user = assignments[u][1] if u < len(assignments) else sp.sympify(outputs[u - len(assignments)])
            new_user = old_user.xreplace({s: definition})
            before = _flops(count(definition) + count(old_user))
            after = _flops(count(new_user))
            if after <= before:
                if u < len(assignments):
                    assignments[u] = (assignments[u][0], new_user)
                else:
                    outputs[u - len(assignments)] = new_user
                removed.add(k)
                changed = True
        assignments = [a for k, a in enumerate(assignments) if k not in removed]
        if not changed:
            break
    return replace(program, assignments=tuple(assignments), outputs=tuple(outputs))


def eliminate_common_subexpressions(program: Program, prefix: str = "t") -> Program:
    """SymPy ``cse`` over the whole program; returned only if it lowers the operation count."""
    taken = {s.name for s, _ in program.all_assignments()} | {s.name for s in program.parameters}
    taken |= {s.name for s in program.q + program.qd + program.qdd}

    def fresh() -> Iterator[sp.Symbol]:
        k = 0
        while True:
            name = f"{prefix}{k}"
            k += 1
            if name not in taken:
                yield sp.Symbol(name)

    exprs = [e for _, e in program.assignments] + [sp.sympify(o) for o in program.outputs]
    new_defs, reduced = sp.cse(exprs, symbols=fresh(), order="none", optimizations=None)
    # interleave: each cse definition goes right before its first user
    defs = list(new_defs)
    placed: set[sp.Symbol] = set()
    pending = dict(defs)
    out: list[Assignment] = []

    def place(sym: sp.Symbol) -> None:
        if sym in placed:
            return
        e = pending[sym]
        for dep in sorted(e.free_symbols & pending.keys(), key=lambda x: x.name):
            place(dep)
        out.append((sym, e))
        placed.add(sym)

    n_assign = len(program.assignments)
    for (s, _), e in zip(program.assignments, reduced[:n_assign], strict=False):
        for dep in sorted(e.free_symbols & pending.keys(), key=lambda x: x.name):
            place(dep)
        out.append((s, e))
    outputs = list(reduced[n_assign:])
    for o in outputs:
        for dep in sorted(o.free_symbols & pending.keys(), key=lambda x: x.name):
            place(dep)
    candidate = replace(program, assignments=tuple(out), outputs=tuple(outputs))
    if _flops(candidate.ops()) < _flops(program.ops()):
        return candidate
    return program


def factor_coefficients(program: Program, prefix: str = "u") -> Program:
    """In a sum, terms ``c*x`` with the same ``|c|`` (not 1) become ``c*(x ± ...)`` via a new name."""
    taken = {s.name for s, _ in program.all_assignments()} | {s.name for s in program.parameters}
    counter = 0

    def fresh() -> sp.Symbol:
        nonlocal counter
        while f"{prefix}{counter}" in taken:
            counter += 1
        sym = sp.Symbol(f"{prefix}{counter}")
        counter += 1
        return sym

    new: list[Assignment] = []

    def rewrite(e: sp.Expr) -> sp.Expr:
        if not isinstance(e, sp.Add):
            return e
        groups: dict[sp.Expr, list[sp.Expr]] = {}
        for t in e.args:
            c, rest = t.as_coeff_Mul()
            if c.is_Number and abs(c) != 1 and rest != 1:
                groups.setdefault(abs(c), []).append(t)
        result = e
        for c, terms in groups.items():
            if len(terms) < 2:
                continue
            inner = sp.Add(*[t / c for t in terms])
            sym = fresh()
            new.append((sym, inner))
            result = result - sp.Add(*terms) + c * sym
        return result

    out: list[Assignment] = []
    for s, e in program.assignments:
        r = rewrite(e)
        out.extend(new)
        new.clear()
        out.append((s, r))
    outputs = []
    for o in program.outputs:
        r = rewrite(sp.sympify(o))
        out.extend(new)
        new.clear()
        outputs.append(r)
    candidate = replace(program, assignments=tuple(out), outputs=tuple(outputs))
    if _flops(candidate.ops()) < _flops(program.ops()):
        return candidate
    return program


def optimize(program: Program, passes: Sequence[Callable[[Program], Program]] | None = None) -> Program:
    """The default pipeline: dead code, single-use inlining, CSE, inlining, coefficient factoring,
    copy propagation, dead code."""
    steps = passes or (
        eliminate_dead_code,
        inline_single_use,
        eliminate_common_subexpressions,
        inline_single_use,
        factor_coefficients,
        propagate_copies,
        eliminate_dead_code,
    )
    for step in steps:
        program = step(program)
    return program
