"""One call from a node's (or a command's) options to a plant of either engine.

The robot is named as every node names it (``robot``: URDF text, a URDF file, a DH YAML file or a
bundled robot name, with ``base_link``, ``tip_link``, ``locked_joints``) and ``model`` is the robot
model the node loaded from it (its joints possibly renamed by a ``joint_map`` ``{topic: file name}``).
The ``model`` engine simulates ``model`` itself; the ``mujoco`` engine compiles the robot file (or the
``mjcf`` file) with MuJoCo and the deviation file's changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from robot_dynamics.errors import ModelError
from robot_dynamics.model import RobotModel
from robot_dynamics.plant.base import Plant
from robot_dynamics.plant.deviations import NO_DEVIATIONS, load_deviations
from robot_dynamics.plant.model_engine import ModelPlant

ENGINES = ("model", "mujoco")


@dataclass(frozen=True)
class PlantOptions:
    """The plant's own settings (the simulator node's parameters of the same names)."""

    engine: str = "model"
    integrator: str = "fixed_step"  # model engine: fixed_step | adaptive
    friction: bool = True  # model engine: simulate the model's friction
    mjcf: str = ""  # mujoco engine: an MJCF file instead of the robot file
    deviations: str = ""  # mujoco engine: a plant deviation file
    timestep: float = 0.001  # mujoco engine: largest physics timestep, s
    mujoco_integrator: str = "implicitfast"
    torque_sensing: str = "motor"  # the joints' torque reading: motor | link (robot_dynamics.plant.base)
    locked_joints: Mapping[str, float] = field(default_factory=dict)
    joint_map: Mapping[str, str] = field(default_factory=dict)


def make_plant(
    options: PlantOptions,
    model: RobotModel,
    period: float,
    robot: str,
    base_link: str | None = None,
    tip_link: str | None = None,
) -> Plant:
    """The plant of ``options.engine`` (ModelError / ValueError with the reason for bad options)."""
    if options.engine not in ENGINES:
        raise ValueError(f"engine must be one of {list(ENGINES)}, got {options.engine!r}")
    if options.engine == "model":
        for name, value in (("mjcf", options.mjcf), ("plant_deviations", options.deviations)):
            if value:
                raise ValueError(f"{name} needs engine 'mujoco' (the model engine simulates the robot file itself)")
        plant: Plant = ModelPlant(model, period, options.integrator, options.friction, options.torque_sensing)
        return plant
    from robot_dynamics.plant.mujoco_model import plant_source  # MuJoCo loaded only for this engine
    from robot_dynamics.plant.mujoco_plant import MujocoPlant

    deviations = load_deviations(options.deviations) if options.deviations else NO_DEVIATIONS
    file_names = [options.joint_map.get(name, name) for name in model.joint_names]
    locks = dict(options.locked_joints)
    source = plant_source(robot, base_link, tip_link, locks, mjcf=options.mjcf or None, joint_names=file_names)
    if list(source.joints) != file_names:
        raise ModelError(
            source.name, "joints", f"the plant's chain {list(source.joints)} is not the robot model's {file_names}"
        )
    return MujocoPlant(
        source,
        model,
        period,
        deviations,
        max_timestep=options.timestep,
        integrator=options.mujoco_integrator,
        torque_sensing=options.torque_sensing,
    )
