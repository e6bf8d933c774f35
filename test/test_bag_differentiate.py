"""Savitzky–Golay derivatives on non-uniform stamps: SciPy on uniform stamps, per-sample polyfit otherwise."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import savgol_filter

from robot_dynamics import load_robot
from robot_dynamics.bag import BagError, JointStateSeries
from robot_dynamics.bag import evaluate as ev_mod
from robot_dynamics.bag.differentiate import MAX_WINDOW, SavitzkyGolay, joint_accelerations, min_window, savgol
from robot_dynamics.errors import StateError

RNG = np.random.default_rng(3)
MODEL = load_robot("puma560")


@pytest.mark.parametrize(("window", "polyorder"), [(5, 2), (21, 3), (31, 4), (11, 5)])
def test_uniform_stamps_equal_scipy_savgol(window, polyorder):
    dt = 0.004
    t = 12.5 + np.arange(300) * dt
    y = RNG.normal(size=(300, 4))
    outs = savgol(t, y, tuple(range(min(polyorder, 2) + 1)), SavitzkyGolay(window, polyorder))
    for deriv, ours in enumerate(outs):
        ref = savgol_filter(y, window, polyorder, deriv=deriv, delta=dt, axis=0, mode="interp")
        assert np.max(np.abs(ours - ref)) <= 1e-9 * np.max(np.abs(ref))


def test_nonuniform_stamps_equal_local_least_squares_fit():
    """Independent reference: numpy.polyfit on each sample's window, evaluated at the sample."""
    t = np.cumsum(RNG.uniform(0.002, 0.009, 120))
    y = np.sin(3.0 * t) + 0.05 * RNG.normal(size=t.size)
    f = SavitzkyGolay(9, 3)
    value, d1, d2 = savgol(t, y, (0, 1, 2), f)
    for i in range(t.size):
        lo = min(max(i - 4, 0), t.size - 9)
        p = np.poly1d(np.polyfit(t[lo : lo + 9] - t[i], y[lo : lo + 9], 3))
        assert value[i] == pytest.approx(p(0.0), abs=1e-9)
        assert d1[i] == pytest.approx(p.deriv()(0.0), rel=1e-7, abs=1e-7)
        assert d2[i] == pytest.approx(p.deriv(2)(0.0), rel=1e-7, abs=1e-5)


def test_polynomials_are_differentiated_exactly_on_jittered_stamps():
    t = 100.0 + np.cumsum(RNG.uniform(0.001, 0.01, 500))
    coeffs = RNG.normal(size=(4, 3))  # cubic per column, in (t - 100)
    s = t - 100.0
    y = sum(coeffs[k] * s[:, None] ** k for k in range(4))
    dy = sum(k * coeffs[k] * s[:, None] ** (k - 1) for k in range(1, 4))
    ddy = sum(k * (k - 1) * coeffs[k] * s[:, None] ** (k - 2) for k in range(2, 4))
    _, d1, d2 = savgol(t, y, (0, 1, 2), SavitzkyGolay(15, 3))
    assert np.max(np.abs(d1 - dy)) < 1e-9 * np.max(np.abs(dy))
    assert np.max(np.abs(d2 - ddy)) < 1e-8 * np.max(np.abs(ddy))


def test_joint_accelerations_from_velocity_and_position():
    t = np.cumsum(RNG.uniform(0.004, 0.006, 800))
    w = np.array([2.0, 5.0])
    q = np.sin(w * t[:, None])
    qd = w * np.cos(w * t[:, None])
    qdd = -(w**2) * q
    a_vel = joint_accelerations(t, q, qd)
    a_pos = joint_accelerations(t, q, qd, source="position")
    inner = slice(20, -20)
    assert np.max(np.abs(a_vel - qdd)[inner]) < 1e-3 * 25
    assert np.max(np.abs(a_pos - qdd)[inner]) < 1e-2 * 25  # q'' of a cubic fit: a larger smoothing bias
    noisy = qd + 1e-3 * RNG.normal(size=qd.shape)
    assert np.sqrt(np.mean((joint_accelerations(t, q, noisy) - qdd)[inner] ** 2)) < 0.05


def test_window_from_seconds():
    t = np.arange(100) * 0.005
    assert SavitzkyGolay.for_times(t, 0.1, 3) == SavitzkyGolay(21, 3)
    assert SavitzkyGolay.for_times(t, 0.001, 3).window == 5  # at least polyorder + 1, odd
    assert SavitzkyGolay.for_times(t, 0.05, 2).window == 11


