"""The torque sensor's noise, told apart from the rest of the fit's residual.

The fit's residual standard deviation per joint (``IdentificationResult.noise_std``, the weights of the
two-pass fit) holds everything the model leaves: the torque sensor's noise, but also the torque the
controller applies in reaction to the *state's* noise (a PD loop's ``Kd`` times the velocity noise:
real torque, whose acceleration the smoothing derivative filter does not see), the friction model
evaluated at a noisy velocity, and slow model error. On recordings with noisy velocities it came out
1–3 times the torque noise. This module estimates the sensor's share:

1. the residual ``r = tau - tau_model(q, qd, qdd)`` of the identified model on a stretch of training
   rows (:data:`.samples.EXCERPT` states of each data set, differentiated as the fit's rows were);
2. its **high-frequency part**: the second difference ``D r[k] = r[k+1] - 2 r[k] + r[k-1]``. Slow model
   error (the excitation's frequencies, ``f << 1/h``) is attenuated by ``(2 pi f h)^2``; white noise of
   variance ``s^2`` passes with variance ``6 s^2`` (the sum of the squared coefficients 1, -2, 1);
3. what the **state's noise** explains of it removed: per joint, ``D r_j`` is regressed on ``D q_i[k + l]``,
   ``D qd_i[k + l]`` and ``D qdd_i[k + l]`` of every joint ``i`` at lags ``l`` in :data:`LAGS` (a
   controller's reaction to the measured position and velocity is linear in their noise over a step or
   two; so is a viscous term evaluated at the measured velocity, and the inertia times the error the
   derivative filter passes into the estimated acceleration);
4. ``sigma_j = 1.4826 MAD(e_j) / sqrt(6)`` of what is left, over joint ``j``'s rows at or above
   :data:`FAST` (near a reversal the friction law evaluated at a noisy velocity flips with the noise,
   which no linear term explains) (a robust scale: a stick–slip transition
   leaves a rare large step that a mean square would count).

The estimate assumes the torque noise is white (independent from sample to sample) and independent of
the state's noise. A torque signal filtered by its driver (a current loop's low-pass) has less power at
high frequency and reads low; a torque stream delayed against the states leaves its reaction terms
outside the lags and reads high. What is left of the model error at high frequency (an acceleration
jump the filter spreads, a reversal's friction step) also reads as noise. ``noise_std`` remains the
right weight for the fit (it is what the fit leaves); ``sensor_noise_std`` is what to compare a
sensor's data sheet with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.dynamics.inverse import inverse_dynamics
from robot_dynamics.model import FloatArray, RobotModel

from .parameters import ParameterSet
from .samples import PipelineSettings, SampleStatistics
from .spans import derivatives, plan, spans

LAGS = (-1, 0, 1)  # samples: the state's noise at these lags explains part of the residual (step 3)
GAIN = 6.0  # variance of the second difference of unit white noise
MAD_SCALE = 1.4826  # MAD of a normal variable times this is its standard deviation
MIN_ROWS = 50  # fewer differenced rows per joint than this (after the regressors): no estimate
FAST = 0.05  # rad/s or m/s: a joint's rows slower than this (and their neighbours) are not used


def second_difference(x: FloatArray) -> FloatArray:
    """``x[k+1] - 2 x[k] + x[k-1]`` along axis 0 (two rows shorter)."""
    return np.asarray(x[2:] - 2.0 * x[1:-1] + x[:-2])


def _lagged(x: FloatArray, lags: Sequence[int]) -> FloatArray:
    """``(N - 2m, k * len(lags))``: the columns of ``x (N, k)`` at each lag, the ``m = max |lag|`` rows
    at each end dropped."""
    m = max(abs(lag) for lag in lags)
    count = x.shape[0] - 2 * m
    return np.concatenate([x[m + lag : m + lag + count] for lag in lags], axis=1)


def high_frequency_noise(
    residual: FloatArray,
    q: FloatArray,
    qd: FloatArray | None,
    lags: Sequence[int] = LAGS,
    fast: NDArray[np.bool_] | None = None,
    qdd: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Per joint the noise estimate of the module docstring (steps 2–4) from ``residual (N, n)`` and the
    measured ``q``, ``qd`` (None: positions only) and the estimated ``qdd`` (None: not used) of the same
    rows, over the rows where ``fast (N, n)`` holds for the joint throughout the difference's and the lags'
    reach (all rows by default); and the number of rows used per joint."""
    m = max(abs(lag) for lag in lags)
    n = residual.shape[1]
    r = second_difference(residual)[m : residual.shape[0] - 2 - m]
    states = [x for x in (q, qd, qdd) if x is not None]
    Z = np.concatenate([_lagged(second_difference(x), lags) for x in states], axis=1)
    Z = np.concatenate([Z, np.ones((Z.shape[0], 1))], axis=1)
    reach = 1 + m  # a differenced, lagged row reads the rows this far on either side
    if fast is None:
        usable = np.ones((r.shape[0], n), dtype=bool)
    else:
        slow = (~fast).astype(np.int64)
        count = np.concatenate([np.zeros((1, n), dtype=np.int64), np.cumsum(slow, axis=0)])
        k = np.arange(r.shape[0]) + reach  # row of residual at the centre of each differenced row
        usable = count[k + reach + 1] - count[k - reach] == 0
    sigma, rows = np.full(n, np.nan), np.zeros(n)
    scale = np.sqrt(np.mean(Z**2, axis=0))
    scale[scale == 0.0] = 1.0
    Zs = Z / scale
    for j in range(n):
        use = usable[:, j]
        count_j = int(use.sum())
        if count_j < Z.shape[1] + MIN_ROWS:
            continue
        coef, *_ = np.linalg.lstsq(Zs[use], r[use, j], rcond=1e-10)
        e = r[use, j] - Zs[use] @ coef
        mad = float(np.median(np.abs(e - np.median(e))))
        dof = count_j / (count_j - Z.shape[1])  # the regression takes its columns' share of the variance
        sigma[j], rows[j] = MAD_SCALE * mad * np.sqrt(dof / GAIN), count_j
    return sigma, rows


