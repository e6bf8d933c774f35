"""robot_dynamics: dynamics of serial manipulators (pure NumPy/SciPy/SymPy core; ROS adapters in .ros)."""

__version__ = "0.1.0"
