"""Reversal-aware collision thresholds: the weights, their bound, the detector one sample at a time, the
calibration.

A joint near a velocity reversal (slow, or changing sign) may stick: its friction is then anything in
``[-F_c, F_c]`` while the model's passes through 0, and that mismatch reaches the residual through the
observer's first-order filter. The weight ``z`` (the near-reversal indicator through the same filter)
bounds its share: ``|filtered mismatch| <= Δ z`` whenever ``|mismatch| <= Δ`` near reversals and 0
elsewhere — checked here on random mismatches and irregular sample times, with the node's detector
(one sample at a time, the observer's own decay factors) against the batch.
"""

from __future__ import annotations

import math
from dataclasses import astuple

import numpy as np
import pytest

from robot_dynamics.contact import (
    FAR,
    REVERSAL_FLOOR,
    CollisionDetector,
    calibrate_reversal,
    check_reversal,
    collision_states,
    near_reversal,
    reversal_weights,
    transitions,
)
from robot_dynamics.dynamics.momentum_observer import MomentumObserver, decay, observe, scan_recurrence
from robot_dynamics.errors import StateError
from robot_dynamics.models import load_robot

GAIN = np.array([50.0, 30.0, 80.0])


def swinging(count: int = 3000, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Irregular sample times and velocities that reverse, rest and run (3 joints)."""
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.uniform(0.5e-3, 3e-3, count))
    qd = np.stack([np.sin(2.0 * t), 0.3 * np.sin(0.7 * t + 1.0), np.where(t < t[count // 2], 0.0, np.cos(5.0 * t))], 1)
    return t - t[0], qd


def test_the_weights_bound_a_mismatch_near_reversals_through_the_observer_filter() -> None:
    t, qd = swinging()
    band = np.array([0.05, 0.02, 0.1])
    z = reversal_weights(t, qd, GAIN, band)
    near = near_reversal(qd, band)
    assert near[:, 2].sum() >= t.size // 2 - 1  # the resting joint is near a reversal the whole first half
    assert 0.0 < near[:, 0].mean() < 0.2 and np.all((z >= 0.0) & (z <= 1.0 + 1e-12))
    a, _ = decay(GAIN, np.diff(t)[:, None])
    rng = np.random.default_rng(1)
    for _ in range(20):  # any mismatch with |m| <= 1 near reversals, 0 elsewhere: its share of r is <= z
        m = np.where(near, rng.uniform(-1.0, 1.0, near.shape), 0.0)
        share = scan_recurrence(a, (1.0 - a) * m, np.zeros(3))
        assert np.all(np.abs(share) <= z + 1e-12)
    worst = scan_recurrence(a, (1.0 - a) * near, np.zeros(3))  # the mismatch at its bound: the bound is tight
    np.testing.assert_allclose(worst, z, rtol=0, atol=1e-15)
    assert not reversal_weights(t, qd, GAIN, 0.0).any()  # no band: no weights


def test_the_detector_one_sample_at_a_time_equals_the_batch() -> None:
    t, qd = swinging()
    rng = np.random.default_rng(2)
    r = np.cumsum(rng.normal(size=qd.shape), axis=0) * 0.05 + 0.8 * np.abs(qd < 0.05)
    base, extra, band = np.array([0.5, 0.4, 0.6]), np.array([1.0, 0.0, 2.0]), np.array([0.05, 0.02, 0.1])
    detector = CollisionDetector(base, 0.5, extra, band)
    a, _ = decay(GAIN, np.diff(t)[:, None])
    stepwise, weights = [], []
    for k in range(t.size):
        stepwise += detector.update(r[k], k, float(t[k]), qd[k], None if k == 0 else a[k - 1])
        weights.append(detector.weights)
    z = reversal_weights(t, qd, GAIN, band)
    np.testing.assert_allclose(np.array(weights), z, rtol=0, atol=1e-12)
    batch = transitions(t, r, base, 0.5, extra, z)
    assert [e[:5] for e in map(astuple, stepwise)] == [e[:5] for e in map(astuple, batch)]  # levels to rounding
    assert sum(e.raised for e in batch) > 5
    states = collision_states(r, base, 0.5, extra, z)
    for e in batch:  # the level in force at the sample, its clear level half of it
        assert e.threshold == pytest.approx(base[e.joint] + extra[e.joint] * z[e.sample, e.joint], abs=1e-12)
        assert (e.magnitude > e.threshold) if e.raised else (e.magnitude < e.clear_level)
        assert states[e.sample, e.joint] == e.raised
    assert any(e.threshold > base[e.joint] + 0.1 for e in batch)  # some events at a raised level
    np.testing.assert_allclose(detector.current_thresholds(), base + extra * z[-1], atol=1e-12)
    detector.restart()
    assert not detector.weights.any() and detector.in_collision == bool(states[-1].any())


def test_the_node_detector_takes_the_observers_decay() -> None:
    puma = load_robot("puma560")
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.uniform(0.8e-3, 1.2e-3, 400))
    q = 0.1 * np.sin(np.outer(t, np.arange(1, 7)))
    qd = 0.1 * np.arange(1, 7) * np.cos(np.outer(t, np.arange(1, 7)))
    tau = rng.normal(size=q.shape)
    observer = MomentumObserver(puma, 50.0)
    detector = CollisionDetector(np.ones(6), 0.5, 2.0, 0.05)
    for k in range(t.size):
        observer.update(float(t[k]), q[k], qd[k], tau[k])
        detector.update(observer.r, k, float(t[k]), qd[k], observer.decay)
    expected = reversal_weights(t, qd, 50.0, 0.05)[-1]
    np.testing.assert_allclose(detector.weights, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(observe(puma, t, q, qd, tau, 50.0).r[-1], observer.r, atol=1e-12)
    observer.reset()
    assert observer.decay is None


def test_calibration_keeps_the_recording_below_its_thresholds_over_the_margin() -> None:
    t, qd = swinging()
    z = reversal_weights(t, qd, GAIN, 0.05)
    rng = np.random.default_rng(4)
    far_error = rng.uniform(-0.1, 0.1, qd.shape)  # the model's error away from reversals
    r = far_error + 3.0 * z * rng.uniform(-1.0, 1.0, qd.shape)  # and the friction mismatch near them
    base, extra = calibrate_reversal(r, z, 2.0)
    assert np.all(2.0 * np.abs(r) <= base + extra * z + 1e-12)
    e = np.max(np.where(z <= FAR, np.abs(r), 0.0), axis=0)
    np.testing.assert_allclose(base, 2.0 * np.maximum(e, REVERSAL_FLOOR * extra / 2.0))
    assert np.all(extra[:2] > 2.0) and np.all(extra <= 2.0 * 3.0 / (1.0 - 0.1 / 3.0))
    assert not collision_states(r, base, 0.5, extra, z).any()
    still = np.ones((50, 2))  # a joint that never left a reversal: one threshold, no allowance
    b, x = calibrate_reversal(np.full((50, 2), 0.3), still, 1.5)
    np.testing.assert_allclose(b, [0.45, 0.45]) and np.testing.assert_array_equal(x, [0.0, 0.0])


def test_bad_reversal_settings_are_refused_with_the_reason() -> None:
    np.testing.assert_array_equal(check_reversal(0.05, 3, "reversal_velocity"), [0.05] * 3)
    for bad, reason in (([1.0, 2.0], "expected 1 or 3"), ([1.0, -2.0, 1.0], ">= 0"), ([1.0, math.nan, 1.0], "finite")):
        with pytest.raises(StateError, match=reason):
            check_reversal(bad, 3, "reversal_thresholds")
    with pytest.raises(StateError, match="reversal_velocity: every value"):
        CollisionDetector([1.0, 1.0], 0.5, 0.0, [-0.1, 0.1])
    detector = CollisionDetector([1.0, 1.0], 0.5, 1.0, 0.05)
    with pytest.raises(StateError, match="velocities"):
        detector.update(np.zeros(2))
    with pytest.raises(StateError, match="reversal_thresholds: expected 1 or 2"):
        detector.configure(reversal_thresholds=[1.0, 2.0, 3.0])
    assert detector.reversal_thresholds.tolist() == [1.0, 1.0]
    with pytest.raises(StateError, match="weights: shape"):
        calibrate_reversal(np.zeros((4, 2)), np.zeros((3, 2)))
