"""Constant-folding tracer: turns an algorithm written over scalars into straight-line Python.

The engine's algorithms (:mod:`.rnea`, :mod:`.crba`, :mod:`.forward`) are written once over
"scalars" — anything with ``+ - * /``. Run on :class:`Sym` values for the state (q, qd, qdd, ...)
and plain floats for the model's constants, they record a straight-line program in a :class:`Tape`:

* operations between constants are evaluated immediately (the model's numbers are folded in);
* ``x * 0``, ``x + 0``, ``x * 1`` and ``x * -1`` emit nothing; negation is carried as a flag and
  folded into the next ``+``/``-``/``*`` (so ``a + (-b)`` becomes ``a - b``);
* identical operations are emitted once (common subexpressions);
* the compiled program keeps only what the outputs need and reuses variable names once a value is
  dead (a linear-scan register allocation), so a batch run over arrays keeps few arrays alive.

The same generated source is compiled twice: with ``math`` functions for one state (Python floats,
the fast single-call path) and with NumPy ufuncs for a batch (each variable is an ``(N,)`` array:
samples are vectorised, joints are unrolled). No SymPy: this is numeric specialisation, not algebra.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

Scalar = Union["Sym", float]
"""A value in a traced algorithm: a runtime variable (:class:`Sym`) or a folded constant (float)."""


class Sym:
    """A runtime value in a traced program: variable ``name``, negated when ``neg`` is set."""

    __slots__ = ("name", "neg", "tape")

    def __init__(self, tape: Tape, name: str, neg: bool = False) -> None:
        self.tape = tape
        self.name = name
        self.neg = neg

    def __neg__(self) -> Sym:
        return Sym(self.tape, self.name, not self.neg)

    def __pos__(self) -> Sym:
        return self

    def __add__(self, other: Scalar) -> Scalar:
        return self.tape.add(self, other)

    def __radd__(self, other: Scalar) -> Scalar:
        return self.tape.add(self, other)

    def __sub__(self, other: Scalar) -> Scalar:
        return self.tape.add(self, -other)

    def __rsub__(self, other: Scalar) -> Scalar:
        return self.tape.add(-self, other)

    def __mul__(self, other: Scalar) -> Scalar:
        return self.tape.mul(self, other)

    def __rmul__(self, other: Scalar) -> Scalar:
        return self.tape.mul(self, other)

    def __truediv__(self, other: Scalar) -> Scalar:
        return self.tape.div(self, other)

    def __rtruediv__(self, other: Scalar) -> Scalar:
        return self.tape.div(other, self)

    def __repr__(self) -> str:
        return ("-" if self.neg else "") + self.name


def _const(value: float) -> str:
    return repr(float(value))


class Tape:
    """Records the operations of one traced program (see the module docstring)."""

    def __init__(self) -> None:
        # (target, expression template with {0}, {1} for the operands, operands)
        self.lines: list[tuple[str, str, tuple[str, ...]]] = []
        self._cse: dict[tuple[str, ...], str] = {}
        self._count = 0
        self.inputs: list[tuple[str, list[str]]] = []

    # -- variables ------------------------------------------------------------------------------
    def input(self, group: str, size: int) -> list[Scalar]:
        """``size`` runtime inputs unpacked from argument ``group`` (e.g. ``q``)."""
        names = [f"{group}_{i}" for i in range(size)]
        self.inputs.append((group, names))
        return [Sym(self, n) for n in names]

    def _emit(self, template: str, *operands: str) -> str:
        key = (template, *operands)
        found = self._cse.get(key)
        if found is not None:
            return found
        self._count += 1
        target = f"t{self._count}"
        self.lines.append((target, template, operands))
        self._cse[key] = target
        return target

    # -- arithmetic -----------------------------------------------------------------------------
    def add(self, a: Scalar, b: Scalar) -> Scalar:
        if not isinstance(a, Sym):
            a, b = b, a
        if not isinstance(a, Sym):
            return a + b  # both constants: fold
        if not isinstance(b, Sym):
            if b == 0.0:
                return a
            if a.neg:  # -x + c
                return Sym(self, self._emit(_const(b) + " - {0}", a.name))
            return Sym(self, self._emit("{0} + " + _const(b), a.name))
        if a.neg == b.neg:  # x + y  or  -(x + y)
            x, y = sorted((a.name, b.name))
            return Sym(self, self._emit("{0} + {1}", x, y), a.neg)
        positive, negative = (a, b) if b.neg else (b, a)  # x - y
        return Sym(self, self._emit("{0} - {1}", positive.name, negative.name))

    def mul(self, a: Scalar, b: Scalar) -> Scalar:
        if not isinstance(a, Sym):
            a, b = b, a
        if not isinstance(a, Sym):
            return a * b
        if not isinstance(b, Sym):
            if b == 0.0:
                return 0.0
            if b == 1.0:
                return a
            if b == -1.0:
                return -a
            return Sym(self, self._emit("{0} * " + _const(abs(b)), a.name), a.neg ^ (b < 0))
        x, y = sorted((a.name, b.name))
        return Sym(self, self._emit("{0} * {1}", x, y), a.neg ^ b.neg)

    def div(self, a: Scalar, b: Scalar) -> Scalar:
        if not isinstance(b, Sym):
            if b == 1.0:
                return a
            return self.mul(a, 1.0 / b) if isinstance(a, Sym) else a / b
        if not isinstance(a, Sym):
            if a == 0.0:
                return 0.0
            return Sym(self, self._emit(_const(abs(a)) + " / {0}", b.name), b.neg ^ (a < 0))
        return Sym(self, self._emit("{0} / {1}", a.name, b.name), a.neg ^ b.neg)

    def call(self, function: str, a: Scalar) -> Scalar:
        """``function(a)`` for ``sin``, ``cos`` or ``sqrt`` (folded when ``a`` is a constant)."""
        if not isinstance(a, Sym):
            return float(getattr(math, function)(a))
        if a.neg and function == "sin":  # sin(-x) = -sin(x), cos(-x) = cos(x)
            return -Sym(self, self._emit("sin({0})", a.name))
        if a.neg and function == "cos":
            return Sym(self, self._emit("cos({0})", a.name))
        return Sym(self, self._emit(f"{function}({'-' if a.neg else ''}{{0}})", a.name))

    # -- compilation ----------------------------------------------------------------------------
    def compile(self, name: str, outputs: Sequence[Scalar]) -> Kernel:
        """Compile the program that computes ``outputs`` (dead code dropped, variables reused)."""
        needed: set[str] = {o.name for o in outputs if isinstance(o, Sym)}
        live_lines = []
        for target, expression, operands in reversed(self.lines):
            if target in needed:
                live_lines.append((target, expression, operands))
                needed.update(operands)
        live_lines.reverse()

        # linear-scan register allocation: a variable's register is free after its last use
        last_use: dict[str, int] = {}
        for index, (_, _, operands) in enumerate(live_lines):
            for operand in operands:
                last_use[operand] = index
        for o in outputs:
            if isinstance(o, Sym):
                last_use[o.name] = len(live_lines)
        register: dict[str, str] = {}
        free: list[str] = []
        n_registers = 0
        scalar_body: list[str] = []
        array_body: list[str] = []
        input_names = {n for _, names in self.inputs for n in names}
        angle_row = {n: i for group, names in self.inputs if group == "q" for i, n in enumerate(names)}

        def ref(variable: str) -> str:
            return variable if variable in input_names else register[variable]

        for index, (target, template, operands) in enumerate(live_lines):
            text = template.format(*(ref(o) for o in operands))
            # the batch variant reads sin/cos of the joint angles from precomputed rows S, C
            if template in ("sin({0})", "cos({0})") and operands[0] in angle_row:
                array_text = f"{template[0].upper()}[{angle_row[operands[0]]}]"
            else:
                array_text = text
            for operand in set(operands):
                if operand not in input_names and last_use[operand] == index:
                    free.append(register[operand])
            if free:
                register[target] = free.pop()
            else:
                register[target] = f"r{n_registers}"
                n_registers += 1
            scalar_body.append(f"    {register[target]} = {text}")
            array_body.append(f"    {register[target]} = {array_text}")

        def out(o: Scalar) -> str:
            if isinstance(o, Sym):
                return ("-" if o.neg else "") + ref(o.name)
            return _const(o)

        arguments = [group for group, _ in self.inputs]
        head = []
        for group, names in self.inputs:
            head.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = {group}")
        tail = f"    return ({', '.join(out(o) for o in outputs)}{',' if len(outputs) == 1 else ''})"
        scalar_source = "\n".join([f"def {name}({', '.join(arguments)}):", *head, *scalar_body, tail])
        array_source = "\n".join([f"def {name}({', '.join([*arguments, 'S', 'C'])}):", *head, *array_body, tail])
        scalar_fn = _function(scalar_source, name, {"sin": math.sin, "cos": math.cos, "sqrt": math.sqrt})
        array_fn = _function(array_source, name, {"sin": np.sin, "cos": np.cos, "sqrt": np.sqrt})
        operations = sum(1 for _, template, _ in live_lines if "(" not in template)
        program = Program(
            inputs=tuple((group, tuple(names)) for group, names in self.inputs),
            lines=tuple(live_lines),
            outputs=tuple(("-" if o.neg else "") + o.name if isinstance(o, Sym) else _const(o) for o in outputs),
        )
        return Kernel(name, tuple(arguments), len(outputs), scalar_fn, array_fn, scalar_source, operations, program)


def _function(source: str, name: str, namespace: dict[str, Any]) -> Callable[..., tuple[Any, ...]]:
    code = compile(source, f"<robot_dynamics kernel {name}>", "exec")
    function_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    return types.FunctionType(function_code, namespace)


@dataclass(frozen=True)
class Program:
    """The live straight-line program of a kernel, for other code generators (:mod:`._native_codegen`).

    ``inputs``: ``(group, variable names)`` per argument; ``lines``: ``(target, template, operands)`` in
    order, one operation each (the template's ``{0}``, ``{1}`` are the operand names; every template
    is valid Python and C: ``+ - * /``, ``sin``, ``cos``, ``sqrt`` and float literals); ``outputs``:
    one expression per output (a variable name, optionally negated, or a float literal).
    """

    inputs: tuple[tuple[str, tuple[str, ...]], ...]
    lines: tuple[tuple[str, str, tuple[str, ...]], ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class Kernel:
    """A compiled straight-line program.

    ``scalar(*groups)`` takes one list of floats per argument group; ``array(*groups, S, C)`` takes
    ``(k, N)`` arrays (one row per variable) plus ``S, C = sin(q), cos(q)`` as ``(n, N)`` rows.
    """

    name: str
    arguments: tuple[str, ...]
    n_outputs: int
    scalar: Callable[..., tuple[float, ...]]
    array: Callable[..., tuple[Any, ...]]
    source: str
    operations: int  # additions, subtractions, multiplications and divisions in the program
    program: Program  # the live operations, for the native backend's C generator


def sin(x: Scalar) -> Scalar:
    return x.tape.call("sin", x) if isinstance(x, Sym) else math.sin(x)


def cos(x: Scalar) -> Scalar:
    return x.tape.call("cos", x) if isinstance(x, Sym) else math.cos(x)


def sqrt(x: Scalar) -> Scalar:
    return x.tape.call("sqrt", x) if isinstance(x, Sym) else math.sqrt(x)
