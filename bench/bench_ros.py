"""Benchmark of the ROS interface: joint_states → torque latency, drops, and service round trips.

    .venv/bin/python bench/bench_ros.py [--duration 30] [--rate 1000] [--calls 2000]

Starts, in one session (own ROS_DOMAIN_ID, localhost discovery), each in its own process:

1. a bare rclpy relay node (subscribes ``relay/joint_states``, republishes the message as is, and
   answers a GetDynamicsCoefficients service with an empty response);
2. the feed-forward node (``feedforward_node`` entry point, PUMA 560, friction on);
3. the dynamics service node (``dynamics_service_node``).

This process feeds joint states at ``--rate`` Hz to the relay and to the feed-forward node in
interleaved rounds (``--rounds``, ``--duration`` s in all for each, so both see the same machine
load) and receives the outputs: latency = receive time − the joint state's stamp (system clock, same
machine; the node copies the stamp onto ``feedforward/efforts``). Then ``--calls`` sequential calls of
the D/h/c service and of the relay's empty service, interleaved likewise.

Prints one table with p50/p99/max, drops and the ratio to the bare node; below each stream, the
nodes' own time per message from their diagnostics, the relay's (callback entry to after its
publish) as the reference: the feed-forward node's compute, its DDS writes and its whole callback.
Targets: p99 ≤ 1 ms, zero drops, ≤ 1.5× the relay; D/h/c round trip p99 ≤ 2 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np


def executable_path(name: str) -> str:
    """``<prefix>/lib/robot_dynamics/<name>`` (where setup.cfg installs the nodes), else on PATH."""
    for candidate in (Path(sys.prefix) / "lib" / "robot_dynamics" / name, Path(sys.executable).parent / name):
        if candidate.is_file():
            return str(candidate)
    return shutil.which(name) or name


# ------------------------------------------------------------------------------------------------
# the bare reference nodes (run in a subprocess: `bench_ros.py relay --ns NS`)
# ------------------------------------------------------------------------------------------------
def run_relay(ns: str) -> int:
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    from robot_dynamics.ros.messages import ComputeStats
    from robot_dynamics_interfaces.srv import GetDynamicsCoefficients

    rclpy.init()
    node = Node("bare_relay", namespace=ns)
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    pub = node.create_publisher(JointState, "relay/efforts", qos)
    own = ComputeStats()

    def relay(msg: Any) -> None:  # timed like the feed-forward node: callback entry to after the publish
        t0 = time.perf_counter()
        own.received += 1
        pub.publish(msg)
        own.record_compute(time.perf_counter() - t0)

    node.create_subscription(JointState, "relay/joint_states", relay, qos)
    diagnostics = node.create_publisher(DiagnosticArray, "/diagnostics", 10)

    def report() -> None:
        values = {k: f"{v:.1f}" for k, v in own.summary().items()}
        status = DiagnosticStatus(
            name=f"bare relay: {ns}", values=[KeyValue(key=k, value=v) for k, v in values.items()]
        )
        diagnostics.publish(DiagnosticArray(status=[status]))

    node.create_timer(1.0, report)

    def empty(request: Any, response: Any) -> Any:
        response.success = True
        return response

    node.create_service(GetDynamicsCoefficients, "bare_coefficients", empty)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


# ------------------------------------------------------------------------------------------------
# measurement
# ------------------------------------------------------------------------------------------------
_DOMAIN_LOCK: Any = None


def reserve_domain_id() -> int:
    """A ROS_DOMAIN_ID no other test session or benchmark on this machine holds (same locks as conftest)."""
    global _DOMAIN_LOCK
    ids = list(range(1, 102))
    random.shuffle(ids)
    for domain in ids:
        handle = open(Path(tempfile.gettempdir()) / f"robot_dynamics_ros_domain_{domain}.lock", "w")  # noqa: SIM115
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _DOMAIN_LOCK = handle
        return domain
    raise RuntimeError("no free ROS_DOMAIN_ID in 1..101")


def stats(values_us: list[float]) -> dict[str, float]:
    a = np.asarray(values_us) if values_us else np.zeros(1)
    return {"p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)), "max": float(a.max())}


def start(cmd: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_for(predicate: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise RuntimeError(f"timed out waiting for {what}")


def stream(
    node: Any, input_topic: str, output_topic: str, duration: float, rate: float, names: list[str]
) -> dict[str, Any]:
    """Publish joint states at ``rate`` and time the outputs; returns latencies (µs) and counts."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    from robot_dynamics.ros.messages import ns_to_stamp, stamp_to_ns

    # deep queues on the benchmark's side: drops counted are the nodes' (their depth-10 readers)
    deep = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)

    latencies: list[float] = []
    received: set[int] = set()
    lock = threading.Lock()
    measuring = threading.Event()

    def on_output(msg: Any) -> None:
        now = time.time_ns()
        stamp = stamp_to_ns(msg.header.stamp)
        if measuring.is_set():
            with lock:
                latencies.append((now - stamp) * 1e-3)
                received.add(stamp)

    sub = node.create_subscription(JointState, output_topic, on_output, deep)
    pub = node.create_publisher(JointState, input_topic, deep)
    wait_for(lambda: pub.get_subscription_count() >= 1 and sub.get_publisher_count() >= 1, f"{output_topic}")
    rng = np.random.default_rng(1)
    states = rng.uniform(-1.0, 1.0, (1000, 2, len(names)))
    msg = JointState()
    msg.name = list(names)

    def run(seconds: float) -> int:
        period = 1.0 / rate
        t0 = time.perf_counter()
        k = 0
        end = t0 + seconds
        while True:
            target = t0 + k * period
            if target >= end:
                return k
            delay = target - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            q, qd = states[k % len(states)]
            msg.position = q.tolist()
            msg.velocity = qd.tolist()
            msg.header.stamp = ns_to_stamp(time.time_ns())
            pub.publish(msg)
            k += 1

    run(0.5)  # warm-up (discovery settled, caches hot)
    time.sleep(0.2)
    measuring.set()
    sent = run(duration)
    safe_wait(lambda: len(received) >= sent, timeout=3.0)  # stragglers; what never comes is dropped
    measuring.clear()
    node.destroy_subscription(sub)
    node.destroy_publisher(pub)
    with lock:
        return {"lat": list(latencies), "sent": sent, "received": len(received)}


