"""rosbag2 I/O: vectorised CDR vs rosbags byte for byte, round trips in sqlite3 and mcap, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from robot_dynamics.bag import (
    FLOAT64_MULTIARRAY,
    JOINT_STATE,
    JOINT_TRAJECTORY,
    STORAGES,
    TIME_BASE_RECEIVE,
    TIME_BASE_STAMPS,
    BagError,
    BagWriter,
    JointStateSeries,
    RawTopic,
    _cdr,
    bag_summary,
    decode_float64_multiarray,
    decode_joint_state_blocks,
    decode_joint_states,
    decode_joint_trajectories,
    read_joint_states,
    read_topics,
)

STORE = get_typestore(Stores.ROS2_KILTED)
T = STORE.types
RNG = np.random.default_rng(7)
T0 = 1_700_000_000_000_000_000


def joint_state_msg(names, pos, vel, eff, stamp_ns=123_456_789_012, frame_id=""):
    sec, nsec = divmod(stamp_ns, 1_000_000_000)
    header = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=sec, nanosec=nsec), frame_id=frame_id)
    arr = lambda v: np.asarray(v, dtype=np.float64)  # noqa: E731
    return T[JOINT_STATE](header=header, name=list(names), position=arr(pos), velocity=arr(vel), effort=arr(eff))


def serialize(msg, msgtype=JOINT_STATE) -> bytes:
    return bytes(STORE.serialize_cdr(msg, msgtype))


@pytest.mark.parametrize("frame_id", ["", "a", "base", "world_frame"])
@pytest.mark.parametrize("names", [["j1"], ["joint_1", "b", "ccc"], [f"j{i}" for i in range(7)]])
@pytest.mark.parametrize("fields", [(1, 1, 1), (1, 0, 0), (1, 1, 0), (1, 0, 1)])
def test_joint_state_encoding_matches_rosbags(frame_id, names, fields):
    n, rows = len(names), 4
    stamps = T0 + np.arange(rows) * 1_234_567 + 999_999_999
    blocks = {
        f: RNG.normal(size=(rows, n)) for f, on in zip(("position", "velocity", "effort"), fields, strict=True) if on
    }
    counts = tuple(n if on else 0 for on in fields)
    layout = _cdr.joint_state_layout(frame_id, names, counts)
    matrix = _cdr.encode(layout, rows, stamps, blocks)
    empty = np.zeros(0)
    for k in range(rows):
        msg = joint_state_msg(
            names,
            *(blocks[f][k] if f in blocks else empty for f in ("position", "velocity", "effort")),
            stamp_ns=int(stamps[k]),
            frame_id=frame_id,
        )
        assert matrix[k].tobytes() == serialize(msg)
        head = _cdr.parse_joint_state_layout(serialize(msg))
        assert head.names == tuple(names) and head.frame_id == frame_id
    assert np.array_equal(_cdr.decode_stamps(layout, matrix), stamps)
    for f, values in blocks.items():
        assert np.array_equal(_cdr.decode_block(layout, matrix, f), values)


@pytest.mark.parametrize("dims", [[], [("joints", 6, 6)], [("rows", 2, 6), ("cols", 3, 3)]])
def test_multiarray_encoding_matches_rosbags(dims):
    rows, m = 3, 6
    data = RNG.normal(size=(rows, m))
    layout = _cdr.float64_multiarray_layout(dims, 0, m)
    matrix = _cdr.encode(layout, rows, None, {"data": data})
    for k in range(rows):
        msg = T[FLOAT64_MULTIARRAY](
            layout=T["std_msgs/msg/MultiArrayLayout"](
                dim=[T["std_msgs/msg/MultiArrayDimension"](label=a, size=b, stride=c) for a, b, c in dims],
                data_offset=0,
            ),
            data=data[k],
        )
        raw = serialize(msg, FLOAT64_MULTIARRAY)
        assert matrix[k].tobytes() == raw
        assert _cdr.parse_float64_multiarray_layout(raw) == layout


def write_bag(path: Path, topics: dict[str, tuple[str, list[tuple[int, bytes]]]], storage=StoragePlugin.MCAP) -> None:
    """A bag written with rosbags alone (independent of BagWriter)."""
    writer = Writer(path, version=9, storage_plugin=storage)
    writer.open()
    for topic, (msgtype, messages) in topics.items():
        conn = writer.add_connection(topic, msgtype, typestore=STORE)
        for ts, raw in messages:
            writer.write(conn, ts, raw)
    writer.close()


def test_decoder_handles_irregular_streams(tmp_path):
    """Fast and fallback paths together: name order changes, extra joints, other lengths and frame ids."""
    names = ["a", "b", "c"]
    truth = RNG.normal(size=(3, 40, 3))  # position, velocity, effort in names order
    messages = []
    for k in range(40):
        order = [0, 1, 2]
        frame = ""
        extra: list[str] = []
        if k % 7 == 3:
            order = [2, 0, 1]  # same length, other bytes -> template mismatch
        if k % 11 == 5:
            extra = ["gripper"]  # longer message
        if k % 13 == 6:
            frame = "world"
        msg_names = [names[i] for i in order] + extra
        vals = [list(truth[f, k, order]) + [99.0] * len(extra) for f in range(3)]
        messages.append((T0 + k * 5_000_000, serialize(joint_state_msg(msg_names, *vals, T0 + k, frame))))
    write_bag(tmp_path / "bag", {"/joint_states": (JOINT_STATE, messages)})
    series = read_joint_states(tmp_path / "bag", "joint_states", names)
    assert series.names == tuple(names)
    assert np.array_equal(series.position, truth[0])
    assert series.velocity is not None and series.effort is not None
    assert np.array_equal(series.velocity, truth[1])
    assert np.array_equal(series.effort, truth[2])
    assert np.array_equal(series.stamps, T0 + np.arange(40))
    assert np.array_equal(series.timestamps, T0 + np.arange(40) * 5_000_000)
    # reordered request
    other = read_joint_states(tmp_path / "bag", "/joint_states", ["c", "a"])
    assert np.array_equal(other.position, truth[0][:, [2, 0]])


def test_missing_fields_are_none_or_nan(tmp_path):
    msgs = [
        (T0 + k, serialize(joint_state_msg(["a", "b"], [k, -k], [1.0, 2.0] if k % 2 else [], [], T0 + k)))
        for k in range(6)
    ]
    write_bag(tmp_path / "bag", {"/joint_states": (JOINT_STATE, msgs)})
    s = read_joint_states(tmp_path / "bag")
    assert s.effort is None
    assert s.velocity is not None
    assert np.isnan(s.velocity[0]).all() and np.array_equal(s.velocity[1], [1.0, 2.0])


@pytest.mark.parametrize("storage", STORAGES)
def test_round_trip_and_standard_typestores(tmp_path, storage):
    n_msgs, names = 50, ["joint1", "joint2", "joint3", "joint4", "joint5", "joint6"]
    ts = T0 + np.arange(n_msgs) * 4_000_000
    stamps = ts - 250_000
    q, qd, tau, cmd = (RNG.normal(size=(n_msgs, 6)) for _ in range(4))
    path = tmp_path / f"bag_{storage}"
    with BagWriter(path, storage=storage) as w:
        w.write_joint_states("joint_states", ts, names, q, qd, tau, stamps=stamps, frame_id="base")
        w.write_float64_multiarray("/cmd", ts + 1, cmd)
        w.write_joint_trajectory(
            "joint_trajectory", int(ts[0]) - 1, names, [0.0, 0.5, 1.25], q[:3], qd[:3], tau[:3], stamp=int(ts[0])
        )
    summary = bag_summary(path)
    assert summary.storage == storage
    assert summary.message_count == 2 * n_msgs + 1
    assert {t: s.count for t, s in summary.topics.items()} == {
        "/joint_states": n_msgs,
        "/cmd": n_msgs,
        "/joint_trajectory": 1,
    }
    # rosbags alone, every standard ROS 2 store of the distributions we target, reads it back
    for store in (Stores.ROS2_HUMBLE, Stores.ROS2_JAZZY, Stores.ROS2_KILTED):
        typestore = get_typestore(store)
        seen = {"/joint_states": 0, "/cmd": 0, "/joint_trajectory": 0}
        previous = -1
        with Reader(path) as reader:
            for conn, t, raw in reader.messages():
                assert t >= previous  # written in time order
                previous = t
                msg = typestore.deserialize_cdr(raw, conn.msgtype)
                k = seen[conn.topic]
                if conn.topic == "/joint_states":
                    assert conn.msgtype == JOINT_STATE and t == ts[k]
                    assert msg.name == names and msg.header.frame_id == "base"
                    assert msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec == stamps[k]
                    assert np.array_equal(msg.position, q[k]) and np.array_equal(msg.velocity, qd[k])
                    assert np.array_equal(msg.effort, tau[k])
                elif conn.topic == "/cmd":
                    assert np.array_equal(msg.data, cmd[k])
                    assert [(d.label, d.size, d.stride) for d in msg.layout.dim] == [("joints", 6, 6)]
                else:
                    assert conn.msgtype == JOINT_TRAJECTORY
                    assert [p.time_from_start.nanosec for p in msg.points] == [0, 500_000_000, 250_000_000]
                    assert np.array_equal(msg.points[2].accelerations, tau[2])
                seen[conn.topic] += 1
        assert seen == {"/joint_states": n_msgs, "/cmd": n_msgs, "/joint_trajectory": 1}
    # and our reader
    raw = read_topics(path)
    s = decode_joint_states(raw["/joint_states"])
    assert s.names == tuple(names) and s.frame_id == "base"
    assert np.array_equal(s.timestamps, ts) and np.array_equal(s.stamps, stamps)
    assert np.array_equal(s.position, q) and np.array_equal(s.effort, tau)
    arr = decode_float64_multiarray(raw["/cmd"])
    assert np.array_equal(arr.data, cmd) and arr.labels == ("joints",)
    (traj,) = decode_joint_trajectories(raw["/joint_trajectory"])
    assert traj.stamp == ts[0] and traj.timestamp == ts[0] - 1
    sampler = traj.sampler(names[::-1])
    assert np.array_equal(sampler.positions, q[:3, ::-1]) and sampler.kind == "quintic"


def test_writer_refuses_to_overwrite_and_cleans_up(tmp_path):
    path = tmp_path / "bag"
    with BagWriter(path) as w:
        w.write_float64_multiarray("x", [T0], [[1.0]])
    with pytest.raises(BagError, match="exists already"):
        BagWriter(path)
    with BagWriter(path, overwrite=True, storage="sqlite3") as w:
        w.write_float64_multiarray("y", [T0], [[2.0]])
    assert list(bag_summary(path).topics) == ["/y"]
    other = tmp_path / "notabag"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(BagError, match="not a rosbag2 directory"):
        BagWriter(other, overwrite=True)
    assert (other / "notes.txt").exists()
    with pytest.raises(BagError, match="unknown bag storage 'rosbag1'"):
        BagWriter(tmp_path / "z", storage="rosbag1")
    with pytest.raises(BagError, match="already has type"):
        w = BagWriter(tmp_path / "w")
        w.write_float64_multiarray("t", [T0], [[1.0]])
        w.write_joint_states("t", [T0], ["a"], [[1.0]])
    with pytest.raises(BagError, match=r"expected shape \(2, 1\)"):
        BagWriter(tmp_path / "v").write_joint_states("t", [T0, T0 + 1], ["a"], [[1.0]])


def test_read_errors(tmp_path):
    with pytest.raises(BagError, match="does not exist"):
        read_topics(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BagError, match="not a readable rosbag2 bag"):
        read_topics(tmp_path / "empty")
    path = tmp_path / "bag"
    with BagWriter(path) as w:
        w.write_joint_states("joint_states", [T0, T0 + 1], ["a", "b"], [[1.0, 2.0], [3.0, 4.0]])
        w.write_float64_multiarray("cmd", [T0], [[1.0]])
    with pytest.raises(BagError, match=r"no topic /states in the bag \(topics: /cmd \[std_msgs/Float64MultiArray\]"):
        read_joint_states(path, "states")
    with pytest.raises(
        BagError, match="topic /cmd has type std_msgs/Float64MultiArray, expected sensor_msgs/JointState"
    ):
        read_joint_states(path, "cmd")
    with pytest.raises(BagError, match=r"joint names do not match: missing \['c'\]; the message has \['a', 'b'\]"):
        read_joint_states(path, "joint_states", ["a", "c"])
    assert "/cmd" not in read_topics(path, ["joint_states", "cmd2"], optional=["cmd2"])


def test_malformed_joint_states(tmp_path):
    bad = [
        ("dupe", joint_state_msg(["a", "a"], [1.0, 2.0], [], []), "duplicate joint name 'a'"),
        ("short", joint_state_msg(["a", "b"], [1.0], [], []), "1 position values for 2 joint names"),
        ("nopos", joint_state_msg(["a", "b"], [], [1.0, 2.0], []), "no positions"),
    ]
    for name, msg, message in bad:
        write_bag(tmp_path / name, {"/joint_states": (JOINT_STATE, [(T0, serialize(msg))])})
        with pytest.raises(BagError, match=message):
            read_joint_states(tmp_path / name)


def test_progress_callback_counts_every_message(tmp_path):
    path = tmp_path / "bag"
    with BagWriter(path) as w:
        w.write_float64_multiarray("cmd", T0 + np.arange(2500), np.zeros((2500, 2)))
    counts: list[int] = []
    read_topics(path, progress=counts.append)
    assert sum(counts) == 2500 and len(counts) == 3


# ------------------------------------------------------------------------------------------------
# header stamps: zero, starting at zero, repeated, going backwards
# ------------------------------------------------------------------------------------------------
def stamped_series(stamps, receive=None) -> JointStateSeries:
    stamps = np.asarray(stamps, dtype=np.int64)
    receive = T0 + np.arange(stamps.size) * 33_000_000 if receive is None else np.asarray(receive, dtype=np.int64)
    q = np.zeros((stamps.size, 2))
    return JointStateSeries("/arm/joint_states", ("a", "b"), receive, stamps, q, q, None)


def test_stamps_starting_at_zero_are_stamps(caplog):
    stamps = np.arange(10) * 33_333_333  # a driver's clock, or simulated time, starting at 0
    s = stamped_series(stamps)
    assert s.stamped
    base, which = s.time_base()
    assert which == TIME_BASE_STAMPS and np.array_equal(base, stamps)
    assert np.array_equal(s.times(), stamps * 1e-9)
    assert not caplog.records


def test_all_zero_stamps_fall_back_to_receive_times_with_a_warning(caplog):
    s = stamped_series(np.zeros(10))
    assert not s.stamped
    with caplog.at_level("WARNING", logger="robot_dynamics.bag"):
        base, which = s.time_base()
    assert which == TIME_BASE_RECEIVE and np.array_equal(base, s.timestamps)
    assert np.allclose(s.times(), np.arange(10) * 0.033, rtol=0, atol=1e-12)
    assert "/arm/joint_states: every header stamp is zero; using the bag's receive times" in caplog.text


@pytest.mark.parametrize(
    ("stamps", "message"),
    [
        ([5, 10, 15, 12, 20], r"header stamps do not increase at message 3 \(15 -> 12 ns; stamps that go backwards"),
        ([5, 10, 10, 12, 20], r"header stamps do not increase at message 2 \(10 -> 10 ns; stamps that repeat"),
        ([0, 10, 20, 0, 10], r"header stamps do not increase at message 3 \(20 -> 0 ns; .*clock reset"),
    ],
)
def test_stamps_that_repeat_or_go_backwards_are_rejected(stamps, message):
    """Rejected, not re-sorted: receive order is the order the robot's software saw the states in."""
    with pytest.raises(BagError, match="/arm/joint_states: " + message):
        stamped_series(stamps).times()


