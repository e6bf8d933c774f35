"""Base (identifiable) parameters: which combinations of theta the joint torques determine.

Numerical method of Gautier ("Numerical calculation of the base inertial parameters of robots",
1991; Gautier & Khalil 1990; Khalil & Dombre 2002, section 12.3.3 and appendix 5): the regressor is
stacked at random states (joint positions within the limits, random velocities and accelerations,
the model's gravity) and its columns scaled to unit RMS. Columns whose RMS is below ``1e-10`` of the
largest have no effect at all (``unidentifiable``: e.g. the mass of a link whose frame origin lies on
the first, vertical, joint axis). Of the rest, a QR decomposition with column pivoting
(``scipy.linalg.qr(pivoting=True)``) gives the rank ``r``: the number of ``|R_kk| > tol |R_00|``
(default ``tol = 1e-8``; genuinely dependent columns leave ``~1e-15``, weakly identifiable ones
``>= 1e-4`` for link offsets of millimetres).

Which ``r`` parameters are kept (independent) follows Khalil's grouping rules: a QR without pivoting
in a preferred column order keeps a column unless it is a combination of the columns before it. The
order is friction (Fv, Fc, Fa), then every link's ``Izz, Ixx, Ixy, Ixz, Iyz, mx, my``, the armature,
every link's ``Iyy, mz, m``, and the offset last; so ``Iyy_j, mz_j, m_j`` regroup into the parameters
of the links before them (``IxxR_j = Ixx_j - Iyy_j``, ``IzzR_j = Izz_j + Iyy_j + ...``) and the
armature of the first joint into ``IzzR1``. The dependent columns are then solved for,
``Y_dep = Y_ind B``, so ``Y theta = Y_ind (theta_ind + B theta_dep)``: the base parameters are
``theta_base = K theta`` with ``K = [I | B]`` (columns in theta order). A kept parameter that
absorbs others is named with ``R`` before its joint number (Khalil's ``ZZR1``): ``IzzR1``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray

from robot_dynamics.model import FloatArray, RobotModel

from .parameters import IdentificationError, ParameterSet
from .regressor import regressor

ZERO_COLUMN = 1e-10  # column RMS below this fraction of the largest: the parameter has no effect
DROP = 1e-9  # coefficients whose scaled size is below this are rounding residue


@dataclass(frozen=True, eq=False)
class BaseParameters:
    """The identifiable combinations ``theta_base = K theta`` of a parameter set for one model.

    ``independent`` indices into theta of the kept parameters (row order of K), ``K (p_b, p)``,
    ``names`` and ``expressions`` (``"IxxR2 = Ixx2 - Iyy2 + 0.186449*m3"``, coefficients to 6
    significant digits), ``rank = p_b``, ``unidentifiable`` names of parameters without any effect,
    ``dependent`` names of the parameters regrouped into others, ``scale (p_b,)`` the RMS of each
    base column of the regressor at the random states (a typical magnitude, for priors and the
    condition number), ``scale_full (p,)`` the same per parameter.
    """

    parameter_names: tuple[str, ...]
    independent: NDArray[np.intp]
    K: FloatArray
    names: tuple[str, ...]
    expressions: tuple[str, ...]
    unidentifiable: tuple[str, ...]
    dependent: tuple[str, ...]
    scale: FloatArray
    scale_full: FloatArray
    tol: float

    @property
    def rank(self) -> int:
        return len(self.independent)

    def to_base(self, theta: ArrayLike) -> FloatArray:
        """``K theta`` (also for a stack of theta vectors ``(..., p)``)."""
        return np.asarray(theta, dtype=float) @ self.K.T

    def to_full(self, theta_base: ArrayLike, nominal: ArrayLike | None = None) -> FloatArray:
        """A full theta with ``K theta = theta_base``: the one nearest ``nominal`` (default 0) in the
        norm scaled by ``scale_full`` (parameters without effect stay at ``nominal``)."""
        tb = np.asarray(theta_base, dtype=float)
        p = len(self.parameter_names)
        nom = np.zeros(p) if nominal is None else np.asarray(nominal, dtype=float)
        if tb.shape != (self.rank,) or nom.shape != (p,):
            raise IdentificationError(
                f"to_full: expected theta_base ({self.rank},) and nominal ({p},), got {tb.shape} and {nom.shape}"
            )
        inv, solve = self._minimum_norm()
        return nom + inv * (solve @ (tb - self.K @ nom))

    def _minimum_norm(self) -> tuple[FloatArray, FloatArray]:
        """The scaling of :meth:`to_full` and the pseudo-inverse of the scaled ``K`` (computed once:
        every fit, and every cross-validation fit, maps its base parameters back)."""
        cached = self.__dict__.get("_pinv")
        if cached is None:
            inv = np.where(self.scale_full > 0.0, 1.0 / np.where(self.scale_full > 0.0, self.scale_full, 1.0), 0.0)
            cached = (inv, np.linalg.pinv(self.K * inv))
            object.__setattr__(self, "_pinv", cached)
        return cached

    def describe(self) -> str:
        """One line per base parameter, plus the parameters without effect."""
        lines = list(self.expressions)
        if self.unidentifiable:
            lines.append("no effect on the torques: " + ", ".join(self.unidentifiable))
        return "\n".join(lines)


def _preference(names: tuple[str, ...]) -> list[int]:
    """Column order for the greedy selection (module docstring)."""
    groups: list[tuple[str, ...]] = [
        ("Fv", "Fc", "Fa"),
        ("Izz", "Ixx", "Ixy", "Ixz", "Iyz", "mx", "my"),
        ("Ia",),
        ("Iyy", "mz", "m"),
        ("Fo",),
    ]
    kind_of = [re.match(r"[A-Za-z]+", n).group(0) for n in names]  # type: ignore[union-attr]
    order: list[int] = []
    for group in groups:
        for k in range(len(names)):
            if kind_of[k] in group:
                order.append(k)
    return order


def _regrouped_name(name: str) -> str:
    m = re.fullmatch(r"([A-Za-z]+)(\d+)", name)
    return f"{m.group(1)}R{m.group(2)}" if m else f"{name}R"


def _term(coefficient: float, name: str, first: bool) -> str:
    sign = "-" if coefficient < 0 else "+"
    mag = abs(coefficient)
    body = name if abs(mag - 1.0) < 5e-7 else f"{mag:.6g}*{name}"
    if first:
        return body if sign == "+" else f"-{body}"
    return f" {sign} {body}"


def random_states(
    model: RobotModel, samples: int, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Positions uniform within finite limits (else +-pi rad, +-1 m), velocities +-2, accelerations +-5."""
    n = model.dof
    lower = np.array([j.limits.lower for j in model.joints], dtype=float)
    upper = np.array([j.limits.upper for j in model.joints], dtype=float)
    span = np.where(model.arrays.prismatic, 1.0, np.pi)
    lower = np.where(np.isfinite(lower), lower, -span)
    upper = np.where(np.isfinite(upper), upper, span)
    q = rng.uniform(lower, upper, (samples, n))
    return q, rng.uniform(-2.0, 2.0, (samples, n)), rng.uniform(-5.0, 5.0, (samples, n))


