"""``robot-dynamics closed-loop``: the experiment through the real nodes over DDS (the sequence).

The cases are :mod:`robot_dynamics.experiment.cases`; what each shows, docs/closing-the-loop.md.
The module is longer than 400 lines because the sequence below is one class whose steps share its
state (the nodes' processes, the recordings, the motions, the runs); what needs no ROS is in
:mod:`robot_dynamics.experiment`.

1. Offline: the robot model and the plant as the simulator builds it, with its sensor profile (for the
   plant's ``mj_inverse``, its drive's torque constants, its true model and a contact check), the start
   pose, the gains (:func:`~robot_dynamics.experiment.settings.gains`), the tracked motion with the stock
   file's and the plant's efforts, and the two parameter files: ``params/simulator.yaml`` and
   ``params/feedforward.yaml`` (the controller; B, C and C-plain use the same file, only
   ``robot_config`` differs).
2. ``robot-dynamics excitation`` on the robot file with its limits narrowed to the workspace
   (``excitation_robot.yaml``), in a process of its own while the first cases run.
3. Nodes 1: ``simulator_node`` (MuJoCo, the deviation file, lock-step ``/clock``) and ``feedforward_node``
   (``use_sim_time``, stock file, ``feedforward/efforts`` remapped onto the simulator's ``joint_commands``),
   each in its own process, as ``ros2 launch`` runs them. Cases A, B, B-exact, D and the excitation run,
   each: the case's parameters set at run time (with sensor delays, each case also without the delay
   settings: ``<case>-uncomp``); the controller brings the arm to the motion's start and holds it there
   (:data:`MOVE_S`, :data:`SETTLE_S`); the simulator is reset there, exactly and at rest; the motion is
   stamped to start ``lead`` s after the reset state's stamp, so every case starts from the same state at
   the same time; recorded until ``hold`` s after its end (the standstill at its goal) into
   ``bags/<case>/`` (rosbag2: ``/joint_states``, ``/joint_commands``, ``/joint_trajectory``, with sensors
   ``/simulator_node/true_joint_states``, from the reset state on).
4. ``robot-dynamics identify bags/excitation --friction LAW --effort-lag auto --acceleration auto`` (the
   simulator's effort is the torque of the step into a state; its velocities are exact, so each step's
   change of velocity can be the acceleration) → ``identified.yaml``, ``identification.json`` / ``.png``;
   for C-plain the same recording by plain weighted least squares (identify's ``method="plain"``, the
   identification pipeline called here: such a fit often makes no robot file) →
   ``identification_plain.json``, its torques along the motion (:func:`~robot_dynamics.experiment.
   motion.fitted_efforts`) as the trajectory's efforts. When the profile's drive closes a torque loop on
   the recorded sensor (:func:`~robot_dynamics.experiment.motion.torque_loop`, e.g. ``franka``) both fits
   run with ``--offsets torque``: the fitted offsets are torques the loop applies, deployed in the
   identified file and kept in the plain fit's efforts alike (a Franka user knows their arm's torque
   interface); otherwise ``reading`` (a bias of the reading, not deployed).
5. Nodes 2: the same files, ``robot_config`` = the identified file: case C. Nodes 3: the stock file, the
   plain fit's efforts: case C-plain.
6. ``realtime``: nodes 3 without lock-step (wall clock, ``rate`` Hz): B's settings; the loop's rate and
   the joint state → command latency (the state's stamp to the command's arrival here).
7. The report (:mod:`robot_dynamics.experiment.report`): tracking of every bag by
   :func:`robot_dynamics.bag.tracking.tracking`, ratios, loop counters, parameters beside the plant's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor

from robot_dynamics.bag.decode import decode_joint_states
from robot_dynamics.bag.writer import BagWriter
from robot_dynamics.experiment import report
from robot_dynamics.experiment import standstill as still
from robot_dynamics.experiment.cases import CASES, EXCITATION, Case, ratio_targets, uncompensated
from robot_dynamics.experiment.motion import (
    ExperimentError,
    Motion,
    drive_factor,
    drive_offset,
    first_contact,
    fitted_efforts,
    identify_offsets,
    model_efforts,
    planned_motion,
    plant_efforts,
    restricted_model,
    start_pose,
)
from robot_dynamics.experiment.parameters import base_parameter_summary, parameter_rows
from robot_dynamics.experiment.settings import (
    Settings,
    chain_arguments,
    gains,
    loop_delay,
    node_parameters,
    summary_settings,
)
from robot_dynamics.identification.excitation_files import read_trajectory
from robot_dynamics.model import RobotModel
from robot_dynamics.models.chain_yaml import dumps_chain_yaml
from robot_dynamics.models.robots import load_robot
from robot_dynamics.plant import PlantOptions, SensorProfile, load_sensor_profile, make_plant
from robot_dynamics.ros.closed_loop_nodes import (
    ExperimentNode,
    NodeProcess,
    ResetNotRecorded,
    node_environment,
    parameter_file,
)
from robot_dynamics.ros.demo import reserve_domain_id
from robot_dynamics.ros.process import stop_executors
from robot_dynamics.user_input import external_names, renamed_model

TAIL_S = 0.05  # s recorded after a motion's end
MOVE_S = 1.0  # s to bring the arm to a case's start
SETTLE_S = 0.5  # s held there before the reset
HOLD_S = 5.0  # s more the approach lasts (the motion replaces it when it starts)
NICE = 10  # niceness of the excitation and identify commands
RESETS = 3  # tries to run a case from its start


class Experiment:
    """One run of the experiment (see the module docstring); :meth:`run` returns the report's summary."""

    def __init__(self, s: Settings, model: RobotModel, say: Callable[[str], None] = print) -> None:
        self.s, self.model, self.say = s, model, say
        self.out = s.out
        self.names = tuple(external_names(model.joint_names, s.joint_map))
        self.period_ns = max(1, round(1e9 / s.rate))
        self.logs = self.out / "logs"
        self.runs: dict[str, report.Run] = {}
        self.context: Any = None
        self.sent = 0  # trajectories sent to the running feed-forward node
        self.marks: tuple[int, ...] = (0, 0)  # the recordings' lengths when the motion was sent
        self.simulator: dict[str, dict[str, int]] = {}  # the simulator's counters at the end of each run
        self.profile: SensorProfile | None = None  # the sensors' profile (None: the bare plant)
        self.delays = (0.0, 0.0)  # s: the sensors' measurement and command delays
        self.reported_profile: str | None = None
        self.offset_use = "reading"  # identify --offsets (prepare: "torque" behind a torque loop)

    # -- offline preparation --------------------------------------------------------------------
    def prepare(self) -> None:
        """Everything before a node starts (a bad plant, motion or start pose fails here, one line)."""
        s, model = self.s, self.model
        self.out.mkdir(parents=True, exist_ok=True)
        self.q0 = start_pose(model, s.start)
        if s.sensors or s.sensor_overrides:
            self.profile = load_sensor_profile(s.sensors, s.sensor_overrides or None, label="--sensor-overrides")
        options = PlantOptions(
            engine="mujoco",
            mjcf=s.mjcf,
            deviations=s.plant,
            timestep=s.timestep,
            locked_joints=dict(s.locked_joints),
            joint_map=dict(s.joint_map),
            sensor_profile=self.profile or "",
        )
        # with a sensor profile the plant the simulator runs, whose draws (the torque constants) D needs
        self.plant = make_plant(
            options, renamed_model(model, s.joint_map), 1.0 / s.rate, s.robot, s.base_link, s.tip_link
        )
        self.offset_use = identify_offsets(self.plant, model.dof)
        if self.profile is not None:
            periods = (self.profile.measurement_delay, self.profile.command_delay)
            self.delays = (periods[0] / s.rate, periods[1] / s.rate)
        self.loop_delay = loop_delay(s.rate, self.profile)
        self.kp, self.kd = gains(model, self.q0, s, self.loop_delay)
        motion = planned_motion(
            model,
            self.q0,
            duration=s.duration,
            reach=s.reach,
            seed=s.seed,
            segment=s.segment,
            names=self.names,
        )
        touching = first_contact(self.plant, motion)  # type: ignore[arg-type]
        if touching:
            raise ExperimentError(f"the tracked motion: {touching} (choose a smaller --reach or another --start)")
        self.motions = {
            "none": motion,
            "stock": motion.with_efforts(model_efforts(model, motion)),
            "plant": motion.with_efforts(plant_efforts(self.plant, motion)),  # type: ignore[arg-type]
        }
        params = self.out / "params"
        delays = self.delays if s.delay_compensation != "off" else (0.0, 0.0)
        for lockstep, suffix in ((True, ""), (False, "_realtime")):
            simulator, controller = node_parameters(s, self.q0, self.kp, self.kd, lockstep, delays)
            parameter_file(params / f"simulator{suffix}.yaml", "simulator_node", simulator)
            parameter_file(params / f"feedforward{suffix}.yaml", "feedforward_node", controller)

    # -- processes --------------------------------------------------------------------------------
    def start_excitation(self) -> subprocess.Popen[bytes]:
        s = self.s
        robot_file = self.out / "excitation_robot.yaml"
        header = (
            f"{self.model.name} with its joint limits narrowed to +-{s.reach:g} about the start pose "
            f"{np.round(self.q0, 4).tolist()}: the workspace of the excitation (robot-dynamics closed-loop)"
        )
        robot_file.write_text(dumps_chain_yaml(restricted_model(self.model, self.q0, s.reach), header=header))
        args = [
            "excitation",
            str(robot_file),
            "--duration",
            f"{s.excitation_duration:g}",
            "--harmonics",
            str(s.harmonics),
        ]
        args += ["--ramp", "1", "--seed", str(s.seed), "--out", str(self.out / "excitation.yaml"), "--force"]
        return self._command(args + list(s.excitation_options), "excitation")

    def _command(self, args: list[str], name: str) -> subprocess.Popen[bytes]:
        self.logs.mkdir(parents=True, exist_ok=True)
        (self.logs / f"{name}.command").write_text("robot-dynamics " + " ".join(args) + "\n")
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - the child holds it
        process = subprocess.Popen(
            [sys.executable, "-m", "robot_dynamics.cli", *args], stdout=log, stderr=subprocess.STDOUT
        )
        # below the nodes: on a busy machine the lock-step loop (and its recording) comes first
        os.setpriority(os.PRIO_PROCESS, process.pid, NICE)
        return process

    def _finish(self, process: subprocess.Popen[bytes], name: str) -> None:
        if process.wait() != 0:
            lines = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()
            errors = [line for line in lines if ": error:" in line] or lines[-1:] or ["(no output)"]
            raise ExperimentError(f"robot-dynamics {name} failed: {errors[-1]} (log: {self.logs / name}.log)")

    def _nodes(self, tag: str, robot_config: str, lockstep: bool) -> list[NodeProcess]:
        suffix = "" if lockstep else "_realtime"
        params = self.out / "params"
        sim = NodeProcess(
            "simulator_node",
            self.logs / f"simulator_{tag}.log",
            self.env,
            params_file=params / f"simulator{suffix}.yaml",
            parameters={"robot_config": self.s.robot},
        )
        ff = NodeProcess(
            "feedforward_node",
            self.logs / f"feedforward_{tag}.log",
            self.env,
            params_file=params / f"feedforward{suffix}.yaml",
            parameters={"robot_config": robot_config},
            remaps={"feedforward/efforts": "joint_commands"},
        )
        return [sim, ff]

    def _session(self, tag: str, robot_config: str, lockstep: bool, body: Callable[[ExperimentNode], None]) -> None:
        """Start a simulator and a controller, run ``body`` with the experiment's node, stop them."""
        processes = self._nodes(tag, robot_config, lockstep)
        self.sent = 0

        def check() -> None:
            for p in processes:
                p.check()

        truth = report.TRUTH_TOPIC if self.profile is not None else None
        node = ExperimentNode(self.context, sim_time=lockstep, check=check, truth_topic=truth)
        executor = SingleThreadedExecutor(context=self.context)
        executor.add_node(node)
        thread = threading.Thread(target=executor.spin, name=f"closed-loop-{tag}", daemon=True)
        thread.start()
        try:
            node.wait_running(self.s.timeout, lockstep)
            body(node)
            values = node.diagnostics("simulator_node", after=time.monotonic())
            keys = ("steps", "resets", *(("missed_commands", "late_commands") if lockstep else ()))
            self.simulator[tag] = {k: int(values[k]) for k in keys if k in values}
            self.reported_profile = values.get("sensor_profile")  # the profile the simulator says it runs
        finally:
            for p in processes:
                p.stop()
            if all(stop_executors([executor], [thread], 5.0)):
                node.destroy_node()

    # -- one case ---------------------------------------------------------------------------------
    def _case(self, node: ExperimentNode, key: str, case: Case, motion: Motion, lockstep: bool) -> report.Run:
        """Run ``case`` as ``key`` (its bag: ``bags/<key>``); again when the controller did not track the
        motion from its start (it received it late: a busy machine), at most :data:`RESETS` times."""
        self.say(f"  case {key}: {case.title} ...")
        wall = time.monotonic()
        compensated = case.compensate_delays and self.s.delay_compensation != "off"
        delays = self.delays if compensated else (0.0, 0.0)
        node.set_feedforward({**case.parameters, "measurement_delay": delays[0], "command_delay": delays[1]})
        hold = round(self.s.hold * 1e9) if key != "excitation" else 0
        for restarts in range(RESETS):  # noqa: B007 - the last value is the count of runs started again
            started = self._start(node, key, motion)
            if started is None:
                continue
            start, sent = started
            end = start + round(motion.duration * 1e9)
            last = end + hold + round(TAIL_S * 1e9)
            node.wait_recorded(last, self.s.timeout + 20.0 * (motion.duration + self.s.lead + self.s.hold))
            recorded = node.since(self.marks, start - round(self.s.lead * 1e9), last)
            states = decode_joint_states(recorded["/joint_states"], self.names)
            commands = decode_joint_states(recorded["/joint_commands"], self.names)
            late = report.late_activation(motion, commands, start, end, round(delays[0] * 1e9))
            if late is None:
                break
            self.say(f"    the controller tracked the motion only from {late * 1e3:.0f} ms after its start: again")
        else:
            raise ExperimentError(
                f"case {key}: the controller never tracked the motion from its start (log: {self.logs})"
            )
        accepted = int(node.diagnostics("feedforward_node", after=time.monotonic())["trajectories_accepted"])
        if accepted != self.sent:
            raise ExperimentError(f"case {key}: feedforward_node refused a trajectory (log: {self.logs})")
        bag = self.out / "bags" / key
        with BagWriter(bag, overwrite=True) as writer:
            for topic in recorded.values():
                writer.write_raw(topic.topic, topic.msgtype, topic.timestamps, topic.data)
            writer.write_joint_trajectory(
                "/joint_trajectory",
                sent,
                motion.names,
                motion.times,
                motion.positions,
                motion.velocities,
                motion.accelerations,
                efforts=motion.efforts,
                stamp=start,
            )
        truth = report.TRUTH_TOPIC in recorded
        run = report.measure(self.model, case, bag, self.s.joint_map, time.monotonic() - wall, truth)
        run.counters = report.loop_counters(
            self.model, states, commands, start, end, self.period_ns if lockstep else None
        )
        if hold > round(still.SETTLE_S * 1e9):
            true_states = decode_joint_states(recorded[report.TRUTH_TOPIC], self.names) if truth else None
            run.standstill = still.standstill(
                commands, true_states, end + round(still.SETTLE_S * 1e9), end + hold, self.s.rate
            )
        run.counters["restarts"] = restarts  # runs started again (the controller tracked late), in the report
        if not lockstep:
            run.realtime = report.timing(states.stamps, commands.stamps, commands.timestamps, self.s.rate)
            run.realtime["at_plant"] = report.plant_timing(node.diagnostics("simulator_node", after=time.monotonic()))
        seen = "" if run.measured is None else f" (measured: {report.rms_of(run.measured):.4g})"
        self.say(f"    RMS {run.rms:.4g} rad{seen}, max {run.max:.4g} rad; {report.describe_counters(run.counters)}")
        return run

    def _start(self, node: ExperimentNode, key: str, motion: Motion) -> tuple[int, int] | None:
        """Bring the arm to the motion's start, reset there, send the motion: ``(start, sent)`` ns, or None
        when the recording saw the reset too late for the lead.

        The controller takes the arm to the start under the case's own law (and efforts) and holds it
        there; the simulator is reset there, exactly and at rest; the motion starts ``lead`` s after the
        reset state's stamp: every case starts from the same state at the same time."""
        s = self.s
        now = node.now_ns()
        # stamp 0: from the controller's receipt. ``now`` is the newest state recorded here, which on a busy
        # machine can trail the loop by seconds of simulated time (lock-step runs faster than real time):
        # an approach stamped with it could end before it arrives, and be refused.
        node.publish(motion.approach(MOVE_S, SETTLE_S + s.lead + HOLD_S), 0)
        self.sent += 1
        node.wait_recorded(now + round((MOVE_S + SETTLE_S) * 1e9), s.timeout)
        try:
            reset_at = node.reset(motion.positions[0])
        except ResetNotRecorded as exc:
            self.say(f"    {exc}: again")
            return None
        start = reset_at + round(s.lead * 1e9 / self.period_ns) * self.period_ns
        if node.now_ns() >= start - round(s.lead * 1e9) // 2:
            return None
        self.marks = node.marks()
        node.publish(motion, start)
        self.sent += 1
        return start, node.now_ns()

    # -- the whole experiment ---------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        s, started = self.s, time.monotonic()
        if not hasattr(self, "plant"):
            self.prepare()
        self.say(
            f"closed-loop experiment: {self.model.name}, plant {s.plant or '(no deviations)'}, {s.rate:g} Hz lock-step"
        )
        self.say(f"  gains kp {self.kp.tolist()}, kd {self.kd.tolist()}; outputs in {self.out}")
        for note in getattr(self.plant, "notes", ()):
            self.say(f"  plant: {note}")
        lock = None
        domain = s.domain_id
        if domain is None:
            domain, lock = reserve_domain_id()
        self.env = node_environment(domain)
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        identified = self.out / "identified.yaml"
        fits = [k for k in ("C", "C-plain") if k in s.cases]
        try:
            excitation = self.start_excitation() if fits else None

            def first(node: ExperimentNode) -> None:
                for key in ("A", "B", "B-exact", "D"):
                    if key in s.cases:
                        self._cases(node, key)
                if excitation is not None:
                    self.say("  waiting for robot-dynamics excitation ...")
                    self._finish(excitation, "excitation")
                    self.runs["excitation"] = self._case(
                        node, "excitation", EXCITATION, self._excitation_motion(), True
                    )

            self._session("stock", s.robot, True, first)
            if "C" in s.cases:
                self.say("  robot-dynamics identify ...")
                args = ["--out", str(identified), "--json", str(self.out / "identification.json")]
                args += ["--plot", str(self.out / "identification.png"), "--friction", s.friction_law]
                args += ["--offsets", self.offset_use]
                self._identify([*args, *s.identify_options], "identify")
                self._session("identified", str(identified), True, lambda node: self._cases(node, "C"))
            if "C-plain" in s.cases:
                self.say("  identification, plain least squares ...")
                self.motions["plain"] = self._plain_fit()
                self._session("plain", s.robot, True, lambda node: self._cases(node, "C-plain"))
            if s.realtime:
                motion = self.motions["none"]
                self._session(
                    "realtime", s.robot, False, lambda node: self._store("B-realtime", node, CASES["B"], False, motion)
                )
        finally:
            rclpy.try_shutdown(context=self.context)
            if lock is not None:
                lock.close()
        fitted = load_robot(str(identified)) if "C" in s.cases else None
        truth = self.plant.true_model  # type: ignore[attr-defined]
        settings = summary_settings(s, self.q0, self.kp, self.kd, self.loop_delay)
        if self.profile is not None:
            settings["sensor_profile"] = {
                "name": self.profile.name,
                "description": self.profile.description,
                "rate": self.profile.rate,
                "measurement_delay_s": self.delays[0],
                "command_delay_s": self.delays[1],
                "drive_factor": drive_factor(self.plant, self.model.dof).tolist(),
                "drive_offset": drive_offset(self.plant, self.model.dof).tolist(),
                "torque_loop_hz": self.plant.sensors["actuator.torque_loop.bandwidth"].tolist(),  # type: ignore[attr-defined]
                "identify_offsets": self.offset_use,
                "simulator": self.reported_profile,
            }
        summary = report.summarise(
            settings,
            self.runs,
            parameter_rows(self.model, truth, fitted),
            self.simulator,
            time.monotonic() - started,
            None if fitted is None else base_parameter_summary(self.model, truth, fitted),
            ratio_targets(self.profile is not None and (self.profile.name != "ideal" or bool(s.sensor_overrides))),
        )
        report.write(self.out, summary, self.runs)
        return summary

    def _store(self, key: str, node: ExperimentNode, case: Case, lockstep: bool, motion: Motion | None = None) -> None:
        self.runs[key] = self._case(node, key, case, motion or self.motions[case.efforts], lockstep)

    def _variants(self, key: str) -> list[Case]:
        """Case ``key`` as run: with the delay settings, without (``-uncomp``), or both (``delay_compensation``;
        one run when the sensors have no delay)."""
        case = CASES[key]
        if not any(self.delays) or self.s.delay_compensation == "on":
            return [case]
        if self.s.delay_compensation == "off":
            return [replace(uncompensated(case), key=key)]
        return [case, uncompensated(case)]

    def _cases(self, node: ExperimentNode, key: str) -> None:
        for case in self._variants(key):
            self._store(case.key, node, case, True)

    def _plain_fit(self) -> Motion:
        """The plain least-squares fit of the excitation recording (identify's ``method="plain"``), its report in
        ``identification_plain.json``, and the motion with its torques as efforts."""
        from robot_dynamics.identification.pipeline import identify
        from robot_dynamics.identification.report import write_json

        started = time.monotonic()
        result = identify(
            self.out / "bags" / "excitation",
            self.model,
            joint_map=self.s.joint_map,
            effort_lag="auto",
            acceleration="auto",
            progress=False,
            method="plain",
            offsets=self.offset_use,
        )
        write_json(self.out / "identification_plain.json", result)
        self.say(
            f"    {result.fit.method}, {time.monotonic() - started:.0f} s; {result.model_problem or 'a robot file'}"
        )
        return self.motions["none"].with_efforts(
            fitted_efforts(self.model, self.motions["none"], result.fit.theta, result.pset, self.offset_use)
        )

    def _identify(self, args: list[str], name: str) -> None:
        """``robot-dynamics identify bags/excitation --robot ROBOT ARGS`` (the chain options, the pairing)."""
        s = self.s
        command = ["identify", str(self.out / "bags" / "excitation"), "--robot", s.robot, *chain_arguments(s)]
        # the simulator's effort is the torque of the step into the state: auto keeps the pairing and the
        # acceleration (each step's change of velocity, or the filter's) that explain the data best
        command += ["--effort-lag", "auto", "--acceleration", "auto"]
        self._finish(self._command([*command, *args], name), name)

    def _excitation_motion(self) -> Motion:
        """The designed excitation, checked against the plant's collision geometry (a real arm's
        excitation must not touch itself either: contact forces would enter the fit)."""
        msg = read_trajectory(self.out / "excitation.yaml")
        sampler = msg.sampler(self.model.joint_names)
        assert sampler.velocities is not None and sampler.accelerations is not None
        motion = Motion(self.names, sampler.times, sampler.positions, sampler.velocities, sampler.accelerations)
        touching = first_contact(self.plant, motion)  # type: ignore[arg-type]
        if touching:
            raise ExperimentError(f"the excitation: {touching} (choose a smaller --reach or another --start)")
        return motion
