"""The ``model`` engine: the robot file's own forward dynamics behind the plant interface.

``integrator``:

* ``fixed_step`` (default): steps of at most one period (or of at most ``max_timestep``, a physics rate
  above the control rate: a 500 Hz controller on a 2 kHz plant) with constant acceleration from the engine's
  forward dynamics ``qdd = D^-1 (tau - h - c - b - J^T w)`` (``q += h qd + h^2/2 qdd``,
  ``qd += h qdd``), whose stick-slip solver decides which joints at rest stick or break away
  (``forward_dynamics(..., friction=True)``). A sticky joint whose velocity would change sign within a
  step stops where its velocity reaches zero, so the next step decides stick or break-away exactly:
  no chatter. One forward-dynamics call per step keeps it real time. An external wrench at the tool
  enters as the load ``w = -F`` (world axes) of :func:`robot_dynamics.dynamics.forward_dynamics`.
* ``adaptive``: the engine's ``simulate`` over each step (event-driven stick-slip, ``solve_ivp``);
  exact to its tolerances but much slower, for low rates; no external wrench.

Link-side torque sensing (``torque_sensing="link"``, :mod:`robot_dynamics.plant.base`; ``fixed_step``
only): per step the rigid-body torque of the step's acceleration, ``inverse_dynamics(q, qd, qdd)``
without friction and motor inertia, less the external wrench's ``J^T F``; averaged over the steps.

A state that becomes non-finite raises :class:`~robot_dynamics.errors.StateError` and is not kept.
"""

from __future__ import annotations

import numpy as np

from robot_dynamics.dynamics import forward_dynamics, inverse_dynamics, simulate
from robot_dynamics.errors import StateError
from robot_dynamics.friction import friction_parameters
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.plant.base import Plant

INTEGRATORS = ("fixed_step", "adaptive")


class ModelPlant(Plant):
    """The robot model integrated by this package's engine (see the module docstring)."""

    engine = "model"

    def __init__(
        self,
        model: RobotModel,
        period: float,
        integrator: str = "fixed_step",
        friction: bool = True,
        torque_sensing: str = "motor",
        max_timestep: float | None = None,
    ) -> None:
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator must be one of {list(INTEGRATORS)}, got {integrator!r}")
        if max_timestep is not None and not (np.isfinite(max_timestep) and max_timestep > 0.0):
            raise ValueError(f"max_timestep must be > 0 s, got {max_timestep}")
        self.integrator = integrator
        self.max_timestep = max_timestep  # fixed_step: the largest step (None: one control period)
        super().__init__(model, period, torque_sensing)
        self.friction = friction
        self._q: FloatArray = np.zeros(model.dof)
        self._qd: FloatArray = np.zeros(model.dof)
        self._time = 0.0

    def _cannot_read(self, value: str) -> str | None:
        if value == "link" and self.integrator != "fixed_step":
            return "torque_sensing 'link' needs the fixed_step integrator (adaptive keeps no acceleration)"
        return None

    @staticmethod
    def warm(model: RobotModel) -> None:
        """Trace (or load) the forward-dynamics programs a step runs (before a new model is swapped in)."""
        z = np.zeros(model.dof)
        for friction in (False, True):
            forward_dynamics(model, z, z, z, friction=friction)

    @property
    def q(self) -> FloatArray:
        return self._q.copy()

    @property
    def qd(self) -> FloatArray:
        return self._qd.copy()

    @property
    def time(self) -> float:
        return self._time

    def reset(self, q: FloatArray, qd: FloatArray) -> None:
        self._q = np.array(q, dtype=np.float64)
        self._qd = np.array(qd, dtype=np.float64)
        self._time = 0.0

    def _advance(self, tau: FloatArray, duration: float) -> None:
        model = self.model
        if self.integrator == "adaptive":
            if self._wrench.any():
                raise StateError("the adaptive integrator takes no external wrench (use fixed_step)")
            r = simulate(model, self._q, self._qd, tau, duration, t_eval=(0.0, duration), friction=self.friction)
            q, qd = np.asarray(r.q[-1], dtype=np.float64), np.asarray(r.qd[-1], dtype=np.float64)
        else:
            q, qd = self._fixed_steps(model, tau, duration)
        if not (np.isfinite(q).all() and np.isfinite(qd).all()):
            raise StateError(f"the state became non-finite: q={q.tolist()} qd={qd.tolist()}")
        self._q, self._qd = q, qd
        self._time += duration

    def _fixed_steps(self, model: RobotModel, tau: FloatArray, duration: float) -> tuple[FloatArray, FloatArray]:
        steps = max(1, int(np.ceil(duration / (self.max_timestep or self.period) - 1e-9)))
        h = duration / steps
        q, qd = self._q, self._qd
        sticky = friction_parameters(model).sticky if self.friction and model.has_friction else None
        load = -self._wrench if self._wrench.any() else None
        link = self.torque_sensing == "link"
        transmitted = np.zeros(model.dof)
        for _ in range(steps):
            if load is None:
                qdd = forward_dynamics(model, q, qd, tau, friction=self.friction)
            else:
                qdd = forward_dynamics(model, q, qd, tau, friction=self.friction, wrench=load, wrench_frame="world")
            qdd = np.asarray(qdd, dtype=np.float64)
            if link:
                transmitted += self._transmitted(model, q, qd, qdd, load)
            # constant acceleration over the step
            qd_next = qd + h * qdd
            q_next = q + h * qd + (0.5 * h * h) * qdd
            if sticky is not None:
                # a sticky joint that would reverse within the step stops where its velocity reaches 0
                # (after -qd/qdd); the next step's stick-slip solve decides whether it stays there
                crossed = sticky & (qd != 0.0) & (np.sign(qd_next) != np.sign(qd))
                if crossed.any():
                    q_next[crossed] = q[crossed] - 0.5 * qd[crossed] ** 2 / qdd[crossed]
                    qd_next[crossed] = 0.0
            q, qd = q_next, qd_next
        if link:
            self._link_torque = transmitted / steps
        return q, qd

    @staticmethod
    def _transmitted(
        model: RobotModel, q: FloatArray, qd: FloatArray, qdd: FloatArray, load: FloatArray | None
    ) -> FloatArray:
        """The torque the joints pass on to their links in a step (module docstring)."""
        return np.asarray(
            inverse_dynamics(model, q, qd, qdd, friction=False, wrench=load, motor_inertia=False, wrench_frame="world"),
            dtype=np.float64,
        )
