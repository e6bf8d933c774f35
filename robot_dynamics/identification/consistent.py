"""Physically consistent estimate: every identified link a rigid body, friction and armature >= 0.

A set of 10 standard parameters is a rigid body (positive mass, inertia about the centre of mass
positive definite and satisfying the triangle inequality) exactly when its 4x4 pseudo-inertia

    J = [[Sigma, m c], [m c^T, m]],   Sigma = integral(r r^T dm) = tr(I_O)/2 E - I_O

is positive definite (Wensing, Kim & Slotine, "Linear matrix inequalities for physically consistent
inertial parameter identification", 2017; Sousa & Cortesão 2014 for the LMI form). ``J`` is
linear in the parameters, so the consistent set is the intersection of linear matrix inequalities
``J_i(theta) >= 0`` (one per identified link) and half-spaces (armature, viscous and Coulomb levels
``>= 0``; with asymmetric Coulomb the two levels ``L+ = Fc + Fa`` and ``-L- = Fc - Fa``); the
weighted least-squares cost of :func:`~.estimate.fit_least_squares` (with its prior) is a convex
quadratic. The fit is therefore a semidefinite program, and has one optimum, which is found from any
start: no multiple starts are needed.

It is solved by the barrier method (Boyd & Vandenberghe, "Convex Optimization", 2004, section 11.3,
Algorithm 11.1; the log-det barrier of section 11.6): minimise ``t F(theta) + Phi(theta)`` with
``Phi = -sum log det J_i - sum log(level)`` by damped Newton steps (section 9.5.2, backtracking that
keeps every ``J_i`` positive definite), then raise ``t`` twentyfold; after exact centring the cost is
within ``nu / t`` of the optimum (``nu = 4 x links + levels``, section 11.2.2), so the method stops when
``nu / t`` is below ``tol`` times the cost. A solution on the boundary (a level exactly 0, a degenerate
body) is approached at this rate like any other: no coordinate has a vanishing gradient there.

``F`` is the cost above its unconstrained minimum, ``|C^T z - C^-1 g|^2`` with ``C`` a square root of
the base normal equations (eigen-decomposition) and ``z`` the scaled base parameters, plus a weak
proximal term ``null_weight x (information of the data set) x |u - u_ls|^2`` in the parameters ``u``
scaled to unit column RMS (``BaseParameters.scale_full``), ``u_ls`` the least-squares estimate: the
torques do not determine every direction of theta (regrouped parameters), and among the optimal
consistent estimates the term picks the one nearest the least-squares estimate, which keeps the
model's values where the data say nothing. Its effect on the cost is of order ``null_weight``.

The start is the least-squares estimate made strictly feasible: pseudo-inertia eigenvalues raised to
at least ``1e-4`` of the largest (e.g. the bundled PUMA 560's links 1 and 3, which violate the
triangle inequality as published) and levels raised to a small positive value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.model import FloatArray, RobotModel

from .base import BaseParameters
from .estimate import Fit, NormalEquations, base_problem, finish, fit_least_squares
from .parameters import IdentificationError, ParameterSet, nominal_parameters

START_FLOOR = 1e-4  # start: pseudo-inertia eigenvalues at least this fraction of the largest
GROWTH = 20.0  # barrier parameter t grows by this factor per centring (Boyd & Vandenberghe, 11.3)
NEWTON_DECREMENT = 1e-7  # centring stops when lambda^2 / 2 falls below this (section 9.5.1)


def pseudo_inertia(phi: ArrayLike) -> FloatArray:
    """The 4x4 pseudo-inertia ``J`` of 10 standard parameters ``(..., 10)`` (module docstring)."""
    p = np.asarray(phi, dtype=float)
    return np.einsum("...k,kab->...ab", p, _BASIS)


def parameters_of_pseudo_inertia(J: FloatArray) -> FloatArray:
    """The 10 standard parameters of a 4x4 pseudo-inertia (inverse of :func:`pseudo_inertia`)."""
    sigma = J[:3, :3]
    inertia = np.trace(sigma) * np.eye(3) - sigma
    return np.array([J[3, 3], *J[:3, 3], *inertia[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]])


def _basis() -> FloatArray:
    """``A_k (10, 4, 4)`` with ``J = sum_k phi_k A_k``."""
    basis = np.zeros((10, 4, 4))
    for k in range(4):  # m, mx, my, mz
        if k == 0:
            basis[0, 3, 3] = 1.0
        else:
            basis[k, k - 1, 3] = basis[k, 3, k - 1] = 1.0
    pairs = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))  # Ixx, Ixy, Ixz, Iyy, Iyz, Izz
    for k, (r, c) in enumerate(pairs, start=4):
        inertia = np.zeros((3, 3))
        inertia[r, c] = inertia[c, r] = 1.0
        basis[k, :3, :3] = 0.5 * np.trace(inertia) * np.eye(3) - inertia  # Sigma = tr(I)/2 E - I
    return basis


_BASIS = _basis()


def pseudo_inertia_basis() -> FloatArray:
    """``A_k (10, 4, 4)``: ``J = sum_k phi_k A_k`` (a copy)."""
    return _BASIS.copy()


def strictly_consistent_link(phi: ArrayLike, floor: float = START_FLOOR) -> FloatArray:
    """The body nearest ``phi`` whose pseudo-inertia eigenvalues are at least ``floor`` times the largest
    (``phi`` itself when it is comfortably consistent)."""
    J = pseudo_inertia(phi)
    eig, vec = np.linalg.eigh(J)
    top = max(float(eig[-1]), 1e-12)
    if eig[0] >= floor * top:
        return np.asarray(phi, dtype=float).copy()
    return parameters_of_pseudo_inertia((vec * np.maximum(eig, floor * top)) @ vec.T)


@dataclass(frozen=True, eq=False)
class ConsistentSet:
    """The constraints of a parameter set on theta: ``links`` the slices of the identified links'
    10 parameters; ``levels (k, p)`` rows ``l`` with ``l theta >= floor`` (armature, viscous, Coulomb
    levels, density bounds: floor 0; a mass band ``a m0 <= m <= b m0``: floors ``a m0`` and ``-b m0``);
    ``joint (p, p_j)`` / ``joint_inverse`` map the per-joint values (levels and offsets) to theta's joint
    columns and back."""

    links: tuple[slice, ...]
    levels: FloatArray
    joint: FloatArray
    bounded: np.ndarray
    inside: tuple[FloatArray | None, ...] = ()  # per link a body strictly inside its bound (None: unbounded)
    floors: FloatArray | None = None  # per level row its lower bound (None: all 0)
    masses: tuple[tuple[float, float] | None, ...] = ()  # per link the mass band (None: no band)

    @staticmethod
    def of(
        model: RobotModel,
        pset: ParameterSet,
        bounds: Sequence[tuple[FloatArray, FloatArray] | None] | None = None,
        mass_band: tuple[float, float] | None = None,
    ) -> ConsistentSet:
        """The constraints of ``pset``; ``bounds``: per model link ``(row, inside)`` — the density bound
        ``row @ phi >= 0`` (a bounding ellipsoid, :mod:`.bounds`) and a body strictly inside it — or None;
        ``mass_band (a, b)``: each identified link's mass within ``[a, b]`` times its stock mass (links of
        stock mass 0 are not banded)."""
        lay = pset.layout(model)
        rows: list[list[tuple[int, float]]] = []  # per joint value: (theta column, coefficient)
        bounded: list[bool] = []
        cols = lay.joint_column
        for j in range(model.dof):
            for kind in ("Ia", "Fv"):
                if cols[kind][j] >= 0:
                    rows.append([(int(cols[kind][j]), 1.0)])
                    bounded.append(True)
            if cols["Fc"][j] >= 0:
                fc, fa = int(cols["Fc"][j]), int(cols["Fa"][j])
                if fa >= 0:  # Fc = (L+ - L-)/2, Fa = (L+ + L-)/2: values L+ and -L-, both >= 0
                    rows += [[(fc, 0.5), (fa, 0.5)], [(fc, 0.5), (fa, -0.5)]]
                    bounded += [True, True]
                else:
                    rows.append([(fc, 1.0)])
                    bounded.append(True)
            if cols["Fo"][j] >= 0:
                rows.append([(int(cols["Fo"][j]), 1.0)])
                bounded.append(False)
        joint = np.zeros((lay.size, len(rows)))  # theta's joint columns = joint @ values
        for k, row in enumerate(rows):
            for c, v in row:
                joint[c, k] = v
        flags = np.array(bounded, dtype=bool)
        values_of = np.linalg.pinv(joint)  # values = values_of @ theta (exact: the map is invertible)
        levels: FloatArray = values_of[flags]
        inside: list[FloatArray | None] = []
        floors = [0.0] * levels.shape[0]
        masses: list[tuple[float, float] | None] = []
        for i in lay.links:
            bound = None if bounds is None else bounds[i]
            inside.append(None if bound is None else np.asarray(bound[1], dtype=float))
            if bound is not None:
                extra = np.zeros((1, lay.size))
                extra[0, lay.link_slice(i)] = bound[0]
                levels = np.vstack([levels, extra])
                floors.append(0.0)
            stock = model.joints[i].link.mass
            masses.append(None if mass_band is None or stock <= 0.0 else (mass_band[0] * stock, mass_band[1] * stock))
            band = masses[-1]
            if band is not None:  # m >= low, -m >= -high (the link's first parameter is its mass)
                extra = np.zeros((2, lay.size))
                extra[:, lay.link_slice(i).start] = (1.0, -1.0)
                levels = np.vstack([levels, extra])
                floors += [band[0], -band[1]]
        links = tuple(lay.link_slice(i) for i in lay.links)
        return ConsistentSet(
            links, levels.reshape(-1, lay.size), joint, flags, tuple(inside), np.array(floors), tuple(masses)
        )

    def feasible_start(self, theta: FloatArray, level_floor: FloatArray) -> FloatArray:
        """``theta`` with every link strictly consistent and every level at least ``level_floor``."""
        out = theta.copy()
        for k, sl in enumerate(self.links):
            out[sl] = strictly_consistent_link(theta[sl])
            inside = self.inside[k] if k < len(self.inside) else None
            if inside is not None:
                out[sl] = _blend_inside(out[sl], inside, self.levels[:, sl])
            band = self.masses[k] if k < len(self.masses) else None
            if band is not None:  # scaled into the band with room: still a rigid body inside its bound
                low, high = band
                mass = float(out[sl][0])
                target = min(max(mass, low + 0.05 * (high - low)), high - 0.05 * (high - low))
                out[sl] = out[sl] * (target / mass)
        if self.joint.shape[1]:
            values = np.linalg.lstsq(self.joint, theta, rcond=None)[0]
            floor: FloatArray = np.asarray(level_floor, dtype=float).reshape(-1)
            if floor.size > 1:
                floor = floor[: int(np.count_nonzero(self.bounded))]
            values[self.bounded] = np.maximum(values[self.bounded], floor)
            on = np.any(self.joint != 0.0, axis=1)
            out[on] = (self.joint @ values)[on]
        return out


def _blend_inside(phi: FloatArray, inside: FloatArray, rows: FloatArray) -> FloatArray:
    """``phi`` moved toward ``inside`` until its density bound holds with room (``rows``: the level rows'
    columns of this link; the bound's is the one non-zero row). Both bodies are rigid bodies and the set
    is convex, so every blend is one; the bound at ``inside`` is strictly positive."""
    row = rows[np.any(rows != 0.0, axis=1)]
    need = 0.05 * float(np.min(row @ inside))
    for a in (0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0):
        blend = (1.0 - a) * phi + a * inside
        if float(np.min(row @ blend)) >= need:
            return blend
    return inside


class _Barrier:
    """``Phi(u) = -sum log det J_i - sum log(l u - floor)`` in scaled parameters ``u`` (``theta = u / scale``)."""

    def __init__(self, cset: ConsistentSet, inv_scale: FloatArray) -> None:
        self.index = np.array([np.arange(sl.start, sl.stop) for sl in cset.links], dtype=np.intp).reshape(-1, 10)
        self.basis = _BASIS[None] * inv_scale[self.index][:, :, None, None]  # (L, 10, 4, 4) per unit of u
        self.levels = cset.levels * inv_scale  # (k, p)
        self.floors = np.zeros(len(self.levels)) if cset.floors is None else cset.floors
        self.nu = 4 * len(cset.links) + self.levels.shape[0]

    def value(self, u: FloatArray) -> float:
        """``Phi(u)``, ``inf`` outside the strictly consistent set."""
        J = np.einsum("lk,lkab->lab", u[self.index], self.basis)
        s = self.levels @ u - self.floors
        if np.any(s <= 0.0):
            return float("inf")
        try:
            chol = np.linalg.cholesky(J)
        except np.linalg.LinAlgError:
            return float("inf")
        logdet = 2.0 * np.sum(np.log(np.diagonal(chol, axis1=1, axis2=2)))
        return float(-logdet - np.sum(np.log(s)))

    def derivatives(self, u: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Gradient and Hessian of ``Phi`` at a strictly feasible ``u``."""
        p = len(u)
        grad, hess = np.zeros(p), np.zeros((p, p))
        if len(self.index):
            J = np.einsum("lk,lkab->lab", u[self.index], self.basis)
            M = np.einsum("lab,lkbc->lkac", np.linalg.inv(J), self.basis)  # J^-1 A_k
            np.add.at(grad, self.index, -np.einsum("lkaa->lk", M))  # d(-log det J) = -tr(J^-1 A_k)
            block = np.einsum("lkab,ljba->lkj", M, M)  # tr(J^-1 A_k J^-1 A_j)
            for rows, b in zip(self.index, block, strict=True):
                hess[np.ix_(rows, rows)] += b
        if self.levels.shape[0]:
            inv = 1.0 / (self.levels @ u - self.floors)
            grad -= self.levels.T @ inv
            hess += (self.levels.T * inv**2) @ self.levels
        return grad, hess


def _solve_barrier(
    R: FloatArray,
    rhs: FloatArray,
    rho: float,
    u_ref: FloatArray,
    barrier: _Barrier,
    u0: FloatArray,
    gap: float,
    cap: int,
) -> tuple[FloatArray, int, float]:
    """Minimise ``F(u) = |R u - rhs|^2 + rho |u - u_ref|^2`` over the barrier's set (module docstring).
    Returns the solution, the number of Newton steps and the bound ``nu / t`` on ``F(u) - min F``
    (``inf`` when ``cap`` steps ran out before a centring finished)."""
    RtR, Rtb = R.T @ R, R.T @ rhs
    eye = np.eye(len(u0))

    def objective(u: FloatArray) -> float:
        r = R @ u - rhs
        d = u - u_ref
        return float(r @ r + rho * (d @ d))

    u = u0.copy()
    t = max(barrier.nu, 1) / max(objective(u), 1e-300)  # nu / t = F(u0): F >= 0
    steps = 0
    while steps < cap:
        centred = False
        while steps < cap:  # centring by damped Newton steps
            g_phi, h_phi = barrier.derivatives(u)
            grad = t * 2.0 * (RtR @ u - Rtb + rho * (u - u_ref)) + g_phi
            hess = t * 2.0 * (RtR + rho * eye) + h_phi
            try:
                step = -np.linalg.solve(hess, grad)
            except np.linalg.LinAlgError:
                step = -np.linalg.lstsq(hess, grad, rcond=None)[0]
            decrement = -float(grad @ step)
            steps += 1
            if decrement / 2.0 <= NEWTON_DECREMENT:
                centred = True
                break
            current = t * objective(u) + barrier.value(u)
            size = 1.0
            while size > 1e-12:  # backtracking line search (alpha = 0.25, beta = 0.5)
                trial = u + size * step
                value = t * objective(trial) + barrier.value(trial)
                if value <= current - 0.25 * size * decrement and value < current:
                    break
                size *= 0.5
            else:
                centred = True  # no decrease to rounding: centred as well as the arithmetic allows
                break
            u = trial
        if centred and barrier.nu / t <= gap:
            return u, steps, barrier.nu / t
        t *= GROWTH
    return u, steps, float("inf")


def fit_consistent(
    ne: NormalEquations,
    model: RobotModel,
    pset: ParameterSet,
    base: BaseParameters,
    nominal: ArrayLike | None = None,
    prior_weight: float = 1e-6,
    *,
    null_weight: float = 1e-8,
    tol: float = 1e-9,
    max_steps: int = 1000,
    bounds: Sequence[tuple[FloatArray, FloatArray] | None] | None = None,
    mass_band: tuple[float, float] | None = None,
) -> Fit:
    """The physically consistent weighted least-squares estimate (module docstring).

    ``nominal`` (default: the model's own parameters) is the prior's target and the reference for the
    directions the data leave free; ``prior_weight`` as in :func:`~.estimate.fit_least_squares`;
    ``null_weight`` the proximal term's relative weight; the barrier method stops when the cost is
    provably within ``tol`` (relative) of the optimum or after ``max_steps`` Newton steps; the bound it
    reached is ``Fit.optimality_gap`` (``inf`` if the steps ran out first; the estimate is consistent
    either way). ``std_base`` are those of the unconstrained problem at the consistent estimate.
    ``bounds``: per link a density bound ``(row, inside)`` (:meth:`ConsistentSet.of`, :mod:`.bounds`);
    ``mass_band``: each identified link's mass within these multiples of its stock mass.
    """
    if not (null_weight > 0.0 and tol > 0.0):
        raise IdentificationError(f"null_weight and tol must be > 0, got {null_weight!r} and {tol!r}")
    nom = nominal_parameters(model, pset) if nominal is None else np.asarray(nominal, dtype=float)
    prob = base_problem(ne, base, nom, prior_weight)
    eig, vec = np.linalg.eigh(prob.H)
    keep = eig > 1e-14 * max(float(eig[-1]), 1e-300)
    root = np.sqrt(eig[keep])
    Ct = (vec[:, keep] * root).T  # rows: sqrt(lambda) v^T, so |Ct z|^2 = z^T H z on the kept directions
    rhs = (vec[:, keep].T @ prob.g) / root
    positive = base.scale_full > 0.0
    scale = np.where(positive, base.scale_full, np.min(base.scale_full[positive], initial=1.0))
    inv_scale = 1.0 / scale
    R = Ct @ ((prob.scale[:, None] * base.K) * inv_scale)  # z = S K theta = S K u / scale
    cset = ConsistentSet.of(model, pset, bounds, mass_band)
    ls = fit_least_squares(ne, base, nom, prior_weight=max(prior_weight, 1e-9))
    info = ne.count * float(np.sum(ne.weights))
    torque = max(float(np.mean(ls.residual_rms)), 1e-9 * float(np.sqrt(np.mean(ne.btb_joint) / ne.count)), 1e-300)
    level_floor = 1e-2 * torque / np.maximum(np.abs(cset.levels) @ scale, 1e-300)  # 1 % of the noise
    theta0 = cset.feasible_start(ls.theta, level_floor)
    u_ref, u0 = ls.theta * scale, theta0 * scale
    gap = tol * max(ls.cost, ne.btb * 1e-12, 1e-300)
    u, _, bound = _solve_barrier(R, rhs, null_weight * info, u_ref, _Barrier(cset, inv_scale), u0, gap, max_steps)
    theta = u * inv_scale
    return finish(ne, base, prob, theta, base.to_base(theta), "consistent", optimality_gap=bound)
