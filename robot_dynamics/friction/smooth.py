"""Direction functions: the exact ``sgn(qd)`` and its chatter-free (smooth) substitutes.

Every friction term that switches with the direction of motion is written ``level(s) `` with a
direction ``s(qd)`` in ``[-1, 1]``:

* exact (discontinuous) ``s = sgn(qd)``, 0 at rest (Schilling eq. 6-3-3, Dhanaraj (1990) Tables 3.1/3.2);
* ``"tanh"``: ``s = tanh(qd / v_s)``, smooth (C-infinity);
* ``"linear"``: the linear window ``s = clip(qd / v_s, -1, 1)``: exact outside ``|qd| >= v_s``,
  continuous (piecewise linear) inside.

Both smooth forms are odd, monotone, 0 at rest and tend to ``sgn(qd)`` pointwise as ``v_s -> 0``.
Asymmetric levels ``(L+, L-)`` with ``L+ >= 0 >= L-`` combine with ``s`` as
``L+ max(s, 0) - L- min(s, 0)`` (``= L+`` for ``s = 1``, ``L-`` for ``s = -1``, 0 at rest).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.model import SMOOTH_KINDS, FloatArray, RobotModel

SmoothKind = Literal["tanh", "linear"]


def as_float(value: ArrayLike) -> FloatArray:
    """``value`` as a float64 array (no copy if it already is one)."""
    return np.asarray(value, dtype=np.float64)


def check_smooth_kind(kind: str) -> None:
    if kind not in SMOOTH_KINDS:
        raise ValueError(f"smooth_kind must be one of {SMOOTH_KINDS}, got {kind!r}")


def model_kind(model: RobotModel, kind: str | None) -> str:
    """``kind``, or the model's own (``RobotModel.smooth_kind``) when ``None``."""
    return model.smooth_kind if kind is None else kind


def direction(qd: ArrayLike, smoothing_velocity: ArrayLike, *, smooth: bool, kind: str = "tanh") -> FloatArray:
    """``s(qd)``: ``sgn(qd)`` (``smooth=False``) or the smooth substitute of width ``smoothing_velocity``."""
    v = as_float(qd)
    if not smooth:
        return np.sign(v)
    width = as_float(smoothing_velocity)
    if kind == "tanh":
        return np.tanh(v / width)
    if kind == "linear":
        return np.clip(v / width, -1.0, 1.0)
    check_smooth_kind(kind)
    raise AssertionError("unreachable")


def asymmetric_level(s: FloatArray, positive: ArrayLike, negative: ArrayLike) -> FloatArray:
    """``L+ max(s, 0) - L- min(s, 0)``: the level ``L+`` (s = 1), ``L-`` (s = -1), 0 at s = 0."""
    return np.maximum(s, 0.0) * as_float(positive) - np.minimum(s, 0.0) * as_float(negative)
