"""The contact node's parameters: declarations, defaults and the checks that refuse a bad value.

``PARAMETERS`` have one type (bool, double, string); ``PER_JOINT`` are a number or an array with one
value per joint (declared with dynamic typing: ROS users write ``50`` or ``[50, 50, 40]``), checked
by :func:`per_joint_error` once the model's joint count is known. The node's behaviour for each is in
docs/contact.md.
"""

from __future__ import annotations

import math
from typing import Any

from robot_dynamics.contact import (
    DEFAULT_CLEAR_RATIO,
    DEFAULT_REVERSAL_VELOCITY,
    check_clear_ratio,
    check_reversal,
    check_thresholds,
)
from robot_dynamics.dynamics.contact_wrench import DEFAULT_DAMPING, DEFAULT_FLOOR
from robot_dynamics.dynamics.momentum_observer import EFFORT_TIMINGS, observer_gain
from robot_dynamics.errors import StateError
from robot_dynamics.ros.robot_node import check_bool, check_choice

DEFAULT_GAIN = 50.0
WRENCH_FRAMES = ("tool", "base")


def numbers(value: Any) -> list[float]:
    """A double / integer / array parameter value as floats; StateError for anything else."""
    if isinstance(value, bool) or value is None:
        raise StateError(f"expected a number or an array of numbers, got {value!r}")
    if isinstance(value, (int, float)):
        return [float(value)]
    try:
        out = [float(v) for v in value if not isinstance(v, bool)]
    except (TypeError, ValueError):
        out = []
    if not out or len(out) != len(value):
        raise StateError(f"expected a number or an array of numbers, got {value!r}")
    return out


def non_negative(value: Any) -> str | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0.0
    return None if ok else f"expected a finite number >= 0, got {value!r}"


def reason(check: Any) -> Any:
    """A :data:`ParameterCheck` of an engine check that raises StateError."""

    def run(value: Any) -> str | None:
        try:
            check(value)
        except (StateError, TypeError, ValueError) as exc:
            return str(exc).split(": ", 1)[-1]
        return None

    return run


#: Hz of joint-state time: the wrench (a Jacobian and its SVD, ~80 µs, and a second DDS write) at every
#: 1 kHz state would triple the node's work per state and stretch the external torque's latency tail.
DEFAULT_WRENCH_RATE = 100.0

#: Run-time parameters of one type: name -> (default, description, check).
PARAMETERS: dict[str, tuple[Any, str, Any]] = {
    "friction": (True, "observer: the model's friction b(qd)", check_bool),
    "smooth_friction": (True, "observer: chatter-free (smooth) friction model", check_bool),
    "effort_timing": (
        "sampled",
        "observer: joint_states effort is a sample of the joint torque at its state (sampled: a drive's, a torque "
        "sensor's) or the torque held over the step into it (step: a simulator's, this package's simulator_node)",
        check_choice(EFFORT_TIMINGS),
    ),
    "clear_ratio": (
        DEFAULT_CLEAR_RATIO,
        "a joint leaves collision below clear_ratio x its threshold (hysteresis), 0 < clear_ratio <= 1",
        reason(check_clear_ratio),
    ),
    "wrench_frame": ("tool", "axes of external_wrench: tool | base", check_choice(WRENCH_FRAMES)),
    "wrench_damping": (DEFAULT_DAMPING, "damped least-squares lambda of the wrench (>= 0)", non_negative),
    "wrench_singular_value_floor": (DEFAULT_FLOOR, "Jacobian singular values <= it are dropped (>= 0)", non_negative),
    "answer_every_state": (
        False,
        "external_torque for every joint state (false: one that a newer state queued behind when the node got "
        "to it is observed, not answered: the newest is)",
        check_bool,
    ),
    "wrench_rate": (
        DEFAULT_WRENCH_RATE,
        "external_wrench messages per second of joint-state time, Hz (0 = one per joint state)",
        non_negative,
    ),
}
#: Run-time parameters that are a number or an array (one per joint): declared with dynamic typing.
PER_JOINT: dict[str, tuple[Any, str]] = {
    "observer_gain": (DEFAULT_GAIN, "observer gain K, 1/s: one value or one per joint (> 0)"),
    "thresholds": (None, "collision thresholds, N·m (N): one value or one per joint (> 0); unset = no detection"),
    "reversal_thresholds": (
        0.0,
        "added to the thresholds near velocity reversals (x the reversal weight), N·m (N), >= 0",
    ),
    "reversal_velocity": (DEFAULT_REVERSAL_VELOCITY, "a joint slower than this is near a reversal, rad/s (m/s), >= 0"),
}


def per_joint_error(name: str, value: Any, n: int | None) -> str | None:
    """Why ``value`` is not a valid ``PER_JOINT`` parameter ``name`` for ``n`` joints (None: it is;
    ``n`` None: any length, before the model is known)."""
    if name == "thresholds" and value is None:
        return None
    try:
        values = numbers(value)
        count = len(values) if n is None else n
        if name.startswith("reversal_"):
            check_reversal(values, count, name)
        elif name == "observer_gain":
            observer_gain(values, count)
        else:
            check_thresholds(values, count)
    except StateError as exc:
        return str(exc).split(": ", 1)[-1]
    return None
