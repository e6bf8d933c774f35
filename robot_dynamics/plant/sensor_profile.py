"""Sensor profiles: how a real arm measures its joints and applies its torques, as YAML files.

A profile is read by :func:`load_sensor_profile` from a bundled name (``config/sensors/NAME.yaml``:
``ideal``, ``ur_e_series``, ``franka``, ``kuka_iiwa``, ``industrial_125hz``) or a file, optionally
extending another (``base: NAME`` or ``base: other.yaml``, relative to the file), with overrides on
top (a mapping or YAML text with the same keys). Every key is optional; a key not given takes the
base profile's value, and without a base the ideal one (``config/sensors/ideal.yaml`` documents each
key)::

    base: ur_e_series          # a bundled name or a file this profile extends
    rate: 500.0                # Hz: the arm's control rate (read by the caller; the plant runs at its period)
    seed: 0                    # every random value and noise stream comes from it
    delay: {measurement: 1, command: 1}               # control periods
    gear_ratio: 101                                    # rotor angle = gear_ratio * joint angle
    encoder: {side: motor, counts_per_revolution: 65536, noise: 0.0}
    velocity: {estimator: difference, cutoff: 100.0, order: 1}
    actuator: {constant_error: {uniform: 0.05}, ripple: {amplitude: 0.01, order: 6, phase: {uniform: 3.14159}},
               torque_loop: {bandwidth: 0.0}}   # Hz, per joint: the drive's loop on the link-side sensor (0: none)
    torque: {sensing: motor, noise: [0.6, 0.6, 0.6, 0.15], offset: {normal: 0.1}, scale_error: 0.0,
             drift: {rate: 0.0, random_walk: 0.0}}

**Per-joint values** take four forms, applied in the order the files give them (base first, then the
profile, then the overrides):

* a number: every joint;
* a list, joint by joint from the base of the chain. A list for another number of joints than the
  arm's applies from the base: extra values are ignored, missing ones repeat the last value (the wrist
  joints, the small ones, come last on every serial arm); :attr:`ResolvedSensors.notes` says so;
* ``{uniform: w}`` or ``{normal: s}`` (only where the table below allows): drawn per joint, uniformly in
  ``[-w, w]`` or normally with standard deviation ``s`` (``w``, ``s`` a number or a list), with
  ``numpy.random.default_rng([seed, crc32(key)])``: each key its own stream, so a change of one key
  does not change the draws of another;
* ``{joint: value}`` with the model's joint names (or the ``joint_map``'s file names): those joints
  only, the others keep the value the earlier files gave.

Bad input is a :class:`~robot_dynamics.errors.ModelError` naming the file and the field, e.g.
``my_arm.yaml: torque.noise[2]: must be >= 0, got -0.1``; a torque loop needs ``torque.sensing: link``
(checked when the joints are resolved: the two keys may come from different files).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robot_dynamics.errors import ModelError
from robot_dynamics.model import FloatArray
from robot_dynamics.models.robots import installed_directories
from robot_dynamics.models.validation import suggest
from robot_dynamics.models.yaml_text import read_text_file, read_yaml

SOURCE_TREE_PROFILES = Path(__file__).resolve().parents[2] / "config" / "sensors"
RANDOM_KINDS = ("uniform", "normal")


@dataclass(frozen=True)
class Key:
    """One key of a profile: its kind (``number``, ``integer``, ``choice`` or ``joints``: per joint),
    default (the ideal arm), bounds and whether per-joint values may be drawn."""

    name: str
    kind: str
    default: Any
    low: float = -math.inf
    strict: bool = False  # low is excluded
    choices: tuple[Any, ...] = ()
    random: bool = False
    optional: bool = False  # null allowed (the default None)


KEYS: tuple[Key, ...] = (
    Key("rate", "number", None, 0.0, strict=True, optional=True),
    Key("seed", "integer", 0, 0.0),
    Key("delay.measurement", "integer", 0, 0.0),
    Key("delay.command", "integer", 0, 0.0),
    Key("gear_ratio", "joints", 1.0, 0.0, strict=True),
    Key("encoder.side", "choice", "link", choices=("link", "motor")),
    Key("encoder.counts_per_revolution", "joints", 0.0, 0.0),
    Key("encoder.noise", "joints", 0.0, 0.0),
    Key("velocity.estimator", "choice", "plant", choices=("plant", "difference")),
    Key("velocity.cutoff", "number", 0.0, 0.0),
    Key("velocity.order", "choice", 1, choices=(1, 2)),
    Key("actuator.constant_error", "joints", 0.0, -1.0, strict=True, random=True),
    Key("actuator.ripple.amplitude", "joints", 0.0, 0.0),
    Key("actuator.ripple.order", "joints", 0.0, 0.0),
    Key("actuator.ripple.phase", "joints", 0.0, random=True),
    Key("actuator.torque_loop.bandwidth", "joints", 0.0, 0.0),
    Key("torque.sensing", "choice", "motor", choices=("motor", "link")),
    Key("torque.noise", "joints", 0.0, 0.0),
    Key("torque.offset", "joints", 0.0, random=True),
    Key("torque.scale_error", "joints", 0.0, -1.0, strict=True, random=True),
    Key("torque.drift.rate", "joints", 0.0, random=True),
    Key("torque.drift.random_walk", "joints", 0.0, 0.0),
)
BY_NAME = {k.name: k for k in KEYS}
SECTIONS = {k.name.rsplit(".", 1)[0] for k in KEYS if "." in k.name} | {"actuator", "torque"}
TOP_LEVEL = ("name", "description", "base")


@dataclass(frozen=True)
class Draw:
    """``{uniform: w}`` / ``{normal: s}``: per-joint values drawn from the profile's seed."""

    kind: str
    spread: float | tuple[float, ...]


