"""Benchmark of set_payload: how long a payload change takes and what it does to the joint-state loop.

    .venv/bin/python bench/bench_payload.py [--rate 500] [--baseline 1.0]

One process, own ROS_DOMAIN_ID and an empty native cache: a feed-forward node (PUMA 560, native
backend) spun on its executor thread, a client node on another that publishes joint states at
``--rate`` Hz from a third thread and receives ``feedforward/efforts``. Latency = receive time − the
joint state's stamp (the node copies it). For each strategy, ``--baseline`` s of steady streaming,
then one payload change (a new payload each time, so a native library has to be built), streaming on
until the loaded model runs natively plus 0.2 s; ``--repeats`` rounds, strategies interleaved:

* tracing in the executor callback: the change done inside a plain service callback — the new model's Python programs
  traced in the executor thread (the dynamics service node's way); the native library built in a
  child process;
* worker thread, native built in a thread: the shipped coroutine callback (tracing in a worker thread), but the
  native library built in a thread of this process (shares the interpreter lock with the executor);
* worker thread, native built in a child process (shipped): tracing in a worker thread, native build in a child process.

A swap done entirely in the callback (the native build included) would stall the loop for the
build time itself, printed as "native after".
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ros import reserve_domain_id, stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=500.0, help="joint states per second")
    parser.add_argument("--baseline", type=float, default=1.0, help="seconds of streaming before each change")
    parser.add_argument("--repeats", type=int, default=3, help="changes per strategy")
    args = parser.parse_args(argv)
    os.environ["ROS_DOMAIN_ID"] = str(reserve_domain_id())
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    cache = tempfile.mkdtemp(prefix="robot_dynamics_bench_payload_")
    os.environ["ROBOT_DYNAMICS_CACHE"] = cache

    import rclpy
    from geometry_msgs.msg import Inertia, Vector3
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from robot_dynamics.dynamics import prepare
    from robot_dynamics.ros.feedforward_node import FeedforwardNode
    from robot_dynamics.ros.messages import DATA_QOS, ns_to_stamp, stamp_to_ns
    from robot_dynamics.ros.process import stop_executors
    from robot_dynamics_interfaces.srv import SetPayload

    rclpy.init(args=[])
    # every joint state answered (as when these figures were taken): an unanswered one counts as a drop
    node = FeedforwardNode(
        parameter_overrides=[
            Parameter("robot_config", value="puma560"),
            Parameter("joint_states_qos", value="reliable"),
        ]
    )
    client = Node("bench_payload_client")
    latencies: dict[int, float] = {}
    sent: dict[int, float] = {}
    lock = threading.Lock()

    def on_effort(msg: Any) -> None:
        now = time.time_ns()
        with lock:
            latencies[stamp_to_ns(msg.header.stamp)] = (now - stamp_to_ns(msg.header.stamp)) * 1e-3

    client.create_subscription(JointState, "feedforward/efforts", on_effort, DATA_QOS)
    pub = client.create_publisher(JointState, "joint_states", DATA_QOS)
    set_payload = client.create_client(SetPayload, "feedforward_node/set_payload")
    set_sync = client.create_client(SetPayload, "feedforward_node/set_payload_in_executor")

    def in_executor(request: Any, response: Any) -> Any:
        try:
            node.payload_switch.handle(request, response)
            response.success = True
        except ValueError as exc:
            response.success, response.message = False, str(exc)
        return response

    node.create_service(SetPayload, "~/set_payload_in_executor", in_executor)
    executors, threads = [], []
    for n in (node, client):
        ex = SingleThreadedExecutor()
        ex.add_node(n)
        t = threading.Thread(target=ex.spin, daemon=True)
        t.start()
        executors.append(ex)
        threads.append(t)
    while pub.get_subscription_count() < 1 or not set_payload.service_is_ready() or not set_sync.service_is_ready():
        time.sleep(0.01)

    stop_stream = threading.Event()
    rng = np.random.default_rng(1)
    names = node.model.joint_names if node.model else []

    def streamer() -> None:
        period = 1.0 / args.rate
        next_t = time.perf_counter()
        while not stop_stream.is_set():
            q, qd = rng.uniform(-2, 2, 6), rng.uniform(-1, 1, 6)
            stamp = time.time_ns()
            msg = JointState(name=names, position=q.tolist(), velocity=qd.tolist())
            msg.header.stamp = ns_to_stamp(stamp)
            with lock:
                sent[stamp] = time.perf_counter()
            pub.publish(msg)
            next_t += period
            time.sleep(max(0.0, next_t - time.perf_counter()))

    def payload(mass: float) -> Inertia:
        return Inertia(m=mass, com=Vector3(x=0.01, y=0.02, z=0.1), ixx=0.01, iyy=0.012, izz=0.008)

    def window(t0_ns: int, t1_ns: int) -> list[float]:
        with lock:
            return [v for k, v in latencies.items() if t0_ns <= k <= t1_ns]

    def dropped(t0_ns: int, t1_ns: int) -> int:
        with lock:
            return sum(1 for k in sent if t0_ns <= k <= t1_ns and k not in latencies)

    threading.Thread(target=streamer, daemon=True).start()
    strategies = [
        ("tracing in the executor callback", set_sync, None),
        ("worker thread, native built in a thread", set_payload, lambda m: prepare(m.with_changes(), "native")),
        ("worker thread, native built in a child process (shipped)", set_payload, None),
    ]
    default_build = node.payload_switch.compile_native
    results: dict[str, dict[str, list[Any]]] = {
        label: {"base": [], "during": [], "drops": [], "round_trip": [], "native": []} for label, _, _ in strategies
    }
    mass = 1.0
    for _ in range(args.repeats):  # interleaved, so every strategy sees the same machine load
        for label, cli, build in strategies:
            mass += 0.5  # a new payload: a new library to build
            node.payload_switch.compile_native = build or default_build
            time.sleep(args.baseline)
            b0 = time.time_ns() - int(args.baseline * 1e9)
            t0 = time.time_ns()
            c0 = time.perf_counter()
            future = cli.call_async(SetPayload.Request(payload=payload(mass)))
            while not future.done():
                time.sleep(0.0005)
            round_trip = time.perf_counter() - c0
            assert future.result().success, future.result().message
            node.payload_switch.wait_settled(120.0)
            time.sleep(0.2)
            t1 = time.time_ns()
            time.sleep(0.05)  # the last answers
            r = results[label]
            r["base"] += window(b0, t0)
            r["during"] += window(t0, t1)
            r["drops"].append(dropped(t0, t1 - int(0.05e9)))
            r["round_trip"].append(round_trip)
            r["native"].append(node.payload_switch.native_seconds)
    stop_stream.set()
    stop_executors(executors, threads, 10.0)
    node.destroy_node()
    client.destroy_node()
    rclpy.try_shutdown()

    print(f"\nset_payload benchmark ({os.cpu_count()} cores, {args.rate:.0f} Hz joint states, PUMA 560)\n")
    print(
        "| strategy | latency p99 / max during the change (µs) | baseline p99 / max (µs) | drops | "
        "service round trip, median (ms) | native after, median (s) |"
    )
    print("|---|---|---|---|---|---|")
    for label, r in results.items():
        base, during = stats(r["base"]), stats(r["during"])
        print(
            f"| {label} | {during['p99']:.0f} / {during['max']:.0f} | {base['p99']:.0f} / {base['max']:.0f} | "
            f"{sum(r['drops'])} | {np.median(r['round_trip']) * 1e3:.1f} | {np.median(r['native']):.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
