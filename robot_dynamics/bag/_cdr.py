"""Vectorised CDR encoding/decoding of the two fixed-layout messages the evaluation streams.

A ``sensor_msgs/JointState`` or ``std_msgs/Float64MultiArray`` stream usually repeats one layout:
the same frame id, joint names and array lengths in every message, so every serialized message
has the same length and the same *meaningful* bytes except the header stamp and the ``float64``
payload. For such a stream the whole topic is one ``(N, L)`` byte matrix: encoding writes the
stamps and floats into a tiled template, decoding compares each row with the template (on the
meaningful bytes only) and reads the stamps and floats back as strided views. Rows that do not
fit take the general path (``rosbags``' own deserializer); the tests check both paths bit for bit
against ``rosbags``, with random bytes in every padding byte.

CDR (OMG CDR / XCDR1, as ROS 2 writes it): a 4-byte encapsulation header ``00 01 xx xx`` (little
endian) or ``00 00 xx xx`` (big endian; the last two "options" bytes carry no data), then the
fields, each primitive aligned to its size relative to the end of the header; strings are
``uint32`` length (including the terminating NUL) + bytes + NUL; sequences are a ``uint32`` count
followed by the elements (``float64`` elements aligned to 8 only when the count is non-zero, which
is what ``rosbags`` and Fast-CDR emit). The alignment gaps are *padding*: writers need not zero
them (Fast-CDR leaves whatever its buffer held), and a writer may append up to 3 bytes after the
last field to round the payload up to 4 bytes (``rosbags`` accepts those too). Padding bytes are
therefore never compared: a layout records their offsets and :func:`matches` masks them out.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.model import FloatArray

ENCAPSULATION_LE = b"\x00\x01\x00\x00"
ENCAPSULATION_BE = b"\x00\x00\x00\x00"
_HEADER = len(ENCAPSULATION_LE)
_OPTIONS = (2, 3)  # encapsulation options bytes: ignored by readers, free for writers
MAX_TRAILING = 3  # bytes a writer may append after the last field (payload rounded up to 4)

UInt8Array = NDArray[np.uint8]
IntpArray = NDArray[np.intp]


def _align(pos: int, size: int) -> int:
    return (pos + size - 1) // size * size


class _Builder:
    """Appends CDR primitives to a payload (positions relative to the end of the header)."""

    def __init__(self, big_endian: bool = False) -> None:
        self.buf = bytearray()
        self.order = ">" if big_endian else "<"
        self.padding: list[int] = []  # payload offsets of the alignment bytes

    def pad(self, size: int) -> None:
        start, stop = len(self.buf), _align(len(self.buf), size)
        self.padding.extend(range(start, stop))
        self.buf.extend(b"\x00" * (stop - start))

    def u32(self, value: int) -> None:
        self.pad(4)
        self.buf.extend(struct.pack(self.order + "I", value))

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

    def layout(self, stamp: int | None, blocks: dict[str, tuple[int, int]], trailing: int) -> FixedLayout:
        """The finished message: header, payload, ``trailing`` padding bytes after the last field."""
        big_endian = self.order == ">"
        payload = len(self.buf)
        template = (ENCAPSULATION_BE if big_endian else ENCAPSULATION_LE) + bytes(self.buf) + b"\x00" * trailing
        free = (*_OPTIONS, *(_HEADER + p for p in self.padding), *range(_HEADER + payload, len(template)))
        return FixedLayout(template, stamp, blocks, tuple(free), big_endian)


class _Parser:
    """Reads CDR primitives from one message (raises ``ValueError`` on malformed data)."""

    def __init__(self, raw: bytes) -> None:
        if len(raw) < _HEADER or raw[0] != 0 or raw[1] not in (0, 1):
            raise ValueError("not a CDR encapsulation header")
        self.raw = raw
        self.order = "<" if raw[1] else ">"
        self.pos = 0

    def _take(self, size: int) -> bytes:
        start = _HEADER + self.pos
        if start + size > len(self.raw):
            raise ValueError("message truncated")
        self.pos += size
        return self.raw[start : start + size]

    def u32(self) -> int:
        self.pos = _align(self.pos, 4)
        value: int = struct.unpack(self.order + "I", self._take(4))[0]
        return value

    def string(self) -> str:
        size = self.u32()
        data = self._take(size)
        if size == 0 or data[-1:] != b"\x00":
            raise ValueError("string without NUL terminator")
        return data[:-1].decode("utf-8")

    def doubles(self) -> int:
        """Skips a float64 sequence; returns its count."""
        count = self.u32()
        if count:
            self.pos = _align(self.pos, 8)
        self._take(8 * count)
        return count

    def trailing(self) -> int:
        """Bytes after the last field (``ValueError`` if more than a writer's padding)."""
        extra = len(self.raw) - _HEADER - self.pos
        if extra > MAX_TRAILING:
            raise ValueError("unexpected trailing bytes")
        return extra


@dataclass(frozen=True)
class FixedLayout:
    """The layout shared by every message of a uniform stream.

    ``template`` is one serialized message with zero stamps, floats and padding; ``stamp`` is the
    raw offset of the header stamp (``None`` for a message without header); ``blocks`` maps a field
    name to ``(raw offset, count)`` of its float64 elements; ``padding`` holds the raw offsets of
    the bytes whose value carries no data (encapsulation options, alignment, trailing bytes).
    """

    template: bytes
    stamp: int | None
    blocks: dict[str, tuple[int, int]]
    padding: tuple[int, ...] = ()
    big_endian: bool = False

    @property
    def size(self) -> int:
        return len(self.template)

    @property
    def order(self) -> str:
        """The numpy byte-order character of the numbers (``<`` or ``>``)."""
        return ">" if self.big_endian else "<"

    def variable_mask(self) -> NDArray[np.bool_]:
        """True at the bytes that carry the per-message data (stamp and floats)."""
        mask = np.zeros(self.size, dtype=bool)
        if self.stamp is not None:
            mask[self.stamp : self.stamp + 8] = True
        for offset, count in self.blocks.values():
            mask[offset : offset + 8 * count] = True
        return mask

    @cached_property
    def fixed_columns(self) -> IntpArray:
        """Offsets of the bytes every message of the layout must share (neither data nor padding)."""
        fixed = ~self.variable_mask()
        fixed[list(self.padding)] = False
        columns: IntpArray = np.flatnonzero(fixed)
        return columns


# ----------------------------------------------------------------------------------------------
# layouts
# ----------------------------------------------------------------------------------------------
def joint_state_layout(
    frame_id: str,
    names: Sequence[str],
    counts: tuple[int, int, int],
    *,
    big_endian: bool = False,
    trailing: int = 0,
) -> FixedLayout:
    """``sensor_msgs/JointState``: header, name[], position[], velocity[], effort[]."""
    b = _Builder(big_endian)
    b.u32(0)  # stamp.sec
    b.u32(0)  # stamp.nanosec
    b.string(frame_id)
    b.u32(len(names))
    for name in names:
        b.string(name)
    blocks = {}
    for field, count in zip(("position", "velocity", "effort"), counts, strict=True):
        blocks[field] = (_HEADER + b.doubles(count), count)
    return b.layout(_HEADER, blocks, trailing)


def float64_multiarray_layout(
    dims: Sequence[tuple[str, int, int]],
    data_offset: int,
    count: int,
    *,
    big_endian: bool = False,
    trailing: int = 0,
) -> FixedLayout:
    """``std_msgs/Float64MultiArray``: layout (dim[] of (label, size, stride), data_offset), data[]."""
    b = _Builder(big_endian)
    b.u32(len(dims))
    for label, size, stride in dims:
        b.string(label)
        b.u32(size)
        b.u32(stride)
    b.u32(data_offset)
    blocks = {"data": (_HEADER + b.doubles(count), count)}
    return b.layout(None, blocks, trailing)


@dataclass(frozen=True)
class JointStateHead:
    frame_id: str
    names: tuple[str, ...]
    layout: FixedLayout


@dataclass(frozen=True)
class MultiArrayHead:
    dims: tuple[tuple[str, int, int], ...]
    data_offset: int
    layout: FixedLayout


def parse_joint_state_layout(raw: bytes) -> JointStateHead:
    """The layout of one serialized JointState (``ValueError`` if it is not CDR or is malformed)."""
    p = _Parser(raw)
    p.u32()
    p.u32()
    frame_id = p.string()
    names = tuple(p.string() for _ in range(p.u32()))
    counts = (p.doubles(), p.doubles(), p.doubles())
    layout = joint_state_layout(frame_id, names, counts, big_endian=p.order == ">", trailing=p.trailing())
    if layout.size != len(raw):
        raise ValueError("layout mismatch")
    return JointStateHead(frame_id, names, layout)


def parse_float64_multiarray(raw: bytes) -> MultiArrayHead:
    """The layout and dimensions of one serialized Float64MultiArray (``ValueError`` if malformed)."""
    p = _Parser(raw)
    dims = []
    for _ in range(p.u32()):
        label = p.string()
        dims.append((label, p.u32(), p.u32()))
    data_offset = p.u32()
    count = p.doubles()
    layout = float64_multiarray_layout(dims, data_offset, count, big_endian=p.order == ">", trailing=p.trailing())
    if layout.size != len(raw):
        raise ValueError("layout mismatch")
    return MultiArrayHead(tuple(dims), data_offset, layout)


def parse_float64_multiarray_layout(raw: bytes) -> FixedLayout:
    return parse_float64_multiarray(raw).layout


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
    o = layout.order
    if layout.stamp is not None and stamps_ns is not None:
        sec, nanosec = split_stamps(stamps_ns)
        out[:, layout.stamp : layout.stamp + 4] = sec.astype(o + "i4").reshape(rows, 1).view(np.uint8)
        out[:, layout.stamp + 4 : layout.stamp + 8] = nanosec.astype(o + "u4").reshape(rows, 1).view(np.uint8)
    for field, (offset, count) in layout.blocks.items():
        if count == 0:
            continue
        values = np.ascontiguousarray(floats[field], dtype=o + "f8").reshape(rows, count)
        out[:, offset : offset + 8 * count] = values.view(np.uint8)
    return out


def stack(raws: Sequence[bytes], size: int) -> UInt8Array:
    """Messages of equal length ``size`` as an ``(N, size)`` byte matrix."""
    return np.frombuffer(b"".join(raws), dtype=np.uint8).reshape(len(raws), size)


def matches(layout: FixedLayout, matrix: UInt8Array) -> NDArray[np.bool_]:
    """Rows of ``matrix`` whose meaningful fixed bytes equal the layout's template (padding ignored)."""
    if matrix.shape[1] != layout.size:
        return np.zeros(matrix.shape[0], dtype=bool)
    columns = layout.fixed_columns
    template = np.frombuffer(layout.template, dtype=np.uint8)[columns]
    result: NDArray[np.bool_] = np.all(matrix[:, columns] == template, axis=1)
    return result


def decode_stamps(layout: FixedLayout, matrix: UInt8Array) -> NDArray[np.int64]:
    """Header stamps, int64 ns (``sec * 1e9 + nanosec`` as stored, ``nanosec`` not normalised)."""
    assert layout.stamp is not None
    s, o = layout.stamp, layout.order
    sec = np.ascontiguousarray(matrix[:, s : s + 4]).view(o + "i4").reshape(-1).astype(np.int64)
    nanosec = np.ascontiguousarray(matrix[:, s + 4 : s + 8]).view(o + "u4").reshape(-1).astype(np.int64)
    stamps: NDArray[np.int64] = sec * 1_000_000_000 + nanosec
    return stamps


def decode_block(layout: FixedLayout, matrix: UInt8Array, field: str) -> FloatArray:
    """A float64 field as ``(N, count)`` native floats (bit for bit, NaN payloads included)."""
    offset, count = layout.blocks[field]
    block = np.ascontiguousarray(matrix[:, offset : offset + 8 * count]).view(layout.order + "f8")
    values: FloatArray = block.reshape(matrix.shape[0], count).astype(np.float64)
    return values


# ----------------------------------------------------------------------------------------------
# grouping a topic's messages by layout
# ----------------------------------------------------------------------------------------------
H = TypeVar("H", JointStateHead, MultiArrayHead)


@dataclass(frozen=True)
class Group(Generic[H]):
    """Messages ``rows`` (indices into the topic) that share ``head``'s layout, as a byte matrix."""

    head: H
    rows: IntpArray
    matrix: UInt8Array


#: A length class gives up on the fast path after this many layouts that matched one message only
#: (a stream with no repeated layout is decoded message by message at once), or after
#: :data:`MAX_LAYOUTS` layouts in all (each costs a pass over the messages left: no quadratic time).
MAX_SINGLETON_LAYOUTS = 4
MAX_LAYOUTS = 64


def group_by_layout(raws: Sequence[bytes], parse: Callable[[bytes], H]) -> tuple[list[Group[H]], IntpArray]:
    """Splits a topic's messages into uniform groups (fast path) and the rest (sorted message indices).

    Messages are classed by length; within a class the first message not yet placed gives a layout
    (``parse``), every message of the class that matches it (padding ignored) joins its group, and
    so on. A message that ``parse`` rejects, and every message left when a class has shown
    :data:`MAX_SINGLETON_LAYOUTS` one-message layouts or :data:`MAX_LAYOUTS` layouts, goes to the
    rest. No group is empty.
    """
    lengths = np.fromiter((len(r) for r in raws), dtype=np.int64, count=len(raws))
    groups: list[Group[H]] = []
    rest: list[IntpArray] = []
    for size in np.unique(lengths):
        rows = np.flatnonzero(lengths == size)
        matrix = stack([raws[int(r)] for r in rows], int(size))
        todo: IntpArray = np.arange(rows.size)
        singletons = layouts = 0
        while todo.size and singletons < MAX_SINGLETON_LAYOUTS and layouts < MAX_LAYOUTS:
            layouts += 1
            first = int(rows[todo[0]])
            try:
                head = parse(raws[first])
            except ValueError:
                head = None
            candidates = matrix if todo.size == rows.size else matrix[todo]
            ok = matches(head.layout, candidates) if head is not None else np.zeros(todo.size, dtype=bool)
            if not ok[0]:  # unparsable (or a template that does not reproduce its own message)
                rest.append(rows[todo[:1]])
                todo = todo[1:]
                singletons += 1
                continue
            assert head is not None
            if ok.all():
                groups.append(Group(head, rows[todo], candidates))
                todo = todo[:0]
                break
            taken = todo[ok]
            groups.append(Group(head, rows[taken], candidates[ok]))
            todo = todo[~ok]
            singletons += int(taken.size == 1)
        rest.append(rows[todo])
    leftover: IntpArray = np.sort(np.concatenate(rest)) if rest else np.zeros(0, dtype=np.intp)
    return groups, leftover.astype(np.intp)
