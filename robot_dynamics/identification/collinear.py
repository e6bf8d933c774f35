"""Offsets the data cannot tell apart from the other parameters of their joint, held at zero.

The offset ``Fo_j`` (a constant torque in joint ``j``'s rows: a torque sensor's bias) is fitted but not
deployed. When some other torque of the joint is nearly constant over the recording too — the
shoulder's gravity torque while the arm swings a little about one posture — the offset's column is
nearly a combination of the others, and how the constant torque is shared between the offset and the
other parameters (the gravity's mass moments) is decided by noise and model error: what the offset
takes of the gravity torque is missing from the deployed model.

How nearly, is the offset's **variance inflation factor** (Belsley, Kuh & Welsch, "Regression
Diagnostics", 1980, section 3.2; on uncentred columns, as they recommend for a model with a constant
column):

    VIF_j = H_kk (H^-1)_kk = 1 / (1 - R_j^2),

``H`` the weighted information matrix of the base parameters (``sum_j Y_j^T Y_j / sigma_j^2``), ``k`` the
offset's base parameter, ``R_j^2`` the uncentred coefficient of determination of the offset's column
regressed on every other column (weighted). It is 1 for a column orthogonal to the others, and the
offset's variance is ``VIF_j`` times that of the mean of the joint's residual: ``var(Fo_j) = VIF_j
sigma_j^2 / N_j``. It depends on the motion alone, not on the torques.

An offset is **held at zero** (:func:`hold_offsets`) where the data can neither separate it from the
joint's other parameters nor tell it from zero:

    held_j  <=>  VIF_j > VIF_HOLD  and  |Fo_j| < T_HOLD s_j,    s_j = sigma_j sqrt(VIF_j / N_j)

(``Fo_j`` the weighted least-squares estimate, ``s_j`` its standard error). Holding a parameter at 0
lowers the mean squared error of every linear function of the estimate when its true value is within
one standard error of 0 (Toro-Vizcarrondo & Wallace, "A test of the mean square error criterion for
restrictions in linear regression", JASA 63, 1968); but ``s_j`` counts the noise only, and over a
collinear direction the model's own error moves the estimate further: on a simulated UR5 with
motor-current torques (0.6 N·m noise, offsets of about 0.1 N·m) the shoulder's offset came out between
-0.89 and +0.80 N·m (``s_j`` 0.38) as the friction law and the effort's pairing changed on one
recording, its deployed fit at +0.80 (``|t|`` 2.1). ``T_HOLD = 3`` holds those; an offset the data do
determine is far beyond it (a noise-free recording's: ``|t|`` > 10^3; the identification tests'
offsets of up to 20 times the noise). ``VIF_HOLD = 10``, the usual bound beyond which a column counts
as collinear (Belsley, Kuh & Welsch, ibid.; Marquardt 1970), keeps a well-separated offset (the
first joint's, about a vertical axis: VIF 1.1) out of the rule; the UR5 shoulder's is 10^3 to 10^4
on every recording measured, short well-excited test motions included, so the VIF alone cannot decide.

The held column is made orthogonal to the others and its right-hand side zero, so its estimate is 0
and every other parameter is the estimate without it: the constant torque the offset would have taken
goes to the parameters that are deployed (and, where the true offset is not 0, the bias with it: at
most ``T_HOLD s_j`` by the rule).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.model import FloatArray

from .base import BaseParameters
from .estimate import Fit, NormalEquations

VIF_HOLD = 10.0  # an offset more collinear than this with its joint's other columns may be held
T_HOLD = 3.0  # ... when its estimate is within this many standard errors of zero


def offset_vif(ne: NormalEquations, base: BaseParameters, offsets: NDArray[np.intp]) -> FloatArray:
    """Per joint the variance inflation factor of its offset (module docstring) in the weighted normal
    equations ``ne``; ``offsets[j]`` the offset's column in theta (-1: none, or not a base parameter of
    its own: NaN). ``inf`` where the information matrix is singular."""
    vif = np.full(len(offsets), np.nan)
    where = {int(c): k for k, c in enumerate(base.independent)}
    ks = [where.get(int(c), -1) for c in offsets]
    if all(k < 0 for k in ks):
        return vif
    ix = base.independent
    H = ne.ata[np.ix_(ix, ix)] / np.outer(base.scale, base.scale)  # the VIF does not depend on the scale
    try:
        inverse_diagonal = np.diag(np.linalg.inv(H))
        singular = not np.all(np.isfinite(inverse_diagonal))
    except np.linalg.LinAlgError:
        singular = True
    for j, k in enumerate(ks):
        if k >= 0:
            vif[j] = np.inf if singular else max(float(H[k, k] * inverse_diagonal[k]), 1.0)
    return vif


def held_offsets(vif: FloatArray, estimate: FloatArray, std: FloatArray) -> NDArray[np.bool_]:
    """Per joint whether its offset is held at zero (module docstring) from its variance inflation factor
    ``vif``, least-squares ``estimate`` and standard error ``std`` (NaN: no offset, not held)."""
    v, x, s = (np.asarray(a, dtype=float) for a in (vif, estimate, std))
    with np.errstate(invalid="ignore"):
        return np.asarray((v > VIF_HOLD) & (np.abs(x) < T_HOLD * s), dtype=bool)


def offset_estimates(fit: Fit, base: BaseParameters, offsets: NDArray[np.intp]) -> tuple[FloatArray, FloatArray]:
    """Per joint the offset's estimate and standard error in ``fit`` (NaN where it has none of its own)."""
    where = {int(c): k for k, c in enumerate(base.independent)}
    estimate, std = np.full(len(offsets), np.nan), np.full(len(offsets), np.nan)
    for j, c in enumerate(offsets):
        k = where.get(int(c), -1)
        if k >= 0:
            estimate[j], std[j] = fit.theta[c], fit.std_base[k]
    return estimate, std


def hold_offsets(ne: NormalEquations, offsets: NDArray[np.intp], held: NDArray[np.bool_]) -> NormalEquations:
    """``ne`` with each held offset's column orthogonal to the others and its right-hand side 0 (its
    diagonal kept): the estimate puts the offset at 0 and fits the rest without it. The residual of any
    theta with those offsets at 0 is unchanged."""
    ata, atb = ne.ata_joint.copy(), ne.atb_joint.copy()
    for c in np.asarray(offsets)[np.asarray(held, dtype=bool)]:
        diagonal = ata[:, c, c].copy()
        ata[:, c, :] = 0.0
        ata[:, :, c] = 0.0
        ata[:, c, c] = diagonal
        atb[:, c] = 0.0
    return NormalEquations(ata, atb, ne.btb_joint, ne.count, ne.weights, ne.rows)
