"""Differential fuzz test of the CDR decoder against rosbags, with random bytes in every padding byte.

Random ``sensor_msgs/JointState`` and ``std_msgs/Float64MultiArray`` messages (names of any length
including empty ones, empty and differently sized arrays, random frame ids and stamps, arbitrary
float64 bit patterns including NaN payloads) are serialized by ``rosbags`` in little- and big-endian
CDR. Every padding byte is then overwritten with random bytes, as real writers leave them: the
encapsulation options, the alignment gaps, and up to three bytes after the last field. The padding
offsets come from an independent walk of the CDR layout in this file, checked two ways: the walk
must end exactly at the serialized length, and ``rosbags`` must decode the garbage-padded message
to the original values. Our decoder must then give ``rosbags``' values bit for bit, message by
message and on whole streams (runs of one layout interleaved with other layouts), through the
block API and through the topic API that the evaluation uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore

from robot_dynamics.bag import (
    FLOAT64_MULTIARRAY,
    JOINT_STATE,
    JOINT_TRAJECTORY,
    BagError,
    JointStateBlock,
    RawTopic,
    _cdr,
    decode_float64_multiarray,
    decode_joint_state_blocks,
    decode_joint_states,
    decode_joint_trajectories,
)

STORE = get_typestore(Stores.ROS2_KILTED)
T = STORE.types
SEED = 20261124
MESSAGES = 6000  # JointState messages of the mixed stream
ALPHABET = [*"abcxyz_019", "ä", "ß", "関", "-"]


def bits(values: Any) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.float64)).view(np.uint64)


def random_text(rng: np.random.Generator, max_len: int) -> str:
    return "".join(rng.choice(ALPHABET, int(rng.integers(0, max_len + 1))))


def random_floats(rng: np.random.Generator, count: int) -> np.ndarray:
    """Ordinary numbers, or arbitrary bit patterns (NaNs with payloads, infinities, subnormals)."""
    if rng.random() < 0.5:
        return rng.normal(scale=10.0, size=count)
    raw = rng.integers(0, 2**63, size=count, dtype=np.int64).astype(np.uint64)
    raw |= rng.integers(0, 2, size=count).astype(np.uint64) << np.uint64(63)
    exponent = np.uint64(0x7FF0_0000_0000_0000)
    nan = rng.random(count) < 0.3  # exponent all ones, random non-zero mantissa: a NaN with a payload
    raw[nan] |= exponent | np.uint64(1)
    signalling = nan & (rng.random(count) < 0.5)
    raw[signalling] &= ~np.uint64(1 << 51)  # quiet bit cleared
    inf = ~nan & (rng.random(count) < 0.05)
    raw[inf] = (raw[inf] & np.uint64(1 << 63)) | exponent
    return raw.view(np.float64)


# ------------------------------------------------------------------------------------------------
# an independent walk of the CDR layout: the offsets of the padding bytes
# ------------------------------------------------------------------------------------------------
class Walk:
    """Positions of a CDR payload (relative to the end of the 4-byte header) and its alignment gaps."""

    def __init__(self) -> None:
        self.pos = 0
        self.gaps: list[int] = []

    def align(self, size: int) -> None:
        stop = -(-self.pos // size) * size
        self.gaps += range(self.pos, stop)
        self.pos = stop

    def u32(self) -> None:
        self.align(4)
        self.pos += 4

    def string(self, text: str) -> None:
        self.u32()
        self.pos += len(text.encode()) + 1

    def doubles(self, count: int) -> None:
        self.u32()
        if count:
            self.align(8)
        self.pos += 8 * count

    def padding(self, serialized_len: int) -> list[int]:
        """Raw offsets of the padding bytes: options bytes 2 and 3, then the alignment gaps."""
        assert 4 + self.pos == serialized_len, "the walk must cover the whole message"
        return [2, 3] + [4 + g for g in self.gaps]


def joint_state_padding(msg: Any, size: int) -> list[int]:
    w = Walk()
    w.u32()
    w.u32()
    w.string(msg.header.frame_id)
    w.u32()
    for name in msg.name:
        w.string(name)
    for field in ("position", "velocity", "effort"):
        w.doubles(len(getattr(msg, field)))
    return w.padding(size)


def multiarray_padding(msg: Any, size: int) -> list[int]:
    w = Walk()
    w.u32()
    for dim in msg.layout.dim:
        w.string(dim.label)
        w.u32()
        w.u32()
    w.u32()
    w.doubles(len(msg.data))
    return w.padding(size)


def with_garbage(
    rng: np.random.Generator,
    msg: Any,
    msgtype: str,
    padding: Callable[[Any, int], list[int]],
    big_endian: bool,
    *,
    style: str = "all",
) -> tuple[bytes, bytes]:
    """``(clean, garbage)`` serializations with random non-zero bytes in the padding.

    ``style``: ``"gaps"`` the alignment gaps only (same length, options ``00 00``); ``"dds"`` also
    0-3 random trailing bytes with their count in the options (XCDR: the last two bits of the
    options are the number of padding bytes at the end, as Fast-DDS writes and reads them);
    ``"all"`` random options bytes and 0-3 random trailing bytes (what ``rosbags`` accepts).
    """
    clean = bytes(STORE.serialize_cdr(msg, msgtype, little_endian=not big_endian))
    raw = bytearray(clean)
    where = padding(msg, len(clean))[0 if style == "all" else 2 :]
    raw_gaps = rng.integers(1, 256, size=len(where), dtype=np.uint8)  # never 0: every padding byte changes
    for offset, value in zip(where, raw_gaps.tolist(), strict=True):
        raw[offset] = value
    if style != "gaps":
        trailing = int(rng.integers(0, _cdr.MAX_TRAILING + 1))
        raw += rng.integers(0, 256, size=trailing, dtype=np.uint8).tobytes()
        if style == "dds":
            raw[3] = trailing
    return clean, bytes(raw)


# ------------------------------------------------------------------------------------------------
# random messages
# ------------------------------------------------------------------------------------------------
def joint_state(rng: np.random.Generator, layout: dict[str, Any]) -> Any:
    sec = int(rng.integers(-(2**31), 2**31))
    nanosec = int(rng.integers(0, 2**32))
    header = T["std_msgs/msg/Header"](
        stamp=T["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec), frame_id=layout["frame_id"]
    )
    arrays = {f: random_floats(rng, n) for f, n in layout["counts"].items()}
    return T[JOINT_STATE](header=header, name=list(layout["names"]), **arrays)


def random_joint_state_layout(rng: np.random.Generator) -> dict[str, Any]:
    n = int(rng.choice([0, 1, 2, 3, 6, 7]))
    names = [random_text(rng, 9) for _ in range(n)]
    counts = {}
    for field in ("position", "velocity", "effort"):
        kind = rng.random()
        counts[field] = n if kind < 0.5 else 0 if kind < 0.75 else int(rng.integers(0, 9))
    return {"frame_id": random_text(rng, 12), "names": names, "counts": counts, "big_endian": bool(rng.random() < 0.3)}


def mixed_stream(rng: np.random.Generator, count: int, make_layout: Callable[[np.random.Generator], Any]) -> list:
    """``count`` (layout, run position) slots: runs of 1-300 messages of one layout, layouts interleaved."""
    layouts = [make_layout(rng) for _ in range(40)]
    slots: list[dict[str, Any]] = []
    while len(slots) < count:
        layout = layouts[int(rng.integers(0, len(layouts)))] if rng.random() < 0.8 else make_layout(rng)
        run = 1 if rng.random() < 0.2 else int(rng.integers(1, 300))
        slots += [layout] * run
    return slots[:count]


def expected_joint_state(msg: Any) -> dict[str, Any]:
    return {
        "names": tuple(msg.name),
        "frame_id": msg.header.frame_id,
        "stamp": int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec),
        **{f: bits(getattr(msg, f)) for f in ("position", "velocity", "effort")},
    }


def assert_block_row_equals(block: JointStateBlock, i: int, want: dict[str, Any], k: int) -> None:
    assert block.names == want["names"], k
    assert block.frame_id == want["frame_id"], k
    assert int(block.stamps[i]) == want["stamp"], k
    for f in ("position", "velocity", "effort"):
        assert np.array_equal(bits(block.fields[f][i]), want[f]), (k, f)


@pytest.fixture(scope="module")
def joint_state_stream() -> tuple[RawTopic, list[dict[str, Any]]]:
    rng = np.random.default_rng(SEED)
    raws, wants = [], []
    for layout in mixed_stream(rng, MESSAGES, random_joint_state_layout):
        msg = joint_state(rng, layout)
        clean, garbage = with_garbage(rng, msg, JOINT_STATE, joint_state_padding, layout["big_endian"])
        assert garbage != clean
        want = expected_joint_state(msg)
        # the padding offsets really are padding: rosbags reads the garbage-padded bytes as the message
        got = expected_joint_state(STORE.deserialize_cdr(garbage, JOINT_STATE))
        assert all(np.array_equal(got[key], want[key]) for key in want)
        raws.append(garbage)
        wants.append(want)
    timestamps = np.arange(len(raws), dtype=np.int64) * 1_000_000
    return RawTopic("/joint_states", JOINT_STATE, timestamps, raws), wants


def test_joint_state_stream_equals_rosbags_bit_for_bit(joint_state_stream):
    raw, wants = joint_state_stream
    blocks = decode_joint_state_blocks(raw)
    seen = np.zeros(len(raw), dtype=int)
    for block in blocks:
        assert block.rows.size > 0
        for i, k in enumerate(block.rows.tolist()):
            assert_block_row_equals(block, i, wants[k], k)
            seen[k] += 1
    assert np.all(seen == 1)
    # the fast path did the bulk of the work, in both byte orders, despite the garbage
    groups, rest = _cdr.group_by_layout(raw.data, _cdr.parse_joint_state_layout)
    fast = sum(g.rows.size for g in groups)
    assert fast >= 0.9 * len(raw), (fast, rest.size)
    assert {g.head.layout.big_endian for g in groups if g.rows.size > 1} == {False, True}
    assert any(g.head.layout.size % 4 for g in groups)  # trailing bytes after the last field


def test_joint_states_one_message_at_a_time(joint_state_stream):
    raw, wants = joint_state_stream
    for k in range(0, len(raw), 3):
        one = RawTopic(raw.topic, raw.msgtype, raw.timestamps[k : k + 1], raw.data[k : k + 1])
        (block,) = decode_joint_state_blocks(one)
        assert block.rows.tolist() == [0]
        assert_block_row_equals(block, 0, wants[k], k)


def test_topic_api_equals_rosbags_on_garbage_padding():
    """``decode_joint_states`` (what evaluate uses): name order changes, extra joints, missing fields."""
    rng = np.random.default_rng(SEED + 1)
    target = ("shoulder", "elbow", "wrist_ä")

    def layout(r: np.random.Generator) -> dict[str, Any]:
        names = list(r.permutation(target)) + [random_text(r, 5) + "_x" for _ in range(int(r.integers(0, 3)))]
        n = len(names)
        counts = {"position": n, "velocity": n if r.random() < 0.7 else 0, "effort": n if r.random() < 0.7 else 0}
        return {"frame_id": random_text(r, 6), "names": names, "counts": counts, "big_endian": bool(r.random() < 0.3)}

    raws, msgs = [], []
    for lay in mixed_stream(rng, 3000, layout):
        msg = joint_state(rng, lay)
        raws.append(with_garbage(rng, msg, JOINT_STATE, joint_state_padding, lay["big_endian"])[1])
        msgs.append(STORE.deserialize_cdr(raws[-1], JOINT_STATE))
    raw = RawTopic("/js", JOINT_STATE, np.arange(len(raws), dtype=np.int64), raws)
    series = decode_joint_states(raw, target)
    for f in ("position", "velocity", "effort"):
        want = np.full((len(msgs), len(target)), np.nan)
        for k, msg in enumerate(msgs):
            values = getattr(msg, f)
            if len(values):
                want[k] = [values[msg.name.index(j)] for j in target]
        got = getattr(series, f)
        assert got is not None and np.array_equal(bits(got), bits(want)), f
    stamps = [m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec for m in msgs]
    assert series.stamps.tolist() == stamps
    assert series.frame_id == msgs[0].header.frame_id


# ------------------------------------------------------------------------------------------------
# Float64MultiArray
# ------------------------------------------------------------------------------------------------
def multiarray(rng: np.random.Generator, layout: dict[str, Any]) -> Any:
    dims = [T["std_msgs/msg/MultiArrayDimension"](label=a, size=b, stride=c) for a, b, c in layout["dims"]]
    return T[FLOAT64_MULTIARRAY](
        layout=T["std_msgs/msg/MultiArrayLayout"](dim=dims, data_offset=layout["offset"]),
        data=random_floats(rng, layout["offset"] + layout["width"]),
    )


def random_multiarray_layout(rng: np.random.Generator, width: int | None = None) -> dict[str, Any]:
    dims = [
        (random_text(rng, 7), int(rng.integers(0, 2**32)), int(rng.integers(0, 2**32)))
        for _ in range(int(rng.integers(0, 4)))
    ]
    return {
        "dims": dims,
        "offset": int(rng.integers(0, 4)),
        "width": int(rng.integers(0, 9)) if width is None else width,
        "big_endian": bool(rng.random() < 0.3),
    }


def test_multiarray_equals_rosbags_bit_for_bit():
    rng = np.random.default_rng(SEED + 2)
    # message by message: any layout, any width
    for k in range(1500):
        lay = random_multiarray_layout(rng)
        msg = multiarray(rng, lay)
        clean, garbage = with_garbage(rng, msg, FLOAT64_MULTIARRAY, multiarray_padding, lay["big_endian"])
        assert garbage != clean
        ref = STORE.deserialize_cdr(garbage, FLOAT64_MULTIARRAY)
        assert np.array_equal(bits(ref.data), bits(msg.data))
        one = decode_float64_multiarray(RawTopic("/a", FLOAT64_MULTIARRAY, np.array([k]), [garbage]))
        assert np.array_equal(bits(one.data[0]), bits(ref.data[ref.layout.data_offset :])), k
        assert one.labels == tuple(d.label for d in ref.layout.dim)
    # a mixed stream of one width (as the evaluation writes and reads it)
    raws, refs = [], []
    for lay in mixed_stream(rng, 3000, lambda r: random_multiarray_layout(r, width=6)):
        msg = multiarray(rng, lay)
        raws.append(with_garbage(rng, msg, FLOAT64_MULTIARRAY, multiarray_padding, lay["big_endian"])[1])
        refs.append(STORE.deserialize_cdr(raws[-1], FLOAT64_MULTIARRAY))
    series = decode_float64_multiarray(RawTopic("/a", FLOAT64_MULTIARRAY, np.arange(len(raws), dtype=np.int64), raws))
    want = np.array([r.data[r.layout.data_offset :] for r in refs])
    assert np.array_equal(bits(series.data), bits(want))
    assert series.labels == tuple(d.label for d in refs[0].layout.dim)
    groups, _ = _cdr.group_by_layout(raws, _cdr.parse_float64_multiarray)
    assert sum(g.rows.size for g in groups) >= 0.9 * len(raws)


# ------------------------------------------------------------------------------------------------
# messages neither path can decode
# ------------------------------------------------------------------------------------------------
def test_undecodable_message_is_a_bag_error_naming_topic_and_index(joint_state_stream):
    raw, _ = joint_state_stream
    data = list(raw.data[:50])
    data[17] = data[17][: len(data[17]) // 2]  # truncated
    broken = RawTopic(raw.topic, raw.msgtype, raw.timestamps[:50], data)
    with pytest.raises(BagError, match=r"topic /joint_states, message 17 \(t=17000000 ns\): cannot deserialize"):
        decode_joint_state_blocks(broken)
    data = list(raw.data[:50])
    data[30] = b"\x07\x01\x00\x00" + data[30][4:]  # not a CDR encapsulation
    with pytest.raises(BagError, match=r"message 30 .*Invalid or unsupported CDR encapsulation"):
        decode_joint_state_blocks(RawTopic(raw.topic, raw.msgtype, raw.timestamps[:50], data))
    arrays = [
        bytes(
            STORE.serialize_cdr(
                multiarray(np.random.default_rng(1), random_multiarray_layout(np.random.default_rng(k), width=2)),
                FLOAT64_MULTIARRAY,
            )
        )
        for k in range(5)
    ]
    arrays[3] = arrays[3][:-9]
    with pytest.raises(BagError, match=r"topic /cmd, message 3 .*cannot deserialize a std_msgs/Float64MultiArray"):
        decode_float64_multiarray(RawTopic("/cmd", FLOAT64_MULTIARRAY, np.arange(5), arrays))


def test_undecodable_trajectory_names_topic_and_index():
    header = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=1, nanosec=2), frame_id="")
    point = T["trajectory_msgs/msg/JointTrajectoryPoint"](
        positions=np.ones(1),
        velocities=np.zeros(0),
        accelerations=np.zeros(0),
        effort=np.zeros(0),
        time_from_start=T["builtin_interfaces/msg/Duration"](sec=0, nanosec=0),
    )
    msg = T[JOINT_TRAJECTORY](header=header, joint_names=["a"], points=[point])
    raws = [bytes(STORE.serialize_cdr(msg, JOINT_TRAJECTORY))] * 2
    raws[1] = raws[1][:-6]
    topic = RawTopic("/traj", JOINT_TRAJECTORY, np.array([5, 9]), raws)
    with pytest.raises(BagError, match=r"topic /traj, message 1 \(t=9 ns\): cannot deserialize"):
        decode_joint_trajectories(topic)
