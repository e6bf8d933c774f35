"""The plant interface the simulator node steps: one seam for every engine.

A plant holds the robot's state (``q``, ``qd``, simulated ``time``) and advances it under a held joint
torque: :meth:`Plant.step` takes the commanded torque (model joint order), limits it to the robot
file's effort limits (``|tau_i| <= effort_i``; joints without a limit are not limited), applies it for
one control period (or a given duration) and returns the torque actually applied. Clamped commands are
counted (:attr:`Plant.clamped_steps`, and per joint :attr:`Plant.clamped_joints`).

An external wrench at the tool (:attr:`Plant.external_wrench`) is ``[fx, fy, fz, mx, my, mz]``, the
force (N) and moment (N m) the **environment exerts on the robot** at the tool-frame origin, in world
axes (a push on the tool); its joint torque is ``+J^T F`` with ``J`` the tool-point Jacobian in world
axes. It is held until changed (zero = none).

The joints' **torque reading** (:attr:`Plant.effort`, what ``joint_states`` carries) depends on where
the arm measures it, ``torque_sensing``:

* ``"motor"`` (default): the torque the motors applied (the command, limited) — an arm that estimates
  its joint torques from motor currents (a UR);
* ``"link"``: the torque each joint passes on to its link, after the joint's friction, damping and the
  motor-side inertia (``armature * qdd``) — an arm with link-side joint torque sensors (the Franka's
  ``tau_J``, the KUKA iiwa's). It is the rigid-body torque ``M(q) qdd + h + c - J^T F`` of the links
  alone, so a push the joint friction holds still shows in it.

Both are the mean over the period that ended (the physics steps within it).

**The truth** beside what a driver would publish: :attr:`Plant.true_q`, :attr:`Plant.true_qd`,
:attr:`Plant.applied` (the torque really applied over the last step) and
:attr:`Plant.true_link_torque` (the link-side torque, where the plant computes it). A bare engine
measures exactly, so its truth is its state; :class:`robot_dynamics.plant.sensors.SensedPlant` wraps
an engine in a real arm's sensors and actuators, and its ``q``, ``qd``, ``effort`` differ from the truth.

Engines: :class:`robot_dynamics.plant.model_engine.ModelPlant` (this package's own forward dynamics)
and :class:`robot_dynamics.plant.mujoco_plant.MujocoPlant` (MuJoCo).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

from robot_dynamics.errors import StateError
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.payload import NO_PAYLOAD, Payload

#: where the joints' torque reading is taken (module docstring)
TORQUE_SENSING = ("motor", "link")


def start_state(
    model: RobotModel, pose: str = "", position: object = None, velocity: object = None
) -> tuple[FloatArray, FloatArray]:
    """The start ``(q, qd)``: a named pose of the model, else ``position`` (None = zeros), and
    ``velocity`` (None = zeros); ValueError naming the parameter when it does not fit the model."""
    n = model.dof
    if pose:
        if pose not in model.named_poses:
            raise ValueError(
                f"parameter initial_pose: robot {model.name!r} has no pose {pose!r} "
                f"(it has {sorted(model.named_poses)})"
            )
        q0 = np.array(model.named_poses[pose], dtype=np.float64)
    else:
        q0 = np.zeros(n) if position is None else np.asarray(position, dtype=np.float64)
    qd0 = np.zeros(n) if velocity is None else np.asarray(velocity, dtype=np.float64)
    for what, v in (("initial_position", q0), ("initial_velocity", qd0)):
        if v.shape != (n,) or not np.isfinite(v).all():
            raise ValueError(f"parameter {what}: expected {n} finite values for {model.joint_names}, got {v.tolist()}")
    return q0, qd0


class Plant(ABC):
    """A simulated arm stepped one control period at a time (see the module docstring)."""

    #: engine name as the simulator node's ``engine`` parameter spells it
    engine = ""

    def __init__(self, model: RobotModel, period: float, torque_sensing: str = "motor") -> None:
        if not (math.isfinite(period) and period > 0.0):
            raise ValueError(f"period must be > 0 s, got {period}")
        self.model = model
        self.torque_sensing = torque_sensing
        self.period = float(period)
        self.effort_limit = np.array([j.limits.effort for j in model.joints], dtype=np.float64)
        self.clamped_steps = 0
        self.clamped_joints = np.zeros(model.dof, dtype=np.int64)
        self.steps = 0
        self.payload: Payload = NO_PAYLOAD
        self._wrench: FloatArray = np.zeros(6)
        self.effort: FloatArray = np.zeros(model.dof)  # the joints' torque reading over the last step
        self.applied: FloatArray = np.zeros(model.dof)  # the torque really applied over the last step
        self._link_torque: FloatArray = np.zeros(model.dof)  # link sensing: set by the engine's _advance

    # -- torque reading ---------------------------------------------------------------------------
    @property
    def torque_sensing(self) -> str:
        """Where the joints' torque reading is taken: ``"motor"`` or ``"link"`` (module docstring)."""
        return self._torque_sensing

    @torque_sensing.setter
    def torque_sensing(self, value: str) -> None:
        if value not in TORQUE_SENSING:
            raise ValueError(f"torque_sensing must be one of {list(TORQUE_SENSING)}, got {value!r}")
        reason = self._cannot_read(value)
        if reason:
            raise ValueError(reason)
        self._torque_sensing = value

    def _cannot_read(self, value: str) -> str | None:
        """Why this engine cannot give the ``value`` reading (None: it can)."""
        return None

    # -- state ------------------------------------------------------------------------------------
    @property
    @abstractmethod
    def q(self) -> FloatArray:
        """Joint positions (model order)."""

    @property
    @abstractmethod
    def qd(self) -> FloatArray:
        """Joint velocities (model order)."""

    @property
    @abstractmethod
    def time(self) -> float:
        """Simulated time since the last reset, s."""

    @property
    def true_q(self) -> FloatArray:
        """The true joint positions (a bare engine: :attr:`q`)."""
        return self.q

    @property
    def true_qd(self) -> FloatArray:
        """The true joint velocities (a bare engine: :attr:`qd`)."""
        return self.qd

    @property
    def true_link_torque(self) -> FloatArray | None:
        """The link-side torque over the last step where the plant computes it (``"link"`` sensing), else None."""
        return self._link_torque.copy() if self.torque_sensing == "link" else None

    @property
    def physics(self) -> Plant:
        """The engine plant that integrates the physics (itself; a sensor model's inner plant)."""
        return self

    @abstractmethod
    def reset(self, q: FloatArray, qd: FloatArray) -> None:
        """Start again from ``(q, qd)`` at time 0 (the held external wrench stays)."""

    @abstractmethod
    def _advance(self, tau: FloatArray, duration: float) -> None:
        """Advance the state by ``duration`` s under the (limited) torque ``tau``; with ``"link"``
        torque sensing also set ``_link_torque``, the link-side torque averaged over the duration."""

    def set_payload(self, payload: Payload, model: RobotModel) -> None:
        """The tool now holds ``payload`` (``model`` is the robot model carrying it); the state carries on."""
        self.payload = payload
        self.model = model

    # -- external wrench --------------------------------------------------------------------------
    @property
    def external_wrench(self) -> FloatArray:
        return self._wrench.copy()

    @external_wrench.setter
    def external_wrench(self, wrench: FloatArray) -> None:
        w = np.asarray(wrench, dtype=np.float64)
        if w.shape != (6,) or not np.isfinite(w).all():
            raise StateError(f"external_wrench: expected 6 finite numbers [fx, fy, fz, mx, my, mz], got {w.tolist()}")
        self._wrench = w.copy()

    # -- stepping ---------------------------------------------------------------------------------
    def limit(self, tau: FloatArray) -> FloatArray:
        """``tau`` within the effort limits; counts the clamped joints."""
        t = np.asarray(tau, dtype=np.float64)
        if t.shape != (self.model.dof,) or not np.isfinite(t).all():
            raise StateError(f"tau: expected {self.model.dof} finite torques for {self.model.joint_names}, got {t}")
        over = np.abs(t) > self.effort_limit
        if over.any():
            self.clamped_steps += 1
            self.clamped_joints += over
            t = np.clip(t, -self.effort_limit, self.effort_limit)
        return t

    def step(self, tau: FloatArray, duration: float | None = None) -> FloatArray:
        """Apply ``tau`` (limited) for ``duration`` s (default one period); the torque applied (the
        joints' torque reading is :attr:`effort`)."""
        applied = self.limit(tau)
        self._advance(applied, self.period if duration is None else float(duration))
        self._stepped(applied)
        return applied

    def _stepped(self, applied: FloatArray) -> None:
        """After a step that applied ``applied``: the count, the truth and the torque reading."""
        self.steps += 1
        self.applied = applied
        self.effort = applied if self.torque_sensing == "motor" else self._link_torque.copy()
