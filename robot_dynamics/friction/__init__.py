"""Friction and transmission models, combined by :func:`apply_friction`.

* :mod:`.law` every law written once over a generic scalar (:func:`.law.friction_program`): run on
  Python floats for one state (:func:`scalar_friction`), traced by the engine into its Newton–Euler
  program and compiled to Python and C;
* :mod:`.combine` the NumPy reference of the same laws, term by term: :func:`apply_friction`,
  :func:`friction_torques`, the Dhanaraj (1990) Table 3.5 breakdown and :func:`friction_total`;
* :mod:`.smooth` the exact and chatter-free direction functions;
* :mod:`.stribeck` the Stribeck factor of Schilling eq. 6-3-3;
* :mod:`.bearing` load-dependent joint friction (Dhanaraj (1990) Table 3.1);
* :mod:`.transmission` efficiency-curve transmission friction (Dhanaraj (1990) Table 3.2);
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
