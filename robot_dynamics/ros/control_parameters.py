"""The feed-forward node's control law as ROS parameters: declared, validated, changed at run time.

:class:`ControlParameters` gives a node the parameters of :mod:`robot_dynamics.control` — ``control_law``,
``kp``, ``kd``, ``feedforward_source``, ``limit_efforts``, ``state_timeout``, ``stale_action``, and the
collision reaction of :mod:`robot_dynamics.reaction` (``reaction``, ``reaction_float_friction``,
``reaction_reflex_gain``, ``reaction_reflex_fraction``, ``reaction_reflex_duration``, ``reaction_damping``) — each
changeable at run time
and refused with the reason when invalid (NaN, negative or wrong-length gains; a gain array may be
integers, as ROS users write them); holds the :class:`~robot_dynamics.reaction.ReactingController` the node
calls per joint state; runs the stale-state watchdog (a timer on the node's clock, so simulated time
under ``use_sim_time``, every ``state_timeout / 4``) that publishes the stop command through the
node's own outputs; and reports the law in force, clamp counts and stale events in diagnostics.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.clock import Clock

from robot_dynamics.control import (
    CONTROL_LAWS,
    FEEDFORWARD_SOURCES,
    STALE_ACTIONS,
    ControlLaw,
    ControlSettings,
)
from robot_dynamics.errors import StateError
from robot_dynamics.feedforward import FeedforwardLaw
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.reaction import REACTIONS, ReactingController, ReactionSettings, braking_delay_problem
from robot_dynamics.ros.messages import StartupError
from robot_dynamics.ros.parameters import check_non_negative
from robot_dynamics.ros.robot_node import ParameterCheck, RobotNode, check_bool, check_choice
from robot_dynamics.trajectory import JointTrajectorySampler
from robot_dynamics.user_input import as_gains, gains_error

#: ``publish(stamp ns, position, velocity, torque) -> whether anything was written``
Publish = Callable[[int, FloatArray, FloatArray, FloatArray], bool]
GAIN_UNITS = {"kp": "N m/rad; computed_torque: 1/s^2", "kd": "N m s/rad; computed_torque: 1/s"}


def clock_reader(clock: Clock) -> Callable[[], int]:
    """``clock``'s time in ns, read as ``Clock.now()`` reads it (simulated time under ``use_sim_time``)
    without building a ``Time`` object: about a quarter of ``now()``'s cost, paid on every joint state."""
    handle = clock.handle

    def now() -> int:
        with handle:
            return int(handle.get_now().nanoseconds)

    return now


