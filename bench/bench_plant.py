"""The simulator's plants: time per control period of the MuJoCo plant vs the model engine, and the
lock-step loop over DDS.

Usage: ``.venv/bin/python bench/bench_plant.py [--steps 3000] [--repeat 5] [--loop-seconds 5] [--timesteps]``

1. Per step (one 1 kHz control period, the command held): ``MujocoPlant.step`` (MuJoCo, physics
   timestep 1 ms, ``implicitfast``, collision meshes on; nominal plant and the deviations of
   ``config/plant_deviations.yaml`` for the UR5 / the same lists and random scaling for the Panda)
   vs ``ModelPlant.step`` (this package's forward dynamics with stick-slip friction, native backend,
   ``fixed_step``), both under gravity compensation plus a sine so the arm moves; best of ``--repeat``
   rounds timed alternately (a busy spell on the shared machine hits both); and the deviated plants
   with the link-side torque reading (``torque_sensing="link"``), what that reading costs; and inside
   a sensor model (:class:`robot_dynamics.plant.SensedPlant`) with the ``ur_e_series`` and ``franka``
   profiles: quantization, noise, the velocity estimate, delays, torque-constant errors, ripple (UR),
   link-side scale, offset and drift (Franka), what the wrapper adds to a step.
2. Lock-step loop: the simulator node (``engine: mujoco``, UR5, ``lockstep: true``, 1 kHz) answered by
   a trivial rclpy node in another executor thread of the same process (it copies each state's stamp
   onto a constant torque); simulated steps per wall second, missed commands.
3. ``--timesteps``: how the physics timestep was chosen. 2 s of vigorous motion (gravity compensation,
   a PD to the start pose, a 1 Hz sine of 20 N m (UR5) / 10 N m (Panda)) on a deviated plant (damping 1,
   friction 1, armature 0.05, masses and inertias ±20 %) at timesteps of 1, 0.5 and 0.25 ms against the
   same run at 1/32 ms: the largest joint position difference and the time per 1 ms control period.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test"))

import robot_dynamics as rd
from robot_dynamics.model import RobotModel
from robot_dynamics.plant import (
    ModelPlant,
    MujocoPlant,
    SensedPlant,
    load_deviations,
    load_sensor_profile,
    parse_deviations,
    plant_source,
)

REPO = Path(__file__).resolve().parents[1]


def load_quietly(robot: str, tip: str | None, locks: dict[str, float]) -> RobotModel:
    """The stock URDF's model without its loader warnings (massless links: printed by every command)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_robot(robot, tip_link=tip, locked_joints=locks)


def robots() -> dict[str, tuple[str, str | None, dict[str, float]]]:
    from engine_reference import EXAMPLE_ROBOTS

    return {
        "UR5": (str(EXAMPLE_ROBOTS / "ur_description/urdf/ur5_robot.urdf"), None, {}),
        "Panda": (
            str(EXAMPLE_ROBOTS / "panda_description/urdf/panda.urdf"),
            "panda_hand_tcp",
            {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0},
        ),
    }


def per_step(plant: Any, model: rd.RobotModel, q0: np.ndarray, steps: int) -> float:
    """Seconds per step of a run of ``steps`` control periods from ``q0``."""
    plant.reset(q0, np.zeros(model.dof))
    hold = rd.gravity_torques(model, q0)
    wobble = 0.2 * np.abs(hold).max() * np.sin(np.arange(model.dof))
    t0 = time.perf_counter()
    for k in range(steps):
        plant.step(hold + wobble * np.sin(2.0 * np.pi * k * 1e-3))
    return (time.perf_counter() - t0) / steps


def step_table(steps: int, repeat: int) -> None:
    example = load_deviations(REPO / "config" / "plant_deviations.yaml")
    print("| robot | plant | MuJoCo plant per step | model engine per step | MuJoCo / model |")
    print("|---|---|---:|---:|---:|")
    for name, (robot, tip, locks) in robots().items():
        model = load_quietly(robot, tip, locks)
        rd.prepare(model, "native")
        lo = np.array([j.limits.lower for j in model.joints])
        q0 = 0.5 * (lo + np.array([j.limits.upper for j in model.joints]))
        q0[1] = -1.0 if name == "UR5" else q0[1]
        deviated = (
            example
            if name == "UR5"
            else parse_deviations(
                {"damping": 1.0, "friction": 1.0, "armature": 0.05, "random": {"seed": 7, "mass": 0.2, "inertia": 0.2}},
                "panda",
            )
        )
        source = plant_source(robot, None, tip, locks)
        for label, deviations, sensing, profile in (
            ("nominal", None, "motor", ""),
            ("deviated", deviated, "motor", ""),
            ("deviated, link-side torque reading", deviated, "link", ""),
            ("deviated, sensor profile ur_e_series", deviated, "motor", "ur_e_series"),
            ("deviated, sensor profile franka (link side)", deviated, "motor", "franka"),
        ):
            mujoco_plant: Any = MujocoPlant(
                source, model, 1e-3, *(() if deviations is None else (deviations,)), torque_sensing=sensing
            )
            model_plant: Any = ModelPlant(model, 1e-3, torque_sensing=sensing)
            if profile:
                sensors = load_sensor_profile(profile)
                mujoco_plant, model_plant = SensedPlant(mujoco_plant, sensors), SensedPlant(model_plant, sensors)
            best_m = best_e = float("inf")
            for _ in range(repeat):
                best_m = min(best_m, per_step(mujoco_plant, model, q0, steps))
                best_e = min(best_e, per_step(model_plant, model, q0, steps))
            print(f"| {name} | {label} | {best_m * 1e6:.1f} µs | {best_e * 1e6:.1f} µs | {best_m / best_e:.2f} |")


