"""Task-space quantities of every frame of the chain against Pinocchio and finite differences.

For each robot and every frame (base, each link, the tool): the pose (``data.oMf``), the geometric
Jacobian in base and link axes (``getFrameJacobian``, ``LOCAL_WORLD_ALIGNED`` / ``LOCAL``), ``Jdot qd``
(``getFrameClassicalAcceleration`` after ``forwardKinematics(q, v, 0)``) and the operational-space
inertia ``(J M^-1 J^T)^-1`` (``crba`` with the motor inertia as armature, inverted with NumPy) at
random states, one batch and single states, on both backends. Robots: PUMA 560 built in Pinocchio from
its DH table (with a tool offset), UR5 and Panda (with ``tip_link`` ``panda_hand_tcp`` and the fingers
locked, as the README loads it) by Pinocchio's URDF parser; the Stanford arm and the SCARA (prismatic
joints) through the model's joint frames, and independently by central differences of the pose.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from engine_reference import (
    EXAMPLE_ROBOTS,
    PUMA_DH,
    max_relative_error,
    pinocchio_from_model,
    pinocchio_puma560,
    puma560,
    random_states,
)

import robot_dynamics as rd
from robot_dynamics.dynamics.kinematics import frame_poses
from robot_dynamics.dynamics.operational_space import MAX_CONDITION
from robot_dynamics.dynamics.task_space import link_names
from robot_dynamics.errors import StateError
from robot_dynamics.model import RobotModel, rot_x, rot_z, trans

pin = pytest.importorskip("pinocchio")

TOL = 1e-10
COUNT = 60
SINGLE = 4
BACKENDS = ("native", "python")
TOOL_OFFSET = trans(0.01, -0.02, 0.13) @ rot_z(0.3) @ rot_x(-0.2)  # a tool for the DH robot


def _panda() -> RobotModel:
    path = EXAMPLE_ROBOTS / "panda_description/urdf/panda.urdf"
    locked = {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}
    return rd.load_robot(str(path), tip_link="panda_hand_tcp", locked_joints=locked)


def _ur5() -> RobotModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_robot(str(EXAMPLE_ROBOTS / "ur_description/urdf/ur5_robot.urdf"), tip_link="tool0")


def _pinocchio_urdf(relative: str, locked: tuple[str, ...] = ()) -> Any:
    pm = pin.buildModelFromUrdf(str(EXAMPLE_ROBOTS / relative))
    if locked:
        pm = pin.buildReducedModel(pm, [pm.getJointId(j) for j in locked], pin.neutral(pm))
    return pm


def _puma_with_tool() -> tuple[RobotModel, Any, dict[str, int]]:
    """Our PUMA 560 with a tool offset; Pinocchio's, built from the DH table, with a frame on each joint
    (the joint frame F_i: DH frame i-1 turned by the joint) and the tool on joint 6 (DH frame 6, then
    the offset)."""
    model = puma560()
    model = model.with_changes(tool=model.tool @ TOOL_OFFSET)
    pm = pinocchio_puma560(motor_inertia=True)
    frames = {"base_link": 0}
    for i in range(1, 7):
        frames[f"link{i}"] = pm.addFrame(pin.Frame(f"F{i}", i, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
    d, a, alpha = PUMA_DH[-1]
    tail = trans(z=d) @ trans(x=a) @ rot_x(alpha) @ TOOL_OFFSET  # DH frame 6 in F_6, then the tool
    placement = pin.SE3(tail[:3, :3].copy(), tail[:3, 3].copy())
    frames["tool"] = pm.addFrame(pin.Frame("tool", 6, placement, pin.FrameType.OP_FRAME))
    return model, pm, frames


def _named_frames(model: RobotModel, pm: Any) -> dict[str, int]:
    """Pinocchio's frame of each of our frames, by name (URDF links)."""
    return {name: pm.getFrameId(name) for name in link_names(model)}


