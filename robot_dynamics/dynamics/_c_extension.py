"""The CPython extension module of the native backend: entry points around the emitted kernels.

:mod:`._c_codegen` turns the engine's traced programs into ``static`` C functions over vectors of
``RD_LANES`` doubles; :func:`library_source` wraps them into the translation unit of one extension
module per model (C API only: ``Python.h``, ``METH_FASTCALL``, the buffer protocol; no binding
library), with per entry point ``eK`` two functions::

    eK(a0, ..., ak)          # one state -> float64 array, or None (not a float64 vector of the right
                             # length, or not finite: the caller validates and reports)
    eK(a0, ..., ak, out)     # one state into the float64 buffer out -> status 0, 1 or 2
    eK_batch(a0, ..., ak, out[, threads])   # row-major (count, k) buffers (out None: a new array
                                            # is returned); loops in C, GIL released for big
                                            # batches, split over threads for very big ones

around the shared runtime of :mod:`._c_runtime`, so one call from Python costs the argument checks
and the arithmetic, nothing in between (the Python-level call layer that ``ctypes`` needed — a
per-thread buffer, copies, a foreign-function call — is gone). NumPy arrays, the common case, are
read and the result allocated through NumPy's C API (``PyArray_SimpleNew``; about 0.15 µs less per
call than the buffer protocol and ``numpy.empty``),
any other buffer through the buffer protocol, lists and tuples of floats item by item.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._c_codegen import prelude
from ._c_runtime import RUNTIME


@dataclass(frozen=True)
class Entry:
    """An exported kernel: the module functions ``<symbol>`` (one state) and ``<symbol>_batch``."""

    symbol: str
    function: str  # the static function it calls: function(in_0, ..., in_k, out)
    inputs: tuple[int, ...]  # sizes of the argument groups
    outputs: int
    shape: tuple[int, ...] = ()  # of the array a single call returns (default: (outputs,))


def entry_source(entry: Entry) -> str:
    """The static one-state and batch functions of ``entry`` and its two module functions."""
    sizes, n_out, symbol = entry.inputs, entry.outputs, entry.symbol
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    groups = range(len(sizes))
    single_args = ", ".join([*(f"a{i}" for i in groups), "o"])
    batch_args = ", ".join([*(f"v{i}" for i in groups), "o"])
    single = [
        f"static void rd_{symbol}_one(const double *in, double *out)",
        "{",
        f"    rd_v {', '.join(f'a{i}[{s}]' for i, s in zip(groups, sizes, strict=True))}, o[{n_out}];",
    ]
    for i, (size, offset) in enumerate(zip(sizes, offsets, strict=True)):
        single.append(f"    for (int j = 0; j < {size}; ++j) a{i}[j] = RD_SPLAT(in[{offset} + j]);")
    single += [
        f"    {entry.function}({single_args});",
        f"    for (int j = 0; j < {n_out}; ++j) out[j] = o[j][0];",
        "}",
    ]
    batch = [
        f"static void rd_{symbol}_loop(long count, const double *const *in, double *out)",
        "{",
        "    for (long k = 0; k < count; k += RD_LANES) {",
        "        const int lanes = count - k < RD_LANES ? (int)(count - k) : RD_LANES;",
        f"        rd_v {', '.join(f'v{i}[{s}]' for i, s in zip(groups, sizes, strict=True))}, o[{n_out}];",
        "        for (int l = 0; l < RD_LANES; ++l) {",
        "            const long row = k + (l < lanes ? l : lanes - 1); /* a short block repeats its last state */",
    ]
    for i, size in enumerate(sizes):
        batch.append(f"            for (int j = 0; j < {size}; ++j) v{i}[j][l] = in[{i}][row * {size} + j];")
    batch += [
        "        }",
        f"        {entry.function}({batch_args});",
        "        for (int l = 0; l < lanes; ++l)",
        f"            for (int j = 0; j < {n_out}; ++j) out[(k + l) * {n_out} + j] = o[j][l];",
        "    }",
        "}",
    ]
    k = len(sizes)
    size_list = ", ".join(str(s) for s in sizes)
    wrappers = [
        f"static const Py_ssize_t rd_{symbol}_sizes[] = {{{size_list}}};",
        f"static npy_intp rd_{symbol}_dims[] = {{{', '.join(str(d) for d in (entry.shape or (n_out,)))}}};",
        f"static PyObject *rd_py_{symbol}(PyObject *self, PyObject *const *args, Py_ssize_t nargs)",
        "{",
        f'    return rd_single("{symbol}", args, nargs, {k}, rd_{symbol}_sizes, {n_out}, {len(entry.shape or (1,))},',
        f"                     rd_{symbol}_dims, rd_{symbol}_one);",
        "}",
        f"static PyObject *rd_py_{symbol}_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)",
        "{",
        f'    return rd_batch("{symbol}_batch", args, nargs, {k}, rd_{symbol}_sizes, {n_out}, rd_{symbol}_loop);',
        "}",
    ]
    return "\n".join([*single, "", *batch, "", *wrappers])


def _module_source(module: str, entries: Sequence[Entry]) -> str:
    """The method table and ``PyInit_<module>`` (imports NumPy's C API)."""
    methods = []
    for e in entries:
        methods.append(f'    {{"{e.symbol}", (PyCFunction)(void (*)(void))rd_py_{e.symbol}, METH_FASTCALL, NULL}},')
        methods.append(
            f'    {{"{e.symbol}_batch", (PyCFunction)(void (*)(void))rd_py_{e.symbol}_batch, METH_FASTCALL, NULL}},'
        )
    return "\n".join(
        [
            "static PyMethodDef rd_methods[] = {",
            *methods,
            "    {NULL, NULL, 0, NULL},",
            "};",
            "",
            f'static struct PyModuleDef rd_module = {{PyModuleDef_HEAD_INIT, "{module}", NULL, -1, rd_methods}};',
            "",
            f"PyMODINIT_FUNC PyInit_{module}(void)",
            "{",
            "    import_array();",
            "    return PyModule_Create(&rd_module);",
            "}",
        ]
    )


def library_source(header: str, lanes: int, functions: Sequence[str], entries: Sequence[Entry], module: str) -> str:
    """The translation unit of the extension module ``module``: a comment, ``Python.h`` and NumPy's
    ``arrayobject.h`` (compile with :func:`include_dirs`), the prelude, the static functions, the entry
    points and the module definition."""
    comment = "/*\n" + "\n".join(f" * {line}".rstrip() for line in header.splitlines()) + "\n */\n"
    limits = (
        f"#define RD_MAX_IN {max(sum(e.inputs) for e in entries)}\n"
        f"#define RD_MAX_OUT {max(e.outputs for e in entries)}\n"
        f"#define RD_MAX_ARGS {max(len(e.inputs) for e in entries)}\n"
    )
    python = (
        "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n"
        "#include <pthread.h>\n#include <stdlib.h>\n#include <string.h>\n"
        "#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION\n#include <numpy/arrayobject.h>\n\n"
    )
    parts = [comment + python + prelude(lanes), limits + RUNTIME, *functions]
    parts += [entry_source(e) for e in entries]
    parts.append(_module_source(module, entries))
    return "\n\n".join(parts) + "\n"


def include_dirs() -> tuple[str, ...]:
    """Header directories the translation unit needs besides ``Python.h``'s: NumPy's."""
    import numpy as np

    return (np.get_include(),)
