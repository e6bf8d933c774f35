"""Per-model friction tests: viscous, Coulomb (asymmetric), Stribeck (Schilling 6-3-3), smooth
variants, motor-side convention; signs, odd symmetry, continuity, asymptotes, batch shapes, errors.

Each law is evaluated through the friction package's reference (:func:`friction_torques`) on a
one-joint model that has only that law (the helpers below), and checked against closed forms."""

from __future__ import annotations

import re

import numpy as np
import pytest

from robot_dynamics.errors import ModelError, StateError
from robot_dynamics.friction import apply_friction, friction_parameters, friction_torques
from robot_dynamics.friction.smooth import direction
from robot_dynamics.model import Joint, JointFriction, Motor, RobotModel

QD = np.linspace(-3.0, 3.0, 601)


def _one_joint(qd: np.ndarray, friction: JointFriction, motor: Motor | None = None, **options: object) -> np.ndarray:
    """The friction of a one-joint model with ``friction`` (and ``motor``) at velocities ``qd``."""
    model = RobotModel("one", [Joint("j", "revolute", np.eye(4), friction=friction, motor=motor)])
    return friction_torques(model, np.asarray(qd, dtype=float)[..., None], **options)[..., 0]  # type: ignore[arg-type]


def viscous(qd: np.ndarray, b_v: float) -> np.ndarray:
    return _one_joint(qd, JointFriction(viscous=b_v))


def coulomb(
    qd: np.ndarray,
    tc_pos: float,
    tc_neg: float,
    *,
    smooth: bool = False,
    smoothing_velocity: float = 0.01,
    kind: str = "tanh",
) -> np.ndarray:
    friction = JointFriction(coulomb=(tc_pos, tc_neg), smoothing_velocity=smoothing_velocity)
    return _one_joint(qd, friction, smooth=smooth, smooth_kind=kind)


def viscous_coulomb(qd: np.ndarray, b_v: float, tc_pos: float, tc_neg: float) -> np.ndarray:
    return _one_joint(qd, JointFriction(viscous=b_v, coulomb=(tc_pos, tc_neg)))


def stribeck(
    qd: np.ndarray,
    b_v: float,
    tc_pos: float,
    tc_neg: float,
    ts_pos: float,
    ts_neg: float,
    eps: float,
    *,
    smooth: bool = False,
    smoothing_velocity: float = 0.01,
    kind: str = "tanh",
) -> np.ndarray:
    friction = JointFriction(
        viscous=b_v,
        coulomb=(tc_pos, tc_neg),
        static=(ts_pos, ts_neg),
        stribeck_velocity=eps,
        smoothing_velocity=smoothing_velocity,
    )
    return _one_joint(qd, friction, smooth=smooth, smooth_kind=kind)


def motor_friction(qd: np.ndarray, gear_ratio: float, b: float, tc_pos: float, tc_neg: float) -> np.ndarray:
    """Motor friction referred to the joint, ``G^2 B qd + |G| Tc(sgn qd)`` (motor inertia irrelevant)."""
    return _one_joint(qd, JointFriction(), Motor(0.0, gear_ratio, b, (tc_pos, tc_neg)))


def schilling_6_3_3(qd: np.ndarray, b_v: float, b_d: float, b_s: float, eps: float) -> np.ndarray:
    """The symmetric textbook form, verbatim: ``b_v qd + sgn(qd)[b_d + (b_s - b_d) exp(-|qd|/eps)]``."""
    return b_v * qd + np.sign(qd) * (b_d + (b_s - b_d) * np.exp(-np.abs(qd) / eps))


def model_of(frictions: list[JointFriction], motors: list[Motor | None] | None = None) -> RobotModel:
    motors = motors or [None] * len(frictions)
    joints = [
        Joint(f"j{i}", "revolute", np.eye(4), friction=f, motor=m)
        for i, (f, m) in enumerate(zip(frictions, motors, strict=True))
    ]
    return RobotModel("test", joints, source="test.yaml")


# ---------------------------------------------------------------------------------------------- viscous / Coulomb
def test_viscous_is_linear_and_odd() -> None:
    assert np.allclose(viscous(QD, 0.7), 0.7 * QD, rtol=0, atol=0)
    assert np.array_equal(viscous(-QD, 0.7), -viscous(QD, 0.7))


