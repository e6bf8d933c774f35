"""The simulated arm of the simulator node: one plant interface, two engines (no ROS in here).

* :func:`~robot_dynamics.plant.engines.make_plant`: a plant of either engine from a node's options;
* :class:`~robot_dynamics.plant.base.Plant`: ``reset(q, qd)``, ``step(tau)`` for one control period
  (limited to the effort limits, the torque applied returned), ``q``, ``qd``, ``time``, an external
  wrench at the tool, the joints' torque reading ``effort`` (``torque_sensing``: the motors' or the
  link side's);
* ``model`` engine, :class:`~robot_dynamics.plant.model_engine.ModelPlant`: this package's forward
  dynamics (fixed-step or adaptive);
* ``mujoco`` engine, :class:`~robot_dynamics.plant.mujoco_plant.MujocoPlant`: MuJoCo, built from the
  robot file through MuJoCo's own compiler (:mod:`.mujoco_model`, :mod:`.urdf_source`), with plant
  deviations (:mod:`.deviations`), its exact inverse dynamics and its true model (:mod:`.true_model`);
* sensors and actuators of a real arm around either engine, :class:`~robot_dynamics.plant.sensors.SensedPlant`
  (quantized, noisy, delayed measurements, the driver's velocity estimate, motor-current or link-side
  torques, torque-constant errors and ripple; the truth beside them), with named profiles
  (:mod:`.sensor_profile`, ``config/sensors/``).

This package is the only part of robot_dynamics that imports ``mujoco``, and only the MuJoCo modules
do: ``import robot_dynamics.plant`` does not load it (the MuJoCo names are imported on first use).
See docs/plant.md.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from robot_dynamics.plant.base import TORQUE_SENSING, Plant, start_state
from robot_dynamics.plant.deviations import NO_DEVIATIONS, Deviations, load_deviations, parse_deviations
from robot_dynamics.plant.engines import ENGINES, PlantOptions, make_plant
from robot_dynamics.plant.model_engine import ModelPlant
from robot_dynamics.plant.sensor_profile import IDEAL, SensorProfile, bundled_profiles, load_sensor_profile
from robot_dynamics.plant.sensors import SensedPlant

_LAZY = {
    "MujocoPlant": "robot_dynamics.plant.mujoco_plant",
    "PlantSource": "robot_dynamics.plant.mujoco_model",
    "compile_plant": "robot_dynamics.plant.mujoco_model",
    "plant_source": "robot_dynamics.plant.mujoco_model",
    "true_model": "robot_dynamics.plant.true_model",
    "link_side": "robot_dynamics.plant.true_model",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ENGINES",
    "IDEAL",
    "NO_DEVIATIONS",
    "TORQUE_SENSING",
    "Deviations",
    "ModelPlant",
    "MujocoPlant",
    "Plant",
    "PlantOptions",
    "PlantSource",
    "SensedPlant",
    "SensorProfile",
    "bundled_profiles",
    "compile_plant",
    "link_side",
    "load_deviations",
    "load_sensor_profile",
    "make_plant",
    "parse_deviations",
    "plant_source",
    "start_state",
    "true_model",
]
