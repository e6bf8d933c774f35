"""Operation counts: the counting rules, and the generated PUMA/Stanford inverse dynamics against
the thesis's Table 2.10 (sin/cos of the joint angles as inputs, gravity numeric)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import robot_dynamics as rd
from robot_dynamics.symbolic.model import symbolic_robot
from robot_dynamics.symbolic.newton_euler import (
    inverse_dynamics_program,
    regrouped_parameters,
    shift_origins,
    symmetric_about_axis,
)
from robot_dynamics.symbolic.opcount import TABLE_2_10, Ops, count
from robot_dynamics.symbolic.program import Program

a, b, c, x, y = sp.symbols("a b c x y")


@pytest.mark.parametrize(
    ("expr", "ops"),
    [
        (a - b, Ops(add=1)),
        (-a - b, Ops(add=1, neg=1)),
        (-a, Ops(neg=1)),
        (2.5 * x * y, Ops(mul=2)),
        (-2.5 * x + y, Ops(mul=1, add=1)),
        (x**2, Ops(mul=1)),
        (x**3 * y, Ops(mul=3)),
        (x / y, Ops(div=1)),
        (a * (b + c), Ops(mul=1, add=1)),
        (sp.sin(x) * y, Ops(mul=1, trig=1)),
    ],
)
def test_counting_rules(expr: sp.Expr, ops: Ops) -> None:
    assert count(expr) == ops


@pytest.fixture(scope="module")
def puma() -> tuple[rd.RobotModel, Program, Program]:
    model = rd.load_robot("puma560_modified")
    robot = symbolic_robot(model)
    return model, inverse_dynamics_program(robot), inverse_dynamics_program(robot, method="thesis", search=False)


def test_puma_beats_table_2_10(puma: tuple[rd.RobotModel, Program, Program]) -> None:
    model, best, thesis = puma
    ops = best.ops()
    thesis_m, thesis_a = TABLE_2_10["PUMA 6 DOF"]["thesis"]  # type: ignore[misc]
    assert ops.mul <= thesis_m and ops.add <= thesis_a
    assert ops.add < 152  # below every additions column of Table 2.10
    assert ops.div == 0 and ops.other == 0 and ops.trig == 0
    assert best.ops_with_trig().trig <= 2 * model.dof
    # the full customised program is cheaper than Table 2.4 alone (same parameters)
    assert ops.mul + ops.add < thesis.ops().mul + thesis.ops().add
    rng = np.random.default_rng(11)
    for _ in range(10):
        q, qd, qdd = rng.uniform(-3, 3, (3, 6))
        ref = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
        np.testing.assert_allclose(best.evaluate(q, qd, qdd), ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(thesis.evaluate(q, qd, qdd), ref, rtol=0, atol=1e-12)


def test_stanford_beats_table_2_10() -> None:
    model = rd.load_robot("stanford")
    program = inverse_dynamics_program(symbolic_robot(model))
    ops = program.ops()
    thesis_m, thesis_a = TABLE_2_10["Stanford 6 DOF"]["thesis"]  # type: ignore[misc]
    assert ops.mul <= thesis_m and ops.add <= thesis_a
    rng = np.random.default_rng(12)
    for _ in range(10):
        q, qd, qdd = rng.uniform(-3, 3, (3, 6))
        ref = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
        np.testing.assert_allclose(program.evaluate(q, qd, qdd), ref, rtol=0, atol=1e-12)


def test_frame_shifts_and_regrouping_keep_the_torques() -> None:
    model = rd.load_robot("puma560")
    robot = symbolic_robot(model)
    shifted = shift_origins(robot, [0.0, 0.1, -0.2, 0.3, 0.0, 0.05])
    rng = np.random.default_rng(13)
    states = rng.uniform(-2, 2, (5, 3, 6))
    for choices in ([0] * 6, [1, 2, 3, 0, 1, 2]):
        from robot_dynamics.symbolic.newton_euler import generate

        p = generate(shifted, choices=choices)
        for q, qd, qdd in states:
            np.testing.assert_allclose(
                p.evaluate(q, qd, qdd), rd.inverse_dynamics(model, q, qd, qdd, friction=False), atol=1e-12
            )
    # regrouping moves the mass of every link onto its parent (or the fixed base)
    params = regrouped_parameters(robot)
    assert all(m == 0 for m, _, _ in params)
    assert symmetric_about_axis(params[-1], robot.links[-1].axis)