def test_coulomb_asymmetric_levels_and_rest() -> None:
    values = coulomb(np.array([2.0, 1e-12, 0.0, -1e-12, -5.0]), 0.4, -0.25)
    assert values.tolist() == [0.4, 0.4, 0.0, -0.25, -0.25]


def test_coulomb_symmetric_is_odd_and_opposes_motion_when_negated() -> None:
    c = coulomb(QD, 0.3, -0.3)
    assert np.array_equal(c, -coulomb(-QD, 0.3, -0.3))
    # compensating sign: same sign as qd (the friction force itself, -c, opposes motion)
    assert np.all(c * QD >= 0.0)
    assert np.all(np.abs(c[QD != 0]) == 0.3)


def test_viscous_coulomb_sum() -> None:
    assert np.allclose(viscous_coulomb(QD, 0.5, 0.2, -0.1), 0.5 * QD + np.where(QD > 0, 0.2, np.where(QD < 0, -0.1, 0)))


# ---------------------------------------------------------------------------------------------- Stribeck
def test_stribeck_symmetric_equals_schilling_6_3_3() -> None:
    got = stribeck(QD, 0.5, 1.0, -1.0, 1.6, -1.6, 0.2)
    want = schilling_6_3_3(QD, 0.5, 1.0, 1.6, 0.2)
    assert np.allclose(got, want, rtol=0, atol=1e-15)
    # spot value by hand: qd = 0.1: 0.05 + 1 + 0.6 exp(-0.5)
    assert stribeck(np.array([0.1]), 0.5, 1.0, -1.0, 1.6, -1.6, 0.2)[0] == pytest.approx(0.05 + 1 + 0.6 * np.exp(-0.5))


def test_stribeck_limits_static_at_zero_and_coulomb_far_away() -> None:
    near = stribeck(np.array([1e-12, -1e-12]), 0.0, 1.0, -0.8, 1.5, -1.2, 0.05)
    assert np.allclose(near, [1.5, -1.2], atol=1e-9)  # Schilling: tends to +-b_s as qd -> 0
    far = stribeck(np.array([50.0, -50.0]), 0.0, 1.0, -0.8, 1.5, -1.2, 0.05)
    assert np.allclose(far, [1.0, -0.8], atol=1e-12)
    assert stribeck(np.array([0.0]), 0.3, 1.0, -0.8, 1.5, -1.2, 0.05)[0] == 0.0


def test_stribeck_eps_to_zero_tends_to_coulomb() -> None:
    v = QD[QD != 0.0]
    coul = viscous_coulomb(v, 0.5, 1.0, -0.8)
    errors = [np.max(np.abs(stribeck(v, 0.5, 1.0, -0.8, 1.5, -1.2, eps) - coul)) for eps in (1e-1, 1e-2, 1e-3)]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.5 * np.exp(-0.01 / 1e-3) + 1e-12  # smallest |qd| on the grid is 0.01
    assert np.array_equal(stribeck(v, 0.5, 1.0, -0.8, 1.5, -1.2, 0.0), coul)  # eps = 0: exactly Coulomb


# ---------------------------------------------------------------------------------------------- smooth variants
@pytest.mark.parametrize("kind", ["tanh", "linear"])
def test_smooth_direction_odd_bounded_continuous(kind: str) -> None:
    v = np.linspace(-0.05, 0.05, 100001)
    s = direction(v, 0.01, smooth=True, kind=kind)
    assert np.allclose(s, -direction(-v, 0.01, smooth=True, kind=kind), atol=0)
    assert np.all(np.abs(s) <= 1.0)
    assert direction(np.array(0.0), 0.01, smooth=True, kind=kind) == 0.0
    # Lipschitz 1/v_s: no jump bigger than dv/v_s across the grid (the exact sign jumps at 0)
    assert np.max(np.abs(np.diff(s))) <= (v[1] - v[0]) / 0.01 * (1 + 1e-9)
    assert np.max(np.abs(np.diff(np.sign(v)))) >= 1.0


def test_linear_window_is_exact_outside_the_window() -> None:
    v = np.array([-0.5, -0.02, -0.01, -0.005, 0.0, 0.005, 0.01, 0.3])
    assert direction(v, 0.01, smooth=True, kind="linear").tolist() == [-1, -1, -1, -0.5, 0, 0.5, 1, 1]


