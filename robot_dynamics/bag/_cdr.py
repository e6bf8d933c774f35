"""Vectorised CDR encoding/decoding of the two fixed-layout messages the evaluation streams.

A ``sensor_msgs/JointState`` or ``std_msgs/Float64MultiArray`` stream usually repeats one layout:
the same frame id, joint names and array lengths in every message, so every serialized message
has the same length and the same bytes except the header stamp and the ``float64`` payload. For
such a stream the whole topic is one ``(N, L)`` byte matrix: encoding writes the stamps and floats
into a tiled template, decoding reads them back as strided ``float64`` views. Messages that do not
fit the template (another layout, big-endian CDR) take the general path (``rosbags``' own
(de)serializer); the tests check both paths byte for byte against ``rosbags``.

CDR (OMG XCDR1, little endian, as ROS 2 writes it): a 4-byte encapsulation header ``00 01 00 00``,
then the fields, each primitive aligned to its size relative to the end of the header; strings
are ``uint32`` length (including the terminating NUL) + bytes + NUL; sequences are a ``uint32``
count followed by the elements (``float64`` elements aligned to 8 only when the count is
non-zero, which is what ``rosbags`` and Fast-CDR emit).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.model import FloatArray

ENCAPSULATION_LE = b"\x00\x01\x00\x00"
_HEADER = len(ENCAPSULATION_LE)

UInt8Array = NDArray[np.uint8]


def _align(pos: int, size: int) -> int:
    return (pos + size - 1) // size * size


class _Builder:
    """Appends CDR primitives to a payload (positions relative to the end of the header)."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def pad(self, size: int) -> None:
        self.buf.extend(b"\x00" * (_align(len(self.buf), size) - len(self.buf)))

    def u32(self, value: int) -> None:
        self.pad(4)
        self.buf.extend(struct.pack("<I", value))

    def string(self, text: str) -> None:
        raw = text.encode("utf-8")
        self.u32(len(raw) + 1)
        self.buf.extend(raw + b"\x00")

    def doubles(self, count: int) -> int:
        """A float64 sequence of ``count`` zeros; returns the payload offset of its first element."""
        self.u32(count)
        if count:
            self.pad(8)
        start = len(self.buf)
        self.buf.extend(b"\x00" * (8 * count))
        return start


class _Parser:
    """Reads CDR primitives from one little-endian message (raises ``ValueError`` on malformed data)."""

    def __init__(self, raw: bytes) -> None:
        if raw[:_HEADER] != ENCAPSULATION_LE:
            raise ValueError("not little-endian CDR")
        self.raw = raw
        self.pos = 0

    def _take(self, size: int) -> bytes:
        start = _HEADER + self.pos
        if start + size > len(self.raw):
            raise ValueError("message truncated")
        self.pos += size
        return self.raw[start : start + size]

    def u32(self, align: bool = True) -> int:
        if align:
            self.pos = _align(self.pos, 4)
        value: int = struct.unpack("<I", self._take(4))[0]
        return value

    def string(self) -> str:
        size = self.u32()
        data = self._take(size)
        if size == 0 or data[-1:] != b"\x00":
            raise ValueError("string without NUL terminator")
        return data[:-1].decode("utf-8")

    def doubles(self) -> tuple[int, int]:
        """Skips a float64 sequence; returns ``(payload offset of the first element, count)``."""
        count = self.u32()
        if count:
            self.pos = _align(self.pos, 8)
        start = self.pos
        self._take(8 * count)
        return start, count


@dataclass(frozen=True)
class FixedLayout:
    """The layout shared by every message of a uniform stream.

    ``template`` is one serialized message with zero stamps and zero floats; ``stamp`` is the raw
    offset of the header stamp (``None`` for a message without header); ``blocks`` maps a field name
    to ``(raw offset, count)`` of its float64 elements.
    """

    template: bytes
    stamp: int | None
    blocks: dict[str, tuple[int, int]]

    @property
    def size(self) -> int:
        return len(self.template)

    def variable_mask(self) -> NDArray[np.bool_]:
        """True at the bytes that differ between messages of the stream (stamp and floats)."""
        mask = np.zeros(self.size, dtype=bool)
        if self.stamp is not None:
            mask[self.stamp : self.stamp + 8] = True
        for offset, count in self.blocks.values():
            mask[offset : offset + 8 * count] = True
        return mask


# ----------------------------------------------------------------------------------------------
# layouts
# ----------------------------------------------------------------------------------------------
def joint_state_layout(frame_id: str, names: Sequence[str], counts: tuple[int, int, int]) -> FixedLayout:
    """``sensor_msgs/JointState``: header, name[], position[], velocity[], effort[]."""
    b = _Builder()
    b.u32(0)  # stamp.sec
    b.u32(0)  # stamp.nanosec
    b.string(frame_id)
    b.u32(len(names))
    for name in names:
        b.string(name)
    blocks = {}
    for field, count in zip(("position", "velocity", "effort"), counts, strict=True):
        blocks[field] = (_HEADER + b.doubles(count), count)
    return FixedLayout(ENCAPSULATION_LE + bytes(b.buf), _HEADER, blocks)