def base_parameters(
    model: RobotModel,
    pset: ParameterSet | None = None,
    samples: int = 2000,
    rng: np.random.Generator | int | None = None,
    tol: float = 1e-8,
) -> BaseParameters:
    """The base parameters of ``pset`` for ``model`` (module docstring); deterministic for a given ``rng``."""
    pset = pset or ParameterSet()
    names = pset.names(model)
    gen = np.random.default_rng(0 if rng is None else rng)
    q, qd, qdd = random_states(model, samples, gen)
    Y = regressor(model, q, qd, qdd, pset).reshape(-1, len(names))
    scale_full = np.sqrt(np.mean(Y * Y, axis=0))
    effective = scale_full > ZERO_COLUMN * float(scale_full.max(initial=0.0))
    scale_full = np.where(effective, scale_full, 0.0)
    if not effective.any():
        raise IdentificationError(f"no parameter of {names} has any effect on the joint torques of {model.name!r}")
    cols = np.flatnonzero(effective)
    Wn = Y[:, cols] / scale_full[cols]
    R = scipy.linalg.qr(Wn, mode="r", pivoting=True)[0]
    diag = np.abs(np.diag(R))
    rank = int(np.sum(diag > tol * diag[0]))

    # greedy selection in the preferred order: keep a column unless it depends on the kept ones
    order = [k for k in _preference(names) if effective[k]]
    Wo = Y[:, order] / scale_full[order]
    Ro = scipy.linalg.qr(Wo, mode="r")[0]
    kept = [order[k] for k in range(len(order)) if abs(Ro[k, k]) > tol * diag[0]]
    if len(kept) != rank:  # borderline numerics: fall back to the pivoted QR's choice
        piv = scipy.linalg.qr(Wn, mode="r", pivoting=True)[1]
        kept = sorted(int(cols[k]) for k in piv[:rank])
    independent = np.array(sorted(kept), dtype=np.intp)
    dependent = np.array([k for k in cols if k not in set(kept)], dtype=np.intp)

    # Y_dep = Y_ind B, solved on the scaled columns
    K = np.zeros((rank, len(names)))
    K[np.arange(rank), independent] = 1.0
    if len(dependent):
        Yi = Y[:, independent] / scale_full[independent]
        Yd = Y[:, dependent] / scale_full[dependent]
        Bn = np.linalg.lstsq(Yi, Yd, rcond=None)[0]
        misfit = np.abs(Yi @ Bn - Yd).max() / max(1.0, float(np.abs(Yd).max()))
        if misfit > 1e3 * tol:
            raise IdentificationError(f"base parameters of {model.name!r}: regrouping residual {misfit:.3g}")
        Bn[np.abs(Bn) < DROP] = 0.0
        K[:, dependent] = Bn * scale_full[dependent] / scale_full[independent][:, None]

    base_names, expressions = [], []
    for r, k in enumerate(independent):
        regrouped = [(K[r, d], names[d]) for d in dependent if K[r, d] != 0.0]
        label = _regrouped_name(names[k]) if regrouped else names[k]
        base_names.append(label)
        text = f"{label} = {names[k]}" + "".join(_term(c, nm, False) for c, nm in regrouped)
        expressions.append(text)
    return BaseParameters(
        parameter_names=names,
        independent=independent,
        K=K,
        names=tuple(base_names),
        expressions=tuple(expressions),
        unidentifiable=tuple(names[k] for k in range(len(names)) if not effective[k]),
        dependent=tuple(names[k] for k in dependent),
        scale=scale_full[independent],
        scale_full=scale_full,
        tol=tol,
    )
