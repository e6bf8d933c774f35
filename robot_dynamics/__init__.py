"""robot_dynamics: dynamics of serial manipulators (pure NumPy/SciPy/SymPy core; ROS adapters in .ros)."""

from .friction import (
    FrictionTerms,
    ThesisBreakdown,
    apply_friction,
    friction_torques,
    friction_total,
    needs_reactions,
    thesis_breakdown,
)
from .io.robots import DEFAULT_ROBOT, bundled_robots, load_robot

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_ROBOT",
    "FrictionTerms",
    "ThesisBreakdown",
    "__version__",
    "apply_friction",
    "bundled_robots",
    "friction_torques",
    "friction_total",
    "load_robot",
    "needs_reactions",
    "thesis_breakdown",
]
