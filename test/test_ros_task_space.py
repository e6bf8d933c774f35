"""The ``get_task_space`` service of the dynamics service node over real DDS.

A client asks for a frame's pose, Jacobian, ``Jdot qd`` and operational-space inertia: the answers are
the engine's (:func:`robot_dynamics.task_space`) for the PUMA 560 and for the Panda loaded as a driver
sees it (``tip_link``, locked fingers, ``joint_map`` to ``fer_`` names); bad requests get
``success = false`` and the reason, and the node keeps serving.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from engine_reference import EXAMPLE_ROBOTS  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from ros_harness import Spinner, call, client_node, private_context, spinner_in_namespace  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.ros.messages import from_multiarray  # noqa: E402
from robot_dynamics.ros.service_node import DynamicsServiceNode  # noqa: E402
from robot_dynamics_interfaces.srv import GetTaskSpace  # noqa: E402

pytestmark = pytest.mark.ros

PUMA = rd.load_robot("puma560")
NAMES = PUMA.joint_names
PANDA = EXAMPLE_ROBOTS / "panda_description" / "urdf" / "panda.urdf"
RNG = np.random.default_rng(31)


@pytest.fixture(scope="module")
def context() -> Iterator[Any]:
    yield from private_context()


@pytest.fixture
def ros(context: Any) -> Iterator[tuple[Spinner, str]]:
    yield from spinner_in_namespace(context, "ts")


def start(context: Any, ros: tuple[Spinner, str], **params: Any) -> tuple[DynamicsServiceNode, Any]:
    spinner, ns = ros
    overrides = [Parameter(k, value=v) for k, v in {"robot_config": "puma560", **params}.items()]
    node = spinner.add(DynamicsServiceNode(namespace=ns, context=context, parameter_overrides=overrides))
    client = spinner.add(client_node(context, ns, "ts_client_"))
    return node, client.create_client(GetTaskSpace, "get_task_space")  # type: ignore[return-value]


def pose_matrix(msg: Any) -> np.ndarray:
    o, p = msg.orientation, msg.position
    pose = np.eye(4)
    pose[:3, :3] = Rotation.from_quat([o.x, o.y, o.z, o.w]).as_matrix()
    pose[:3, 3] = (p.x, p.y, p.z)
    return pose


def check_answer(res: Any, expected: rd.TaskSpace, joint_names: list[str]) -> None:
    assert res.success, res.message
    assert list(res.joint_names) == joint_names and res.link == expected.link
    np.testing.assert_allclose(pose_matrix(res.pose), expected.pose, rtol=0, atol=1e-12)
    assert [(d.label, d.size) for d in res.jacobian.layout.dim] == [("rows", 6), ("cols", len(joint_names))]
    np.testing.assert_allclose(from_multiarray(res.jacobian), expected.jacobian, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.jdot_qdot, expected.jdot_qdot, rtol=0, atol=1e-12)
    if expected.inertia is None:
        assert len(res.operational_space_inertia.data) == 0 and res.inertia_rank == 0
    else:
        scale = max(1.0, float(np.abs(expected.inertia).max()))
        np.testing.assert_allclose(from_multiarray(res.operational_space_inertia), expected.inertia, atol=1e-12 * scale)
        assert res.inertia_condition == pytest.approx(float(expected.condition), rel=1e-9)
        assert res.inertia_rank == int(expected.rank)


def test_task_space_service_answers_the_engines_values(context: Any, ros: tuple[Spinner, str]) -> None:
    _, cli = start(context, ros)
    for link, axes, rows, rcond in (
        ("", "", "", 0.0),
        ("tool", "link", "all", 0.0),
        ("link3", "base", "linear", 1e-9),
        ("link4", "link", "angular", 1e-9),
        ("base_link", "base", "", 0.0),
    ):
        q, qd = RNG.uniform(-2, 2, 6), RNG.uniform(-1, 1, 6)
        q[4] = 0.8  # away from the wrist singularity
        order = list(RNG.permutation(6))
        request = GetTaskSpace.Request(
            joint_names=[NAMES[i] for i in order],
            position=q[order].tolist(),
            velocity=qd[order].tolist(),
            link=link,
            axes=axes,
            include_operational_space_inertia=link != "base_link",
            inertia_rows=rows,
            inertia_rcond=rcond,
        )
        expected = rd.task_space(
            PUMA,
            q,
            qd,
            link=link or None,
            axes=axes or "base",  # type: ignore[arg-type]
            inertia=link != "base_link",
            rows=rows or None,  # type: ignore[arg-type]
            rcond=rcond or None,
        )
        res = call(cli, request)
        check_answer(res, expected, NAMES)
        assert res.base_link == "base_link" and res.link == (link or "tool")
    # velocity may be empty (zero: no bias)
    res = call(cli, GetTaskSpace.Request(position=[0.3] * 6))
    assert res.success and not np.any(res.jdot_qdot)


def test_panda_with_tip_link_locked_fingers_and_joint_map(context: Any, ros: tuple[Spinner, str]) -> None:
    """As a driver sees the Panda: the service speaks the topic names and the chain the parameters chose."""
    names = [f"fer_joint{i}" for i in range(1, 8)]
    _, cli = start(
        context,
        ros,
        robot_description=PANDA.read_text(),
        tip_link="panda_hand_tcp",
        locked_joints=["panda_finger_joint1", "panda_finger_joint2"],
        joint_map=[f"fer_joint{i}=panda_joint{i}" for i in range(1, 8)],
    )
    locks = {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}
    panda = rd.load_robot(PANDA, tip_link="panda_hand_tcp", locked_joints=locks)
    q, qd = RNG.uniform(-1, 1, 7), RNG.uniform(-1, 1, 7)
    order = [6, 2, 0, 5, 1, 4, 3]
    for link in ("", "panda_link4", "panda_hand_tcp"):
        request = GetTaskSpace.Request(
            joint_names=[names[i] for i in order],
            position=q[order].tolist(),
            velocity=qd[order].tolist(),
            link=link,
            axes="link",
            include_operational_space_inertia=True,
            inertia_rows="linear",
            inertia_rcond=1e-9,
        )
        expected = rd.task_space(panda, q, qd, link=link or None, axes="link", inertia=True, rows="linear", rcond=1e-9)
        check_answer(call(cli, request), expected, names)


def test_bad_task_space_requests_get_the_reason(context: Any, ros: tuple[Spinner, str]) -> None:
    node, cli = start(context, ros)
    good = {"position": [0.1, -0.4, 0.3, 0.2, 0.7, 0.0]}
    cases = [
        (GetTaskSpace.Request(position=[0.0] * 5), "position has 5 values for 6 model joints"),
        (
            GetTaskSpace.Request(position=[0.0] * 5 + [math.nan]),
            "position: non-finite values (nan or inf) at joint 'joint6' (nan)",
        ),
        (GetTaskSpace.Request(**good, velocity=[1.0] * 2), "velocity has 2 values for 6 model joints"),
        (GetTaskSpace.Request(**good, link="link7"), "robot 'puma560' has no link 'link7' (did you mean"),
        (GetTaskSpace.Request(**good, axes="world"), "axes: expected 'base' or 'link', got 'world'"),
        (
            GetTaskSpace.Request(**good, include_operational_space_inertia=True, inertia_rows="xyz"),
            "rows: expected 'all', 'linear', 'angular'",
        ),
        (
            GetTaskSpace.Request(**good, include_operational_space_inertia=True, inertia_rcond=-1.0),
            "rcond: expected a number between 0 and 1",
        ),
        (
            GetTaskSpace.Request(position=[0.1, -0.4, 0.3, 0.2, 0.0, 0.0], include_operational_space_inertia=True),
            "link 'tool' of robot 'puma560' (6 of 6 joints move it): J D^-1 J^T (6 rows) is singular",
        ),
        (
            GetTaskSpace.Request(**good, link="link2", include_operational_space_inertia=True),
            "(2 of 6 joints move it)",
        ),
    ]
    for request, message in cases:
        res = call(cli, request)
        assert not res.success, message
        assert message in res.message, (message, res.message)
        assert len(res.jacobian.data) == 0
    assert node.stats.rejected == len(cases)
    # the same singular request with a pseudo-inverse, and the node still serves
    res = call(
        cli,
        GetTaskSpace.Request(
            position=[0.1, -0.4, 0.3, 0.2, 0.0, 0.0], include_operational_space_inertia=True, inertia_rcond=1e-9
        ),
    )
    assert res.success and res.inertia_rank == 5 and res.inertia_condition > 1e10