def study_run(
    source: Any, model: rd.RobotModel, deviations: Any, timestep: float, amplitude: float
) -> tuple[Any, float]:
    """The joint positions of a 2 s run (see the module docstring) and the seconds per control period."""
    n = model.dof
    plant = MujocoPlant(source, model, 1e-3, deviations, max_timestep=timestep)
    q0 = np.full(n, 0.3)
    plant.reset(q0, np.zeros(n))
    path, t0 = [], time.perf_counter()
    for k in range(2000):
        q, qd = plant.q, plant.qd
        tau = rd.gravity_torques(model, q) + 50.0 * (q0 - q) - 5.0 * qd
        plant.step(tau + amplitude * np.sin(2.0 * np.pi * k * 1e-3 + np.arange(n)))
        path.append(plant.q)
    return np.array(path), (time.perf_counter() - t0) / 2000


def timestep_table() -> None:
    deviations = parse_deviations(
        {"damping": 1.0, "friction": 1.0, "armature": 0.05, "random": {"seed": 7, "mass": 0.2, "inertia": 0.2}}, "study"
    )
    print("\n| robot | physics timestep | max joint position difference after 2 s | time per 1 ms period |")
    print("|---|---:|---:|---:|")
    for name, (robot, tip, locks) in robots().items():
        model = load_quietly(robot, tip, locks)
        source, amplitude = plant_source(robot, None, tip, locks), 20.0 if name == "UR5" else 10.0
        reference, _ = study_run(source, model, deviations, 1e-3 / 32, amplitude)
        for timestep in (1e-3, 5e-4, 2.5e-4):
            path, seconds = study_run(source, model, deviations, timestep, amplitude)
            error = float(np.abs(path - reference).max())
            print(f"| {name} | {timestep * 1e3:g} ms | {error * 1e3:.2f} mrad | {seconds * 1e6:.0f} µs |")


def lockstep_loop(seconds: float) -> None:
    import rclpy
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from ros_harness import Spinner, wait_until
    from sensor_msgs.msg import JointState

    from robot_dynamics.ros.messages import DATA_QOS
    from robot_dynamics.ros.simulator_node import SimulatorNode

    robot = robots()["UR5"][0]
    start = [0.0, -1.2, 1.4, -1.6, -1.57, 0.3]
    model = rd.load_robot(robot)
    torque = rd.gravity_torques(model, np.array(start)).tolist()
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=[])
    spinner = Spinner(ctx)
    try:
        answerer = Node("bench_answerer", namespace="/bench_plant", context=ctx)
        pub = answerer.create_publisher(JointState, "joint_commands", DATA_QOS)

        def answer(msg: JointState) -> None:
            out = JointState(name=list(msg.name), effort=torque)
            out.header.stamp = msg.header.stamp
            pub.publish(out)

        answerer.create_subscription(JointState, "joint_states", answer, DATA_QOS)
        spinner.add(answerer)
        params = {
            "robot_config": robot,
            "engine": "mujoco",
            "lockstep": True,
            "rate": 1000.0,
            "initial_position": start,
        }
        sim = SimulatorNode(
            namespace="/bench_plant",
            context=ctx,
            parameter_overrides=[Parameter(k, value=v) for k, v in params.items()],
        )
        spinner.add(sim)
        wait_until(lambda: sim.steps >= 10, "the loop to start", timeout=60)
        steps, t0 = sim.steps, time.monotonic()
        time.sleep(seconds)
        rate = (sim.steps - steps) / (time.monotonic() - t0)
        print("\n| loop | simulated steps per wall second | real-time factor at 1 kHz | missed commands |")
        print("|---|---:|---:|---:|")
        print(
            f"| UR5, MuJoCo, lock-step, trivial answering node | {rate:.0f} | {rate / 1000:.2f} | {sim.clock.missed} |"
        )
    finally:
        spinner.close()
        rclpy.try_shutdown(context=ctx)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--loop-seconds", type=float, default=5.0)
    parser.add_argument("--timesteps", action="store_true", help="also the physics timestep study")
    args = parser.parse_args()
    step_table(args.steps, args.repeat)
    lockstep_loop(args.loop_seconds)
    if args.timesteps:
        timestep_table()


if __name__ == "__main__":
    main()
