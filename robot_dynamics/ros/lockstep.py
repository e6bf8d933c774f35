"""The simulator's lock-step time: which command answers which state, and when a step is missed.

The simulator publishes ``/clock`` = t_k and the state stamped t_k, then waits for its answer:

* a ``joint_commands`` JointState whose ``header.stamp`` is t_k (or zero: unstamped) answers it;
  one with another stamp answers some other state: it is *late*, counted and not applied;
* a ``commands`` Float64MultiArray (no stamp) answers the state published last, if it is still
  unanswered; otherwise it is late;
* no answer within ``timeout`` wall seconds: the step is *missed* (the previous command is held).

*Observers* (nodes that read the states but do not command, such as the contact node whose collision
events the controller reacts to) can hold the step too: each answers a state by publishing something
stamped with it, and once an observer has answered any state it has *joined*: every later step waits for
its answer as well as the command's. An observer that has not answered within ``timeout`` is stepped
without (counted per observer) and leaves until its next answer, so a node that stops never slows the loop
by more than one timeout. Without observers the protocol is the one above.

Then the plant steps one period and t_{k+1} = t_k + period, in integer nanoseconds starting at 1 s
(ROS reads a zero time as "unset"), so the clock advances exactly one period per step.
"""

from __future__ import annotations

import time
from collections.abc import Callable

EPOCH_NS = 1_000_000_000


class LockstepClock:
    """Simulated time and the answer bookkeeping of the lock-step protocol (see the module docstring).
    ``clock``: the monotonic wall clock, seconds (a test gives its own)."""

    def __init__(
        self, period_ns: int, clock: Callable[[], float] = time.monotonic, observers: tuple[str, ...] = ()
    ) -> None:
        self.period_ns = int(period_ns)
        self._clock = clock
        self.now_ns = EPOCH_NS
        self.awaiting = False  # the state at now_ns is published and not yet answered
        self.published_at = 0.0  # wall time of that publication (monotonic), 0 = nothing published yet
        self.missed = 0
        self.late = 0
        self.answered = False  # the command answering the state at now_ns has come
        self.joined = dict.fromkeys(observers, False)  # observer -> whether the steps wait for it
        self.observed: set[str] = set()  # the observers that answered the state at now_ns
        self.observer_missed = dict.fromkeys(observers, 0)
        self._pace: tuple[float, int] | None = None  # (wall s, simulated ns) the speed limit counts from

    @property
    def seconds(self) -> float:
        """Simulated seconds since the epoch (``command_timeout`` counts these)."""
        return (self.now_ns - EPOCH_NS) * 1e-9

    def published(self) -> None:
        """The state at ``now_ns`` went out: wait for its answer."""
        self.awaiting = True
        self.published_at = self._clock()

    def answers(self, stamp_ns: int | None) -> bool:
        """Whether a command stamped ``stamp_ns`` (None: a command without a stamp) answers the state."""
        if self.awaiting and (stamp_ns is None or stamp_ns in (0, self.now_ns)):
            self.answered = True
            return True
        self.late += 1
        return False

    def observe(self, observer: str, stamp_ns: int) -> None:
        """``observer`` published its answer to the state stamped ``stamp_ns``: it joins (or stays)."""
        self.joined[observer] = True
        if stamp_ns == self.now_ns:
            self.observed.add(observer)

    @property
    def ready(self) -> bool:
        """The state is answered by the command and by every observer that has joined: step."""
        return self.answered and all(name in self.observed for name, joined in self.joined.items() if joined)

    def pace(self, max_speed: float) -> float:
        """Wall seconds to wait before the next step so that simulated time runs at most ``max_speed`` times
        as fast as the wall clock (0: no limit). A loop that fell more than 0.1 s behind counts afresh from
        now (no burst to catch up)."""
        if max_speed <= 0.0:
            self._pace = None
            return 0.0
        wall = self._clock()
        if self._pace is None:
            self._pace = (wall, self.now_ns)
        wall0, sim0 = self._pace
        delay = wall0 + (self.now_ns + self.period_ns - sim0) * 1e-9 / max_speed - wall
        if delay < -0.1:
            self._pace = (wall, self.now_ns)
            return 0.0
        return max(delay, 0.0)

    def overdue(self, timeout: float) -> bool:
        """No answer within ``timeout`` wall seconds of the publication."""
        return self.awaiting and self._clock() - self.published_at >= timeout

    def step(self, answered: bool) -> None:
        """One period on: counted as missed when it was not answered; a joined observer that has not
        answered is counted and leaves (until its next answer)."""
        for name, joined in self.joined.items():
            if joined and name not in self.observed:
                self.observer_missed[name] += 1
                self.joined[name] = False
        self.awaiting = self.answered = False
        self.observed.clear()
        self.missed += not answered
        self.now_ns += self.period_ns

    def restamp(self) -> None:
        """One period on without a step (a reset): nothing counted, every answer awaited afresh."""
        self.awaiting = self.answered = False
        self.observed.clear()
        self.now_ns += self.period_ns

    def diagnostic_values(self) -> list[tuple[str, str]]:
        return [
            ("clock_s", f"{self.now_ns * 1e-9:.6f}"),
            ("missed_commands", str(self.missed)),
            ("late_commands", str(self.late)),
            *((f"observer_missed[{name}]", str(n)) for name, n in self.observer_missed.items()),
            *((f"observer_joined[{name}]", str(j).lower()) for name, j in self.joined.items()),
        ]
