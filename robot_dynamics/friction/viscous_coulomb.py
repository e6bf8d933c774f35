"""Viscous and Coulomb friction (joint side), as compensating torques ``tau += b(qd)``.

* viscous ``b_v qd`` (Fu 3.3-58 ``+ b_i qd_i``; Schilling 6-3-3, first term);
* Coulomb, symmetric ``b_d sgn(qd)`` or asymmetric ``Tc+`` for ``qd > 0``, ``Tc-`` for ``qd < 0``
  (``Tc+ >= 0 >= Tc-``), 0 at rest (the static case is decided by the simulator, see
  :mod:`robot_dynamics.dynamics.stick_slip`); Schilling 6-3-3 second term.

The sign convention is the *compensating* torque: positive for ``qd > 0`` (the torque the actuator
adds to overcome friction). Robotics Toolbox ``Link.friction`` returns the negative of this.
"""

from __future__ import annotations

from numpy.typing import ArrayLike

from robot_dynamics.friction.smooth import as_float, asymmetric_level, direction
from robot_dynamics.model import FloatArray


def viscous(qd: ArrayLike, b_v: ArrayLike) -> FloatArray:
    """``b_v qd`` (Schilling 6-3-3 first term)."""
    return as_float(qd) * as_float(b_v)


def coulomb(
    qd: ArrayLike,
    tc_pos: ArrayLike,
    tc_neg: ArrayLike,
    *,
    smooth: bool = False,
    smoothing_velocity: ArrayLike = 0.01,
    kind: str = "tanh",
) -> FloatArray:
    """Asymmetric Coulomb ``Tc+`` (qd > 0) / ``Tc-`` (qd < 0); symmetric: ``tc_neg = -tc_pos``."""
    s = direction(qd, smoothing_velocity, smooth=smooth, kind=kind)
    return asymmetric_level(s, tc_pos, tc_neg)


def viscous_coulomb(
    qd: ArrayLike,
    b_v: ArrayLike,
    tc_pos: ArrayLike,
    tc_neg: ArrayLike,
    *,
    smooth: bool = False,
    smoothing_velocity: ArrayLike = 0.01,
    kind: str = "tanh",
) -> FloatArray:
    """``b_v qd + Tc(sgn qd)``."""
    return viscous(qd, b_v) + coulomb(
        qd, tc_pos, tc_neg, smooth=smooth, smoothing_velocity=smoothing_velocity, kind=kind
    )
