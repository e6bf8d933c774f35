"""The closed-loop experiment's ROS side: the node processes it starts and the node it drives them with.

* :class:`NodeProcess`: one robot_dynamics node in its own process, as ``ros2 run``/``ros2 launch``
  start it (``python -m robot_dynamics.ros.<node> --ros-args --params-file FILE -p ... -r ...``), its
  output in a log file; a node that stops (a FATAL start-up line) is reported with that line.
* :func:`parameter_file`: a ``ros__parameters`` YAML file for one node.
* :class:`ExperimentNode`: the experiment's own rclpy node. It records ``joint_states``, the
  controller's answers (``joint_commands``) and, with a sensor profile, the simulator's truth
  (``simulator_node/true_joint_states``) with :class:`~robot_dynamics.ros.replay.Recorder` (raw messages,
  receipt times on its clock: simulated time under ``use_sim_time``, as ``ros2 bag record`` would record
  them), publishes trajectories, sets the feed-forward node's parameters, resets the
  simulator and keeps the latest ``/diagnostics`` of every node. Service calls are sent again when no
  answer came (Fast DDS drops a response to a client it has not discovered yet; both services are
  idempotent).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from importlib import import_module
from pathlib import Path
from typing import IO, Any

import numpy as np
import yaml
from builtin_interfaces.msg import Duration
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.clock import Clock
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.bag.decode import decode_joint_states
from robot_dynamics.bag.reader import JOINT_STATE, RawTopic
from robot_dynamics.experiment.motion import ExperimentError, Motion
from robot_dynamics.ros.messages import DATA_QOS, diagnostic_dict, ns_to_stamp, stamp_to_ns
from robot_dynamics.ros.realtime import PeriodicThread
from robot_dynamics.ros.replay import Recorder
from robot_dynamics.ros.serialized import header_stamp

ResetSimulation: Any = import_module("robot_dynamics_interfaces.srv").ResetSimulation

#: s between the recording thread's takes (each takes every message waiting, ~5 of each topic at 1 kHz)
RECORD_PERIOD_S = 0.005
STOP_TIMEOUT = 10.0  # s for a node process to stop after SIGINT before it is killed


# ------------------------------------------------------------------------------------------------
# node processes
# ------------------------------------------------------------------------------------------------
def parameter_file(path: Path, node: str, parameters: Mapping[str, Any]) -> Path:
    """``/**/NODE: ros__parameters: {...}`` (any namespace), as the package's config files are written."""
    text = yaml.safe_dump({f"/**/{node}": {"ros__parameters": dict(parameters)}}, sort_keys=False, width=120)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


class NodeProcess:
    """A robot_dynamics node (``module`` under ``robot_dynamics.ros``) in its own process."""

    def __init__(
        self,
        module: str,
        log: Path,
        env: Mapping[str, str],
        *,
        params_file: Path | None = None,
        parameters: Mapping[str, str] | None = None,
        remaps: Mapping[str, str] | None = None,
    ) -> None:
        self.name = module
        self.log_path = log
        command = [sys.executable, "-m", f"robot_dynamics.ros.{module}", "--ros-args"]
        if params_file is not None:
            command += ["--params-file", str(params_file)]
        for key, value in (parameters or {}).items():
            command += ["-p", f"{key}:={value}"]
        for old, new in (remaps or {}).items():
            command += ["-r", f"{old}:={new}"]
        self.command = command
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log: IO[bytes] = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            command, stdout=self._log, stderr=subprocess.STDOUT, env=dict(env), start_new_session=True
        )

    def check(self) -> None:
        """ExperimentError with the node's FATAL (or last) line if the process has stopped."""
        if self.process.poll() is None:
            return
        self._log.flush()
        lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        fatal = [line for line in lines if "FATAL" in line] or lines[-1:] or ["(no output)"]
        raise ExperimentError(
            f"{self.name} stopped (exit status {self.process.returncode}): {fatal[0].strip()} (log: {self.log_path})"
        )

    def stop(self) -> int | None:
        """SIGINT (what ``ros2 launch`` sends on Ctrl-C), killed after :data:`STOP_TIMEOUT`; the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_TIMEOUT)
        self._log.close()
        return self.process.returncode


def node_environment(domain_id: int) -> dict[str, str]:
    """The environment of the node processes: one ROS domain, discovery on this machine only."""
    env = dict(
        os.environ, ROS_DOMAIN_ID=str(domain_id), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONFAULTHANDLER="1"
    )
    env.pop("ROS_LOCALHOST_ONLY", None)
    return env


# ------------------------------------------------------------------------------------------------
# the experiment's node
# ------------------------------------------------------------------------------------------------
def trajectory_message(motion: Motion, stamp_ns: int) -> JointTrajectory:
    """``motion`` as a JointTrajectory starting at ``stamp_ns`` (efforts in the points when it has them)."""
    msg = JointTrajectory()
    msg.header.stamp = ns_to_stamp(stamp_ns)
    msg.joint_names = list(motion.names)
    efforts = motion.efforts
    points = []
    for k, t in enumerate(motion.times.tolist()):
        ns = round(t * 1e9)
        point = JointTrajectoryPoint(
            positions=motion.positions[k].tolist(),
            velocities=motion.velocities[k].tolist(),
            accelerations=motion.accelerations[k].tolist(),
            effort=[] if efforts is None else efforts[k].tolist(),
            time_from_start=Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000),
        )
        points.append(point)
    msg.points = points
    return msg


class ResetNotRecorded(ExperimentError):
    """The simulator was reset but the recording lost its reset state: a recorder that fell behind a fast
    loop on a busy machine loses the oldest states of the publisher's history (the case starts again)."""