def _pinocchio_states(pm: Any, frames: dict[str, int], q: np.ndarray, qd: np.ndarray) -> dict[str, dict[str, Any]]:
    """Per frame: pose, Jacobian (world-aligned and local), classical acceleration (both), and J M^-1 J^T."""
    data = pm.createData()
    out: dict[str, dict[str, list[np.ndarray]]] = {
        name: {k: [] for k in ("pose", "J", "J_local", "a", "a_local", "A")} for name in frames
    }
    for qs, qds in zip(q, qd, strict=True):
        pin.computeJointJacobians(pm, data, qs)
        pin.forwardKinematics(pm, data, qs, qds, np.zeros(pm.nv))
        pin.updateFramePlacements(pm, data)
        M = pin.crba(pm, data, qs)
        M = np.triu(M) + np.triu(M, 1).T
        for name, fid in frames.items():
            o = out[name]
            o["pose"].append(data.oMf[fid].homogeneous.copy())
            J = pin.getFrameJacobian(pm, data, fid, pin.LOCAL_WORLD_ALIGNED).copy()
            o["J"].append(J)
            o["J_local"].append(pin.getFrameJacobian(pm, data, fid, pin.LOCAL).copy())
            o["a"].append(pin.getFrameClassicalAcceleration(pm, data, fid, pin.LOCAL_WORLD_ALIGNED).vector.copy())
            o["a_local"].append(pin.getFrameClassicalAcceleration(pm, data, fid, pin.LOCAL).vector.copy())
            o["A"].append(J @ np.linalg.solve(M, J.T))
    return {name: {k: np.array(v) for k, v in values.items()} for name, values in out.items()}


