"""How friction reverses: each joint's Coulomb width (and timing) from the rows the fit left out.

The fit uses only the rows where a joint moves faster than its reversal velocity (:mod:`.samples`,
step 5): there friction is a law of velocity and the parameters are linear. What those rows cannot
say is how sharply the Coulomb term changes sign at a reversal: ``tanh(qd / w)`` with the default
``w = 0.01`` rad/s is already saturated at the reversal velocity, so every ``w`` below it fits them
alike. The feed-forward, though, crosses every reversal, and a width wider than the arm's own
under-compensates friction over the whole band (half the Coulomb level at ``qd = w / 2``).

So, after the fit, the rows below the reversal velocity are read again and, joint by joint, the width
``w_j`` that explains them best is chosen on a grid (no wider than a third of the reversal velocity,
or the fitted width if that is wider, so that the fitted rows keep their friction), with everything
else the fit found held:

    e_j = tau_j - tau_fit,j(q, qd, qdd) + Fc_j s(qd_j)
    (w_j, l_j) = argmin sum over the joint's slow rows of (e_j - Fc_j s_k((qd_j + l_j qdd_j) / w_j))^2

for each of the two direction functions ``s_k`` (:mod:`robot_dynamics.friction.smooth`): ``tanh`` and
the ``linear`` window ``clip(x, -1, 1)``. The one with the smaller sum over all joints becomes the
model's ``smooth_kind``. A soft friction constraint (MuJoCo's ``frictionloss``) is the linear window
exactly (its force is proportional to the velocity it removes until it reaches the friction level);
a friction that rounds off into sliding is closer to tanh.

``l_j`` (s) is the reversal's timing: a friction that changes sign ahead of the velocity (``l > 0``:
a physics engine's constraint friction, whose soft constraint drives the velocity to zero with a
time constant, MuJoCo's ``1 / b``), or behind it (``l < 0``: pre-sliding, the lag of a LuGre-like
bristle). A width fitted with the timing held at zero widens to hedge the wrong timing; fitted
together, the width is the reversal's own sharpness. The width and the direction function go into
the identified model (``smoothing_velocity`` and ``smooth_kind``, used by every node's smooth
friction); the timing is reported (the nodes evaluate friction at the velocity, without it).

Rows where a joint stands (``|qd| < v_min`` and ``|qdd| < a_min``) say nothing about the width (held
friction is any torque up to the static level) and are left out; at most :data:`MAX_ROWS` rows per
joint are used (evenly spaced).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.dynamics.inverse import inverse_dynamics
from robot_dynamics.friction.combine import friction_torques
from robot_dynamics.model import FloatArray, RobotModel

from .friction_laws import with_coulomb_widths
from .samples import BagTask, training_series

WIDTHS = 0.01 * 2.0 ** np.arange(-5.0, 2.6, 0.25)  # rad/s or m/s: 0.3 mrad/s to 0.057 rad/s
SATURATED = {"tanh": 3.0, "linear": 1.0}  # |x| beyond which s(x) is 1 to the fit's eye (tanh(3) = 0.995)
LEADS = 1e-3 * np.arange(-10.0, 20.5, 1.0)  # s
MAX_ROWS = 20_000
STANDING_VELOCITY = 1e-4  # rad/s or m/s
STANDING_ACCELERATION = 1e-2  # rad/s^2 or m/s^2


@dataclass(frozen=True)
class ReversalFit:
    """Per joint: the chosen ``width`` and ``lead`` (s), the rows used, the RMS (N m or N) of the slow
    rows' torque error with the model's width and direction function and no lead (``rms_before``) and
    with the chosen ones; the direction function ``shape`` chosen for all joints, and the sum of squared
    errors over all joints' slow rows with each (``costs``)."""

    width: FloatArray
    lead: FloatArray
    rows: FloatArray
    rms_before: FloatArray
    rms_after: FloatArray
    shape: str = "tanh"
    costs: dict[str, float] | None = None

    def apply(self, model: RobotModel) -> RobotModel:
        """``model`` with each joint's Coulomb width set to the chosen one (joints without rows keep theirs)
        and the chosen direction function (unchanged when no joint had rows)."""
        current = [j.friction.smoothing_velocity for j in model.joints]
        widened = with_coulomb_widths(model, np.where(self.rows > 0, self.width, current))
        return widened.with_changes(smooth_kind=self.shape) if (self.rows > 0).any() else widened

    def as_dict(self, names: Sequence[str]) -> list[dict[str, float | str]]:
        return [
            {
                "joint": name,
                "rows": int(self.rows[j]),
                "width": float(self.width[j]),
                "lead_s": float(self.lead[j]),
                "shape": self.shape,
                "rms_before": float(self.rms_before[j]),
                "rms_after": float(self.rms_after[j]),
            }
            for j, name in enumerate(names)
        ]


