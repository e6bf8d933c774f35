"""Robot model loaders: DH YAML, URDF (file or ``robot_description`` text), bundled robots, URDF export."""

from __future__ import annotations

from .dh_yaml import load_dh_yaml, loads_dh_yaml
from .export_urdf import model_to_urdf
from .robots import DEFAULT_ROBOT, bundled_robot_path, bundled_robots, load_robot, robots_directory
from .urdf import load_urdf, loads_urdf
from .validation import ModelWarning

__all__ = [
    "DEFAULT_ROBOT",
    "ModelWarning",
    "bundled_robot_path",
    "bundled_robots",
    "load_dh_yaml",
    "load_robot",
    "load_urdf",
    "loads_dh_yaml",
    "loads_urdf",
    "model_to_urdf",
    "robots_directory",
]
