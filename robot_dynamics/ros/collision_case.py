"""``robot-dynamics collision``: an arm runs into an obstacle, with and without each reaction, through the nodes.

The simulator (MuJoCo, the deviation file, lock-step ``/clock``), the contact node and the feed-forward node
each run in a process of their own over DDS, as ``ros2 launch`` starts them (the closed-loop experiment's
:class:`~robot_dynamics.ros.closed_loop_nodes.NodeProcess` and
:class:`~robot_dynamics.ros.closed_loop_nodes.ExperimentNode`, read as they are):

1. **Identification** (unless a model is given): the stock file's PD + feed-forward tracks
   ``robot-dynamics excitation`` on the robot file narrowed to the workspace (as the experiment does),
   recorded, then ``robot-dynamics identify --effort-lag auto --acceleration auto`` → ``identified.yaml``.
2. **Thresholds** (unless a parameter file is given): the identified file's PD + feed-forward tracks a
   free motion (the experiment's planned way points about the start, no obstacle), recorded, then
   ``robot-dynamics contact BAG --robot identified.yaml --calibrate --effort-timing auto`` →
   ``contact.yaml`` (the contact node's parameter file).
3. **Free motion**: the three nodes, ``reaction: stop``, another free motion of ``free_duration`` s: the
   collision events and reactions raised (none wanted).
4. **The cases**: per obstacle file and per reaction, fresh nodes with the obstacles in the plant; the
   simulator starts at rest at the motion's first point, the feed-forward node holds there (its
   ``collision`` input remapped onto ``contact_node/collision``); the motion of
   :func:`robot_dynamics.collision.case.collision_motion` starts ``lead`` s later; recorded until
   ``after`` s past its end: ``/joint_states``, ``/joint_commands``, ``/simulator_node/obstacle_wrench``,
   ``/contact_node/collision``, ``/feedforward/reaction`` (``bags/<obstacles>_<reaction>``).
5. The report (:mod:`robot_dynamics.collision.report`).

The module is longer than 400 lines because it holds the five steps and the sessions they share in the
order they run, one sequence to read (the measures and the report are :mod:`robot_dynamics.collision`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import rclpy
import yaml
from geometry_msgs.msg import WrenchStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.serialization import deserialize_message

from robot_dynamics.bag.decode import decode_joint_states
from robot_dynamics.bag.reader import RawTopic
from robot_dynamics.bag.writer import BagWriter
from robot_dynamics.collision.case import CaseMeasures, collision_motion, default_direction, measure
from robot_dynamics.experiment.motion import (
    ExperimentError,
    Motion,
    first_contact,
    identify_offsets,
    planned_motion,
    restricted_model,
)
from robot_dynamics.experiment.report import TRUTH_TOPIC
from robot_dynamics.experiment.settings import (
    Settings,
    chain_arguments,
    gains,
    loop_delay,
    node_parameters,
    sensor_profile_parameter,
)
from robot_dynamics.identification.excitation_files import read_trajectory
from robot_dynamics.model import RobotModel
from robot_dynamics.models.chain_yaml import dumps_chain_yaml
from robot_dynamics.plant import PlantOptions, SensorProfile, load_sensor_profile, make_plant
from robot_dynamics.plant.obstacles import load_obstacles
from robot_dynamics.reaction import braking_for_delay
from robot_dynamics.ros.closed_loop_nodes import ExperimentNode, NodeProcess, node_environment, parameter_file
from robot_dynamics.ros.demo import reserve_domain_id
from robot_dynamics.ros.launch_support import CONTACT_ANSWER
from robot_dynamics.ros.messages import stamp_to_ns
from robot_dynamics.ros.process import stop_executors
from robot_dynamics.ros.reaction_messages import CollisionEvent, ReactionEvent
from robot_dynamics.ros.realtime import PeriodicThread
from robot_dynamics.ros.replay import Recorder
from robot_dynamics.user_input import external_names, renamed_model

MOVE_S, SETTLE_S, HOLD_S = 1.0, 0.5, 5.0  # bringing the arm to the excitation's start (as the experiment)
WRENCH, COLLISION, REACTION = "/simulator_node/obstacle_wrench", "/contact_node/collision", "/feedforward/reaction"
EXTRA = {  # topic: message type, recorded beside the joint states and commands
    WRENCH: "geometry_msgs/msg/WrenchStamped",
    COLLISION: "robot_dynamics_interfaces/msg/CollisionEvent",
    REACTION: "robot_dynamics_interfaces/msg/ReactionEvent",
}


def _data(recorded: Mapping[str, RawTopic], topic: str) -> list[bytes]:
    return recorded[topic].data if topic in recorded else []


def _collision_dict(e: Any) -> dict[str, Any]:
    return {
        "stamp_ns": stamp_to_ns(e.header.stamp),
        "joint": e.joint,
        "raised": bool(e.raised),
        "magnitude": e.magnitude,
        "threshold": e.threshold,
        "in_collision": bool(e.in_collision),
    }


def _reaction_dict(r: Any) -> dict[str, Any]:
    return {
        "stamp_ns": stamp_to_ns(r.header.stamp),
        "strategy": r.strategy,
        "active": bool(r.active),
        "collision_stamp_ns": stamp_to_ns(r.collision_stamp),
        "command_stamp_ns": stamp_to_ns(r.command_stamp),
        "latency_s": r.latency,
        "joints": list(r.joints),
    }


@dataclass(frozen=True)
class CollisionSettings:
    """What ``robot-dynamics collision`` was asked: the experiment's settings (robot, plant, gains, rate,
    excitation, identification) and the case's own."""

    base: Settings
    obstacles: tuple[str, ...]
    reactions: tuple[str, ...] = ("none", "stop", "float", "reflex")
    speed: float = 0.4  # m/s, the tool's peak speed
    direction: tuple[float, float, float] | None = None
    after: float = 1.0  # s recorded after the motion's end
    sensor_profile: str = ""
    reaction_parameters: Mapping[str, float] = field(default_factory=dict)
    identified: str = ""  # a model to use instead of identifying
    contact_parameters: str = ""  # a contact-node parameter file instead of calibrating
    calibration_duration: float = 30.0
    free_duration: float = 30.0
    margin: float = 3.0  # contact --calibrate's margin