def service_round_trips(node: Any, name: str, calls: int, n: int) -> list[float]:
    from robot_dynamics_interfaces.srv import GetDynamicsCoefficients

    client = node.create_client(GetDynamicsCoefficients, name)
    wait_for(client.service_is_ready, f"service {name}")
    rng = np.random.default_rng(2)
    out: list[float] = []
    for k in range(calls + 20):
        req = GetDynamicsCoefficients.Request(
            position=rng.uniform(-1, 1, n).tolist(), velocity=rng.uniform(-1, 1, n).tolist()
        )
        done = threading.Event()
        t0 = time.perf_counter()
        future = client.call_async(req)
        future.add_done_callback(lambda _f, done=done: done.set())
        if not done.wait(10.0):
            raise RuntimeError(f"no answer from {name}")
        dt = time.perf_counter() - t0
        result = future.result()
        if result is None or not result.success:
            raise RuntimeError(f"{name} failed: {getattr(result, 'message', None)}")
        if k >= 20:  # warm-up calls excluded
            out.append(dt * 1e6)
    node.destroy_client(client)
    return out


def safe_wait(predicate: Any, timeout: float) -> None:
    with contextlib.suppress(RuntimeError):
        wait_for(predicate, "", timeout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode")
    relay = sub.add_parser("relay", help="(internal) run the bare relay node")
    relay.add_argument("--ns", required=True)
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of joint states per node")
    parser.add_argument("--rate", type=float, default=1000.0, help="joint_states rate, Hz")
    parser.add_argument("--calls", type=int, default=2000, help="service calls per service")
    parser.add_argument("--robot", default="puma560")
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds (relay, node, relay, ...)")
    args = parser.parse_args(argv)
    if args.mode == "relay":
        return run_relay(args.ns)

    if "ROS_DOMAIN_ID" not in os.environ:
        os.environ["ROS_DOMAIN_ID"] = str(reserve_domain_id())
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node

    from robot_dynamics import load_robot

    model = load_robot(args.robot)
    names = model.joint_names
    ns = f"/bench_{os.getpid()}"
    rclpy.init()
    node = Node("bench_driver", namespace=ns)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    rows: list[tuple[str, dict[str, float], str]] = []
    from diagnostic_msgs.msg import DiagnosticArray

    own: dict[str, list[dict[str, str]]] = {"ff": [], "relay": []}
    diag_names = {f"robot_dynamics: {ns}/feedforward_node": "ff", f"bare relay: {ns}": "relay"}

    def on_diagnostics(msg: Any) -> None:
        for s in msg.status:
            if s.name in diag_names:
                own[diag_names[s.name]].append({kv.key: kv.value for kv in s.values})

    node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
    ros_args = ["--ros-args", "-r", f"__ns:={ns}", "-p", f"robot_config:={args.robot}"]
    processes = [
        start([sys.executable, str(Path(__file__).resolve()), "relay", "--ns", ns]),
        start([executable_path("feedforward_node"), *ros_args]),
        start([executable_path("dynamics_service_node"), *ros_args]),
    ]
    try:
        # interleaved rounds, so both see the same machine (its load drifts on a shared host)
        results = {"relay": {"lat": [], "sent": 0, "received": 0}, "ff": {"lat": [], "sent": 0, "received": 0}}
        targets = {"relay": ("relay/joint_states", "relay/efforts"), "ff": ("joint_states", "feedforward/efforts")}
        for _ in range(args.rounds):
            for key, (topic_in, topic_out) in targets.items():
                r = stream(node, topic_in, topic_out, args.duration / args.rounds, args.rate, names)
                results[key]["lat"] += r["lat"]
                results[key]["sent"] += r["sent"]
                results[key]["received"] += r["received"]
        for key, label in (
            ("relay", f"bare rclpy relay, joint_states → JointState, {args.rate:.0f} Hz × {args.duration:.0f} s"),
            ("ff", f"feedforward_node ({args.robot}, friction on), joint_states → torques, same stream"),
        ):
            r = results[key]
            rows.append((label, stats(r["lat"]), f"sent {r['sent']}, dropped {r['sent'] - r['received']}"))
        # the nodes' own time per message (their 1 s diagnostics summaries while streaming): the
        # relay's is one publish() of the JointState it received; the feed-forward node's compute
        # (matching + law), its DDS writes (two outputs) and the two together
        for key, series, label in (
            ("relay", "compute", "  bare relay's own time per message (publish(); p50 = median of its 1 s means)"),
            ("ff", "compute", "  feedforward_node's own compute per message (diagnostics compute_*: matching + law)"),
            ("ff", "publish", "  feedforward_node's DDS writes per message (publish_*: outputs with a subscriber)"),
            ("ff", "callback", "  feedforward_node's whole callback per message (callback_*)"),
        ):
            busy = [d for d in own[key] if float(d.get("rate_hz", "0")) > 0.5 * args.rate and f"{series}_mean_us" in d]
            if busy:
                measured = {
                    "p50": float(np.median([float(d[f"{series}_mean_us"]) for d in busy])),
                    "p99": float(np.median([float(d[f"{series}_p99_us"]) for d in busy])),
                    "max": float(max(float(d[f"{series}_max_us"]) for d in busy)),
                }
                rows.append((label, measured, ""))
        bare_calls: list[float] = []
        dhc_calls: list[float] = []
        for _ in range(args.rounds):
            bare_calls += service_round_trips(node, "bare_coefficients", args.calls // args.rounds, len(names))
            dhc_calls += service_round_trips(node, "get_dynamics_coefficients", args.calls // args.rounds, len(names))
        rows.append(
            (f"bare rclpy service, empty GetDynamicsCoefficients, {len(bare_calls)} calls", stats(bare_calls), "")
        )
        rows.append((f"get_dynamics_coefficients D/h/c ({args.robot}), {len(dhc_calls)} calls", stats(dhc_calls), ""))
    finally:
        for proc in processes:
            stop(proc)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()

    print(f"\nROS 2 interface benchmark ({os.cpu_count()} cores, ROS_DOMAIN_ID {os.environ['ROS_DOMAIN_ID']})\n")
    print("| measurement | p50 (µs) | p99 (µs) | max (µs) | p99 / bare | notes |")
    print("|---|---|---|---|---|---|")
    reference, own_reference = rows[0][1], None  # indented rows (own times) compare to the relay's own
    for label, s, notes in rows:
        indented = label.startswith("  ")
        if label.lstrip().startswith("bare"):
            if indented:
                own_reference = s
            else:
                reference = s
        base = own_reference if indented else reference
        ratio = "" if base is None else f"{s['p99'] / base['p99']:.2f}"
        print(f"| {label} | {s['p50']:.0f} | {s['p99']:.0f} | {s['max']:.0f} | {ratio} | {notes} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
