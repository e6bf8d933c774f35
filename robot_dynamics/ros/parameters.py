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
  function take effect at run time; the others are read at start-up only;
* **a value at all times**: every parameter has a concrete, typed value, so ROS tools read them
  (``ros2 param get/dump``, rqt_reconfigure, a dump reloaded with ``--params-file``). A parameter that
  may be unset (an array: ROS cannot type an empty list, and rcl's YAML parser turns ``[]`` into no
  value at all) is declared with :meth:`CheckedParameterNode.declare_optional`: its value is
  :data:`UNSET`, the empty string, until set, with dynamic typing so that ``''`` and the array are both
  values of it; the node reads ``None`` for it. ``[]`` given for it (``-p kp:=[]``, ``ros2 param load``)
  means unset too; a parameter without a value (rclpy's NOT_SET: rclpy's parameter service then
  answers nothing for any request that names it, and a set to it would undeclare the parameter) is
  never declared nor accepted.
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
)
from rclpy.node import Node
from rclpy.parameter import Parameter

from robot_dynamics.ros.messages import StartupError, one_line

ParameterCheck = Callable[[Any], "str | None"]

#: The value of an optional parameter that is not set (see the module docstring): ``''`` in parameter
#: files, ``-p NAME:=''``, ``ros2 param set NODE NAME "''"``.
UNSET = ""

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
_ARRAYS = {t for t in Parameter.Type if t.name.endswith("_ARRAY")}


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
    the reason; every parameter has a value (:meth:`declare_optional` for those that may be unset).
    Also applies to parameters rclpy itself declares (``use_sim_time``)."""

    def __init__(self, node_name: str, **kwargs: Any) -> None:
        self._checks: dict[str, ParameterCheck] = {}
        self._appliers: dict[str, Callable[[Any], None]] = {}
        self._optional: dict[str, Parameter.Type | None] = {}  # name -> the type of a set value (None: any)
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
        """rclpy's ``declare_parameter`` with a value required, the start-up value taken as ROS users
        write it (an integer for a double; ``[]`` for an optional parameter: unset) and any refusal raised
        as one-line StartupError."""
        if value is None or isinstance(value, Parameter.Type):
            raise TypeError(f"parameter {name}: declare a value (declare_optional for one that may be unset)")
        descriptor = descriptor if descriptor is not None else ParameterDescriptor()
        given = None if ignore_override else self._parameter_overrides.get(name)  # rclpy's -p / files
        if given is not None and name in self._optional:
            value, ignore_override = self._stored(given), True
            try:
                self._read(name, value)
            except ValueError as exc:
                raise StartupError(f"parameter {name}: {exc}") from None
        elif given is not None and given.type_ == Parameter.Type.NOT_SET:  # rcl's parser gives `[]` no value
            raise StartupError(f"parameter {name}: got [] (an empty list), which is no value: ROS cannot type it")
        elif given is not None and not descriptor.dynamic_typing:
            try:
                value, ignore_override = as_declared_type(given.value, Parameter.Type.from_parameter_value(value)), True
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
        dynamic_typing: bool = False,
    ) -> None:
        """A parameter with a default; ``check(value)`` returns the error or None, at start-up
        (StartupError) and on every change (refused); ``apply(value)`` is called with the start-up
        value and every accepted change. ``dynamic_typing``: any type (``check`` decides), e.g. a
        number or an array with one per joint."""
        descriptor = ParameterDescriptor(description=description, read_only=read_only, dynamic_typing=dynamic_typing)
        self.declare_parameter(name, default, descriptor)
        self._start(name, check, apply)

    def declare_optional(
        self,
        name: str,
        description: str,
        kind: Parameter.Type | None = None,
        *,
        read_only: bool = False,
        check: ParameterCheck | None = None,
        apply: Callable[[Any], None] | None = None,
    ) -> None:
        """A parameter that may be unset: :data:`UNSET` until given, read as ``None`` then (by
        :meth:`optional_param`, ``check`` and ``apply``, see :meth:`declare`; unset is always
        accepted). A set value is of type ``kind`` as ROS users write it (an integer array for a double
        array; for a string array also one string, split at commas), or any type when ``kind`` is None
        (``check`` decides)."""
        self._optional[name] = kind
        descriptor = ParameterDescriptor(
            description=f"{description}; '' = unset", read_only=read_only, dynamic_typing=True
        )
        self.declare_parameter(name, UNSET, descriptor)
        self._start(name, check, apply)

    def declare_dynamic(
        self, name: str, default: Any, description: str, check: ParameterCheck, apply: Callable[[Any], None]
    ) -> None:
        """A parameter that changes at run time: checked, then applied (see :meth:`declare`)."""
        self.declare(name, default, description, check=check, apply=apply)

    def _start(self, name: str, check: ParameterCheck | None, apply: Callable[[Any], None] | None) -> None:
        """The declared parameter's start-up value checked (StartupError) and applied; its changes too."""
        try:
            value = self.optional_param(name)
        except ValueError as exc:
            raise StartupError(f"parameter {name}: {exc}") from None
        if check is not None:
            error = self._error(name, check, value)
            if error:
                raise StartupError(f"parameter {name}: {error}")
            self._checks[name] = check
        if apply is not None:
            self._appliers[name] = apply
            apply(value)

    def _error(self, name: str, check: ParameterCheck, value: Any) -> str | None:
        return None if value is None and name in self._optional else check(value)

    # -- reading ----------------------------------------------------------------------------------
    def param(self, name: str) -> Any:
        """The parameter's value as declared (:data:`UNSET` for an optional one not set)."""
        return self.get_parameter(name).value

    def optional_param(self, name: str) -> Any:
        """The parameter's value as the node reads it: ``None`` for an optional parameter not set, a
        set one of its declared type (ValueError naming the expected type if it is not)."""
        return self._read(name, self.param(name))

    def _read(self, name: str, value: Any) -> Any:
        """``value`` of parameter ``name`` as the node reads it (see :meth:`optional_param`)."""
        if name not in self._optional:
            return value
        if isinstance(value, str) and value == UNSET:
            return None
        kind = self._optional[name]
        if kind is None:
            return value
        if kind == Parameter.Type.STRING_ARRAY and isinstance(value, str):
            return [item for item in (part.strip() for part in value.split(",")) if item]
        try:
            return as_declared_type(value, kind)
        except ValueError as exc:
            raise ValueError(f"{exc}; '' = unset") from None

    def string_list_param(self, name: str) -> list[str]:
        """An optional string-array parameter (one string is split at commas); unset = empty."""
        value = self.optional_param(name)
        return [] if value is None else list(value)

    # -- run-time changes -------------------------------------------------------------------------
    def _stored(self, p: Parameter[Any]) -> Any:
        """The value an optional parameter stores when given ``p``: UNSET for no value or an empty
        array (``[]`` in a parameter file, ``ros2 param set NODE NAME []``), a value of its type as ROS
        users write it (an integer array for a double array), else ``p``'s value as given (refused, if
        wrong, by :meth:`_read` with the reason)."""
        if p.type_ == Parameter.Type.NOT_SET or (p.type_ in _ARRAYS and len(p.value) == 0):
            return UNSET
        kind = self._optional[p.name]
        if kind is not None and p.value != UNSET:
            with contextlib.suppress(ValueError):
                return as_declared_type(p.value, kind)
        return p.value

    def _as_declared_types(self, params: list[Parameter[Any]]) -> list[Parameter[Any]]:
        out = []
        for p in params:
            if p.name in self._optional:
                p = Parameter(p.name, value=self._stored(p))
            elif self.has_parameter(p.name) and p.type_ != Parameter.Type.NOT_SET:
                declared = self.describe_parameter(p.name)
                if not declared.dynamic_typing:
                    with contextlib.suppress(ValueError):  # else refused by rclpy's type check, with its reason
                        p = Parameter(p.name, value=as_declared_type(p.value, Parameter.Type(declared.type)))
            out.append(p)
        return out

    def _check_parameters(self, params: list[Parameter[Any]]) -> SetParametersResult:
        for p in params:
            if p.type_ == Parameter.Type.NOT_SET and self.has_parameter(p.name):  # would undeclare it
                return SetParametersResult(successful=False, reason=f"{p.name}: no value given")
            try:
                value = self._read(p.name, p.value)
            except ValueError as exc:
                return SetParametersResult(successful=False, reason=f"{p.name}: {exc}")
            check = self._checks.get(p.name)
            error = self._error(p.name, check, value) if check is not None else None
            if error:
                return SetParametersResult(successful=False, reason=f"{p.name}: {error}")
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params: list[Parameter[Any]]) -> None:
        for p in params:
            if p.name in self._appliers:
                self._appliers[p.name](self._read(p.name, p.value))
                shown = "'' (unset)" if p.value == UNSET else p.value
                self.get_logger().info(f"parameter {p.name} = {shown}")
