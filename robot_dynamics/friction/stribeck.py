"""Stribeck / static-friction blend, Schilling (1990) eq. 6-3-3, with asymmetric levels.

    b(qd) = b_v qd + sgn(qd) [ b_d + (b_s - b_d) exp(-|qd| / eps) ]          # Schilling 6-3-3

``b_d`` is the dynamic (Coulomb) level, ``b_s`` the static (break-away) level, ``eps > 0`` the
Stribeck velocity. Asymmetric form: level ``Tc+ + (Ts+ - Tc+) e`` for ``qd > 0`` and
``Tc- + (Ts- - Tc-) e`` for ``qd < 0``, ``e = exp(-|qd|/eps)``; ``eps = 0`` means ``e = 0`` for
``qd != 0`` (pure Coulomb while moving, the static level only decides break-away). As
``qd -> 0+`` the torque tends to ``Ts+`` (Schilling: "approaches +-b_s"). 0 at rest: the static
level is used by the stick-slip simulator as the break-away limit.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.friction.smooth import as_float, asymmetric_level, direction
from robot_dynamics.model import FloatArray


def stribeck_factor(qd: ArrayLike, eps: ArrayLike) -> FloatArray:
    """``exp(-|qd| / eps)``, with the limit 0 (for qd != 0) where ``eps == 0``."""
    v = np.abs(as_float(qd))
    e = as_float(eps)
    positive = e > 0.0
    safe = np.where(positive, e, 1.0)
    return np.where(positive, np.exp(-v / safe), 0.0)


def stribeck(
    qd: ArrayLike,
    b_v: ArrayLike,
    tc_pos: ArrayLike,
    tc_neg: ArrayLike,
    ts_pos: ArrayLike,
    ts_neg: ArrayLike,
    eps: ArrayLike,
    *,
    smooth: bool = False,
    smoothing_velocity: ArrayLike = 0.01,
    kind: str = "tanh",
) -> FloatArray:
    """Schilling 6-3-3 with asymmetric dynamic ``(Tc+, Tc-)`` and static ``(Ts+, Tc-)`` levels."""
    v = as_float(qd)
    e = stribeck_factor(v, eps)
    cp, cn = as_float(tc_pos), as_float(tc_neg)
    pos = cp + (as_float(ts_pos) - cp) * e
    neg = cn + (as_float(ts_neg) - cn) * e
    s = direction(v, smoothing_velocity, smooth=smooth, kind=kind)
    return v * as_float(b_v) + asymmetric_level(s, pos, neg)


def schilling_6_3_3(qd: ArrayLike, b_v: float, b_d: float, b_s: float, eps: float) -> FloatArray:
    """The symmetric textbook form, verbatim: ``b_v qd + sgn(qd)[b_d + (b_s - b_d) exp(-|qd|/eps)]``."""
    v = as_float(qd)
    return b_v * v + np.sign(v) * (b_d + (b_s - b_d) * np.exp(-np.abs(v) / eps))
