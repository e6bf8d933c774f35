"""The friction laws ``identify`` fits (``--friction``), from one reduction of the data.

Per joint, beside the rigid-body and armature parameters (Khalil & Dombre 2002, section 12.6;
Armstrong-Hélouvry, Dupont & Canudas de Wit 1994 survey the laws):

* ``viscous-coulomb``: ``Fv qd + Fc s`` plus a constant offset ``Fo`` (a sensor bias,
  reported, not deployed); ``s = tanh(qd / v_s)`` or ``sgn(qd)``;
* ``smooth-coulomb`` (the default): ``Fv qd + Fc tanh(qd / w_j)`` (and the offset), the width ``w_j``
  of each joint searched on a grid (:data:`.samples.COULOMB_WIDTHS`) by coordinate descent on the
  weighted least-squares cost, each trial one linear fit (:func:`fit_widths`), moving from
  ``v_s = 0.01`` only where the data ask for it (the cost falls by more than chance would give):
  friction that saturates over a range of velocities (a physics engine's soft constraint friction,
  pre-sliding) rather than at once; it is ``viscous-coulomb`` where no joint's width moves;
* ``asymmetric-coulomb``: ``Fv qd + Fc s + Fa |s|``, a Coulomb level per direction. While a joint
  moves, ``|s| = 1``: ``Fa`` is the constant torque the offset would be, so this law has no offset
  and deploys that constant as friction (a gravity-like bias the stock model lacks, a cable, a
  spring that does not depend on the direction would be mistaken for it: compare on held-out data);
* ``stribeck``: ``viscous-coulomb`` plus the Stribeck excess ``(Ts - Tc) s exp(-|qd| / eps)``
  (Schilling eq. 6-3-3), ``eps`` searched per joint on a grid (:mod:`.stribeck`, separable least
  squares); the fitted term is then a known torque for the linear (and the consistent) fit.

The data are reduced once with the superset of these parameters (:func:`reduction_parameter_set`:
``Fa`` and ``Fo`` both, the Stribeck column sums alongside); every law's normal equations are the
superset's restricted to its columns, the others held at the model's values
(:meth:`.estimate.NormalEquations.select`, exact). So the laws are compared on the same held-out
data without reading the bags again.

Rows near a joint's velocity reversals (``|qd_j|`` below a threshold, :mod:`.samples`) are left out of
the fit for every law: there, real friction sticks (stiction, pre-sliding, a physics engine's
constraint friction) and no function of the velocity describes it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from robot_dynamics.model import RobotModel

from .base import BaseParameters
from .columns import ColumnSums
from .estimate import NormalEquations, least_squares_objective
from .parameters import IdentificationError, ParameterSet, nominal_parameters
from .samples import SampleStatistics

FrictionLaw = Literal["viscous-coulomb", "smooth-coulomb", "asymmetric-coulomb", "stribeck"]
FRICTION_LAWS: tuple[FrictionLaw, ...] = ("viscous-coulomb", "smooth-coulomb", "asymmetric-coulomb", "stribeck")
DEFAULT_FRICTION: FrictionLaw = "smooth-coulomb"


def check_friction(friction: str) -> str:
    if friction not in FRICTION_LAWS:
        raise IdentificationError(f"friction must be one of {', '.join(FRICTION_LAWS)}; got {friction!r}")
    return friction


def friction_parameter_set(friction: str, coulomb: str = "tanh") -> ParameterSet:
    """The parameters of a law (module docstring); ``coulomb`` "tanh" or "sign"."""
    law = check_friction(friction)
    if coulomb not in ("tanh", "sign"):
        raise IdentificationError(f"coulomb must be 'tanh' or 'sign', got {coulomb!r}")
    if law == "asymmetric-coulomb":
        return ParameterSet(coulomb=coulomb, asymmetric=True, offset=False)  # type: ignore[arg-type]
    return ParameterSet(coulomb=coulomb)  # type: ignore[arg-type]


def reduction_parameter_set(coulomb: str = "tanh") -> ParameterSet:
    """The superset every law is selected from: all inertial parameters, armature, Fv, Fc, Fa, Fo."""
    return ParameterSet(coulomb=coulomb, asymmetric=True, offset=True)  # type: ignore[arg-type]


def columns(model: RobotModel, reduced: ParameterSet, pset: ParameterSet) -> NDArray[np.intp]:
    """Indices of ``pset``'s parameters among ``reduced``'s (IdentificationError if not a subset)."""
    names = reduced.names(model)
    wanted = pset.names(model)
    missing = [name for name in wanted if name not in names]
    if missing or pset.coulomb != reduced.coulomb or pset.coulomb_velocity != reduced.coulomb_velocity:
        raise IdentificationError(f"parameters {missing or list(wanted)} were not reduced from the data")
    index = {name: k for k, name in enumerate(names)}
    return np.array([index[name] for name in wanted], dtype=np.intp)


def select_statistics(
    model: RobotModel, stats: list[SampleStatistics], reduced: ParameterSet, pset: ParameterSet
) -> list[SampleStatistics]:
    """Every data set's statistics restricted to ``pset`` (module docstring); as is when ``pset == reduced``."""
    if pset == reduced:
        return stats
    keep = columns(model, reduced, pset)
    fixed = nominal_parameters(model, reduced)

    return [
        replace(
            s,
            train_sums=s.train_sums.select(keep, fixed),
            holdout_sums=None if s.holdout_sums is None else s.holdout_sums.select(keep, fixed),
        )
        for s in stats
    ]


def fit_widths(
    ne: NormalEquations,
    sums: ColumnSums,
    columns: ArrayLike,
    base: BaseParameters,
    nominal: ArrayLike | None,
    prior_weight: float,
    start: list[int],
    evidence: float,
    sweeps: int = 3,
) -> list[int]:
    """Per joint the grid index of the Coulomb width (``smooth-coulomb``, module docstring): coordinate
    descent from the grid indices ``start``, a step taken only where it lowers the weighted cost
    (:func:`.estimate.least_squares_objective`) by more than ``evidence`` (with weights ``1 / sigma^2`` a
    free parameter lowers it by about 1 by chance), each trial a least-squares fit with the Coulomb
    columns ``columns`` replaced."""
    cols = np.asarray(columns, dtype=np.intp)
    pick = list(start)

    def cost(trial: list[int]) -> float:
        return least_squares_objective(sums.replaced(ne, cols, trial), base, nominal, prior_weight)

    best = cost(pick)
    for _ in range(sweeps):
        changed = False
        for j in range(ne.joints):
            for k in range(sums.grids.shape[1]):
                trial = [*pick[:j], k, *pick[j + 1 :]]
                value = cost(trial)
                if value < best - evidence:
                    best, pick, changed = value, trial, True
        if not changed:
            break
    return pick


def with_coulomb_widths(model: RobotModel, widths: ArrayLike) -> RobotModel:
    """``model`` with each joint's Coulomb smoothing width (``JointFriction.smoothing_velocity``)."""
    w = np.asarray(widths, dtype=float)
    joints = tuple(
        replace(j, friction=replace(j.friction, smoothing_velocity=float(w[k]))) for k, j in enumerate(model.joints)
    )
    return model.with_changes(joints=joints)
