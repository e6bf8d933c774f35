"""The friction package's program traced: friction fused into the traced kernels, and on its own.

The friction laws are written once over a generic scalar
(:func:`robot_dynamics.friction.law.friction_program`, like :mod:`.rnea`); the tracer's
:class:`._trace.Tape` provides the three operations it needs besides arithmetic (``call``,
``compare``, ``select``). :func:`trace_friction` runs it on traced values, so the friction becomes
part of the Newton–Euler program it is fed from (:meth:`._kernels.ModelKernels.inverse_friction`):
one straight-line program for ``tau + friction``, constants folded, only the reaction components the
bearing formulas read kept, run on Python floats for one state and chunk by chunk on NumPy rows for a
batch. :func:`friction_kernel` traces it alone (inputs ``qd``, ``tau`` and, with bearing friction,
``force``, ``moment``) for the native backend, which emits C for it like for any traced program
(:mod:`._c_codegen`) and calls it after its Newton–Euler function.

The tracer's folding (``x * 1``, ``x + 0``, negations) is exact, so on one state the traced program
gives exactly the floats of the program run on Python floats (``test_friction_traced.py``). On
arrays ``tanh``, ``exp`` and ``interp`` are NumPy's, ``hypot(x, y)`` is ``sqrt(x^2 + y^2)`` and a
select is ``c * a`` (other branch 0), ``b + c (a - b)`` (two constants) or ``numpy.where``
(:meth:`._trace.Tape.select`): within ~1e-16 relative.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..friction.law import friction_program, interp
from ..friction.parameters import FrictionParameters
from ..model import FloatArray
from ._kernel_key import FRICTION_VARIANTS
from ._trace import Kernel, Scalar, Tape

"""The friction variants: ``smooth=False``, and ``smooth=True`` with ``smooth_kind`` "tanh"/"linear"."""


@functools.lru_cache(maxsize=256)
def _table(values: tuple[float, ...]) -> FloatArray:
    table = np.array(values)
    table.setflags(write=False)
    return table


def _interp_rows(x: FloatArray, xs: tuple[float, ...], es: tuple[float, ...]) -> FloatArray:
    """``numpy.interp`` with the program's literal tables converted once."""
    return np.interp(x, _table(xs), _table(es))


FUNCTIONS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {"interp": (interp, _interp_rows)}
"""Functions of the friction program beyond the tracer's own (:data:`._trace.FUNCTIONS`)."""


def trace_friction(
    p: FrictionParameters,
    variant: str,
    tape: Tape,
    qd: Sequence[Scalar],
    tau: Sequence[Scalar],
    force: Sequence[Scalar] | None,
    moment: Sequence[Scalar] | None,
) -> list[Scalar]:
    """``tau + friction`` of ``variant`` (:data:`FRICTION_VARIANTS`) on traced values (``force``, ``moment``:
    the reactions flattened to ``3 n``, or ``None`` without bearing friction). ``tape`` must have been
    created with :data:`FUNCTIONS`."""
    if variant not in FRICTION_VARIANTS:
        raise ValueError(f"friction variant must be one of {FRICTION_VARIANTS}, got {variant!r}")
    smooth = variant != "exact"
    kind = variant if smooth else "tanh"
    return friction_program(p, qd, tau, force, moment, tape, smooth=smooth, kind=kind, include_tau=True)


_KERNELS: weakref.WeakKeyDictionary[FrictionParameters, dict[str, Kernel]] = weakref.WeakKeyDictionary()


def friction_kernel(p: FrictionParameters, variant: str) -> Kernel:
    """``tau + friction`` traced alone: arguments ``qd``, ``tau`` (``n`` each) and, when the model
    has bearing friction, ``force``, ``moment`` (the reactions flattened to ``3 n``). Built once per
    parameter set and variant; ``kernel.scalar(qd, tau[, force, moment])`` is the fastest single-state
    friction (about 0.6 µs for the PUMA 560, a tenth of the program run on floats)."""
    built = _KERNELS.setdefault(p, {})
    kernel = built.get(variant)
    if kernel is None:
        tape = Tape(FUNCTIONS)
        qd, tau = tape.input("qd", p.n), tape.input("tau", p.n)
        force = tape.input("force", 3 * p.n) if p.has_bearing else None
        moment = tape.input("moment", 3 * p.n) if p.has_bearing else None
        outputs = trace_friction(p, variant, tape, qd, tau, force, moment)
        kernel = built[variant] = tape.compile(f"friction_{variant}", outputs)
    return kernel
