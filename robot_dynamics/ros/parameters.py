"""Node parameters checked at start-up and at run time: :class:`CheckedParameterNode`.

Every parameter a robot_dynamics node declares goes through here, so every node behaves alike:

* **types as ROS users write them**: an integer where a double is declared (``-p rate:=100``,
  ``rate: 100`` in YAML, ``ros2 param set ... 2``) is taken as that double, an integer array as a double
  array; any other type is refused naming the parameter, the expected and the given type;
* **values**: each parameter may carry a :data:`ParameterCheck` (``check_positive`` for periods and
  rates, ``check_choice`` for enumerations, ...), applied to the start-up value and to every change;
* **start-up** errors are raised as :class:`~robot_dynamics.ros.messages.StartupError` (the executables
  print it as one FATAL line and exit 1); a **run-time** change that fails is refused with the reason
  (``ros2 param set`` prints it) and the node keeps its value. Parameters declared with an ``apply``
  function take effect at run time; the others are read at start-up only.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.exceptions import (
    InvalidParameterTypeException,
    InvalidParameterValueException,
    ParameterUninitializedException,
)
from rclpy.node import Node
from rclpy.parameter import Parameter

from robot_dynamics.ros.messages import StartupError, one_line

ParameterCheck = Callable[[Any], "str | None"]

_TYPE_TEXT = {
    Parameter.Type.BOOL: "a bool (true or false)",
    Parameter.Type.INTEGER: "an integer",
    Parameter.Type.DOUBLE: "a double (e.g. 100.0)",
    Parameter.Type.STRING: "a string",
    Parameter.Type.BYTE_ARRAY: "a byte array",
    Parameter.Type.BOOL_ARRAY: "a bool array",
    Parameter.Type.INTEGER_ARRAY: "an integer array",
    Parameter.Type.DOUBLE_ARRAY: "a double array (e.g. [0.0, 1.5])",
    Parameter.Type.STRING_ARRAY: "a string array",
}


def _type_text(kind: Parameter.Type) -> str:
    return _TYPE_TEXT.get(kind, kind.name.lower())


def as_declared_type(value: Any, declared: Parameter.Type) -> Any:
    """``value`` as a parameter of type ``declared`` takes it: an integer (array) where a double
    (array) is declared becomes one, as ``rate: 100`` or ``gravity:=[0,0,-9]`` mean; ValueError (the
    reason) for any other mismatch."""
    given = Parameter.Type.from_parameter_value(value)
    if given == declared or declared == Parameter.Type.NOT_SET:
        return value
    if declared == Parameter.Type.DOUBLE and given == Parameter.Type.INTEGER:
        return float(value)
    if declared == Parameter.Type.DOUBLE_ARRAY and given == Parameter.Type.INTEGER_ARRAY:
        return [float(v) for v in value]
    raise ValueError(f"expected {_type_text(declared)}, got {value!r} ({_type_text(given)})")


# ------------------------------------------------------------------------------------------------
# value checks
# ------------------------------------------------------------------------------------------------
def check_bool(value: Any) -> str | None:
    """A :data:`ParameterCheck` for bool parameters."""
    return None if isinstance(value, bool) else f"expected a bool, got {value!r}"


def check_choice(choices: tuple[str, ...]) -> ParameterCheck:
    """A :data:`ParameterCheck` for a string parameter with a fixed set of values."""

    def check(value: Any) -> str | None:
        return None if value in choices else f"expected one of {list(choices)}, got {value!r}"

    return check


def check_positive(unit: str) -> ParameterCheck:
    """A :data:`ParameterCheck` for a finite number > 0 (periods, rates, limits)."""

    def check(value: Any) -> str | None:
        ok = isinstance(value, (int, float)) and math.isfinite(value) and value > 0
        return None if ok else f"must be a finite number > 0 {unit}, got {value!r}"

    return check


def check_non_negative(unit: str) -> ParameterCheck:
    """A :data:`ParameterCheck` for a finite number >= 0 (time-outs where 0 means off or forever)."""

    def check(value: Any) -> str | None:
        ok = isinstance(value, (int, float)) and math.isfinite(value) and value >= 0
        return None if ok else f"must be a finite number >= 0 {unit}, got {value!r}"

    return check


# ------------------------------------------------------------------------------------------------
# the node
# ------------------------------------------------------------------------------------------------
class CheckedParameterNode(Node):
    """An rclpy node whose parameters are checked: types (integers taken as doubles), values
    (:meth:`declare`'s ``check``), start-up errors as StartupError, run-time changes refused with
    the reason. Also applies to parameters rclpy itself declares (``use_sim_time``)."""

    def __init__(self, node_name: str, **kwargs: Any) -> None:
        self._checks: dict[str, ParameterCheck] = {}
        self._appliers: dict[str, Callable[[Any], None]] = {}
        super().__init__(node_name, **kwargs)
        self.add_pre_set_parameters_callback(self._as_declared_types)
        self.add_on_set_parameters_callback(self._check_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)

    # -- declaring --------------------------------------------------------------------------------
    def declare_parameter(
        self,
        name: str,
        value: Any = None,
        descriptor: ParameterDescriptor | None = None,
        ignore_override: bool = False,
    ) -> Parameter[Any]:
        """rclpy's ``declare_parameter`` with the start-up value taken as ROS users write it (an
        integer for a double) and any refusal raised as one-line StartupError."""
        descriptor = descriptor if descriptor is not None else ParameterDescriptor()
        given = None if ignore_override else self._parameter_overrides.get(name)  # rclpy's -p / files
        if given is not None and given.type_ != Parameter.Type.NOT_SET and not descriptor.dynamic_typing:
            declared = value if isinstance(value, Parameter.Type) else Parameter.Type.from_parameter_value(value)
            try:
                value, ignore_override = as_declared_type(given.value, declared), True
            except ValueError as exc:
                raise StartupError(f"parameter {name}: {exc}") from None
        try:
            return super().declare_parameter(name, value, descriptor, ignore_override)
        except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
            raise StartupError(f"parameter {name}: {one_line(exc)}") from None

    def declare(
        self,
        name: str,
        default: Any,
        description: str,
        *,
        read_only: bool = False,
        check: ParameterCheck | None = None,
        apply: Callable[[Any], None] | None = None,
    ) -> None:
        """A parameter with a default; ``check(value)`` returns the error or None, at start-up
        (StartupError) and on every change (refused); ``apply(value)`` is called with the start-up
        value and every accepted change."""
        self.declare_parameter(name, default, ParameterDescriptor(description=description, read_only=read_only))
        if check is not None:
            error = check(self.param(name))
            if error:
                raise StartupError(f"parameter {name}: {error}")
            self._checks[name] = check
        if apply is not None:
            self._appliers[name] = apply
            apply(self.param(name))

    def declare_dynamic(
        self, name: str, default: Any, description: str, check: ParameterCheck, apply: Callable[[Any], None]
    ) -> None:
        """A parameter that changes at run time: checked, then applied (see :meth:`declare`)."""
        self.declare(name, default, description, check=check, apply=apply)

    def watch(self, name: str, check: ParameterCheck, apply: Callable[[Any], None]) -> None:
        """Check and apply every run-time change of an already declared parameter (e.g. one declared
        with dynamic typing, whose start-up value the caller checked itself)."""
        self._checks[name] = check
        self._appliers[name] = apply

    def declare_untyped(self, name: str, description: str) -> None:
        """A read-only parameter that may be left unset (string arrays: ROS cannot type an empty list)."""
        self.declare_parameter(
            name, None, ParameterDescriptor(description=description, read_only=True, dynamic_typing=True)
        )

    # -- reading ----------------------------------------------------------------------------------
    def param(self, name: str) -> Any:
        return self.get_parameter(name).value

    def optional_param(self, name: str) -> Any:
        """The value of a parameter declared without a default, or None when it was not set."""
        try:
            return self.get_parameter(name).value
        except ParameterUninitializedException:
            return None

    def string_list_param(self, name: str) -> list[str]:
        """A string-array parameter; a single string is split at commas; unset = empty."""
        value = self.optional_param(name)
        if value is None:
            return []
        if isinstance(value, str):
            return [item for item in (part.strip() for part in value.split(",")) if item]
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return list(value)
        raise StartupError(f"parameter {name}: expected a string array such as ['a=b'], got {value!r}")

    # -- run-time changes -------------------------------------------------------------------------
    def _as_declared_types(self, params: list[Parameter[Any]]) -> list[Parameter[Any]]:
        out = []
        for p in params:
            if self.has_parameter(p.name) and p.type_ != Parameter.Type.NOT_SET:
                declared = self.describe_parameter(p.name)
                if not declared.dynamic_typing:
                    with contextlib.suppress(ValueError):  # else refused by rclpy's type check, with its reason
                        p = Parameter(p.name, value=as_declared_type(p.value, Parameter.Type(declared.type)))
            out.append(p)
        return out

    def _check_parameters(self, params: list[Parameter[Any]]) -> SetParametersResult:
        for p in params:
            check = self._checks.get(p.name)
            error = check(p.value) if check is not None else None
            if error:
                return SetParametersResult(successful=False, reason=f"{p.name}: {error}")
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params: list[Parameter[Any]]) -> None:
        for p in params:
            if p.name in self._appliers:
                self._appliers[p.name](p.value)
                self.get_logger().info(f"parameter {p.name} = {p.value}")
