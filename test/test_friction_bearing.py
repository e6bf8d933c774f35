"""Load-dependent joint (bearing) friction, Dhanaraj (1990) Table 3.1: journal, linear, thrust.

The journal-bearing pairing is checked against an independent numeric two-bearing statics solve
(6x6 equilibrium of two radial bearings, an axial shoulder and the drive torque), for joint axes
in arbitrary directions; the thesis's printed pairing is shown to disagree and to depend on the
choice of x/y axes about the joint axis.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from robot_dynamics.errors import ModelError, StateError
from robot_dynamics.friction import apply_friction, friction_parameters, needs_reactions
from robot_dynamics.friction.bearing import axis_frame, journal_bearing, linear_bearing, thrust_bearing
from robot_dynamics.model import BearingFriction, Joint, JointFriction, RobotModel, axis_angle_matrix

MU, R, D = 0.1, 0.08, 0.12


def two_bearing_radial_forces(
    axis: np.ndarray, e1: np.ndarray, force: np.ndarray, moment: np.ndarray, d: float
) -> tuple[np.ndarray, np.ndarray]:
    """Solve the statics of the joint: bearings A (at +d/2 axis) and B (-d/2) carry radial forces in
    span(e1, e2), an axial shoulder at the origin carries the axial force, the drive the axial torque.
    Returns the radial forces (components along e1, e2) of A and B."""
    e2 = np.cross(axis, e1)
    ra, rb = 0.5 * d * axis, -0.5 * d * axis
    cols = []
    for r_point, e in ((ra, e1), (ra, e2), (rb, e1), (rb, e2)):
        cols.append(np.concatenate([e, np.cross(r_point, e)]))
    cols.append(np.concatenate([axis, np.zeros(3)]))  # axial force
    cols.append(np.concatenate([np.zeros(3), axis]))  # drive torque
    x = np.linalg.solve(np.array(cols).T, np.concatenate([force, moment]))
    return x[0:2], x[2:4]


def random_axis(rng: np.random.Generator) -> np.ndarray:
    a = rng.normal(size=3)
    return a / np.linalg.norm(a)


def perpendicular(axis: np.ndarray, angle: float) -> np.ndarray:
    v = np.cross(axis, [0.3, -0.5, 0.8])
    v /= np.linalg.norm(v)
    return axis_angle_matrix(axis, angle) @ v


def one_joint(axis: np.ndarray, bearing: BearingFriction, kind: str = "revolute") -> RobotModel:
    joint = Joint("j", kind, np.eye(4), axis=axis, friction=JointFriction(bearing=bearing))  # type: ignore[arg-type]
    return RobotModel("b", [joint], source="bearing.yaml")


def thesis_printed_journal(f: np.ndarray, n: np.ndarray, mu: float, r: float, d: float) -> float:
    """Dhanaraj (1990) eq. 3.3 exactly as printed (pairing (d/2 fx - ny, d/2 fy - nx))."""
    hx, hy = 0.5 * d * f[0], 0.5 * d * f[1]
    return float(mu * r / d * (np.hypot(hx - n[1], hy - n[0]) + np.hypot(hx + n[1], hy + n[0])))


def test_journal_bearing_matches_two_bearing_statics_for_arbitrary_axes() -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        axis = random_axis(rng)
        f, n = rng.normal(scale=50, size=3), rng.normal(scale=10, size=3)
        fa, fb = two_bearing_radial_forces(axis, perpendicular(axis, rng.uniform(0, 6)), f, n, D)
        want = MU * R * (np.linalg.norm(fa) + np.linalg.norm(fb))
        model = one_joint(axis, BearingFriction("journal", MU, R, D))
        for qd, sign in ((0.7, 1.0), (-0.2, -1.0)):
            got = apply_friction(model, [qd], [0.0], f[None], n[None]).bearing[0]
            assert got == pytest.approx(sign * want, rel=1e-12, abs=1e-13)
        rot = axis_frame(axis)
        assert journal_bearing(rot @ f, rot @ n, MU, R, D) == pytest.approx(want, rel=1e-12)


def test_thesis_printed_pairing_is_not_physical() -> None:
    # generic load: the printed pairing disagrees with statics ...
    f, n = np.array([30.0, -20.0, 5.0]), np.array([4.0, 3.0, 1.0])
    axis = np.array([0.0, 0.0, 1.0])
    fa, fb = two_bearing_radial_forces(axis, np.array([1.0, 0.0, 0.0]), f, n, D)
    statics = MU * R * (np.linalg.norm(fa) + np.linalg.norm(fb))
    assert journal_bearing(f, n, MU, R, D) == pytest.approx(statics, rel=1e-13)
    assert abs(thesis_printed_journal(f, n, MU, R, D) - statics) > 1e-3 * statics
    # ... and changes when the x/y axes are turned about the joint axis (ours does not)
    rz = axis_angle_matrix(axis, 0.7)
    assert journal_bearing(rz.T @ f, rz.T @ n, MU, R, D) == pytest.approx(statics, rel=1e-13)
    assert abs(thesis_printed_journal(rz.T @ f, rz.T @ n, MU, R, D) - thesis_printed_journal(f, n, MU, R, D)) > 1e-4
    # both agree when the force and moment do not mix (Table 3.1 special cases)
    for f2, n2 in ((np.array([30.0, -20.0, 0]), np.zeros(3)), (np.array([30.0, 0, 0]), np.array([0, 3.0, 0]))):
        assert thesis_printed_journal(f2, n2, MU, R, D) == pytest.approx(journal_bearing(f2, n2, MU, R, D), rel=1e-13)


def test_journal_bearing_special_cases_of_the_thesis() -> None:
    # eq. 3.1/3.2: pure radial force -> mu r |F_N|, F_N = sqrt(fx^2 + fy^2); axial force and torque ignored
    assert journal_bearing(np.array([3.0, 4.0, 100.0]), np.array([0, 0, 7.0]), MU, R, D) == pytest.approx(MU * R * 5.0)
    # Fig. 3.3: pure tilting moment M -> each bearing carries M/d
    assert journal_bearing(np.zeros(3), np.array([6.0, 0, 0]), MU, R, D) == pytest.approx(MU * R * 2 * 6.0 / D)


def test_linear_bearing_matches_statics_per_face() -> None:
    rng = np.random.default_rng(6)
    for _ in range(30):
        axis = random_axis(rng)
        f, n = rng.normal(scale=50, size=3), rng.normal(scale=10, size=3)
        rot = axis_frame(axis)
        fa, fb = two_bearing_radial_forces(axis, rot[0], f, n, D)
        want = MU * (np.abs(fa).sum() + np.abs(fb).sum())
        model = one_joint(axis, BearingFriction("linear", MU, spacing=D), kind="prismatic")
        assert apply_friction(model, [-0.1], [0.0], f[None], n[None]).bearing[0] == pytest.approx(-want, rel=1e-12)
    # thesis eq. 3.4 as printed (its pairing does not matter for sums of absolute values)
    f, n = np.array([30.0, -20.0, 5.0]), np.array([4.0, 3.0, 1.0])
    printed = (
        MU
        / D
        * sum(
            abs(v) for v in (0.5 * D * f[0] - n[1], 0.5 * D * f[1] - n[0], 0.5 * D * f[0] + n[1], 0.5 * D * f[1] + n[0])
        )
    )
    assert linear_bearing(f, n, MU, D) == pytest.approx(printed, rel=1e-14)


def test_thrust_bearing_uses_the_axial_force() -> None:
    rng = np.random.default_rng(7)
    axis = random_axis(rng)
    f = rng.normal(scale=50, size=3)
    model = one_joint(axis, BearingFriction("thrust", MU, R))
    got = apply_friction(model, [2.0], [0.0], f[None], np.zeros((1, 3))).bearing[0]
    assert got == pytest.approx(MU * R * abs(f @ axis), rel=1e-13)
    assert thrust_bearing(np.array([1.0, 2.0, -3.0]), MU, R) == pytest.approx(MU * R * 3.0)


def test_axis_frame_is_axis_aligned_for_coordinate_axes() -> None:
    assert np.array_equal(axis_frame([0, 0, 1]), np.eye(3))
    assert np.array_equal(axis_frame([1, 0, 0]), np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]]))
    rng = np.random.default_rng(8)
    for _ in range(10):
        a = random_axis(rng)
        rot = axis_frame(a)
        assert np.allclose(rot @ rot.T, np.eye(3), atol=1e-15) and np.linalg.det(rot) == pytest.approx(1.0)
        assert np.allclose(rot[2], a, atol=1e-15)


def test_bearing_friction_is_zero_at_rest_and_smooth_variant_is_continuous() -> None:
    model = one_joint(np.array([0.0, 0.0, 1.0]), BearingFriction("journal", MU, R, D))
    f, n = np.array([[30.0, -20.0, 5.0]]), np.array([[4.0, 3.0, 1.0]])
    assert apply_friction(model, [0.0], [0.0], f, n).bearing[0] == 0.0
    mag = journal_bearing(f[0], n[0], MU, R, D)
    v = np.linspace(-0.05, 0.05, 1001)[:, None]
    smooth = apply_friction(
        model, v, np.zeros_like(v), np.repeat(f[None], len(v), 0), np.repeat(n[None], len(v), 0), smooth=True
    )
    assert np.max(np.abs(np.diff(smooth.bearing[:, 0]))) <= mag * (v[1, 0] - v[0, 0]) / 0.01 * (1 + 1e-9)
    assert smooth.bearing[-1, 0] == pytest.approx(mag * np.tanh(5.0))


def test_batch_reactions_and_missing_reactions_error() -> None:
    model = one_joint(np.array([0.0, 1.0, 0.0]), BearingFriction("journal", MU, R, D))
    assert needs_reactions(model)
    rng = np.random.default_rng(9)
    f, n = rng.normal(size=(4, 5, 1, 3)), rng.normal(size=(4, 5, 1, 3))
    qd = rng.normal(size=(4, 5, 1))
    terms = apply_friction(model, qd, np.zeros_like(qd), f, n)
    assert terms.bearing.shape == (4, 5, 1)
    assert terms.bearing[2, 3, 0] == apply_friction(model, qd[2, 3], [0.0], f[2, 3], n[2, 3]).bearing[0]
    with pytest.raises(StateError, match=r"joints \['j'\] have bearing friction: pass force and moment"):
        apply_friction(model, [1.0], [0.0])
    with pytest.raises(StateError, match=r"force: expected shape \(\.\.\., 1, 3\)"):
        apply_friction(model, [1.0], [0.0], np.zeros(3), np.zeros(3))


@pytest.mark.parametrize(
    ("bearing", "kind", "field", "problem"),
    [
        (
            BearingFriction("linear", MU, spacing=D),
            "revolute",
            "friction.bearing.kind",
            "a linear bearing needs a prismatic joint",
        ),
        (
            BearingFriction("journal", MU, R, D),
            "prismatic",
            "friction.bearing.kind",
            "a journal bearing needs a revolute joint",
        ),
        (BearingFriction("journal", MU, R, 0.0), "revolute", "friction.bearing.spacing", "> 0"),
        (BearingFriction("thrust", MU, 0.0), "revolute", "friction.bearing.radius", "> 0"),
        (BearingFriction("journal", -0.1, R, D), "revolute", "friction.bearing.mu", ">= 0"),
        (BearingFriction("roller", MU, R, D), "revolute", "friction.bearing.kind", "must be one of"),  # type: ignore[arg-type]
    ],
)
def test_bad_bearing_parameters(bearing: BearingFriction, kind: str, field: str, problem: str) -> None:
    with pytest.raises(ModelError, match=rf"bearing\.yaml: joints\[0\]\.{field}: joint 'j': .*{re.escape(problem)}"):
        friction_parameters(one_joint(np.array([0.0, 0.0, 1.0]), bearing, kind))
