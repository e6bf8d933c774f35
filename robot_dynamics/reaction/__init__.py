"""Reactions to a collision: what the control law commands once the arm hit something (ROS-free).

Haddadin, De Luca & Albu-Schäffer, "Robot Collisions: A Survey on Detection, Isolation, and
Identification", IEEE T-RO 33(6), 2017, split collision handling into detection, isolation,
identification, classification and **reaction**; the contact node detects (the momentum observer's
``r``, :mod:`robot_dynamics.contact`), this module reacts. A reaction is triggered by a collision
event (a joint's ``|r|`` rose above its threshold: :class:`CollisionReport`), cancels the trajectory
and commands, at every joint state from the next one on, with ``c(q)`` the gravity torque:

* ``stop``: hold the measured pose at the reaction's first joint state, ``q_s``: the law's own holding
  law at ``(q_s, 0, 0)`` — for ``pd_feedforward`` (and the laws without a hold position, ``feedforward``
  and ``pd``, which react with it) ``τ = c(q) + b(0) + Kp (q_s - q) - Kd qd``; for ``computed_torque``
  ``τ = D(q) (Kp (q_s - q) - Kd qd) + h + c + b(0)``. Friction at the hold's zero velocity (no
  compensation at rest, as the feedback laws hold; control.py, "Friction velocity"). Plus the braking
  ``τ_b`` below.
* ``float``: ``τ = c(q) + κ b(qd) + τ_b`` with ``b`` the model's smooth friction at the *measured*
  velocity and ``κ`` = ``float_friction`` (0.5 by default) — the reflex towards zero stiffness
  (Haddadin et al. §VIII, "torque control with gravity compensation"): no position feedback, so the
  arm yields to the contact. Full friction compensation at a measured velocity is a positive velocity
  feedback of slope ``dF/dv`` (up to ``F_c / w`` for a Coulomb level ``F_c`` smoothed over ``w``), which
  on a noisy velocity flips with the noise; with ``κ < 1`` the friction left, ``(1 - κ) b``, still
  opposes every motion (the loop stays passive as long as the model's friction does not exceed the
  arm's), and at rest the arm's static friction, up to ``F_c``, outweighs the ``κ F_c`` the noise can
  command: the arm neither drifts nor buzzes. ``κ = 0``: gravity compensation alone (the arm yields only
  to a force above its static friction).
* **braking** (``stop`` and ``float``): ``τ_b = -K_b D(q) qd``, ``K_b`` = ``damping`` (50 /s by default):
  alone it would decelerate the arm as ``q'' = -K_b qd``, its momentum gone with time constant ``1/K_b``.
  Against a compliant obstacle the arm's momentum at the detection, not the controller, sets the force
  that follows (the obstacle stops the arm, ``½ m v² = ½ k x²``): without braking ``stop`` brakes only
  through its ``Kd`` and ``float`` not at all. With it (UR5 at 0.4 m/s into a 10 kN/m table, detection
  3 ms after the first contact) the peak force after the impact fell from 76 to 60 N (``stop``) and from
  93 to 65 N (``float``), against 145 N without a reaction. It is damping, not stiffness: ``float``
  still yields to a steady push. The loop's delay ``L`` (measurement + command delay + a control period)
  bounds it: ``q'' = -K_b qd(t - L)`` is well damped for ``K_b L`` up to about 0.3 and oscillates towards
  ``K_b L = π/2``; 50 /s suits ``L`` up to 6 ms (a Franka at 1 kHz, a UR e-Series at 500 Hz with one
  period of delay each way), a 125 Hz arm with two periods each way (``L`` = 40 ms) needs at most 7 /s.
* ``reflex``: ``τ = c(q) + clip(g r_0, ±f τ_max)`` for ``reflex_duration`` s, ``r_0`` the external
  torque of the collision event, ``g`` = ``reflex_gain``, ``τ_max`` the effort limits and ``f`` =
  ``reflex_fraction`` (a joint without an effort limit: ``g r_0`` unclipped): ``r ≈ τ_ext = J^T F`` is the
  torque the obstacle exerts, so a torque along it moves the arm the way the obstacle pushes — away
  (Haddadin et al. §VIII, "reflex reaction"; De Luca, Albu-Schäffer, Haddadin & Hirzinger, IROS 2006).
  Then ``stop`` at the measured pose of the first joint state after the reflex.
* ``none`` (the default): no reaction; the law is :class:`~robot_dynamics.control.Controller`'s, unchanged.

**Re-arming.** While a reaction runs, a trajectory received before the contact cleared (the latest
collision event's ``in_collision`` false) is refused; the first one received after it re-arms: the
reaction goes on (its hold) until that trajectory activates (the activation rules of
:mod:`robot_dynamics.feedforward`), and from that joint state the law tracks it. Collision events
during a reaction only tell whether the contact cleared. A reaction runs under the strategy in force
when it started.

**Reports** (:class:`ReactionRecord`): one when a reaction starts — the strategy, the collision
event's stamp (the joint state at which it was detected), the stamp of the reaction's first command
and the time between them, the joints in collision — and one when it ends (re-armed).

The node runs :class:`ReactingController` one joint state at a time (collision events in between, as
received); :func:`reaction_batch` computes the same commands for a recorded stream with its collision
events and trajectories: the reaction windows from a walk over the events and trajectories (not over
the samples), the law of :func:`~robot_dynamics.control.control_batch` elsewhere, the strategies'
torques vectorised over each window.
"""

from robot_dynamics.reaction.batch import ReactionReplay, ReactionWindow, reaction_batch, reaction_windows
from robot_dynamics.reaction.controller import ReactingController, ReactionCounters, ReactionState
from robot_dynamics.reaction.strategies import (
    BRAKING_DELAY_BOUND,
    HOLDING_LAWS,
    NO_REACTION,
    REACTIONS,
    CollisionReport,
    ReactionRecord,
    ReactionSettings,
    ReactionStrategy,
    braking_delay_problem,
    braking_for_delay,
    braking_torque,
    float_torque,
    hold_settings,
    reaction_error,
    reflex_torque,
    stop_torque,
)

__all__ = [
    "BRAKING_DELAY_BOUND",
    "HOLDING_LAWS",
    "NO_REACTION",
    "REACTIONS",
    "CollisionReport",
    "ReactingController",
    "ReactionCounters",
    "ReactionRecord",
    "ReactionReplay",
    "ReactionSettings",
    "ReactionState",
    "ReactionStrategy",
    "ReactionWindow",
    "braking_delay_problem",
    "braking_for_delay",
    "braking_torque",
    "float_torque",
    "hold_settings",
    "reaction_batch",
    "reaction_error",
    "reaction_windows",
    "reflex_torque",
    "stop_torque",
]