def check_timeout(value: Any) -> str | None:
    """A :data:`ParameterCheck` for ``state_timeout``: finite seconds ``>= 0``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return f"expected seconds >= 0 (0 = never stale), got {value!r}"
    return None


class ControlParameters:
    """The control-law parameters of ``node`` (declared now), its controller and stale watchdog."""

    def __init__(self, node: RobotNode, publish: Publish) -> None:
        self.node = node
        self.publish = publish
        self.now = clock_reader(node.get_clock())  # the node's clock: simulated time under use_sim_time
        self.settings = ControlSettings()
        self.reaction = ReactionSettings()
        self.controller: ReactingController | None = None
        self._gain_values: dict[str, Any] = {}
        self._watchdog: Any = None
        node.declare_dynamic(
            "control_law",
            "feedforward",
            "feedforward | pd (Kp e + Kd e_dot, no model) | pd_feedforward (tau_ff + Kp e + Kd e_dot) | "
            "computed_torque (D(q)(qdd_d + Kp e + Kd e_dot) + h + c + b)",
            check_choice(CONTROL_LAWS),
            self._set_law,
        )
        for name, unit in GAIN_UNITS.items():
            self._declare_gains(name, f"{name} per joint, model joint order ({unit}); one number = every joint")
        node.declare_dynamic(
            "feedforward_source",
            "model",
            "tau_ff while tracking: model (inverse dynamics at the desired state) | trajectory (the trajectory's "
            "efforts, interpolated; a trajectory without efforts is refused)",
            check_choice(FEEDFORWARD_SOURCES),
            lambda value: self.update(feedforward_source=str(value)),
        )
        node.declare_dynamic(
            "limit_efforts",
            False,
            "clamp the command to the robot file's effort limits (counted in diagnostics)",
            check_bool,
            lambda value: self.update(limit_efforts=bool(value)),
        )
        node.declare_dynamic(
            "state_timeout",
            0.0,
            "s without a joint state after which the command stops (stale_action); 0 = never",
            check_timeout,
            self._set_state_timeout,
        )
        for name, what in (
            ("measurement_delay", "age of a joint state's measurement at its stamp (the driver's latency), s"),
            ("command_delay", "time from a command to its action at the joints, s"),
        ):
            node.declare_dynamic(
                name,
                0.0,
                f"{what}: the feedback compares the measurement with the desired state of its time, the "
                "feed-forward anticipates the command's (0 = none)",
                check_non_negative("s"),
                partial(self._set_delay, name),
            )
        node.declare_dynamic(
            "stale_action",
            "zero",
            "the command while the joint states are stale: zero (torque) | hold (gravity at the last position)",
            check_choice(STALE_ACTIONS),
            lambda value: self.update(stale_action=str(value)),
        )

        node.declare_dynamic(
            "reaction",
            "none",
            "reaction to a collision event (topic collision): none | stop (hold the pose at detection) | float "
            "(gravity + a share of the friction compensation: the arm yields) | reflex (a bounded torque along the "
            "external torque, then stop)",
            check_choice(REACTIONS),
            lambda value: self._set_reaction(strategy=str(value)),
        )
        for name, default, description in (
            ("float_friction", 0.5, "float: share of the model's friction compensated at the measured velocity, 0-1"),
            ("reflex_gain", 1.0, "reflex: torque per N m of the event's external torque"),
            ("reflex_fraction", 0.2, "reflex: bound of the reflex torque, share of each joint's effort limit, 0-1"),
            ("reflex_duration", 0.1, "reflex: s of the reflex before the arm stops"),
            ("damping", 50.0, "stop and float: braking -K_b D(q) qd, K_b in 1/s (keep K_b x loop delay <= 0.3)"),
        ):
            node.declare_dynamic(
                f"reaction_{name}",
                default,
                description,
                partial(self._reaction_error, name),
                partial(self._set_reaction_value, name),
            )

    # -- parameters -------------------------------------------------------------------------------
    def _reaction_error(self, name: str, value: Any) -> str | None:
        try:
            replace(self.reaction, **{name: value})
        except StateError as exc:
            return str(exc)
        return None

    def _set_reaction_value(self, name: str, value: Any) -> None:
        self._set_reaction(**{name: float(value)})

    def _set_reaction(self, **changes: Any) -> None:
        """New reaction settings; a reaction in progress finishes under its own strategy."""
        self.reaction = replace(self.reaction, **changes)
        if self.controller is not None:
            self.controller.reaction.settings = self.reaction
        self._check_braking()

    def _check_braking(self) -> None:
        """A warning when the reaction's braking is too strong for the delays the node is told of."""
        problem = braking_delay_problem(self.reaction, self.settings.measurement_delay + self.settings.command_delay)
        if problem:
            self.node.get_logger().warning(problem)

    def update(self, **changes: Any) -> None:
        """New settings; the next joint state (and the watchdog) reads them."""
        self.settings = replace(self.settings, **changes)
        if self.controller is not None:
            self.controller.settings = self.settings

    def _set_delay(self, name: str, value: float) -> None:
        self.update(**{name: float(value)})
        self._check_braking()

    def _set_law(self, value: str) -> None:
        if value != self.settings.law and self.controller is not None:
            self.controller.release_hold()  # a new hold begins where the arm is now, not where it was
        self.update(law=str(value))

    def _declare_gains(self, name: str, description: str) -> None:
        """A run-time gain parameter: unset (zeros), one number or one per joint; integers accepted."""
        node = self.node
        check: ParameterCheck = lambda value: gains_error(value, None if node.model is None else node.model.dof)  # noqa: E731
        node.declare_optional(name, description, check=check, apply=lambda value: self._set_gains(name, value))

    def _set_gains(self, name: str, value: Any) -> None:
        self._gain_values[name] = value
        if self.node.model is not None:
            self.update(**{name: as_gains(value, self.node.model.dof)})

    def _set_state_timeout(self, value: float) -> None:
        self.update(state_timeout=float(value))
        if self._watchdog is not None:
            self.node.destroy_timer(self._watchdog)
            self._watchdog = None
        if value > 0.0:  # on the node's clock: simulated time under use_sim_time
            self._watchdog = self.node.create_timer(float(value) / 4.0, self._check_stale)

    # -- the model --------------------------------------------------------------------------------
    def on_model(self, model: RobotModel, law: FeedforwardLaw) -> None:
        """A (new) robot: the gains checked against its joints, a fresh controller."""
        gains = []
        for name, value in self._gain_values.items():
            error = gains_error(value, model.dof)
            if error and self.node.model is None:
                raise StartupError(f"parameter {name}: {error} (robot {model.name!r} has {model.dof} joints)")
            if error:
                self.node.warnings.warn(name, f"parameter {name}: {error} for the new robot {model.name!r}; now zero")
            gains.append(as_gains(None if error else value, model.dof))
        self.settings = replace(self.settings, kp=gains[0], kd=gains[1])
        self.controller = ReactingController(ControlLaw(model, law), self.settings, self.reaction)

    def on_payload(self, model: RobotModel, law: FeedforwardLaw) -> None:
        """The same joints with a payload: the controller keeps its state, the law changes."""
        if self.controller is not None:
            self.controller.law = ControlLaw(model, law)

    def release_hold(self) -> None:
        if self.controller is not None:
            self.controller.release_hold()

    def trajectory_problem(self, sampler: JointTrajectorySampler) -> str | None:
        """Why the law cannot track ``sampler`` (None: it can): the trajectory source needs efforts; a
        reaction takes a new trajectory only once the contact has cleared."""
        if self.settings.feedforward_source == "trajectory" and sampler.efforts is None:
            return "feedforward_source is 'trajectory' but the trajectory's points carry no effort"
        problem = None if self.controller is None else self.controller.reaction.trajectory_problem()
        if problem and self.controller is not None:
            self.controller.reaction.counters.refused += 1
        return problem

    def trajectory_accepted(self) -> None:
        """A trajectory was accepted: during a reaction (the contact cleared) it re-arms."""
        if self.controller is not None:
            self.controller.reaction.accepted()

    # -- stale state ------------------------------------------------------------------------------
    def _check_stale(self) -> None:
        """Watchdog: the stop command while no joint state is newer than ``state_timeout``."""
        controller = self.controller
        if controller is None:
            return
        now = self.now()
        was_stale = controller.stale
        tau = controller.stale_command(now)
        if tau is None:
            return
        if not was_stale:
            timeout = self.settings.state_timeout
            self.node.get_logger().warning(f"no joint state for {timeout:g} s: commanding {self.stale_text()}")
        position = controller.last_position if controller.last_position is not None else np.zeros_like(tau)
        self.publish(now, position, np.zeros_like(tau), tau)

    def stale_text(self) -> str:
        return "zero torque" if self.settings.stale_action == "zero" else "gravity hold at the last position"

    # -- diagnostics ------------------------------------------------------------------------------
    def diagnostic_level(self) -> tuple[bytes, str] | None:
        if self.controller is not None and self.controller.stale:
            return DiagnosticStatus.WARN, f"joint states stale: commanding {self.stale_text()}"
        if self.controller is not None and self.controller.reaction.engaged:
            return DiagnosticStatus.WARN, f"reacting to a collision: {self.controller.reaction.strategy}"
        return None

    def diagnostic_values(self) -> list[tuple[str, str]]:
        """The law in force, gains, limits, clamp counts (per joint) and the stale-state rule."""
        s, controller = self.settings, self.controller

        def numbers(values: FloatArray | None) -> str:
            return "" if values is None else ",".join(f"{v:g}" for v in values)

        values = [
            ("control_law", s.law),
            ("reaction", self.reaction.strategy),
            ("kp", numbers(s.kp)),
            ("kd", numbers(s.kd)),
            ("feedforward_source", s.feedforward_source),
            ("limit_efforts", str(s.limit_efforts).lower()),
            ("state_timeout", f"{s.state_timeout:g}"),
            ("stale_action", s.stale_action),
        ]
        if controller is None:
            return values
        c = controller.counters
        names = controller.law.model.joint_names
        state = "waiting" if controller.last_received is None else "stale" if controller.stale else "fresh"
        return [
            *values,
            ("clamped_commands", str(c.clamped_commands)),
            *((f"clamped[{name}]", str(int(k))) for name, k in zip(names, c.clamped_joints, strict=True) if k),
            ("joint_states", state),
            ("stale_events", str(c.stale_events)),
            ("stale_commands", str(c.stale_commands)),
            *self.reaction_values(controller),
        ]

    @staticmethod
    def reaction_values(controller: ReactingController) -> list[tuple[str, str]]:
        """The reaction's state and counters: collision events, reactions, trajectories refused, re-arms."""
        state = controller.reaction
        c = state.counters
        phase = {"": "armed" if state.settings.armed else "off", "pending": "pending", "reacting": state.strategy}
        return [
            ("reaction_state", phase[state.phase]),
            ("in_collision", str(state.in_collision).lower()),
            ("collision_events", str(c.events)),
            ("reactions", str(c.reactions)),
            ("reaction_refused_trajectories", str(c.refused)),
            ("reaction_rearmed", str(c.rearmed)),
        ]