def slow_rows(qd: FloatArray, qdd: FloatArray, reversal: FloatArray) -> NDArray[np.bool_]:
    """``(N, n)`` bool: the rows of each joint below its reversal velocity, standing still excepted."""
    standing = (np.abs(qd) < STANDING_VELOCITY) & (np.abs(qdd) < STANDING_ACCELERATION)
    return (np.abs(qd) < reversal) & ~standing


def slow_series(task: BagTask) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """``(q, qd, qdd, tau)`` of a bag's training rows where some joint is slow (:func:`slow_rows`), at
    most :data:`MAX_ROWS` per joint: what :func:`fit_reversals` needs, small enough to send back from a
    worker (a task of :func:`.parallel.map_tasks`)."""
    _, q, qd, qdd, tau = training_series(task)
    keep = _at_most(np.flatnonzero(slow_rows(qd, qdd, task.settings.reversal(task.model)).any(axis=1)), task.model.dof)
    return q[keep], qd[keep], qdd[keep], tau[keep]


def _at_most(rows: NDArray[np.intp], dof: int) -> NDArray[np.intp]:
    """``rows``, or :data:`MAX_ROWS` per joint of them evenly spaced when there are more."""
    if rows.size <= MAX_ROWS * dof:
        return rows
    return rows[np.linspace(0, rows.size - 1, MAX_ROWS * dof).astype(np.intp)]


def fit_reversals(
    model: RobotModel,
    series: Sequence[tuple[FloatArray, FloatArray, FloatArray, FloatArray]],
    reversal: FloatArray,
) -> ReversalFit:
    """The module docstring's search for the fitted ``model`` over ``series`` of ``(q, qd, qdd, tau)``
    (each ``(N, n)``, training rows of one data set: all of them, or :func:`slow_series`'s)."""
    n = model.dof
    q, qd, qdd, tau = (np.concatenate([s[k] for s in series]) if series else np.zeros((0, n)) for k in range(4))
    slow = slow_rows(qd, qdd, reversal)
    keep = _at_most(np.flatnonzero(slow.any(axis=1)), n)
    q, qd, qdd, tau, slow = q[keep], qd[keep], qdd[keep], tau[keep], slow[keep]
    coulomb = np.array([j.friction.coulomb[0] for j in model.joints])
    viscous = np.array([j.friction.viscous for j in model.joints])
    widths = np.array([j.friction.smoothing_velocity for j in model.joints])
    rows = slow.sum(axis=0).astype(float)
    if not keep.size:
        zero = np.zeros(n)
        return ReversalFit(widths, zero, rows, zero, zero, model.smooth_kind)
    # everything but friction, then friction at a led velocity (its viscous part at the velocity itself)
    rigid = np.asarray(inverse_dynamics(model, q, qd, qdd, friction=False), dtype=float)
    measured = tau - rigid

    def error(lead: float, width: FloatArray, shape: str) -> FloatArray:
        led = qd + lead * qdd
        model_w = with_coulomb_widths(model, width)
        friction = friction_torques(model_w, led, smooth=True, smooth_kind=shape) + viscous * (qd - led)
        return np.where(slow, measured - friction, 0.0)

    before = error(0.0, widths, model.smooth_kind)
    fits: dict[str, tuple[FloatArray, FloatArray, FloatArray]] = {}  # shape -> per-joint cost, width, lead
    for shape, saturated in SATURATED.items():
        best_cost = np.sum(error(0.0, widths, shape) ** 2, axis=0)  # the model's widths, no lead
        best_width: FloatArray = widths.copy()
        best_lead: FloatArray = np.zeros(n)
        widest = np.maximum(widths, reversal / saturated)  # the fitted rows do not see a width below this
        for lead in LEADS:
            for w in WIDTHS:
                cost = np.sum(error(float(lead), np.full(n, w), shape) ** 2, axis=0)
                better = (cost < best_cost) & (coulomb > 0.0) & (w <= widest)
                best_cost = np.where(better, cost, best_cost)
                best_width = np.where(better, w, best_width).astype(float)
                best_lead = np.where(better, lead, best_lead).astype(float)
        fits[shape] = (best_cost, best_width, best_lead)
    costs = {shape: float(np.sum(c)) for shape, (c, _, _) in fits.items()}
    shape = min(fits, key=lambda s: (costs[s], s != model.smooth_kind))
    best_cost, best_width, best_lead = fits[shape]
    safe = np.maximum(rows, 1.0)
    return ReversalFit(
        best_width,
        best_lead,
        rows,
        np.sqrt(np.sum(before**2, axis=0) / safe),
        np.sqrt(best_cost / safe),
        shape,
        costs,
    )
