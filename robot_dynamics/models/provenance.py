"""Chain options on a robot file that already holds a chosen chain: a generated (e.g. identified) file.

A URDF holds a tree; ``base_link``, ``tip_link`` and ``locked_joints`` choose the serial chain the
dynamics run on. A ``format: chain`` file written from such a model (:mod:`.chain_yaml`, e.g. by
``robot-dynamics identify``) holds that chain only, and records how it was made in its
``provenance`` block::

    base_link: base_link                      # the chain of the file (top level)
    tip_link: tool0
    provenance:
      robot: ur5_robot.urdf                   # the robot file the chain was taken from
      base_link: base_link                    # the chain options used then (omitted: the file's default)
      tip_link: tool0
      locked_joints: {panda_finger_joint1: 0.0}
      joint_map: {fer_joint1: panda_joint1}   # bag name -> model name of the recordings

so that a parameter file written for the stock robot works unchanged with the generated file:
the same chain options are accepted as a no-op (:func:`apply_chain_options`):

* ``base_link`` / ``tip_link`` equal to the file's own ``base_link`` / ``tip_link`` (for any YAML robot,
  DH tables included) are no-ops; another link is refused in one line naming both;
* a locked joint the file was made with, at the same position (within ``LOCK_MATCH`` rad or m), is a
  no-op; at another position it is refused naming both positions; a joint the file still moves is
  locked as for any model (:func:`.lock.lock_joints`);
* the joint map needs nothing here: the file keeps the model's joint names, so the map that renamed
  the recordings' joints renames the topics' joints the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ModelError
from ..model import RobotModel
from .lock import lock_joints
from .validation import require_mapping, require_str

LOCK_MATCH = 1e-9  # rad or m: a locked joint given again at this distance from the recorded position is the same lock
KEYS = ("robot", "base_link", "tip_link", "locked_joints", "joint_map")


@dataclass(frozen=True)
class Provenance:
    """How a chain file's chain was chosen (module docstring); every field optional."""

    robot: str = ""
    base_link: str | None = None
    tip_link: str | None = None
    locked_joints: Mapping[str, float] = field(default_factory=dict)
    joint_map: Mapping[str, str] = field(default_factory=dict)

    def block(self) -> dict[str, Any]:
        """The ``provenance`` block of a chain file (plain YAML values; empty fields left out)."""
        out: dict[str, Any] = {}
        if self.robot:
            out["robot"] = self.robot
        if self.base_link:
            out["base_link"] = self.base_link
        if self.tip_link:
            out["tip_link"] = self.tip_link
        if self.locked_joints:
            out["locked_joints"] = {str(k): float(v) for k, v in self.locked_joints.items()}
        if self.joint_map:
            out["joint_map"] = {str(k): str(v) for k, v in self.joint_map.items()}
        return out

    def describe(self) -> str:
        """``identified from ur5_robot.urdf with tip_link tool0, ...`` (for messages)."""
        parts = [f"{k} {v}" for k, v in (("base_link", self.base_link), ("tip_link", self.tip_link)) if v]
        parts += [f"{name} locked at {value:g}" for name, value in self.locked_joints.items()]
        made = f"made from {self.robot}" if self.robot else "made"
        return made + (" with " + ", ".join(parts) if parts else "")


def read_provenance(data: object, source: str) -> Provenance | None:
    """The ``provenance`` block of a parsed chain document (None without one); ModelError if malformed."""
    if not isinstance(data, Mapping) or "provenance" not in data:
        return None
    block = require_mapping(data["provenance"], source, "provenance")
    unknown = sorted(str(k) for k in block if k not in KEYS)
    if unknown:
        raise ModelError(source, f"provenance.{unknown[0]}", f"unknown key (expected one of {', '.join(KEYS)})")
    text = {
        k: require_str(block[k], source, f"provenance.{k}") for k in ("robot", "base_link", "tip_link") if k in block
    }
    locks: dict[str, float] = {}
    for name, value in require_mapping(block.get("locked_joints", {}), source, "provenance.locked_joints").items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            raise ModelError(source, f"provenance.locked_joints.{name}", f"expected a finite position, got {value!r}")
        locks[str(name)] = float(value)
    mapping = {
        str(k): require_str(v, source, f"provenance.joint_map.{k}")
        for k, v in require_mapping(block.get("joint_map", {}), source, "provenance.joint_map").items()
    }
    return Provenance(
        robot=text.get("robot", ""),
        base_link=text.get("base_link"),
        tip_link=text.get("tip_link"),
        locked_joints=locks,
        joint_map=mapping,
    )


def apply_chain_options(
    model: RobotModel,
    provenance: Provenance | None,
    base_link: str | None,
    tip_link: str | None,
    locked_joints: Mapping[str, float] | None,
    source: str,
) -> RobotModel:
    """``model`` (loaded from the YAML file ``source``) under the chain options (module docstring)."""
    made = provenance.describe() if provenance is not None else "one chain"
    for option, given, own in (("base_link", base_link, model.base_link), ("tip_link", tip_link, model.tip_link)):
        if given is not None and given != own:
            raise ModelError(
                source,
                option,
                f"{given!r} contradicts the file, whose chain has {option} {own!r} ({made}); "
                f"use {option} {own!r} or load the original robot file",
            )
    remaining: dict[str, float] = {}
    recorded = provenance.locked_joints if provenance is not None else {}
    for name, value in (locked_joints or {}).items():
        if name in recorded and name not in model.joint_names:
            try:
                position = float(value)
            except (TypeError, ValueError):
                raise ModelError(source, f"locked_joints[{name}]", f"expected a position, got {value!r}") from None
            if not abs(position - recorded[name]) <= LOCK_MATCH:
                raise ModelError(
                    source,
                    f"locked_joints[{name}]",
                    f"{position:g} contradicts the file, made with {name} locked at {recorded[name]:g}; "
                    f"lock it at {recorded[name]:g} or load the original robot file",
                )
            continue
        remaining[name] = value
    return lock_joints(model, remaining, source) if remaining else model
