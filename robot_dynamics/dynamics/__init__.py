"""The numerical dynamics engine: NumPy/SciPy, no ROS.

One algorithm per module:

* :mod:`.kinematics` forward kinematics of every frame, tool pose, geometric Jacobian;
* :mod:`.rnea` recursive Newton–Euler in link frames (Fu 3.3-50..58) with joint reactions;
* :mod:`.crba` inertia matrix by composite rigid bodies;
* :mod:`.lagrange_euler` the reference Lagrange–Euler formulation (Fu 3.2, U_ij, U_ijk, J_i);
* :mod:`.coefficients` D, h, h_ikm, Christoffel C, c, ROBMAT's M, B, C, G;
* :mod:`.inverse` inverse dynamics with friction, tool wrench and breakdown;
* :mod:`.forward` forward dynamics (:mod:`.cholesky`; with friction :mod:`.stick_slip`);
  :mod:`.simulate` integration (solve_ivp, or the stick–slip integrator);
* :mod:`.energy` kinetic and potential energy;
* :mod:`.task_space` a frame's pose, geometric Jacobian (:mod:`.geometric_jacobian`), ``Jdot qd``
  (:mod:`.frame_acceleration`) and operational-space inertia (:mod:`.task_inertia`, :mod:`.operational_space`);
* :mod:`.momentum_observer` the generalized-momentum observer of the external joint torques (one
  sample at a time and a whole recording), :mod:`.direct_residual` the same torques where ``qdd`` is
  known, :mod:`.contact_wrench` the tool wrench from them (damped least squares through the Jacobian).

Every function takes one state ``(n,)`` or a batch ``(N, n)``. The recursive algorithms are compiled
per model into straight-line programs with the model's constants folded in (:mod:`._trace`,
:mod:`._kernels`): Python floats for one state, NumPy arrays for a batch — or, with the native
backend (:mod:`.native`: ``backend="native"``, :func:`prepare`, :func:`set_default_backend`), C
compiled from the same programs. :mod:`._dispatch` is the one place that picks the backend and the
program (:class:`~._kernel_key.KernelKey`) of a call, validates and evaluates.
"""

from ._dispatch import default_backend, prepare, set_default_backend
from .coefficients import (
    RobmatCoefficients,
    coriolis_centrifugal,
    coriolis_matrix,
    coriolis_tensor,
    gravity_torques,
    inertia_matrix,
    robmat_coefficients,
)
from .contact_wrench import WrenchEstimate, external_wrench
from .direct_residual import direct_residual
from .energy import kinetic_energy, potential_energy
from .forward import forward_dynamics
from .inverse import InverseDynamicsBreakdown, inverse_dynamics, rnea_with_reactions
from .kinematics import com_positions, forward_kinematics, frame_poses
from .momentum_observer import (
    MomentumObserver,
    ObserverRun,
    generalized_momentum,
    momentum_rate,
    momentum_terms,
    observe,
)
from .native import batch_threads, set_batch_threads
from .simulate import SimulationResult, TorqueProfile, simulate
from .task_space import (
    TaskSpace,
    jacobian_dot_qdot,
    link_jacobian,
    link_pose,
    operational_space_inertia,
    task_space,
)
from .tool_jacobian import jacobian

__all__ = [
    "InverseDynamicsBreakdown",
    "MomentumObserver",
    "ObserverRun",
    "RobmatCoefficients",
    "SimulationResult",
    "TaskSpace",
    "TorqueProfile",
    "WrenchEstimate",
    "batch_threads",
    "com_positions",
    "coriolis_centrifugal",
    "coriolis_matrix",
    "coriolis_tensor",
    "default_backend",
    "direct_residual",
    "external_wrench",
    "forward_dynamics",
    "forward_kinematics",
    "frame_poses",
    "generalized_momentum",
    "gravity_torques",
    "inertia_matrix",
    "inverse_dynamics",
    "jacobian",
    "jacobian_dot_qdot",
    "kinetic_energy",
    "link_jacobian",
    "link_pose",
    "momentum_rate",
    "momentum_terms",
    "observe",
    "operational_space_inertia",
    "potential_energy",
    "prepare",
    "rnea_with_reactions",
    "robmat_coefficients",
    "set_batch_threads",
    "set_default_backend",
    "simulate",
    "task_space",
]
