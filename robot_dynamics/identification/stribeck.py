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
from .estimate import Fit, NormalEquations, accumulate, base_problem, finish
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
        updated = apply_parameters(model, self.fit.theta, pset, check=check)
        joints = list(updated.joints)
        for j, joint in enumerate(joints):
            fr = joint.friction
            static = (fr.coulomb[0] + self.excess[j], fr.coulomb[1] - self.excess[j])
            if check and (static[0] < 0.0 or static[1] > 0.0):
                raise ModelError(
                    model.source or model.name,
                    f"joints[{j}].friction.static",
                    f"joint {joint.name!r}: Stribeck excess {self.excess[j]:.6g} gives static levels {static}",
                )
            joints[j] = replace(joint, friction=replace(fr, static=static, stribeck_velocity=float(self.velocity[j])))
        return updated.with_changes(joints=tuple(joints))


@dataclass(frozen=True, eq=False)
class _Sums:
    grids: FloatArray  # (n, m)
    cross: FloatArray  # (n, p, m): sum Y_j^T S_j
    gram: FloatArray  # (n, m): sum S_j^2 for each grid value (the columns of different joints never meet)
    rhs: FloatArray  # (n, m): sum S_j tau_j


def _sums(model: RobotModel, arrays: list[FloatArray], pset: ParameterSet, grids: FloatArray, chunk: int) -> _Sums:
    n, p, m = model.dof, pset.size(model), grids.shape[1]
    cross, gram, rhs = np.zeros((n, p, m)), np.zeros((n, m)), np.zeros((n, m))
    q, qd, qdd, tau = arrays
    for start in range(0, q.shape[0], chunk):
        sl = slice(start, start + chunk)
        v = qd[sl]
        s = np.tanh(v / pset.coulomb_velocity) if pset.coulomb == "tanh" else np.sign(v)
        for j, cols, A in joint_rows(model, q[sl], v, qdd[sl], pset):
            S = s[:, j, None] * np.exp(-np.abs(v[:, j, None]) / grids[j])  # (N, m)
            cross[j][cols] += A.T @ S
            gram[j] += np.einsum("km,km->m", S, S)
            rhs[j] += tau[sl, j] @ S
    return _Sums(grids, cross, gram, rhs)


def _solve(
    ne: NormalEquations, base: BaseParameters, H: FloatArray, g: FloatArray, sums: _Sums, pick: list[int]
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
    z = np.asarray(np.linalg.solve(Ha, ga), dtype=float)
    return -float(ga @ z), z, Ha


def _descend(
    ne: NormalEquations, base: BaseParameters, H: FloatArray, g: FloatArray, sums: _Sums, sweeps: int
) -> list[int]:
    n, m = sums.grids.shape
    pick = [m // 2] * n
    best = _solve(ne, base, H, g, sums, pick)[0]
    for _ in range(sweeps):
        changed = False
        for j in range(n):
            for k in range(m):
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
    _, z, Ha = _solve(ne, base, prob.H, prob.g, sums, pick)
    pb = base.rank
    theta_base = z[:pb] / base.scale
    excess = z[pb:].copy()
    velocity = np.array([fine[j, pick[j]] for j in range(n)])
    theta = base.to_full(theta_base, nominal)
    # residuals with the Stribeck columns: rss_j = |tau_j - Y_j theta - Delta_j S_j|^2
    stribeck_cross = np.array([sums.cross[j][:, pick[j]] for j in range(n)])  # (n, p)
    gram = np.array([sums.gram[j, pick[j]] for j in range(n)])
    rhs = np.array([sums.rhs[j, pick[j]] for j in range(n)])
    rss = ne.residual_sum(theta) - 2.0 * excess * rhs + 2.0 * excess * (stribeck_cross @ theta) + excess**2 * gram
    rss = np.maximum(rss, 0.0)
    cost = float(ne.weights @ rss)
    dof = max(ne.count * n - pb - n, 1)
    cov = (cost / dof) * np.linalg.inv(Ha)
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    linear = finish(ne, base, prob, theta, theta_base, "wls+stribeck")
    fit = replace(
        linear,
        std_base=std[:pb] / base.scale,
        residual_rms=np.sqrt(rss / max(ne.count, 1)),
        sigma2=cost / dof,
        cost=cost,
    )
    return StribeckFit(fit, velocity, excess, std[pb:], cost)
