"""Outputs published as serialised bytes: a message serialised once, its stamp and arrays overwritten.

A node that publishes the same message shape at every joint state (the same joint names, arrays of
the same length) pays, per message, for the conversion of the Python message to its C structure and
its CDR serialisation — as much as the torque law. :class:`SerializedTemplate` serialises the
message once with the RMW's own serialiser (``rclpy.serialization.serialize_message``), locates the
bytes of its ``header.stamp``, of its float64 arrays and of groups of float64 fields that lie side by
side (a ``WrenchStamped``'s force and torque) by probe values, and checks the result by
deserialising a filled probe (``deserialize_message``). Per message it only overwrites those bytes
(``struct.pack_into`` and a NumPy view of the buffer) and hands ``bytes`` to ``Publisher.publish``,
which publishes them as they are (``publish_raw``). The subscribers receive the same message.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
from rclpy.serialization import deserialize_message, serialize_message

from robot_dynamics.model import FloatArray

_STAMP = struct.Struct("<iI")  # builtin_interfaces/Time: int32 sec, uint32 nanosec (little-endian CDR)
_PROBE_STAMP = (0x1A2B3C4D, 0x05E6F708)


def header_stamp(raw: bytes) -> int:
    """``header.stamp`` (ns) of a serialised message that starts with a ``std_msgs/Header`` (CDR: the
    4-byte encapsulation, whose second byte says the byte order, then ``int32 sec``, ``uint32 nanosec``)."""
    sec, nanosec = struct.unpack_from("<iI" if raw[1] & 1 else ">iI", raw, 4)
    return int(sec) * 1_000_000_000 + int(nanosec)


def _find_once(data: bytes, pattern: bytes) -> int | None:
    at = data.find(pattern)
    return at if at >= 0 and data.find(pattern, at + 1) < 0 else None


class SerializedTemplate:
    """``template`` serialised once; :meth:`fill` overwrites its stamp and float64 arrays per message.

    ``fields``: names of float64 array fields of ``template`` (their length is fixed at ``size``);
    ``groups``: each a sequence of dotted paths of float64 fields that the serialised form holds side by
    side (e.g. ``wrench.force.x`` .. ``wrench.torque.z``), filled as one array after the fields;
    ``stamped``: the message has a ``header.stamp`` to overwrite. Use :meth:`build`, which returns
    None when the serialised form cannot be located and checked (the caller then publishes messages).
    """

    def __init__(self, data: bytes, stamp: int | None, offsets: Sequence[int], sizes: Sequence[int]) -> None:
        self._buffer = bytearray(data)
        self._stamp = stamp
        self._views: list[FloatArray] = [
            np.ndarray((size,), dtype="<f8", buffer=self._buffer, offset=offset)
            for offset, size in zip(offsets, sizes, strict=True)
        ]

    @classmethod
    def build(
        cls,
        template: Any,
        fields: Sequence[str],
        size: int,
        stamped: bool,
        groups: Sequence[Sequence[str]] = (),
    ) -> SerializedTemplate | None:
        """The filler of ``template``'s shape, or None if its CDR form is not little-endian and plain."""
        if fields and size == 0:
            return None
        msg_type = type(template)
        probe = _probe(template, fields, size, stamped, 1.0, groups)
        data = serialize_message(probe)
        if len(data) < 4 or data[:2] != b"\x00\x01":  # CDR little-endian encapsulation
            return None
        values = _values(probe, fields, groups)
        offsets = [_find_once(data, v.tobytes()) for v in values]
        stamp = _find_once(data, _STAMP.pack(*_PROBE_STAMP)) if stamped else None
        if any(o is None for o in offsets) or (stamped and stamp is None):
            return None
        filler = cls(data, stamp, [o for o in offsets if o is not None], [v.size for v in values])
        # check: a different probe filled in must deserialise to the message it stands for
        check = _probe(template, fields, size, stamped, -7.25, groups)
        raw = filler.fill(
            (check.header.stamp.sec, check.header.stamp.nanosec) if stamped else None,
            *_values(check, fields, groups),
        )
        if deserialize_message(raw, msg_type) != check:  # field by field (padding bytes are unspecified)
            return None
        return filler

    def fill(self, stamp: tuple[int, int] | None, *arrays: FloatArray) -> bytes:
        """The serialised message with ``stamp`` (sec, nanosec) and ``arrays`` (in the fields' order)."""
        if self._stamp is not None and stamp is not None:
            _STAMP.pack_into(self._buffer, self._stamp, *stamp)
        for view, values in zip(self._views, arrays, strict=True):
            view[:] = values  # shape-checked copy: a wrong length raises instead of corrupting the bytes
        return bytes(self._buffer)


def _get(msg: Any, path: str) -> float:
    for name in path.split("."):
        msg = getattr(msg, name)
    return float(msg)


def _values(msg: Any, fields: Sequence[str], groups: Sequence[Sequence[str]]) -> list[FloatArray]:
    """The arrays of ``fields`` then each group's fields as one array: what :meth:`SerializedTemplate.fill`
    takes, in its order."""
    values = [np.asarray(getattr(msg, f), dtype="<f8") for f in fields]
    return values + [np.array([_get(msg, path) for path in group], dtype="<f8") for group in groups]


def _probe_values(k: int, size: int, scale: float) -> list[float]:
    """``size`` distinct values for the ``k``-th filled array of a probe, none repeating another's."""
    return (scale * (np.pi * (k + 1) + np.sqrt(np.arange(1, size + 1) * (k + 2)))).tolist()


def _set(msg: Any, path: str, value: float) -> None:
    *parents, name = path.split(".")
    for parent in parents:
        msg = getattr(msg, parent)
    setattr(msg, name, value)


def _probe(
    template: Any, fields: Sequence[str], size: int, stamped: bool, scale: float, groups: Sequence[Sequence[str]] = ()
) -> Any:
    """A copy of ``template`` with distinct, non-repeating values in the arrays, the groups and the stamp."""
    msg = serialize_message(template)
    probe = deserialize_message(msg, type(template))
    for k, field in enumerate(fields):
        setattr(probe, field, _probe_values(k, size, scale))
    for k, group in enumerate(groups, start=len(fields)):
        for path, value in zip(group, _probe_values(k, len(group), scale), strict=True):
            _set(probe, path, value)
    if stamped:
        sec, nanosec = _PROBE_STAMP
        probe.header.stamp.sec = sec if scale > 0 else sec // 3
        probe.header.stamp.nanosec = nanosec if scale > 0 else nanosec // 5
    return probe
