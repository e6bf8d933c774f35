"""What users type, parsed the same way by the command line and the ROS nodes.

* numbers with ``pi`` and arithmetic (``pi/2``, ``-3*pi/4``; no names, calls or attributes);
* locked joints ``NAME=POSITION`` (``NAME`` alone = 0; rad or m) — ``--lock-joint`` on the command
  line, the ``locked_joints`` string-array parameter of the nodes;
* joint maps ``BAG_NAME=MODEL_NAME`` (the name in the bag or on the topic, then the model's) —
  ``--joint-map`` on the command line, the ``joint_map`` string-array parameter of the nodes;
* the one wording of a non-finite input: ``<field>: non-finite values (nan or inf) at joint 'b' (nan)``,
  the engine's phrase (``q: non-finite values (nan or inf) at index 2``) with the joint named;
* control gains: nothing, one number for every joint or one per joint (``--kp``, the ``kp`` and ``kd``
  parameters: :func:`gains_error`, :func:`as_gains`).

Errors are :class:`robot_dynamics.errors.RobotDynamicsError` whose message starts with what the
user wrote the value in (``--lock-joint``, ``parameter joint_map``, ...).
"""

from __future__ import annotations

import array
import ast
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.errors import RobotDynamicsError, StateError
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.models.validation import suggest

_OPERATORS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}

_NAMES = {"pi": math.pi, "nan": math.nan, "inf": math.inf}