def sensor_noise(
    identified: RobotModel, stats: Sequence[SampleStatistics], settings: PipelineSettings
) -> FloatArray | None:
    """Per joint the torque sensor's noise (module docstring) over the raw excerpts of ``stats``
    (:attr:`.samples.SampleStatistics.excerpt`), pooled by rows; None without excerpts."""
    n = identified.dof
    total, rows = np.zeros(n), np.zeros(n)
    for s in stats:
        if s.excerpt is None:
            continue
        t, q, qd, tau = s.excerpt
        cut = plan(t, q, replace(settings, holdout=0.0), s.name)
        half = cut.filt.window // 2
        body = slice(half, t.shape[0] - half)
        if body.stop - body.start < 3:
            continue
        (span,) = spans(
            identified,
            ParameterSet(),
            t,
            q,
            qd,
            tau,
            body,
            cut,
            body.stop - body.start,
            s.name,
            acceleration=settings.acceleration,
        )
        qd_rows, qdd_rows, _ = derivatives(span)
        q_rows, tau_rows = q[body], tau[body]
        model_tau = np.asarray(inverse_dynamics(identified, q_rows, qd_rows, qdd_rows, friction=True, smooth=True))
        fast = (np.abs(qd_rows) >= FAST) | cut.static  # a friction law of a noisy velocity flips below this
        measured = None if qd is None else qd[body]
        sigma, used = high_frequency_noise(tau_rows - model_tau, q_rows, measured, fast=fast, qdd=qdd_rows)
        ok = np.isfinite(sigma) & (used > 0)
        total[ok] += used[ok] * sigma[ok] ** 2
        rows[ok] += used[ok]
    if not np.any(rows > 0):
        return None
    return np.where(rows > 0, np.sqrt(total / np.maximum(rows, 1.0)), np.nan)
