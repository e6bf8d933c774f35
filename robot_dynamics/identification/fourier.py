"""Finite Fourier series joint trajectories and the limits an excitation design respects.

The series of Swevers, Ganseman, Tükel, De Schutter & Van Brussel, "Optimal robot excitation and
identification", IEEE Trans. Robotics and Automation 13(5), 1997, eq. (8), per joint ``j``:

    q_j(t)   = q0_j + sum_k  a_jk / (w k) sin(w k t) - b_jk / (w k) cos(w k t)      (k = 1..K)
    qd_j(t)  =        sum_k  a_jk cos(w k t) + b_jk sin(w k t)
    qdd_j(t) =        sum_k -a_jk w k sin(w k t) + b_jk w k cos(w k t)

linear in ``x_j = (q0_j, a_j1..a_jK, b_j1..b_jK)`` (:func:`fourier_basis` gives the three matrices).
Scaling ``a, b`` by ``s`` scales the motion about ``q0`` and its velocity and acceleration by ``s``
(:func:`feasible_scale`). Limits the model does not give: velocity :data:`DEFAULT_VELOCITY` (rad/s or
m/s), acceleration :data:`DEFAULT_ACCELERATION` (rad/s^2 or m/s^2; robot files have no acceleration
limits); each default used is listed in :attr:`ExcitationLimits.notes`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robot_dynamics.model import FloatArray, RobotModel

from .parameters import IdentificationError

DEFAULT_VELOCITY = 1.0
DEFAULT_ACCELERATION = 5.0


class ExcitationError(IdentificationError):
    """An excitation trajectory cannot be designed as asked (bad duration, harmonics, limits)."""


@dataclass(frozen=True, eq=False)
class ExcitationLimits:
    """Per-joint limits ``(n,)`` the design respects: the model's, or the documented defaults."""

    lower: FloatArray
    upper: FloatArray
    velocity: FloatArray
    acceleration: FloatArray
    notes: tuple[str, ...] = ()

    @staticmethod
    def of(
        model: RobotModel,
        *,
        velocity: float = DEFAULT_VELOCITY,
        acceleration: float = DEFAULT_ACCELERATION,
        position_range: float | None = None,
    ) -> ExcitationLimits:
        names = model.joint_names
        lower = np.array([j.limits.lower for j in model.joints], dtype=float)
        upper = np.array([j.limits.upper for j in model.joints], dtype=float)
        vel = np.array([j.limits.velocity for j in model.joints], dtype=float)
        notes: list[str] = []
        missing = [names[j] for j in range(model.dof) if not (np.isfinite(lower[j]) and np.isfinite(upper[j]))]
        if missing:
            if position_range is None:
                raise ExcitationError(
                    f"robot {model.name!r}: joint(s) {', '.join(missing)} have no position limits; give "
                    "limits: {lower, upper} in the robot file or a position range (position_range=, --position-range)"
                )
            if not (math.isfinite(position_range) and position_range > 0.0):
                raise ExcitationError(f"position range must be a positive number, got {position_range}")
            for j, name in enumerate(names):
                if name in missing:
                    lower[j] = max(lower[j], -position_range)
                    upper[j] = min(upper[j], position_range)
            notes.append(f"position limits +-{position_range:g} (given range) for {', '.join(missing)}")
        for what, value in (("velocity", velocity), ("acceleration", acceleration)):
            if not (math.isfinite(value) and value > 0.0):
                raise ExcitationError(f"default {what} limit must be a positive number, got {value}")
        no_vel = [names[j] for j in range(model.dof) if not (np.isfinite(vel[j]) and vel[j] > 0.0)]
        if no_vel:
            vel = np.where(np.isfinite(vel) & (vel > 0.0), vel, velocity)
            notes.append(f"velocity limit {velocity:g} rad/s or m/s (default) for {', '.join(no_vel)}")
        notes.append(f"acceleration limit {acceleration:g} rad/s^2 or m/s^2 (default; robot files have none)")
        if np.any(upper <= lower):
            j = int(np.argmax(upper <= lower))
            raise ExcitationError(f"joint {names[j]}: empty position range [{lower[j]}, {upper[j]}]")
        return ExcitationLimits(lower, upper, vel, np.full(model.dof, float(acceleration)), tuple(notes))

    def shrunk(self, margin: float) -> ExcitationLimits:
        """The limits reduced by the fraction ``margin`` (position range about its centre)."""
        mid, half = 0.5 * (self.upper + self.lower), 0.5 * (self.upper - self.lower) * (1.0 - margin)
        keep = 1.0 - margin
        return ExcitationLimits(mid - half, mid + half, keep * self.velocity, keep * self.acceleration, self.notes)


