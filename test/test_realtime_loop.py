"""The simulator's real-time parts without ROS: the stepping thread and the latency record."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from robot_dynamics.ros.realtime import LatencyRecord, PeriodicThread

pytest.importorskip("rclpy", reason="robot_dynamics.ros needs rclpy (ROS 2 wheels)")


def test_ticks_at_absolute_deadlines_and_counts_skipped_ones() -> None:
    times: list[float] = []
    slow = threading.Event()

    def tick() -> None:
        times.append(time.monotonic())
        if slow.is_set():
            slow.clear()
            time.sleep(0.0105)  # 10.5 periods: the next deadlines are skipped, not run back to back

    loop = PeriodicThread(0.001, tick, lambda exc: None, "test-loop")
    loop.start()
    time.sleep(0.3)
    slow.set()
    time.sleep(0.2)
    assert loop.stop() and loop.ticks == len(times)
    gaps = np.diff(times)
    assert 350 < loop.ticks < 510, loop.ticks  # ~490 at 1 kHz, less what a busy machine skips
    assert loop.overruns >= 9  # the 10 deadlines the slow tick covered (and any the machine missed)
    slow_at = int(np.argmax(gaps))
    assert gaps[slow_at] > 0.010
    assert np.sum(gaps[slow_at + 1 : slow_at + 5] < 0.0002) <= 1  # no burst of catch-up ticks after it
    assert loop.scheduler == "normal"


def test_a_failing_tick_is_reported_and_the_loop_goes_on() -> None:
    errors: list[Exception] = []
    count = [0]

    def tick() -> None:
        count[0] += 1
        if count[0] == 3:
            raise ValueError("step failed")

    loop = PeriodicThread(0.002, tick, errors.append, "test-loop")
    loop.start()
    time.sleep(0.1)
    assert loop.stop()
    assert [str(e) for e in errors] == ["step failed"] and loop.errors == 1 and count[0] > 10


def test_priority_is_fifo_or_a_warning_and_bad_values_are_refused() -> None:
    warnings: list[str] = []
    loop = PeriodicThread(0.01, lambda: None, lambda exc: None, "test-loop", priority=1, warn=warnings.append)
    loop.start()
    time.sleep(0.05)
    assert loop.stop()
    if loop.scheduler == "SCHED_FIFO 1":
        assert not warnings
    else:  # no right to SCHED_FIFO here: the reason, and the normal scheduler
        assert loop.scheduler.startswith("normal (SCHED_FIFO 1 refused: ") and len(warnings) == 1
    for period, priority, message in ((0.0, 0, "period must be positive"), (0.001, 100, "priority must be 0")):
        with pytest.raises(ValueError, match=message):
            PeriodicThread(period, lambda: None, lambda exc: None, "bad", priority)


def test_latency_record_quantiles_clear_and_wrap() -> None:
    record = LatencyRecord(capacity=100)
    assert dict(record.diagnostic_values("x")) == {"x_p50_ms": "", "x_p99_ms": "", "x_max_ms": "", "x_count": "0"}
    for ns in range(1, 201):  # 1..200 us; the newest 100 kept: 101..200 us
        record.add(ns * 1000)
    values = dict(record.diagnostic_values("x"))
    assert values == {"x_p50_ms": "0.150", "x_p99_ms": "0.199", "x_max_ms": "0.200", "x_count": "200"}
    record.clear()
    record.add(2_000_000)
    assert dict(record.diagnostic_values("x"))["x_max_ms"] == "2.000"