def float64_multiarray_layout(dims: Sequence[tuple[str, int, int]], data_offset: int, count: int) -> FixedLayout:
    """``std_msgs/Float64MultiArray``: layout (dim[] of (label, size, stride), data_offset), data[]."""
    b = _Builder()
    b.u32(len(dims))
    for label, size, stride in dims:
        b.string(label)
        b.u32(size)
        b.u32(stride)
    b.u32(data_offset)
    blocks = {"data": (_HEADER + b.doubles(count), count)}
    return FixedLayout(ENCAPSULATION_LE + bytes(b.buf), None, blocks)


@dataclass(frozen=True)
class JointStateHead:
    frame_id: str
    names: tuple[str, ...]
    layout: FixedLayout


def parse_joint_state_layout(raw: bytes) -> JointStateHead:
    """The layout of one serialized JointState (``ValueError`` if it is not little-endian CDR or is malformed)."""
    p = _Parser(raw)
    p.u32()
    p.u32()
    frame_id = p.string()
    names = tuple(p.string() for _ in range(p.u32()))
    counts = tuple(p.doubles()[1] for _ in range(3))
    if _HEADER + p.pos != len(raw):
        raise ValueError("unexpected trailing bytes")
    layout = joint_state_layout(frame_id, names, (counts[0], counts[1], counts[2]))
    if layout.size != len(raw):
        raise ValueError("layout mismatch")
    return JointStateHead(frame_id, names, layout)


def parse_float64_multiarray_layout(raw: bytes) -> FixedLayout:
    p = _Parser(raw)
    dims = []
    for _ in range(p.u32()):
        label = p.string()
        dims.append((label, p.u32(), p.u32()))
    data_offset = p.u32()
    _, count = p.doubles()
    if _HEADER + p.pos != len(raw):
        raise ValueError("unexpected trailing bytes")
    layout = float64_multiarray_layout(dims, data_offset, count)
    if layout.size != len(raw):
        raise ValueError("layout mismatch")
    return layout


# ----------------------------------------------------------------------------------------------
# batch encode / decode
# ----------------------------------------------------------------------------------------------
def split_stamps(stamps_ns: NDArray[np.int64]) -> tuple[NDArray[np.int32], NDArray[np.uint32]]:
    """``builtin_interfaces/Time`` ``(sec, nanosec)`` of integer nanoseconds (nanosec in [0, 1e9))."""
    sec, nanosec = np.divmod(np.asarray(stamps_ns, dtype=np.int64), 1_000_000_000)
    if np.any(sec > np.iinfo(np.int32).max) or np.any(sec < np.iinfo(np.int32).min):
        raise ValueError("header stamp out of the int32 seconds range")
    return sec.astype("<i4"), nanosec.astype("<u4")


def encode(
    layout: FixedLayout, rows: int, stamps_ns: NDArray[np.int64] | None, floats: dict[str, FloatArray]
) -> UInt8Array:
    """``rows`` serialized messages as an ``(rows, L)`` byte matrix (row ``k`` = message ``k``)."""
    out = np.tile(np.frombuffer(layout.template, dtype=np.uint8), (rows, 1))
    if layout.stamp is not None and stamps_ns is not None:
        sec, nanosec = split_stamps(stamps_ns)
        out[:, layout.stamp : layout.stamp + 4] = sec.reshape(rows, 1).view(np.uint8)
        out[:, layout.stamp + 4 : layout.stamp + 8] = nanosec.reshape(rows, 1).view(np.uint8)
    for field, (offset, count) in layout.blocks.items():
        if count == 0:
            continue
        values = np.ascontiguousarray(floats[field], dtype="<f8").reshape(rows, count)
        out[:, offset : offset + 8 * count] = values.view(np.uint8)
    return out


def stack(raws: Sequence[bytes], size: int) -> UInt8Array:
    """Messages of equal length ``size`` as an ``(N, size)`` byte matrix."""
    return np.frombuffer(b"".join(raws), dtype=np.uint8).reshape(len(raws), size)


def matches(layout: FixedLayout, matrix: UInt8Array) -> NDArray[np.bool_]:
    """Rows of ``matrix`` whose fixed bytes equal the layout's template."""
    fixed = ~layout.variable_mask()
    template = np.frombuffer(layout.template, dtype=np.uint8)[fixed]
    result: NDArray[np.bool_] = np.all(matrix[:, fixed] == template, axis=1)
    return result


def decode_stamps(layout: FixedLayout, matrix: UInt8Array) -> NDArray[np.int64]:
    assert layout.stamp is not None
    s = layout.stamp
    sec = np.ascontiguousarray(matrix[:, s : s + 4]).view("<i4").reshape(-1).astype(np.int64)
    nanosec = np.ascontiguousarray(matrix[:, s + 4 : s + 8]).view("<u4").reshape(-1).astype(np.int64)
    stamps: NDArray[np.int64] = sec * 1_000_000_000 + nanosec
    return stamps


def decode_block(layout: FixedLayout, matrix: UInt8Array, field: str) -> FloatArray:
    offset, count = layout.blocks[field]
    block = np.ascontiguousarray(matrix[:, offset : offset + 8 * count]).view("<f8")
    values: FloatArray = block.reshape(matrix.shape[0], count).astype(np.float64)
    return values
