"""Friction and transmission models: one model per module, combined by :func:`apply_friction`.

* :mod:`.viscous_coulomb` viscous and (asymmetric) Coulomb friction;
* :mod:`.stribeck` Schilling eq. 6-3-3 static/dynamic blend;
* :mod:`.smooth` the exact and chatter-free direction functions;
* :mod:`.motor` motor-side friction referred to the joint (Robotics Toolbox convention);
* :mod:`.bearing` load-dependent joint friction (Dhanaraj (1990) Table 3.1);
* :mod:`.transmission` efficiency-curve transmission friction (Dhanaraj (1990) Table 3.2);
* :mod:`.combine` all terms, :func:`apply_friction`, :func:`friction_torques`, Table 3.5 breakdown,
  the fast paths :func:`friction_total` and :func:`scalar_friction` (compiled by :mod:`._scalar`);
* :mod:`.parameters` per-model validated, stacked parameters.

Stick-slip forward dynamics with these terms is the engine's :mod:`robot_dynamics.dynamics.stick_slip`.

All torques are *compensating* torques: ``tau = tau_frictionless + friction``.
"""

from robot_dynamics.friction.combine import (
    FrictionTerms,
    ThesisBreakdown,
    apply_friction,
    friction_torques,
    friction_total,
    needs_reactions,
    scalar_friction,
    thesis_breakdown,
)
from robot_dynamics.friction.parameters import friction_parameters
from robot_dynamics.friction.transmission import EfficiencyCurve

__all__ = [
    "EfficiencyCurve",
    "FrictionTerms",
    "ThesisBreakdown",
    "apply_friction",
    "friction_parameters",
    "friction_torques",
    "friction_total",
    "needs_reactions",
    "scalar_friction",
    "thesis_breakdown",
]
