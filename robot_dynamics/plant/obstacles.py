"""Obstacles in the plant's world: boxes and cylinders the arm can run into (parsed here, no MuJoCo).

A YAML file (docs/plant.md, "Obstacles")::

    obstacles:
      - name: wall                    # unique; default obstacle_<k>
        shape: box                    # box | cylinder
        position: [0.45, 0.0, 0.35]   # m, the centre, in the world frame (the robot's base frame)
        rpy: [0.0, 0.0, 0.0]          # rad, roll-pitch-yaw of the obstacle's axes (default 0)
        size: [0.04, 0.8, 0.8]        # box: full edge lengths x, y, z (m); cylinder: [radius, length]
        stiffness: 20000              # N/m: a compliant obstacle (default: rigid)
        damping: 300                  # N s/m, with stiffness (default: 2 sqrt(stiffness * mass))
        mass: 0.1                     # kg, with stiffness: the moving part (default 0.1)
        friction: 0.0                 # Coulomb coefficient of the arm-obstacle contact (default 0)

Its contacts with the arm's links are the plant's only contacts
(:mod:`robot_dynamics.plant.mujoco_obstacles`: the links' own self-contacts are switched off while
obstacles are present), each MuJoCo's stiffest safe contact. A **rigid** obstacle is fixed in the
world. A **compliant** one is a body of ``mass`` held at its place by springs of ``stiffness`` and
dampers of ``damping`` along its three axes: under a force ``F`` it gives way by ``F / stiffness`` at
rest (a padded wall, a person's arm).

Bad input is a :class:`~robot_dynamics.errors.ModelError` naming the file and the field, e.g.
``obstacles.yaml: obstacles[0].size: expected 3 numbers > 0 (box: full edge lengths, m), got [0.1, 0.2]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robot_dynamics.errors import ModelError
from robot_dynamics.models.validation import suggest
from robot_dynamics.models.yaml_text import read_text_file, read_yaml

SHAPES = ("box", "cylinder")
#: The moving mass of a compliant obstacle without one, kg (a pad's surface, not the wall behind it).
DEFAULT_MASS = 0.1
KEYS = ("name", "shape", "position", "rpy", "size", "stiffness", "damping", "mass", "friction")


@dataclass(frozen=True)
class Obstacle:
    """One obstacle (module docstring); ``stiffness`` None: rigid."""

    name: str
    shape: str
    position: tuple[float, float, float]
    size: tuple[float, ...]
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)
    stiffness: float | None = None
    damping: float = 0.0
    mass: float = 0.1
    friction: float = 0.0

    @property
    def rigid(self) -> bool:
        return self.stiffness is None


@dataclass(frozen=True)
class Obstacles:
    """The obstacles of a file (``source``: its name, for errors)."""

    source: str = "obstacles"
    items: tuple[Obstacle, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.items)

    def __len__(self) -> int:
        return len(self.items)


NO_OBSTACLES = Obstacles()


def _numbers(value: Any, source: str, where: str, count: int, what: str, *, positive: bool) -> tuple[float, ...]:
    ok = isinstance(value, list) and len(value) == count
    ok = ok and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    if ok and positive:
        ok = all(v > 0.0 for v in value)
    if not ok:
        bound = " > 0" if positive else ""
        raise ModelError(source, where, f"expected {count} finite numbers{bound} ({what}), got {value!r}")
    return tuple(float(v) for v in value)


def _scalar(value: Any, source: str, where: str, *, positive: bool, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ModelError(source, where, f"expected a finite number ({what}), got {value!r}")
    if (positive and not value > 0.0) or value < 0.0:
        raise ModelError(source, where, f"must be {'> 0' if positive else '>= 0'} ({what}), got {value!r}")
    return float(value)


def _obstacle(entry: Any, k: int, source: str, taken: set[str]) -> Obstacle:
    where = f"obstacles[{k}]"
    if not isinstance(entry, dict):
        raise ModelError(source, where, f"expected a mapping with keys {list(KEYS)}, got {entry!r}")
    for key in entry:
        if key not in KEYS:
            raise ModelError(
                source, f"{where}.{key}", f"unknown key{suggest(str(key), KEYS)}; known keys: {list(KEYS)}"
            )
    name = entry.get("name", f"obstacle_{k}")
    if not isinstance(name, str) or not name.strip():
        raise ModelError(source, f"{where}.name", f"expected a non-empty string, got {name!r}")
    if name in taken:
        raise ModelError(source, f"{where}.name", f"{name!r} is used twice; obstacle names are unique")
    taken.add(name)
    for key in ("shape", "position", "size"):
        if key not in entry:
            raise ModelError(source, f"{where}.{key}", "required")
    shape = entry["shape"]
    if shape not in SHAPES:
        raise ModelError(source, f"{where}.shape", f"expected one of {list(SHAPES)}, got {shape!r}")
    position = _numbers(entry["position"], source, f"{where}.position", 3, "x, y, z in m, world frame", positive=False)
    rpy = _numbers(
        entry.get("rpy", [0.0, 0.0, 0.0]), source, f"{where}.rpy", 3, "roll, pitch, yaw in rad", positive=False
    )
    size = (
        _numbers(entry["size"], source, f"{where}.size", 3, "box: full edge lengths, m", positive=True)
        if shape == "box"
        else _numbers(entry["size"], source, f"{where}.size", 2, "cylinder: radius and length, m", positive=True)
    )
    stiffness = entry.get("stiffness")
    if stiffness is not None:
        stiffness = _scalar(stiffness, source, f"{where}.stiffness", positive=True, what="N/m")
    for key in ("damping", "mass"):
        if key in entry and stiffness is None:
            raise ModelError(source, f"{where}.{key}", "needs stiffness (a rigid obstacle is fixed in the world)")
    damping, mass = 0.0, DEFAULT_MASS
    if stiffness is not None:
        mass = _scalar(entry.get("mass", DEFAULT_MASS), source, f"{where}.mass", positive=True, what="kg")
        default = 2.0 * math.sqrt(stiffness * mass)  # critically damped
        damping = _scalar(entry.get("damping", default), source, f"{where}.damping", positive=False, what="N s/m")
    friction = _scalar(entry.get("friction", 0.0), source, f"{where}.friction", positive=False, what="Coulomb")
    return Obstacle(name, shape, position, size, rpy, stiffness, damping, mass, friction)  # type: ignore[arg-type]


def parse_obstacles(document: Any, source: str) -> Obstacles:
    """Check a parsed YAML document (module docstring); ModelError naming ``source`` and the field."""
    if document is None:
        return Obstacles(source)
    if not isinstance(document, dict) or set(document) - {"obstacles"}:
        extra = sorted(set(document) - {"obstacles"}) if isinstance(document, dict) else []
        field = str(extra[0]) if extra else ""
        raise ModelError(source, field, "expected a mapping with one key, 'obstacles': a list of obstacles")
    entries = document.get("obstacles") or []
    if not isinstance(entries, list):
        raise ModelError(source, "obstacles", f"expected a list of obstacles, got {entries!r}")
    taken: set[str] = set()
    return Obstacles(source, tuple(_obstacle(entry, k, source, taken) for k, entry in enumerate(entries)))


def load_obstacles(path: str | Path) -> Obstacles:
    """Read and check an obstacle file (module docstring)."""
    file = Path(path)
    return parse_obstacles(read_yaml(read_text_file(file), file.name), file.name)


__all__ = ["NO_OBSTACLES", "SHAPES", "Obstacle", "Obstacles", "load_obstacles", "parse_obstacles"]
