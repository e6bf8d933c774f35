"""The simulator's real-time parts without ROS: the stepping thread and the latency record."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pytest

from robot_dynamics.ros.lockstep import LockstepClock
from robot_dynamics.ros.realtime import LatencyRecord, PeriodicThread

pytest.importorskip("rclpy", reason="robot_dynamics.ros needs rclpy (ROS 2 wheels)")


class FakeTime:
    """A monotonic clock that only moves when the loop sleeps or a tick takes time (plus any lateness a
    busy machine adds to a sleep): the loop's schedule checked exactly, without waiting."""

    def __init__(self, late: float = 0.0) -> None:
        self.now, self.late = 100.0, late
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds + self.late


def run_loop(fake: FakeTime, period: float, durations: list[float]) -> tuple[PeriodicThread, list[float]]:
    """Runs a loop in this thread for ``len(durations)`` ticks, tick k taking ``durations[k]`` s."""
    starts: list[float] = []

    def tick() -> None:
        starts.append(fake.now)
        fake.now += durations[len(starts) - 1]
        if len(starts) == len(durations):
            loop._stopping = True

    loop = PeriodicThread(period, tick, lambda exc: None, "test-loop", clock=fake.clock, sleep=fake.sleep)
    loop._run()
    return loop, starts


def test_ticks_at_absolute_deadlines_and_counts_skipped_ones() -> None:
    period = 0.001
    durations = [0.0002] * 5 + [0.0105] + [0.0002] * 5  # the 6th tick takes 10.5 periods
    fake = FakeTime()
    loop, starts = run_loop(fake, period, durations)
    t0 = 100.0
    # absolute deadlines: the tick's own duration does not shift the next start
    np.testing.assert_allclose(starts[:6], t0 + period * np.arange(1, 7), rtol=0, atol=1e-12)
    # the slow tick (started at t0 + 6 ms, ended at 16.5 ms) missed the deadlines at 7..16 ms: those at
    # 7..15 ms are skipped and counted, not run back to back; the one at 16 ms runs at once (half a period
    # late), then the loop is back on the grid
    assert loop.overruns == 9 and loop.ticks == len(durations)
    np.testing.assert_allclose(starts[6], t0 + 0.0165, rtol=0, atol=1e-12)
    np.testing.assert_allclose(starts[7:], t0 + period * np.arange(17, 21), rtol=0, atol=1e-12)
    assert all(0.0 < d <= period + 1e-12 for d in fake.sleeps), fake.sleeps  # a stop is seen within a period


def test_a_busy_machine_that_wakes_the_loop_late_costs_ticks_not_bursts() -> None:
    period = 0.001
    fake = FakeTime(late=0.0025)  # every sleep returns 2.5 periods late
    loop, starts = run_loop(fake, period, [0.0001] * 20)
    gaps = np.diff(starts)
    # woken 2.5 periods late, the loop runs the deadline it was due for at once and skips the older one:
    # never two short gaps in a row (no catch-up burst)
    short = gaps < period
    assert short.any() and not np.any(short[1:] & short[:-1]), gaps
    # every deadline up to the last tick is either ticked or counted as skipped
    assert loop.ticks + loop.overruns == int((starts[-1] - 100.0) / period + 1e-9)


def test_the_thread_ticks_and_never_runs_ahead_of_its_deadlines() -> None:
    """The real thread on the real clock: how often it ticks depends on the machine's load (the
    benchmark measures the rate), but it never ticks ahead of its deadlines."""
    times: list[float] = []
    loop = PeriodicThread(0.001, lambda: times.append(time.monotonic()), lambda exc: None, "test-loop")
    started = time.monotonic()
    loop.start()
    wait_for(lambda: len(times) >= 50, "50 ticks")
    assert loop.stop() and loop.ticks == len(times)
    assert loop.ticks + loop.overruns <= (times[-1] - started) / 0.001 + 1
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
    wait_for(lambda: count[0] > 10, "10 ticks")
    assert loop.stop()
    assert [str(e) for e in errors] == ["step failed"] and loop.errors == 1


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


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


