"""The collision case: an arm's motion that runs into an obstacle, and what a run of it measured (no ROS).

* **The motion** (:func:`collision_motion`): from the start pose ``q0``, the tool moves along a
  direction ``u`` (given, or towards the first obstacle's centre) on the joint-space line
  ``q(s) = q0 + s (q1 - q0)``, ``q1`` the pose whose tool point is ``L`` further along ``u``
  (positional inverse kinematics, damped least squares), with a quintic rest-to-rest time law
  ``s(t) = 10τ³ - 15τ⁴ + 6τ⁵``, ``τ = t / T``. The plant's collision geometry is swept along the line
  (:meth:`MujocoPlant.contacts`) for the first touch of an obstacle at ``s*``; the motion then ends at
  ``s = min(2 s*, 1)``, so the arm touches about half-way, where the time law is fastest, and its duration
  ``T = 1.875 ℓ / v`` gives the tool a peak speed ``v`` over the tool path's chord ``ℓ`` (1.875 = the
  quintic's peak ``ds/dτ``). The arm is at rest at the start, as a case begins from a hold.
* **What a run measured** (:func:`measure`): from the obstacles' force on the arm (the simulator's ground
  truth), the contact node's collision events and the feed-forward node's reaction report: the first
  contact, the tool's speed just before it, the detection and the reaction's first command after it,
  the peak force of the impact (the first ``IMPACT`` s), the peak force after it (the arm pushing on:
  what a reaction changes; ISO/TS 15066 tells the transient contact from the quasi-static one) and the
  force 0.5 s after the contact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robot_dynamics.dynamics import forward_kinematics, jacobian
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.experiment.motion import POINTS_RATE, Motion
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.plant.obstacles import Obstacles

#: The tool's travel searched for the first contact, m.
SEARCH_DISTANCE = 0.6
#: Samples of the joint line searched for the first contact.
SEARCH_SAMPLES = 300
#: Peak ds/dτ of the quintic rest-to-rest time law.
QUINTIC_PEAK = 1.875
#: The force long after the contact: this long after it, s.
LATE = 0.5
#: The impact: the first this many s of the contact, whose force the arm's momentum and the obstacle's
#: stiffness set before a command can act (a rigid obstacle stops the tool within a physics step or two).
IMPACT = 0.01


class CollisionCaseError(RobotDynamicsError):
    """The case cannot run as asked (the motion misses the obstacle, the pose is out of reach, ...)."""


def tool_point(model: RobotModel, q: FloatArray) -> FloatArray:
    return np.asarray(forward_kinematics(model, q), dtype=np.float64)[..., :3, 3]


def reach_point(model: RobotModel, q0: FloatArray, target: FloatArray, iterations: int = 100) -> FloatArray:
    """The pose near ``q0`` whose tool point is ``target`` (positional damped least squares, within the
    joint limits); CollisionCaseError when it stays more than 1 mm off."""
    lower = np.array([j.limits.lower for j in model.joints])
    upper = np.array([j.limits.upper for j in model.joints])
    q = np.array(q0, dtype=np.float64)
    for _ in range(iterations):
        error = target - tool_point(model, q)
        if np.linalg.norm(error) < 1e-6:
            break
        J = np.asarray(jacobian(model, q, frame="world"))[:3]
        step = J.T @ np.linalg.solve(J @ J.T + 1e-4 * np.eye(3), error)
        q = np.clip(q + step, lower, upper)
    off = float(np.linalg.norm(target - tool_point(model, q)))
    if off > 1e-3:
        raise CollisionCaseError(
            f"the tool cannot reach {np.round(target, 3).tolist()} from the start ({off:.3f} m off)"
        )
    return q


class TouchingPlant:
    """What :func:`collision_motion` needs of a plant: the touching pairs at a pose."""

    def contacts(self, q: FloatArray) -> list[tuple[str, str]]:  # pragma: no cover - a protocol
        raise NotImplementedError


def default_direction(model: RobotModel, q0: FloatArray, obstacles: Obstacles) -> FloatArray:
    """From the tool point at ``q0`` towards the first obstacle's centre."""
    if not len(obstacles):
        raise CollisionCaseError("no obstacles: the case needs one to run into")
    d = np.asarray(obstacles.items[0].position) - tool_point(model, q0)
    return d / np.linalg.norm(d)


