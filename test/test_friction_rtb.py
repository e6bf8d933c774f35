"""PUMA 560 with motor data vs Robotics Toolbox (test-only reference): ``friction(qd)`` and
``rne(q, qd, qdd)`` with friction and motor inertia, at many random states, to 1e-9."""

from __future__ import annotations

import numpy as np
import pytest
import roboticstoolbox as rtb

from robot_dynamics.dynamics import inverse_dynamics, rnea_with_reactions
from robot_dynamics.friction import apply_friction, friction_torques
from robot_dynamics.model import DHRow, DHTable, Inertial, Motor, RobotModel, from_dh

# PUMA 560 standard DH (Corke & Armstrong-Hélouvry 1994)
PUMA = [
    # d, a, alpha, m, r, I, Jm, G, B, Tc
    (0.67183, 0.0, np.pi / 2, 0.0, [0, 0, 0], [0, 0.35, 0, 0, 0, 0], 200e-6, -62.6111, 1.48e-3, (0.395, -0.435)),
    (
        0.0,
        0.4318,
        0.0,
        17.4,
        [-0.3638, 0.006, 0.2275],
        [0.13, 0.524, 0.539, 0, 0, 0],
        200e-6,
        107.815,
        0.817e-3,
        (0.126, -0.071),
    ),
    (
        0.15005,
        0.0203,
        -np.pi / 2,
        4.8,
        [-0.0203, -0.0141, 0.070],
        [0.066, 0.086, 0.0125, 0, 0, 0],
        200e-6,
        -53.7063,
        1.38e-3,
        (0.132, -0.105),
    ),
    (
        0.4318,
        0.0,
        np.pi / 2,
        0.82,
        [0, 0.019, 0],
        [1.8e-3, 1.3e-3, 1.8e-3, 0, 0, 0],
        33e-6,
        76.0364,
        71.2e-6,
        (11.2e-3, -16.9e-3),
    ),
    (
        0.0,
        0.0,
        -np.pi / 2,
        0.34,
        [0, 0, 0],
        [0.3e-3, 0.4e-3, 0.3e-3, 0, 0, 0],
        33e-6,
        71.923,
        82.6e-6,
        (9.26e-3, -14.5e-3),
    ),
    (
        0.0,
        0.0,
        0.0,
        0.09,
        [0, 0, 0.032],
        [0.15e-3, 0.15e-3, 0.04e-3, 0, 0, 0],
        33e-6,
        76.686,
        36.7e-6,
        (3.96e-3, -10.5e-3),
    ),
]


@pytest.fixture(scope="module")
def puma() -> RobotModel:
    table = DHTable("standard", tuple(DHRow("revolute", a, alpha, d, 0.0) for d, a, alpha, *_ in PUMA))
    links = [Inertial.from_components(m, r, *inertia) for _, _, _, m, r, inertia, *_ in PUMA]
    motors = [Motor(jm, g, b, tc) for *_, jm, g, b, tc in PUMA]
    return from_dh("puma560", table, links, motors=motors)


@pytest.fixture(scope="module")
def rtb_puma() -> object:
    return rtb.models.DH.Puma560()


@pytest.fixture(scope="module")
def states() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2024)
    q = rng.uniform(-np.pi, np.pi, (25, 6))
    qd = rng.uniform(-3, 3, (25, 6))
    qd[::5, ::2] = 0.0  # joints at rest: Coulomb is 0 there in both
    qdd = rng.uniform(-5, 5, (25, 6))
    return q, qd, qdd


def test_parameters_are_the_toolbox_ones(rtb_puma: object) -> None:
    for link, (d, a, alpha, m, r, _inertia, jm, g, b, tc) in zip(rtb_puma.links, PUMA, strict=True):  # type: ignore[attr-defined]
        assert (link.d, link.a, link.alpha, link.m, link.Jm, link.G, link.B) == pytest.approx(
            (d, a, alpha, m, jm, g, b)
        )
        assert np.allclose(link.Tc, tc) and np.allclose(link.r, r)


def test_friction_is_minus_toolbox_friction(puma: RobotModel, rtb_puma: object, states: tuple) -> None:
    _, qd, _ = states
    ours = friction_torques(puma, qd)
    for k in range(len(qd)):
        theirs = rtb_puma.friction(qd[k])  # type: ignore[attr-defined]
        assert np.max(np.abs(ours[k] + theirs)) < 1e-12
    assert ours.shape == qd.shape


def test_inverse_dynamics_with_friction_and_motor_inertia_matches_rne(
    puma: RobotModel, rtb_puma: object, states: tuple
) -> None:
    q, qd, qdd = states
    ours = inverse_dynamics(puma, q, qd, qdd, friction=True)
    worst = 0.0
    for k in range(len(q)):
        theirs = rtb_puma.rne(q[k], qd[k], qdd[k])  # type: ignore[attr-defined]
        worst = max(worst, float(np.max(np.abs(ours[k] - theirs))))
        single = inverse_dynamics(puma, q[k], qd[k], qdd[k], friction=True)
        assert np.max(np.abs(single - theirs)) < 1e-9
    assert worst < 1e-9
    # and the friction really is part of it: without friction the difference is -rtb.friction(qd)
    frictionless = inverse_dynamics(puma, q, qd, qdd, friction=False)
    assert np.allclose(ours - frictionless, friction_torques(puma, qd), rtol=0, atol=1e-9)


def test_apply_friction_on_engine_reactions_reproduces_rne(puma: RobotModel, rtb_puma: object, states: tuple) -> None:
    q, qd, qdd = states
    rigid, force, moment = rnea_with_reactions(puma, q, qd, qdd)
    tau_joint = rigid + puma.arrays.reflected_motor_inertia * qdd
    total = tau_joint + apply_friction(puma, qd, tau_joint, force, moment).total
    theirs = np.array([rtb_puma.rne(q[k], qd[k], qdd[k]) for k in range(len(q))])  # type: ignore[attr-defined]
    assert np.max(np.abs(total - theirs)) < 1e-9


def test_bundled_puma560_matches_rne(rtb_puma: object, states: tuple) -> None:
    from robot_dynamics import load_robot

    q, qd, qdd = states
    model = load_robot("puma560")
    ours = inverse_dynamics(model, q, qd, qdd, friction=True)
    theirs = np.array([rtb_puma.rne(q[k], qd[k], qdd[k]) for k in range(len(q))])  # type: ignore[attr-defined]
    assert np.max(np.abs(ours - theirs)) < 1e-9
    assert np.max(np.abs(friction_torques(model, qd) + np.array([rtb_puma.friction(v) for v in qd]))) < 1e-12  # type: ignore[attr-defined]