def test_lockstep_pace_caps_simulated_time_by_the_wall_clock_without_bursts() -> None:
    """``lockstep_max_speed``: the wait before each step so that simulated time runs at most that many
    times as fast as the wall clock; a loop that fell more than 0.1 s behind starts afresh."""
    wall = [50.0]
    clock = LockstepClock(5_000_000, clock=lambda: wall[0])  # 200 Hz steps

    def step(delay: float, busy: float = 0.0) -> None:
        wall[0] += delay + busy  # the node waits the pace's delay, then the step itself takes `busy`
        clock.step(True)

    assert clock.pace(0.0) == 0.0  # no limit
    for _ in range(10):  # half speed: 5 ms simulated per 10 ms of wall time
        delay = clock.pace(0.5)
        step(delay)
    assert delay == pytest.approx(0.010)
    assert wall[0] == pytest.approx(50.0 + 10 * 0.010)
    # a step that takes 50 ms leaves the loop 40 ms behind its pace: it catches up at once, step after step
    # (4 of 10 ms wall each, the last may land exactly on the pace), then waits again
    step(clock.pace(0.5), busy=0.050)
    catching_up = 0
    while (delay := clock.pace(0.5)) < 0.005:
        assert delay <= 1e-9
        catching_up += 1
        step(delay)
    assert catching_up in (4, 5) and delay == pytest.approx(0.010)
    step(delay)
    # fallen 0.5 s behind: counted afresh from now, no burst of 50 catch-up steps
    step(clock.pace(0.5), busy=0.5)
    assert clock.pace(0.5) == 0.0  # the pace counts from here: this step at once, ...
    step(0.0)
    assert clock.pace(0.5) == pytest.approx(0.020)  # ... the next when two periods' pace have passed
    # and back to no limit
    assert clock.pace(0.0) == 0.0 and clock._pace is None


def test_lockstep_observers_join_hold_the_step_and_leave_after_a_miss() -> None:
    """An observer is waited for once it has answered a state; one that misses a step is counted and no
    longer waited for until it answers again; a reset's new stamp counts nothing."""
    wall = [10.0]
    clock = LockstepClock(1_000_000, clock=lambda: wall[0], observers=("contact",))
    t0 = clock.now_ns
    clock.published()
    assert clock.answers(t0) and clock.ready  # not joined yet: the command alone steps
    clock.step(True)
    clock.published()
    clock.observe("contact", t0)  # an answer to an older state: joins, does not answer this one
    assert clock.joined["contact"] and "contact" not in clock.observed
    assert clock.answers(None) and not clock.ready  # the command has come, the observer not yet
    clock.observe("contact", clock.now_ns)
    assert clock.ready
    clock.step(True)
    clock.published()
    clock.observe("contact", clock.now_ns)  # before the command this time
    assert not clock.ready and clock.answers(clock.now_ns) and clock.ready
    clock.step(True)
    clock.published()
    assert clock.answers(clock.now_ns) and not clock.ready
    wall[0] += 2.0
    assert clock.overdue(1.0)
    clock.step(clock.answered)  # the simulator steps without the observer: counted, it leaves
    assert clock.observer_missed == {"contact": 1} and not clock.joined["contact"] and clock.missed == 0
    clock.published()
    assert clock.answers(clock.now_ns) and clock.ready  # no longer waited for
    clock.step(True)
    clock.published()
    clock.observe("contact", clock.now_ns)  # back: waited for again
    clock.restamp()  # a reset: a new stamp, nothing counted, every answer awaited afresh
    clock.published()
    assert clock.observer_missed == {"contact": 1} and clock.joined["contact"]
    assert clock.answers(clock.now_ns) and not clock.ready
    values = dict(clock.diagnostic_values())
    assert values["observer_missed[contact]"] == "1" and values["observer_joined[contact]"] == "true"
    assert LockstepClock(1_000_000).diagnostic_values()[-1][0] == "late_commands"  # no observers: as before
