"""Task-space quantities vs Pinocchio: a frame's pose, Jacobian, Jdot qd and operational-space inertia.

  .venv/bin/python bench/bench_task_space.py [--states 100000] [--robots puma560,ur5,panda]

The tool frame of PUMA 560 (6 DoF, DH; Pinocchio built from the model's joint frames), UR5 (``tool0``)
and Panda (``panda_hand_tcp``, fingers locked), base axes. Ours: the public functions
(``rd.link_pose``, ``rd.link_jacobian``, ``rd.jacobian_dot_qdot``, ``rd.operational_space_inertia``,
input validation included) on the Python and the native backend. Pinocchio's Python binding, what a
user calls for the same numbers:

* pose: ``forwardKinematics(q)`` + ``updateFramePlacement``;
* Jacobian: ``computeFrameJacobian(q, frame, LOCAL_WORLD_ALIGNED)``;
* Jdot qd: ``forwardKinematics(q, v, 0)`` + ``getFrameClassicalAcceleration(frame, LOCAL_WORLD_ALIGNED)``;
* Lambda: ``crba`` (the upper triangle mirrored) + ``computeFrameJacobian``, then NumPy
  ``inv(J @ solve(M, J.T))`` — Pinocchio has no operational-space inertia of a frame.

Single: time per call. Batch: one call of ours for N states vs Pinocchio called once per state in a
Python loop (throughput ratio; our batches on ``rd.batch_threads()`` threads). Lambda's batch uses
states where ``J D^-1 J^T`` has a condition number below 1e8 (ours refuses the singular ones unless a
pseudo-inverse is asked for). Times: the minimum over repeats (the machine is shared). Every quantity
is checked against Pinocchio before it is timed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
import timeit
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import robot_dynamics as rd
from robot_dynamics.model import RobotModel

ROBOTS = Path(
    str(
        importlib.metadata.distribution("example-robot-data").locate_file(
            "cmeel.prefix/share/example-robot-data/robots"
        )
    )
)
URDFS = {
    "panda": ("panda_description/urdf/panda.urdf", "panda_hand_tcp", ("panda_finger_joint1", "panda_finger_joint2")),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", "tool0", ()),
}


def best(function: Callable[[], object], number: int, repeat: int = 7) -> float:
    """Seconds per call: the minimum over ``repeat`` runs of ``number`` calls."""
    return min(timeit.repeat(function, number=number, repeat=repeat)) / number


def load(name: str) -> tuple[RobotModel, Any, int]:
    """Our model, Pinocchio's and the id of its tool frame."""
    import pinocchio as pin

    if name == "puma560":
        model = rd.load_robot("puma560")
        pm = pin.Model()
        parent = 0
        for joint in model.joints:
            placement = pin.SE3(joint.origin[:3, :3].copy(), joint.origin[:3, 3].copy())
            along_z = np.array_equal(joint.axis, [0.0, 0.0, 1.0])  # Pinocchio's fastest joint type where possible
            kind = pin.JointModelRZ() if along_z else pin.JointModelRevoluteUnaligned(joint.axis.copy())
            parent = pm.addJoint(parent, kind, placement, joint.name)
            body = pin.Inertia(joint.link.mass, joint.link.com.copy(), joint.link.inertia.copy())
            pm.appendBodyToJoint(parent, body, pin.SE3.Identity())
        pm.armature = np.array(model.arrays.reflected_motor_inertia)
        tool = pin.SE3(model.tool[:3, :3].copy(), model.tool[:3, 3].copy())
        return model, pm, pm.addFrame(pin.Frame("tool", parent, tool, pin.FrameType.OP_FRAME))
    relative, tip, locked = URDFS[name]
    path = ROBOTS / relative
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = rd.load_robot(str(path), tip_link=tip, locked_joints=dict.fromkeys(locked, 0.0))
    pm = pin.buildModelFromUrdf(str(path))
    if locked:
        pm = pin.buildReducedModel(pm, [pm.getJointId(j) for j in locked], pin.neutral(pm))
    assert np.array_equal(model.base, np.eye(4))  # Pinocchio's world is our base frame
    return model, pm, pm.getFrameId(tip)


@dataclass
class Row:
    robot: str
    what: str
    python: float
    native: float
    pinocchio: float
    batch: bool


