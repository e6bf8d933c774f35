"""``robot-dynamics demo``: the README's main job, end to end on the bundled default robot.

1. Offline evaluation of the sample bag (``data/puma560_sample``): inverse dynamics at the measured
   motion with and without friction vs the measured efforts; output bag, CSV, JSON.
2. Start the nodes: ``robot_dynamics_bringup`` (feed-forward + dynamics service node) as a separate
   process, on ``use_sim_time``, answering every joint state (``joint_states_qos: reliable``), the
   feed-forward parameters given explicitly (:data:`NODE_PARAMETERS`).
3. Replay the bag through them (original timing, ``/clock`` at bag time) and record their
   ``feedforward/efforts`` and ``feedforward/commands`` into a bag.
4. Check the recorded torques against the offline feed-forward computation for the same messages
   (tolerance 1e-9 N·m, no message lost), print the per-joint summary table, write the plot.

ROS isolation: a ``ROS_DOMAIN_ID`` reserved with the same lock files as the test sessions
(``$TMPDIR/robot_dynamics_ros_domain_<id>.lock``, ids 1..101 in random order), so concurrent demos
and test runs on one machine never share a domain, and ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``;
``--domain-id`` overrides. Outputs are replaced on every run (``out/demo`` by default, ignored by git).
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from robot_dynamics.model import RobotModel
    from robot_dynamics.ros.replay import ReadyHook

REPO = Path(__file__).resolve().parents[2]
DEFAULT_BAG = REPO / "data" / "puma560_sample"
TOLERANCE = 1e-9  # N m
NODE_PARAMETERS = {"friction": "true", "smooth_friction": "true", "friction_velocity": "desired"}


def outputs_matched() -> ReadyHook:
    """replay's extra readiness condition: the feed-forward node's publishers have matched the recorders.

    A recorder seeing its publisher is not enough: the node's first output was lost that way once
    on a loaded machine (DDS discovery completes on each side separately).
    """
    from robot_dynamics.ros.replay import diagnostics_ready

    return diagnostics_ready(
        "robot_dynamics: /feedforward_node",
        ["subscribers[feedforward/commands]", "subscribers[feedforward/efforts]"],
    )


def reserve_domain_id() -> tuple[int, IO[str]]:
    """A ROS domain id no other test session or demo on this machine holds (lock kept open)."""
    ids = list(range(1, 102))
    random.shuffle(ids)
    for domain in ids:
        path = Path(tempfile.gettempdir()) / f"robot_dynamics_ros_domain_{domain}.lock"
        handle = open(path, "w")  # noqa: SIM115 - held for the demo's lifetime
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        return domain, handle
    raise RuntimeError("no free ROS_DOMAIN_ID in 1..101")


def robot_parameters(
    base_link: str | None = None,
    tip_link: str | None = None,
    locked_joints: Mapping[str, float] | None = None,
    joint_map: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The nodes' chain parameters (``-p NAME:=VALUE`` text) for the command line's robot options."""
    out: dict[str, str] = {}
    if base_link:
        out["base_link"] = base_link
    if tip_link:
        out["tip_link"] = tip_link
    if locked_joints:
        out["locked_joints"] = json.dumps([f"{name}={value!r}" for name, value in locked_joints.items()])
    if joint_map:
        out["joint_map"] = json.dumps([f"{bag}={model}" for bag, model in joint_map.items()])
    return out


def start_nodes(
    robot: str,
    log: IO[bytes],
    env: dict[str, str],
    parameters: dict[str, str] | None = None,
    *,
    service: bool = True,
) -> subprocess.Popen[bytes]:
    """``robot_dynamics_bringup`` (feed-forward + service node) in its own process, on ``use_sim_time``.

    ``parameters``: more node parameters (default :data:`NODE_PARAMETERS`), as ``-p`` text.
    """
    command = [sys.executable, "-m", "robot_dynamics.ros.bringup"]
    if not service:
        command.append("--no-service")
    # Parameters on the command line only: a parameter file's node-specific entries would take
    # precedence over ``-p`` and could silently change what the check compares against.
    command += ["--ros-args", "-p", f"robot_config:={robot}"]
    command += ["-p", "use_sim_time:=true"]
    # every joint state answered in order (the check compares every message; the default, latest,
    # answers the newest state and skips a backlog on a busy machine)
    command += ["-p", "joint_states_qos:=reliable"]
    # frequent /diagnostics: replay waits for them to report the recorders as matched (outputs_matched)
    command += ["-p", "diagnostics_period:=0.2"]
    for name, value in (NODE_PARAMETERS if parameters is None else parameters).items():
        command += ["-p", f"{name}:={value}"]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def stop_nodes(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5.0)


def _say(text: str = "") -> None:
    print(text, flush=True)


