"""Offline evaluation throughput on a 100k-message bag (messages per second), stage by stage.

Usage: ``.venv/bin/python bench/bench_bag.py [--messages 100000] [--storage mcap|sqlite3|both] [--decode-only]``

Generates, in a temporary directory, a bag of ``--messages`` ``sensor_msgs/JointState`` messages of the
PUMA 560 at 1 kHz (position, velocity, effort; jittered stamps; efforts = the model's torques), then
times ``robot-dynamics evaluate``'s pipeline (best of ``--repeat``):

* read: the raw messages out of the bag (``rosbags`` reader);
* decode: our vectorised CDR decoder vs ``rosbags``' per-message ``deserialize_cdr`` (the ratio), on
  the bag as written (zero padding) and with random bytes in every CDR alignment gap (what real
  writers leave there; the decoder compares only the meaningful bytes);
* differentiate: Savitzky–Golay accelerations on the real stamps;
* model: batched inverse dynamics with and without friction, plus the node-equivalent feed-forward;
* encode: the output bag's 4 computed topics, our vectorised encoder vs ``rosbags``' ``serialize_cdr``;
* write: the output bag (input copy + 4 topics through ``rosbags``' writer);
* end to end: ``evaluate BAG --csv --json``, the same with ``--out OUT``, and the plot alone.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from robot_dynamics import inverse_dynamics, load_robot
from robot_dynamics.bag import (
    FLOAT64_MULTIARRAY,
    JOINT_STATE,
    BagWriter,
    RawTopic,
    _cdr,
    decode_joint_states,
    read_topics,
    typestore,
)
from robot_dynamics.bag import evaluate as ev_mod
from robot_dynamics.bag.differentiate import SavitzkyGolay, savgol
from robot_dynamics.bag.report import write_csv, write_json, write_output_bag, write_plot

T0 = 1_700_000_000_000_000_000


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def make_bag(path: Path, count: int, storage: str) -> None:
    model = load_robot("puma560")
    rng = np.random.default_rng(0)
    ns = np.cumsum(np.r_[0, rng.integers(900_000, 1_100_000, count - 1)])
    t = ns * 1e-9
    w = 2 * np.pi * np.array([0.3, 0.5, 0.7, 1.1, 1.3, 1.7])
    q = model.named_poses["qn"] + 0.5 * np.sin(w * t[:, None])
    qd = 0.5 * w * np.cos(w * t[:, None])
    qdd = -0.5 * w**2 * np.sin(w * t[:, None])
    tau = inverse_dynamics(model, q, qd, qdd, friction=True, smooth=True)
    with BagWriter(path, storage=storage) as writer:
        writer.write_joint_states("joint_states", T0 + ns + 300_000, model.joint_names, q, qd, tau, stamps=T0 + ns)


def rosbags_decode(raw: RawTopic) -> np.ndarray:
    store = typestore()
    return np.array([store.deserialize_cdr(r, JOINT_STATE).effort for r in raw.data])


def garbage_padding(raw: RawTopic, seed: int = 1) -> RawTopic:
    """The same messages with random non-zero bytes in every alignment gap (lengths unchanged)."""
    layout = _cdr.parse_joint_state_layout(raw.data[0]).layout
    gaps = [p for p in layout.padding if 4 <= p < layout.size]
    matrix = _cdr.stack(raw.data, layout.size).copy()
    matrix[:, gaps] = np.random.default_rng(seed).integers(1, 256, size=(len(raw), len(gaps)), dtype=np.uint8)
    return RawTopic(raw.topic, raw.msgtype, raw.timestamps, [row.tobytes() for row in matrix])


def rosbags_encode(ev: ev_mod.Evaluation) -> int:
    """The output bag's messages with rosbags' serializer (same content as BagWriter's)."""
    store = typestore()
    types = store.types
    names = list(ev.joint_names)
    size = 0
    for k in range(ev.count):
        sec, nsec = divmod(int(ev.stamps[k]), 1_000_000_000)
        header = types["std_msgs/msg/Header"](
            stamp=types["builtin_interfaces/msg/Time"](sec=sec, nanosec=nsec), frame_id=""
        )
        for effort in (
            ev.model[k],
            ev.model_no_friction[k],
            ev.feedforward.effort[k] if ev.feedforward else ev.model[k],
        ):
            msg = types[JOINT_STATE](header=header, name=names, position=ev.q[k], velocity=ev.qd[k], effort=effort)
            size += len(store.serialize_cdr(msg, JOINT_STATE))
        layout = types["std_msgs/msg/MultiArrayLayout"](
            dim=[types["std_msgs/msg/MultiArrayDimension"](label="joints", size=6, stride=6)], data_offset=0
        )
        for data in (ev.qdd[k],):
            size += len(store.serialize_cdr(types[FLOAT64_MULTIARRAY](layout=layout, data=data), FLOAT64_MULTIARRAY))
    return size


def our_encode(ev: ev_mod.Evaluation) -> int:
    names = list(ev.joint_names)
    js = _cdr.joint_state_layout("", names, (6, 6, 6))
    fa = _cdr.float64_multiarray_layout([("joints", 6, 6)], 0, 6)
    size = 0
    for effort in (ev.model, ev.model_no_friction, ev.feedforward.effort if ev.feedforward else ev.model):
        size += _cdr.encode(js, ev.count, ev.stamps, {"position": ev.q, "velocity": ev.qd, "effort": effort}).size
    for data in (ev.qdd,):
        size += _cdr.encode(fa, ev.count, None, {"data": data}).size
    return size


def run(
    count: int, storage: str, repeat: int, workdir: Path, decode_only: bool = False
) -> list[tuple[str, float, float | None]]:
    model = load_robot("puma560")
    bag = workdir / f"in_{storage}"
    make_bag(bag, count, storage)
    rows: list[tuple[str, float, float | None]] = []

    raw_holder: dict[str, RawTopic] = {}

    def read() -> None:
        raw_holder.update(read_topics(bag, ["joint_states"]))

    rows.append(("read (rosbags reader)", best(read, repeat), None))
    raw = raw_holder["/joint_states"]
    ours = best(lambda: decode_joint_states(raw, model.joint_names), repeat)
    theirs = best(lambda: rosbags_decode(raw), 1)
    rows.append(("decode JointState (ours | rosbags)", ours, theirs))
    garbage = garbage_padding(raw)
    ours = best(lambda: decode_joint_states(garbage, model.joint_names), repeat)
    theirs = best(lambda: rosbags_decode(garbage), 1)
    rows.append(("decode, garbage in padding (ours | rosbags)", ours, theirs))
    series = decode_joint_states(raw, model.joint_names)
    if decode_only:
        return rows
    t = (series.stamps - series.stamps[0]) * 1e-9
    filt = SavitzkyGolay.for_times(t)
    rows.append(("differentiate (Savitzky-Golay)", best(lambda: savgol(t, series.velocity, (1,), filt), repeat), None))
    qdd = savgol(t, series.velocity, (1,), filt)[0]
    rows.append(
        (
            "inverse dynamics, friction + none",
            best(
                lambda: (
                    inverse_dynamics(model, series.position, series.velocity, qdd, friction=True, smooth=True),
                    inverse_dynamics(model, series.position, series.velocity, qdd, friction=False),
                ),
                repeat,
            ),
            None,
        )
    )
    rows.append(("node-equivalent feed-forward", best(lambda: ev_mod.feedforward_torques(model, series), repeat), None))
    ev = ev_mod.evaluate(model, series, [])
    rows.append(
        (
            "encode 4 output topics (ours | rosbags)",
            best(lambda: our_encode(ev), repeat),
            best(lambda: rosbags_encode(ev), 1),
        )
    )
    inputs = ev_mod.BagInputs(series, [], raw)
    rows.append(
        (
            "write output bag",
            best(lambda: write_output_bag(workdir / "out", ev, inputs, storage=storage, overwrite=True), repeat),
            None,
        )
    )

    def end_to_end() -> None:
        inp = ev_mod.read_inputs(bag, model)
        e = ev_mod.evaluate(model, inp.series, inp.trajectories)
        write_output_bag(workdir / "out", e, inp, storage=storage, overwrite=True)
        write_csv(workdir / "s.csv", e)
        write_json(workdir / "s.json", e)

    def summary_only() -> None:
        inp = ev_mod.read_inputs(bag, model)
        e = ev_mod.evaluate(model, inp.series, inp.trajectories)
        write_csv(workdir / "s.csv", e)
        write_json(workdir / "s.json", e)

    rows.append(("END TO END evaluate --csv --json", best(summary_only, repeat), None))
    rows.append(("END TO END evaluate --out --csv --json", best(end_to_end, repeat), None))
    rows.append(("plot (PNG, 100k points per curve)", best(lambda: write_plot(workdir / "p.png", ev), 1), None))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--storage", choices=("mcap", "sqlite3", "both"), default="both")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--decode-only", action="store_true", help="only the read and decode stages")
    args = parser.parse_args()
    storages = ["mcap", "sqlite3"] if args.storage == "both" else [args.storage]
    with tempfile.TemporaryDirectory() as tmp:
        for storage in storages:
            rows = run(args.messages, storage, args.repeat, Path(tmp), args.decode_only)
            n = args.messages
            print(f"\nbag: {n} JointState messages (PUMA 560, 6 joints), storage {storage}; best of {args.repeat}")
            print(f"{'stage':<42}{'s':>9}{'msg/s':>12}{'rosbags s':>11}{'rosbags msg/s':>15}{'speed-up':>10}")
            for name, ours, theirs in rows:
                line = f"{name:<42}{ours:9.3f}{n / ours:12,.0f}"
                if theirs is not None:
                    line += f"{theirs:11.3f}{n / theirs:15,.0f}{theirs / ours:9.1f}x"
                print(line)


if __name__ == "__main__":
    main()
