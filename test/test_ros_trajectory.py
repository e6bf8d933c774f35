"""The ROS-free trajectory sampler (robot_dynamics.trajectory): interpolation rules and validation."""

from __future__ import annotations

import numpy as np
import pytest

from robot_dynamics.errors import StateError
from robot_dynamics.trajectory import JointTrajectorySampler

RNG = np.random.default_rng(7)


def polynomial(coefficients: np.ndarray, t: np.ndarray, derivative: int = 0) -> np.ndarray:
    """Evaluate per-joint polynomials ``sum_j c[j, joint] t^j`` (independent of the sampler's Horner)."""
    c = np.polynomial.polynomial
    return np.stack([c.polyval(t, c.polyder(coefficients[:, j], derivative)) for j in range(coefficients.shape[1])], -1)


@pytest.mark.parametrize(("kind", "degree"), [("linear", 1), ("cubic", 3), ("quintic", 5)])
def test_reproduces_a_polynomial_of_its_degree_exactly(kind: str, degree: int) -> None:
    # One polynomial path through several knots: the Hermite segments must reproduce it everywhere.
    coefficients = RNG.normal(size=(degree + 1, 3))
    knots = np.array([0.0, 0.3, 0.7, 1.6, 2.0])
    q = polynomial(coefficients, knots)
    qd = polynomial(coefficients, knots, 1) if degree >= 3 else None
    qdd = polynomial(coefficients, knots, 2) if degree >= 5 else None
    sampler = JointTrajectorySampler(knots, q, qd, qdd)
    assert sampler.kind == kind
    t = np.linspace(0.0, 2.0, 97)
    s = sampler.sample_many(t)
    np.testing.assert_allclose(s.positions, polynomial(coefficients, t), atol=1e-12)
    if degree >= 3:
        np.testing.assert_allclose(s.velocities, polynomial(coefficients, t, 1), atol=1e-11)
        np.testing.assert_allclose(s.accelerations, polynomial(coefficients, t, 2), atol=1e-10)
    for tk in t[::7]:
        one = sampler.sample(float(tk))
        k = int(np.argmin(np.abs(t - tk)))
        np.testing.assert_allclose(one.positions, s.positions[k], atol=1e-14)
        np.testing.assert_allclose(one.velocities, s.velocities[k], atol=1e-13)
        np.testing.assert_allclose(one.accelerations, s.accelerations[k], atol=1e-12)


def test_given_values_at_the_way_points_and_continuity() -> None:
    times = np.array([0.0, 0.5, 1.25, 2.0])
    q, qd, qdd = RNG.normal(size=(3, 4, 2))
    sampler = JointTrajectorySampler(times, q, qd, qdd)
    for k, tk in enumerate(times):
        s = sampler.sample(float(tk))
        np.testing.assert_array_equal(s.positions, q[k])
        np.testing.assert_array_equal(s.velocities, qd[k])
        np.testing.assert_array_equal(s.accelerations, qdd[k])
        # continuous in q, qd, qdd through every knot (C2 for quintic Hermite)
        for eps in (1e-9,):
            left, right = sampler.sample(float(tk) - eps), sampler.sample(float(tk) + eps)
            if 0 < k < len(times) - 1:
                np.testing.assert_allclose(left.positions, right.positions, atol=1e-7)
                np.testing.assert_allclose(left.velocities, right.velocities, atol=1e-6)
                np.testing.assert_allclose(left.accelerations, right.accelerations, atol=1e-5)
    many = sampler.sample_many(times)
    np.testing.assert_allclose(many.positions, q, atol=1e-13)
    np.testing.assert_allclose(many.velocities, qd, atol=1e-12)
    np.testing.assert_allclose(many.accelerations, qdd, atol=1e-11)


def test_velocity_and_acceleration_are_the_derivatives_of_position() -> None:
    times = np.array([0.0, 0.4, 1.0])
    q, qd = RNG.normal(size=(2, 3, 2))
    sampler = JointTrajectorySampler(times, q, qd)
    t = np.linspace(0.01, 0.99, 50)
    h = 1e-6
    p_plus, p_minus = sampler.sample_many(t + h).positions, sampler.sample_many(t - h).positions
    s = sampler.sample_many(t)
    np.testing.assert_allclose((p_plus - p_minus) / (2 * h), s.velocities, atol=1e-6)
    v_plus, v_minus = sampler.sample_many(t + h).velocities, sampler.sample_many(t - h).velocities
    mask = np.abs(t - 0.4) > 2 * h  # cubic Hermite: q'' jumps at interior knots
    np.testing.assert_allclose(((v_plus - v_minus) / (2 * h))[mask], s.accelerations[mask], atol=1e-5)


def test_linear_segments_have_constant_velocity() -> None:
    sampler = JointTrajectorySampler([0.0, 2.0], [[0.0, 1.0], [4.0, -1.0]])
    s = sampler.sample(0.5)
    np.testing.assert_allclose(s.positions, [1.0, 0.5])
    np.testing.assert_allclose(s.velocities, [2.0, -1.0])
    np.testing.assert_array_equal(s.accelerations, [0.0, 0.0])