def run(
    *,
    bag: Path | None = None,
    robot: str = "puma560",
    out: Path = Path("out/demo"),
    rate: float = 1.0,
    domain_id: int | None = None,
    model: RobotModel | None = None,
    chain: Mapping[str, str] | None = None,
    joint_map: Mapping[str, str] | None = None,
) -> int:
    """The demo; ``model``: the robot ``robot`` already loaded with the options ``chain`` (node
    parameters from :func:`robot_parameters`); ``joint_map``: bag name → model name."""
    from robot_dynamics import load_robot
    from robot_dynamics.bag import evaluate as ev_mod
    from robot_dynamics.bag.decode import decode_joint_states
    from robot_dynamics.bag.reader import FLOAT64_MULTIARRAY, JOINT_STATE, BagError, bag_summary
    from robot_dynamics.bag.report import (
        compare_feedforward,
        format_table,
        write_csv,
        write_json,
        write_output_bag,
        write_plot,
    )

    started = time.monotonic()
    bag_path = bag if bag is not None else DEFAULT_BAG
    if not bag_path.exists():
        raise BagError(
            f"sample bag {bag_path} not found (regenerate it with: robot-dynamics make-sample-bag {bag_path})"
        )
    out.mkdir(parents=True, exist_ok=True)
    lock: IO[str] | None = None
    if domain_id is None:
        domain_id, lock = reserve_domain_id()
    # PYTHONFAULTHANDLER: a crash of the node process leaves a Python traceback in nodes.log.
    env = dict(
        os.environ, ROS_DOMAIN_ID=str(domain_id), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONFAULTHANDLER="1"
    )
    env.pop("ROS_LOCALHOST_ONLY", None)
    os.environ.update(ROS_DOMAIN_ID=str(domain_id), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    os.environ.pop("ROS_LOCALHOST_ONLY", None)

    # 1. offline evaluation ---------------------------------------------------------------------
    model = model if model is not None else load_robot(robot)
    inputs = ev_mod.read_inputs(bag_path, model, joint_map=joint_map)
    ev = ev_mod.evaluate(
        model, inputs.series, inputs.trajectories, smooth=True, friction_velocity="desired", bag=str(bag_path)
    )
    summary = bag_summary(bag_path)
    rate_hz = (ev.count - 1) / ev.t[-1]
    _say(f"robot_dynamics demo: {model.name}, sample bag {bag_path.name} ({summary.storage})")
    _say(
        f"  {ev.count} joint states over {ev.t[-1]:.2f} s (~{rate_hz:.0f} Hz, jittered stamps), "
        f"{len(inputs.trajectories)} desired trajectory; ROS_DOMAIN_ID={domain_id}, localhost discovery"
    )
    write_output_bag(out / "evaluation_bag", ev, inputs, overwrite=True)
    write_csv(out / "evaluation.csv", ev)
    write_json(out / "evaluation.json", ev)

    # 2.-3. live nodes and replay -----------------------------------------------------------------
    from robot_dynamics.ros.replay import replay

    record = {"/feedforward/efforts": JOINT_STATE, "/feedforward/commands": FLOAT64_MULTIARRAY}
    with open(out / "nodes.log", "wb") as log:
        nodes = start_nodes(robot, log, env, {**NODE_PARAMETERS, **(chain or {})})
        try:
            t_nodes = time.monotonic()
            result = replay(
                bag_path,
                record=record,
                out=out / "replay_bag",
                overwrite=True,
                rate=rate,
                clock=True,
                expect=dict.fromkeys(record, ev.count),
                wait_timeout=30.0,
                ready=outputs_matched(),
                pace=("/joint_states", "/feedforward/commands"),
            )
            t_replay = time.monotonic() - t_nodes
        finally:
            stop_nodes(nodes)
    if nodes.returncode not in (0, -signal.SIGINT, 130, None):
        _say(f"  warning: the nodes exited with status {nodes.returncode} (see {out / 'nodes.log'})")

    # 4. check and report -------------------------------------------------------------------------
    # the node publishes the topic's (the bag's) joint names
    recorded = decode_joint_states(result.recordings["/feedforward/efforts"], inputs.names)
    recorded = replace(recorded, names=inputs.series.names)
    assert ev.feedforward is not None
    cmp = compare_feedforward(inputs.series, ev.feedforward, recorded)
    commands = result.recordings["/feedforward/commands"]
    node_effort = np.full_like(ev.model, np.nan)
    order = np.searchsorted(ev.stamps, recorded.stamps).clip(0, ev.count - 1)
    hit = ev.stamps[order] == recorded.stamps
    node_effort[order[hit]] = recorded.effort[hit] if recorded.effort is not None else np.nan
    write_plot(out / "evaluation.png", ev, extra={"feed-forward node (replayed)": node_effort})

    _say()
    _say("Offline evaluation: inverse dynamics at the measured motion vs measured efforts")
    assert ev.filter is not None
    _say(
        f"(qdd: Savitzky-Golay d/dt of the measured velocity, {ev.filter.window} samples, cubic; "
        "friction at the measured velocity; errors = model - measured, N·m)"
    )
    _say(format_table(ev))
    _say()
    _say(
        f"Live replay through feedforward_node ({rate:g}x, /clock, use_sim_time): "
        f"sent {result.published.get('/joint_states', 0)} joint states + "
        f"{result.published.get('/joint_trajectory', 0)} trajectory, received "
        f"{result.recorded['/feedforward/efforts']} feedforward/efforts and {len(commands)} feedforward/commands "
        f"in {t_replay:.1f} s (largest schedule slip {result.max_lateness_s * 1e3:.1f} ms)"
    )
    _say("  " + cmp.describe(TOLERANCE))
    _say(
        f"Outputs in {out}/: evaluation.png, evaluation.csv, evaluation.json, evaluation_bag/, replay_bag/, "
        f"nodes.log  ({time.monotonic() - started:.1f} s)"
    )
    if lock is not None:
        lock.close()
    ok = cmp.ok(TOLERANCE) and len(commands) == ev.count
    if not ok:
        _say("demo FAILED: the live node's torques differ from the offline computation or messages were lost")
    return 0 if ok else 1
