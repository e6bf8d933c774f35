"""The friction package's program replayed on the tracer: friction fused into the traced kernels.

The friction package describes a model's friction once, as the Python source of a small subset
(:func:`robot_dynamics.friction._scalar.scalar_source`: assignments, ``+=``, arithmetic, conditional
expressions, comparisons, integer subscripts, ``tanh``/``exp``/``hypot``/``abs``/``interp``). The
native backend translates that source to C (:mod:`._c_codegen`); :func:`trace_friction` runs it
statement by statement on traced values instead, so the friction becomes part of the Newton–Euler
program it is fed from (:meth:`._kernels.ModelKernels.inverse_friction`): one straight-line program
for ``tau + friction``, constants folded, only the reaction components the bearing formulas read
kept, run on Python floats for one state and chunk by chunk on NumPy rows for a batch (the same pass
as Newton–Euler, where the separate vectorised formulas made ten passes over the whole batch).

Every operation is the one the source names, in its order (a conditional expression becomes a select
of both computed branches; the tracer's folding of ``x * 1``, ``x + 0`` and negations is exact), so on
one state the traced program gives exactly the compiled source's floats (``test_friction_traced.py``).
On arrays ``tanh``, ``exp`` and ``interp`` are NumPy's, ``hypot(x, y)`` is ``sqrt(x^2 + y^2)`` and a
select is ``c * a`` (other branch 0), ``b + c (a - b)`` (two constants) or ``numpy.where``
(:meth:`._trace.Tape.select`): within ~1e-16 relative.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..friction._scalar import _interp
from ..model import FloatArray
from ._trace import Scalar, Sym, Tape


@functools.lru_cache(maxsize=256)
def _table(values: tuple[float, ...]) -> FloatArray:
    table = np.array(values)
    table.setflags(write=False)
    return table


def _interp_rows(x: FloatArray, xs: tuple[float, ...], es: tuple[float, ...]) -> FloatArray:
    """``numpy.interp`` with the program's literal tables converted once."""
    return np.interp(x, _table(xs), _table(es))


FUNCTIONS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {"interp": (_interp, _interp_rows)}
"""Functions of the friction source beyond the tracer's own (:data:`._trace.FUNCTIONS`)."""

_CALLS = ("tanh", "exp", "hypot", "abs")
_COMPARE = {ast.Gt: ">", ast.Lt: "<", ast.GtE: ">=", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!="}


class NotTraceable(ValueError):
    """Friction source outside the subset :func:`trace_friction` replays."""


def trace_friction(
    source: str,
    tape: Tape,
    qd: Sequence[Scalar],
    tau: Sequence[Scalar],
    force: Sequence[Scalar] | None,
    moment: Sequence[Scalar] | None,
) -> list[Scalar]:
    """The outputs of the friction source's ``def friction(qd, tau, force, moment): ... return [...]``
    on traced values (``force``, ``moment``: the reactions flattened to ``3 n``, or ``None``).
    ``tape`` must have been created with :data:`FUNCTIONS`."""
    tree = ast.parse(source)
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        raise NotTraceable("expected one function definition")
    function = tree.body[0]
    names = [a.arg for a in function.args.args]
    if names != ["qd", "tau", "force", "moment"]:
        raise NotTraceable(f"unexpected arguments {names}")
    replay = _Replay(tape, {"qd": qd, "tau": tau, "force": force, "moment": moment})
    for statement in function.body:
        result = replay.statement(statement)
        if result is not None:
            return result
    raise NotTraceable("no return statement")


class _Replay:
    def __init__(self, tape: Tape, arrays: dict[str, Sequence[Scalar] | None]) -> None:
        self.tape = tape
        self.arrays = arrays
        self.values: dict[str, Scalar] = {}

    def array(self, name: str) -> Sequence[Scalar]:
        found = self.arrays[name]
        if found is None:
            raise NotTraceable(f"the program reads {name!r}, which was not given")
        return found

    def statement(self, node: ast.stmt) -> list[Scalar] | None:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Name) and value.id in self.arrays:
                items = self.array(value.id)
                if len(items) != len(target.elts) or not all(isinstance(e, ast.Name) for e in target.elts):
                    raise NotTraceable(f"unpacking {ast.unparse(node)!r}")
                for element, item in zip(target.elts, items, strict=True):
                    self.values[element.id] = item  # type: ignore[attr-defined]
                return None
            if isinstance(target, ast.Name) and target.id not in self.arrays:
                self.values[target.id] = self.expr(value)
                return None
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add):
            if node.target.id not in self.values:
                raise NotTraceable(f"augmented assignment to unknown {node.target.id!r}")
            self.values[node.target.id] = self.values[node.target.id] + self.expr(node.value)
            return None
        if isinstance(node, ast.Return) and isinstance(node.value, ast.List):
            return [self.expr(e) for e in node.value.elts]
        raise NotTraceable(f"statement {ast.unparse(node)!r}")

    def expr(self, node: ast.expr) -> Scalar:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and type(node.value) is not bool:
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in self.values:
            return self.values[node.id]
        if isinstance(node, ast.BinOp):
            left, right = self.expr(node.left), self.expr(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.Div):
                if isinstance(left, Sym) and not isinstance(right, Sym) and right != 1.0:
                    raise NotTraceable("division by a constant (the tracer would multiply by its inverse)")
                return left / right
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.expr(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.IfExp):
            condition = self.condition(node.test)
            if isinstance(condition, bool):  # decided by constants: only that branch exists
                return self.expr(node.body if condition else node.orelse)
            return self.tape.select(condition, self.expr(node.body), self.expr(node.orelse))
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id in self.arrays
            and isinstance(node.slice, ast.Constant)
            and type(node.slice.value) is int
        ):
            return self.array(node.value.id)[node.slice.value]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            name = node.func.id
            if name in _CALLS:
                return self.tape.call(name, *(self.expr(a) for a in node.args))
            if name == "interp" and len(node.args) == 3:
                tables = tuple(_literal_tuple(a) for a in node.args[1:])
                return self.tape.call("interp", self.expr(node.args[0]), literals=tables)
        raise NotTraceable(f"expression {ast.unparse(node)!r}")

    def condition(self, node: ast.expr) -> Sym | bool:
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            left, right = self.expr(node.left), self.expr(node.comparators[0])
            return self.tape.compare(left, _COMPARE[type(node.ops[0])], right)
        raise NotTraceable(f"condition {ast.unparse(node)!r}")


def _literal_tuple(node: ast.expr) -> tuple[float, ...]:
    if not isinstance(node, ast.Tuple) or not all(
        isinstance(e, ast.Constant) and type(e.value) in (int, float) for e in node.elts
    ):
        raise NotTraceable("interp: the tables must be tuples of numbers")
    return tuple(float(e.value) for e in node.elts)  # type: ignore[attr-defined]
