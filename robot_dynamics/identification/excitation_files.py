"""Excitation trajectories as files: a ``trajectory_msgs/JointTrajectory`` in YAML or in a rosbag2 bag.

**YAML** (``.yaml``/``.yml``): the message in the field layout of ROS 2's message-to-YAML
conversion (``ros2 topic echo``, ``rosidl_runtime_py.message_to_yaml``): ``header`` (stamp 0 =
start on receipt), ``joint_names``, ``points`` with ``positions``, ``velocities``,
``accelerations``, ``effort: []`` and ``time_from_start: {sec, nanosec}``; a comment block on top
describes the design. Floats are written with ``repr`` (exact round trip). :func:`read_trajectory`
reads it back.

**Bag** (any other path: a rosbag2 directory, storage ``mcap`` (default) or ``sqlite3``, chosen by
``storage`` or the suffix ``.mcap`` / ``.db3``): the one message on ``/joint_trajectory``
(:data:`TOPIC`), the topic the feed-forward node subscribes to, written with
:class:`robot_dynamics.bag.BagWriter` (header stamp 0, so the node starts it on receipt):
``ros2 bag play`` or ``robot-dynamics replay`` sends it. Optionally with the ``/joint_states`` of
an ideal robot following it (:func:`write_trajectory`), a dry run through the nodes and tools.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from robot_dynamics.bag.decode import TrajectoryMessage, decode_joint_trajectories
from robot_dynamics.bag.reader import JOINT_TRAJECTORY, STORAGES, BagError, read_topics, topic_name
from robot_dynamics.bag.sample import START_NS
from robot_dynamics.bag.writer import BagWriter
from robot_dynamics.dynamics import inverse_dynamics
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.models.chain_yaml import write_text_atomic

from .base import BaseParameters
from .excitation import ExcitationResult, condition_number
from .parameters import ParameterSet

TOPIC = "joint_trajectory"
LEAD_S = 0.2  # with joint states: the trajectory is received this long before it starts
YAML_SUFFIXES = (".yaml", ".yml")


def is_yaml(path: str | Path) -> bool:
    return Path(path).suffix.lower() in YAML_SUFFIXES


def bag_storage(path: str | Path, storage: str | None = None) -> str:
    """``storage`` if given, else from the suffix (``.db3``/``.sqlite3`` -> sqlite3), else mcap."""
    if storage is not None:
        if storage not in STORAGES:
            raise BagError(f"unknown bag storage {storage!r} (expected one of {list(STORAGES)})")
        return storage
    return "sqlite3" if Path(path).suffix.lower() in (".db3", ".sqlite3") else "mcap"


def _duration(seconds: float) -> str:
    ns = round(seconds * 1e9)
    return f"{{sec: {ns // 1_000_000_000}, nanosec: {ns % 1_000_000_000}}}"


def _row(values: FloatArray) -> str:
    return "[" + ", ".join(repr(float(v)) for v in values) + "]"


def trajectory_yaml(
    names: Sequence[str],
    times: FloatArray,
    positions: FloatArray,
    velocities: FloatArray,
    accelerations: FloatArray,
    comments: Sequence[str] = (),
) -> str:
    """The YAML text of one JointTrajectory message (module docstring)."""
    lines = [f"# {c}" for c in comments]
    lines += [
        "header: {stamp: {sec: 0, nanosec: 0}, frame_id: ''}",
        "joint_names: [" + ", ".join(yaml.safe_dump(str(n), default_style="'").strip() for n in names) + "]",
        "points:",
    ]
    for k in range(len(times)):
        lines += [
            f"- positions: {_row(positions[k])}",
            f"  velocities: {_row(velocities[k])}",
            f"  accelerations: {_row(accelerations[k])}",
            "  effort: []",
            f"  time_from_start: {_duration(float(times[k]))}",
        ]
    return "\n".join(lines) + "\n"


def _comments(result: ExcitationResult) -> list[str]:
    s = result.settings
    out = [
        f"Excitation trajectory for {result.model.name} (robot-dynamics excitation): finite Fourier series,",
        "Swevers et al. 1997 (IEEE T-RA 13(5)); a trajectory_msgs/JointTrajectory for topic joint_trajectory.",
        f"harmonics {s['harmonics']}, base frequency {s['base_frequency_hz']:g} Hz, duration {result.duration:g} s, "
        f"ramp {result.ramp:g} s, seed {s['seed']}",
        f"condition number {result.condition_number:.4g} (random series of the same size: "
        f"{result.initial_condition_number:.4g}; {result.base.rank} base parameters)",
    ]
    if result.ramp == 0.0:
        out.append("No ramp: the controller must be at the first point (with its velocity) when it starts.")
    return out + list(result.notes)


def write_trajectory(
    result: ExcitationResult,
    path: str | Path,
    *,
    storage: str | None = None,
    overwrite: bool = False,
    joint_states: bool = False,
) -> Path:
    """Writes ``result``'s points as YAML (``.yaml``/``.yml``) or as a rosbag2 bag (module docstring).

    ``joint_states`` (bags only): also ``/joint_states`` of the robot following the trajectory
    exactly, at ``result.rate``, with the model's inverse dynamics (smooth friction) as effort, and
    the trajectory stamped to start with them (:data:`LEAD_S` after it is received), as the sample
    bag is: a dry run for ``replay --clock`` through the feed-forward node, ``evaluate`` and
    ``identify`` (which then recovers the model's own parameters).
    """
    out = Path(path)
    names = result.model.joint_names
    if is_yaml(out):
        if joint_states:
            raise RobotDynamicsError(f"{out}: joint states are written to bags only, not to a YAML trajectory")
        if out.exists() and not overwrite:
            raise RobotDynamicsError(f"{out} exists already (choose another output or allow overwriting)")
        text = trajectory_yaml(
            names, result.times, result.positions, result.velocities, result.accelerations, _comments(result)
        )
        return write_text_atomic(out, text)
    stamp = START_NS + round(LEAD_S * 1e9) if joint_states else 0
    with BagWriter(out, storage=bag_storage(out, storage), overwrite=overwrite) as writer:
        writer.write_joint_trajectory(
            TOPIC,
            START_NS,
            names,
            result.times,
            result.positions,
            result.velocities,
            result.accelerations,
            stamp=stamp,
        )
        if joint_states:
            t = np.arange(math.floor(result.times[-1] * result.rate + 1e-9) + 1) / result.rate
            d = result.sampler().sample_many(t)
            effort = inverse_dynamics(result.model, d.positions, d.velocities, d.accelerations, smooth=True)
            ns = stamp + np.round(t * 1e9).astype(np.int64)
            writer.write_joint_states("joint_states", ns, names, d.positions, d.velocities, effort)
    return out


def _float_rows(points: list[Any], key: str, n: int, where: str) -> FloatArray | None:
    rows = [p.get(key) or [] for p in points]
    if all(len(r) == 0 for r in rows) and key != "positions":
        return None
    try:
        arr = np.array(rows, dtype=float)
    except (TypeError, ValueError):
        raise RobotDynamicsError(f"{where}: points[].{key}: expected {n} numbers in every point") from None
    if arr.shape != (len(points), n) or not np.all(np.isfinite(arr)):
        raise RobotDynamicsError(f"{where}: points[].{key}: expected {n} finite numbers in every point")
    return arr


def read_trajectory_yaml(path: str | Path) -> TrajectoryMessage:
    """A JointTrajectory YAML file (module docstring) as the bag decoder's :class:`TrajectoryMessage`."""
    where = str(path)
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise RobotDynamicsError(f"{where}: not YAML ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("joint_names"), list):
        raise RobotDynamicsError(f"{where}: expected a JointTrajectory mapping with joint_names and points")
    points = data.get("points")
    if not isinstance(points, list) or not points or not all(isinstance(p, dict) for p in points):
        raise RobotDynamicsError(f"{where}: points: expected a non-empty list of trajectory points")
    names = tuple(str(n) for n in data["joint_names"])
    q = _float_rows(points, "positions", len(names), where)
    assert q is not None
    qd = _float_rows(points, "velocities", len(names), where)
    qdd = _float_rows(points, "accelerations", len(names), where)
    try:
        times = np.array([p["time_from_start"]["sec"] + 1e-9 * p["time_from_start"]["nanosec"] for p in points])
        stamp = data.get("header", {}).get("stamp", {"sec": 0, "nanosec": 0})
        stamp_ns = int(stamp["sec"]) * 1_000_000_000 + int(stamp["nanosec"])
    except (KeyError, TypeError):
        raise RobotDynamicsError(f"{where}: time_from_start/stamp: expected {{sec, nanosec}} in every point") from None
    return TrajectoryMessage(0, stamp_ns, names, times, q, qd, qdd)


def read_trajectory(path: str | Path, topic: str = TOPIC) -> TrajectoryMessage:
    """The (first) JointTrajectory of a YAML file or of a bag's ``topic``."""
    if is_yaml(path):
        return read_trajectory_yaml(path)
    raw = read_topics(path, [topic], types={topic: JOINT_TRAJECTORY})
    messages = decode_joint_trajectories(raw[topic_name(topic)])
    if not messages:
        raise BagError(f"{path}: no message on {topic_name(topic)}")
    return messages[0]


def trajectory_condition_number(
    model: RobotModel,
    path: str | Path,
    base: BaseParameters,
    pset: ParameterSet,
    rate: float = 100.0,
    topic: str = TOPIC,
) -> float:
    """The condition number (:func:`~robot_dynamics.identification.excitation.condition_number`) of
    the trajectory in ``path`` sampled at ``rate`` Hz over its points (for comparison)."""
    msg = read_trajectory(path, topic)
    sampler = msg.sampler(model.joint_names)
    count = max(2, math.floor((sampler.end_time - sampler.start_time) * rate) + 1)
    d = sampler.sample_many(sampler.start_time + np.arange(count) / rate)
    return condition_number(model, d.positions, d.velocities, d.accelerations, base, pset)
