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

from robot_dynamics.friction.smooth import as_float
from robot_dynamics.model import FloatArray


def stribeck_factor(qd: ArrayLike, eps: ArrayLike) -> FloatArray:
    """``exp(-|qd| / eps)``, with the limit 0 (for qd != 0) where ``eps == 0``."""
    v = np.abs(as_float(qd))
    e = as_float(eps)
    positive = e > 0.0
    safe = np.where(positive, e, 1.0)
    return np.where(positive, np.exp(-v / safe), 0.0)
