"""One step of the generalized-momentum observer as one program: the form a node runs per joint state.

The observer's exact discrete form (:mod:`.momentum_observer`, (3)) per joint::

    u_k     = w (p_{k+1} - p_k - dt / 2 (beta_k + beta_{k+1})),   w = (1 - exp(-K dt)) / dt
    r_{k+1} = a r_k + u_k,                                         a = exp(-K dt)

with ``p`` and ``dD/dt qd`` from the momentum recursion (:mod:`.momentum`) and
``beta = tau_m + dD/dt qd - (h + c + b)``, the last term Newton–Euler at ``qdd = 0`` (:mod:`.rnea`) with
the model's friction program on its torques (and reactions) when it has one. :func:`observer_drive`
is ``u`` written once over any scalars: the NumPy batch (:func:`.momentum_observer.drive`) and this
program (traced and compiled per model, :mod:`._kernels`) use it alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._chain import Chain
from ._vector import Vec3
from .momentum import momentum_and_rate
from .rnea import newton_euler

Still = Callable[[Sequence[Any], list[Any], list[Vec3], list[Vec3]], Sequence[Any]]
"""``(qd, tau, f, n) -> h + c + b``: the friction program on the zero-acceleration torques, or ``tau``."""


def observer_drive(w: Any, half_dt: Any, dp: Any, beta0: Any, beta1: Any) -> Any:
    """``u = w (dp - dt / 2 (beta0 + beta1))`` of (3), for scalars or arrays alike."""
    return w * (dp - half_dt * (beta0 + beta1))


def observer_step(
    chain: Chain,
    q: Sequence[Any],
    qd: Sequence[Any],
    tau_m: Sequence[Any],
    prev: Sequence[Any],
    coef: Sequence[Any],
    motor: bool,
    still_of: Still,
) -> list[Any]:
    """``(p, beta, r)`` (``3 n``) after the sample ``(q, qd, tau_m)``, from the last sample's ``prev =
    (p, beta, r)`` and ``coef = (a, w, dt / 2)`` (``2 n + 1``)."""
    n = chain.dof
    p, rate = momentum_and_rate(chain, q, qd, motor)
    rigid, f, m = newton_euler(chain, q, qd, [0.0] * n, -chain.gravity)
    still = still_of(qd, rigid, f, m)
    beta = [t + d - s for t, d, s in zip(tau_m, rate, still, strict=True)]
    a, w, half = coef[:n], coef[n : 2 * n], coef[2 * n]
    r = [a[i] * prev[2 * n + i] + observer_drive(w[i], half, p[i] - prev[i], prev[n + i], beta[i]) for i in range(n)]
    return [*p, *beta, *r]
