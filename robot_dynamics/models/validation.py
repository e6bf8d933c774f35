"""Field-level validation shared by the robot-file loaders (DH YAML, URDF).

Every failure raises :class:`robot_dynamics.errors.ModelError` naming the file (``source``) and
the field path (``joints[2].link.inertia``, ``joint[elbow]/limit@lower``), so a user can fix the
file without reading code. Physical plausibility checks (mass, inertia, limits) live here too, so
both loaders apply the same rules.
"""

from __future__ import annotations

import ast
import difflib
import math
import operator
import os
import re
import sys
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ModelError
from ..errors import ModelWarning as ModelWarning  # re-exported (it lives in robot_dynamics.errors)
from ..model import FloatArray, rpy_matrix

INERTIA_RELATIVE_TOLERANCE = 1e-9  # of the inertia's scale (sum of the absolute principal moments)
INERTIA_ABSOLUTE_TOLERANCE = 1e-12  # kg m^2: round-off in tiny links (e.g. +-2.4e-35 principal moments)


_PACKAGE_DIRECTORY = str(Path(__file__).resolve().parents[1]) + os.sep


def warn(message: str) -> None:
    """A :class:`ModelWarning` attributed to the first caller outside robot_dynamics (no library paths)."""
    level = 2  # stacklevel 2 is warn's caller
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIRECTORY):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    warnings.warn(message, ModelWarning, stacklevel=level)


