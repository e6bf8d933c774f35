"""Joint-state intake of the feed-forward node: the newest state, the skipped ones counted exactly.

A controller wants the torque for the state the robot is in now, not for a queue of old ones. With
``joint_states_qos: latest`` (the default) the subscription keeps one sample (reliable, KEEP_LAST 1):
when the node falls behind (a busy machine, a stall), DDS replaces the waiting state with the newer
one, so the node always answers the newest state and never works through a backlog. What it did not
answer is counted from the DDS publication sequence numbers that come with every sample
(``MessageInfo``): a jump of ``k`` in one publisher's sequence means ``k - 1`` states were skipped.
The age of each answered state (receive clock − the publisher's ``source_timestamp``, both the
system clock) is what the node reports as its latency.

``reliable`` (depth 100) answers every state in order (what a replay check comparing every message
needs), ``sensor_data`` is best effort: with both, sequence gaps are still counted (as lost states).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class SequenceGaps:
    """Counts the samples a subscription never delivered, per publisher, from their publication
    sequence numbers (``MessageInfo['publication_sequence_number']``, 1, 2, 3, ... per writer)."""

    def __init__(self) -> None:
        self.skipped = 0
        self.received = 0
        self._last: dict[bytes, int] = {}

    def see(self, info: Mapping[str, Any]) -> int:
        """Record one delivered sample; returns how many of its publisher's samples before it were skipped."""
        self.received += 1
        seq = info.get("publication_sequence_number")
        if not seq:  # an RMW without sequence numbers
            return 0
        gid = info.get("publisher_gid")
        key = bytes(gid["data"]) if isinstance(gid, Mapping) and "data" in gid else b""
        last = self._last.get(key)
        self._last[key] = max(seq, last or 0)
        if last is None or seq <= last:  # a publisher's first sample, or a restarted one
            return 0
        gap = seq - last - 1
        self.skipped += gap
        return gap
