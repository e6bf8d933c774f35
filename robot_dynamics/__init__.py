"""robot_dynamics: dynamics of serial manipulators (pure NumPy/SciPy/SymPy core; ROS adapters in .ros)."""

from typing import TYPE_CHECKING, Any

from .dynamics import (
    InverseDynamicsBreakdown,
    MomentumObserver,
    ObserverRun,
    RobmatCoefficients,
    SimulationResult,
    TaskSpace,
    TorqueProfile,
    batch_threads,
    coriolis_centrifugal,
    coriolis_matrix,
    coriolis_tensor,
    default_backend,
    direct_residual,
    external_wrench,
    forward_dynamics,
    forward_kinematics,
    gravity_torques,
    inertia_matrix,
    inverse_dynamics,
    jacobian,
    jacobian_dot_qdot,
    link_jacobian,
    link_pose,
    observe,
    operational_space_inertia,
    prepare,
    rnea_with_reactions,
    robmat_coefficients,
    set_batch_threads,
    set_default_backend,
    simulate,
    task_space,
)
from .friction import (
    FrictionTerms,
    ThesisBreakdown,
    apply_friction,
    friction_torques,
    friction_total,
    needs_reactions,
    thesis_breakdown,
)
from .models.robots import DEFAULT_ROBOT, bundled_robots, load_robot
from .payload import with_payload
from .trajectory import JointTrajectorySampler, TrajectorySample

__version__ = "0.1.0"


if TYPE_CHECKING:
    from .identification.pipeline import identify


def __getattr__(name: str) -> Any:
    """``identify`` is imported on first use (it pulls in the bag reader, SciPy's optimiser)."""
    if name == "identify":
        from .identification.pipeline import identify

        return identify
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_ROBOT",
    "FrictionTerms",
    "InverseDynamicsBreakdown",
    "JointTrajectorySampler",
    "MomentumObserver",
    "ObserverRun",
    "RobmatCoefficients",
    "SimulationResult",
    "TaskSpace",
    "ThesisBreakdown",
    "TorqueProfile",
    "TrajectorySample",
    "__version__",
    "apply_friction",
    "batch_threads",
    "bundled_robots",
    "coriolis_centrifugal",
    "coriolis_matrix",
    "coriolis_tensor",
    "default_backend",
    "direct_residual",
    "external_wrench",
    "forward_dynamics",
    "forward_kinematics",
    "friction_torques",
    "friction_total",
    "gravity_torques",
    "identify",
    "inertia_matrix",
    "inverse_dynamics",
    "jacobian",
    "jacobian_dot_qdot",
    "link_jacobian",
    "link_pose",
    "load_robot",
    "needs_reactions",
    "observe",
    "operational_space_inertia",
    "prepare",
    "rnea_with_reactions",
    "robmat_coefficients",
    "set_batch_threads",
    "set_default_backend",
    "simulate",
    "task_space",
    "thesis_breakdown",
    "with_payload",
]
