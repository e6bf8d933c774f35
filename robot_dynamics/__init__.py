"""robot_dynamics: dynamics of serial manipulators (pure NumPy/SciPy/SymPy core; ROS adapters in .ros)."""

from .io.robots import DEFAULT_ROBOT, bundled_robots, load_robot

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_ROBOT",
    "__version__",
    "bundled_robots",
    "load_robot",
]