def parse_number(text: str, what: str, *, finite: bool = True) -> float:
    """A number or a small arithmetic expression with ``pi``; RobotDynamicsError naming ``what``.

    ``nan`` and ``inf`` are read as such; with ``finite`` (default) they are refused.
    """

    def evaluate(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in _NAMES:
            return _NAMES[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return float(_OPERATORS[type(node.op)](evaluate(node.left), evaluate(node.right)))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return float(_OPERATORS[type(node.op)](evaluate(node.operand)))
        raise ValueError

    shown = repr(text) if len(text) <= 40 else repr(text[:37] + "...")
    try:
        value = evaluate(ast.parse(text.strip(), mode="eval").body)
    except (SyntaxError, ValueError, TypeError, ZeroDivisionError, OverflowError, RecursionError, MemoryError):
        raise RobotDynamicsError(f"{what}: {shown} is not a number (numbers, pi and + - * / are allowed)") from None
    if finite and not math.isfinite(value):
        raise RobotDynamicsError(f"{what}: non-finite values (nan or inf): {shown}")
    return value


def non_finite_message(field: str, values: Any, names: Sequence[str] | None = None, label: str = "joint") -> str | None:
    """The message for the first non-finite entry of ``values`` (None when all are finite);
    ``names`` name the entries (``label`` says what they are), else the index is given."""
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size == 0:
        return None
    k = int(bad[0])
    where = f"{label} {names[k]!r}" if names is not None and k < len(names) else f"index {k}"
    return f"{field}: non-finite values (nan or inf) at {where} ({arr[k]})"


def _pairs(items: Iterable[str], what: str, form: str) -> list[tuple[str, str, str]]:
    """``(item, left, right)`` of ``LEFT=RIGHT`` items (``right`` empty when there is no ``=``)."""
    out = []
    for item in items:
        if not isinstance(item, str):
            raise RobotDynamicsError(f"{what}: expected {form} strings, got {item!r}")
        left, sep, right = item.partition("=")
        left, right = left.strip(), right.strip()
        if not left or (sep and not right):
            raise RobotDynamicsError(f"{what}: expected {form}, got {item!r}")
        out.append((item, left, right))
    return out


def parse_locked_joints(items: Iterable[str], what: str = "--lock-joint") -> dict[str, float]:
    """``["finger1", "finger2=0.04", "wrist=pi/2"]`` → ``{"finger1": 0.0, "finger2": 0.04, ...}``."""
    out: dict[str, float] = {}
    for item, name, position in _pairs(items, what, "NAME or NAME=POSITION"):
        if name in out:
            raise RobotDynamicsError(f"{what}: joint {name!r} is locked twice")
        out[name] = parse_number(position, f"{what} {item}") if position else 0.0
    return out


def parse_joint_map(items: Iterable[str], what: str = "--joint-map") -> dict[str, str]:
    """``["fer_joint1=panda_joint1", ...]`` → ``{"fer_joint1": "panda_joint1", ...}`` (bag/topic → model name)."""
    out: dict[str, str] = {}
    targets: dict[str, str] = {}
    for item, bag_name, model_name in _pairs(items, what, "BAG_NAME=MODEL_NAME"):
        if not model_name:
            raise RobotDynamicsError(f"{what}: expected BAG_NAME=MODEL_NAME, got {item!r}")
        if bag_name in out:
            raise RobotDynamicsError(f"{what}: {bag_name!r} is mapped twice")
        if model_name in targets:
            raise RobotDynamicsError(
                f"{what}: {targets[model_name]!r} and {bag_name!r} both map to model joint {model_name!r}"
            )
        out[bag_name] = model_name
        targets[model_name] = bag_name
    return out


def check_joint_map(model: RobotModel, joint_map: Mapping[str, str], what: str = "--joint-map") -> None:
    """Every target is a joint of ``model``, and no bag name is another model joint's own name."""
    names = model.joint_names
    unknown = [m for m in joint_map.values() if m not in names]
    if unknown:
        hint = suggest(unknown[0], names)
        raise RobotDynamicsError(
            f"{what}: robot {model.name!r} has no joint {unknown[0]!r}{hint}; its joints are {names}"
        )
    external = external_names(model.joint_names, joint_map)
    clashes = sorted({n for n in external if external.count(n) > 1})
    if clashes:
        raise RobotDynamicsError(
            f"{what}: {clashes} would name two joints of robot {model.name!r} (map the unmapped joint too)"
        )


def external_names(model_joints: Sequence[str], joint_map: Mapping[str, str]) -> list[str]:
    """The bag/topic name of each model joint (its own name when it is not mapped)."""
    inverse = {m: b for b, m in joint_map.items()}
    return [inverse.get(j, j) for j in model_joints]


def renamed_model(model: RobotModel, joint_map: Mapping[str, str], what: str = "joint_map") -> RobotModel:
    """``model`` with its joints named as on the topics (checked with :func:`check_joint_map`).

    The ROS nodes run on this model, so every interface (joint states, trajectories, outputs,
    service requests and responses) speaks the topic's names.
    """
    if not joint_map:
        return model
    check_joint_map(model, joint_map, what)
    names = external_names(model.joint_names, joint_map)
    joints = tuple(replace(j, name=name) for j, name in zip(model.joints, names, strict=True))
    return model.with_changes(joints=joints)


def per_joint(values: ArrayLike, n: int, what: str) -> FloatArray:
    """``(n,)`` float64 values from one per joint or one for all; StateError naming ``what`` otherwise."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size == 1:
        return np.full(n, float(v[0]))
    if v.size != n:
        raise StateError(f"{what}: expected 1 or {n} values (one per joint), got {v.size}")
    return v


def _gain_items(value: object) -> list[object]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple, np.ndarray, array.array)) else [value]  # rclpy: array


def gains_error(value: object, n: int | None) -> str | None:
    """Why ``value`` is not a set of gains for ``n`` joints (None: it is; ``n`` None: any length).

    Accepted: nothing (``None`` or ``[]``: zero gains), one number (the same gain on every joint) or
    ``n`` numbers; integers are accepted as ROS users write them (``[100, 100, 50]``); every gain
    finite and ``>= 0``.
    """
    items = _gain_items(value)
    numbers = [
        float(v) for v in items if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
    ]
    if len(numbers) != len(items):
        return f"expected numbers (one per joint), got {value!r}"
    if n is not None and len(items) not in (0, 1, n):
        return f"expected {n} gains (one per joint, model joint order) or one for all, got {len(items)}"
    for k, v in enumerate(numbers):
        if not math.isfinite(v):
            return f"gain {k} is not finite ({v})"
        if v < 0.0:
            return f"gain {k} is negative ({v:g}); gains must be >= 0"
    return None


def as_gains(value: object, n: int) -> FloatArray:
    """The gains ``(n,)`` of a parameter value (:func:`gains_error`); :class:`StateError` if invalid."""
    error = gains_error(value, n)
    if error:
        raise StateError(error)
    numbers = np.array(_gain_items(value), dtype=np.float64)
    gains = np.zeros(n) if numbers.size == 0 else np.full(n, numbers[0]) if numbers.size == 1 else numbers
    gains.setflags(write=False)
    return gains
