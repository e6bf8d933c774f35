"""Joint trajectories sampled in time (the data of a ``trajectory_msgs/JointTrajectory``, ROS-free).

A trajectory is ``K`` way points at strictly increasing times ``t_0 < ... < t_{K-1}`` (seconds from
the trajectory's start) with positions and, optionally, velocities and accelerations of ``n``
joints. Between two points the sampler uses the lowest-order polynomial that honours everything
given at both ends (the rule of ros2_controllers' ``joint_trajectory_controller``):

* positions, velocities and accelerations → quintic Hermite segment,
* positions and velocities → cubic Hermite segment,
* positions only → linear segment (constant velocity, zero acceleration).

Efforts (``JointTrajectoryPoint.effort``: a planner's joint torques along the motion), when given, are
interpolated linearly between the points — interpolated like positions that come without velocities,
as nothing is known of their derivatives — and held at the end values outside the points.

Samples at the way points reproduce the given values exactly. Outside ``[t_0, t_{K-1}]`` the
trajectory holds the nearest end position with zero velocity and acceleration.

Each segment ``k`` is stored as polynomial coefficients in the local time ``s = t - t_k``,
``q(s) = sum_j c_kj s^j`` (j = 0..5), so a sample costs one search and a Horner evaluation.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.errors import StateError
from robot_dynamics.model import FloatArray

InterpolationKind = Literal["linear", "cubic", "quintic"]


@dataclass(frozen=True)
class TrajectorySample:
    """Desired state at one time ``(n,)`` or at many times ``(N, n)``; ``efforts`` when the trajectory
    has them (else None)."""

    positions: FloatArray
    velocities: FloatArray
    accelerations: FloatArray
    efforts: FloatArray | None = None


def _as_matrix(value: ArrayLike, what: str, shape: tuple[int, int] | None) -> FloatArray:
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise StateError(f"trajectory {what}: not numeric ({exc})") from None
    if arr.ndim != 2:
        raise StateError(f"trajectory {what}: expected a (points, joints) array, got shape {arr.shape}")
    if shape is not None and arr.shape != shape:
        raise StateError(f"trajectory {what}: expected shape {shape} like the positions, got {arr.shape}")
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        k, j = (int(x) for x in bad[0])
        raise StateError(f"trajectory {what}: point {k} joint {j} is not finite ({arr[k, j]})")
    return arr


def _segment_coefficients(
    times: FloatArray, q: FloatArray, qd: FloatArray | None, qdd: FloatArray | None
) -> FloatArray:
    """Coefficients ``(K-1, 6, n)`` of every segment in its local time ``s`` (lowest order first)."""
    T = np.diff(times)[:, None]  # (K-1, 1)
    q0, q1 = q[:-1], q[1:]
    h = q1 - q0
    c = np.zeros((len(T), 6, q.shape[1]))
    c[:, 0] = q0
    if qd is None:  # linear: q0 + h s / T
        c[:, 1] = h / T
        return c
    v0, v1 = qd[:-1], qd[1:]
    c[:, 1] = v0
    if qdd is None:  # cubic Hermite with end velocities
        c[:, 2] = (3.0 * h - (2.0 * v0 + v1) * T) / T**2
        c[:, 3] = (-2.0 * h + (v0 + v1) * T) / T**3
        return c
    a0, a1 = qdd[:-1], qdd[1:]  # quintic Hermite with end velocities and accelerations
    c[:, 2] = 0.5 * a0
    c[:, 3] = (20.0 * h - (8.0 * v1 + 12.0 * v0) * T - (3.0 * a0 - a1) * T**2) / (2.0 * T**3)
    c[:, 4] = (-30.0 * h + (14.0 * v1 + 16.0 * v0) * T + (3.0 * a0 - 2.0 * a1) * T**2) / (2.0 * T**4)
    c[:, 5] = (12.0 * h - 6.0 * (v1 + v0) * T + (a1 - a0) * T**2) / (2.0 * T**5)
    return c


class JointTrajectorySampler:
    """Samples a joint trajectory (see the module docstring for the interpolation rules).

    ``times`` ``(K,)`` seconds from the trajectory start (``>= 0``, strictly increasing);
    ``positions`` ``(K, n)``; ``velocities``/``accelerations``/``efforts`` ``(K, n)`` or ``None``.
    Accelerations need velocities. Invalid input raises :class:`~robot_dynamics.errors.StateError`.
    """

    def __init__(
        self,
        times: ArrayLike,
        positions: ArrayLike,
        velocities: ArrayLike | None = None,
        accelerations: ArrayLike | None = None,
        efforts: ArrayLike | None = None,
    ) -> None:
        t = np.array(times, dtype=float).reshape(-1)
        if t.size == 0:
            raise StateError("trajectory has no points")
        if not np.all(np.isfinite(t)):
            raise StateError(f"trajectory time_from_start is not finite: {t.tolist()}")
        if t[0] < 0.0:
            raise StateError(f"trajectory time_from_start of point 0 is negative ({t[0]} s)")
        steps = np.diff(t)
        if np.any(steps <= 0.0):
            k = int(np.argmax(steps <= 0.0)) + 1
            raise StateError(
                f"trajectory time_from_start is not strictly increasing: point {k} at {t[k]} s "
                f"after point {k - 1} at {t[k - 1]} s"
            )
        q = _as_matrix(positions, "positions", None)
        if q.shape[0] != t.size:
            raise StateError(f"trajectory has {t.size} times but {q.shape[0]} position rows")
        if q.shape[1] == 0:
            raise StateError("trajectory has no joints")
        shape = (int(q.shape[0]), int(q.shape[1]))
        qd = None if velocities is None else _as_matrix(velocities, "velocities", shape)
        qdd = None if accelerations is None else _as_matrix(accelerations, "accelerations", shape)
        tau = None if efforts is None else _as_matrix(efforts, "efforts", shape)
        if qdd is not None and qd is None:
            raise StateError("trajectory has accelerations but no velocities")
        self.kind: InterpolationKind = "linear" if qd is None else ("cubic" if qdd is None else "quintic")
        self.times = t
        self.positions = q
        self.velocities = qd
        self.accelerations = qdd
        self.efforts = tau
        self._times_list: list[float] = t.tolist()
        self._coefficients = _segment_coefficients(t, q, qd, qdd) if t.size > 1 else np.zeros((0, 6, q.shape[1]))
        for arr in (self.times, self.positions, self._coefficients, qd, qdd, tau):
            if arr is not None:
                arr.setflags(write=False)
        self._zeros = np.zeros(q.shape[1])
        self._zeros.setflags(write=False)

    # -- facts ------------------------------------------------------------------------------------
    @property
    def dof(self) -> int:
        return int(self.positions.shape[1])

    @property
    def start_time(self) -> float:
        return float(self.times[0])

    @property
    def end_time(self) -> float:
        return float(self.times[-1])

    def with_start_state(
        self, position: ArrayLike, velocity: ArrayLike | None = None, acceleration: ArrayLike | None = None
    ) -> JointTrajectorySampler:
        """This trajectory with a first point at ``t = 0`` holding the given (current) state.

        ROS semantics: when the first point's ``time_from_start`` is positive, motion starts from the
        robot's state at the trajectory start time. A trajectory whose first point is at 0 is returned
        unchanged. Velocity/acceleration default to zero and are used only where the trajectory's own
        points carry them; efforts, where the points carry them, start at the first point's (nothing
        is known of the effort at the measured state).
        """
        if self.times[0] == 0.0:
            return self
        q0 = np.asarray(position, dtype=float).reshape(1, -1)
        if q0.shape[1] != self.dof:
            raise StateError(f"start state has {q0.shape[1]} positions, the trajectory {self.dof} joints")
        times = np.concatenate(([0.0], self.times))
        qs = np.vstack((q0, self.positions))

        def prepend(block: FloatArray | None, value: ArrayLike | None) -> FloatArray | None:
            if block is None:
                return None
            first = np.zeros((1, self.dof)) if value is None else np.asarray(value, dtype=float).reshape(1, -1)
            return np.vstack((first, block))

        first_effort = None if self.efforts is None else self.efforts[0]
        return JointTrajectorySampler(
            times,
            qs,
            prepend(self.velocities, velocity),
            prepend(self.accelerations, acceleration),
            prepend(self.efforts, first_effort),
        )

    # -- sampling ---------------------------------------------------------------------------------
    def sample(self, t: float) -> TrajectorySample:
        """Desired positions, velocities and accelerations (and efforts) ``(n,)`` at one time ``t`` (seconds)."""
        state = self._state(t)
        if self.efforts is None:
            return state
        return TrajectorySample(state.positions, state.velocities, state.accelerations, self._effort(t))

    def _effort(self, t: float) -> FloatArray:
        """The efforts at ``t``: linear between the points, the end values outside them."""
        times, tau = self._times_list, self.efforts
        assert tau is not None
        if t <= times[0] or len(times) == 1:
            return tau[0].copy()
        if t >= times[-1]:
            return tau[-1].copy()
        k = bisect.bisect_right(times, t) - 1
        w = (t - times[k]) / (times[k + 1] - times[k])
        return (1.0 - w) * tau[k] + w * tau[k + 1]  # exact at both points

    def _state(self, t: float) -> TrajectorySample:
        times = self._times_list
        if not math.isfinite(t):
            raise StateError(f"trajectory sample time is not finite ({t})")
        if t <= times[0] or len(times) == 1:
            q = self.positions[0] if t <= times[0] else self.positions[-1]
            if t == times[0]:
                return self._point(0)
            return TrajectorySample(q.copy(), self._zeros.copy(), self._zeros.copy())
        if t >= times[-1]:
            if t == times[-1]:
                return self._point(len(times) - 1)
            return TrajectorySample(self.positions[-1].copy(), self._zeros.copy(), self._zeros.copy())
        k = bisect.bisect_right(times, t) - 1
        c = self._coefficients[k]
        s = t - times[k]
        # Horner for q, q' and q''.
        q = ((((c[5] * s + c[4]) * s + c[3]) * s + c[2]) * s + c[1]) * s + c[0]
        qd = (((5.0 * c[5] * s + 4.0 * c[4]) * s + 3.0 * c[3]) * s + 2.0 * c[2]) * s + c[1]
        qdd = ((20.0 * c[5] * s + 12.0 * c[4]) * s + 6.0 * c[3]) * s + 2.0 * c[2]
        return TrajectorySample(q, qd, qdd)

    def sample_many(self, t: ArrayLike) -> TrajectorySample:
        """Vectorised :meth:`sample` over times ``(N,)``: arrays ``(N, n)``."""
        ts = np.asarray(t, dtype=float).reshape(-1)
        if not np.all(np.isfinite(ts)):
            raise StateError("trajectory sample times are not all finite")
        state = self._states(ts)
        if self.efforts is None:
            return state
        return TrajectorySample(state.positions, state.velocities, state.accelerations, self._efforts_many(ts))

    def _efforts_many(self, ts: FloatArray) -> FloatArray:
        """Vectorised :meth:`_effort`."""
        tau = self.efforts
        assert tau is not None
        if self.times.size == 1:
            return np.repeat(tau[:1], ts.size, axis=0)
        tc = np.clip(ts, self.times[0], self.times[-1])
        k = np.clip(np.searchsorted(self.times, tc, side="right") - 1, 0, self.times.size - 2)
        w = ((tc - self.times[k]) / (self.times[k + 1] - self.times[k]))[:, None]
        return (1.0 - w) * tau[k] + w * tau[k + 1]

    def _states(self, ts: FloatArray) -> TrajectorySample:
        n_out = ts.size
        q = np.empty((n_out, self.dof))
        qd = np.zeros((n_out, self.dof))
        qdd = np.zeros((n_out, self.dof))
        before = ts < self.times[0]
        after = ts > self.times[-1]
        q[before] = self.positions[0]
        q[after] = self.positions[-1]
        inside = ~(before | after)
        if self.times.size == 1:
            q[inside] = self.positions[0]
            if self.velocities is not None:
                qd[inside] = self.velocities[0]
            if self.accelerations is not None:
                qdd[inside] = self.accelerations[0]
            return TrajectorySample(q, qd, qdd)
        ti = ts[inside]
        k = np.clip(np.searchsorted(self.times, ti, side="right") - 1, 0, self.times.size - 2)
        c = self._coefficients[k]  # (m, 6, n)
        s = (ti - self.times[k])[:, None]
        q[inside] = ((((c[:, 5] * s + c[:, 4]) * s + c[:, 3]) * s + c[:, 2]) * s + c[:, 1]) * s + c[:, 0]
        qd[inside] = (((5.0 * c[:, 5] * s + 4.0 * c[:, 4]) * s + 3.0 * c[:, 3]) * s + 2.0 * c[:, 2]) * s + c[:, 1]
        qdd[inside] = ((20.0 * c[:, 5] * s + 12.0 * c[:, 4]) * s + 6.0 * c[:, 3]) * s + 2.0 * c[:, 2]
        # The last point itself: its own given values (the segment formula gives them to rounding).
        last = inside.copy()
        last[inside] = ti == self.times[-1]
        if np.any(last):
            end = self._point(self.times.size - 1)
            q[last], qd[last], qdd[last] = end.positions, end.velocities, end.accelerations
        return TrajectorySample(q, qd, qdd)

    def _point(self, k: int) -> TrajectorySample:
        """The given values of way point ``k`` (derived ones for the lower-order kinds)."""
        q = self.positions[k].copy()
        if self.velocities is not None:
            qd = self.velocities[k].copy()
        elif self.times.size > 1:  # linear: the velocity of the segment starting here (last: ending)
            seg = min(k, self.times.size - 2)
            qd = self._coefficients[seg, 1].copy()
        else:
            qd = self._zeros.copy()
        if self.accelerations is not None:
            qdd = self.accelerations[k].copy()
        elif self.velocities is not None and self.times.size > 1:  # cubic: q'' of the segment there
            if k < self.times.size - 1:
                qdd = 2.0 * self._coefficients[k, 2]
            else:
                c = self._coefficients[-1]
                s = float(self.times[-1] - self.times[-2])
                qdd = 6.0 * c[3] * s + 2.0 * c[2]
        else:
            qdd = self._zeros.copy()
        return TrajectorySample(q, qd, qdd, None if self.efforts is None else self.efforts[k].copy())
