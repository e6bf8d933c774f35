"""The closed-loop experiment's settings, its gains and the parameter files of the nodes it starts.

* :class:`Settings`: what ``robot-dynamics closed-loop`` was asked (its options, same defaults);
* :func:`gains`: the gains given, else the rule of docs/closing-the-loop.md ("Choosing gains") for
  ``pd_feedforward``: ``kp = J_i ωn²``, ``kd = 2 ζ ωn J_i`` with ``J_i = max(D_ii, min(f max_j D_jj,
  D_ii rate / (4 ζ ωn)))``, the stock file's inertia at the start pose with a floor of a fraction ``f``
  (default 0.1) of its largest entry, rounded to 3 significant digits as a user writes them. The floor
  stands for what a stock URDF leaves out and a user tunes in: a wrist whose link inertia is tiny still
  turns a geared motor (its reflected rotor inertia is of the order of the other joints'), and without
  it the plain rule gives a wrist a few N m/rad, softer than any arm is run (libfranka's joint impedance
  example uses 50-250 N m/rad on the Panda's wrist joints, 600 on the others). The floor never takes a
  joint's damping past ``kd Δt / D_ii = 0.5`` (``Δt`` the control period): a joint whose inertia is a
  hundredth of the largest (the Stanford arm's wrist) would otherwise get a damping its sampled loop
  cannot hold (``kd Δt / D_ii`` = 3: it diverged);
* :func:`node_parameters`: the simulator's and the feed-forward node's ``ros__parameters`` (the chain
  options of the command; every case changes only ``control_law`` and ``feedforward_source`` at run
  time, and case C only ``robot_config`` on the command line);
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
    bandwidth: float = 20.0  # rad/s
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
    friction_law: str = "stribeck"  # identify --friction: tracks best on MuJoCo's frictionloss (closing-the-loop.md)
    identify_options: Sequence[str] = ()
    cases: Sequence[str] = tuple(CASES)
    realtime: bool = False
    thread_priority: int = 50  # real time: the simulator's stepping thread under SCHED_FIFO (0 = normal)
    lead: float = 0.5
    limit_efforts: bool = True
    domain_id: int | None = None
    timeout: float = 180.0


LOCKSTEP_MAX_SPEED = 2.0  # simulated s per wall s at most (a 1 kHz loop runs at ~1x: no change there)


def gains(model: RobotModel, q0: FloatArray, s: Settings) -> tuple[FloatArray, FloatArray]:
    """The given gains, else ``kp = J_i ωn²``, ``kd = 2 ζ ωn J_i`` (module docstring; 3 significant digits)."""
    diagonal = np.diag(np.asarray(inertia_matrix(model, q0)))
    stiffest = diagonal * s.rate / (4.0 * s.damping_ratio * s.bandwidth)  # the floor's cap: kd Δt / D_ii <= 0.5
    d = np.maximum(diagonal, np.minimum(s.inertia_floor * diagonal.max(), stiffest))
    kp = np.asarray(s.kp, dtype=float) if s.kp is not None else d * s.bandwidth**2
    kd = np.asarray(s.kd, dtype=float) if s.kd is not None else 2.0 * s.damping_ratio * s.bandwidth * d
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


def node_parameters(
    s: Settings, q0: FloatArray, kp: FloatArray, kd: FloatArray, lockstep: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The simulator's and the feed-forward node's parameters (without ``robot_config``: given on the
    command line, where case C gives the identified file)."""
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
        "initial_position": q0.tolist(),
    }
    controller = {
        **chain,
        "use_sim_time": lockstep,
        "control_law": "pd_feedforward",
        "kp": kp.tolist(),
        "kd": kd.tolist(),
        "limit_efforts": s.limit_efforts,
        "friction": True,
        "smooth_friction": True,
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


def summary_settings(s: Settings, q0: FloatArray, kp: FloatArray, kd: FloatArray) -> dict[str, Any]:
    """The settings as the report states them (JSON-ready)."""
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
            "bandwidth": s.bandwidth,
            "damping_ratio": s.damping_ratio,
            "inertia_floor": s.inertia_floor,
        },
        "duration": s.duration,
        "reach": s.reach,
        "segment": s.segment,
        "seed": s.seed,
        "excitation_duration": s.excitation_duration,
        "harmonics": s.harmonics,
        "cases": list(s.cases),
        "realtime": s.realtime,
        "thread_priority": s.thread_priority,
        "limit_efforts": s.limit_efforts,
        "lead": s.lead,
    }
