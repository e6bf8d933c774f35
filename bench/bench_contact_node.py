"""Benchmark of the contact node: joint_states → external torque latency beside the feed-forward node.

    .venv/bin/python bench/bench_contact_node.py [--duration 30] [--rate 1000] [--rounds 6] [--robot puma560]

In one session (own ROS_DOMAIN_ID, localhost discovery), each in its own process: the feed-forward
node and the contact node (same robot, friction on, smooth), their ``joint_states`` remapped apart.
This process feeds joint states with efforts at ``--rate`` Hz to each in interleaved rounds (same
machine load for all) and times the outputs: latency = receipt time − the joint state's stamp
(system clock, one machine), on ``feedforward/efforts`` and on ``contact_node/external_torque`` —
once without and once with a subscriber on ``contact_node/external_wrench`` (the wrench is computed
only for a subscriber, after the torque is published). The receipt time is the middleware's (the
message's ``received_timestamp``): when the output reached this process. The same latencies taken when
this process's executor ran the callback are shown beneath: they add this process's own delays (its
executor also takes the wrench messages when subscribed). Below, the nodes' own time per message from
their diagnostics: the feed-forward node's compute (matching + law), the contact node's compute
(matching + observer + detection: the "observer compute" of the targets) and its wrench (Jacobian, SVD,
write).

Then, without DDS: both nodes' joint-state callbacks called in-process, interleaved, paced at 1 kHz
(their own ``compute_*``: the observer compute of the contact node without any DDS noise);
``MomentumObserver.update`` per sample; the batch ``observe`` per sample over 100 000 samples (the
``robot-dynamics contact`` path).

Targets: contact node p99 ≤ 1.2 × the feed-forward node's; observer compute ≤ 30 µs per joint state.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ros import executable_path, reserve_domain_id, safe_wait, start, stats, stop, wait_for


def stream(
    node: Any, input_topic: str, output_topic: str, duration: float, rate: float, names: list[str], wrench: bool = False
) -> dict[str, Any]:
    """Publish joint states (with efforts) at ``rate``, time the outputs; latencies (µs) and counts."""
    from geometry_msgs.msg import WrenchStamped
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    from robot_dynamics.ros.messages import ns_to_stamp, stamp_to_ns

    deep = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    latencies: list[float] = []
    callback_latencies: list[float] = []
    received: set[int] = set()
    lock = threading.Lock()
    measuring = threading.Event()

    def on_output(msg: Any, info: Any) -> None:
        now = time.time_ns()
        stamp = stamp_to_ns(msg.header.stamp)
        if measuring.is_set():
            with lock:
                latencies.append((int(info["received_timestamp"]) - stamp) * 1e-3)
                callback_latencies.append((now - stamp) * 1e-3)
                received.add(stamp)

    sub = node.create_subscription(JointState, output_topic, on_output, deep)
    wrench_topic = "contact_node/external_wrench"
    wrench_sub = node.create_subscription(WrenchStamped, wrench_topic, lambda _m: None, deep) if wrench else None
    pub = node.create_publisher(JointState, input_topic, deep)
    wait_for(lambda: pub.get_subscription_count() >= 1 and sub.get_publisher_count() >= 1, output_topic)
    if wrench_sub is not None:
        wait_for(lambda: wrench_sub.get_publisher_count() >= 1, "the wrench publisher")
    rng = np.random.default_rng(1)
    states = rng.uniform(-1.0, 1.0, (1000, 3, len(names)))
    msg = JointState()
    msg.name = list(names)

    def run(seconds: float) -> int:
        period = 1.0 / rate
        t0 = time.perf_counter()
        k = 0
        while True:
            target = t0 + k * period
            if target >= t0 + seconds:
                return k
            delay = target - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            q, qd, tau = states[k % len(states)]
            msg.position, msg.velocity, msg.effort = q.tolist(), qd.tolist(), (20.0 * tau).tolist()
            msg.header.stamp = ns_to_stamp(time.time_ns())
            pub.publish(msg)
            k += 1

    run(0.5)  # warm-up
    time.sleep(0.2)
    measuring.set()
    sent = run(duration)
    safe_wait(lambda: len(received) >= sent, timeout=3.0)
    measuring.clear()
    node.destroy_subscription(sub)
    if wrench_sub is not None:
        node.destroy_subscription(wrench_sub)
    node.destroy_publisher(pub)
    with lock:
        return {"lat": list(latencies), "lat_cb": list(callback_latencies), "sent": sent, "received": len(received)}


def callbacks(robot: str, messages: int = 3000, rate: float = 1000.0) -> list[tuple[str, dict[str, float]]]:
    """The two nodes' joint-state callbacks called in-process (not spun, no subscriber: nothing is
    published), interleaved and paced at ``rate``; their own ``compute_*`` (the nodes' diagnostics)."""
    import rclpy
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from robot_dynamics.ros.contact_node import ContactNode
    from robot_dynamics.ros.feedforward_node import FeedforwardNode
    from robot_dynamics.ros.messages import ns_to_stamp

    context = rclpy.Context()
    rclpy.init(context=context, args=[])
    ns = f"/bench_callback_{os.getpid()}"
    overrides = [Parameter("robot_config", value=robot)]
    nodes = {
        "feedforward_node callback (matching + law)": FeedforwardNode(
            namespace=ns, context=context, parameter_overrides=overrides
        ),
        "contact_node callback (matching + observer + detection; thresholds set)": ContactNode(
            namespace=ns, context=context, parameter_overrides=[*overrides, Parameter("thresholds", value=1e3)]
        ),
    }
    names = nodes["feedforward_node callback (matching + law)"].model.joint_names  # type: ignore[union-attr]
    rng = np.random.default_rng(4)
    msgs = []
    for k in range(messages):
        msg = JointState(name=list(names))
        msg.header.stamp = ns_to_stamp(1_000_000_000 + k * 1_000_000)
        q, qd, tau = rng.uniform(-1, 1, (3, len(names)))
        msg.position, msg.velocity, msg.effort = q.tolist(), qd.tolist(), (20 * tau).tolist()
        msgs.append(msg)
    times: dict[str, list[float]] = {label: [] for label in nodes}
    t0 = time.perf_counter()
    for k, msg in enumerate(msgs):
        delay = t0 + k / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        for label, node in nodes.items():
            node.stats.summary()  # a fresh window: one message each
            node._on_joint_state(msg)
            times[label].append(node.stats.summary()["compute_mean_us"])
    for node in nodes.values():
        node.destroy_node()
    rclpy.try_shutdown(context=context)
    return [(label, stats(values[100:])) for label, values in times.items()]


def without_dds(robot: str) -> list[tuple[str, float]]:
    """The observer per sample (update) and per sample in a batch of 100 000 (observe), µs."""
    from robot_dynamics import load_robot, prepare
    from robot_dynamics.dynamics.momentum_observer import MomentumObserver, observe

    model = load_robot(robot)
    prepare(model)
    n, count = model.dof, 100_000
    rng = np.random.default_rng(3)
    q, qd, tau = rng.uniform(-1, 1, (count, n)), rng.uniform(-1, 1, (count, n)), rng.uniform(-20, 20, (count, n))
    t = np.arange(count) * 1e-3
    observer = MomentumObserver(model, 50.0)
    best = np.inf
    for rep in range(20):  # thread CPU time, best of 20 runs of 500 samples
        observer.reset()
        c0 = time.thread_time()
        for k in range(500):
            observer.update(t[k], q[rep * 500 + k], qd[rep * 500 + k], tau[rep * 500 + k])
        best = min(best, (time.thread_time() - c0) / 500)
    loop = best * 1e6
    batch = np.inf
    for _ in range(3):
        c0 = time.perf_counter()
        observe(model, t, q, qd, tau, 50.0)
        batch = min(batch, (time.perf_counter() - c0) / count)
    return [
        (f"MomentumObserver.update, one sample ({robot}, friction on; thread CPU time, best of 20)", loop),
        (f"observe(), batch of {count} samples, per sample (wall time, best of 3)", batch * 1e6),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of joint states per stream")
    parser.add_argument("--rate", type=float, default=1000.0, help="joint_states rate, Hz")
    parser.add_argument("--robot", default="puma560")
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds")
    parser.add_argument("--no-dds", action="store_true", help="only the in-process measurements")
    args = parser.parse_args(argv)
    if "ROS_DOMAIN_ID" not in os.environ:
        os.environ["ROS_DOMAIN_ID"] = str(reserve_domain_id())
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    if args.no_dds:
        print_without_dds(args.robot)
        return 0
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node

    from robot_dynamics import load_robot

    names = load_robot(args.robot).joint_names
    ns = f"/bench_contact_{os.getpid()}"
    rclpy.init()
    node = Node("bench_contact_driver", namespace=ns)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    own: dict[str, list[dict[str, str]]] = {"ff": [], "contact": [], "wrench": []}
    current = {"stream": ""}
    diag_names = {f"robot_dynamics: {ns}/feedforward_node": "ff", f"robot_dynamics: {ns}/contact_node": "contact"}

    def on_diagnostics(msg: Any) -> None:
        for s in msg.status:
            key = diag_names.get(s.name)
            if key is not None:
                values = {kv.key: kv.value for kv in s.values}
                own["wrench" if key == "contact" and current["stream"] == "wrench" else key].append(values)

    node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
    ros_args = ["--ros-args", "-r", f"__ns:={ns}", "-p", f"robot_config:={args.robot}"]
    processes = [
        start([executable_path("feedforward_node"), *ros_args, "-r", "joint_states:=ff/joint_states"]),
        start([executable_path("contact_node"), *ros_args, "-r", "joint_states:=contact/joint_states"]),
    ]
    streams = {
        "ff": ("ff/joint_states", "feedforward/efforts", False),
        "contact": ("contact/joint_states", "contact_node/external_torque", False),
        "wrench": ("contact/joint_states", "contact_node/external_torque", True),
    }
    results = {key: {"lat": [], "lat_cb": [], "sent": 0, "received": 0} for key in streams}
    try:
        for _ in range(args.rounds):
            for key, (topic_in, topic_out, wrench) in streams.items():
                current["stream"] = key
                r = stream(node, topic_in, topic_out, args.duration / args.rounds, args.rate, names, wrench)
                for field in ("lat", "lat_cb", "sent", "received"):
                    results[key][field] += r[field]
    finally:
        for proc in processes:
            stop(proc)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    # (label, figures, notes, the row its p99 is compared with)
    rows: list[tuple[str, dict[str, float], str, int]] = []
    for series, suffix in (("lat", ""), ("lat_cb", " — at this process's callback")):
        reference = len(rows)
        for key, label in (
            ("ff", f"feedforward_node ({args.robot}, friction on): joint_states → feedforward/efforts"),
            ("contact", "contact_node: joint_states → ~/external_torque (no wrench subscriber)"),
            ("wrench", "contact_node: joint_states → ~/external_torque, ~/external_wrench subscribed too"),
        ):
            r = results[key]
            notes = f"sent {r['sent']}, dropped {r['sent'] - r['received']}"
            rows.append((label + suffix, stats(r[series]), notes, reference))
    own_reference = len(rows)
    for key, series, label in (
        ("ff", "compute", "  feedforward_node's own compute (matching + law)"),
        ("contact", "compute", "  contact_node's own compute (matching + observer + detection)"),
        ("wrench", "compute", "  contact_node's own compute, wrench subscribed"),
        ("wrench", "wrench", "  contact_node's wrench (Jacobian, SVD, write; after the torque is out)"),
    ):
        busy = [d for d in own[key] if float(d.get("rate_hz", "0")) > 0.5 * args.rate and f"{series}_mean_us" in d]
        if busy:
            rows.append(
                (
                    label,
                    {
                        "p50": float(np.median([float(d[f"{series}_mean_us"]) for d in busy])),
                        "p99": float(np.median([float(d[f"{series}_p99_us"]) for d in busy])),
                        "max": float(max(float(d[f"{series}_max_us"]) for d in busy)),
                    },
                    "p50 = median of the 1 s means",
                    own_reference,
                )
            )
    load = os.getloadavg()[0]
    print(f"\ncontact node benchmark ({os.cpu_count()} cores, load average {load:.1f}, {args.rate:.0f} Hz)\n")
    print("| measurement | p50 (µs) | p99 (µs) | max (µs) | p99 / feed-forward | notes |")
    print("|---|---|---|---|---|---|")
    for label, s, notes, reference in rows:
        ratio = s["p99"] / rows[reference][1]["p99"]
        print(f"| {label} | {s['p50']:.0f} | {s['p99']:.0f} | {s['max']:.0f} | {ratio:.2f} | {notes} |")
    print_without_dds(args.robot)
    return 0


def print_without_dds(robot: str) -> None:
    print(f"\nwithout DDS (load average {os.getloadavg()[0]:.1f}): the callbacks in-process, 1 kHz paced, ")
    print("their own compute per message (µs):\n")
    print("| callback | p50 | p99 | max |\n|---|---|---|---|")
    for label, s in callbacks(robot):
        print(f"| {label} | {s['p50']:.1f} | {s['p99']:.1f} | {s['max']:.1f} |")
    print()
    for label, us in without_dds(robot):
        print(f"- {label}: {us:.1f} µs")


if __name__ == "__main__":
    sys.exit(main())
