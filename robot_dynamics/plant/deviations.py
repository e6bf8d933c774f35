"""Plant deviations: how the simulated arm differs from the robot file the controller is given.

A YAML file (``config/plant_deviations.yaml`` is an example); every key is optional::

    damping: [0.8, 0.8, 0.5, 0.2, 0.2, 0.1]     # viscous damping per joint, N m s/rad (N s/m)
    friction: {shoulder_pan_joint: 3.0}          # Coulomb friction per joint, N m (MuJoCo frictionloss)
    armature: 0.05                               # rotor inertia reflected to the joint, kg m^2
    mass_scale: {upper_arm_link: 1.15}           # per link: its mass times this factor
    inertia_scale: {upper_arm_link: 0.9}         # per link: its inertia about its centre of mass times this
    random:                                      # every moving link's mass and inertia scaled by factors
      seed: 7                                    # drawn uniformly in [1 - mass, 1 + mass] and
      mass: 0.2                                  # [1 - inertia, 1 + inertia] (numpy default_rng(seed))
      inertia: 0.2

* ``damping``, ``friction``, ``armature``: one number (every joint), a list in the model's joint order,
  or a mapping ``{joint: value}`` (the robot file's joint names, or the ``joint_map``'s topic names).
  A value given here *replaces* the robot file's (its ``<dynamics damping friction>`` or motor data);
  joints not named keep the file's. Values are finite and >= 0.
* ``mass_scale``, ``inertia_scale``: ``{link: factor}`` with the robot file's link names (URDF links,
  MuJoCo bodies), factors finite and > 0. A mass scale keeps the centre of mass; an inertia scale
  scales the principal moments (so the inertia stays physical). They apply to the link's own
  inertial, before links welded to one chain link are summed.
* ``random``: factors for every link that moves with the chain and has mass, in the order of the
  robot file's links, first all mass factors then all inertia factors. Explicit ``mass_scale`` /
  ``inertia_scale`` entries override the drawn factor of their link.

Bad input is a :class:`~robot_dynamics.errors.ModelError` naming the file and the field, e.g.
``plant.yaml: damping: 5 values for the 6 joints [...]``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robot_dynamics.errors import ModelError
from robot_dynamics.model import FloatArray
from robot_dynamics.models.validation import suggest
from robot_dynamics.models.yaml_text import read_text_file, read_yaml

JOINT_KEYS = ("damping", "friction", "armature")
LINK_KEYS = ("mass_scale", "inertia_scale")
RANDOM_KEYS = ("seed", "mass", "inertia")


@dataclass(frozen=True)
class Deviations:
    """A parsed deviation file (values checked; names checked against a robot by :meth:`resolve`)."""

    source: str = "plant deviations"
    joints: Mapping[str, float | list[float] | dict[str, float]] = field(default_factory=dict)
    links: Mapping[str, dict[str, float]] = field(default_factory=dict)
    seed: int | None = None
    random_mass: float = 0.0
    random_inertia: float = 0.0

    @property
    def is_empty(self) -> bool:
        return not self.joints and not self.links and not self.random_mass and not self.random_inertia

    def resolve(
        self, joint_names: Sequence[Sequence[str]], links: Sequence[str], moving_links: Sequence[str]
    ) -> ResolvedDeviations:
        """Per-joint values and per-link factors for a robot.

        ``joint_names``: for each model joint (model order), the names it may be given by (the file's
        name, the topic name); ``links``: every link (body) name; ``moving_links``: the links the
        random option scales, in file order.
        """
        lookup = {name: i for i, names in enumerate(joint_names) for name in names}
        n = len(joint_names)
        joint_values: dict[str, dict[int, float]] = {}
        for key, value in self.joints.items():
            if isinstance(value, dict):
                unknown = [name for name in value if name not in lookup]
                if unknown:
                    raise ModelError(
                        self.source,
                        f"{key}[{unknown[0]}]",
                        f"no such joint{suggest(unknown[0], lookup)}; joints: {[names[0] for names in joint_names]}",
                    )
                joint_values[key] = {lookup[name]: v for name, v in value.items()}
            elif isinstance(value, list):
                if len(value) != n:
                    raise ModelError(
                        self.source,
                        key,
                        f"{len(value)} values for the {n} joints {[names[0] for names in joint_names]}",
                    )
                joint_values[key] = dict(enumerate(value))
            else:
                joint_values[key] = dict.fromkeys(range(n), float(value))
        mass = dict.fromkeys(links, 1.0)
        inertia = dict.fromkeys(links, 1.0)
        if self.random_mass or self.random_inertia:
            rng = np.random.default_rng(self.seed)
            drawn_mass = rng.uniform(1.0 - self.random_mass, 1.0 + self.random_mass, len(moving_links))
            drawn_inertia = rng.uniform(1.0 - self.random_inertia, 1.0 + self.random_inertia, len(moving_links))
            for k, link in enumerate(moving_links):
                mass[link], inertia[link] = float(drawn_mass[k]), float(drawn_inertia[k])
        for key, target in (("mass_scale", mass), ("inertia_scale", inertia)):
            for link, factor in self.links.get(key, {}).items():
                if link not in target:
                    raise ModelError(
                        self.source, f"{key}[{link}]", f"no such link{suggest(link, links)}; links: {list(links)}"
                    )
                target[link] = factor
        return ResolvedDeviations(joint_values, mass, inertia)


@dataclass(frozen=True)
class ResolvedDeviations:
    """Deviations for one robot: ``joints[key] = {joint index: value}``, factors per link name."""

    joints: Mapping[str, Mapping[int, float]] = field(default_factory=dict)
    mass_scale: Mapping[str, float] = field(default_factory=dict)
    inertia_scale: Mapping[str, float] = field(default_factory=dict)

    def joint_values(self, key: str, nominal: FloatArray) -> FloatArray:
        """``nominal`` (model order) with the deviation's values of ``key`` put in."""
        out = np.array(nominal, dtype=np.float64)
        for i, value in self.joints.get(key, {}).items():
            out[i] = value
        return out