def test_unstamped_stream_with_repeated_receive_times_is_rejected():
    s = stamped_series(np.zeros(4), receive=[T0, T0 + 1, T0 + 1, T0 + 2])
    with pytest.raises(BagError, match=r"receive times do not increase at message 2"):
        s.time_base()
    with pytest.raises(BagError, match="no joint states"):
        stamped_series(np.zeros(0)).time_base()


def test_layout_grouping_is_bounded_and_complete():
    """Many layouts of one length: at most MAX_LAYOUTS groups per length, the rest via rosbags, all decoded."""
    msgs, raws = [], []
    for k in range(400):
        # one length, 151 layouts: the first 150 match two messages each, the last one 100
        order = [f"j{k // 2 if k < 300 else 999:03d}_{i}" for i in range(4)]
        if k % 97 == 5:
            order = order[:3]  # another length
        msgs.append(joint_state_msg(order, RNG.normal(size=len(order)), [], [], T0 + k))
        raws.append(serialize(msgs[-1]))
    groups, rest = _cdr.group_by_layout(raws, _cdr.parse_joint_state_layout)
    sizes = {len(raws[int(g.rows[0])]) for g in groups}
    assert len(groups) <= _cdr.MAX_LAYOUTS * len(sizes) and rest.size >= 400 - 2 * _cdr.MAX_LAYOUTS - 10
    rows = np.sort(np.concatenate([g.rows for g in groups] + [rest]))
    assert np.array_equal(rows, np.arange(400))  # every message exactly once
    blocks = decode_joint_state_blocks(RawTopic("/js", JOINT_STATE, np.arange(400), raws))
    for block in blocks:
        for i, k in enumerate(block.rows.tolist()):
            assert block.names == tuple(msgs[k].name) and block.stamps[i] == T0 + k
            assert np.array_equal(block.fields["position"][i], msgs[k].position)


def test_the_bag_package_exports_every_name_lazily():
    """Every name of ``robot_dynamics.bag.__all__`` is its reader/decode/writer object, loaded on
    first use: importing the differentiation alone does not load rosbags."""
    import subprocess
    import sys

    import robot_dynamics.bag as bag
    from robot_dynamics.bag import decode, reader, writer

    homes = {name: module for module in (reader, decode, writer) for name in vars(module)}
    for name in bag.__all__:
        assert getattr(bag, name) is getattr(homes[name], name), name
    assert set(bag.__all__) <= set(dir(bag))
    with pytest.raises(AttributeError, match="has no attribute 'io'"):
        _ = bag.io
    code = "import sys, robot_dynamics.bag.differentiate; print('rosbags' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