# ----------------------------------------------------------------------------------------------
# structure
# ----------------------------------------------------------------------------------------------
def suggest(word: str, candidates: Collection[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or an empty string."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def require_mapping(value: object, source: str, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ModelError(source, path, f"expected a mapping (key: value block), got {_describe(value)}")
    for key in value:
        if not isinstance(key, str):
            raise ModelError(source, path, f"keys must be strings, got {_describe(key)}")
    return value


def check_keys(
    mapping: Mapping[str, Any],
    allowed: Collection[str],
    source: str,
    path: str,
    required: Collection[str] = (),
) -> None:
    """Unknown keys (typos) and missing required keys."""
    for key in mapping:
        if key not in allowed:
            where = f"{path}.{key}" if path else key
            raise ModelError(
                source, where, f"unknown key{suggest(key, allowed)}; allowed keys: {', '.join(sorted(allowed))}"
            )
    for key in required:
        if key not in mapping:
            raise ModelError(source, f"{path}.{key}" if path else key, "required key is missing")


def require_list(value: object, source: str, path: str) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ModelError(source, path, f"expected a list, got {_describe(value)}")
    return list(value)


def require_str(value: object, source: str, path: str, choices: Collection[str] | None = None) -> str:
    if not isinstance(value, str):
        raise ModelError(source, path, f"expected a string, got {_describe(value)}")
    if choices is not None and value not in choices:
        raise ModelError(source, path, f"{value!r} is not one of {', '.join(sorted(choices))}{suggest(value, choices)}")
    return value


def require_bool(value: object, source: str, path: str) -> bool:
    if not isinstance(value, bool):
        raise ModelError(source, path, f"expected true or false, got {_describe(value)}")
    return value


# ----------------------------------------------------------------------------------------------
# numbers
# ----------------------------------------------------------------------------------------------
_EXPRESSION = re.compile(r"^(?:[0-9eE.+\-*/() \t]|pi)*$")
_BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id == "pi":
        return math.pi
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    raise ValueError("unsupported expression")


def parse_expression(text: str) -> float:
    """A number written as a small arithmetic expression: digits, ``pi``, ``+ - * /`` and parentheses."""
    if not _EXPRESSION.match(text.strip()):
        raise ValueError("unsupported expression")
    return _evaluate(ast.parse(text.strip(), mode="eval"))


def require_float(
    value: object,
    source: str,
    path: str,
    *,
    minimum: float | None = None,
    positive: bool = False,
    allow_infinite: bool = False,
) -> float:
    """A finite real number (or an expression such as ``pi/2`` in a string).

    ``minimum``: smallest allowed value; ``positive``: strictly greater than zero.
    """
    if isinstance(value, bool):
        raise ModelError(source, path, f"expected a number, got {_describe(value)}")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = parse_expression(value)
        except (ValueError, SyntaxError, ZeroDivisionError, OverflowError):
            raise ModelError(
                source,
                path,
                f"expected a number, got {_describe(value)} (expressions may use digits, pi, + - * / and ())",
            ) from None
    else:
        raise ModelError(source, path, f"expected a number, got {_describe(value)}")
    if math.isnan(number) or (math.isinf(number) and not allow_infinite):
        raise ModelError(source, path, f"must be a finite number, got {number}")
    if positive and not number > 0.0:
        raise ModelError(source, path, f"must be > 0, got {number:g}")
    if minimum is not None and number < minimum:
        raise ModelError(source, path, f"must be >= {minimum:g}, got {number:g}")
    return number


def require_vector(value: object, length: int | Collection[int], source: str, path: str) -> FloatArray:
    """A list of finite numbers of the given length (or one of the given lengths)."""
    items = require_list(value, source, path)
    lengths = {length} if isinstance(length, int) else set(length)
    if len(items) not in lengths:
        expected = " or ".join(str(n) for n in sorted(lengths))
        raise ModelError(source, path, f"expected {expected} numbers, got {len(items)}")
    return np.array([require_float(v, source, f"{path}[{k}]") for k, v in enumerate(items)], dtype=float)


def require_int(value: object, source: str, path: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelError(source, path, f"expected an integer, got {_describe(value)}")
    if minimum is not None and value < minimum:
        raise ModelError(source, path, f"must be >= {minimum}, got {value}")
    return value


def _describe(value: object) -> str:
    if value is None:
        return "nothing (null)"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


# ----------------------------------------------------------------------------------------------
# physics
# ----------------------------------------------------------------------------------------------
def check_mass(mass: float, source: str, path: str) -> None:
    if not math.isfinite(mass):
        raise ModelError(source, path, f"must be a finite number, got {mass}")
    if mass < 0.0:
        raise ModelError(source, path, f"negative mass {mass:g} kg")


def inertia_problem(inertia: FloatArray) -> str | None:
    """Why a 3x3 inertia about the centre of mass is not physical (None if it is).

    Checks symmetry, positive semi-definiteness and the triangle inequality of the principal
    moments (``I1 + I2 >= I3`` for every permutation; equivalent to ``integral(r_k^2 dm) >= 0``).
    """
    problem = inertia_definiteness_problem(inertia)
    if problem is not None:
        return problem
    return inertia_triangle_problem(inertia)


def _principal_moments(inertia: FloatArray) -> FloatArray:
    """Ascending principal moments of the symmetric part."""
    return np.asarray(np.linalg.eigvalsh(0.5 * (inertia + inertia.T)), dtype=float)


def _tolerance_of(moments: FloatArray) -> float:
    return INERTIA_RELATIVE_TOLERANCE * float(np.sum(np.abs(moments))) + INERTIA_ABSOLUTE_TOLERANCE


def inertia_tolerance(inertia: FloatArray) -> float:
    """Tolerance of the inertia checks: ``1e-9`` x the inertia's scale (the trace for a physical
    inertia; the sum of the absolute principal moments in general) plus ``1e-12`` kg m^2."""
    return _tolerance_of(_principal_moments(inertia))


def inertia_definiteness_problem(inertia: FloatArray) -> str | None:
    if not np.all(np.isfinite(inertia)):
        return "has non-finite entries"
    moments = _principal_moments(inertia)
    tolerance = _tolerance_of(moments)
    if np.max(np.abs(inertia - inertia.T)) > tolerance:
        return "is not symmetric"
    if moments[0] < -tolerance:
        return f"is not positive semi-definite (principal moments {_fmt(moments)})"
    return None


def inertia_triangle_problem(inertia: FloatArray) -> str | None:
    moments = _principal_moments(inertia)
    if moments[0] + moments[1] < moments[2] - _tolerance_of(moments):
        diagonal = np.diag(inertia)
        return (
            "violates the triangle inequality (Ixx + Iyy >= Izz and its permutations, for the principal "
            f"moments): {moments[0]:.6g} + {moments[1]:.6g} < {moments[2]:.6g} "
            f"(diagonal Ixx, Iyy, Izz = {_fmt(diagonal)}); no rigid body has this inertia"
        )
    return None


LOCK_TOLERANCE = 1e-9  # rad or m beyond a limit still accepted for a locked joint position


def require_lock_position(value: object, lower: float, upper: float, source: str, path: str) -> float:
    """A locked joint's position (``locked_joints`` entry): a finite number inside ``[lower, upper]``."""
    if isinstance(value, bool):
        raise ModelError(source, path, f"expected a position (rad or m), got {value!r}")
    try:
        position = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ModelError(source, path, f"expected a position (rad or m), got {value!r}") from None
    if not math.isfinite(position):
        raise ModelError(source, path, f"must be finite, got {position}")
    if not lower - LOCK_TOLERANCE <= position <= upper + LOCK_TOLERANCE:
        raise ModelError(source, path, f"{position:g} is outside the joint's limits [{lower:g}, {upper:g}]")
    return position


def check_limits(lower: float, upper: float, source: str, path: str) -> None:
    if lower > upper:
        raise ModelError(source, path, f"lower limit {lower:g} > upper limit {upper:g}")


def _fmt(values: ArrayLike) -> str:
    return ", ".join(f"{v:.6g}" for v in np.asarray(values, dtype=float))


def inertia_from_six(values: ArrayLike) -> FloatArray:
    """``[Ixx, Iyy, Izz, Ixy, Iyz, Ixz]`` (or the 3 diagonal moments) as a symmetric 3x3 tensor."""
    v = [float(x) for x in np.asarray(values, dtype=float)]
    v += [0.0] * (6 - len(v))
    ixx, iyy, izz, ixy, iyz, ixz = v
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)


def rotation_to_rpy(rotation: FloatArray) -> tuple[float, float, float]:
    """URDF ``rpy`` of a rotation matrix (inverse of ``rpy_matrix``: ``R = Rz(y) Ry(p) Rx(r)``)."""
    r = np.asarray(rotation, dtype=float)
    pitch = math.atan2(-r[2, 0], math.hypot(r[0, 0], r[1, 0]))
    if math.hypot(r[0, 0], r[1, 0]) < 1e-12:  # gimbal lock: only roll - yaw (or roll + yaw) is defined
        roll = 0.0
        yaw = math.atan2(-r[0, 1], r[1, 1])
    else:
        roll = math.atan2(r[2, 1], r[2, 2])
        yaw = math.atan2(r[1, 0], r[0, 0])
    return roll, pitch, yaw


def pose_matrix(xyz: ArrayLike, rpy: ArrayLike) -> FloatArray:
    """4x4 pose from a translation and URDF roll-pitch-yaw."""
    t = np.eye(4)
    roll, pitch, yaw = (float(a) for a in np.asarray(rpy, dtype=float))
    t[:3, :3] = rpy_matrix(roll, pitch, yaw)
    t[:3, 3] = xyz
    return t
