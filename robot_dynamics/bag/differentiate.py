"""Derivatives of measured joint signals: a Savitzky–Golay filter on the actual (non-uniform) stamps.

Savitzky & Golay (1964): around each sample ``t_i`` fit, by least squares, a polynomial of degree
``p`` to the ``w`` samples of a window (``w`` odd, centred on ``i``; shifted inwards at the ends so it
always holds ``w`` samples, like ``scipy.signal.savgol_filter(mode="interp")``) and take the
polynomial's value and derivatives at ``t_i``::

    y(t) ≈ sum_k c_k x^k,  x = (t - t_i) / h,  h = half the window's time span
    V c = y_window,        V_jk = x_j^k                    (least squares, w ≥ p + 1 equations)
    y(t_i) = c_0,   y'(t_i) = c_1 / h,   y''(t_i) = 2 c_2 / h^2

The fit uses the real time offsets ``t_j - t_i``, so jittered or irregular stamps (dropped messages,
a driver's timing noise) are handled exactly: a polynomial of degree ≤ ``p`` is differentiated
without error whatever the spacing. On uniform stamps the result equals SciPy's ``savgol_filter``.
Scaling by ``h`` keeps the normal equations well conditioned (``|x| <= 2``).

For joint states the default is to differentiate the measured **velocity** once (less noise than
differentiating positions twice); positions are used when a stream has no velocities.
The window is given in seconds and converted with the median sample period: the default
``0.1 s`` with a cubic (``p = 3``) removes sensor noise while following motions up to a few hertz.
Vectorised over samples: the Gram matrices come from power sums accumulated over the ``w`` window
positions, one batched ``(p+1)x(p+1)`` solve gives every sample's weights (no per-sample loop).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.errors import StateError
from robot_dynamics.model import FloatArray

DEFAULT_WINDOW_S = 0.1
DEFAULT_POLYORDER = 3
#: The largest window :meth:`SavitzkyGolay.for_times` returns (longer than any bag; keeps messages readable).
MAX_WINDOW = 1_000_000_001


@dataclass(frozen=True)
class SavitzkyGolay:
    """Filter settings: ``window`` samples (odd, > ``polyorder``) and polynomial degree ``polyorder``."""

    window: int = 21
    polyorder: int = DEFAULT_POLYORDER

    def __post_init__(self) -> None:
        if self.polyorder < 0:
            raise StateError(f"Savitzky-Golay polyorder must be >= 0, got {self.polyorder}")
        if self.window % 2 == 0 or self.window <= self.polyorder:
            raise StateError(
                f"Savitzky-Golay window must be odd and larger than polyorder {self.polyorder}, got {self.window}"
            )

    @staticmethod
    def for_times(
        t: ArrayLike, window_s: float = DEFAULT_WINDOW_S, polyorder: int = DEFAULT_POLYORDER
    ) -> SavitzkyGolay:
        """The odd window (in samples) covering about ``window_s`` seconds at the median sample period.

        ``round(window_s / period)`` samples, made odd, and never fewer than :func:`min_window`: at a
        low rate (a 30 Hz driver) the window grows past ``window_s`` rather than below what a degree
        ``polyorder`` fit needs.
        """
        ts = np.asarray(t, dtype=float).reshape(-1)
        if ts.size < 2:
            raise StateError(f"need at least 2 samples to differentiate, got {ts.size}")
        if not window_s > 0.0 or not math.isfinite(window_s):
            raise StateError(f"Savitzky-Golay window must be positive, got {window_s} s")
        if polyorder < 0:
            raise StateError(f"Savitzky-Golay polyorder must be >= 0, got {polyorder}")
        steps = np.diff(ts)
        period = float(np.median(steps[steps > 0])) if np.any(steps > 0) else 0.0
        ratio = window_s / period if period > 0 else 0.0  # no positive step: the minimum window
        w = MAX_WINDOW if not ratio <= MAX_WINDOW else round(ratio)
        w = max(w, min_window(polyorder))
        w += 1 - w % 2  # odd
        return SavitzkyGolay(w, polyorder)


def min_window(polyorder: int) -> int:
    """The fewest samples a Savitzky-Golay window of degree ``polyorder`` may hold: odd, > ``polyorder``, >= 3."""
    return max(3, polyorder + 1 + polyorder % 2)


def _check_times(t: FloatArray) -> None:
    if not np.all(np.isfinite(t)):
        raise StateError("sample times are not all finite")
    steps = np.diff(t)
    if np.any(steps <= 0.0):
        k = int(np.argmax(steps <= 0.0)) + 1
        raise StateError(
            f"sample times must increase strictly: sample {k} at {t[k]:.9g} s follows {t[k - 1]:.9g} s "
            "(duplicated or reordered stamps)"
        )


def savgol(
    t: ArrayLike, y: ArrayLike, derivs: tuple[int, ...] = (0, 1, 2), filt: SavitzkyGolay | None = None
) -> tuple[FloatArray, ...]:
    """Smoothed value and/or derivatives of ``y`` (``(N,)`` or ``(N, n)``) at the stamps ``t`` ``(N,)``.

    Returns one array shaped like ``y`` per entry of ``derivs`` (0 = value, 1 = first, 2 = second
    derivative, up to ``polyorder``).
    """
    ts = np.asarray(t, dtype=np.float64).reshape(-1)
    ys = np.asarray(y, dtype=np.float64)
    if ys.shape[:1] != ts.shape:
        raise StateError(f"{ts.size} sample times but values of shape {ys.shape}")
    if not np.all(np.isfinite(ys)):
        raise StateError("values to differentiate are not all finite")
    _check_times(ts)
    f = filt if filt is not None else SavitzkyGolay.for_times(ts)
    n_samples = ts.size
    if n_samples < f.window:
        raise StateError(f"need at least {f.window} samples for a {f.window}-sample window, got {n_samples}")
    if any(d < 0 or d > f.polyorder for d in derivs):
        raise StateError(f"derivative orders {derivs} must lie in 0..{f.polyorder}")
    flat = ys.reshape(n_samples, -1)
    w, p = f.window, f.polyorder
    first = np.clip(np.arange(n_samples) - w // 2, 0, n_samples - w)  # window shifted inwards at the ends
    h = 0.5 * (ts[first + w - 1] - ts[first])  # (N,)

    def offsets(j: int) -> FloatArray:
        """x of every sample's j-th window point: (t_j - t_i) / h_i, shape (N,)."""
        x: FloatArray = (ts[first + j] - ts) / h
        return x

    # Normal equations of the local fit, V^T V c = V^T y, with the Gram matrix from power sums
    # G_kl = sum_j x_j^(k+l) (one pass over the window positions, vectorised over all samples).
    sums = np.zeros((2 * p + 1, n_samples))
    for j in range(w):
        x = offsets(j)
        power: FloatArray = np.ones(n_samples)
        for k in range(2 * p + 1):
            sums[k] += power
            power = power * x
    gram = np.moveaxis(sums[np.add.outer(np.arange(p + 1), np.arange(p + 1))], -1, 0)  # (N, p+1, p+1)
    # c_d = e_d^T G^-1 V^T y: the weight of window point j in c_d is sum_k (G^-1)_dk x_j^k.
    unit = np.zeros((n_samples, p + 1, len(derivs)))
    for m, d in enumerate(derivs):
        unit[:, d, m] = 1.0
    rows = np.linalg.solve(gram, unit)  # (N, p+1, D): columns of G^-1 (G is symmetric)
    acc = np.zeros((len(derivs), n_samples, flat.shape[1]))
    for j in range(w):
        x = offsets(j)
        power = np.ones(n_samples)
        weight = np.zeros((n_samples, len(derivs)))
        for k in range(p + 1):
            weight += rows[:, k, :] * power[:, None]
            power = power * x
        acc += weight.T[:, :, None] * flat[first + j][None, :, :]
    factorial = np.cumprod(np.concatenate(([1.0], np.arange(1.0, p + 1))))
    # d-th derivative at x = 0: d! c_d / h^d
    outs = [factorial[d] * acc[m] / h[:, None] ** d for m, d in enumerate(derivs)]
    return tuple(o.reshape(ys.shape) for o in outs)


def joint_accelerations(
    t: ArrayLike,
    position: ArrayLike,
    velocity: ArrayLike | None = None,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    polyorder: int = DEFAULT_POLYORDER,
    source: str = "velocity",
) -> FloatArray:
    """Joint accelerations ``(N, n)`` from measured states (module docstring).

    ``source="velocity"``: first derivative of the measured velocity (needs ``velocity``);
    ``"position"``: second derivative of the position.
    """
    filt = SavitzkyGolay.for_times(t, window_s, polyorder)
    if source == "velocity":
        if velocity is None:
            raise StateError("acceleration from velocity requested but the joint states carry no velocity")
        (qdd,) = savgol(t, velocity, (1,), filt)
    elif source == "position":
        if filt.polyorder < 2:
            raise StateError("differentiating positions twice needs polyorder >= 2")
        (qdd,) = savgol(t, position, (2,), filt)
    else:
        raise StateError(f"unknown acceleration source {source!r} (expected 'velocity' or 'position')")
    return qdd
