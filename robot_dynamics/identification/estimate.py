"""Normal equations and the weighted least-squares estimate of the base parameters.

Khalil & Dombre 2002, sections 12.4-12.5 (ordinary and weighted least squares on the base
parameters, standard deviations ``sigma^2 (W^T W)^-1``, relative standard deviation, condition
number); Gautier & Khalil 1990. The data enter only through the per-joint sums ``Y_j^T Y_j``,
``Y_j^T tau_j`` and ``tau_j^T tau_j`` (``Y_j`` the rows of joint ``j``), kept unweighted: the per-joint
weights ``1 / sigma_j^2`` are applied when the totals are formed, so a second pass with weights from
the first pass's residuals costs nothing, and data sets (bags, workers) combine by addition.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import scipy.linalg
import scipy.linalg.blas
from numpy.typing import ArrayLike

from robot_dynamics.errors import StateError
from robot_dynamics.model import FloatArray, RobotModel

from .base import BaseParameters
from .parameters import IdentificationError, ParameterSet, apply_parameters
from .regressor import CHUNK, joint_rows

POORLY_EXCITED = 1e-10  # eigenvalue of the scaled information matrix below this fraction of the largest


@dataclass(frozen=True, eq=False)
class NormalEquations:
    """Unweighted per-joint sums of a data set, plus the per-joint weights to use for the totals.

    ``ata_joint (n, p, p)`` = ``sum Y_j^T Y_j``, ``atb_joint (n, p)`` = ``sum Y_j^T tau_j``,
    ``btb_joint (n,)`` = ``sum tau_j^2``, ``count`` states, ``weights (n,)`` (default 1),
    ``rows (n,)`` the rows each joint contributed (default ``count``; fewer where a joint's rows near
    its velocity reversals were left out). Weighted totals: :attr:`ata`, :attr:`atb`, :attr:`btb`.
    """

    ata_joint: FloatArray
    atb_joint: FloatArray
    btb_joint: FloatArray
    count: int
    weights: FloatArray = field(default_factory=lambda: np.zeros(0))
    rows: FloatArray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        n = self.ata_joint.shape[0]
        if self.rows.size == 0:
            object.__setattr__(self, "rows", np.full(n, float(self.count)))
        if self.weights.size == 0:
            object.__setattr__(self, "weights", np.ones(n))
        w = np.asarray(self.weights, dtype=float)
        if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w <= 0.0):
            raise IdentificationError(f"weights: expected {n} positive finite per-joint weights, got {w!r}")
        object.__setattr__(self, "weights", w)

    @property
    def joints(self) -> int:
        return int(self.ata_joint.shape[0])

    @property
    def parameters(self) -> int:
        return int(self.ata_joint.shape[1])

    @property
    def ata(self) -> FloatArray:
        return np.einsum("j,jkl->kl", self.weights, self.ata_joint)

    @property
    def atb(self) -> FloatArray:
        return self.weights @ self.atb_joint

    @property
    def btb(self) -> float:
        return float(self.weights @ self.btb_joint)

    def with_weights(self, weights: ArrayLike) -> NormalEquations:
        """The same data with per-joint weights ``weights (n,)`` (e.g. ``1 / sigma_j^2``)."""
        return replace(self, weights=np.asarray(weights, dtype=float))

    def __add__(self, other: NormalEquations) -> NormalEquations:
        if not isinstance(other, NormalEquations):
            return NotImplemented
        if other.ata_joint.shape != self.ata_joint.shape:
            raise IdentificationError(
                f"cannot add normal equations of shapes {self.ata_joint.shape} and {other.ata_joint.shape}"
            )
        return NormalEquations(
            self.ata_joint + other.ata_joint,
            self.atb_joint + other.atb_joint,
            self.btb_joint + other.btb_joint,
            self.count + other.count,
            self.weights,
            self.rows + other.rows,
        )

    def __sub__(self, other: NormalEquations) -> NormalEquations:
        """The sums of a data set less those of a subset of its rows (same states, fewer rows per joint)."""
        return NormalEquations(
            self.ata_joint - other.ata_joint,
            self.atb_joint - other.atb_joint,
            np.maximum(self.btb_joint - other.btb_joint, 0.0),
            self.count,
            self.weights,
            self.rows - other.rows,
        )

    def select(self, keep: ArrayLike, fixed: ArrayLike) -> NormalEquations:
        """The normal equations of the columns ``keep`` alone, every other column held at its value in
        ``fixed (p,)`` (its torque moved to the right-hand side: ``b' = b - A_d fixed_d``). Exact: a
        data set reduced once with a superset of parameters gives every subset's normal equations."""
        k = np.asarray(keep, dtype=np.intp)
        d = np.setdiff1d(np.arange(self.parameters), k)
        x = np.asarray(fixed, dtype=float)[d]
        ata_kd = self.ata_joint[:, k][:, :, d]
        ata_dd = self.ata_joint[:, d][:, :, d]
        return NormalEquations(
            np.ascontiguousarray(self.ata_joint[:, k][:, :, k]),
            self.atb_joint[:, k] - ata_kd @ x,
            self.btb_joint - 2.0 * self.atb_joint[:, d] @ x + np.einsum("k,jkl,l->j", x, ata_dd, x),
            self.count,
            self.weights,
            self.rows,
        )

    def residual_sum(self, theta: ArrayLike) -> FloatArray:
        """Per-joint unweighted ``sum (tau_j - Y_j theta)^2`` (n,) (>= 0; accurate to ~1e-16 of ``btb``)."""
        th = np.asarray(theta, dtype=float)
        rss = self.btb_joint - 2.0 * self.atb_joint @ th + np.einsum("k,jkl,l->j", th, self.ata_joint, th)
        return np.maximum(rss, 0.0)

    def residual_rms(self, theta: ArrayLike) -> FloatArray:
        """Per-joint RMS of ``tau - Y theta`` over the data (each joint's own rows) (n,)."""
        return np.sqrt(self.residual_sum(theta) / np.maximum(self.rows, 1.0))

    def save(self, path: str | Path) -> None:
        np.savez(
            path,
            ata_joint=self.ata_joint,
            atb_joint=self.atb_joint,
            btb_joint=self.btb_joint,
            count=np.array(self.count),
            weights=self.weights,
            rows=self.rows,
        )

    @staticmethod
    def load(path: str | Path) -> NormalEquations:
        with np.load(path) as data:
            rows = data["rows"] if "rows" in data.files else np.zeros(0)
            return NormalEquations(
                data["ata_joint"], data["atb_joint"], data["btb_joint"], int(data["count"]), data["weights"], rows
            )

    @staticmethod
    def empty(joints: int, parameters: int) -> NormalEquations:
        return NormalEquations(
            np.zeros((joints, parameters, parameters)), np.zeros((joints, parameters)), np.zeros(joints), 0
        )


def _gram(A: FloatArray) -> FloatArray:
    """``A^T A`` by the BLAS symmetric rank-k update (half the work of a product), symmetrised."""
    if A.flags.f_contiguous:  # A^T A of a Fortran-ordered A (no copy)
        upper = scipy.linalg.blas.dsyrk(1.0, A, trans=1)
    else:  # A^T is Fortran-ordered: (A^T)(A^T)^T
        upper = scipy.linalg.blas.dsyrk(1.0, A.T, trans=0)
    return np.triu(upper) + np.triu(upper, 1).T


def normal_equations(Y: ArrayLike, tau: ArrayLike, weights: ArrayLike | None = None) -> NormalEquations:
    """The normal equations of regressor rows ``Y (N, n, p)`` and torques ``tau (N, n)``."""
    Ya = np.asarray(Y, dtype=float)
    ta = np.asarray(tau, dtype=float)
    if Ya.ndim == 2:
        Ya, ta = Ya[None], ta.reshape(1, -1)
    if Ya.ndim != 3 or ta.shape != Ya.shape[:2]:
        raise StateError(f"normal_equations: expected Y (N, n, p) and tau (N, n), got {Ya.shape} and {ta.shape}")
    n, p = Ya.shape[1], Ya.shape[2]
    ata, atb = np.zeros((n, p, p)), np.zeros((n, p))
    for j in range(n):
        Yj = Ya[:, j, :]
        cols = np.flatnonzero(np.any(Yj != 0.0, axis=0))  # joint j's rows are sparse (links below j)
        sub = np.ascontiguousarray(Yj[:, cols])
        ata[j][np.ix_(cols, cols)] = _gram(sub)
        atb[j, cols] = ta[:, j] @ sub
    ne = NormalEquations(ata, atb, np.einsum("ij,ij->j", ta, ta), Ya.shape[0])
    return ne if weights is None else ne.with_weights(weights)


def accumulate(
    model: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    tau: ArrayLike,
    pset: ParameterSet | None = None,
    weights: ArrayLike | None = None,
    *,
    chunk: int = CHUNK,
) -> NormalEquations:
    """Normal equations of states ``(N, n)`` and torques ``(N, n)``, building the regressor ``chunk``
    states at a time (memory bounded by the chunk, not by ``N``)."""
    pset = pset or ParameterSet()
    arrays = [np.asarray(x, dtype=float) for x in (q, qd, qdd, tau)]
    if any(a.ndim != 2 or a.shape != arrays[0].shape for a in arrays) or arrays[0].shape[1:] != (model.dof,):
        shapes = [a.shape for a in arrays]
        raise StateError(f"accumulate: expected q, qd, qdd, tau of the same shape (N, {model.dof}), got {shapes}")
    for name, arr in zip(("q", "qd", "qdd", "tau"), arrays, strict=True):
        if not np.all(np.isfinite(arr)):
            rows = np.flatnonzero(~np.all(np.isfinite(arr), axis=1))
            raise StateError(f"accumulate: {name} has non-finite values in {len(rows)} states (first: {rows[0]})")
    n, p = model.dof, pset.size(model)
    ata, atb = np.zeros((n, p, p)), np.zeros((n, p))
    step = max(1, int(chunk))
    for start in range(0, arrays[0].shape[0], step):
        sl = slice(start, start + step)
        for j, cols, A in joint_rows(model, arrays[0][sl], arrays[1][sl], arrays[2][sl], pset):
            ata[j][np.ix_(cols, cols)] += _gram(A)
            atb[j, cols] += arrays[3][sl, j] @ A
    total = NormalEquations(ata, atb, np.einsum("ij,ij->j", arrays[3], arrays[3]), arrays[0].shape[0])
    return total if weights is None else total.with_weights(weights)


@dataclass(frozen=True, eq=False)
class Fit:
    """An estimate. ``theta (p,)`` full parameters (``K theta = theta_base``), ``theta_base (p_b,)``,
    ``std_base (p_b,)`` standard deviations, ``condition_number`` of the weighted base regressor with
    columns scaled to their typical size (``BaseParameters.scale``), ``residual_rms (n,)`` per joint on
    the fitted data, ``sigma2`` the weighted residual variance (about 1 when the weights are
    ``1 / sigma_j^2`` of the actual noise), ``method`` ("wls" or "consistent"), ``cost`` the
    weighted residual sum of squares, ``base_names``, ``poorly_excited`` base parameters the data
    hardly determine (kept near the prior), ``optimality_gap`` (consistent fit) a proven bound on
    how far its minimised cost (with the prior) lies above the optimum of the consistent problem
    (``inf`` if it stopped at its step limit); 0 for the other estimators."""

    theta: FloatArray
    theta_base: FloatArray
    std_base: FloatArray
    condition_number: float
    residual_rms: FloatArray
    sigma2: float
    method: str
    cost: float
    base_names: tuple[str, ...]
    poorly_excited: tuple[str, ...] = ()
    optimality_gap: float = 0.0

    def model(self, model: RobotModel, pset: ParameterSet, *, check: bool = True) -> RobotModel:
        """``model`` with the fitted parameters (:func:`~.parameters.apply_parameters`)."""
        return apply_parameters(model, self.theta, pset, check=check)


@dataclass(frozen=True, eq=False)
class BaseProblem:
    """The weighted normal equations on the base parameters, scaled: ``z = scale * theta_base``."""

    H: FloatArray  # scaled information matrix (with the prior)
    g: FloatArray  # scaled right-hand side (with the prior)
    data_H: FloatArray  # without the prior
    scale: FloatArray
    dof: int  # residual degrees of freedom
    poorly_excited: tuple[str, ...]
    condition_number: float


def scaled_system(
    ne: NormalEquations, base: BaseParameters, nominal: ArrayLike | None, prior_weight: float
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """``A, b`` the base normal equations scaled by ``base.scale`` (``z = scale * theta_base``) and
    ``H, g`` the same with the prior (:func:`base_problem`)."""
    if ne.parameters != len(base.parameter_names):
        raise IdentificationError(
            f"normal equations have {ne.parameters} parameters but the base parameters {len(base.parameter_names)}"
        )
    if not prior_weight >= 0.0:
        raise IdentificationError(f"prior_weight must be >= 0, got {prior_weight!r}")
    if ne.count == 0:
        raise IdentificationError("no data: the normal equations hold no states")
    ix = base.independent
    s = base.scale
    A = ne.ata[np.ix_(ix, ix)] / np.outer(s, s)
    b = ne.atb[ix] / s
    H, g = A.copy(), b.copy()
    if prior_weight > 0.0:
        nom = np.zeros(len(base.parameter_names)) if nominal is None else np.asarray(nominal, dtype=float)
        z0 = s * base.to_base(nom)
        p = prior_information(ne, ix, prior_weight)
        H[np.diag_indices_from(H)] += p
        g += p * z0
    return A, b, H, g


def prior_information(ne: NormalEquations, columns: ArrayLike, prior_weight: float) -> FloatArray:
    """Per base parameter (``columns``: its column), the prior's information: ``prior_weight`` times that
    of the data set with the column excited at its typical size (scaled to unit RMS, uncorrelated) in
    the rows of the ``m`` joints whose torque it acts on, each weighted as the least weighted of them:
    ``count * m * min_j w_j`` (``count * sum_j w_j`` when the weights are equal; every joint for a
    column the data never excite). With the largest weight instead, the joint fitted most closely would
    set the prior of every parameter it shares: on a noise-free recording one joint's ``w_j`` can be
    10^3 times another's, and the prior would then outweigh the data of the other joint."""
    present = np.diagonal(ne.ata_joint, axis1=1, axis2=2)[:, np.asarray(columns, dtype=np.intp)] > 0.0  # (n, k)
    weights = np.asarray(ne.weights, dtype=float)
    acting = np.where(present.any(axis=0), present, True)  # a column in no joint's rows: every joint
    least = np.min(np.where(acting, weights[:, None], np.inf), axis=0)
    return np.asarray(prior_weight * ne.count * acting.sum(axis=0) * least)


def base_problem(
    ne: NormalEquations, base: BaseParameters, nominal: ArrayLike | None, prior_weight: float
) -> BaseProblem:
    A, _, H, g = scaled_system(ne, base, nominal, prior_weight)
    eig, vec = np.linalg.eigh(A)
    top = max(float(eig[-1]), 1e-300)
    weak = eig < POORLY_EXCITED * top
    poorly = sorted({base.names[int(np.argmax(np.abs(vec[:, k])))] for k in np.flatnonzero(weak)})
    cond = float(np.sqrt(top / eig[0])) if eig[0] > 0 else float("inf")
    dof = max(int(np.sum(ne.rows)) - len(base.independent), 1)
    return BaseProblem(H, g, A, base.scale, dof, tuple(poorly), cond)


def least_squares_objective(
    ne: NormalEquations, base: BaseParameters, nominal: ArrayLike | None, prior_weight: float
) -> float:
    """The minimum of the weighted least-squares cost plus the prior of :func:`fit_least_squares`, up to a
    constant that does not depend on the data (``btb - g^T H^-1 g``; one Cholesky factorisation): for
    comparing models of the same data, e.g. a search over a nonlinear parameter."""
    _, _, H, g = scaled_system(ne, base, nominal, prior_weight)
    try:
        factor = scipy.linalg.cho_factor(H)
    except np.linalg.LinAlgError:
        return float("inf")
    return float(ne.btb - g @ scipy.linalg.cho_solve(factor, g))


def fit_least_squares(
    ne: NormalEquations, base: BaseParameters, nominal: ArrayLike | None = None, prior_weight: float = 0.0
) -> Fit:
    """Weighted least squares on the base parameters (weights ``ne.weights``), optionally pulled toward
    ``nominal``'s base parameters with ``prior_weight`` (relative information, e.g. ``1e-4``), which
    fixes directions the data do not excite. Without a prior, unexcited directions raise
    :class:`IdentificationError` naming the base parameters concerned. Whether the data excite a direction
    is a property of the motion, judged with every joint weighed alike: the weights ``1 / sigma_j^2`` of a
    nearly noise-free recording span up to twelve decades (a joint its model fits to the noise floor beside
    one it does not), and the weighted information's eigenvalue ratio would call a determined joint
    unexcited."""
    prob = base_problem(ne, base, nominal, prior_weight)
    if prob.poorly_excited and prior_weight == 0.0:
        alike = (
            prob if np.all(ne.weights == 1.0) else base_problem(ne.with_weights(np.ones(ne.joints)), base, None, 0.0)
        )
        if alike.poorly_excited:
            raise IdentificationError(
                "the data do not excite the base parameters " + ", ".join(alike.poorly_excited) + " (condition "
                f"number {alike.condition_number:.3g}); record motion that moves these joints, or pass a prior_weight"
            )
    try:
        L = np.linalg.cholesky(prob.H)
    except np.linalg.LinAlgError:
        raise IdentificationError(
            f"the normal equations are singular (condition number {prob.condition_number:.3g}); "
            "record more varied motion or pass a larger prior_weight"
        ) from None
    z = np.linalg.solve(L.T, np.linalg.solve(L, prob.g))
    theta_base = z / prob.scale
    theta = base.to_full(theta_base, nominal)
    return finish(ne, base, prob, theta, theta_base, "wls")


def finish(
    ne: NormalEquations,
    base: BaseParameters,
    prob: BaseProblem,
    theta: FloatArray,
    theta_base: FloatArray,
    method: str,
    *,
    optimality_gap: float = 0.0,
) -> Fit:
    """The statistics of an estimate (shared by the estimators)."""
    rss = ne.residual_sum(theta)
    cost = float(ne.weights @ rss)
    sigma2 = cost / prob.dof
    cov = sigma2 * np.linalg.inv(prob.H)
    std = np.sqrt(np.maximum(np.diag(cov), 0.0)) / prob.scale
    return Fit(
        theta=theta,
        theta_base=theta_base,
        std_base=std,
        condition_number=prob.condition_number,
        residual_rms=np.sqrt(rss / np.maximum(ne.rows, 1.0)),
        sigma2=sigma2,
        method=method,
        cost=cost,
        base_names=base.names,
        poorly_excited=prob.poorly_excited,
        optimality_gap=optimality_gap,
    )