#: a per-joint value as a file gives it: a number, a list, a draw or ``{joint: value}``
JointValue = float | tuple[float, ...] | Draw | Mapping[str, float]


@dataclass(frozen=True)
class SensorProfile:
    """A checked profile: the values its files gave (``given``, by dotted key; per-joint keys as the
    ``(file, value)`` layers in the order they apply), the rest the ideal arm's."""

    name: str = "ideal"
    description: str = ""
    sources: tuple[str, ...] = ()
    given: Mapping[str, Any] = field(default_factory=dict)

    def value(self, key: str) -> Any:
        """A scalar key's value (the last file's, else the default)."""
        spec = BY_NAME[key]
        if spec.kind == "joints":
            raise KeyError(f"{key} is per joint: see resolve()")
        return self.given.get(key, spec.default)

    # the values a caller reads without resolving the joints
    @property
    def rate(self) -> float | None:
        """The arm's control rate, Hz (None: not stated)."""
        return self.value("rate")

    @property
    def period(self) -> float | None:
        return None if self.rate is None else 1.0 / self.rate

    @property
    def measurement_delay(self) -> int:
        return int(self.value("delay.measurement"))

    @property
    def command_delay(self) -> int:
        return int(self.value("delay.command"))

    @property
    def torque_sensing(self) -> str:
        return str(self.value("torque.sensing"))

    @property
    def seed(self) -> int:
        return int(self.value("seed"))

    def extended(self, other: SensorProfile) -> SensorProfile:
        """This profile with ``other``'s values on top (per-joint layers appended)."""
        given = dict(self.given)
        for key, value in other.given.items():
            given[key] = given.get(key, ()) + value if BY_NAME[key].kind == "joints" else value
        return SensorProfile(
            other.name or self.name, other.description or self.description, self.sources + other.sources, given
        )

    def resolve(self, joint_names: Sequence[Sequence[str]]) -> ResolvedSensors:
        """The per-joint values for an arm: ``joint_names[i]`` the names joint ``i`` may be given by."""
        n = len(joint_names)
        lookup = {name: i for i, names in enumerate(joint_names) for name in names}
        shown = [names[0] for names in joint_names]
        values: dict[str, FloatArray] = {}
        notes: list[str] = []
        for spec in KEYS:
            if spec.kind != "joints":
                continue
            out = np.full(n, float(spec.default))
            rng: np.random.Generator | None = None
            for source, layer in self.given.get(spec.name, ()):
                if isinstance(layer, float):
                    out[:] = layer
                elif isinstance(layer, tuple):
                    out[:] = _stretch(layer, n, f"{source}: {spec.name}", notes)
                elif isinstance(layer, Draw):
                    rng = rng if rng is not None else np.random.default_rng([self.seed, zlib.crc32(spec.name.encode())])
                    spread = _stretch(layer.spread, n, f"{source}: {spec.name}", notes)
                    unit = rng.uniform(-1.0, 1.0, n) if layer.kind == "uniform" else rng.standard_normal(n)
                    out[:] = unit * spread
                    if spec.strict and spec.low == -1.0 and not (out > -1.0).all():
                        raise ModelError(source, spec.name, f"drawn values {out.tolist()} must be > -1")
                else:
                    for name, v in layer.items():
                        if name not in lookup:
                            raise ModelError(
                                source, f"{spec.name}[{name}]", f"no such joint{suggest(name, lookup)}; joints: {shown}"
                            )
                        out[lookup[name]] = v
            values[spec.name] = out
        loop = "actuator.torque_loop.bandwidth"
        if values[loop].any() and self.torque_sensing != "link":
            why = "the drive's torque loop closes on link-side joint torque sensors: it needs torque.sensing: link"
            raise ModelError(self.given[loop][-1][0], loop, f"{why} (the profile reads {self.torque_sensing!r})")
        return ResolvedSensors(self, values, tuple(notes))