def test_outside_the_time_range_holds_the_end_positions() -> None:
    sampler = JointTrajectorySampler([0.5, 1.0], [[1.0], [2.0]], [[0.3], [0.4]])
    before, after = sampler.sample(0.1), sampler.sample(3.0)
    np.testing.assert_array_equal(before.positions, [1.0])
    np.testing.assert_array_equal(after.positions, [2.0])
    for s in (before, after):
        np.testing.assert_array_equal(s.velocities, [0.0])
        np.testing.assert_array_equal(s.accelerations, [0.0])
    many = sampler.sample_many([0.1, 3.0])
    np.testing.assert_array_equal(many.positions, [[1.0], [2.0]])
    np.testing.assert_array_equal(many.velocities, [[0.0], [0.0]])


def test_start_state_is_prepended_when_the_first_point_is_later() -> None:
    sampler = JointTrajectorySampler([1.0, 2.0], [[1.0], [2.0]], [[0.0], [0.0]], [[0.0], [0.0]])
    started = sampler.with_start_state([0.2], [0.1])
    assert started.kind == "quintic"
    np.testing.assert_array_equal(started.times, [0.0, 1.0, 2.0])
    s0 = started.sample(0.0)
    np.testing.assert_array_equal(s0.positions, [0.2])
    np.testing.assert_array_equal(s0.velocities, [0.1])
    np.testing.assert_array_equal(s0.accelerations, [0.0])
    np.testing.assert_array_equal(started.sample(1.0).positions, [1.0])
    at_zero = JointTrajectorySampler([0.0, 1.0], [[0.0], [1.0]])
    assert at_zero.with_start_state([5.0]) is at_zero


def test_efforts_are_linear_between_the_points_exact_at_them_and_held_outside() -> None:
    times = np.array([0.0, 0.4, 1.0, 1.5])
    q, qd, qdd, tau = RNG.uniform(-1, 1, (4, 4, 3))
    sampler = JointTrajectorySampler(times, q, qd, qdd, tau)
    for k, t in enumerate(times):
        np.testing.assert_array_equal(sampler.sample(float(t)).efforts, tau[k])
    t = RNG.uniform(-0.5, 2.0, 200)
    many = sampler.sample_many(t)
    assert many.efforts is not None
    expected = np.stack([np.interp(t, times, tau[:, j]) for j in range(3)], -1)  # numpy's own interpolation
    np.testing.assert_allclose(many.efforts, expected, rtol=0, atol=1e-15)
    for k in range(t.size):
        one = sampler.sample(float(t[k]))
        assert one.efforts is not None
        np.testing.assert_allclose(one.efforts, many.efforts[k], rtol=0, atol=1e-15)
        np.testing.assert_array_equal(one.positions, many.positions[k])  # the state is unchanged by efforts
    assert JointTrajectorySampler(times, q, qd, qdd).sample(0.2).efforts is None
    started = JointTrajectorySampler(times + 1.0, q, qd, qdd, tau).with_start_state(np.zeros(3), np.zeros(3))
    assert started.efforts is not None
    np.testing.assert_array_equal(started.efforts[0], tau[0])  # the start state carries the first point's
    with pytest.raises(StateError, match="efforts: expected shape"):
        JointTrajectorySampler(times, q, qd, qdd, tau[:, :2])


def test_single_point() -> None:
    sampler = JointTrajectorySampler([0.0], [[1.0, 2.0]], [[0.5, 0.5]])
    np.testing.assert_array_equal(sampler.sample(0.0).velocities, [0.5, 0.5])
    np.testing.assert_array_equal(sampler.sample(1.0).positions, [1.0, 2.0])
    np.testing.assert_array_equal(sampler.sample(1.0).velocities, [0.0, 0.0])


@pytest.mark.parametrize(
    ("times", "positions", "velocities", "accelerations", "message"),
    [
        ([], np.zeros((0, 2)), None, None, "trajectory has no points"),
        ([0.0, 1.0, 1.0], np.zeros((3, 2)), None, None, "not strictly increasing: point 2 at 1.0 s after point 1"),
        ([0.0, 2.0, 1.0], np.zeros((3, 2)), None, None, "not strictly increasing: point 2"),
        ([-1.0, 1.0], np.zeros((2, 2)), None, None, "point 0 is negative"),
        ([0.0, np.nan], np.zeros((2, 2)), None, None, "time_from_start is not finite"),
        ([0.0, 1.0], [[0.0, 1.0], [np.inf, 0.0]], None, None, "positions: point 1 joint 0 is not finite"),
        ([0.0, 1.0], np.zeros((3, 2)), None, None, "2 times but 3 position rows"),
        ([0.0, 1.0], np.zeros((2, 2)), np.zeros((2, 3)), None, "velocities: expected shape (2, 2)"),
        ([0.0, 1.0], np.zeros((2, 2)), None, np.zeros((2, 2)), "accelerations but no velocities"),
        ([0.0, 1.0], np.zeros((2, 2)), [[0.0, 0.0], [np.nan, 0.0]], None, "velocities: point 1 joint 0"),
    ],
)
def test_invalid_trajectories_are_rejected_with_the_reason(
    times: list[float], positions: object, velocities: object, accelerations: object, message: str
) -> None:
    with pytest.raises(StateError, match=None) as info:
        JointTrajectorySampler(times, positions, velocities, accelerations)  # type: ignore[arg-type]
    assert message in str(info.value)


def test_sample_time_must_be_finite() -> None:
    sampler = JointTrajectorySampler([0.0, 1.0], [[0.0], [1.0]])
    with pytest.raises(StateError, match="not finite"):
        sampler.sample(float("nan"))
