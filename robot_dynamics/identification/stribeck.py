"""Stribeck friction as a nonlinear refinement of the linear fit (separable least squares).

The engine's Stribeck term (Schilling eq. 6-3-3, :mod:`robot_dynamics.friction.stribeck`) adds, per
joint, ``(Ts - Tc) s exp(-|qd| / eps)`` to the Coulomb level (symmetric excess ``Delta = Ts+ - Tc+ =
-(Ts- - Tc-)``; ``s`` the direction of the parameter set: ``tanh(qd / v_s)`` or ``sgn(qd)``). For fixed
Stribeck velocities ``eps`` the torque is linear in the base parameters and the excesses, so the
problem is separable (Golub & Pereyra 1973, variable projection): the excesses and base parameters
follow from one linear solve, and only ``eps`` (one per joint) is searched. The search runs on a
log-spaced grid of ``eps`` by coordinate descent over the joints, then on a finer grid around each
joint's best value; every grid value's column sums (``Y_j^T S_j``, ``S_j^T S_j``, ``S_j^T tau_j``) come
from one pass over the data per grid, so the search itself never touches the data.
Armstrong-Hélouvry, Dupont & Canudas de Wit 1994 survey the model; Khalil & Dombre 2002, section 12.6
the identification of nonlinear friction terms.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.errors import ModelError, StateError
from robot_dynamics.model import FloatArray, RobotModel

from .base import BaseParameters
from .columns import ColumnSums, direction
from .estimate import BaseProblem, Fit, NormalEquations, accumulate, base_problem, finish
from .parameters import IdentificationError, ParameterSet, apply_parameters
from .regressor import CHUNK, joint_rows

GRID = np.geomspace(1e-3, 1.0, 19)  # default coarse grid of Stribeck velocities (rad/s or m/s)


@dataclass(frozen=True, eq=False)
class StribeckFit:
    """The linear fit redone with Stribeck terms: ``fit`` (theta, base parameters; its statistics
    include the Stribeck columns), per joint ``velocity`` eps and ``excess`` ``Ts - Tc`` with
    ``std_excess``; ``cost`` the weighted residual sum of squares."""

    fit: Fit
    velocity: FloatArray
    excess: FloatArray
    std_excess: FloatArray
    cost: float

    def model(self, model: RobotModel, pset: ParameterSet, *, check: bool = True) -> RobotModel:
        """``model`` with the fitted parameters and static levels ``Tc +- excess`` at ``velocity``."""
        return with_stribeck(
            apply_parameters(model, self.fit.theta, pset, check=check), self.velocity, self.excess, check
        )


def with_stribeck(model: RobotModel, velocity: ArrayLike, excess: ArrayLike, check: bool = True) -> RobotModel:
    """``model`` with per joint the Stribeck static levels ``Tc +- excess`` at Stribeck ``velocity``."""
    joints = list(model.joints)
    v, e = np.asarray(velocity, dtype=float), np.asarray(excess, dtype=float)
    for j, joint in enumerate(joints):
        fr = joint.friction
        static = (fr.coulomb[0] + e[j], fr.coulomb[1] - e[j])
        if check and (static[0] < 0.0 or static[1] > 0.0):
            raise ModelError(
                model.source or model.name,
                f"joints[{j}].friction.static",
                f"joint {joint.name!r}: Stribeck excess {e[j]:.6g} gives static levels {static}",
            )
        joints[j] = replace(joint, friction=replace(fr, static=static, stribeck_velocity=float(v[j])))
    return model.with_changes(joints=tuple(joints))


def _sums(model: RobotModel, arrays: list[FloatArray], pset: ParameterSet, grids: FloatArray, chunk: int) -> ColumnSums:
    sums = ColumnSums.empty("stribeck", grids, pset.size(model))
    q, qd, qdd, tau = arrays
    for start in range(0, q.shape[0], chunk):
        sl = slice(start, start + chunk)
        s = direction(pset, qd[sl])
        for j, cols, A in joint_rows(model, q[sl], qd[sl], qdd[sl], pset):
            sums.add_rows(j, cols, A, s[:, j], qd[sl, j], tau[sl, j])
    return sums


def _solve(
    ne: NormalEquations, base: BaseParameters, H: FloatArray, g: FloatArray, sums: ColumnSums, pick: list[int]
) -> tuple[float, FloatArray, FloatArray]:
    """Augmented scaled system for grid choices ``pick``: (cost up to a constant, solution, matrix)."""
    n, pb = ne.joints, base.rank
    w = ne.weights
    Ha: FloatArray = np.zeros((pb + n, pb + n))
    ga = np.zeros(pb + n)
    Ha[:pb, :pb], ga[:pb] = H, g
    for j in range(n):
        col = w[j] * sums.cross[j][base.independent, pick[j]] / base.scale
        Ha[:pb, pb + j] = Ha[pb + j, :pb] = col
        Ha[pb + j, pb + j] = w[j] * sums.gram[j, pick[j]]
        ga[pb + j] = w[j] * sums.rhs[j, pick[j]]
    try:
        z = np.asarray(np.linalg.solve(Ha, ga), dtype=float)
    except np.linalg.LinAlgError:  # a joint whose Stribeck column is empty (it never moved): excess 0
        z = np.asarray(np.linalg.lstsq(Ha, ga, rcond=None)[0], dtype=float)
    return -float(ga @ z), z, Ha


def _descend(
    ne: NormalEquations,
    base: BaseParameters,
    H: FloatArray,
    g: FloatArray,
    sums: ColumnSums,
    sweeps: int,
    smallest: FloatArray | None = None,
) -> list[int]:
    """Coordinate descent over the grid values (per joint only those ``>= smallest[j]``)."""
    n, m = sums.grids.shape
    low = np.zeros(n) if smallest is None else np.asarray(smallest, dtype=float)
    first = [min(int(np.searchsorted(sums.grids[j], low[j])), m - 1) for j in range(n)]
    pick = [max(m // 2, first[j]) for j in range(n)]
    best = _solve(ne, base, H, g, sums, pick)[0]
    for _ in range(sweeps):
        changed = False
        for j in range(n):
            for k in range(first[j], m):
                trial = [*pick[:j], k, *pick[j + 1 :]]
                cost = _solve(ne, base, H, g, sums, trial)[0]
                if cost < best - 1e-12 * abs(best):
                    best, pick, changed = cost, trial, True
        if not changed:
            break
    return pick


def fit_stribeck(
    model: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    tau: ArrayLike,
    pset: ParameterSet,
    base: BaseParameters,
    weights: ArrayLike | None = None,
    nominal: ArrayLike | None = None,
    prior_weight: float = 0.0,
    *,
    grid: ArrayLike = GRID,
    sweeps: int = 4,
    chunk: int = CHUNK,
) -> StribeckFit:
    """Linear parameters, Stribeck excess and velocity per joint (module docstring).

    ``q, qd, qdd, tau`` ``(N, n)`` (``tau`` with any known torque already subtracted), ``weights``
    per joint; ``grid`` the coarse Stribeck velocities tried (refined to 1/5 of its spacing).
    """
    if pset.coulomb == "none":
        raise IdentificationError("fit_stribeck needs a Coulomb term in the parameter set (coulomb 'tanh' or 'sign')")
    arrays = [np.asarray(x, dtype=float) for x in (q, qd, qdd, tau)]
    if any(a.ndim != 2 or a.shape != arrays[0].shape for a in arrays) or arrays[0].shape[1:] != (model.dof,):
        shapes = [a.shape for a in arrays]
        raise StateError(f"fit_stribeck: expected q, qd, qdd, tau of shape (N, {model.dof}), got {shapes}")
    coarse = np.sort(np.asarray(grid, dtype=float))
    if coarse.ndim != 1 or len(coarse) < 2 or not np.all(coarse > 0.0):
        raise IdentificationError(f"grid: expected at least two positive Stribeck velocities, got {grid!r}")
    ne = accumulate(model, arrays[0], arrays[1], arrays[2], arrays[3], pset, weights, chunk=chunk)
    prob = base_problem(ne, base, nominal, prior_weight)
    n = model.dof
    step = max(1, int(chunk))
    sums = _sums(model, arrays, pset, np.tile(coarse, (n, 1)), step)
    pick = _descend(ne, base, prob.H, prob.g, sums, sweeps)
    # refine: a fine grid spanning one coarse step either side of each joint's best value
    ratio = float(np.exp(np.mean(np.diff(np.log(coarse)))))
    fine = np.array([coarse[k] * np.geomspace(1.0 / ratio, ratio, 11) for k in pick])
    sums = _sums(model, arrays, pset, fine, step)
    pick = _descend(ne, base, prob.H, prob.g, sums, sweeps)
    return _finish(ne, base, prob, sums, pick, nominal)


def fit_stribeck_sums(
    ne: NormalEquations,
    sums: ColumnSums,
    base: BaseParameters,
    nominal: ArrayLike | None = None,
    prior_weight: float = 0.0,
    *,
    sweeps: int = 4,
    smallest: ArrayLike | None = None,
) -> StribeckFit:
    """:func:`fit_stribeck` from reduced data: the normal equations ``ne`` (with their weights) and the
    Stribeck column sums ``sums`` of the same rows; the velocities are searched on ``sums.grids`` only,
    per joint not below ``smallest[j]`` (rows slower than a threshold ``v`` left out: a Stribeck
    velocity far below ``v`` leaves a column of almost zeros, whose excess the data cannot bound)."""
    prob = base_problem(ne, base, nominal, prior_weight)
    pick = _descend(ne, base, prob.H, prob.g, sums, sweeps, None if smallest is None else np.asarray(smallest))
    return _finish(ne, base, prob, sums, pick, nominal)


def _finish(
    ne: NormalEquations,
    base: BaseParameters,
    prob: BaseProblem,
    sums: ColumnSums,
    pick: list[int],
    nominal: ArrayLike | None,
) -> StribeckFit:
    n = ne.joints
    _, z, Ha = _solve(ne, base, prob.H, prob.g, sums, pick)
    pb = base.rank
    theta_base = z[:pb] / base.scale
    excess = z[pb:].copy()
    velocity = np.array([sums.grids[j, pick[j]] for j in range(n)])
    theta = base.to_full(theta_base, nominal)
    rss = sums.known(ne, pick, excess).residual_sum(theta)
    cost = float(ne.weights @ rss)
    dof = max(int(np.sum(ne.rows)) - pb - n, 1)
    cov = (cost / dof) * np.linalg.pinv(Ha)
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    linear = finish(ne, base, prob, theta, theta_base, "wls+stribeck")
    fit = replace(
        linear,
        std_base=std[:pb] / base.scale,
        residual_rms=np.sqrt(rss / np.maximum(ne.rows, 1.0)),
        sigma2=cost / dof,
        cost=cost,
    )
    return StribeckFit(fit, velocity, excess, std[pb:], cost)
