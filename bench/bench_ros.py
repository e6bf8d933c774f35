"""Benchmark of the ROS interface: joint_states → torque latency and accounting, quiet and loaded.

    .venv/bin/python bench/bench_ros.py [--duration 12] [--rate 1000] [--rounds 4] [--calls 2000] \
        [--qos latest,reliable] [--conditions quiet,loaded]

Starts, in one session (own ROS_DOMAIN_ID, localhost discovery), each in its own process:

1. a bare rclpy relay node (SingleThreadedExecutor; subscribes ``relay/joint_states``, depth 10
   reliable, republishes the message as is; answers a GetDynamicsCoefficients service with an empty
   response);
2. one feed-forward node per ``--qos`` value of its ``joint_states_qos`` parameter (PUMA 560,
   friction on): ``latest`` (the default: the newest state answered, skipped ones counted) and
   ``reliable`` (every state in order, depth 100: what the node did before);
3. the dynamics service node.

For each condition (``quiet``; ``loaded``: a busy loop pinned to one of the cores for the whole
condition) this process feeds joint states at ``--rate`` Hz to the relay and to each feed-forward
node in interleaved rounds (so all see the same machine) and receives their outputs: latency =
receive time − the joint state's stamp (system clock; the nodes copy the stamp of the state they
answer onto ``feedforward/efforts``), i.e. the age of the answered state when its answer arrives.
Accounting per node: sent = answered + skipped (the node's own ``joint_states_skipped`` counter, from
DDS publication sequence numbers) + unaccounted (states lost without being counted; should be 0).
Below each node, from its diagnostics: the age of the answered state at the answer, its compute
and its whole callback per state; the relay's own time per message. Then (quiet) ``--calls``
sequential calls of the D/h/c service and of the relay's empty service, interleaved.

Targets: feed-forward p99 ≤ 1.0× the relay's (quiet) and ≤ 1.3× (loaded); age of the answered state
p99 ≤ 5 ms loaded; every skipped state counted (unaccounted 0); compute ≤ 50 µs mean.
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


class Stream:
    """Joint states at ``rate`` into one node, its answers timed; one publisher and subscription for
    the whole run, so that the node's sequence-number baseline (its first sample from this publisher)
    is set once. Accounting starts at the first answered state: states published before the node's
    reader had matched the publisher (discovery completes on each side separately) never reached it."""

    def __init__(self, node: Any, input_topic: str, output_topic: str, rate: float, names: list[str]) -> None:
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState

        from robot_dynamics.ros.messages import stamp_to_ns

        self.rate = rate
        deep = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)  # what is lost is the node's
        self.latencies: list[float] = []
        self.received: set[int] = set()
        self.first_answer: int | None = None
        self.last_output = time.monotonic()
        self.lock = threading.Lock()
        self.measuring = threading.Event()

        def on_output(msg: Any) -> None:
            now = time.time_ns()
            stamp = stamp_to_ns(msg.header.stamp)
            with self.lock:
                self.received.add(stamp)
                self.last_output = time.monotonic()
                self.first_answer = stamp if self.first_answer is None else self.first_answer
                if self.measuring.is_set():
                    self.latencies.append((now - stamp) * 1e-3)

        self.sub = node.create_subscription(JointState, output_topic, on_output, deep)
        self.pub = node.create_publisher(JointState, input_topic, deep)
        wait_for(lambda: self.pub.get_subscription_count() >= 1 and self.sub.get_publisher_count() >= 1, output_topic)
        self.states = np.random.default_rng(1).uniform(-1.0, 1.0, (1000, 2, len(names)))
        self.msg = JointState()
        self.msg.name = list(names)

    def _run(self, seconds: float) -> list[int]:
        from robot_dynamics.ros.messages import ns_to_stamp

        period, sent = 1.0 / self.rate, []
        t0 = time.perf_counter()
        while (target := t0 + len(sent) * period) < t0 + seconds:
            delay = target - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            q, qd = self.states[len(sent) % len(self.states)]
            self.msg.position, self.msg.velocity = q.tolist(), qd.tolist()
            stamp = time.time_ns()
            self.msg.header.stamp = ns_to_stamp(stamp)
            self.pub.publish(self.msg)
            sent.append(stamp)
        return sent

    def round(self, duration: float) -> dict[str, Any]:
        """Latencies (µs) of the answers after a 0.5 s warm-up; states sent and answered (warm-up included)."""
        with self.lock:
            self.latencies = []
        sent = self._run(0.5)  # warm-up (discovery settled, caches hot)
        time.sleep(0.2)
        self.measuring.set()
        sent += self._run(duration)
        # stragglers: until every state is answered or no answer came for 0.5 s (skipped states never come)
        safe_wait(lambda: self.received.issuperset(sent) or time.monotonic() - self.last_output > 0.5, timeout=5.0)
        self.measuring.clear()
        with self.lock:
            first = self.first_answer if self.first_answer is not None else max(sent) + 1
            counted = [s for s in sent if s >= first]
            return {
                "lat": list(self.latencies),
                "sent": len(counted),
                "received": len(self.received.intersection(counted)),
            }


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


def cpu_hog(seconds: float) -> subprocess.Popen[bytes]:
    """A busy loop on one core (the load of the 'loaded' rows), ending by itself after ``seconds``."""
    code = (
        "import os, time\n"
        "os.sched_setaffinity(0, {0})\n"
        f"end = time.monotonic() + {seconds}\n"
        "while time.monotonic() < end:\n    pass\n"
    )
    return subprocess.Popen([sys.executable, "-c", code])


def latest_value(reports: list[dict[str, str]], key: str) -> int:
    return int(reports[-1].get(key, "0")) if reports else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode")
    relay = sub.add_parser("relay", help="(internal) run the bare relay node")
    relay.add_argument("--ns", required=True)
    parser.add_argument("--duration", type=float, default=12.0, help="seconds of joint states per node and condition")
    parser.add_argument("--rate", type=float, default=1000.0, help="joint_states rate, Hz")
    parser.add_argument("--calls", type=int, default=2000, help="service calls per service (quiet)")
    parser.add_argument("--robot", default="puma560")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds (relay, nodes, relay, ...)")
    parser.add_argument(
        "--qos", default="latest,reliable", help="feed-forward nodes to compare, by joint_states_qos (comma-separated)"
    )
    parser.add_argument("--conditions", default="quiet,loaded", help="quiet and/or loaded (a busy loop on one core)")
    args = parser.parse_args(argv)
    if args.mode == "relay":
        return run_relay(args.ns)

    if "ROS_DOMAIN_ID" not in os.environ:
        os.environ["ROS_DOMAIN_ID"] = str(reserve_domain_id())
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node

    from robot_dynamics import load_robot

    model = load_robot(args.robot)
    names = model.joint_names
    ns = f"/bench_{os.getpid()}"
    variants = [q.strip() for q in args.qos.split(",") if q.strip()]
    rclpy.init()
    node = Node("bench_driver", namespace=ns)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    rows: list[tuple[str, dict[str, float], str]] = []

    own: dict[str, list[dict[str, str]]] = {"relay": [], **{q: [] for q in variants}}
    diag_names = {f"robot_dynamics: {ns}/{q}/feedforward_node": q for q in variants}
    diag_names[f"bare relay: {ns}"] = "relay"

    def on_diagnostics(msg: Any) -> None:
        for s in msg.status:
            if s.name in diag_names:
                own[diag_names[s.name]].append({kv.key: kv.value for kv in s.values})

    node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
    processes = [start([sys.executable, str(Path(__file__).resolve()), "relay", "--ns", ns])]
    for q in variants:
        ros_args = ["--ros-args", "-r", f"__ns:={ns}/{q}", "-p", f"robot_config:={args.robot}"]
        processes.append(start([executable_path("feedforward_node"), *ros_args, "-p", f"joint_states_qos:={q}"]))
    processes.append(
        start(
            [
                executable_path("dynamics_service_node"),
                "--ros-args",
                "-r",
                f"__ns:={ns}",
                "-p",
                f"robot_config:={args.robot}",
            ]
        )
    )
    targets = {"relay": ("relay/joint_states", "relay/efforts")}
    targets.update({q: (f"{q}/joint_states", f"{q}/feedforward/efforts") for q in variants})
    try:
        streams = {
            key: Stream(node, topic_in, topic_out, args.rate, names) for key, (topic_in, topic_out) in targets.items()
        }
        for condition in [c.strip() for c in args.conditions.split(",") if c.strip()]:
            hog = cpu_hog(args.duration * len(targets) * 1.5 + 30) if condition == "loaded" else None
            try:
                time.sleep(0.5)
                results = {key: {"lat": [], "sent": 0, "received": 0} for key in targets}
                marks = {key: len(own[key]) for key in targets}
                skipped_before = {q: latest_value(own[q], "joint_states_skipped") for q in variants}
                for _ in range(args.rounds):
                    for key in targets:
                        r = streams[key].round(args.duration / args.rounds)
                        for field in ("lat",):
                            results[key][field] += r[field]
                        results[key]["sent"] += r["sent"]
                        results[key]["received"] += r["received"]
                time.sleep(1.2)  # one more diagnostics period: the counters after the last stream
            finally:
                if hog is not None:
                    hog.kill()
                    hog.wait()
            r = results["relay"]
            rows.append(
                (
                    f"[{condition}] bare rclpy relay, joint_states → JointState, {args.rate:.0f} Hz",
                    stats(r["lat"]),
                    f"sent {r['sent']}, answered {r['received']}, lost {r['sent'] - r['received']}",
                )
            )
            for q in variants:
                r = results[q]
                skipped = latest_value(own[q], "joint_states_skipped") - skipped_before[q]
                unaccounted = r["sent"] - r["received"] - skipped
                rows.append(
                    (
                        f"[{condition}] feedforward_node, joint_states_qos {q} ({args.robot}, friction on)",
                        stats(r["lat"]),
                        f"sent {r['sent']}, answered {r['received']}, skipped (counted) {skipped}, "
                        f"unaccounted {unaccounted}",
                    )
                )
                reports = own[q][marks[q] :]
                busy = [d for d in reports if float(d.get("rate_hz", "0")) > 0.3 * args.rate]
                for series, label in (
                    ("state_age", "age of the answered state at the answer (diagnostics state_age_*)"),
                    ("compute", "compute per joint state (diagnostics compute_*: matching + law)"),
                    ("callback", "whole callback per joint state (diagnostics callback_*)"),
                ):
                    with_series = [d for d in busy if f"{series}_mean_us" in d]
                    if with_series:
                        rows.append(
                            (
                                f"  {q}: {label}",
                                {
                                    "p50": float(np.median([float(d[f"{series}_mean_us"]) for d in with_series])),
                                    "p99": float(np.median([float(d[f"{series}_p99_us"]) for d in with_series])),
                                    "max": float(max(float(d[f"{series}_max_us"]) for d in with_series)),
                                },
                                "p50 column = median of the 1 s means",
                            )
                        )
            relay_own = [d for d in own["relay"][marks["relay"] :] if float(d.get("rate_hz", "0")) > 0.3 * args.rate]
            if relay_own:
                rows.append(
                    (
                        "  bare relay: its own time per message (publish())",
                        {
                            "p50": float(np.median([float(d["compute_mean_us"]) for d in relay_own])),
                            "p99": float(np.median([float(d["compute_p99_us"]) for d in relay_own])),
                            "max": float(max(float(d["compute_max_us"]) for d in relay_own)),
                        },
                        "p50 column = median of the 1 s means",
                    )
                )
        if args.calls > 0:
            bare_calls: list[float] = []
            dhc_calls: list[float] = []
            for _ in range(args.rounds):
                bare_calls += service_round_trips(node, "bare_coefficients", args.calls // args.rounds, len(names))
                dhc_calls += service_round_trips(
                    node, "get_dynamics_coefficients", args.calls // args.rounds, len(names)
                )
            rows.append(
                (
                    f"[quiet] bare rclpy service, empty GetDynamicsCoefficients, {len(bare_calls)} calls",
                    stats(bare_calls),
                    "",
                )
            )
            rows.append(
                (
                    f"[quiet] get_dynamics_coefficients D/h/c ({args.robot}), {len(dhc_calls)} calls",
                    stats(dhc_calls),
                    "",
                )
            )
    finally:
        for proc in processes:
            stop(proc)
        executor.shutdown()
        spinner.join(5.0)
        node.destroy_node()
        rclpy.try_shutdown()

    print(f"\nROS 2 interface benchmark ({os.cpu_count()} cores, ROS_DOMAIN_ID {os.environ['ROS_DOMAIN_ID']})\n")
    print("| measurement | p50 (µs) | p99 (µs) | max (µs) | p99 / relay's | notes |")
    print("|---|---|---|---|---|---|")
    reference: dict[str, float] | None = None
    for label, s, notes in rows:
        if "bare" in label and not label.startswith("  "):
            reference = s
        ratio = "" if reference is None or label.startswith("  ") else f"{s['p99'] / reference['p99']:.2f}"
        print(f"| {label} | {s['p50']:.0f} | {s['p99']:.0f} | {s['max']:.0f} | {ratio} | {notes} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