def _to_base(model: RobotModel, ref: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Pinocchio's world quantities in our base frame F_0 (the URDF root; model.base is F_0 in it)."""
    Rb = model.base[:3, :3]
    S = np.kron(np.eye(2), Rb.T)
    return {
        "pose": np.linalg.inv(model.base) @ ref["pose"],
        "J": S @ ref["J"],
        "J_local": ref["J_local"],
        "a": (S @ ref["a"][..., None])[..., 0],
        "a_local": ref["a_local"],
        "A": S @ ref["A"] @ S.T,
    }


def _compare_frames(model: RobotModel, pm: Any, frames: dict[str, int], seed: int) -> dict[str, float]:
    """Pose, Jacobian (both axes) and Jdot qd of every frame, batch and single states, both backends, and
    the operational-space inertia wherever it exists; returns the largest errors per quantity."""
    n = model.dof
    q, qd, _ = random_states(seed, n, COUNT)
    reference = _pinocchio_states(pm, frames, q, qd)
    errors: dict[str, float] = {}

    def record(key: str, actual: np.ndarray, expected: np.ndarray) -> None:
        errors[key] = max(errors.get(key, 0.0), max_relative_error(actual, expected))

    for name in frames:
        ref = _to_base(model, reference[name])
        cases: list[tuple[np.ndarray, np.ndarray, Any]] = [(q, qd, slice(None))]  # the batch, single states
        cases += [(q[s], qd[s], s) for s in range(SINGLE)]
        for backend in BACKENDS:
            for qs, qds, pick in cases:
                record("pose", rd.link_pose(model, qs, link=name, backend=backend), ref["pose"][pick])
                record("J base", rd.link_jacobian(model, qs, link=name, backend=backend), ref["J"][pick])
                J_link = rd.link_jacobian(model, qs, link=name, axes="link", backend=backend)
                record("J link", J_link, ref["J_local"][pick])
                record("Jdot qd base", rd.jacobian_dot_qdot(model, qs, qds, link=name, backend=backend), ref["a"][pick])
                a_link = rd.jacobian_dot_qdot(model, qs, qds, link=name, axes="link", backend=backend)
                record("Jdot qd link", a_link, ref["a_local"][pick])
        _compare_inertia(model, name, q, ref, record)
    bad = {k: e for k, e in errors.items() if not e < TOL}
    assert not bad, f"{model.name}: {bad}"
    print(f"\n{model.name}: " + ", ".join(f"{k} {e:.1e}" for k, e in sorted(errors.items())))
    return errors


def _compare_inertia(model: RobotModel, name: str, q: np.ndarray, ref: dict[str, np.ndarray], record: Any) -> None:
    """Lambda of the six, the linear and the angular rows where the reference inverse is well conditioned
    (condition number below 1e5, so that the reference itself keeps 1e-11), and the pseudo-inverse
    (``rcond``) where the task is rank deficient — a frame fewer joints move — against NumPy's pinv of the
    reference, at the states whose eigenvalues are either well conditioned or clearly zero."""
    for rows, picked in (("all", slice(0, 6)), ("linear", slice(0, 3)), ("angular", slice(3, 6))):
        A = ref["A"][:, picked, picked]
        mu = np.linalg.eigvalsh(A)
        ratio = mu / np.maximum(mu[:, -1:], 1e-300)
        fine = ratio[:, 0] > 1e-5
        clear = np.all((ratio > 1e-5) | (ratio < 1e-12), axis=1) & ~fine
        for backend in BACKENDS:
            if fine.any():
                got = rd.operational_space_inertia(model, q[fine], link=name, rows=rows, backend=backend)
                record(f"Lambda {rows}", got, np.linalg.inv(A[fine]))
                index = int(np.flatnonzero(fine)[0])
                one = rd.operational_space_inertia(model, q[index], link=name, rows=rows, backend=backend)
                record(f"Lambda {rows}", one, np.linalg.inv(A[index]))
            if clear.any():
                pseudo = rd.operational_space_inertia(
                    model, q[clear], link=name, rows=rows, rcond=1e-9, backend=backend
                )
                record(f"Lambda {rows} pinv", pseudo, np.linalg.pinv(A[clear], rcond=1e-9, hermitian=True))


def test_puma560_dh_every_frame_against_pinocchio() -> None:
    model, pm, frames = _puma_with_tool()
    assert set(frames) == set(link_names(model))
    _compare_frames(model, pm, frames, seed=70)


def test_ur5_every_frame_against_pinocchio() -> None:
    model = _ur5()
    pm = _pinocchio_urdf("ur_description/urdf/ur5_robot.urdf")
    _compare_frames(model, pm, _named_frames(model, pm), seed=71)


def test_panda_tcp_locked_fingers_every_frame_against_pinocchio() -> None:
    model = _panda()
    assert model.tip_link == "panda_hand_tcp" and model.dof == 7
    pm = _pinocchio_urdf("panda_description/urdf/panda.urdf", ("panda_finger_joint1", "panda_finger_joint2"))
    _compare_frames(model, pm, _named_frames(model, pm), seed=72)


@pytest.mark.parametrize("name", ["stanford", "scara"])
def test_prismatic_dh_robots_against_pinocchio_from_the_model_frames(name: str) -> None:
    """Prismatic joints (Pinocchio built from the model's joint frames: checks the engine's algorithm)."""
    model = rd.load_robot(name)
    pm = pinocchio_from_model(model)
    frames = {"base_link": 0}
    for i, joint in enumerate(model.joints, start=1):
        frames[joint.link_name] = pm.addFrame(pin.Frame(f"F{i}", i, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
    tool = pin.SE3(model.tool[:3, :3].copy(), model.tool[:3, 3].copy())
    frames[model.tip_link] = pm.addFrame(pin.Frame("tool", model.dof, tool, pin.FrameType.OP_FRAME))
    _compare_frames(model, pm, frames, seed=73)


def _vee(W: np.ndarray) -> np.ndarray:
    return np.array([W[2, 1], W[0, 2], W[1, 0]])


@pytest.mark.parametrize("name", ["stanford", "scara", "puma560_modified"])
def test_jacobian_and_jdot_qdot_are_derivatives_of_the_pose(name: str) -> None:
    """Independently of Pinocchio, from the NumPy forward kinematics of every frame along q(t) = q + t qd
    (fourth-order central differences): J qd = [dp/dt; w] with [w]x = dR/dt R^T, and Jdot qd =
    [d2p/dt2; alpha] with [alpha]x = d2R/dt2 R^T - [w]x^2."""
    model = rd.load_robot(name)
    q, qd, _ = random_states(74, model.dof, 10)
    h = 1e-3

    def poses(qs: np.ndarray) -> np.ndarray:  # F_0, F_1..F_n, the tool (NumPy kinematics, not the compiled program)
        inner = frame_poses(model, qs)
        return np.concatenate([np.eye(4)[None], inner, (inner[-1] @ model.tool)[None]])

    for a, b in zip(q, qd, strict=True):
        at = {k: poses(a + k * h * b) for k in (-2, -1, 0, 1, 2)}
        first = (8 * (at[1] - at[-1]) - (at[2] - at[-2])) / (12 * h)
        second = (-at[2] + 16 * at[1] - 30 * at[0] + 16 * at[-1] - at[-2]) / (12 * h * h)
        for index, link in enumerate([model.base_link, *(j.link_name for j in model.joints), model.tip_link]):
            R = at[0][index, :3, :3]
            W = first[index, :3, :3] @ R.T
            twist = np.concatenate([first[index, :3, 3], _vee(W)])
            bias = np.concatenate([second[index, :3, 3], _vee(second[index, :3, :3] @ R.T - W @ W)])
            got = rd.task_space(model, a, b, link=link, inertia=False)
            assert np.allclose(got.pose, at[0][index], rtol=0.0, atol=1e-12), link
            assert np.allclose(got.jacobian @ b, twist, rtol=0.0, atol=1e-8), link
            assert np.allclose(got.jdot_qdot, bias, rtol=0.0, atol=1e-6), link


def test_task_space_bundles_the_four_quantities_and_frames_are_the_models() -> None:
    model = _panda()
    q, qd, _ = random_states(75, 7, 20)
    for link in (None, "panda_link4", 4, 0, "panda_link0"):
        both = rd.task_space(model, q, qd, link=link, axes="link", inertia=True, rows="linear", rcond=1e-9)
        assert np.array_equal(both.pose, rd.link_pose(model, q, link=link))
        assert np.array_equal(both.jacobian, rd.link_jacobian(model, q, link=link, axes="link"))
        assert np.array_equal(both.jdot_qdot, rd.jacobian_dot_qdot(model, q, qd, link=link, axes="link"))
        inertia = rd.operational_space_inertia(model, q, link=link, axes="link", rows="linear", rcond=1e-9)
        assert both.inertia is not None and np.array_equal(both.inertia, inertia)
        assert both.rows == (0, 1, 2) and both.condition is not None and both.rank is not None
    # the tool frame is the frame of rd.jacobian and rd.forward_kinematics; link i is F_i of frame_poses
    assert max_relative_error(rd.link_jacobian(model, q), rd.jacobian(model, q)) < 1e-15
    assert max_relative_error(rd.link_jacobian(model, q, axes="link"), rd.jacobian(model, q, frame="tool")) < 1e-14
    assert max_relative_error(rd.link_pose(model, q), rd.forward_kinematics(model, q, frame="base")) < 1e-15
    assert max_relative_error(rd.link_pose(model, q, link=3), frame_poses(model, q)[:, 2]) < 1e-15
    assert rd.task_space(model, q[0], link="panda_link3").link == "panda_link3"
    # a frame only some joints move: zero columns for the others, zero Jdot qd and Jacobian for the base
    J = rd.link_jacobian(model, q, link="panda_link3")
    assert not J[..., 3:].any() and J[..., :3].any()
    assert not rd.link_jacobian(model, q, link=0).any() and not rd.jacobian_dot_qdot(model, q, qd, link=0).any()
    assert np.array_equal(rd.link_pose(model, q[0], link=0), np.eye(4))
    # qd = 0: no velocity, no bias; Lambda only on request
    plain = rd.task_space(model, q)
    assert not plain.jdot_qdot.any() and plain.inertia is None and plain.condition is None


def test_native_and_python_backends_agree() -> None:
    model, _, _ = _puma_with_tool()
    q, qd, _ = random_states(76, 6, 200)
    for link in link_names(model):
        a = rd.task_space(model, q, qd, link=link, inertia=True, rcond=1e-9, backend="native")
        b = rd.task_space(model, q, qd, link=link, inertia=True, rcond=1e-9, backend="python")
        for key in ("pose", "jacobian", "jdot_qdot"):
            assert max_relative_error(getattr(a, key), getattr(b, key)) < 1e-14, (link, key)
        assert a.inertia is not None and b.inertia is not None
        assert max_relative_error(a.inertia, b.inertia) < 1e-9 * max(1.0, float(np.max(np.abs(a.inertia))))
        assert np.array_equal(a.rank, b.rank), link


def test_motor_inertia_as_in_the_inertia_matrix() -> None:
    """D in Lambda is rd.inertia_matrix's: with the reflected motor inertia by default, without on request."""
    model = puma560()
    q = np.array([0.3, -0.7, 0.9, 0.4, -1.1, 0.6])
    J = rd.link_jacobian(model, q)
    for motor in (None, True, False):
        D = rd.inertia_matrix(model, q, motor_inertia=motor)
        expected = np.linalg.inv(J @ np.linalg.solve(D, J.T))
        for backend in BACKENDS:
            got = rd.operational_space_inertia(model, q, motor_inertia=motor, backend=backend)
            assert max_relative_error(got, expected) < 1e-10, (motor, backend)
    rigid = rd.operational_space_inertia(model, q, motor_inertia=False)
    assert not np.allclose(rigid, rd.operational_space_inertia(model, q))


def test_singular_tasks_are_errors_unless_a_pseudo_inverse_is_asked_for() -> None:
    puma = puma560()
    stretched = np.array([0.2, -0.4, -math.pi / 2 + 0.0, 0.3, 0.0, 0.5])  # wrist axes 4 and 6 aligned
    with pytest.raises(StateError, match=r"link 'tool' of robot 'puma560' \(6 of 6 joints move it\).*singular"):
        rd.operational_space_inertia(puma, stretched)
    result = rd.task_space(puma, stretched, inertia=True, rcond=1e-9)
    assert result.rank is not None and int(result.rank) == 5 and result.condition is not None
    assert float(result.condition) > MAX_CONDITION
    assert np.isfinite(result.inertia).all()
    # the linear rows alone are fine there
    rd.operational_space_inertia(puma, stretched, rows="linear")
    # fewer joints than rows: link 2 of the PUMA, six rows
    with pytest.raises(StateError, match=r"link 'link2' .*\(2 of 6 joints move it\).*singular"):
        rd.operational_space_inertia(puma, np.zeros(6), link="link2")
    two = rd.task_space(puma, np.zeros(6), link="link2", inertia=True, rows="angular", rcond=1e-9)
    assert two.rank is not None and int(two.rank) == 2
    # the base frame does not move
    with pytest.raises(StateError, match="no joint moves the frame"):
        rd.operational_space_inertia(puma, np.zeros(6), link=0)
    # a batch names the singular states
    q = np.tile([0.2, -0.4, 0.1, 0.3, 0.7, 0.5], (6, 1))
    q[[1, 4], 4] = 0.0
    with pytest.raises(StateError, match=r"at 2 of 6 states \(1, 4\)"):
        rd.operational_space_inertia(puma, q)
    # a five-joint arm can still have its translational inertia
    five = puma.with_changes(joints=puma.joints[:5])
    with pytest.raises(StateError, match=r"\(5 of 5 joints move it\)"):
        rd.operational_space_inertia(five, np.full(5, 0.4))
    assert rd.operational_space_inertia(five, np.full(5, 0.4), rows=[0, 1, 2, 5]).shape == (4, 4)


def test_bad_input_gets_clear_errors() -> None:
    model = _panda()
    q = np.full(7, 0.3)
    with pytest.raises(
        StateError, match=r"has no link 'panda_link8'.*did you mean 'panda_link[0-7]'\?.*panda_hand_tcp"
    ):
        rd.link_pose(model, q, link="panda_link8")
    with pytest.raises(StateError, match=r"links 0\.\.7 \(0 the base\), got 8"):
        rd.link_jacobian(model, q, link=8)
    with pytest.raises(StateError, match="expected a link name or an index"):
        rd.link_jacobian(model, q, link=True)  # type: ignore[arg-type]
    with pytest.raises(StateError, match="expected a link name or an index"):
        rd.link_jacobian(model, q, link=2.0)  # type: ignore[arg-type]
    with pytest.raises(StateError, match=r"q: expected shape \(7,\) or \(N, 7\)"):
        rd.link_jacobian(model, np.zeros(6))
    with pytest.raises(StateError, match=r"qd: expected shape \(7,\) or \(N, 7\)"):
        rd.jacobian_dot_qdot(model, q, np.zeros(8))
    with pytest.raises(StateError, match=r"q: non-finite values \(nan or inf\) at index 2"):
        rd.operational_space_inertia(model, [0, 0, np.nan, 0, 0, 0, 0])
    with pytest.raises(StateError, match=r"qd: non-finite values \(nan or inf\) at index \(1, 3\)"):
        qd = np.zeros((2, 7))
        qd[1, 3] = np.inf
        rd.task_space(model, np.zeros((2, 7)), qd, inertia=True)
    with pytest.raises(StateError, match="axes: expected 'base' or 'link'"):
        rd.link_jacobian(model, q, axes="world")  # type: ignore[arg-type]
    with pytest.raises(StateError, match="rows: expected distinct row indices"):
        rd.operational_space_inertia(model, q, rows=[0, 0, 1])
    with pytest.raises(StateError, match="rows: expected 'all', 'linear', 'angular'"):
        rd.operational_space_inertia(model, q, rows="xyz")  # type: ignore[arg-type]
    with pytest.raises(StateError, match="rcond: expected a number between 0 and 1"):
        rd.operational_space_inertia(model, q, rcond=0.0)
    for backend in BACKENDS:  # the same messages on both backends, one state and batches
        with pytest.raises(StateError, match="non-finite"):
            rd.link_pose(model, np.array([np.nan] * 7), backend=backend)
        with pytest.raises(StateError, match="batch of 3 samples does not match q with 2 samples"):
            rd.jacobian_dot_qdot(model, np.zeros((2, 7)), np.zeros((3, 7)), backend=backend)
