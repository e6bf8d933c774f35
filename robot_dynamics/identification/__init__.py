"""Dynamic parameter identification: regressor, base parameters, estimators (pure NumPy/SciPy).

The model is linear in its parameters, ``tau = Y(q, qd, qdd) theta`` (Khalil & Dombre, "Modeling,
Identification and Control of Robots", ch. 12; Atkeson, An & Hollerbach 1986). Workflow::

    pset = ParameterSet()                                   # what to identify (parameters.py)
    base = base_parameters(model, pset)                     # identifiable combinations (base.py)
    tau_meas_minus_known = tau - fixed_torques(model, q, qd, qdd, pset)
    ne = accumulate(model, q, qd, qdd, tau_meas_minus_known, pset)   # or normal_equations(Y, tau)
    ne = ne.with_weights(1 / sigma**2)                      # per-joint weights, any time later
    fit = fit_least_squares(ne, base, nominal=nominal_parameters(model, pset), prior_weight=0.0)
    fit = fit_consistent(ne, model, pset, base, ...)        # physically consistent (consistent.py)
    identified = fit.model(model, pset)                     # RobotModel (apply_parameters)

API (names are stable):

* ``ParameterSet(inertial, armature, viscous, coulomb="tanh"|"sign"|"none", coulomb_velocity,
  asymmetric, offset, links)``; ``.names(model)`` -> ``("m1", "mx1", ..., "Izz6", "Ia1", "Fv1", "Fc1",
  "Fa1", "Fo1", ...)``; ``.size(model)``; ``.identified_links(model)``.
* ``nominal_parameters(model, pset) -> (p,)``; ``apply_parameters(model, theta, pset, check=True) ->
  RobotModel`` (ModelError naming the joint if a link is not a rigid body or friction is negative;
  the offset ``Fo`` is never deployed); ``physical_problem(phi10) -> str | None``;
  ``link_parameters(Inertial) -> (10,)``, ``body_of(phi10) -> Inertial``.
* ``regressor(model, q, qd, qdd, pset) -> (N, n, p)`` (or ``(n, p)`` for one state);
  ``fixed_torques(model, q, qd, qdd, pset) -> (N, n)``: the model's torque outside ``Y theta``
  (subtract from measured torque), with the friction law of ``friction_law(model, pset) -> (smooth,
  reference model)`` (exact sign for ``coulomb="sign"``, else the smooth law the nodes use);
  ``predict(model, q, qd, qdd, theta, pset) -> (N, n)`` = ``Y theta`` without holding ``Y``
  (chunked); ``with_coulomb_velocity(model, v)``.
* ``NormalEquations``: per-joint, unweighted sums ``ata_joint (n, p, p)``, ``atb_joint (n, p)``,
  ``btb_joint (n,)``, ``count`` (states), ``weights (n,)``; weighted totals ``ata (p, p)``,
  ``atb (p,)``, ``btb``; ``joints``; ``a + b`` (sum of data sets); ``with_weights(w)``;
  ``residual_rms(theta) -> (n,)``; ``save(path)`` / ``NormalEquations.load(path)`` (npz).
  ``normal_equations(Y, tau, weights=None)``; ``accumulate(model, q, qd, qdd, tau, pset,
  weights=None, chunk=20000)`` (regressor built chunk by chunk, never held whole).
* ``base_parameters(model, pset, samples=2000, rng=None, tol=1e-8) -> BaseParameters`` with
  ``independent`` (indices into theta), ``K (p_b, p)`` (``theta_base = K theta``), ``names``,
  ``expressions`` (``"IxxR2 = Ixx2 - Iyy2 + 0.1859*m3"``), ``rank``, ``unidentifiable`` (names of
  parameters with no effect at all), ``scale (p_b,)`` (typical column magnitude),
  ``to_base(theta)``, ``to_full(theta_base, nominal)``.
* ``fit_least_squares(ne, base, nominal=None, prior_weight=0.0) -> Fit``;
  ``fit_consistent(ne, model, pset, base, nominal=None, prior_weight=1e-6) -> Fit``;
  ``Fit``: ``theta (p,)``, ``theta_base``, ``std_base``, ``condition_number``, ``residual_rms (n,)``,
  ``sigma2``, ``method``, ``cost``, ``poorly_excited`` (base names), ``optimality_gap`` (the
  consistent fit's proven bound on its distance from the optimum), ``.model(model, pset)``.
* ``fit_stribeck(model, q, qd, qdd, tau, pset, base, weights=None, nominal=None, prior_weight=0.0)
  -> StribeckFit`` (``fit``, per joint ``velocity``, ``excess = Ts - Tc``, ``std_excess``, ``cost``,
  ``.model(model, pset)``): the Schilling eq. 6-3-3 Stribeck term as a nonlinear refinement
  (separable least squares over the data arrays, not the normal equations).
* Fits made without ``nominal`` put parameters the torques cannot determine at 0; pass the model's
  ``nominal_parameters`` to keep them at their model values (needed for ``Fit.model``).
* ``IdentificationError`` (a ``ValueError``): unexcited/singular data, bad parameter set.
"""

from __future__ import annotations

from .base import BaseParameters, base_parameters
from .consistent import fit_consistent
from .estimate import Fit, NormalEquations, accumulate, fit_least_squares, normal_equations
from .parameters import (
    IdentificationError,
    Layout,
    ParameterSet,
    apply_parameters,
    body_of,
    deploy_offsets,
    link_parameters,
    nominal_parameters,
    physical_problem,
)
from .regressor import fixed_torques, friction_law, predict, regressor, with_coulomb_velocity
from .stribeck import StribeckFit, fit_stribeck

__all__ = [
    "BaseParameters",
    "Fit",
    "IdentificationError",
    "Layout",
    "NormalEquations",
    "ParameterSet",
    "StribeckFit",
    "accumulate",
    "apply_parameters",
    "base_parameters",
    "body_of",
    "deploy_offsets",
    "fit_consistent",
    "fit_least_squares",
    "fit_stribeck",
    "fixed_torques",
    "friction_law",
    "link_parameters",
    "nominal_parameters",
    "normal_equations",
    "physical_problem",
    "predict",
    "regressor",
    "with_coulomb_velocity",
]
