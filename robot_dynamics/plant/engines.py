"""One call from a node's (or a command's) options to a plant of either engine.

The robot is named as every node names it (``robot``: URDF text, a URDF file, a DH YAML file or a
bundled robot name, with ``base_link``, ``tip_link``, ``locked_joints``) and ``model`` is the robot
model the node loaded from it (its joints possibly renamed by a ``joint_map`` ``{topic: file name}``).
The ``model`` engine simulates ``model`` itself; the ``mujoco`` engine compiles the robot file (or the
``mjcf`` file) with MuJoCo, the deviation file's changes and the obstacle file's obstacles. With a
sensor profile (or overrides) the plant is wrapped in a real arm's sensors and actuators
(:class:`~robot_dynamics.plant.sensors.SensedPlant`); without, the engine's plant is returned as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from robot_dynamics.errors import ModelError
from robot_dynamics.model import RobotModel
from robot_dynamics.plant.base import Plant
from robot_dynamics.plant.deviations import NO_DEVIATIONS, load_deviations
from robot_dynamics.plant.model_engine import ModelPlant
from robot_dynamics.plant.obstacles import NO_OBSTACLES, load_obstacles
from robot_dynamics.plant.sensor_profile import SensorProfile, load_sensor_profile
from robot_dynamics.plant.sensors import SensedPlant

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
    model_timestep: float = 0.0  # model engine, fixed_step: largest physics timestep, s (0: one control period)
    sensor_profile: str | SensorProfile = ""  # a sensor profile: bundled name, file or loaded ("": ideal)
    sensor_overrides: Mapping[str, Any] | str = ""  # profile keys on top (a mapping or YAML text)
    obstacles: str = ""  # mujoco engine: an obstacle file (robot_dynamics.plant.obstacles)

    def sensors(self) -> SensorProfile | None:
        """The sensor profile these options name (None: the ideal arm, no wrapper)."""
        if not self.sensor_profile and not self.sensor_overrides:
            return None
        return load_sensor_profile(self.sensor_profile, self.sensor_overrides or None, label="sensor_overrides")


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
    profile = options.sensors()
    if profile is not None and options.torque_sensing == "link" and profile.torque_sensing == "motor":
        raise ValueError(
            f"torque_sensing 'link' contradicts sensor profile {profile.name!r}, which reads motor currents "
            "(override its torque.sensing: link instead)"
        )
    plant = _engine_plant(options, model, period, robot, base_link, tip_link)
    if profile is None:
        return plant
    aliases = [list(dict.fromkeys([name, options.joint_map.get(name, name)])) for name in model.joint_names]
    return SensedPlant(plant, profile, aliases)


def _engine_plant(
    options: PlantOptions, model: RobotModel, period: float, robot: str, base_link: str | None, tip_link: str | None
) -> Plant:
    if options.engine == "model":
        for name, value in (
            ("mjcf", options.mjcf),
            ("plant_deviations", options.deviations),
            ("obstacles", options.obstacles),
        ):
            if value:
                raise ValueError(f"{name} needs engine 'mujoco' (the model engine simulates the robot file itself)")
        if options.model_timestep < 0.0:
            raise ValueError(
                f"model_timestep must be >= 0 s (0: one step per control period), got {options.model_timestep}"
            )
        return ModelPlant(
            model,
            period,
            options.integrator,
            options.friction,
            options.torque_sensing,
            max_timestep=options.model_timestep or None,
        )
    from robot_dynamics.plant.mujoco_model import plant_source  # MuJoCo loaded only for this engine
    from robot_dynamics.plant.mujoco_plant import MujocoPlant

    deviations = load_deviations(options.deviations) if options.deviations else NO_DEVIATIONS
    obstacles = load_obstacles(options.obstacles) if options.obstacles else NO_OBSTACLES
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
        obstacles=obstacles,
    )
