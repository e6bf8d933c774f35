"""A small progress bar on stderr for long bags (no dependency; shown only where it helps).

``Progress(total, "reading")`` draws ``label [######------]  45%  45000/100000  52.1k msg/s`` with
carriage returns, at most ten times a second, and ends the line on :meth:`Progress.close`. By
default it draws only when the stream is a terminal and the job is long (``total >= min_total``),
so logs, pipes and tests stay clean; ``enabled=True``/``False`` forces it either way.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

LONG_JOB = 20_000  # messages: below this a bag is read in well under a second


class Progress:
    def __init__(
        self,
        total: int,
        label: str,
        *,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        min_total: int = LONG_JOB,
        width: int = 24,
        interval: float = 0.1,
    ) -> None:
        self.total = max(int(total), 0)
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty()) and self.total >= min_total
        self.enabled = enabled
        self.width = width
        self.interval = interval
        self.count = 0
        self._start = time.perf_counter()
        self._last_draw = -float("inf")
        self._closed = False

    def update(self, n: int = 1) -> None:
        self.count += n
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last_draw >= self.interval or self.count >= self.total:
            self._draw(now)

    def _draw(self, now: float) -> None:
        self._last_draw = now
        frac = min(self.count / self.total, 1.0) if self.total else 1.0
        filled = round(frac * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        elapsed = max(now - self._start, 1e-9)
        rate = self.count / elapsed
        rate_text = f"{rate / 1000:.1f}k" if rate >= 1000 else f"{rate:.0f}"
        self.stream.write(f"\r{self.label} [{bar}] {frac * 100:3.0f}%  {self.count}/{self.total}  {rate_text} msg/s")
        self.stream.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.enabled:
            self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
