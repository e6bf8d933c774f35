"""The closed-loop experiment's settings, its gains and the parameter files of the nodes it starts.

* :class:`Settings`: what ``robot-dynamics closed-loop`` was asked (its options, same defaults);
* :func:`gains`: the gains given, else the rule of docs/closing-the-loop.md ("Choosing gains") for
  ``pd_feedforward``: ``kp = J_i ωn²``, ``kd = 2 ζ ωn J_i`` with ``J_i = max(D_ii, min(f max_j D_jj,
  D_ii / (4 ζ ωn L)))``, the stock file's inertia at the start pose with a floor of a fraction ``f``
  (default 0.1) of its largest entry, rounded to 3 significant digits as a user writes them. The floor
  stands for what a stock URDF leaves out and a user tunes in: a wrist whose link inertia is tiny still
  turns a geared motor (its reflected rotor inertia is of the order of the other joints'), and without
  it the plain rule gives a wrist a few N m/rad, softer than any arm is run (libfranka's joint impedance
  example uses 50-250 N m/rad on the Panda's wrist joints, 600 on the others). The floor never takes a
  joint's damping past ``kd L / D_ii = 0.5``: a joint whose inertia is a hundredth of the largest (the
  Stanford arm's wrist) would otherwise get a damping its sampled loop cannot hold (``kd Δt / D_ii`` = 3:
  it diverged). ``L`` is the loop's delay (:func:`loop_delay`): the control period ``Δt``, and with a
  sensor profile its measurement and command delays and its velocity estimate's lag. The loop's phase
  lag at the crossover of a damping-dominated joint, ``ωc ≈ kd / D_ii``, is ``ωc L`` rad: the rule
  keeps it at 0.5 rad (29°) or less. The same bound sets ``ωn`` unless ``--bandwidth`` is given:
  20 rad/s, at most ``0.25 / (ζ L)`` (``kd L / D_ii = 0.5`` for ``J_i = D_ii``) — 4 rad/s for a 125 Hz
  arm with two periods of delay each way and a 10 Hz velocity filter, whose loop diverged at 20;
* :func:`node_parameters`: the simulator's and the feed-forward node's ``ros__parameters`` (the chain
  options of the command; with a sensor profile the simulator's ``sensor_profile`` and
  ``sensor_overrides``, and the feed-forward node's ``measurement_delay`` and ``command_delay``: the
  profile's delays, as a controls engineer configures the latencies of the driver they use; every case
  changes only ``control_law``, ``feedforward_source`` and those delays at run time, and cases C and
  C-plain only ``robot_config`` on the command line);
* :func:`chain_arguments`: the chain options as command-line arguments (for ``identify``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robot_dynamics.dynamics import inertia_matrix
from robot_dynamics.experiment.cases import CASES
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.plant.sensor_profile import SensorProfile


@dataclass(frozen=True)
class Settings:
    """What ``robot-dynamics closed-loop`` was asked (defaults as the command's)."""

    robot: str
    out: Path
    plant: str = ""  # plant deviation file
    mjcf: str = ""
    base_link: str | None = None
    tip_link: str | None = None
    locked_joints: Mapping[str, float] = field(default_factory=dict)
    joint_map: Mapping[str, str] = field(default_factory=dict)
    kp: Sequence[float] | None = None
    kd: Sequence[float] | None = None
    bandwidth: float | None = None  # rad/s; None: DEFAULT_BANDWIDTH, at most what the loop's delay allows
    damping_ratio: float = 1.0
    inertia_floor: float = 0.1  # fraction of the largest D_ii
    rate: float = 1000.0
    timestep: float = 0.001
    duration: float = 10.0
    segment: float = 1.5
    reach: float = 0.6
    start: Sequence[float] | None = None
    seed: int = 0
    excitation_duration: float = 10.0
    # excitation harmonics: an armature's torque grows with the acceleration, k^2 for harmonic k. On the
    # UR5 and Panda plants (closing-the-loop.md) 3 harmonics left the wrist-1/elbow armature 12 % / 30 % off,
    # 5 bring every armature, viscous and Coulomb value the joint torques determine alone within 2.2 %.
    harmonics: int = 5
    excitation_options: Sequence[str] = ()
    # identify --friction: "auto", identify's own choice by cross-validation (closing-the-loop.md: forcing
    # "stribeck" made the row choice keep stuck rows, whose constant offset then held gravity torque)
    friction_law: str = "auto"
    identify_options: Sequence[str] = ()
    cases: Sequence[str] = tuple(CASES)
    sensors: str = ""  # a sensor profile (bundled name or file) for the simulator; "" = none (the bare plant)
    sensor_overrides: str = ""  # profile keys on top, YAML text
    delay_compensation: str = "both"  # on | off | both: the node told the profile's delays, not, or both runs
    hold: float = 3.0  # s of standstill recorded after each motion (the torque's noise at rest)
    realtime: bool = False
    thread_priority: int = 50  # real time: the simulator's stepping thread under SCHED_FIFO (0 = normal)
    lead: float = 0.5
    limit_efforts: bool = True
    domain_id: int | None = None
    timeout: float = 180.0


LOCKSTEP_MAX_SPEED = 2.0  # simulated s per wall s at most (a 1 kHz loop runs at ~1x: no change there)
LOCKSTEP_TIMEOUT = 10.0  # wall s the simulator waits for an answer (its default, 1 s, a loaded machine exceeds)
DEFAULT_BANDWIDTH = 20.0  # rad/s: ωn unless --bandwidth is given (at most what the loop's delay allows)
PHASE_BUDGET = 0.5  # rad: kd L / D_ii at most, the loop's delay phase at a damping-dominated crossover


def loop_delay(rate: float, profile: SensorProfile | None = None) -> float:
    """``L`` (s), the delay around the loop the gains must tolerate: one control period (the command holds
    over the period after the state it answers), and with a sensor profile its measurement and command
    delays (whole periods), and a differenced velocity's lag: half a period, plus ``RC = 1 / (2 π f_c)``
    per low-pass stage (the low-frequency group delay of ``y += a (x - y)``)."""
    period = 1.0 / rate
    if profile is None:
        return period
    delay = (1 + profile.measurement_delay + profile.command_delay) * period
    if profile.value("velocity.estimator") == "difference":
        cutoff = float(profile.value("velocity.cutoff"))
        stages = int(profile.value("velocity.order")) if cutoff > 0.0 else 0
        delay += 0.5 * period + stages / (2.0 * np.pi * cutoff) if stages else 0.5 * period
    return delay


def delay_bandwidth(delay: float, damping_ratio: float = 1.0, ceiling: float = DEFAULT_BANDWIDTH) -> float:
    """``ωn`` (rad/s) a loop of delay ``L = delay`` (:func:`loop_delay`) holds: ``ceiling`` at most
    ``0.25 / (ζ L)``, the ``ωn`` whose damping-dominated crossover ``2 ζ ωn`` lags :data:`PHASE_BUDGET` rad."""
    return min(ceiling, PHASE_BUDGET / (2.0 * damping_ratio * delay))


def bandwidth(s: Settings, delay: float) -> float:
    """``ωn`` (rad/s): ``--bandwidth`` as given, else :func:`delay_bandwidth`."""
    if s.bandwidth is not None:
        return s.bandwidth
    return delay_bandwidth(delay, s.damping_ratio)


def gains(model: RobotModel, q0: FloatArray, s: Settings, delay: float | None = None) -> tuple[FloatArray, FloatArray]:
    """The given gains, else ``kp = J_i ωn²``, ``kd = 2 ζ ωn J_i`` (module docstring; 3 significant digits);
    ``delay``: the loop's delay ``L`` (:func:`loop_delay`; default one control period)."""
    delay = 1.0 / s.rate if delay is None else delay
    wn = bandwidth(s, delay)
    diagonal = np.diag(np.asarray(inertia_matrix(model, q0)))
    # the floor's cap: kd L / D_ii <= PHASE_BUDGET
    stiffest = diagonal * PHASE_BUDGET / (2.0 * s.damping_ratio * wn * delay)
    d = np.maximum(diagonal, np.minimum(s.inertia_floor * diagonal.max(), stiffest))
    kp = np.asarray(s.kp, dtype=float) if s.kp is not None else d * wn**2
    kd = np.asarray(s.kd, dtype=float) if s.kd is not None else 2.0 * s.damping_ratio * wn * d
    rounded = [np.array([float(f"{v:.3g}") for v in np.broadcast_to(k, (model.dof,))]) for k in (kp, kd)]
    return rounded[0], rounded[1]


def _chain(s: Settings) -> dict[str, Any]:
    chain: dict[str, Any] = {}
    if s.base_link:
        chain["base_link"] = s.base_link
    if s.tip_link:
        chain["tip_link"] = s.tip_link
    if s.locked_joints:
        chain["locked_joints"] = [f"{name}={value!r}" for name, value in s.locked_joints.items()]
    if s.joint_map:
        chain["joint_map"] = [f"{topic}={name}" for topic, name in s.joint_map.items()]
    return chain


DELAY_COMPENSATION = ("on", "off", "both")


def sensor_profile_parameter(spec: str) -> str:
    """A profile as the simulator node is given it: a bundled name as it is, a file as an absolute path
    (the node runs in another directory); the loader's rule tells them apart."""
    looks_like_file = spec.endswith((".yaml", ".yml")) or "/" in spec or "\\" in spec
    return str(Path(spec).expanduser().resolve()) if looks_like_file else spec


def node_parameters(
    s: Settings,
    q0: FloatArray,
    kp: FloatArray,
    kd: FloatArray,
    lockstep: bool,
    delays: tuple[float, float] = (0.0, 0.0),
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The simulator's and the feed-forward node's parameters (without ``robot_config``: given on the
    command line, where case C gives the identified file); ``delays``: the sensors' measurement and
    command delays, s, the feed-forward node's ``measurement_delay`` and ``command_delay``."""
    chain = {**_chain(s), "diagnostics_period": 0.2}
    simulator = {
        **chain,
        "engine": "mujoco",
        "plant_deviations": str(Path(s.plant).resolve()) if s.plant else "",
        "mjcf": str(Path(s.mjcf).resolve()) if s.mjcf else "",
        "timestep": s.timestep,
        "rate": s.rate,
        "lockstep": lockstep,
        "thread_priority": 0 if lockstep else s.thread_priority,
        # the recorder here must keep up: a low-rate loop would otherwise run ~10x faster than real time
        "lockstep_max_speed": LOCKSTEP_MAX_SPEED if lockstep else 0.0,
        # a step is missed only when the controller is stuck, not when a loaded machine pauses a process
        **({"lockstep_timeout": LOCKSTEP_TIMEOUT} if lockstep else {}),
        "initial_position": q0.tolist(),
    }
    if s.sensors or s.sensor_overrides:
        simulator["sensor_profile"] = sensor_profile_parameter(s.sensors) if s.sensors else ""
        simulator["sensor_overrides"] = s.sensor_overrides
    controller = {
        **chain,
        "use_sim_time": lockstep,
        "control_law": "pd_feedforward",
        "kp": kp.tolist(),
        "kd": kd.tolist(),
        "limit_efforts": s.limit_efforts,
        "friction": True,
        "smooth_friction": True,
        "measurement_delay": delays[0],
        "command_delay": delays[1],
    }
    return simulator, controller


def chain_arguments(s: Settings) -> list[str]:
    """``--base-link``, ``--tip-link``, ``--lock-joint``, ``--joint-map`` as the settings give them."""
    args = []
    if s.base_link:
        args += ["--base-link", s.base_link]
    if s.tip_link:
        args += ["--tip-link", s.tip_link]
    args += [arg for name, value in s.locked_joints.items() for arg in ("--lock-joint", f"{name}={value!r}")]
    args += [arg for topic, name in s.joint_map.items() for arg in ("--joint-map", f"{topic}={name}")]
    return args


def summary_settings(
    s: Settings, q0: FloatArray, kp: FloatArray, kd: FloatArray, delay: float | None = None
) -> dict[str, Any]:
    """The settings as the report states them (JSON-ready; ``delay``: the loop's, :func:`loop_delay`)."""
    delay = 1.0 / s.rate if delay is None else delay
    return {
        "robot": s.robot,
        "plant": s.plant,
        "mjcf": s.mjcf,
        "base_link": s.base_link,
        "tip_link": s.tip_link,
        "locked_joints": dict(s.locked_joints),
        "joint_map": dict(s.joint_map),
        "rate": s.rate,
        "timestep": s.timestep,
        "start": q0.tolist(),
        "kp": kp.tolist(),
        "kd": kd.tolist(),
        "gain_rule": None
        if s.kp is not None and s.kd is not None
        else {
            "bandwidth": bandwidth(s, delay),
            "damping_ratio": s.damping_ratio,
            "inertia_floor": s.inertia_floor,
            "loop_delay_s": delay,
        },
        "duration": s.duration,
        "reach": s.reach,
        "segment": s.segment,
        "seed": s.seed,
        "excitation_duration": s.excitation_duration,
        "harmonics": s.harmonics,
        "cases": list(s.cases),
        "sensors": s.sensors or None,
        "sensor_overrides": s.sensor_overrides or None,
        "delay_compensation": s.delay_compensation,
        "hold": s.hold,
        "realtime": s.realtime,
        "thread_priority": s.thread_priority,
        "limit_efforts": s.limit_efforts,
        "lead": s.lead,
    }
