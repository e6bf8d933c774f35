"""Validation of joint states, torques and wrenches (shape and finiteness), shared by the engine.

Every public numeric function accepts one state ``(n,)`` or a batch ``(N, n)``. A single state is
returned as a list of Python floats (what the fast single-call programs take), a batch as a
C-contiguous ``(N, k)`` float array; a single state given next to a batch is broadcast to it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import StateError
from ..model import FloatArray, RobotModel

_INF = math.inf


def _as_float_array(name: str, value: object) -> FloatArray:
    if type(value) is np.ndarray and value.dtype == np.float64:
        return value
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise StateError(f"{name}: expected numbers, got {value!r:.80} ({exc})") from None
    return array


def _non_finite_message(name: str, array: FloatArray) -> str:
    bad = np.argwhere(~np.isfinite(array))
    where = ", ".join(str(tuple(int(i) for i in idx)) if array.ndim > 1 else str(int(idx[0])) for idx in bad[:5])
    return f"{name}: non-finite values (nan or inf) at index {where}"


def single_list(name: str, array: FloatArray) -> list[float]:
    """The entries of a validated-shape 1-D array as floats, after a finiteness check."""
    values: list[float] = array.tolist()
    total = sum(values)
    if total - total != 0.0 and not all(map(math.isfinite, values)):  # nan or inf somewhere
        raise StateError(_non_finite_message(name, array))
    return values


_FLOAT64 = np.dtype(np.float64)


def fast_single(size: int, *values: Any) -> list[list[float]] | None:
    """The lists of floats when every value is a finite float64 array of shape ``(size,)`` (the common
    single-state call, checked with as little work as possible); ``None`` otherwise, and the caller
    then runs the full validation (which also produces the error messages)."""
    out = []
    for value in values:
        if type(value) is not np.ndarray or value.dtype is not _FLOAT64 or value.shape != (size,):
            return None
        entries: list[float] = value.tolist()
        total = sum(entries)
        if total - total != 0.0:  # nan or inf (or an overflowing sum): let the full check decide
            return None
        out.append(entries)
    return out


def _shape_error(name: str, shape: tuple[int, ...], size: int, what: str) -> StateError:
    return StateError(f"{name}: expected shape ({size},) or (N, {size}) ({what}), got {shape}")


def states(model: RobotModel, **named: Any) -> tuple[bool, list[Any]]:
    """Validate joint-space arguments of ``model`` (each ``(n,)`` or ``(N, n)``).

    Returns ``(batch, values)``: lists of floats for one state, ``(N, n)`` arrays for a batch.
    """
    what = f"{model.dof} joints of robot {model.name!r}"
    return validate([(name, value, model.dof, what) for name, value in named.items()])


WRENCH = "a wrench [fx, fy, fz, nx, ny, nz]"


def validate(items: list[tuple[str, Any, int, str]]) -> tuple[bool, list[Any]]:
    """Validate ``(name, value, size, what)`` items that share one batch size (see :func:`states`)."""
    arrays = []
    batch_size = -1
    batch_name = ""
    for name, value, size, what in items:
        array = _as_float_array(name, value)
        shape = array.shape
        if array.ndim == 1 and shape[0] == size:
            pass
        elif array.ndim == 2 and shape[1] == size:
            if batch_size >= 0 and shape[0] != batch_size:
                raise StateError(
                    f"{name}: batch of {shape[0]} samples does not match {batch_name} with {batch_size} samples"
                )
            batch_size, batch_name = shape[0], name
        else:
            raise _shape_error(name, shape, size, what)
        arrays.append((name, array))
    if batch_size < 0:
        return False, [single_list(name, array) for name, array in arrays]
    out = []
    for name, array in arrays:
        if not np.isfinite(array).all():
            raise StateError(_non_finite_message(name, array))
        if array.ndim == 1:
            array = np.broadcast_to(array, (batch_size, array.shape[0]))
        out.append(np.ascontiguousarray(array))
    return True, out


def as_batch(batch: bool, values: list[Any]) -> list[FloatArray]:
    """Validated values as ``(N, k)`` arrays (a single state becomes ``(1, k)``)."""
    if batch:
        return values
    return [np.array(v, dtype=float).reshape(1, -1) for v in values]