def wait_for(condition: Callable[[], bool], timeout: float, what: str, check: Callable[[], None] | None = None) -> None:
    """Poll ``condition`` (every 5 ms) until it holds; ``check`` raises on a failure meanwhile."""
    deadline = time.monotonic() + timeout
    while not condition():
        if check is not None:
            check()
        if time.monotonic() > deadline:
            raise ExperimentError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.005)


class StampedRecorder(Recorder):
    """A :class:`~robot_dynamics.ros.replay.Recorder` that also knows the newest header stamp it got."""

    def __init__(self, node: Node, topic: str, msgtype: str, clock: Clock | None = None) -> None:
        self.newest = 0
        super().__init__(node, topic, msgtype, clock)

    def _store(self, received_ns: int, raw: bytes) -> None:
        super()._store(received_ns, raw)
        self.newest = max(self.newest, header_stamp(raw))


class ExperimentNode(Node):
    """Records, publishes trajectories, sets parameters, resets the simulator (module docstring)."""

    def __init__(
        self, context: Context, *, sim_time: bool, check: Callable[[], None], truth_topic: str | None = None
    ) -> None:
        super().__init__(
            "closed_loop_experiment", context=context, parameter_overrides=[Parameter("use_sim_time", value=sim_time)]
        )
        self.check = check  # raises when a node process has stopped
        # the recording: on a node no executor spins, taken by a thread every RECORD_PERIOD_S (at 1 kHz an
        # executor's callback per message cost this process about half a core; see RECORD_PERIOD_S)
        self.recording = Node(
            "closed_loop_recorder",
            context=context,
            use_global_arguments=False,
            start_parameter_services=False,
            enable_rosout=False,
        )
        clock = self.get_clock()  # simulated time under lock-step (this node's /clock subscription)
        self.states = StampedRecorder(self.recording, "/joint_states", JOINT_STATE, clock)
        self.commands = StampedRecorder(self.recording, "/joint_commands", JOINT_STATE, clock)
        # with sensors: the simulator's truth beside the measured joint states (what the arm really did)
        self.truth = None if truth_topic is None else StampedRecorder(self.recording, truth_topic, JOINT_STATE, clock)
        self.recorders = [r for r in (self.states, self.commands, self.truth) if r is not None]
        receipt_clock = not sim_time

        def take() -> None:
            for recorder in self.recorders:
                recorder.take_waiting(receipt_clock)

        self._taker = PeriodicThread(RECORD_PERIOD_S, take, self._take_failed, "closed-loop-recording")
        self._taker.start()
        self.trajectory_pub = self.create_publisher(JointTrajectory, "joint_trajectory", DATA_QOS)
        self.feedforward_parameters = AsyncParameterClient(self, "feedforward_node")
        self.reset_client: Any = self.create_client(ResetSimulation, "reset_simulation")
        self._diagnostics: dict[str, tuple[float, dict[str, str]]] = {}
        self._lock = threading.Lock()
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 50)

    def _take_failed(self, exc: Exception) -> None:
        self.get_logger().error(f"recording: {type(exc).__name__}: {exc}", throttle_duration_sec=5.0)

    def destroy_node(self) -> None:
        self._taker.stop()
        self.recording.destroy_node()
        super().destroy_node()

    def now_ns(self) -> int:
        """The loop's time: the newest joint-state stamp recorded (the simulator's clock)."""
        return self.states.newest

    # -- diagnostics ------------------------------------------------------------------------------
    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        now = time.monotonic()
        with self._lock:
            for status in msg.status:
                self._diagnostics[status.name] = (now, diagnostic_dict(status))

    def diagnostics(self, node: str, after: float = 0.0, timeout: float = 30.0) -> dict[str, str]:
        """The newest ``/diagnostics`` values of ``node`` received after the monotonic time ``after``."""
        name = f"robot_dynamics: /{node}"

        def fresh() -> bool:
            with self._lock:
                return name in self._diagnostics and self._diagnostics[name][0] > after

        wait_for(fresh, timeout, f"diagnostics of {node}", self.check)
        with self._lock:
            return dict(self._diagnostics[name][1])

    # -- readiness --------------------------------------------------------------------------------
    def wait_running(self, timeout: float, lockstep: bool) -> None:
        """Until the loop runs (joint states and answers flow), the trajectory input and the services are there."""

        def running() -> bool:
            return (
                self.states.count > 20 and self.commands.count > 20 and self.trajectory_pub.get_subscription_count() > 0
            )

        wait_for(running, timeout, "the simulator and the feed-forward node to close the loop", self.check)
        wait_for(
            lambda: self.feedforward_parameters.services_are_ready(),
            timeout,
            "feedforward_node's parameters",
            self.check,
        )
        if lockstep:
            wait_for(self.reset_client.service_is_ready, timeout, "the simulator's reset_simulation", self.check)
        self.reset(timeout=timeout)  # once: the first answer of a service may need a second request

    # -- services ---------------------------------------------------------------------------------
    def _call(self, send: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
        futures, deadline, resend = [send()], time.monotonic() + timeout, 5.0
        while True:
            attempt_end = min(deadline, time.monotonic() + resend)
            while time.monotonic() < attempt_end:
                for future in futures:
                    if future.done():
                        return future.result()
                self.check()
                time.sleep(0.002)
            if time.monotonic() >= deadline:
                raise ExperimentError(f"no answer to {what} within {timeout:g} s")
            futures.append(send())
            resend *= 2.0

    def set_feedforward(self, values: Mapping[str, Any]) -> None:
        """Sets the feed-forward node's parameters at run time; ExperimentError with its reason if refused."""
        params = [Parameter(name, value=value) for name, value in values.items()]
        result = self._call(lambda: self.feedforward_parameters.set_parameters(params), "set_parameters")
        refused = [f"{p.name}: {r.reason}" for p, r in zip(params, result.results, strict=True) if not r.successful]
        if refused:
            raise ExperimentError(f"feedforward_node refused {refused}")

    def reset(self, q: np.ndarray | None = None, timeout: float = 30.0) -> int:
        """Resets the simulator to ``q`` at rest (None: its start pose); the stamp of the reset state.

        The simulator publishes the reset state before it answers, so the recording holds it once it has
        caught up: wait for a state at exactly ``q`` with zero velocity, then for the recording to reach
        the clock at the answer, and take the last such state (a request sent again may have reset it
        twice). Not the clock alone: on a busy machine this node's clock may trail the recording. With
        the truth recorded (sensors: the measured position is quantized) the state is looked for there.
        """
        first = self.states.count
        first_truth = 0 if self.truth is None else self.truth.count
        position = [] if q is None else [float(v) for v in q]
        request = ResetSimulation.Request(position=position, velocity=[0.0] * len(position))
        response = self._call(lambda: self.reset_client.call_async(request), "reset_simulation")
        if not response.success:
            raise ExperimentError(f"reset_simulation failed: {response.message}")
        answered = int(self.get_clock().now().nanoseconds)  # /clock (lock-step) or the wall clock at the answer
        stamps = [-1]
        where = self.states if self.truth is None else self.truth
        seen = first if self.truth is None else first_truth

        def found() -> bool:
            nonlocal seen
            with where.lock:
                fresh = where.data[seen:]
            seen += len(fresh)
            for raw in fresh:
                msg = deserialize_message(raw, JointState)
                if (not position or list(msg.position) == position) and not any(msg.velocity):
                    stamps.append(stamp_to_ns(msg.header.stamp))
            return stamps[-1] >= 0 and min(r.newest for r in (self.states, where)) >= answered

        try:
            wait_for(found, timeout, "the recording to reach the reset", self.check)
        except ExperimentError:
            if stamps[-1] < 0:
                raise ResetNotRecorded(
                    "reset_simulation answered, but no joint state at the reset pose was recorded"
                ) from None
            raise
        return stamps[-1]

    # -- trajectories and recordings --------------------------------------------------------------
    def publish(self, motion: Motion, stamp_ns: int) -> None:
        """Publishes ``motion`` starting at ``stamp_ns``."""
        self.trajectory_pub.publish(trajectory_message(motion, stamp_ns))

    def wait_recorded(self, t_ns: int, timeout: float) -> None:
        """Until a joint state and an answer (and the truth) stamped ``t_ns`` or later are recorded."""
        wait_for(
            lambda: min(r.newest for r in self.recorders) >= t_ns,
            timeout,
            f"joint states and answers up to {t_ns * 1e-9:.3f} s",
            self.check,
        )

    def marks(self) -> tuple[int, ...]:
        return tuple(r.count for r in self.recorders)

    def since(self, marks: tuple[int, ...], first_ns: int, last_ns: int) -> dict[str, RawTopic]:
        """The joint states, answers (and the truth) recorded since ``marks`` (:meth:`marks`) whose header
        stamps lie in ``[first_ns, last_ns]``."""
        out = {}
        for recorder, first in zip(self.recorders, marks, strict=True):
            with recorder.lock:
                received, data = list(recorder.stamps[first:]), list(recorder.data[first:])
            raw = RawTopic(recorder.topic, recorder.msgtype, np.array(received, dtype=np.int64), data)
            stamps = decode_joint_states(raw).stamps
            keep = np.flatnonzero((stamps >= first_ns) & (stamps <= last_ns))
            out[recorder.topic] = RawTopic(raw.topic, raw.msgtype, raw.timestamps[keep], [data[k] for k in keep])
        return out
