"""The tool wrench from external joint torques (damped least squares through the Jacobian).

References: the wrench itself (``tau = J^T F`` then back) for a non-redundant 6-joint arm away from
singularities; NumPy's least squares (``lstsq``), pseudo-inverse (``pinv``) and the normal equations
``(J J^T + lambda^2 I) F = J tau`` solved directly for the redundant, the short and the damped cases;
the engine's own inverse dynamics with a tool load for the sign and the frames.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS

from robot_dynamics.dynamics import inverse_dynamics, jacobian
from robot_dynamics.dynamics.contact_wrench import external_wrench
from robot_dynamics.errors import StateError
from robot_dynamics.models import load_robot

UR5 = load_robot(str(EXAMPLE_ROBOTS / "ur_description/urdf/ur5_robot.urdf"), tip_link="tool0")
RNG = np.random.default_rng(21)


def well_conditioned(model, count: int, limit: float = 50.0) -> np.ndarray:  # type: ignore[no-untyped-def]
    q = RNG.uniform(-math.pi, math.pi, (4 * count, model.dof))
    keep = np.linalg.cond(jacobian(model, q)) < limit
    assert keep.sum() >= count
    return q[keep][:count]


def test_recovers_the_wrench_of_a_six_joint_arm_in_both_frames() -> None:
    q = well_conditioned(UR5, 100)
    F = RNG.normal(0.0, 20.0, (100, 6))
    for frame in ("tool", "base"):
        J = jacobian(UR5, q, frame=frame)
        tau = np.einsum("Nji,Nj->Ni", J, F)  # J^T F
        est = external_wrench(UR5, q, tau, frame=frame, damping=0.0, floor=0.0)
        assert est.frame == frame and est.damping == 0.0 and est.floor == 0.0
        np.testing.assert_allclose(est.wrench, F, rtol=0, atol=1e-9 * np.abs(F).max())
        np.testing.assert_allclose(est.condition, np.linalg.cond(J), rtol=1e-9)
        assert (est.rank == 6).all()
        # one state at a time gives the same
        one = external_wrench(UR5, q[7], tau[7], frame=frame, damping=0.0, floor=0.0)
        np.testing.assert_allclose(one.wrench, est.wrench[7], rtol=0, atol=1e-12 * np.abs(F).max())
    # the sign and the frames of the engine's tool load: the load w the tool exerts is -F
    tau_load = inverse_dynamics(UR5, q, 0 * q, 0 * q, friction=False, wrench=-F) - inverse_dynamics(
        UR5, q, 0 * q, 0 * q, friction=False
    )
    est = external_wrench(UR5, q, -tau_load, damping=0.0, floor=0.0)  # tool frame, the default
    np.testing.assert_allclose(est.wrench, F, rtol=0, atol=1e-8 * np.abs(F).max())


def test_the_damped_solution_solves_its_normal_equations() -> None:
    q = well_conditioned(UR5, 20)
    tau = RNG.normal(0.0, 5.0, (20, 6))
    lam = 0.05
    est = external_wrench(UR5, q, tau, damping=lam, floor=0.0)
    J = jacobian(UR5, q, frame="tool")
    expected = np.linalg.solve(J @ J.transpose(0, 2, 1) + lam**2 * np.eye(6), (J @ tau[..., None]))[..., 0]
    np.testing.assert_allclose(est.wrench, expected, rtol=0, atol=1e-10 * np.abs(expected).max())
    assert est.damping == lam


def test_least_squares_for_a_redundant_arm_and_minimum_norm_for_a_short_one() -> None:
    panda = load_robot(
        str(EXAMPLE_ROBOTS / "panda_description/urdf/panda.urdf"),
        tip_link="panda_hand",
        locked_joints={"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0},
    )
    q = well_conditioned(panda, 30)
    tau = RNG.normal(0.0, 5.0, (30, 7))  # not of the form J^T F: least squares
    est = external_wrench(panda, q, tau, frame="base", damping=0.0, floor=0.0)
    J = jacobian(panda, q, frame="base")
    for k in range(30):
        expected = np.linalg.lstsq(J[k].T, tau[k], rcond=None)[0]
        np.testing.assert_allclose(est.wrench[k], expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    two = load_robot("fu_two_link")  # 2 joints: only 2 wrench components are observable
    q2, tau2 = RNG.uniform(0.3, 2.5, (10, 2)), RNG.normal(0, 3, (10, 2))
    est2 = external_wrench(two, q2, tau2, damping=0.0, floor=0.0)
    J2 = jacobian(two, q2, frame="tool")
    for k in range(10):
        np.testing.assert_allclose(est2.wrench[k], np.linalg.pinv(J2[k].T) @ tau2[k], rtol=0, atol=1e-10)
    assert (est2.rank == 2).all()


def test_a_singular_direction_is_dropped_below_the_floor() -> None:
    """PUMA 560 at its zero pose: wrist singular (joints 4 and 6 aligned), cond(J) = inf."""
    puma = load_robot("puma560")
    q = np.zeros(6)
    s = np.linalg.svd(jacobian(puma, q), compute_uv=False)
    assert s[-1] < 1e-12
    tau = RNG.normal(0.0, 5.0, 6)
    est = external_wrench(puma, q, tau, frame="base", damping=0.0, floor=1e-6)
    assert est.rank == 5 and est.condition > 1e12 and np.isfinite(est.wrench).all()
    np.testing.assert_allclose(est.wrench, np.linalg.pinv(jacobian(puma, q).T, rcond=1e-9) @ tau, atol=1e-9)
    damped = external_wrench(puma, q, tau, frame="base", damping=1e-2, floor=0.0)
    assert np.isfinite(damped.wrench).all() and damped.rank == 6


def test_bad_damping_and_torques_are_refused() -> None:
    q = np.zeros(6)
    with pytest.raises(StateError, match="damping"):
        external_wrench(UR5, q, q, damping=-1.0)
    with pytest.raises(StateError, match="floor"):
        external_wrench(UR5, q, q, floor=math.nan)
    with pytest.raises(StateError, match="tau_ext"):
        external_wrench(UR5, q, np.ones(5))
    with pytest.raises(StateError, match="frame"):
        external_wrench(UR5, q, q, frame="flange")  # type: ignore[arg-type]