def test_errors_name_the_problem():
    t = np.arange(30) * 0.01
    y = np.zeros(30)
    with pytest.raises(StateError, match="window must be odd and larger than polyorder 3, got 20"):
        SavitzkyGolay(20, 3)
    with pytest.raises(StateError, match="window must be odd and larger than polyorder 3, got 3"):
        SavitzkyGolay(3, 3)
    bad = t.copy()
    bad[7] = bad[6]
    with pytest.raises(StateError, match=r"must increase strictly: sample 7 at 0\.06 s follows 0\.06 s"):
        savgol(bad, y, (1,), SavitzkyGolay(5, 2))
    with pytest.raises(StateError, match="need at least 31 samples for a 31-sample window, got 30"):
        savgol(t, y, (1,), SavitzkyGolay(31, 2))
    with pytest.raises(StateError, match="not all finite"):
        savgol(t, np.where(t > 0.1, np.nan, 0.0), (1,), SavitzkyGolay(5, 2))
    with pytest.raises(StateError, match=r"derivative orders \(3,\) must lie in 0..2"):
        savgol(t, y, (3,), SavitzkyGolay(5, 2))
    with pytest.raises(StateError, match="30 sample times but values of shape"):
        savgol(t, np.zeros(29), (1,))
    with pytest.raises(StateError, match="carry no velocity"):
        joint_accelerations(t, y[:, None], None)
    with pytest.raises(StateError, match="unknown acceleration source 'jerk'"):
        joint_accelerations(t, y[:, None], y[:, None], source="jerk")


# ------------------------------------------------------------------------------------------------
# low sample rates
# ------------------------------------------------------------------------------------------------
def test_min_window_is_odd_and_fits_the_polynomial():
    assert [min_window(p) for p in range(7)] == [3, 3, 3, 5, 5, 7, 7]
    for p in range(7):
        SavitzkyGolay(min_window(p), p)  # accepted


@pytest.mark.parametrize(("rate", "window"), [(1000.0, 101), (200.0, 21), (100.0, 11), (30.0, 5), (10.0, 5), (1.0, 5)])
def test_window_adapts_to_the_sample_rate(rate, window):
    t = np.arange(200) / rate + RNG.uniform(-0.05, 0.05, 200) / rate
    assert SavitzkyGolay.for_times(t, 0.1, 3).window == window


def test_30_hz_stream_is_differentiated_exactly():
    """A 30 Hz driver: the 0.1 s default window is 3 samples, too few for a cubic; it grows to 5."""
    t = 7.0 + np.cumsum(RNG.uniform(0.9, 1.1, 90)) / 30.0
    coeffs = RNG.normal(size=(4, 2))
    s = t - 7.0
    qd = sum(coeffs[k] * s[:, None] ** k for k in range(4))
    qdd = sum(k * coeffs[k] * s[:, None] ** (k - 1) for k in range(1, 4))
    filt = SavitzkyGolay.for_times(t)
    assert filt == SavitzkyGolay(5, 3)
    (d1,) = savgol(t, qd, (1,), filt)
    assert np.max(np.abs(d1 - qdd)) < 1e-9 * np.max(np.abs(qdd))
    assert np.max(np.abs(joint_accelerations(t, qd, qd) - qdd)) < 1e-9 * np.max(np.abs(qdd))


def test_degenerate_times_still_give_a_valid_window():
    assert SavitzkyGolay.for_times([0.0, 0.0, 0.0], 0.1, 3).window == 5  # no positive step: the minimum
    assert SavitzkyGolay.for_times([0.0, 1e-300], 1.0, 2).window == MAX_WINDOW  # capped
    assert SavitzkyGolay.for_times([0.0, 5e-324], 1e10, 2).window == MAX_WINDOW  # window / period overflows
    with pytest.raises(StateError, match="window must be positive, got nan s"):
        SavitzkyGolay.for_times([0.0, 1.0], float("nan"), 3)
    with pytest.raises(StateError, match="polyorder must be >= 0, got -1"):
        SavitzkyGolay.for_times([0.0, 1.0], 0.1, -1)
    with pytest.raises(StateError, match="need at least 2 samples to differentiate, got 1"):
        SavitzkyGolay.for_times([0.0], 0.1, 3)


def series_at(rate: float, count: int, topic: str = "/joint_states") -> JointStateSeries:
    ns = (np.arange(count) * 1e9 / rate).astype(np.int64)
    q = np.sin(np.linspace(0.0, 1.0, count))[:, None] * np.ones((1, 6))
    return JointStateSeries(topic, tuple(MODEL.joint_names), ns + 1000, ns, q, np.cos(q), None)


def test_too_few_messages_is_a_bag_error_naming_topic_and_counts():
    for count in (1, 2, 4):
        with pytest.raises(
            BagError, match=rf"/arm/joint_states: {count} messages, too few to differentiate: .* at least 5 samples"
        ):
            ev_mod.evaluate(MODEL, series_at(30.0, count, "/arm/joint_states"))
    with pytest.raises(
        BagError,
        match=r"/joint_states: 12 messages, fewer than the 31-sample differentiation window \(1 s at the median "
        r"sample period 33\.3 ms\); choose a window of at most 0\.367 s",
    ):
        ev_mod.evaluate(MODEL, series_at(30.0, 12), window_s=1.0)
    ev = ev_mod.evaluate(MODEL, series_at(30.0, 5))  # the minimum is enough
    assert ev.filter == SavitzkyGolay(5, 3) and ev.count == 5
    assert ev.summary()["acceleration"]["window_samples"] == 5
