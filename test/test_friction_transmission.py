"""Transmission friction, Dhanaraj (1990) §3.4 Table 3.2 (four quadrants), efficiency interpolation,
boundary cases, the closed-form inverse used by forward dynamics, and the Table 3.5 breakdown."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from robot_dynamics.errors import ModelError
from robot_dynamics.friction import EfficiencyCurve, apply_friction, friction_parameters, thesis_breakdown
from robot_dynamics.friction.transmission import input_torque, output_torque
from robot_dynamics.model import Joint, JointFriction, RobotModel, TransmissionFriction

POINTS = ((0.0, 0.30), (0.05, 0.50), (0.2, 0.70), (0.6, 0.85), (1.0, 0.88))
TAU_B, TAU_MAX = 5.5, 186.4
CURVE = EfficiencyCurve.from_points(POINTS)


def eta(tau_out: float) -> float:
    """Independent linear interpolation of POINTS at |tau_out| / tau_max (clamped)."""
    u = abs(tau_out) / TAU_MAX
    for (u0, e0), (u1, e1) in itertools.pairwise(POINTS):
        if u0 <= u <= u1:
            return e0 + (e1 - e0) * (u - u0) / (u1 - u0)
    return POINTS[-1][1]


def tin(tau_out: float, qd: float) -> float:
    return float(input_torque(np.array(tau_out), np.array(qd), np.sign(qd), CURVE, TAU_B, TAU_MAX))


@pytest.mark.parametrize("tau_out", [0.3, 7.0, 20.0, 60.0, 150.0, 400.0])
def test_table_3_2_case_by_case(tau_out: float) -> None:
    e = eta(tau_out)
    assert tin(tau_out, 1.0) == pytest.approx(tau_out / e + TAU_B, rel=1e-14)  # case 1
    assert tin(-tau_out, -1.0) == pytest.approx(-tau_out / e - TAU_B, rel=1e-14)  # case 2
    assert tin(tau_out, -1.0) == pytest.approx(tau_out * e - TAU_B, rel=1e-14)  # case 3
    assert tin(-tau_out, 1.0) == pytest.approx(-tau_out * e + TAU_B, rel=1e-14)  # case 4


def test_fig_3_5_curve_i_above_curve_ii() -> None:
    # at A (tau_out > 0) the input exceeds the output for qd > 0 and is less for qd < 0; at B the opposite
    for x in (10.0, 80.0):
        assert tin(x, 1.0) > x > tin(x, -1.0)
        assert tin(-x, 1.0) > -x > tin(-x, -1.0)


def test_boundary_cases_defined() -> None:
    assert tin(0.0, 2.0) == TAU_B and tin(0.0, -2.0) == -TAU_B  # tau_out = 0: +-tau_B
    for x in (-50.0, 0.0, 30.0):
        assert tin(x, 0.0) == x  # qd = 0: no transmission friction (inside the holding interval)
        assert tin(x, -1.0) <= tin(x, 0.0) <= tin(x, 1.0)
    # continuous in tau_out through 0 for a fixed direction (needs eta(0) > 0)
    assert tin(1e-9, 1.0) == pytest.approx(TAU_B, abs=1e-8) and tin(-1e-9, 1.0) == pytest.approx(TAU_B, abs=1e-8)


def test_efficiency_interpolation_and_clamping() -> None:
    assert CURVE(np.array([0.0, 0.025, 0.4, 1.0, 3.0])).tolist() == pytest.approx([0.30, 0.40, 0.775, 0.88, 0.88])
    shifted = EfficiencyCurve.from_points([(0.1, 0.5), (0.5, 0.8)])
    assert shifted(np.array([0.0, 0.05, 0.3, 0.9])).tolist() == pytest.approx([0.5, 0.5, 0.65, 0.8])


@pytest.mark.parametrize("sigma", [1.0, -1.0])
def test_inverse_round_trip_all_regions(sigma: float) -> None:
    x = np.concatenate([np.linspace(-500, 500, 2001), [-1e-9, 0.0, 1e-9, TAU_MAX * 0.05, -TAU_MAX * 0.2]])
    y = input_torque(x, np.full_like(x, sigma), np.full_like(x, sigma), CURVE, TAU_B, TAU_MAX)
    assert np.all(np.diff(y[:2001]) > 0)  # monotone in tau_out
    back = output_torque(y, np.full_like(y, sigma), CURVE, TAU_B, TAU_MAX)
    assert np.max(np.abs(back - x)) < 1e-11 * (1 + np.abs(x)).max()
    shifted = EfficiencyCurve.from_points([(0.1, 0.5), (0.5, 0.8)])
    y2 = input_torque(x, np.full_like(x, sigma), np.full_like(x, sigma), shifted, 2.0, 90.0)
    assert np.allclose(output_torque(y2, np.full_like(y2, sigma), shifted, 2.0, 90.0), x, rtol=1e-12, atol=1e-10)


def test_smooth_transmission_continuous_in_velocity() -> None:
    joint = Joint(
        "j",
        "revolute",
        np.eye(4),
        friction=JointFriction(transmission=TransmissionFriction(POINTS, TAU_B, TAU_MAX), smoothing_velocity=0.01),
    )
    model = RobotModel("t", [joint])
    v = np.linspace(-0.05, 0.05, 1001)[:, None]
    for x in (40.0, -40.0):
        tr = apply_friction(model, v, np.full_like(v, x), smooth=True).transmission[:, 0]
        assert np.max(np.abs(np.diff(tr))) < 3.0  # the exact form jumps by ~40 at qd = 0
        exact = apply_friction(model, v, np.full_like(v, x)).transmission[:, 0]
        assert np.ptp(exact) > 35.0  # 2 tau_B + |x| (1/eta - eta), eta(40/186.4) = 0.705
        far = np.abs(v[:, 0]) >= 0.04
        assert np.allclose(tr[far], exact[far] * np.tanh(np.abs(v[far, 0]) / 0.01), rtol=1e-12)


def test_transmission_acts_on_the_torque_at_the_joint() -> None:
    # tau_out = tau_joint + joint friction (+ motor + bearing): Dhanaraj (1990) Fig. 3.10 order
    joint = Joint(
        "j",
        "revolute",
        np.eye(4),
        friction=JointFriction(coulomb=(1.5, -1.5), transmission=TransmissionFriction(POINTS, TAU_B, TAU_MAX)),
    )
    model = RobotModel("t", [joint])
    for tau, qd in ((10.0, 1.0), (-10.0, 1.0), (0.5, -1.0), (-30.0, -2.0)):
        terms = apply_friction(model, [qd], [tau])
        at_joint = tau + np.sign(qd) * 1.5
        assert terms.transmission[0] == pytest.approx(tin(at_joint, qd) - at_joint, rel=1e-14)
        assert terms.total[0] == pytest.approx(tin(at_joint, qd) - tau, rel=1e-14)


def test_thesis_table_3_5_columns() -> None:
    """Dhanaraj (1990) Table 3.5 (PUMA, t = 0.6 s): from its basic dynamic and joint friction columns and the
    efficiencies the thesis's numbers imply (eta = 0.4543, 0.5619, 0.3458 at |tau_out|/tau_max = 0.0307,
    0.0856, 0.0076: a curve read off, not given, in the thesis), the four-quadrant rules give its
    transmission and total input columns (cases 1, 2 and 4)."""
    basic = np.array([1.2140, -15.6364, -0.8042])
    joint_friction = np.array([1.7803, -0.3281, 0.1241])
    qd = np.sign(joint_friction)  # the sign of the joint friction is the direction of motion
    table = [(0.0307, 0.4543), (0.0856, 0.5619), (0.0076, 0.3458)]
    breakaway, max_torque = (6.3, 5.5, 2.6), (97.6, 186.4, 89.4)  # Table 3.4
    joints = [
        Joint(
            f"link{i + 1}",
            "revolute",
            np.eye(4),
            friction=JointFriction(
                coulomb=(abs(joint_friction[i]), -abs(joint_friction[i])),
                transmission=TransmissionFriction(
                    ((0.0, table[i][1]), (1.0, table[i][1])), breakaway[i], max_torque[i]
                ),
            ),
        )
        for i in range(3)
    ]
    model = RobotModel("puma_thesis", joints)
    columns = thesis_breakdown(basic, apply_friction(model, qd, basic))
    assert np.allclose(columns.basic_dynamic, basic, atol=0)
    assert np.allclose(columns.joint_friction, joint_friction, atol=1e-15)
    assert np.allclose(columns.total_at_joint, [2.9943, -15.9646, -0.6801], atol=1.5e-4)
    assert np.allclose(columns.transmission_friction, [9.8968, -17.9472, 3.0449], atol=2e-3)
    assert np.allclose(columns.total_input, [12.8911, -33.9117, 2.3648], atol=2e-3)
    text = columns.format_table(["Link I", "Link II", "Link III"])
    assert text.splitlines()[2].split() == ["Link", "II", "-15.6364", "-0.3281", "-15.9645", "-17.9471", "-33.9116"]
    assert "transmission" in text.splitlines()[0]


@pytest.mark.parametrize(
    ("transmission", "field", "problem"),
    [
        (TransmissionFriction(((0.0, 0.0), (1.0, 0.9)), 1.0, 10.0), "efficiency", "eta must be in (0, 1]"),
        (TransmissionFriction(((0.0, 0.5), (1.0, 1.2)), 1.0, 10.0), "efficiency", "eta must be in (0, 1]"),
        (TransmissionFriction(((0.5, 0.5), (0.2, 0.9)), 1.0, 10.0), "efficiency", "strictly ascending"),
        (TransmissionFriction((), 1.0, 10.0), "efficiency", "non-empty list"),
        (TransmissionFriction(((0.0, 0.1), (0.1, 0.2), (0.11, 0.9)), 1.0, 10.0), "efficiency", "rises too steeply"),
        (TransmissionFriction(((0.0, 0.9), (1.0, 0.5)), -1.0, 10.0), "breakaway", ">= 0"),
        (TransmissionFriction(((0.0, 0.9), (1.0, 0.5)), 1.0, 0.0), "max_torque", "> 0"),
    ],
)
def test_bad_transmission_parameters(transmission: TransmissionFriction, field: str, problem: str) -> None:
    joint = Joint("j", "revolute", np.eye(4), friction=JointFriction(transmission=transmission))
    with pytest.raises(
        ModelError,
        match=rf"^arm\.yaml: joints\[0\]\.friction\.transmission\.{field}: joint 'j': .*{re.escape(problem)}",
    ):
        friction_parameters(RobotModel("t", [joint], source="arm.yaml"))


def test_bundled_thesis_puma_breakdown_through_the_engine() -> None:
    """puma560_modified (Dhanaraj (1990) data: journal bearings + transmissions on joints 1-3): the engine's
    inverse dynamics with breakdown carries the friction terms, computed from its frictionless
    reactions, and the Table 3.5 columns add up to the total."""
    from robot_dynamics import inverse_dynamics, load_robot, rnea_with_reactions

    model = load_robot("puma560_modified")
    rng = np.random.default_rng(21)
    q, qd, qdd = rng.uniform(-1.5, 1.5, (3, 20, model.dof))
    out = inverse_dynamics(model, q, qd, qdd, friction=True, breakdown=True)
    rigid, force, moment = rnea_with_reactions(model, q, qd, qdd)
    tau_joint = rigid + model.arrays.reflected_motor_inertia * qdd
    terms = apply_friction(model, qd, tau_joint, force, moment)
    assert np.allclose(out.friction_terms.bearing, terms.bearing, rtol=0, atol=1e-10)
    assert np.allclose(out.friction_terms.transmission, terms.transmission, rtol=0, atol=1e-10)
    columns = thesis_breakdown(tau_joint, terms)
    assert np.allclose(columns.total_input, out.total, rtol=0, atol=1e-9)
    assert np.all(np.abs(terms.bearing[:, :3]) > 0) and np.all(terms.bearing[:, 3:] == 0.0)
    assert np.all(np.sign(terms.transmission[:, :3]) == np.sign(qd[:, :3]))