@pytest.mark.parametrize("kind", ["tanh", "linear"])
def test_smooth_coulomb_and_stribeck_tend_to_exact_as_vs_to_zero(kind: str) -> None:
    v = QD[QD != 0.0]
    exact_c = coulomb(v, 0.4, -0.25)
    exact_s = stribeck(v, 0.1, 0.4, -0.25, 0.6, -0.5, 0.1)
    errors_c, errors_s = [], []
    for vs in (1e-1, 1e-2, 1e-3, 1e-4):
        smooth_c = coulomb(v, 0.4, -0.25, smooth=True, smoothing_velocity=vs, kind=kind)
        smooth_s = stribeck(v, 0.1, 0.4, -0.25, 0.6, -0.5, 0.1, smooth=True, smoothing_velocity=vs, kind=kind)
        errors_c.append(np.max(np.abs(smooth_c - exact_c)))
        errors_s.append(np.max(np.abs(smooth_s - exact_s)))
    assert errors_c[0] > errors_c[1] > errors_c[2] >= errors_c[3]
    assert errors_s[0] > errors_s[1] > errors_s[2] >= errors_s[3]
    # |qd| >= 0.01 on the grid = 100 v_s: tanh(100) is 1 in double, the window is exact outside v_s
    assert errors_c[3] < 1e-15 and errors_s[3] < 1e-15


def test_smooth_asymmetric_coulomb_levels() -> None:
    c = coulomb(np.array([1.0, -1.0, 0.0]), 0.4, -0.25, smooth=True, smoothing_velocity=1e-3)
    assert c.tolist() == [0.4, -0.25, 0.0]


# ---------------------------------------------------------------------------------------------- motor side
def test_motor_friction_rtb_unit_test_values() -> None:
    # Robotics Toolbox test: B=3, G=2, Tc=[2,-1], qd=[1,2,3,4] -> friction = [-16,-28,-40,-52] (opposing)
    got = motor_friction(np.array([1.0, 2.0, 3.0, 4.0]), 2.0, 3.0, 2.0, -1.0)
    assert got.tolist() == [16.0, 28.0, 40.0, 52.0]
    model = model_of([JointFriction()] * 4, [Motor(0.0, 2.0, 3.0, (2.0, -1.0))] * 4)
    assert friction_torques(model, [1.0, 2.0, 3.0, 4.0]).tolist() == [16.0, 28.0, 40.0, 52.0]


def test_motor_friction_negative_gear_ratio_uses_abs_and_joint_velocity_sign() -> None:
    # G = -62.6111 (Puma joint 1): G^2 B qd + |G| Tc selected by the sign of the joint velocity
    g, b, tc = -62.6111, 1.48e-3, (0.395, -0.435)
    got = motor_friction(np.array([0.5, -0.5, 0.0]), g, b, *tc)
    want = [g * g * b * 0.5 + abs(g) * 0.395, -(g * g * b * 0.5) + abs(g) * -0.435, 0.0]
    assert np.allclose(got, want, rtol=1e-15)


# ---------------------------------------------------------------------------------------------- combined, shapes
def full_model() -> RobotModel:
    return model_of(
        [
            JointFriction(viscous=0.5, coulomb=(0.4, -0.3)),
            JointFriction(coulomb=(0.2, -0.2), static=(0.5, -0.45), stribeck_velocity=0.05, smoothing_velocity=0.02),
            JointFriction(),
        ],
        [Motor(1e-4, -20.0, 1e-3, (0.01, -0.02)), None, Motor(1e-4, 50.0, 2e-3, (0.0, 0.0))],
    )


def test_friction_torques_is_sum_of_the_models() -> None:
    model = full_model()
    rng = np.random.default_rng(1)
    qd = rng.uniform(-2, 2, (40, 3))
    got = friction_torques(model, qd)
    want = np.stack(
        [
            viscous_coulomb(qd[:, 0], 0.5, 0.4, -0.3) + motor_friction(qd[:, 0], -20.0, 1e-3, 0.01, -0.02),
            stribeck(qd[:, 1], 0.0, 0.2, -0.2, 0.5, -0.45, 0.05),
            motor_friction(qd[:, 2], 50.0, 2e-3, 0.0, 0.0),
        ],
        axis=-1,
    )
    assert np.allclose(got, want, rtol=0, atol=1e-14)
    terms = apply_friction(model, qd, np.zeros_like(qd))
    assert np.allclose(terms.joint + terms.motor, got, atol=1e-14)
    assert np.array_equal(terms.bearing, np.zeros_like(qd)) and np.array_equal(terms.transmission, np.zeros_like(qd))
    assert np.allclose(terms.total, got, atol=1e-14)


