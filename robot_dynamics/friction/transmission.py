"""Transmission (gearbox) friction from an efficiency curve, Dhanaraj (1990) §3.4, Table 3.2.

``tau_out`` is the torque at the joint (transmission output), ``tau_in`` the input torque referred to
the joint side (the thesis's ``m tau_in``, eq. 3.8: divide by the gear ratio for the motor torque).
``eta = eta(|tau_out| / tau_max)`` is interpolated linearly in the efficiency table (clamped at its
ends; the thesis allows linear or cubic-spline interpolation, Table 3.3), ``tau_B`` is the
break-away (no-load) torque. Table 3.2:

=====  =======================  =========================
case   condition                 input torque
=====  =======================  =========================
1      tau_out > 0, qd > 0       tau_out / eta + tau_B
2      tau_out < 0, qd < 0       tau_out / eta - tau_B
3      tau_out > 0, qd < 0       tau_out * eta - tau_B
4      tau_out < 0, qd > 0       tau_out * eta + tau_B
=====  =======================  =========================

All four are ``tau_in = tau_out + sgn(qd) [tau_B + |tau_out| k]`` with ``k = 1/eta - 1`` when the
transmission drives the load (``tau_out qd > 0``, power flows motor -> joint) and ``k = 1 - eta``
when the load back-drives it (braking). Boundary cases, defined here:

* ``tau_out = 0``, ``qd != 0``: ``tau_in = sgn(qd) tau_B`` (cases 1 and 4 agree, resp. 2 and 3);
* ``qd = 0``: ``tau_in = tau_out``, no transmission friction. At rest the friction is statically
  indeterminate: any input in ``[T-(tau_out), T+(tau_out)]`` holds (``T+/T-`` the qd > 0 / qd < 0
  curves, curve I / II of Fig. 3.5), and ``tau_out`` lies in that interval; this matches Coulomb
  friction at rest being 0. The simulator uses the whole interval (stiction).
* the smooth form multiplies the bracket by ``s(qd)`` (tanh or linear window), continuous in qd and
  in tau_out (it needs ``eta(0) > 0``, checked).

For forward dynamics the relation is inverted in closed form (:meth:`EfficiencyCurve.output_torque`),
which needs ``tau_in`` monotone in ``tau_out``: on every linear segment ``eta = a + k u`` the driving
branch ``u / eta`` increases iff ``a > 0`` and the back-driving branch ``u eta`` iff ``a + 2 k u > 0``;
both are checked when the curve is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.friction.smooth import as_float
from robot_dynamics.model import FloatArray


@dataclass(frozen=True, eq=False)
class EfficiencyCurve:
    """A validated efficiency curve ``eta(u)``, ``u = |tau_out| / tau_max``, with its inverse tables."""

    u: FloatArray
    eta: FloatArray
    _starts: FloatArray = field(repr=False, default_factory=lambda: np.zeros(0))
    _a: FloatArray = field(repr=False, default_factory=lambda: np.zeros(0))
    _k: FloatArray = field(repr=False, default_factory=lambda: np.zeros(0))
    _g: FloatArray = field(repr=False, default_factory=lambda: np.zeros(0))
    _h: FloatArray = field(repr=False, default_factory=lambda: np.zeros(0))

    @staticmethod
    def from_points(points: Sequence[Sequence[float]]) -> EfficiencyCurve:
        """From ``[(tau_out/tau_max, eta), ...]``; ``ValueError`` naming the problem if unusable."""
        try:
            table = np.array(points, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"efficiency: expected a list of [ratio, eta] pairs, got {points!r}") from exc
        if table.ndim != 2 or table.shape[1] != 2 or table.shape[0] < 1:
            raise ValueError(f"efficiency: expected a non-empty list of [ratio, eta] pairs, got {points!r}")
        u, eta = table[:, 0].copy(), table[:, 1].copy()
        if not np.all(np.isfinite(table)):
            raise ValueError("efficiency: values must be finite")
        if np.any(u < 0.0):
            raise ValueError(f"efficiency: ratios tau_out/tau_max must be >= 0, got {u.tolist()}")
        if np.any(np.diff(u) <= 0.0):
            raise ValueError(f"efficiency: ratios must be strictly ascending, got {u.tolist()}")
        if np.any(eta <= 0.0) or np.any(eta > 1.0):
            raise ValueError(f"efficiency: eta must be in (0, 1], got {eta.tolist()}")
        # regions: [0, u0] (eta = eta0), [u_{j-1}, u_j] (segments), [u_last, inf) (eta = eta_last)
        starts = np.concatenate([[0.0], u])
        k = np.zeros(len(u) + 1)
        a = np.empty(len(u) + 1)
        a[0] = eta[0]
        if len(u) > 1:
            k[1:-1] = np.diff(eta) / np.diff(u)
            a[1:-1] = eta[:-1] - k[1:-1] * u[:-1]
        a[-1] = eta[-1]
        if np.any(a <= 0.0):
            bad = int(np.argmax(a <= 0.0)) - 1
            raise ValueError(
                f"efficiency: the segment from ratio {u[bad]:g} to {u[bad + 1]:g} rises too steeply "
                "(its line must cross ratio 0 at a positive efficiency), so tau_out/eta would not increase "
                "with tau_out"
            )
        ends = np.concatenate([u, [np.inf]])
        finite_ends = np.where(np.isfinite(ends), ends, starts)
        if np.any(a + 2.0 * k * starts <= 0.0) or np.any(a + 2.0 * k * finite_ends <= 0.0):
            raise ValueError("efficiency: the curve falls too steeply: tau_out*eta would not increase with tau_out")
        eta_starts = np.interp(starts, u, eta)
        for arr in (u, eta, starts, a, k):
            arr.setflags(write=False)
        return EfficiencyCurve(u, eta, starts, a, k, starts / eta_starts, starts * eta_starts)

    def __call__(self, ratio: ArrayLike) -> FloatArray:
        """``eta(u)``, linear interpolation, clamped outside the table."""
        return np.interp(as_float(ratio), self.u, self.eta)

    # -- inverses (u >= 0 from y >= 0) ---------------------------------------------------------
    def driving_ratio(self, y: FloatArray) -> FloatArray:
        """``u`` with ``u / eta(u) = y`` (driving branch)."""
        i = np.clip(np.searchsorted(self._g, y, side="right") - 1, 0, len(self._a) - 1)
        a, k = self._a[i], self._k[i]
        return a * y / (1.0 - k * y)

    def backdriving_ratio(self, y: FloatArray) -> FloatArray:
        """``u`` with ``u eta(u) = y`` (back-driven branch)."""
        i = np.clip(np.searchsorted(self._h, y, side="right") - 1, 0, len(self._a) - 1)
        a, k = self._a[i], self._k[i]
        return 2.0 * y / (a + np.sqrt(a * a + 4.0 * k * y))


def transmission_friction(
    tau_out: ArrayLike,
    qd: ArrayLike,
    s: ArrayLike,
    curve: EfficiencyCurve,
    breakaway: float,
    max_torque: float,
) -> FloatArray:
    """``tau_in - tau_out = s [tau_B + |tau_out| k]`` (Table 3.2), ``k`` by the power-flow direction.

    ``s`` is the direction ``sgn(qd)`` (or its smooth substitute); ``qd`` only decides driving
    (``tau_out qd > 0``: ``k = 1/eta - 1``) vs back-driven (``k = 1 - eta``).
    """
    out = as_float(tau_out)
    mag = np.abs(out)
    eta = curve(mag / max_torque)
    driving = out * as_float(qd) > 0.0
    loss = breakaway + mag * np.where(driving, 1.0 / eta - 1.0, 1.0 - eta)
    return as_float(s) * loss


def input_torque(
    tau_out: ArrayLike,
    qd: ArrayLike,
    s: ArrayLike,
    curve: EfficiencyCurve,
    breakaway: float,
    max_torque: float,
) -> FloatArray:
    """Table 3.2: the input torque (joint side) for output torque ``tau_out`` moving with ``qd``."""
    out = as_float(tau_out)
    return out + transmission_friction(out, qd, s, curve, breakaway, max_torque)


def output_torque(
    tau_in: ArrayLike, sigma: ArrayLike, curve: EfficiencyCurve, breakaway: float, max_torque: float
) -> FloatArray:
    """Inverse of Table 3.2 for a direction of motion ``sigma = +1/-1``: the output of input ``tau_in``.

    ``T-(x) = -T+(-x)``, so ``T-^{-1}(y) = -T+^{-1}(-y)``. On the ``qd > 0`` curve: ``y >= tau_B``
    drives (``x/eta + tau_B = y``), ``y < tau_B`` is back-driven (``x eta + tau_B = y``, ``x < 0``).
    """
    sg = as_float(sigma)
    y = sg * as_float(tau_in)
    excess = (y - breakaway) / max_torque
    drive = excess >= 0.0
    u_drive = curve.driving_ratio(np.where(drive, excess, 0.0))
    u_back = curve.backdriving_ratio(np.where(drive, 0.0, -excess))
    return sg * max_torque * np.where(drive, u_drive, -u_back)
