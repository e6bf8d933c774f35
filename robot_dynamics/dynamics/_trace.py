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

Besides arithmetic, a program can call the elementwise functions of :data:`FUNCTIONS` (``sin``,
``cos``, ``sqrt``; ``tanh``, ``exp``, ``abs``, ``hypot`` and any a tape is given, e.g. the friction's
``interp``), compare (:meth:`Tape.compare`) and select (:meth:`Tape.select`: ``a if c else b``, both
computed, ``numpy.where`` on arrays) — the three operations (``call``, ``compare``, ``select``) the
friction laws are written over besides arithmetic (:mod:`robot_dynamics.friction.law`), so a
:class:`Tape` is the friction program's scalar operations (:mod:`._friction_trace`).

The same generated source is compiled twice: with ``math`` functions for one state (Python floats,
the fast single-call path) and with NumPy ufuncs for a batch (each variable is an ``(N,)`` array:
samples are vectorised, joints are unrolled). No SymPy: this is numeric specialisation, not algebra.
"""

from __future__ import annotations

import math
import operator
import re
import types
from collections.abc import Callable, Mapping, Sequence
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
    """Records the operations of one traced program (see the module docstring).

    ``functions``: elementwise functions the program may call besides :data:`FUNCTIONS`, by name:
    ``(one-float version, NumPy-array version)``.
    """

    def __init__(self, functions: Mapping[str, tuple[Callable[..., Any], Callable[..., Any]]] | None = None) -> None:
        # (target, expression template with {0}, {1} for the operands, operands)
        self.lines: list[tuple[str, str, tuple[str, ...]]] = []
        self.array_forms: dict[str, str] = {}  # target -> template of the NumPy variant, where it differs
        self._cse: dict[tuple[str, ...], str] = {}
        self._count = 0
        self.inputs: list[tuple[str, list[str]]] = []
        self.functions = {**FUNCTIONS, **(functions or {})}

    # -- variables ------------------------------------------------------------------------------
    def input(self, group: str, size: int) -> list[Scalar]:
        """``size`` runtime inputs unpacked from argument ``group`` (e.g. ``q``)."""
        names = [f"{group}_{i}" for i in range(size)]
        self.inputs.append((group, names))
        return [Sym(self, n) for n in names]

    def _emit(self, template: str, *operands: str, array_form: str | None = None) -> str:
        key = (template, *operands)
        found = self._cse.get(key)
        if found is not None:
            return found
        self._count += 1
        target = f"t{self._count}"
        self.lines.append((target, template, operands))
        if array_form is not None:
            self.array_forms[target] = array_form
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

    def call(self, function: str, *args: Scalar, literals: tuple[Any, ...] = ()) -> Scalar:
        """``function(*args, *literals)`` for a function of :attr:`functions` (folded when every
        argument is a constant). ``literals``: constant trailing arguments written into the program
        (e.g. interpolation tables)."""
        scalar_function = self.functions[function][0]
        if not any(isinstance(a, Sym) for a in args):
            return float(scalar_function(*args, *literals))
        if len(args) == 1:
            a = args[0]
            assert isinstance(a, Sym)
            if a.neg and function == "sin":  # sin(-x) = -sin(x), cos(-x) = cos(x), |-x| = |x|
                return -Sym(self, self._emit("sin({0})", a.name))
            if a.neg and function in ("cos", "abs"):
                return Sym(self, self._emit(f"{function}({{0}})", a.name))
        texts: list[str] = []
        operands: list[str] = []
        for a in args:
            if isinstance(a, Sym):
                texts.append(("-" if a.neg else "") + "{" + str(len(operands)) + "}")
                operands.append(a.name)
            else:
                texts.append(_const(a))
        texts += [repr(literal) for literal in literals]
        return Sym(self, self._emit(f"{function}({', '.join(texts)})", *operands))

    def compare(self, a: Scalar, op: str, b: Scalar) -> Sym | bool:
        """``a op b`` for ``op`` in ``> < >= <= == !=``: a boolean variable (a Python bool when both
        are constants). A negated variable is compared with the mirrored operator (exact)."""
        if op not in _MIRROR:
            raise ValueError(f"unknown comparison {op!r}")
        if not isinstance(a, Sym) and not isinstance(b, Sym):
            return bool(_COMPARE[op](a, b))
        if not isinstance(a, Sym):  # constant first: c op x  <=>  x mirror(op) c
            a, op, b = b, _MIRROR[op], a
        assert isinstance(a, Sym)
        if a.neg and (not isinstance(b, Sym) or b.neg):  # -x op c <=> x mirror(op) -c
            a, op, b = -a, _MIRROR[op], -b
        if isinstance(b, Sym):
            right = ("-" if b.neg else "") + "{1}"
            return Sym(self, self._emit(f"{'-' if a.neg else ''}{{0}} {op} {right}", a.name, b.name))
        return Sym(self, self._emit(f"{'-' if a.neg else ''}{{0}} {op} {_const(b)}", a.name))

    def select(self, condition: Sym | bool, a: Scalar, b: Scalar) -> Scalar:
        """``a if condition else b`` (both computed on arrays)."""
        if isinstance(condition, bool):
            return a if condition else b
        if isinstance(a, Sym) and isinstance(b, Sym) and (a.name, a.neg) == (b.name, b.neg):
            return a
        if not isinstance(a, Sym) and not isinstance(b, Sym) and _const(a) == _const(b):
            return a
        operands = [condition.name]
        texts = []
        for value in (a, b):
            if isinstance(value, Sym):
                texts.append(("-" if value.neg else "") + "{" + str(len(operands)) + "}")
                operands.append(value.name)
            else:
                texts.append(_const(value))
        # on arrays, numpy.where is several times slower than arithmetic (an element-by-element copy
        # that branches on the condition), so: c * a when b is 0 (exact for finite a), b + c (a - b)
        # for two constants (a within an ulp), numpy.where otherwise
        if texts[1] == "0.0":
            array_form = f"{{0}} * {texts[0]}"
        elif not isinstance(a, Sym) and not isinstance(b, Sym):
            array_form = f"{texts[1]} + {{0}} * {_const(a - b)}"
        else:
            array_form = f"where({{0}}, {texts[0]}, {texts[1]})"
        return Sym(self, self._emit(f"({texts[0]} if {{0}} else {texts[1]})", *operands, array_form=array_form))

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
            elif target in self.array_forms:
                array_text = self.array_forms[target].format(*(ref(o) for o in operands))
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
        scalar_fn = _function(scalar_source, name, {k: f[0] for k, f in self.functions.items()})
        array_fn = _function(array_source, name, {"where": np.where, **{k: f[1] for k, f in self.functions.items()}})
        operations = sum(1 for _, template, _ in live_lines if _ARITHMETIC.fullmatch(template))
        program = Program(
            inputs=tuple((group, tuple(names)) for group, names in self.inputs),
            lines=tuple(live_lines),
            outputs=tuple(("-" if o.neg else "") + o.name if isinstance(o, Sym) else _const(o) for o in outputs),
        )
        return Kernel(name, tuple(arguments), len(outputs), scalar_fn, array_fn, scalar_source, operations, program)


def _hypot_rows(x: Any, y: Any) -> Any:
    """``hypot`` of arrays as ``sqrt(x^2 + y^2)``: within an ulp or two of ``math.hypot`` for values far
    from overflow and underflow, and 3x faster than ``numpy.hypot`` (as the native backend does it)."""
    return np.sqrt(x * x + y * y)


FUNCTIONS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "sin": (math.sin, np.sin),
    "cos": (math.cos, np.cos),
    "sqrt": (math.sqrt, np.sqrt),
    "tanh": (math.tanh, np.tanh),
    "exp": (math.exp, np.exp),
    "abs": (abs, np.abs),
    "hypot": (math.hypot, _hypot_rows),
}
"""The elementwise functions every program may call: name -> (one-float version, array version)."""

_COMPARE: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt,
    "<": operator.lt,
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
}
_ARITHMETIC = re.compile(r"\S+ [-+*/] \S+")  # the templates of + - * / (operation counts)
_MIRROR = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "==": "==", "!=": "!="}


def _function(source: str, name: str, namespace: dict[str, Any]) -> Callable[..., tuple[Any, ...]]:
    code = compile(source, f"<robot_dynamics kernel {name}>", "exec")
    function_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    return types.FunctionType(function_code, namespace)


@dataclass(frozen=True)
class Program:
    """The live straight-line program of a kernel, for other code generators (:mod:`._c_codegen`).

    ``inputs``: ``(group, variable names)`` per argument; ``lines``: ``(target, template, operands)`` in
    order, one operation each (the template's ``{0}``, ``{1}`` are the operand names; the engine's
    algorithms use templates that are valid Python and C: ``+ - * /``, ``sin``, ``cos``, ``sqrt`` and
    float literals; programs with friction also compare (``{0} > 0.0``), select
    (``({1} if {0} else 0.0)``) and call ``tanh``, ``exp``, ``abs``, ``hypot`` and ``interp`` with
    literal tables, which the C generator maps to masks, lane selects and vector helpers);
    ``outputs``: one expression per output (a variable name, optionally negated, or a float literal).
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
