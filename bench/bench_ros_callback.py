"""Benchmark of the feed-forward node's joint-state callback in-process: where its time goes.

    .venv/bin/python bench/bench_ros_callback.py [--messages 3000] [--rate 1000] [--robot puma560]
                                                 [--control-law pd_feedforward] [--kp 100] [--kd 10]
                                                 [--reaction stop]

Builds a ``FeedforwardNode`` (not spun) and calls its joint-state callback directly with prebuilt
``sensor_msgs/JointState`` messages at ``--rate`` Hz (paced, as in a live node: caches are as cold as
between real messages), first with no subscriber to its outputs (nothing is published), then with a
subscriber process on both outputs (``feedforward/commands`` and ``feedforward/efforts``; each
message is published and wakes it). Interleaved in the same loop, the peers: the torque law alone
(``FeedforwardLaw.holding`` at the same state), the joint-state matching alone, and a bare
``publish()`` of the received JointState (what the bare relay of ``bench_ros.py`` does per message).

Prints mean/p50/p99 per message (µs) and each row's mean over the bare publish's, then the node's own
diagnostics over the same messages: ``compute_*`` (callback entry to the checked torques),
``publish_*`` (the DDS writes of the outputs with a subscriber) and ``callback_*`` (the two together).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def run_sink() -> int:
    """(subprocess) subscribe to both outputs of the node and spin."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.node import Node
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from robot_dynamics.ros.messages import DATA_QOS

    rclpy.init()
    node = Node("callback_bench_sink")
    node.create_subscription(JointState, "feedforward/efforts", lambda _m: None, DATA_QOS)
    node.create_subscription(Float64MultiArray, "feedforward/commands", lambda _m: None, DATA_QOS)
    node.create_subscription(JointState, "bench/relayed", lambda _m: None, DATA_QOS)
    with contextlib.suppress(KeyboardInterrupt, ExternalShutdownException):
        rclpy.spin(node)
    return 0


