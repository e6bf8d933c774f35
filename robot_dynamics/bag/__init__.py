"""Rosbag evaluation of dynamics models (``rosbags``-based, no ROS installation needed).

Modules, split the way ``rosbags`` splits its own: :mod:`~robot_dynamics.bag.reader` (opening
rosbag2 bags, sqlite3 and mcap, topics, raw messages, the type store and :class:`BagError`),
:mod:`~robot_dynamics.bag.decode` (JointState, Float64MultiArray and JointTrajectory decoding, with
the byte-matrix decoder :mod:`~robot_dynamics.bag._cdr`), :mod:`~robot_dynamics.bag.writer`
(:class:`BagWriter`), :mod:`~robot_dynamics.bag.differentiate` (Savitzky–Golay derivatives on
non-uniform stamps), :mod:`~robot_dynamics.bag.evaluate` (batch model torques, errors, the
feed-forward torques), :mod:`~robot_dynamics.bag.report` (output bag, CSV/JSON, table, the replay
check), :mod:`~robot_dynamics.bag.plot` (PNG plots), :mod:`~robot_dynamics.bag.sample` (the sample
bag), :mod:`~robot_dynamics.bag.progress` (stderr progress bar).

The reading, decoding and writing names are importable from this package
(``from robot_dynamics.bag import BagWriter, read_joint_states``), but loaded only on first use
(:pep:`562`), so that ``import robot_dynamics.bag.differentiate`` still does not load ``rosbags``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from robot_dynamics.bag.decode import (
        TIME_BASE_RECEIVE,
        TIME_BASE_STAMPS,
        ArraySeries,
        JointStateBlock,
        JointStateSeries,
        TrajectoryMessage,
        decode_float64_multiarray,
        decode_joint_state_blocks,
        decode_joint_states,
        decode_joint_trajectories,
        read_joint_states,
    )
    from robot_dynamics.bag.reader import (
        CLOCK,
        FLOAT64_MULTIARRAY,
        JOINT_STATE,
        JOINT_TRAJECTORY,
        STORAGES,
        TYPESTORE,
        BagError,
        BagSummary,
        Int64Array,
        ProgressFn,
        RawTopic,
        Storage,
        TopicSummary,
        bag_summary,
        deserialize,
        read_topics,
        short_type,
        topic_name,
        typestore,
    )
    from robot_dynamics.bag.writer import BagWriter, remove_bag

__all__ = [
    "CLOCK",
    "FLOAT64_MULTIARRAY",
    "JOINT_STATE",
    "JOINT_TRAJECTORY",
    "STORAGES",
    "TIME_BASE_RECEIVE",
    "TIME_BASE_STAMPS",
    "TYPESTORE",
    "ArraySeries",
    "BagError",
    "BagSummary",
    "BagWriter",
    "Int64Array",
    "JointStateBlock",
    "JointStateSeries",
    "ProgressFn",
    "RawTopic",
    "Storage",
    "TopicSummary",
    "TrajectoryMessage",
    "bag_summary",
    "decode_float64_multiarray",
    "decode_joint_state_blocks",
    "decode_joint_states",
    "decode_joint_trajectories",
    "deserialize",
    "read_joint_states",
    "read_topics",
    "remove_bag",
    "short_type",
    "topic_name",
    "typestore",
]

_HOMES = ("reader", "decode", "writer")


def __getattr__(name: str) -> Any:
    """Loads the submodule that defines ``name`` on first access (:pep:`562`)."""
    if name in __all__:
        for home in _HOMES:
            module = importlib.import_module(f"robot_dynamics.bag.{home}")
            if name in vars(module):
                value = getattr(module, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module 'robot_dynamics.bag' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
