"""Motor-side friction referred to the joint (Robotics Toolbox / Corke & Armstrong-Hélouvry 1994).

With gear ratio ``G`` (signed), motor viscous ``B`` and motor Coulomb ``(Tc+, Tc-)`` (motor side):

    tau_j += G^2 Jm qdd + G^2 B qd + |G| Tc(sgn qd)

``G^2 Jm qdd`` (reflected rotor inertia) belongs to the engine (it is part of D, see
``RobotModel.motor_inertia_in_d``); this module computes the friction part
``G^2 B qd + |G| Tc(sgn qd)`` with ``Tc = Tc+`` for ``qd > 0`` and ``Tc-`` for ``qd < 0``, selected by
the sign of the *joint* velocity, 0 at rest. This is the compensating torque; Robotics Toolbox
``robot.friction(qd)`` returns its negative (the torque that opposes motion), e.g. RTB's unit test
``B = 3, G = 2, Tc = [2, -1], qd = [1, 2, 3, 4]`` gives ``[-16, -28, -40, -52]``, this gives
``[16, 28, 40, 52]``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.friction.smooth import as_float, asymmetric_level, direction
from robot_dynamics.model import FloatArray


def motor_friction(
    qd: ArrayLike,
    gear_ratio: ArrayLike,
    viscous: ArrayLike,
    tc_pos: ArrayLike,
    tc_neg: ArrayLike,
    *,
    smooth: bool = False,
    smoothing_velocity: ArrayLike = 0.01,
    kind: str = "tanh",
) -> FloatArray:
    """``G^2 B qd + |G| Tc(sgn qd)`` (joint side) from motor-side ``B`` and ``Tc``."""
    v = as_float(qd)
    g = as_float(gear_ratio)
    s = direction(v, smoothing_velocity, smooth=smooth, kind=kind)
    return g * g * as_float(viscous) * v + np.abs(g) * asymmetric_level(s, tc_pos, tc_neg)
