"""The operational-space inertia ``Lambda = (J D^-1 J^T)^-1`` of a task, and what happens where it has none.

Khatib (1987), "A unified approach for motion and force control of robot manipulators: the operational
space formulation", *IEEE J. Robotics and Automation* 3(1): a force ``F`` at a frame accelerates it by
``xdd = Lambda^-1 F + Jdot qd - J D^-1 (h + c)``, so ``F = Lambda xdd* + ...`` commands an acceleration
``xdd*``; ``Lambda`` is the inertia the frame presents to forces along the task's rows (Siciliano et al.
§7.8 call it ``B_A``). :mod:`.task_inertia` computes ``A = J D^-1 J^T`` (6 x 6, positive
semi-definite); a task uses the rows ``S`` of the Jacobian it controls (all six, the three linear or
angular rows, or any selection), whose inertia is ``Lambda_S = (J_S D^-1 J_S^T)^-1 = (A_SS)^-1`` — not a
block of the 6 x 6 ``Lambda``.

**Singular tasks.** ``A_SS`` has no inverse when the frame cannot accelerate in every direction of the
task: fewer joints move the frame than the task has rows (a 5-joint arm and six rows, a link near the
base), or a singular configuration (a stretched elbow, aligned wrist axes). There the exact ``Lambda``
is unbounded. The eigenvalues ``mu_1 <= ... <= mu_k`` of ``A_SS`` (``A_SS = V diag(mu) V^T``) tell:

* by default (``rcond=None``) ``Lambda_S = V diag(1 / mu) V^T`` when ``cond = mu_k / mu_1 <=``
  :data:`MAX_CONDITION` (1e10: the inverse then keeps ~6 significant digits in the worst direction),
  and a :class:`~robot_dynamics.errors.StateError` naming the frame, the condition number and the
  states otherwise — never silent garbage;
* ``rcond`` (0 < rcond < 1) asks for the truncated pseudo-inverse: ``Lambda_S = sum_{mu_i > rcond
  mu_k} v_i v_i^T / mu_i``, zero inertia along the directions in which the frame (nearly) cannot
  accelerate — ``F = Lambda_S xdd*`` then commands no force along them (they are reported by the rank).

The rows mix units (m for the linear, rad for the angular ones; ``A``'s linear block is in 1/kg, its
angular block in 1/(kg m^2)), and so do the condition number and ``rcond``: a task of the linear or
of the angular rows alone has a condition number free of that choice.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import StateError
from ..model import FloatArray

MAX_CONDITION = 1e10
"""The largest condition number of ``J_S D^-1 J_S^T`` that is inverted without ``rcond``."""

RowsName = Literal["all", "linear", "angular"]
ROWS: dict[str, tuple[int, ...]] = {"all": (0, 1, 2, 3, 4, 5), "linear": (0, 1, 2), "angular": (3, 4, 5)}
"""Named row selections of the Jacobian ``[v; w]``."""


def task_rows(rows: RowsName | Sequence[int] | None) -> tuple[int, ...]:
    """The rows of ``[vx, vy, vz, wx, wy, wz]`` a task uses: ``None``/"all", "linear", "angular" or
    distinct indices 0..5 (in the order given)."""
    if rows is None:
        return ROWS["all"]
    if isinstance(rows, str):
        if rows not in ROWS:
            raise StateError(f"rows: expected 'all', 'linear', 'angular' or row indices 0..5, got {rows!r}")
        return ROWS[rows]
    try:
        picked = tuple(int(r) for r in rows)
        exact = all(int(r) == r and not isinstance(r, bool) for r in rows)
    except (TypeError, ValueError):
        raise StateError(f"rows: expected 'all', 'linear', 'angular' or row indices 0..5, got {rows!r}") from None
    if not picked or not exact or len(set(picked)) != len(picked) or not all(0 <= r <= 5 for r in picked):
        raise StateError(f"rows: expected distinct row indices 0..5 (vx vy vz wx wy wz), got {list(rows)!r}")
    return picked


def check_rcond(rcond: float | None) -> float | None:
    """``rcond`` as a float in (0, 1), or ``None``."""
    if rcond is None:
        return None
    value = float(rcond)
    if not (0.0 < value < 1.0):
        raise StateError(f"rcond: expected a number between 0 and 1 (exclusive), or None, got {rcond!r}")
    return value


@dataclass(frozen=True)
class TaskInertia:
    """``inertia`` ``Lambda_S`` ``(..., k, k)``; ``condition`` ``(...)``: ``cond(J_S D^-1 J_S^T)`` (inf where
    singular); ``rank`` ``(...)``: the directions inverted (``k`` unless ``rcond`` dropped some)."""

    inertia: FloatArray
    condition: FloatArray
    rank: np.ndarray


def select_rows(A: FloatArray, rows: tuple[int, ...]) -> FloatArray:
    """``A_SS`` of ``A`` ``(..., 6, 6)`` (slices for the named selections)."""
    if rows == ROWS["all"]:
        return A
    if rows == ROWS["linear"]:
        return A[..., :3, :3]
    if rows == ROWS["angular"]:
        return A[..., 3:, 3:]
    picked = np.asarray(rows)
    return np.asarray(A[..., picked[:, None], picked[None, :]])


def invert_task_inertia(A_S: FloatArray, rcond: float | None, describe: Callable[[], str]) -> TaskInertia:
    """``Lambda_S`` from ``A_S = J_S D^-1 J_S^T`` ``(..., k, k)`` (module doc); ``describe()`` names the frame
    in errors (e.g. ``"link 'panda_link4' of robot 'panda' (4 of 7 joints move it)"``)."""
    mu, V = np.linalg.eigh(A_S)  # ascending
    if mu.ndim == 1:  # one state (a controller's call): floats, few NumPy calls
        top, bottom = float(mu[-1]), float(mu[0])
        condition = top / bottom if bottom > 0.0 else math.inf
        if rcond is None:
            if not condition <= MAX_CONDITION:
                raise StateError(_singular_message(describe(), len(mu), np.asarray(condition), None, top))
            return TaskInertia((V / mu) @ V.T, np.asarray(condition), np.asarray(len(mu)))
        keep = mu > rcond * top
        inverse = np.where(keep, 1.0 / np.where(keep, mu, 1.0), 0.0)
        return TaskInertia((V * inverse) @ V.T, np.asarray(condition), np.asarray(np.count_nonzero(keep)))
    tops = mu[..., -1]
    positive = mu[..., 0] > 0.0
    conditions = np.where(positive, tops / np.where(positive, mu[..., 0], 1.0), np.inf)
    if rcond is None:
        bad = ~(conditions <= MAX_CONDITION)
        if bad.any():
            raise StateError(_singular_message(describe(), mu.shape[-1], conditions, bad, float(np.max(tops))))
        inverse = 1.0 / mu
        rank = np.full(mu.shape[:-1], mu.shape[-1])
    else:
        kept = mu > rcond * tops[..., None]
        inverse = np.where(kept, 1.0 / np.where(kept, mu, 1.0), 0.0)
        rank = np.count_nonzero(kept, axis=-1)
    inertia = np.matmul(V * inverse[..., None, :], np.swapaxes(V, -1, -2))  # V diag(1 / mu) V^T
    return TaskInertia(np.asarray(inertia), np.asarray(conditions), np.asarray(rank))


def _singular_message(describe: str, k: int, condition: FloatArray, bad: np.ndarray | None, top: float) -> str:
    where = ""
    if bad is not None:
        states = np.flatnonzero(bad)
        listed = ", ".join(str(int(s)) for s in states[:5]) + (", ..." if len(states) > 5 else "")
        where = f" at {len(states)} of {bad.size} states ({listed})"
        condition = condition[bad]
    if not top > 0.0:
        cause = "it is zero: no joint moves the frame"
    else:
        cause = (
            f"condition number {float(np.max(condition)):.3g} > {MAX_CONDITION:g}: the frame cannot accelerate in "
            "every direction of the task"
        )
    return (
        f"operational-space inertia of {describe}: J D^-1 J^T ({k} rows) is singular{where}: {cause}; "
        "choose the task's rows (linear, angular or row indices) or ask for the pseudo-inverse (rcond)"
    )


__all__ = ["MAX_CONDITION", "ROWS", "TaskInertia", "check_rcond", "invert_task_inertia", "select_rows", "task_rows"]
