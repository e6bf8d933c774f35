"""The fast paths (the friction program on floats for one state, friction_total) equal apply_friction."""

from __future__ import annotations

import numpy as np
import pytest

from robot_dynamics.friction import apply_friction, friction_total, scalar_friction
from robot_dynamics.model import (
    BearingFriction,
    Joint,
    JointFriction,
    Motor,
    RobotModel,
    TransmissionFriction,
    axis_angle_matrix,
    trans,
)

EFF = ((0.0, 0.3), (0.05, 0.5), (0.2, 0.7), (1.0, 0.85))


def everything() -> RobotModel:
    """Every model: viscous, asymmetric Coulomb, Stribeck, motor, all bearing kinds, transmissions."""
    frictions = [
        JointFriction(viscous=0.3, coulomb=(0.5, -0.4), static=(0.8, -0.7), stribeck_velocity=0.05),
        JointFriction(coulomb=(0.2, -0.3), bearing=BearingFriction("journal", 0.1, 0.08, 0.16)),
        JointFriction(
            viscous=0.1,
            bearing=BearingFriction("linear", 0.05, spacing=0.3),
            transmission=TransmissionFriction(EFF, 3.0, 50.0),
        ),
        JointFriction(
            bearing=BearingFriction("thrust", 0.1, 0.04),
            transmission=TransmissionFriction(EFF, 1.0, 20.0),
            smoothing_velocity=0.05,
        ),
        JointFriction(static=(0.3, -0.3), stribeck_velocity=0.0),  # static only sets break-away
        JointFriction(),
    ]
    motors = [
        Motor(1e-4, -30.0, 1e-3, (0.01, -0.02)),
        None,
        None,
        Motor(1e-4, 10.0, 0.0, (0.02, -0.02)),
        None,
        Motor(2e-4, 5.0, 1e-3),
    ]
    kinds = ["revolute", "revolute", "prismatic", "revolute", "revolute", "revolute"]
    rng = np.random.default_rng(3)
    joints = []
    for i in range(6):
        axis = rng.normal(size=3) if i in (1, 3) else np.array([0.0, 0.0, 1.0])
        origin = trans(*rng.uniform(-0.3, 0.3, 3))
        origin[:3, :3] = axis_angle_matrix(rng.normal(size=3) / 2, 0.7)
        joints.append(Joint(f"j{i}", kinds[i], origin, axis=axis, friction=frictions[i], motor=motors[i]))  # type: ignore[arg-type]
    return RobotModel("everything", joints)


@pytest.mark.parametrize(("smooth", "kind"), [(False, "tanh"), (True, "tanh"), (True, "linear")])
def test_fast_paths_equal_apply_friction(smooth: bool, kind: str) -> None:
    model = everything()
    rng = np.random.default_rng(4)
    N = 300
    qd = rng.uniform(-0.3, 0.3, (N, 6))
    qd[rng.uniform(size=(N, 6)) < 0.2] = 0.0
    qd[:20] *= 1e-3  # inside the smoothing windows
    tau = rng.uniform(-80, 80, (N, 6))
    tau[:10, 2:4] = 0.0  # tau_out = 0 boundary of the transmission
    force = rng.normal(scale=40, size=(N, 6, 3))
    moment = rng.normal(scale=8, size=(N, 6, 3))
    want = apply_friction(model, qd, tau, force, moment, smooth=smooth, smooth_kind=kind).total
    batch = friction_total(model, qd, tau, force, moment, smooth=smooth, smooth_kind=kind)
    assert np.max(np.abs(batch - want)) < 1e-12
    program = scalar_friction(model, smooth=smooth, smooth_kind=kind)
    worst = 0.0
    for k in range(N):
        single = friction_total(model, qd[k], tau[k], force[k], moment[k], smooth=smooth, smooth_kind=kind)
        direct = program(qd[k].tolist(), tau[k].tolist(), force[k].ravel().tolist(), moment[k].ravel().tolist())
        assert single.shape == (6,)
        with_tau = scalar_friction(model, smooth=smooth, smooth_kind=kind, include_tau=True)(
            qd[k].tolist(), tau[k].tolist(), force[k].ravel().tolist(), moment[k].ravel().tolist()
        )
        assert np.max(np.abs(np.array(with_tau) - tau[k] - want[k])) < 1e-12
        worst = max(worst, float(np.max(np.abs(single - want[k]))), float(np.max(np.abs(np.array(direct) - want[k]))))
    assert worst < 1e-12
    assert np.count_nonzero(want) > 0.6 * want.size  # joint 4 (static level only) is 0 while moving


def test_program_is_compiled_once_per_variant() -> None:
    model = everything()
    assert scalar_friction(model) is scalar_friction(model)
    assert scalar_friction(model, smooth=True) is not scalar_friction(model, smooth=True, smooth_kind="linear")


def test_frictionless_model_and_single_joint() -> None:
    model = RobotModel("free", [Joint("a", "revolute", np.eye(4))])
    assert friction_total(model, [1.0], [2.0]).tolist() == [0.0]
    assert friction_total(model, np.ones((3, 1)), np.ones((3, 1))).tolist() == [[0.0]] * 3


@pytest.mark.parametrize(("smooth", "kind"), [(False, "tanh"), (True, "tanh"), (True, "linear")])
def test_single_state_fast_path_without_reactions(smooth: bool, kind: str) -> None:
    base = everything()
    joints = tuple(
        j.__class__(**{**j.__dict__, "friction": JointFriction(**{**j.friction.__dict__, "bearing": None})})
        for j in base.joints
    )
    model = base.with_changes(joints=joints)
    rng = np.random.default_rng(5)
    qd = rng.uniform(-0.2, 0.2, (100, 6))
    qd[rng.uniform(size=(100, 6)) < 0.2] = 0.0
    tau = rng.uniform(-60, 60, (100, 6))
    want = apply_friction(model, qd, tau, smooth=smooth, smooth_kind=kind).total
    for k in range(100):
        assert np.max(np.abs(friction_total(model, qd[k], tau[k], smooth=smooth, smooth_kind=kind) - want[k])) < 1e-12
        assert (
            np.max(np.abs(friction_total(model, list(qd[k]), list(tau[k]), smooth=smooth, smooth_kind=kind) - want[k]))
            < 1e-12
        )
    with pytest.raises(ValueError, match="smooth_kind must be one of"):
        friction_total(model, qd[0], tau[0], smooth=True, smooth_kind="cubic")