@dataclass(frozen=True, eq=False)
class FourierSeries:
    """Per-joint finite Fourier series (module docstring): ``offset (n,)``, ``a, b (n, K)``, base ``frequency`` Hz."""

    frequency: float
    offset: FloatArray
    a: FloatArray
    b: FloatArray

    @property
    def harmonics(self) -> int:
        return int(self.a.shape[1])

    def basis(self, t: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Matrices ``(M, 2K+1)`` mapping a joint's ``(q0, a_1..a_K, b_1..b_K)`` to q, qd, qdd at ``t``."""
        return fourier_basis(np.asarray(t, dtype=float), 2.0 * math.pi * self.frequency, self.harmonics)

    @staticmethod
    def from_coefficients(frequency: float, coefficients: FloatArray) -> FourierSeries:
        """From ``(n, 2K+1)`` rows ``(q0, a_1..a_K, b_1..b_K)`` (the inverse of :meth:`coefficients`)."""
        c = np.array(coefficients, dtype=float)
        k = (c.shape[1] - 1) // 2
        return FourierSeries(float(frequency), c[:, 0], c[:, 1 : 1 + k], c[:, 1 + k :])

    def coefficients(self) -> FloatArray:
        """``(n, 2K+1)``: per joint ``(q0, a_1..a_K, b_1..b_K)``."""
        return np.hstack((self.offset[:, None], self.a, self.b))

    def evaluate(self, t: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Positions, velocities and accelerations ``(M, n)`` at times ``t`` (seconds)."""
        pq, pv, pa = self.basis(t)
        x = self.coefficients().T
        return pq @ x, pv @ x, pa @ x

    def scaled(self, s: float) -> FourierSeries:
        """The motion about ``q0`` scaled by ``s`` (positions about q0, velocities, accelerations)."""
        return FourierSeries(self.frequency, self.offset, s * self.a, s * self.b)


def fourier_basis(t: FloatArray, omega: float, harmonics: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    wk = omega * np.arange(1, harmonics + 1)
    s, c = np.sin(np.outer(t, wk)), np.cos(np.outer(t, wk))
    one, zero = np.ones((t.size, 1)), np.zeros((t.size, 1))
    return (
        np.hstack((one, s / wk, -c / wk)),
        np.hstack((zero, c, s)),
        np.hstack((zero, -s * wk, c * wk)),
    )


def feasible_scale(series: FourierSeries, limits: ExcitationLimits, t: FloatArray) -> float:
    """The largest ``s <= 1`` with ``series.scaled(s)`` inside ``limits`` at the times ``t``."""
    q, qd, qdd = series.evaluate(t)
    dq = q - series.offset
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.where(dq > 0.0, (limits.upper - series.offset) / dq, np.inf)
        down = np.where(dq < 0.0, (limits.lower - series.offset) / dq, np.inf)
        vel = limits.velocity / np.abs(qd)
        acc = limits.acceleration / np.abs(qdd)
    return float(min(1.0, up.min(), down.min(), vel.min(), acc.min()))


def margins(q: FloatArray, qd: FloatArray, qdd: FloatArray, limits: ExcitationLimits) -> dict[str, FloatArray]:
    """Per joint the smallest remaining distance to each limit, as a fraction (negative = violated)."""
    span = limits.upper - limits.lower
    room = np.minimum(limits.upper - q.max(axis=0), q.min(axis=0) - limits.lower)
    return {
        "position": room / span,
        "velocity": 1.0 - np.abs(qd).max(axis=0) / limits.velocity,
        "acceleration": 1.0 - np.abs(qdd).max(axis=0) / limits.acceleration,
    }