def measure(node: Any, relay_pub: Any, msgs: list[Any], count: int, rate: float) -> dict[str, np.ndarray]:
    """Per-message times (µs) of the callback and of its peers, interleaved, paced at ``rate``."""
    law, matcher = node.law, node.matcher
    parts = {
        "whole callback": node._on_joint_state,
        "torque law alone (holding)": lambda m: law.holding(*matcher.match(m), True, True),
        "joint-state matching alone": matcher.match,
        "bare publish() of the JointState": relay_pub.publish,
    }
    times: dict[str, list[int]] = {k: [] for k in parts}
    period = 1.0 / rate
    for k in range(count):
        msg = msgs[k % len(msgs)]
        for label, call in parts.items():
            t0 = time.perf_counter_ns()
            call(msg)
            times[label].append(time.perf_counter_ns() - t0)
            time.sleep(period / len(parts))
    law_us = np.asarray(times["torque law alone (holding)"]) - np.asarray(times["joint-state matching alone"])
    out = {k: np.asarray(v[100:]) * 1e-3 for k, v in times.items()}
    out["torque law alone (holding)"] = law_us[100:] * 1e-3  # minus its matching, measured alongside
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "sink"])
    parser.add_argument("--messages", type=int, default=3000, help="joint states per condition")
    parser.add_argument("--rate", type=float, default=1000.0, help="joint states per second")
    parser.add_argument("--robot", default="puma560")
    parser.add_argument(
        "--control-law",
        default="feedforward",
        choices=["feedforward", "pd_feedforward", "computed_torque"],
        help="the node's control_law; the feedback laws run with --kp/--kd on every joint, effort limiting and "
        "a 1 s state_timeout on, as a closed loop would",
    )
    parser.add_argument("--kp", type=float, default=100.0, help="kp of the feedback laws (default: %(default)s)")
    parser.add_argument("--kd", type=float, default=10.0, help="kd of the feedback laws (default: %(default)s)")
    parser.add_argument(
        "--reaction",
        default="none",
        choices=["none", "stop", "float", "reflex"],
        help="the collision reaction armed (no collision event arrives: the cost of being armed)",
    )
    args = parser.parse_args(argv)
    if args.mode == "sink":
        return run_sink()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_ros import reserve_domain_id

    if "ROS_DOMAIN_ID" not in os.environ:
        os.environ["ROS_DOMAIN_ID"] = str(reserve_domain_id())
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    import rclpy
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from robot_dynamics.ros.feedforward_node import FeedforwardNode
    from robot_dynamics.ros.messages import DATA_QOS, ns_to_stamp

    rclpy.init()
    overrides = [Parameter("robot_config", value=args.robot), Parameter("control_law", value=args.control_law)]
    overrides += [Parameter("reaction", value=args.reaction)]
    if args.control_law != "feedforward":
        overrides += [Parameter("kp", value=args.kp), Parameter("kd", value=args.kd)]
        overrides += [Parameter("limit_efforts", value=True), Parameter("state_timeout", value=1.0)]
    node = FeedforwardNode("callback_bench", parameter_overrides=overrides)
    relay_pub = node.create_publisher(JointState, "bench/relayed", DATA_QOS)
    assert node.model is not None
    names = node.model.joint_names
    rng = np.random.default_rng(1)
    msgs = []
    for _ in range(1000):
        msg = JointState()
        msg.name = list(names)
        q, qd = rng.uniform(-1.0, 1.0, (2, len(names)))
        msg.position, msg.velocity = q.tolist(), qd.tolist()
        msg.header.stamp = ns_to_stamp(time.time_ns())
        msgs.append(msg)
    diagnostics: dict[str, dict[str, float]] = {}
    node.stats.summary()  # start a window
    results = {"no subscriber": measure(node, relay_pub, msgs, args.messages, args.rate)}
    diagnostics["no subscriber"] = node.stats.summary()
    sink = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "sink"])
    try:
        pubs = (node.commands_pub, node.efforts_pub, relay_pub)
        deadline = time.monotonic() + 60.0
        while not all(p is not None and p.get_subscription_count() >= 1 for p in pubs):
            if time.monotonic() > deadline:
                raise RuntimeError("the subscriber process was not discovered")
            time.sleep(0.05)
        node.stats.summary()
        results["a subscriber process on both outputs"] = measure(node, relay_pub, msgs, args.messages, args.rate)
        diagnostics["a subscriber process on both outputs"] = node.stats.summary()
    finally:
        sink.terminate()
        sink.wait()
        node.destroy_node()
        rclpy.try_shutdown()
    law = (
        args.control_law if args.control_law == "feedforward" else f"{args.control_law}, kp {args.kp:g}, kd {args.kd:g}"
    )
    print(
        f"\nfeedforward_node callback in-process ({args.robot}, {law}, reaction {args.reaction}, "
        f"{args.rate:.0f} Hz paced, {os.cpu_count()} cores)\n"
    )
    print("| outputs | measurement | mean (µs) | p50 (µs) | p99 (µs) | mean / bare publish |")
    print("|---|---|---|---|---|---|")
    for condition, rows in results.items():
        bare = float(rows["bare publish() of the JointState"].mean())
        for label, t in rows.items():
            print(
                f"| {condition} | {label} | {t.mean():.1f} | {np.median(t):.1f} | {np.percentile(t, 99):.1f} "
                f"| {t.mean() / bare:.2f} |"
            )
    print("\nthe node's diagnostics over the same messages (µs; the ring buffer's last 4096 at most)\n")
    print("| outputs | compute mean | compute p99 | publish mean | publish p99 | callback mean | callback p99 |")
    print("|---|---|---|---|---|---|---|")
    for condition, d in diagnostics.items():
        cells = [
            f"{d.get(f'{kind}_{stat}_us', float('nan')):.1f}"
            for kind in ("compute", "publish", "callback")
            for stat in ("mean", "p99")
        ]
        print(f"| {condition} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
