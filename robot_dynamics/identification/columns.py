"""Families of per-joint columns on a grid of one nonlinear parameter: the sums a separable fit needs.

A friction term ``c_j S_j(qd_j; a)`` is linear in its level ``c_j`` and nonlinear in one parameter ``a``
per joint; for fixed ``a`` the whole model is linear (separable least squares, Golub & Pereyra 1973).
For a grid of ``a`` values the reduction sums, per joint and grid value, ``Y_j^T S_j``, ``S_j^T S_j`` and
``S_j^T tau_j`` (:class:`ColumnSums`) alongside the normal equations, over the same rows, so a search over
``a`` never touches the data again. Two families (``shape``):

* ``"stribeck"``: ``S = s exp(-|qd| / eps)``, the Stribeck excess over the Coulomb level (Schilling
  eq. 6-3-3, :mod:`.stribeck`), ``s`` the Coulomb direction of the parameter set;
* ``"coulomb"``: ``S = tanh(qd / w)``, the Coulomb column itself with a smoothing width ``w`` of its own
  per joint (:func:`ColumnSums.replaced` puts it in place of the parameter set's Coulomb column): a
  friction that saturates over a range of velocities rather than at once, as a physics engine's
  constraint friction (MuJoCo's ``frictionloss``) and real pre-sliding behave.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from robot_dynamics.model import FloatArray

from .estimate import NormalEquations
from .parameters import ParameterSet

SHAPES = ("stribeck", "coulomb")


def family_columns(shape: str, s: FloatArray, v: FloatArray, grid: FloatArray) -> FloatArray:
    """``(N, m)``: one joint's column for each grid value (module docstring)."""
    if shape == "stribeck":
        return s[:, None] * np.exp(-np.abs(v)[:, None] / grid)
    return np.tanh(v[:, None] / grid)


@dataclass(frozen=True, eq=False)
class ColumnSums:
    """The sums of one column family (module docstring): ``grids (n, m)``, ``cross (n, p, m)`` =
    ``sum Y_j^T S_j``, ``gram (n, m)`` = ``sum S_j^2`` (the columns of different joints never meet), ``rhs
    (n, m)`` = ``sum S_j tau_j``. Data sets combine by addition."""

    shape: str
    grids: FloatArray
    cross: FloatArray
    gram: FloatArray
    rhs: FloatArray

    def __add__(self, other: ColumnSums) -> ColumnSums:
        return replace(self, cross=self.cross + other.cross, gram=self.gram + other.gram, rhs=self.rhs + other.rhs)

    def __sub__(self, other: ColumnSums) -> ColumnSums:
        return replace(self, cross=self.cross - other.cross, gram=self.gram - other.gram, rhs=self.rhs - other.rhs)

    def scaled(self, weights: ArrayLike) -> ColumnSums:
        """Joint ``j``'s sums times ``weights[j]`` (0 or 1: a joint's rows left out or kept)."""
        w = np.asarray(weights, dtype=float)
        return replace(
            self, cross=w[:, None, None] * self.cross, gram=w[:, None] * self.gram, rhs=w[:, None] * self.rhs
        )

    def select(self, keep: ArrayLike, fixed: ArrayLike) -> ColumnSums:
        """The sums for the columns ``keep``, the others held at ``fixed`` (as :meth:`NormalEquations.select`)."""
        k = np.asarray(keep, dtype=np.intp)
        d = np.setdiff1d(np.arange(self.cross.shape[1]), k)
        x = np.asarray(fixed, dtype=float)[d]
        return replace(self, cross=self.cross[:, k], rhs=self.rhs - np.einsum("jdm,d->jm", self.cross[:, d], x))

    def pick(self, values: ArrayLike) -> list[int]:
        """Per joint the index of the grid value nearest ``values[j]`` (log scale)."""
        v = np.asarray(values, dtype=float)
        return [int(np.argmin(np.abs(np.log(self.grids[j] / v[j])))) for j in range(self.grids.shape[0])]

    def known(self, ne: NormalEquations, pick: list[int], level: ArrayLike) -> NormalEquations:
        """``ne`` (the same rows) with the torque ``c_j S_j`` (grid value ``pick[j]``) moved to the known side:
        the normal equations of ``tau - c S``, whose residual sum is ``|tau_j - Y_j theta - c_j S_j|^2``."""
        cross = np.array([self.cross[j][:, k] for j, k in enumerate(pick)])  # (n, p): sum Y_j^T S_j
        gram = np.array([self.gram[j, k] for j, k in enumerate(pick)])
        rhs = np.array([self.rhs[j, k] for j, k in enumerate(pick)])
        c = np.asarray(level, dtype=float)
        return replace(
            ne,
            atb_joint=ne.atb_joint - c[:, None] * cross,
            btb_joint=np.maximum(ne.btb_joint - 2.0 * c * rhs + c**2 * gram, 0.0),
        )

    def replaced(self, ne: NormalEquations, columns: ArrayLike, pick: list[int]) -> NormalEquations:
        """``ne`` (the same rows) with joint ``j``'s parameter column ``columns[j]`` replaced by the family's
        column at grid value ``pick[j]`` (a joint's friction columns appear in its own rows only)."""
        ata, atb = ne.ata_joint.copy(), ne.atb_joint.copy()
        for j, (c, k) in enumerate(zip(np.asarray(columns, dtype=np.intp), pick, strict=True)):
            cross = self.cross[j][:, k].copy()
            cross[c] = self.gram[j, k]
            ata[j][c, :] = cross
            ata[j][:, c] = cross
            atb[j][c] = self.rhs[j, k]
        return replace(ne, ata_joint=ata, atb_joint=atb)

    @staticmethod
    def empty(shape: str, grids: FloatArray, parameters: int) -> ColumnSums:
        n, m = grids.shape
        return ColumnSums(shape, grids, np.zeros((n, parameters, m)), np.zeros((n, m)), np.zeros((n, m)))

    def add_rows(
        self, j: int, cols: NDArray[np.intp], A: FloatArray, s: FloatArray, v: FloatArray, b: FloatArray
    ) -> None:
        """Adds joint ``j``'s rows ``A (N, c)`` (theta columns ``cols``), direction ``s``, velocity ``v``
        and right-hand side ``b`` (N,) (in place: used while reducing one chunk)."""
        S = family_columns(self.shape, s, v, self.grids[j])
        self.cross[j][cols] += A.T @ S
        self.gram[j] += np.einsum("km,km->m", S, S)
        self.rhs[j] += b @ S


def direction(pset: ParameterSet, qd: FloatArray) -> FloatArray:
    """The Coulomb direction ``s`` of the parameter set: ``tanh(qd / v_s)`` or ``sgn(qd)``."""
    return np.tanh(qd / pset.coulomb_velocity) if pset.coulomb == "tanh" else np.sign(qd)