def measure(name: str, states: int) -> list[Row]:
    import pinocchio as pin

    model, pm, frame = load(name)
    data = pm.createData()
    n = model.dof
    world = pin.LOCAL_WORLD_ALIGNED
    rng = np.random.default_rng(0)
    q, qd = rng.uniform(-2, 2, (2, n))
    zero = np.zeros(n)
    rd.prepare(model)  # the native library (built or loaded from the cache)

    def pose(q: np.ndarray) -> np.ndarray:
        pin.forwardKinematics(pm, data, q)
        return pin.updateFramePlacement(pm, data, frame).homogeneous

    def jacobian(q: np.ndarray) -> np.ndarray:
        return pin.computeFrameJacobian(pm, data, q, frame, world)

    def bias(q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        pin.forwardKinematics(pm, data, q, qd, zero)
        return pin.getFrameClassicalAcceleration(pm, data, frame, world).vector

    def inertia(q: np.ndarray) -> np.ndarray:
        M = pin.crba(pm, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        J = pin.computeFrameJacobian(pm, data, q, frame, world)
        return np.linalg.inv(J @ np.linalg.solve(M, J.T))

    computations: list[tuple[str, Callable[..., np.ndarray], Callable[..., np.ndarray], int]] = [
        ("pose", lambda b, *x: rd.link_pose(model, *x, backend=b), pose, 1),
        ("Jacobian", lambda b, *x: rd.link_jacobian(model, *x, backend=b), jacobian, 1),
        ("Jdot qd", lambda b, *x: rd.jacobian_dot_qdot(model, *x, backend=b), bias, 2),
        ("Lambda", lambda b, *x: rd.operational_space_inertia(model, *x, backend=b), inertia, 1),
    ]
    Q, QD = rng.uniform(-2, 2, (2, states, n))
    conditions = rd.task_space(model, Q, inertia=True, rcond=1e-12).condition
    assert conditions is not None
    fine = conditions < 1e8
    rows: list[Row] = []
    for what, ours, theirs, arity in computations:
        batch = (Q[fine], QD[fine]) if what == "Lambda" else (Q, QD)
        rows += compare(name, what, ours, theirs, (q, qd)[:arity], batch[:arity])
    return rows


def compare(
    name: str,
    what: str,
    ours: Callable[..., np.ndarray],
    theirs: Callable[..., np.ndarray],
    args: tuple[np.ndarray, ...],
    batch: tuple[np.ndarray, ...],
) -> list[Row]:
    """One state (after checking that both give the same numbers) and a batch, ours and Pinocchio's."""
    expected = theirs(*args)
    for backend in ("python", "native"):
        error = np.abs(ours(backend, *args) - expected).max() / max(1.0, np.abs(expected).max())
        assert error < 1e-10, (name, what, backend, error)
    single = {b: best(lambda b=b: ours(b, *args), 2000, 9) for b in ("python", "native")}
    one = Row(name, what, single["python"], single["native"], best(lambda: theirs(*args), 2000, 9), False)

    def loop() -> None:
        for row in zip(*batch, strict=True):
            theirs(*row)

    many = {b: best(lambda b=b: ours(b, *batch), 1, 3 if b == "python" else 5) for b in ("python", "native")}
    count = len(batch[0])
    return [one, Row(name, f"{what}, {count} states", many["python"], many["native"], best(loop, 1, 3), True)]


def fmt(seconds: float) -> str:
    return f"{seconds * 1e6:.2f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--states", type=int, default=100_000, help="batch size (default 100000)")
    parser.add_argument("--robots", default="puma560,ur5,panda", help="comma-separated: puma560, ur5, panda")
    args = parser.parse_args()
    rows = [row for name in args.robots.split(",") for row in measure(name, args.states)]
    print("| robot | computation | python | native | Pinocchio | python / Pinocchio | native / Pinocchio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        if r.batch:
            ratios = [f"{r.pinocchio / t:.1f}× faster" for t in (r.python, r.native)]
            theirs = f"{fmt(r.pinocchio)} (loop)"
        else:
            ratios = [f"{t / r.pinocchio:.2f}×" for t in (r.python, r.native)]
            theirs = fmt(r.pinocchio)
        print(f"| {r.robot} | {r.what} | {fmt(r.python)} | {fmt(r.native)} | {theirs} | {' | '.join(ratios)} |")
    print()
    print("single rows: time per call (ratio > 1: slower than Pinocchio); batch rows: one call of ours for all")
    print(f"states vs Pinocchio called once per state in a Python loop; our batches on {rd.batch_threads()} threads.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
