"""The feed-forward node's torque law (FeedforwardLaw) against direct engine calls, every bundled robot."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from robot_dynamics.dynamics import gravity_torques, inverse_dynamics, rnea_with_reactions
from robot_dynamics.friction import apply_friction
from robot_dynamics.models import bundled_robots, load_robot
from robot_dynamics.ros.feedforward_node import FeedforwardLaw

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("name", bundled_robots())
def test_law_equals_the_engine(name: str) -> None:
    model = load_robot(name)
    law = FeedforwardLaw(model)
    n = model.dof
    for _ in range(20):
        q, qd, qdd, v = RNG.uniform(-1.5, 1.5, (4, n))
        zeros = np.zeros(n)
        for smooth in (True, False):
            # friction at the desired velocity = the engine's inverse dynamics with friction
            np.testing.assert_allclose(
                law.tracking(q, qd, qdd, True, smooth),
                inverse_dynamics(model, q, qd, qdd, friction=True, smooth=smooth),
                rtol=0,
                atol=1e-12,
            )
            # friction at another velocity: frictionless inverse dynamics + the friction terms at v
            tau_joint = inverse_dynamics(model, q, qd, qdd, friction=False)
            _, force, moment = rnea_with_reactions(model, q, qd, qdd)
            friction = apply_friction(model, v, tau_joint, force, moment, smooth=smooth).total
            np.testing.assert_allclose(
                law.tracking(q, qd, qdd, True, smooth, measured_velocity=v), tau_joint + friction, rtol=0, atol=1e-12
            )
            # holding: c(q) + b(v) with the static load
            c = gravity_torques(model, q)
            _, force, moment = rnea_with_reactions(model, q, zeros, zeros)
            b = apply_friction(model, v, c, force, moment, smooth=smooth).total
            np.testing.assert_allclose(law.holding(q, v, True, smooth), c + b, rtol=0, atol=1e-12)
            # at rest the holding torque is the engine's static inverse dynamics
            np.testing.assert_allclose(
                law.holding(q, zeros, True, True),
                inverse_dynamics(model, q, zeros, zeros, friction=True, smooth=True),
                rtol=0,
                atol=1e-12,
            )
        np.testing.assert_allclose(law.holding(q, qd, False, True), gravity_torques(model, q), rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            law.tracking(q, qd, qdd, False, True), inverse_dynamics(model, q, qd, qdd, friction=False), atol=1e-12
        )