@dataclass
class Session:
    """The running nodes of one session and the experiment node driving them."""

    node: ExperimentNode
    extra: dict[str, Recorder]


class CollisionCase:
    """One run of the command (module docstring)."""

    def __init__(self, s: CollisionSettings, model: RobotModel, say: Callable[[str], None] = print) -> None:
        self.s, self.model, self.say = s, model, say
        self.b = s.base
        self.out = self.b.out
        self.logs = self.out / "logs"
        self.names = tuple(external_names(model.joint_names, self.b.joint_map))
        self.period_ns = max(1, round(1e9 / self.b.rate))
        self.context: Any = None
        self.env: dict[str, str] = {}
        self.results: dict[str, list[CaseMeasures]] = {}
        self.free: dict[str, Any] = {}
        self.profile: SensorProfile | None = None
        self.delays = (0.0, 0.0)  # s: the sensors' measurement and command delays
        self.offset_use = "reading"  # identify --offsets (prepare: "torque" behind a torque loop)

    # -- offline preparation ---------------------------------------------------------------------------
    def prepare(self) -> None:
        """The start pose, gains, the free motions and, per obstacle file, the motion into it (bad input:
        ExperimentError / ModelError before any node starts)."""
        b, s, model = self.b, self.s, self.model
        self.out.mkdir(parents=True, exist_ok=True)
        self.q0 = np.asarray(b.start, dtype=np.float64) if b.start is not None else None
        if self.q0 is None:
            raise ExperimentError("the collision case needs a start pose (--start)")
        # with sensors, as the closed-loop experiment: gains for the loop's delay, the node told the delays
        self.profile = load_sensor_profile(s.sensor_profile) if s.sensor_profile else None
        if self.profile is not None:
            self.delays = (self.profile.measurement_delay / b.rate, self.profile.command_delay / b.rate)
        self.kp, self.kd = gains(model, self.q0, b, loop_delay(b.rate, self.profile))
        period = 1.0 / b.rate
        free_plant = make_plant(
            self._options(""), renamed_model(model, b.joint_map), period, b.robot, b.base_link, b.tip_link
        )
        self.offset_use = identify_offsets(free_plant, model.dof)
        motions = {}
        if not s.contact_parameters:
            motions["calibration"] = planned_motion(
                model, self.q0, duration=s.calibration_duration, reach=b.reach, seed=b.seed + 1, names=self.names
            )
        if s.free_duration > 0.0:
            motions["free"] = planned_motion(
                model, self.q0, duration=s.free_duration, reach=b.reach, seed=b.seed + 2, names=self.names
            )
        for what, motion in motions.items():
            touching = first_contact(free_plant, motion)  # type: ignore[arg-type]
            if touching:
                raise ExperimentError(f"the {what} motion: {touching} (choose a smaller --reach or another --start)")
        self.calibration, self.free_motion = motions.get("calibration"), motions.get("free")
        self.cases: dict[str, tuple[str, Motion, float]] = {}
        for path in s.obstacles:
            obstacles = load_obstacles(path)
            plant = make_plant(
                self._options(path), renamed_model(model, b.joint_map), period, b.robot, b.base_link, b.tip_link
            )
            direction = s.direction if s.direction is not None else default_direction(model, self.q0, obstacles)
            motion, contact = collision_motion(model, plant, self.q0, direction, s.speed, self.names)  # type: ignore[arg-type]
            self.cases[Path(path).stem] = (str(Path(path).resolve()), motion, contact)

    def _options(self, obstacles: str) -> PlantOptions:
        b = self.b
        return PlantOptions(
            engine="mujoco",
            deviations=b.plant,
            timestep=b.timestep,
            locked_joints=dict(b.locked_joints),
            joint_map=dict(b.joint_map),
            obstacles=obstacles,
            sensor_profile=self.s.sensor_profile,
        )

    # -- processes ------------------------------------------------------------------------------------
    def _command(self, args: list[str], name: str) -> None:
        """``robot-dynamics ARGS``, its output in logs/NAME.log; ExperimentError with its error line."""
        self.logs.mkdir(parents=True, exist_ok=True)
        (self.logs / f"{name}.command").write_text("robot-dynamics " + " ".join(args) + "\n")
        with open(self.logs / f"{name}.log", "wb") as log:
            done = subprocess.run(
                [sys.executable, "-m", "robot_dynamics.cli", *args], stdout=log, stderr=subprocess.STDOUT, check=False
            )
        if done.returncode != 0:
            lines = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()
            errors = [line for line in lines if ": error:" in line] or lines[-1:] or ["(no output)"]
            raise ExperimentError(f"robot-dynamics {name} failed: {errors[-1]} (log: {self.logs / name}.log)")

    def _processes(
        self, tag: str, robot_config: str, start: np.ndarray, obstacles: str, contact: str, reaction: str
    ) -> list[NodeProcess]:
        params = self.out / "params"
        simulator, controller = node_parameters(self.b, start, self.kp, self.kd, True, self.delays)
        profile = sensor_profile_parameter(self.s.sensor_profile) if self.s.sensor_profile else ""
        simulator |= {"obstacles": obstacles, "sensor_profile": profile}
        if contact:  # each step waits for the contact node too: its events are out before the next state
            simulator["lockstep_observers"] = [CONTACT_ANSWER]
        # braking as strong as the delays the node is told of keep well damped (as the gains are set for them)
        braking = {"reaction_damping": braking_for_delay(sum(self.delays))} if sum(self.delays) > 0.0 else {}
        controller |= {"reaction": reaction, **braking}
        controller |= {f"reaction_{k}": v for k, v in self.s.reaction_parameters.items()}
        parameter_file(params / f"simulator_{tag}.yaml", "simulator_node", simulator)
        parameter_file(params / f"feedforward_{tag}.yaml", "feedforward_node", controller)
        processes = [
            NodeProcess(
                "simulator_node",
                self.logs / f"simulator_{tag}.log",
                self.env,
                params_file=params / f"simulator_{tag}.yaml",
                parameters={"robot_config": self.b.robot},
            ),
            NodeProcess(
                "feedforward_node",
                self.logs / f"feedforward_{tag}.log",
                self.env,
                params_file=params / f"feedforward_{tag}.yaml",
                parameters={"robot_config": robot_config},
                remaps={"feedforward/efforts": "joint_commands", "collision": "contact_node/collision"},
            ),
        ]
        if contact:
            chain = {
                k: v for k, v in controller.items() if k in ("base_link", "tip_link", "locked_joints", "joint_map")
            }
            calibrated = yaml.safe_load(Path(contact).read_text(encoding="utf-8"))
            values = next(iter(calibrated.values()))["ros__parameters"]
            parameter_file(
                params / f"contact_{tag}.yaml",
                "contact_node",
                {**chain, **values, "use_sim_time": True, "diagnostics_period": 0.2},
            )
            processes.append(
                NodeProcess(
                    "contact_node",
                    self.logs / f"contact_{tag}.log",
                    self.env,
                    params_file=params / f"contact_{tag}.yaml",
                    parameters={"robot_config": robot_config},
                )
            )
        return processes

    def _session(
        self,
        tag: str,
        robot_config: str,
        start: np.ndarray,
        body: Callable[[Session], None],
        *,
        obstacles: str = "",
        contact: str = "",
        reaction: str = "none",
    ) -> None:
        processes = self._processes(tag, robot_config, start, obstacles, contact, reaction)

        def check() -> None:
            for p in processes:
                p.check()

        # with sensors the measured position is quantized: the reset state is found in the truth
        truth = TRUTH_TOPIC if self.profile is not None else None
        node = ExperimentNode(self.context, sim_time=True, check=check, truth_topic=truth)
        clock = node.get_clock()
        extra = {topic: Recorder(node.recording, topic, msgtype, clock) for topic, msgtype in EXTRA.items()}

        def take() -> None:
            for recorder in extra.values():
                recorder.take_waiting(False)

        taker = PeriodicThread(0.005, take, lambda exc: None, "collision-recording")
        taker.start()
        executor = SingleThreadedExecutor(context=self.context)
        executor.add_node(node)
        thread = threading.Thread(target=executor.spin, name=f"collision-{tag}", daemon=True)
        thread.start()
        try:
            node.wait_running(self.b.timeout, True)
            body(Session(node, extra))
        finally:
            taker.stop()
            for p in processes:
                p.stop()
            if all(stop_executors([executor], [thread], 5.0)):
                node.destroy_node()

    # -- motions --------------------------------------------------------------------------------------
    def _track(self, session: Session, motion: Motion, *, approach: bool) -> tuple[int, dict[str, RawTopic]]:
        """Run ``motion`` (brought to its start and reset there first with ``approach``; else from where the
        arm holds); its start stamp and everything recorded from ``lead`` before it to ``after`` past its end."""
        node, b = session.node, self.b
        if approach:
            now = node.now_ns()
            node.publish(motion.approach(MOVE_S, SETTLE_S + b.lead + HOLD_S), 0)
            node.wait_recorded(now + round((MOVE_S + SETTLE_S) * 1e9), b.timeout)
            at = node.reset(motion.positions[0])
        else:
            at = node.now_ns()
        start = at + round(b.lead * 1e9 / self.period_ns) * self.period_ns
        marks = node.marks()
        extra_marks = {topic: r.count for topic, r in session.extra.items()}
        node.publish(motion, start)
        end = start + round((motion.duration + self.s.after) * 1e9)
        node.wait_recorded(end, b.timeout + 20.0 * (motion.duration + self.s.after))
        time.sleep(0.2)  # the events and reports of the last states
        recorded = node.since(marks, start - round(b.lead * 1e9), end)
        for topic, r in session.extra.items():
            with r.lock:
                stamps, data = list(r.stamps[extra_marks[topic] :]), list(r.data[extra_marks[topic] :])
            recorded[topic] = RawTopic(topic, r.msgtype, np.array(stamps, dtype=np.int64), data)
        return start, recorded

    def _write_bag(self, key: str, recorded: Mapping[str, RawTopic]) -> Path:
        """The standard messages as a rosbag2 bag (``bags/KEY``); the collision events and reaction reports,
        whose types a bag reader without this package's interfaces cannot decode, as ``bags/KEY_events.json``."""
        bag = self.out / "bags" / key
        with BagWriter(bag, overwrite=True) as writer:
            for topic in recorded.values():
                if len(topic) and not topic.msgtype.startswith("robot_dynamics_interfaces/"):
                    writer.write_raw(topic.topic, topic.msgtype, topic.timestamps, topic.data)
        events = {
            "collisions": [
                _collision_dict(deserialize_message(raw, CollisionEvent)) for raw in _data(recorded, COLLISION)
            ],
            "reactions": [_reaction_dict(deserialize_message(raw, ReactionEvent)) for raw in _data(recorded, REACTION)],
        }
        (self.out / "bags" / f"{key}_events.json").write_text(json.dumps(events, indent=1) + "\n")
        return bag

    # -- the steps ------------------------------------------------------------------------------------
    def identify(self) -> str:
        if self.s.identified:
            return str(Path(self.s.identified).resolve())
        b = self.b
        robot_file = self.out / "excitation_robot.yaml"
        robot_file.write_text(dumps_chain_yaml(restricted_model(self.model, self.q0, b.reach)))  # type: ignore[arg-type]
        self.say("  robot-dynamics excitation ...")
        args = [
            "excitation",
            str(robot_file),
            "--duration",
            f"{b.excitation_duration:g}",
            "--harmonics",
            str(b.harmonics),
        ]
        self._command(
            [*args, "--ramp", "1", "--seed", str(b.seed), "--out", str(self.out / "excitation.yaml"), "--force"],
            "excitation",
        )
        sampler = read_trajectory(self.out / "excitation.yaml").sampler(self.model.joint_names)
        assert sampler.velocities is not None and sampler.accelerations is not None
        motion = Motion(self.names, sampler.times, sampler.positions, sampler.velocities, sampler.accelerations)
        recorded: dict[str, RawTopic] = {}

        def run(session: Session) -> None:
            recorded.update(self._track(session, motion, approach=True)[1])

        self.say("  recording the excitation (stock file's PD + feed-forward) ...")
        self._session("excitation", b.robot, self.q0, run)  # type: ignore[arg-type]
        bag = self._write_bag("excitation", recorded)
        identified = self.out / "identified.yaml"
        self.say("  robot-dynamics identify ...")
        args = ["identify", str(bag), "--robot", b.robot, *chain_arguments(b), "--out", str(identified)]
        args += ["--friction", b.friction_law, "--effort-lag", "auto", "--acceleration", "auto"]
        args += ["--offsets", self.offset_use, *b.identify_options]
        self._command(args, "identify")
        return str(identified)

    def calibrate(self, identified: str) -> str:
        if self.s.contact_parameters:
            return str(Path(self.s.contact_parameters).resolve())
        recorded: dict[str, RawTopic] = {}

        motion = self.calibration
        assert motion is not None

        def run(session: Session) -> None:
            recorded.update(self._track(session, motion, approach=False)[1])

        self.say(f"  recording {self.s.calibration_duration:g} s of free motion for the thresholds ...")
        self._session("calibration", identified, self.q0, run)  # type: ignore[arg-type]
        bag = self._write_bag("calibration", {k: v for k, v in recorded.items() if k == "/joint_states"})
        params = self.out / "contact.yaml"
        self.say("  robot-dynamics contact --calibrate ...")
        args = ["contact", str(bag), "--robot", identified, *chain_arguments(self.b), "--calibrate"]
        args += ["--margin", f"{self.s.margin:g}", "--effort-timing", "auto", "--params", str(params)]
        self._command(args, "calibrate")
        return str(params)

    def free_check(self, identified: str, contact: str) -> None:
        recorded: dict[str, RawTopic] = {}
        motion = self.free_motion
        assert motion is not None

        def run(session: Session) -> None:
            recorded.update(self._track(session, motion, approach=False)[1])

        self.say(f"  {self.s.free_duration:g} s of free motion, reaction stop armed ...")
        self._session("free", identified, self.q0, run, contact=contact, reaction="stop")  # type: ignore[arg-type]
        self._write_bag("free", recorded)
        events = [deserialize_message(raw, CollisionEvent) for raw in _data(recorded, COLLISION)]
        reactions = [deserialize_message(raw, ReactionEvent) for raw in _data(recorded, REACTION)]
        states = len(recorded["/joint_states"])
        self.free = {
            "duration_s": motion.duration,
            "joint_states": states,
            "collisions_raised": sum(e.raised for e in events),
            "reactions": sum(r.active for r in reactions),
        }
        self.say(f"    {self.free['collisions_raised']} collisions, {self.free['reactions']} reactions")

    def case(self, identified: str, contact: str, key: str, reaction: str) -> CaseMeasures:
        obstacles, motion, _ = self.cases[key]
        recorded: dict[str, RawTopic] = {}
        start_ns = [0]

        def run(session: Session) -> None:
            start_ns[0], more = self._track(session, motion, approach=False)
            recorded.update(more)

        self._session(
            f"{key}_{reaction}",
            identified,
            motion.positions[0],
            run,
            obstacles=obstacles,
            contact=contact,
            reaction=reaction,
        )
        self._write_bag(f"{key}_{reaction}", recorded)
        wrenches = [deserialize_message(raw, WrenchStamped) for raw in _data(recorded, WRENCH)]
        force_stamps = np.array([stamp_to_ns(w.header.stamp) for w in wrenches], dtype=np.int64)
        force = np.array([np.linalg.norm([w.wrench.force.x, w.wrench.force.y, w.wrench.force.z]) for w in wrenches])
        keep = force_stamps >= start_ns[0]
        states = decode_joint_states(recorded["/joint_states"], self.names)
        events = [deserialize_message(raw, CollisionEvent) for raw in _data(recorded, COLLISION)]
        raised = [
            stamp_to_ns(e.header.stamp) for e in events if e.raised and stamp_to_ns(e.header.stamp) >= start_ns[0]
        ]
        reports = [deserialize_message(raw, ReactionEvent) for raw in _data(recorded, REACTION)]
        started = [r for r in reports if r.active]
        first = stamp_to_ns(started[0].command_stamp) if started else None
        result = measure(
            reaction,
            self.model,
            start_ns[0],
            force_stamps[keep].astype(np.float64),
            force[keep],
            states.stamps.astype(np.float64),
            states.position,
            states.velocity if states.velocity is not None else np.zeros_like(states.position),
            raised,
            first,
            started[0].latency if started else None,
        )
        np.savez(
            self.out / "bags" / f"{key}_{reaction}_force.npz",
            t=(force_stamps[keep] - start_ns[0]) * 1e-9,
            force=force[keep],
        )
        return result

    # -- the whole command ----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        from robot_dynamics.collision import report

        if not hasattr(self, "cases"):
            self.prepare()
        lock = None
        domain = self.b.domain_id
        if domain is None:
            domain, lock = reserve_domain_id()
        self.env = node_environment(domain)
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        started = time.monotonic()
        try:
            self.say(
                f"collision case: {self.model.name}, plant {self.b.plant or '(no deviations)'}, sensors "
                f"{self.s.sensor_profile or 'ideal'}, {self.b.rate:g} Hz lock-step; outputs in {self.out}"
            )
            identified = self.identify()
            contact = self.calibrate(identified)
            if self.s.free_duration > 0.0:
                self.free_check(identified, contact)
            for key in self.cases:
                self.results[key] = []
                for reaction in self.s.reactions:
                    self.say(f"  {key}: reaction {reaction} ...")
                    measured = self.case(identified, contact, key, reaction)
                    self.say(f"    {report.describe(measured)}")
                    self.results[key].append(measured)
        finally:
            rclpy.try_shutdown(context=self.context)
            if lock is not None:
                lock.close()
        summary = report.summarise(self, time.monotonic() - started)
        report.write(self.out, summary)
        return summary
