"""Accelerations of a fixed-step simulation's recording: each step's change of velocity, unsmoothed.

A fixed-step simulator advances each step ``k -> k + 1`` with the acceleration ``a_k`` its torque
produces at the state ``k`` (semi-implicit Euler: MuJoCo's ``Euler``/``implicitfast`` integrators,
this package's model plant)::

    v_{k+1} = v_k + (t_{k+1} - t_k) a_k        =>   a_k = (v_{k+1} - v_k) / (t_{k+1} - t_k)

so the forward difference of the recorded velocity is that step's acceleration exactly, and the
torque that produced it is the one recorded with the next state (an effort lag of one message). A
Savitzky–Golay derivative (:mod:`.differentiate`) instead fits a smooth curve over its window: it
cannot follow the step-to-step changes of a feedback controller's torque, nor the jump in
acceleration where friction changes sign, and it is centred half a step before ``a_k``. On noise-free
recordings those errors, not noise, are what is left in the fit. Without velocities, the velocity is
the backward difference of the positions (``q_{k+1} = q_k + (t_{k+1} - t_k) v_{k+1}`` in MuJoCo's
semi-implicit step) and the acceleration its forward difference.

No smoothing at all: a measured velocity's noise is amplified by ``1 / (t_{k+1} - t_k)``, so this is
for simulated (noise-free) recordings; ``identify --acceleration auto`` chooses by the fit's residual.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.errors import StateError
from robot_dynamics.model import FloatArray


def step_accelerations(t: ArrayLike, q: ArrayLike, qd: ArrayLike | None = None) -> tuple[FloatArray, FloatArray]:
    """``(qd, qdd)``, each shaped like ``q`` ``(N, n)``: the velocity (``qd`` itself when given) and
    ``qdd[k] = (qd[k+1] - qd[k]) / (t[k+1] - t[k])`` (module docstring). The last sample, which has
    no next step, repeats the one before it; without ``qd`` the first velocity is the first forward
    difference of the position."""
    ts = np.asarray(t, dtype=float).reshape(-1)
    qs = np.asarray(q, dtype=float)
    if qs.shape[:1] != ts.shape or ts.size < 3:
        raise StateError(f"need at least 3 samples with one time each, got {ts.size} times and values {qs.shape}")
    steps = np.diff(ts)
    if not np.all(steps > 0.0):
        raise StateError("sample times must increase strictly")
    step = steps.reshape(-1, *([1] * (qs.ndim - 1)))
    if qd is None:
        velocity = np.empty_like(qs)
        velocity[1:] = np.diff(qs, axis=0) / step
        velocity[0] = velocity[1]
    else:
        velocity = np.array(qd, dtype=float)
        if velocity.shape != qs.shape:
            raise StateError(f"velocity shape {velocity.shape} differs from position shape {qs.shape}")
    acceleration = np.empty_like(velocity)
    acceleration[:-1] = np.diff(velocity, axis=0) / step
    acceleration[-1] = acceleration[-2]
    return velocity, acceleration
