"""Acceptance: the stock Franka Panda URDF and a bag as a real Panda driver records it.

The unmodified ``panda.urdf`` of example-robot-data, loaded as the arm up to ``panda_hand_tcp`` with
both finger joints locked (the ``--tip-link``/``--lock-joint`` options). The engine simulates it on
an exciting trajectory (``bag/sample.py``: computed torque + PD, the engine's ``simulate``); the
samples are written with rosbags' own ``Writer`` (sqlite3) the way the new ``franka_ros2`` driver
publishes them: joints named ``fer_joint1..7`` (plus the fingers), and CDR padding bytes holding
garbage, as middlewares leave them. ``robot-dynamics evaluate BAG --robot panda.urdf --tip-link
panda_hand_tcp --lock-joint ... --joint-map fer_joint1=panda_joint1 ...`` must then give torques
equal to the recorded efforts (the differentiation of the recorded velocity is the only difference)
and exactly the engine's inverse dynamics at the accelerations it used.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

import robot_dynamics as rd
from robot_dynamics.bag import decode_float64_multiarray, read_joint_states, read_topics
from robot_dynamics.bag.sample import SampleSettings, simulate_sample
from robot_dynamics.cli import main

PANDA = EXAMPLE_ROBOTS / "panda_description" / "urdf" / "panda.urdf"
TIP = "panda_hand_tcp"
FINGERS = ("panda_finger_joint1", "panda_finger_joint2")
ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
DRIVER = tuple(f"fer_joint{i}" for i in range(1, 8))  # franka_ros2's names for the same joints
DRIVER_FINGERS = ("fer_finger_joint1", "fer_finger_joint2")
TYPESTORE = get_typestore(Stores.ROS2_KILTED)
JOINT_STATE = "sensor_msgs/msg/JointState"


def padding_offsets(raw: bytes) -> list[int]:
    """The padding bytes of a serialised ``sensor_msgs/JointState`` (little-endian CDR), by walking its
    layout: header (stamp, frame_id), names, then three float64 sequences (8-byte aligned when not
    empty). Offsets count from the start of ``raw``; alignment from the end of the 4-byte
    encapsulation header."""
    assert raw[:2] == b"\x00\x01", "little-endian CDR"
    pads: list[int] = []
    pos = 4

    def align(n: int) -> None:
        nonlocal pos
        gap = (-(pos - 4)) % n
        pads.extend(range(pos, pos + gap))
        pos += gap

    def u32() -> int:
        nonlocal pos
        align(4)
        (value,) = struct.unpack_from("<I", raw, pos)
        pos += 4
        return int(value)

    def string() -> None:
        nonlocal pos
        size = u32()  # characters + NUL (read before moving: u32 moves pos)
        pos += size

    u32(), u32()  # stamp sec, nanosec
    string()  # frame_id
    for _ in range(u32()):
        string()
    for _ in range(3):  # position, velocity, effort
        count = u32()
        if count:
            align(8)
            pos += 8 * count
    assert pos <= len(raw)
    pads.extend(range(pos, len(raw)))  # trailing alignment, if any
    return pads


def joint_state_cdr(stamp: int, names: list[str], q: np.ndarray, qd: np.ndarray, tau: np.ndarray) -> bytes:
    types = TYPESTORE.types
    header = types["std_msgs/msg/Header"](
        stamp=types["builtin_interfaces/msg/Time"](sec=stamp // 1_000_000_000, nanosec=stamp % 1_000_000_000),
        frame_id="",
    )
    msg = types[JOINT_STATE](header=header, name=names, position=q, velocity=qd, effort=tau)
    return bytes(TYPESTORE.serialize_cdr(msg, JOINT_STATE))


def with_garbage(raw: bytes, rng: np.random.Generator) -> bytes:
    """``raw`` with every padding byte set to a random non-zero value; rosbags still reads the same message."""
    out = bytearray(raw)
    pads = padding_offsets(raw)
    assert pads and all(raw[k] == 0 for k in pads), "padding bytes are zero as rosbags writes them"
    for k, value in zip(pads, rng.integers(1, 256, len(pads)).tolist(), strict=True):
        out[k] = value
    a, b = (TYPESTORE.deserialize_cdr(m, JOINT_STATE) for m in (raw, bytes(out)))
    assert a.name == b.name and a.header.stamp.sec == b.header.stamp.sec
    for field in ("position", "velocity", "effort"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    return bytes(out)


def panda_model() -> rd.RobotModel:
    return rd.load_robot(PANDA, tip_link=TIP, locked_joints=dict.fromkeys(FINGERS, 0.0))


def write_driver_bag(path: Path, data: object, garbage: bool) -> None:
    """The simulated samples as franka_ros2 would record them (rosbags' Writer, sqlite3)."""
    rng = np.random.default_rng(1234)
    names = [*DRIVER, *DRIVER_FINGERS]
    fingers = np.zeros(2)
    writer = Writer(path, version=Writer.VERSION_LATEST, storage_plugin=StoragePlugin.SQLITE3)
    writer.open()
    try:
        conn = writer.add_connection("/joint_states", JOINT_STATE, typestore=TYPESTORE)
        for k in range(len(data.t)):  # type: ignore[attr-defined]
            q = np.concatenate([data.q[k], fingers])  # type: ignore[attr-defined]
            qd = np.concatenate([data.qd[k], fingers])  # type: ignore[attr-defined]
            tau = np.concatenate([data.tau[k], fingers])  # type: ignore[attr-defined]
            raw = joint_state_cdr(int(data.stamps[k]), names, q, qd, tau)  # type: ignore[attr-defined]
            writer.write(conn, int(data.timestamps[k]), with_garbage(raw, rng) if garbage else raw)  # type: ignore[attr-defined]
    finally:
        writer.close()


@pytest.fixture(scope="module")
def simulated() -> object:
    model = panda_model()
    assert model.joint_names == list(ARM) and model.tip_link == TIP
    return simulate_sample(SampleSettings(robot=str(PANDA), duration=2.0, rate=250.0), model)


@pytest.mark.parametrize("padding", ["garbage", "zero"])
def test_evaluate_gives_the_recorded_panda_efforts(
    tmp_path: Path, simulated: object, capsys: pytest.CaptureFixture[str], padding: str
) -> None:
    bag = tmp_path / "franka_bag"
    write_driver_bag(bag, simulated, garbage=padding == "garbage")
    out = tmp_path / "evaluation"
    argv = ["evaluate", str(bag), "--robot", str(PANDA), "--tip-link", TIP, "--json", "-", "--out", str(out)]
    argv += [a for f in FINGERS for a in ("--lock-joint", f)]
    argv += [a for d, m in zip(DRIVER, ARM, strict=True) for a in ("--joint-map", f"{d}={m}")]
    status = main(argv)
    captured = capsys.readouterr()
    assert status == 0, captured.err
    summary = json.loads(captured.out)
    count = len(simulated.t)  # type: ignore[attr-defined]
    assert summary["messages"] == count and summary["robot"] == "panda"
    assert [j["joint"] for j in summary["joints"]] == list(ARM)
    for row in summary["joints"]:
        # recorded = applied torque; the model's only error is the differentiated acceleration
        assert row["rms_error_friction"] <= 2e-3 * max(row["rms_measured"], 1.0), row
        assert row["rms_error_friction"] < row["rms_error_no_friction"]  # the URDF's joint friction shows

    # the output bag: the driver's names, and exactly the engine's torques at the accelerations used
    model = panda_model()
    efforts = read_joint_states(out, "/robot_dynamics/model_efforts")
    assert efforts.names == DRIVER
    qdd = decode_float64_multiarray(
        read_topics(out, ["/robot_dynamics/acceleration"])["/robot_dynamics/acceleration"]
    ).data
    expected = rd.inverse_dynamics(model, efforts.position, efforts.velocity, qdd, smooth=True)  # evaluate's default
    assert efforts.effort is not None
    np.testing.assert_allclose(efforts.effort, expected, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(efforts.position, simulated.q)  # type: ignore[attr-defined]
    # and against the simulator's true accelerations the recorded efforts are the engine's to integration accuracy
    truth = rd.inverse_dynamics(model, simulated.q, simulated.qd, simulated.qdd)  # type: ignore[attr-defined]
    np.testing.assert_allclose(truth, simulated.tau, rtol=1e-6, atol=1e-6)  # type: ignore[attr-defined]
