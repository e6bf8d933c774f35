"""The collision reaction's messages: a CollisionEvent read for the law, a reaction reported.

* :func:`collision_report`: a ``robot_dynamics_interfaces/CollisionEvent`` as the law reads it
  (:class:`~robot_dynamics.reaction.CollisionReport`): the external torque in model joint order (matched by
  name, extra joints ignored), the joint that changed as a model index (-1 when it is not a model joint),
  the receipt time on the node's clock; a StateError for a message that does not fit the model;
* :func:`reaction_message`: a :class:`~robot_dynamics.reaction.ReactionRecord` as a
  ``robot_dynamics_interfaces/ReactionEvent``.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from typing import Any

import numpy as np

from robot_dynamics.errors import StateError
from robot_dynamics.reaction import CollisionReport, ReactionRecord
from robot_dynamics.ros.messages import as_double_array, name_index, ns_to_stamp, stamp_to_ns

# The interface package's folder in the source tree hides the built package from mypy: import by name.
_msgs = import_module("robot_dynamics_interfaces.msg")
CollisionEvent: Any = _msgs.CollisionEvent
ReactionEvent: Any = _msgs.ReactionEvent


def collision_report(msg: Any, joint_names: Sequence[str], received: int) -> CollisionReport:
    """``msg`` (a CollisionEvent) for a model with ``joint_names``, received at ``received`` ns."""
    names = list(msg.joint_names)
    torque = np.asarray(msg.external_torque, dtype=np.float64)
    if torque.size != len(names):
        raise StateError(f"collision: {torque.size} external torques for {len(names)} joint names")
    if not np.isfinite(torque).all():
        raise StateError(f"collision: non-finite external torque {torque.tolist()}")
    index = name_index(joint_names, names, allow_extra=True, what="collision")
    joint = list(joint_names).index(msg.joint) if msg.joint in joint_names else -1
    return CollisionReport(
        stamp_to_ns(msg.header.stamp), received, joint, bool(msg.raised), bool(msg.in_collision), torque[index]
    )


def reaction_message(record: ReactionRecord, joint_names: Sequence[str]) -> Any:
    """``record`` as a ReactionEvent (``joint_names``: the model's joints as the topics name them)."""
    msg = ReactionEvent()
    msg.header.stamp = ns_to_stamp(record.stamp)
    msg.strategy, msg.active = record.strategy, record.active
    msg.collision_stamp = ns_to_stamp(record.collision_stamp)
    msg.command_stamp = ns_to_stamp(record.command_stamp)
    msg.latency = record.latency
    msg.joints = [joint_names[j] for j in record.joints]
    msg.joint_names = list(joint_names)
    msg.external_torque = as_double_array(record.external_torque)
    return msg


__all__ = ["CollisionEvent", "ReactionEvent", "collision_report", "reaction_message"]
