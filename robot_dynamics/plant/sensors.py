"""The sensors and actuators of a real arm around any plant: what a driver measures, what a drive applies.

:class:`SensedPlant` is a :class:`~robot_dynamics.plant.base.Plant` over an inner plant (either engine):
the simulator node, :func:`~robot_dynamics.plant.run.run_plant`, the experiment and the benches step it
as they step a bare plant. Its ``q``, ``qd`` and ``effort`` are the **measured** signals a driver
publishes; ``true_q``, ``true_qd``, ``applied`` (the torque really applied) and ``true_link_torque``
are the truth beside them. A profile (:mod:`.sensor_profile`) gives the numbers, per joint ``j``; one
step of duration ``T`` (one control period) from sample ``k`` to ``k + 1``:

1. **Command delay** ``d_c`` periods: the command given at step ``k`` (limited to the effort limits,
   counted as a bare plant counts) reaches the drive at step ``k + d_c``; until then the drive holds
   the first command it was given after a reset (it was holding the arm when control began).
2. **Actuator**: the drive turns its motor command ``m = u + c`` (``c`` the torque loop's correction,
   step 7; ``m = u`` without a loop) into current with its nominal torque constant; the motor's
   constant is ``(1 + e_j)`` times that, and its torque ripples over the rotor angle ``theta = G_j q``
   (``G_j`` the gear ratio): the torque really applied over the period is
   ``tau_j = (1 + e_j) m_j (1 + a_j r_j)``, ``r_j`` the mean of ``sin(h_j theta + phi_j)`` over the
   period at the rotor's speed at its start: ``sin(h theta_0 + phi + h w T / 2) sinc(h w T / 2)``,
   ``w = G qd_0``. The inner plant integrates ``tau`` as it is (the drive's limit was on ``u``; the
   correction is not limited). The joint's friction, damping and rotor inertia (the inner plant's)
   act between ``tau`` and the link.
3. **Encoder**: ``q~ = D round((q + n_q) / D)``, ``D = 2 pi / (counts [* G])`` (link or motor side; no
   quantization for ``counts = 0``), ``n_q`` white with standard deviation ``sigma_q``.
4. **Velocity** as drivers estimate it: ``x = (q~_k+1 - q~_k) / T`` through ``order`` first-order
   low-passes ``y += a (x - y)``, ``a = T / (T + RC)``, ``RC = 1 / (2 pi f_c)`` (``f_c = 0``: none), or
   with ``estimator: plant`` the plant's own velocity.
5. **Torque reading**: ``motor`` sensing (motor currents): ``u + n_tau + o`` — the drive's nominal
   constant times the measured current, so ``e`` and the ripple do not show; ``link`` sensing (joint
   torque sensors): ``(1 + s_j) tau_J + n_tau + o + d``, ``tau_J`` the inner plant's link-side torque
   over the period, ``d`` a drift with ``d_k+1 = d_k + rate T + random_walk sqrt(T) n``.
6. **Measurement delay** ``d_m`` periods: ``q``, ``qd``, ``effort`` are the measurement of ``d_m``
   steps ago (at a reset the buffer is filled with the reset state's measurement; the effort reading
   with zeros).
7. **Torque loop** (``actuator.torque_loop.bandwidth`` ``f_j`` > 0; link sensing only): the drive's own
   joint-torque controller on the link-side sensor, as torque-controlled arms close it (the Franka's
   "gravity and friction compensated joint level torque commands", the iiwa's): an integral correction
   ``c' = 2 pi f (u - r)`` on the error between the command and the sensor's reading ``r`` (step 5, with
   its scale error, offset, drift and noise; the drive reads it before the measurement delay), held over
   a period and updated at its end: ``c_k+1 = c_k + (1 - exp(-2 pi f T)) (u_k - r_k)``, ``c_0 = 0`` at
   a reset. A disturbance ``L`` between motor and link (friction, damping, ``armature * qdd``) then
   reaches the link high-passed at ``f``: ``c`` is ``L`` low-passed at ``f`` and the link torque
   ``tau_J = (1 + e)(u + c) - L`` settles at ``(u - o - d) / (1 + s)``; the sensor's noise enters the
   applied torque low-passed at ``f``. The loop runs at the control rate (the inner plant's physics
   steps are inside its step; at the Franka's 1 kHz with MuJoCo's default 1 ms timestep the two rates
   are one).

Every random number comes from the profile's seed: the per-joint draws at resolution
(:meth:`SensorProfile.resolve`), the noise streams here (one per signal); :meth:`SensedPlant.reset`
starts the streams, filters, drift, delays and the torque loop's correction again, so a run after a
reset repeats exactly.
Prismatic joints read the numbers in their own units (m for rad, N for N m; the gear ratio in rotor
radians per metre). Attributes the wrapper does not have (``true_model``, ``inverse_dynamics``,
``data`` ...) are the inner plant's.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.payload import Payload
from robot_dynamics.plant.base import Plant
from robot_dynamics.plant.sensor_profile import SensorProfile

_BLOCK = 1024  # noise drawn this many steps at a time (the same numbers as one step at a time)


class _Noise:
    """A stream of standard normal ``(n,)`` vectors from ``(seed, name)``, drawn in blocks."""

    def __init__(self, seed: int, name: str, n: int) -> None:
        self.key, self.n = [seed, zlib.crc32(name.encode())], n
        self.reset()

    def reset(self) -> None:
        self.rng = np.random.default_rng(self.key)
        self.block: FloatArray = np.empty((0, self.n))
        self.i = 0

    def next(self) -> FloatArray:
        if self.i == len(self.block):
            self.block, self.i = self.rng.standard_normal((_BLOCK, self.n)), 0
        self.i += 1
        return self.block[self.i - 1]


class SensedPlant(Plant):
    """``inner`` seen through the sensors and actuators of ``profile`` (see the module docstring).

    ``joint_names``: for each joint the names a profile may give it (default: the model's names).
    """

    def __init__(self, inner: Plant, profile: SensorProfile, joint_names: Sequence[Sequence[str]] | None = None):
        self.inner = inner
        self.profile = profile
        model = inner.model
        names = joint_names if joint_names is not None else [[name] for name in model.joint_names]
        self.sensors = profile.resolve(names)
        self.notes: tuple[str, ...] = (*getattr(inner, "notes", ()), *self.sensors.notes)
        super().__init__(model, inner.period, profile.torque_sensing)
        self.engine, self.payload = inner.engine, inner.payload
        if inner._cannot_read("link") is None:  # the truth's link-side torque (and the link reading)
            inner.torque_sensing = "link"
        v, n = self.sensors.values, model.dof
        self.delay_m, self.delay_c = profile.measurement_delay, profile.command_delay
        self.gain = 1.0 + v["actuator.constant_error"]
        self.gear = v["gear_ratio"]
        self.ripple = v["actuator.ripple.amplitude"] if v["actuator.ripple.amplitude"].any() else None
        self.rotor_harmonic = v["actuator.ripple.order"] * self.gear  # h G: ripple cycles per joint radian
        self.phase = v["actuator.ripple.phase"]
        self.loop_rate = 2.0 * np.pi * v["actuator.torque_loop.bandwidth"]  # rad/s; 0: no loop on that joint
        self.torque_loop = bool(self.loop_rate.any())
        counts = v["encoder.counts_per_revolution"]
        per_rev = counts * (self.gear if profile.value("encoder.side") == "motor" else 1.0)
        self.resolution = np.divide(2.0 * np.pi, per_rev, out=np.zeros(n), where=per_rev > 0)
        self.quantized = self.resolution > 0.0
        self.all_quantized, self.none_quantized = bool(self.quantized.all()), not self.quantized.any()
        self.position_noise = v["encoder.noise"] if v["encoder.noise"].any() else None
        self.difference = profile.value("velocity.estimator") == "difference"
        cutoff = float(profile.value("velocity.cutoff"))
        self.rc = 1.0 / (2.0 * math.pi * cutoff) if cutoff > 0.0 else 0.0
        self.stages = int(profile.value("velocity.order")) if cutoff > 0.0 else 0
        self.torque_noise = v["torque.noise"] if v["torque.noise"].any() else None
        self.offset, self.scale = v["torque.offset"], 1.0 + v["torque.scale_error"]
        self.drift_rate, self.random_walk = v["torque.drift.rate"], v["torque.drift.random_walk"]
        self.drifts = bool(self.drift_rate.any() or self.random_walk.any())
        seed = profile.seed
        self._noise = {name: _Noise(seed, name, n) for name in ("encoder.noise", "torque.noise", "torque.drift")}
        self.applied = np.zeros(n)
        self._start(inner.q, inner.qd)

    def _cannot_read(self, value: str) -> str | None:
        if value == "link" and self.inner._cannot_read("link") is not None:
            return f"the sensor profile reads link-side torques: {self.inner._cannot_read('link')}"
        return None

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (early in __init__): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    # -- the truth and the measurement ------------------------------------------------------------
    @property
    def q(self) -> FloatArray:
        """The measured joint positions the controller receives (quantized, noisy, delayed)."""
        return self._q[(self._k - self.delay_m) % len(self._q)].copy()

    @property
    def qd(self) -> FloatArray:
        """The driver's velocity estimate the controller receives (delayed)."""
        return self._qd[(self._k - self.delay_m) % len(self._qd)].copy()

    @property
    def true_q(self) -> FloatArray:
        return self.inner.q

    @property
    def true_qd(self) -> FloatArray:
        return self.inner.qd

    @property
    def true_link_torque(self) -> FloatArray | None:
        return self.inner.effort.copy() if self.inner.torque_sensing == "link" else None

    @property
    def physics(self) -> Plant:
        return self.inner.physics

    @property
    def time(self) -> float:
        return self.inner.time

    @property
    def external_wrench(self) -> FloatArray:
        return self.inner.external_wrench

    @external_wrench.setter
    def external_wrench(self, wrench: FloatArray) -> None:
        self.inner.external_wrench = wrench

    def set_payload(self, payload: Payload, model: RobotModel) -> None:
        self.inner.set_payload(payload, model)
        self.payload, self.model = payload, model

    # -- reset and stepping -----------------------------------------------------------------------
    def reset(self, q: FloatArray, qd: FloatArray) -> None:
        self.inner.reset(q, qd)
        self._start(self.inner.q, self.inner.qd)

    def _start(self, q: FloatArray, qd: FloatArray) -> None:
        """Sensor state for a start at ``(q, qd)``: streams, filters, drift, delay buffers."""
        n = self.model.dof
        for stream in self._noise.values():
            stream.reset()
        self._drift = np.zeros(n)
        measured = self._encoder(q)
        self._last_q = measured
        self._filter = [np.array(qd, dtype=np.float64) for _ in range(self.stages)]
        depth = self.delay_m + 1
        self._q, self._qd = np.tile(measured, (depth, 1)), np.tile(qd, (depth, 1))
        self._effort = np.zeros((depth, n))
        self._k = 0
        self._commands: np.ndarray | None = None  # (d_c, n) ring, filled by the first command
        self._c = 0
        self.effort = np.zeros(n)
        self.applied = np.zeros(n)
        self._correction = np.zeros(n)  # the torque loop's c (step 7)

    def _encoder(self, q: FloatArray) -> FloatArray:
        if self.position_noise is not None:
            q = q + self.position_noise * self._noise["encoder.noise"].next()
        if self.all_quantized:
            return np.round(q / self.resolution) * self.resolution
        if self.none_quantized:
            return np.array(q, dtype=np.float64)
        d = np.where(self.quantized, self.resolution, 1.0)
        return np.where(self.quantized, np.round(q / d) * d, q)

    def _delayed(self, command: FloatArray) -> FloatArray:
        if not self.delay_c:
            return command
        if self._commands is None:
            self._commands = np.tile(command, (self.delay_c, 1))
        out = self._commands[self._c].copy()
        self._commands[self._c] = command
        self._c = (self._c + 1) % self.delay_c
        return out

    def _actuator(self, u: FloatArray, duration: float) -> FloatArray:
        """The torque really applied over the period (module docstring, 2)."""
        tau = self.gain * u
        if self.ripple is not None:
            half = (0.5 * duration) * self.rotor_harmonic * self.inner.qd  # half the ripple angle swept
            mean = np.sin(self.rotor_harmonic * self.inner.q + self.phase + half)
            np.divide(mean * np.sin(half), half, out=mean, where=half != 0.0)  # sin(mid) sin(x) / x
            tau = tau * (1.0 + self.ripple * mean)
        return tau

    def _advance(self, tau: FloatArray, duration: float) -> None:
        self.inner._advance(tau, duration)  # the drive limited the command: tau as given
        self.inner._stepped(tau)

    def step(self, tau: FloatArray, duration: float | None = None) -> FloatArray:
        """Apply ``tau`` (limited, delayed, through the torque loop and the actuator) for ``duration`` s
        (default one period), measure; the torque really applied (the measured reading is :attr:`effort`)."""
        T = self.period if duration is None else float(duration)
        u = self._delayed(self.limit(tau)) if self.delay_c else self.limit(tau)
        applied = self._actuator(u + self._correction if self.torque_loop else u, T)
        self._advance(applied, T)
        self.applied = applied
        self.steps += 1
        # the measurement at the end of the period
        measured = self._encoder(self.inner.q)
        if not self.difference:
            velocity = self.inner.qd
        elif T > 0.0:
            velocity = (measured - self._last_q) / T
            a = T / (T + self.rc)
            for y in self._filter:
                y += a * (velocity - y)
                velocity = y.copy()
        else:  # no time passed: the estimate stands
            velocity = self._qd[self._k % len(self._qd)]
        self._last_q = measured
        if self.torque_sensing == "motor":
            reading = u + self.offset
        else:
            if self.drifts:
                self._drift += (
                    self.drift_rate * T + self.random_walk * math.sqrt(T) * self._noise["torque.drift"].next()
                )
            reading = self.scale * self.inner.effort + self.offset + self._drift
        if self.torque_noise is not None:
            reading = reading + self.torque_noise * self._noise["torque.noise"].next()
        if self.torque_loop:  # the drive's correction for the next period (step 7)
            self._correction += -np.expm1(-self.loop_rate * T) * (u - reading)
        self._k += 1
        slot = self._k % len(self._q)
        self._q[slot], self._qd[slot], self._effort[slot] = measured, velocity, reading
        self.effort = self._effort[(self._k - self.delay_m) % len(self._effort)].copy()
        return applied


__all__ = ["SensedPlant"]