def collision_motion(
    model: RobotModel,
    plant: TouchingPlant,
    q0: FloatArray,
    direction: Sequence[float] | FloatArray,
    speed: float,
    names: Sequence[str] | None = None,
) -> tuple[Motion, float]:
    """The motion of the module docstring and the time of its first contact along the sweep, s."""
    if not (math.isfinite(speed) and speed > 0.0):
        raise CollisionCaseError(f"speed must be > 0 m/s, got {speed}")
    u = np.asarray(direction, dtype=np.float64)
    if u.shape != (3,) or not np.isfinite(u).all() or np.linalg.norm(u) == 0.0:
        raise CollisionCaseError(f"direction: expected 3 finite numbers, not all 0, got {list(direction)}")
    u = u / np.linalg.norm(u)
    if plant.contacts(q0):
        raise CollisionCaseError(f"the start pose already touches: {plant.contacts(q0)}")
    p0 = tool_point(model, q0)
    q1 = reach_point(model, q0, p0 + SEARCH_DISTANCE * u)
    fractions = np.linspace(0.0, 1.0, SEARCH_SAMPLES + 1)
    touching = next((s for s in fractions[1:] if plant.contacts(q0 + s * (q1 - q0))), None)
    if touching is None:
        raise CollisionCaseError(
            f"the tool's path along {np.round(u, 3).tolist()} touches no obstacle within {SEARCH_DISTANCE} m"
        )
    end = min(2.0 * float(touching), 1.0)
    q_end = q0 + end * (q1 - q0)
    chord = float(np.linalg.norm(tool_point(model, q_end) - p0))
    duration = math.ceil(QUINTIC_PEAK * chord / speed * POINTS_RATE) / POINTS_RATE
    t = np.arange(round(duration * POINTS_RATE) + 1) / POINTS_RATE
    tau = t / duration
    s = 10 * tau**3 - 15 * tau**4 + 6 * tau**5
    ds = (30 * tau**2 - 60 * tau**3 + 30 * tau**4) / duration
    dds = (60 * tau - 180 * tau**2 + 120 * tau**3) / duration**2
    delta = q_end - q0
    motion = Motion(
        tuple(names or model.joint_names), t, q0 + s[:, None] * delta, ds[:, None] * delta, dds[:, None] * delta
    )
    contact_s = float(touching) / end  # the path fraction of the first touch
    contact_time = float(np.interp(contact_s, s, t))
    return motion, contact_time


@dataclass(frozen=True)
class CaseMeasures:
    """One reaction's run (times in s from the first contact, forces in N; None: not seen)."""

    reaction: str
    contact: float | None  # s from the motion's start (ground truth: the first non-zero obstacle force)
    tool_speed: float | None  # m/s at the first contact
    detection: float | None  # the first collision event's state after the contact
    first_command: float | None  # the reaction's first command (its joint state's stamp)
    reported_latency: float | None  # the node's report: first command - collision stamp
    peak_force: float  # after the impact: from IMPACT s after the contact on
    impact_force: float  # the impact's: the first IMPACT s of the contact
    late_force: float | None  # LATE s after the contact
    false_events: int  # collision events raised before the first contact


def measure(
    reaction: str,
    model: RobotModel,
    start_ns: int,
    force_stamps: FloatArray,
    force: FloatArray,
    state_stamps: FloatArray,
    q: FloatArray,
    qd: FloatArray,
    raised_stamps: Sequence[int],
    first_command_ns: int | None,
    reported_latency: float | None,
) -> CaseMeasures:
    """The measures of one run: ``force`` ``(N,)`` the obstacles' force magnitude at ``force_stamps`` ns,
    the joint states ``q``, ``qd`` at ``state_stamps``, the stamps of the raised collision events and of the
    reaction's first command (None: no reaction)."""
    touching = np.flatnonzero(force > 0.0)
    peak = float(force.max()) if force.size else 0.0
    if not touching.size:
        return CaseMeasures(reaction, None, None, None, None, reported_latency, peak, peak, None, len(raised_stamps))
    contact_ns = int(force_stamps[touching[0]])
    impact = force_stamps < contact_ns + round(IMPACT * 1e9)
    peak = float(force[~impact].max()) if (~impact).any() else 0.0
    k = max(int(np.searchsorted(state_stamps, contact_ns)) - 1, 0)  # the last state before the contact
    J = np.asarray(jacobian(model, q[k], frame="world"))[:3]
    speed = float(np.linalg.norm(J @ qd[k]))
    late_ns = contact_ns + round(LATE * 1e9)
    late = float(np.interp(late_ns, force_stamps, force)) if force_stamps[-1] >= late_ns else None
    after = [s for s in raised_stamps if s >= contact_ns]
    before = [s for s in raised_stamps if s < contact_ns]

    def since(ns: int | None) -> float | None:
        return None if ns is None else (ns - contact_ns) * 1e-9

    return CaseMeasures(
        reaction,
        (contact_ns - start_ns) * 1e-9,
        speed,
        since(after[0]) if after else None,
        since(first_command_ns),
        reported_latency,
        peak,
        float(force[impact].max()),
        late,
        len(before),
    )


__all__ = [
    "IMPACT",
    "LATE",
    "CaseMeasures",
    "CollisionCaseError",
    "collision_motion",
    "default_direction",
    "measure",
    "reach_point",
    "tool_point",
]
