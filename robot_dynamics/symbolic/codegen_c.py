"""Generated C for a :class:`~robot_dynamics.symbolic.program.Program` (no dynamic allocation).

Two entry points (``NAME`` defaults to ``rd_inverse_dynamics``)::

    void NAME(const double *q, const double *qd, const double *qdd, [const double *p,] double *tau);
    void NAME_batch(long count, const double *q, const double *qd, const double *qdd,
                    [const double *p,] double *tau);   /* row-major (count, n) arrays */

Every intermediate is a ``const double`` local; the only library calls are ``sin``/``cos`` of the
joint angles. :func:`compile_shared` builds a shared library with the system compiler (``$CC`` or
``cc``) and :func:`load` opens it with ``ctypes``. Loading a compiled library needs neither SymPy nor
the generator: :func:`c_source` imports them when it runs.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robot_dynamics import _native

if TYPE_CHECKING:
    import sympy as sp

    from robot_dynamics.symbolic.program import Program

DEFAULT_NAME = "rd_inverse_dynamics"


def c_source(program: Program, *, name: str = DEFAULT_NAME, fingerprint: str = "", doc: str = "") -> str:
    """The C translation unit for ``program``."""
    import sympy as sp  # SymPy takes ~0.5 s to import: only when generating, never to load a library

    from robot_dynamics.symbolic.codegen_python import GENERATED_HEADER, expr_code

    n = program.n
    used: set[sp.Symbol] = set()
    for _, e in program.all_assignments():
        used |= e.free_symbols
    for o in program.outputs:
        used |= sp.sympify(o).free_symbols
    has_p = bool(program.parameters)
    p_arg = "const double *p, " if has_p else ""
    ops = program.ops()
    lines = [
        "/*",
        f" * {doc or program.name}: tau = inverse dynamics (q, qd, qdd).",
        f" * {GENERATED_HEADER}",
        f" * model fingerprint: {fingerprint or '-'}",
        f" * operations (sin/cos of the joint angles as inputs): {ops.mul} multiplications, "
        f"{ops.add} additions, {ops.neg} negations, {ops.div} divisions",
    ]
    if has_p:
        lines.append(" * parameters p[]: " + ", ".join(s.name for s in program.parameters))
    lines += [
        " */",
        "#include <math.h>",
        "",
        f"#define {name.upper()}_N {n}",
        "",
        f"void {name}(const double *q, const double *qd, const double *qdd, {p_arg}double *tau)",
        "{",
    ]
    for k, (a, b, c) in enumerate(zip(program.q, program.qd, program.qdd, strict=False)):
        for sym, arr in ((a, "q"), (b, "qd"), (c, "qdd")):
            if sym in used:
                lines.append(f"    const double {sym.name} = {arr}[{k}];")
    for k, s in enumerate(program.parameters):
        if s in used:
            lines.append(f"    const double {s.name} = p[{k}];")
    for s, e in program.all_assignments():
        lines.append(f"    const double {s.name} = {expr_code(e, 'c')};")
    for k, o in enumerate(program.outputs):
        lines.append(f"    tau[{k}] = {expr_code(o, 'c')};")
    lines += [
        "}",
        "",
        f"void {name}_batch(long count, const double *q, const double *qd, const double *qdd, {p_arg}double *tau)",
        "{",
        "    for (long k = 0; k < count; ++k) {",
        f"        const long o = k * {n};",
        f"        {name}(q + o, qd + o, qdd + o, {'p, ' if has_p else ''}tau + o);",
        "    }",
        "}",
        "",
    ]
    return "\n".join(lines)


def compiler() -> str:
    """The C compiler command: ``$CC`` or ``cc``; a clear error if there is none."""
    return _native.compiler("or use language='python'")


def compile_shared(source: Path, library: Path, *, flags: tuple[str, ...] = ("-O2",)) -> Path:
    """Compile ``source`` (a .c file) into the shared library ``library`` (see :mod:`robot_dynamics._native`)."""
    return _native.compile_shared(source, library, flags=flags, hint="or use language='python'")


def load(library: Path, *, name: str = DEFAULT_NAME, parameters: bool = False) -> tuple[Any, Any]:
    """``(single, batch)`` ctypes functions of a compiled library: the two entry points of the module
    docstring, pointer arguments as plain integer addresses."""
    nptr = 5 if parameters else 4
    ptr = _native.POINTER
    functions = _native.bind(
        library, {name: (None, [ptr] * nptr), f"{name}_batch": (None, [ctypes.c_long] + [ptr] * nptr)}
    )
    return functions[name], functions[f"{name}_batch"]