@pytest.mark.parametrize("shape", [(3,), (7, 3), (2, 5, 3)])
@pytest.mark.parametrize("smooth", [False, True])
def test_batch_shapes_match_single_states(shape: tuple[int, ...], smooth: bool) -> None:
    model = full_model()
    qd = np.random.default_rng(2).uniform(-1, 1, shape)
    tau = np.random.default_rng(3).uniform(-1, 1, shape)
    batch = apply_friction(model, qd, tau, smooth=smooth)
    flat_qd, flat_tau = qd.reshape(-1, 3), tau.reshape(-1, 3)
    for field in ("joint", "motor", "bearing", "transmission", "total"):
        arr = getattr(batch, field)
        assert arr.shape == shape
        singles = np.array(
            [getattr(apply_friction(model, a, b, smooth=smooth), field) for a, b in zip(flat_qd, flat_tau, strict=True)]
        )
        assert np.array_equal(arr.reshape(-1, 3), singles)
    assert friction_torques(model, qd, smooth=smooth).shape == shape


def test_combined_smooth_is_continuous_and_odd_for_symmetric_parameters() -> None:
    model = model_of(
        [
            JointFriction(
                viscous=0.1, coulomb=(0.3, -0.3), static=(0.5, -0.5), stribeck_velocity=0.1, smoothing_velocity=0.01
            )
        ],
        [Motor(0.0, 3.0, 1e-3, (0.05, -0.05))],
    )
    v = np.linspace(-0.1, 0.1, 20001)[:, None]
    for kind in ("tanh", "linear"):
        f = friction_torques(model, v, smooth=True, smooth_kind=kind)[:, 0]
        assert np.allclose(f, -friction_torques(model, -v, smooth=True, smooth_kind=kind)[:, 0], atol=1e-15)
        assert np.max(np.abs(np.diff(f))) < 0.01  # the exact form jumps by 2 (0.5 + 3*0.05) at 0
    exact = friction_torques(model, v)[:, 0]
    assert np.max(np.abs(np.diff(exact))) > 0.6


def test_bad_state_shapes_are_named() -> None:
    model = full_model()
    with pytest.raises(StateError, match=r"qd: expected shape \(\.\.\., 3\) for a 3-joint model, got \(4,\)"):
        friction_torques(model, np.zeros(4))
    with pytest.raises(StateError, match=r"tau_joint: shape \(2, 3\) does not match qd \(3,\)"):
        apply_friction(model, np.zeros(3), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="smooth_kind must be one of"):
        friction_torques(model, np.zeros(3), smooth=True, smooth_kind="cubic")


@pytest.mark.parametrize(
    ("friction", "motor", "field", "problem"),
    [
        (JointFriction(coulomb=(-0.1, -0.2)), None, "joints[0].friction.coulomb", "T+ >= 0 >= T-"),
        (JointFriction(static=(0.1, 0.2)), None, "joints[0].friction.static", "T+ >= 0 >= T-"),
        (JointFriction(viscous=-1.0), None, "joints[0].friction.viscous", ">= 0"),
        (JointFriction(viscous=float("nan")), None, "joints[0].friction.viscous", "finite"),
        (JointFriction(smoothing_velocity=0.0), None, "joints[0].friction.smoothing_velocity", "> 0"),
        (JointFriction(stribeck_velocity=-0.1), None, "joints[0].friction.stribeck_velocity", ">= 0"),
        (JointFriction(), Motor(1e-4, 10.0, -1e-3), "joints[0].motor.B", ">= 0"),
        (JointFriction(), Motor(1e-4, 10.0, 1e-3, (0.1, 0.1)), "joints[0].motor.Tc", "T+ >= 0 >= T-"),
    ],
)
def test_bad_parameters_name_file_joint_and_field(
    friction: JointFriction, motor: Motor | None, field: str, problem: str
) -> None:
    model = model_of([friction], [motor])
    with pytest.raises(ModelError, match=rf"^test\.yaml: {re.escape(field)}: joint 'j0': .*{re.escape(problem)}"):
        friction_parameters(model)