@dataclass(frozen=True)
class ResolvedSensors:
    """A profile for one arm: ``values[key]`` ``(n,)`` per joint; ``notes`` about lists of another length."""

    profile: SensorProfile
    values: Mapping[str, FloatArray]
    notes: tuple[str, ...] = ()

    def __getitem__(self, key: str) -> FloatArray:
        return self.values[key]


def _stretch(values: float | tuple[float, ...], n: int, where: str, notes: list[str]) -> FloatArray:
    """A per-joint list applied from the base (module docstring); a number for every joint."""
    if isinstance(values, float):
        return np.full(n, values)
    v = np.asarray(values, dtype=np.float64)
    if v.size != n:
        notes.append(
            f"{where}: {v.size} values for {n} joints: "
            + ("the first ones used" if v.size > n else "the last one repeated for the further joints")
        )
        v = v[:n] if v.size > n else np.concatenate([v, np.full(n - v.size, v[-1])])
    return v


IDEAL = SensorProfile()


# -- parsing ----------------------------------------------------------------------------------------
def _number(value: Any, source: str, where: str, spec: Key) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelError(source, where, f"expected a number, got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise ModelError(source, where, f"must be finite, got {value!r}")
    if (spec.strict and not x > spec.low) or x < spec.low:
        raise ModelError(source, where, f"must be {'>' if spec.strict else '>='} {spec.low:g}, got {value!r}")
    return x


def _numbers(value: Any, source: str, where: str, spec: Key) -> float | tuple[float, ...]:
    if isinstance(value, list):
        if not value:
            raise ModelError(source, where, "an empty list (give one value per joint, or one number for all)")
        return tuple(_number(v, source, f"{where}[{i}]", spec) for i, v in enumerate(value))
    return _number(value, source, where, spec)


def _joint_value(value: Any, source: str, spec: Key) -> JointValue:
    where = spec.name
    if isinstance(value, Mapping) and any(k in RANDOM_KINDS for k in value):
        kind = next(k for k in value if k in RANDOM_KINDS)
        if not spec.random:
            drawn = [k.name for k in KEYS if k.random]
            raise ModelError(source, f"{where}.{kind}", f"this key cannot be drawn (only {drawn} can)")
        if len(value) != 1:
            raise ModelError(source, where, f"a draw is one key ({' or '.join(RANDOM_KINDS)}), got {sorted(value)}")
        spread_spec = Key(where, "joints", 0.0, 0.0)
        spread = _numbers(value[kind], source, f"{where}.{kind}", spread_spec)
        if spec.low == -1.0 and kind == "uniform" and max(np.atleast_1d(spread)) >= 1.0:
            raise ModelError(source, f"{where}.uniform", f"must be < 1 (factors 1 + e > 0), got {value[kind]!r}")
        return Draw(kind, spread)
    if isinstance(value, Mapping):
        out = {}
        for name, v in value.items():
            if not isinstance(name, str):
                raise ModelError(source, where, f"joint names must be strings, got {name!r}")
            out[name] = _number(v, source, f"{where}[{name}]", spec)
        return out
    return _numbers(value, source, where, spec)


def _flatten(document: Mapping[str, Any], source: str, prefix: str = "") -> dict[str, Any]:
    """``{dotted key: value}`` of a nested document; unknown keys refused with a suggestion."""
    out: dict[str, Any] = {}
    known = [k.name for k in KEYS] + list(SECTIONS) + list(TOP_LEVEL)
    for key, value in document.items():
        if not isinstance(key, str):
            raise ModelError(source, prefix.rstrip("."), f"keys must be strings, got {key!r}")
        dotted = prefix + key
        if dotted in SECTIONS:
            if not isinstance(value, Mapping):
                raise ModelError(source, dotted, f"expected a mapping, got {value!r}")
            out.update(_flatten(value, source, dotted + "."))
        elif dotted in BY_NAME or (not prefix and key in TOP_LEVEL):
            out[dotted] = value
        else:
            raise ModelError(source, dotted, f"unknown key{suggest(dotted, known)}; keys: {[k.name for k in KEYS]}")
    return out


def parse_sensor_profile(document: Any, source: str, name: str = "") -> tuple[SensorProfile, str | None]:
    """A checked profile from a parsed YAML document, and the ``base`` it names (None: none)."""
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        raise ModelError(source, "", "expected a mapping of profile keys (config/sensors/ideal.yaml lists them)")
    flat = _flatten(document, source)
    given: dict[str, Any] = {}
    for key, value in flat.items():
        if key in TOP_LEVEL:
            if value is not None and not isinstance(value, str):
                raise ModelError(source, key, f"expected text, got {value!r}")
            continue
        spec = BY_NAME[key]
        if spec.kind == "joints":
            given[key] = ((source, _joint_value(value, source, spec)),)
        elif spec.kind == "choice":
            if value not in spec.choices:
                raise ModelError(source, key, f"must be one of {list(spec.choices)}, got {value!r}")
            given[key] = value
        elif value is None and spec.optional:
            given[key] = None
        elif spec.kind == "integer":
            if isinstance(value, bool) or not isinstance(value, int) or value < spec.low:
                raise ModelError(source, key, f"expected an integer >= {spec.low:g}, got {value!r}")
            given[key] = value
        else:
            given[key] = _number(value, source, key, spec)
    profile = SensorProfile(str(flat.get("name") or name), str(flat.get("description") or ""), (source,), given)
    return profile, flat.get("base") or None


# -- files --------------------------------------------------------------------------------------------
def profile_directories() -> list[Path]:
    """Where the bundled profiles are looked for, in order: the source tree, then the installs."""
    return [SOURCE_TREE_PROFILES, *installed_directories("sensors")]


def bundled_profiles() -> list[str]:
    """The names of the bundled profiles (the first directory that has any)."""
    for directory in profile_directories():
        names = sorted(p.stem for p in directory.glob("*.yaml"))
        if names:
            return names
    return []


def _profile_path(spec: str, relative_to: Path | None) -> Path:
    looks_like_file = spec.endswith((".yaml", ".yml")) or "/" in spec or "\\" in spec
    if looks_like_file:
        path = Path(spec).expanduser()
        return path if path.is_absolute() or relative_to is None else relative_to / path
    for directory in profile_directories():
        if (directory / f"{spec}.yaml").is_file():
            return directory / f"{spec}.yaml"
    names = bundled_profiles()
    raise ModelError(spec, "", f"not a bundled sensor profile{suggest(spec, names)}; bundled: {', '.join(names)}")


def _load_file(spec: str, relative_to: Path | None, seen: tuple[Path, ...]) -> SensorProfile:
    path = _profile_path(spec, relative_to)
    if path.resolve() in seen:
        chain = " -> ".join(p.name for p in (*seen, path))
        raise ModelError(path.name, "base", f"profiles extend each other in a circle: {chain}")
    profile, base = parse_sensor_profile(read_yaml(read_text_file(path), path.name), path.name, path.stem)
    if base is None:
        return profile
    return _load_file(base, path.parent, (*seen, path.resolve())).extended(profile)


def load_sensor_profile(
    spec: str | Path | SensorProfile = "", overrides: Mapping[str, Any] | str | None = None, *, label: str = "overrides"
) -> SensorProfile:
    """A profile by bundled name, file path (or a profile already loaded; "" = the ideal arm), with
    ``overrides`` (a mapping, or YAML text, of profile keys; errors name ``label``) on top."""
    if isinstance(spec, SensorProfile):
        profile = spec
    elif str(spec):
        profile = _load_file(str(spec), None, ())
    else:
        profile = IDEAL
    if overrides:
        document = read_yaml(overrides, label) if isinstance(overrides, str) else overrides
        extra, base = parse_sensor_profile(document, label, profile.name)
        if base is not None:
            raise ModelError(label, "base", "overrides cannot name a base (name the profile to extend instead)")
        profile = profile.extended(extra)
    return profile


__all__ = [
    "IDEAL",
    "KEYS",
    "ResolvedSensors",
    "SensorProfile",
    "bundled_profiles",
    "load_sensor_profile",
    "parse_sensor_profile",
]