NO_DEVIATIONS = Deviations()


def _number(value: Any, source: str, where: str, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelError(source, where, f"expected a number, got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise ModelError(source, where, f"must be finite, got {value!r}")
    if positive and not x > 0.0:
        raise ModelError(source, where, f"must be > 0, got {value!r}")
    if not positive and x < 0.0:
        raise ModelError(source, where, f"must be >= 0 (a physical {where.split('[')[0]}), got {value!r}")
    return x


def _name_mapping(value: Any, source: str, key: str, *, positive: bool) -> dict[str, float]:
    if not isinstance(value, dict):
        raise ModelError(source, key, f"expected a mapping {{name: value}}, got {value!r}")
    out = {}
    for name, v in value.items():
        if not isinstance(name, str):
            raise ModelError(source, key, f"names must be strings, got {name!r}")
        out[name] = _number(v, source, f"{key}[{name}]", positive=positive)
    return out


def parse_deviations(document: Any, source: str) -> Deviations:
    """Check a parsed YAML document (see the module docstring); ModelError naming ``source`` and the field."""
    if document is None:
        return Deviations(source)
    if not isinstance(document, dict):
        raise ModelError(source, "", f"expected a mapping of {list(JOINT_KEYS + LINK_KEYS)} and 'random'")
    known = (*JOINT_KEYS, *LINK_KEYS, "random")
    for key in document:
        if key not in known:
            raise ModelError(source, str(key), f"unknown key{suggest(str(key), known)}; known keys: {list(known)}")
    joints: dict[str, float | list[float] | dict[str, float]] = {}
    for key in JOINT_KEYS:
        if key not in document:
            continue
        value = document[key]
        if isinstance(value, list):
            joints[key] = [_number(v, source, f"{key}[{i}]", positive=False) for i, v in enumerate(value)]
        elif isinstance(value, dict):
            joints[key] = _name_mapping(value, source, key, positive=False)
        else:
            joints[key] = _number(value, source, key, positive=False)
    links = {key: _name_mapping(document[key], source, key, positive=True) for key in LINK_KEYS if key in document}
    random = document.get("random") or {}
    if not isinstance(random, dict):
        raise ModelError(source, "random", f"expected a mapping with {list(RANDOM_KEYS)}, got {random!r}")
    for key in random:
        if key not in RANDOM_KEYS:
            raise ModelError(source, f"random.{key}", f"unknown key{suggest(str(key), RANDOM_KEYS)}")
    seed = random.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ModelError(source, "random.seed", f"expected an integer >= 0, got {seed!r}")
    spread = {}
    for key in ("mass", "inertia"):
        spread[key] = _number(random.get(key, 0.0), source, f"random.{key}", positive=False)
        if spread[key] >= 1.0:
            raise ModelError(source, f"random.{key}", f"must be < 1 (factors in [1 - x, 1 + x] > 0), got {spread[key]}")
    if (spread["mass"] or spread["inertia"]) and seed is None:
        raise ModelError(source, "random.seed", "required with random factors (a plant must be reproducible)")
    return Deviations(source, joints, links, seed, spread["mass"], spread["inertia"])


def load_deviations(path: str | Path) -> Deviations:
    """Read and check a deviation file (see the module docstring)."""
    file = Path(path)
    return parse_deviations(read_yaml(read_text_file(file), file.name), file.name)
