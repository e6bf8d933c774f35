"""Smoke test of the foundation: the installed service node, started as its own process the
way ``ros2 run robot_dynamics dynamics_service_node`` starts it, answers the project's service over
real DDS (the session's own ROS_DOMAIN_ID, localhost discovery) with the engine's numbers."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from rclpy.node import Node  # noqa: E402
from ros_harness import NodeProcess, Spinner, call  # noqa: E402

from robot_dynamics import gravity_torques, load_robot  # noqa: E402
from robot_dynamics_interfaces.srv import GetDynamicsCoefficients  # noqa: E402

pytestmark = pytest.mark.ros


def test_service_node_process_answers_gravity_torques_over_dds() -> None:
    assert os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    executable = Path(sys.prefix) / "lib" / "robot_dynamics" / "dynamics_service_node"
    assert executable.is_file(), f"{executable} is not installed (scripts/bootstrap.sh installs it)"
    ns = f"/smoke_{os.getpid()}"
    service = NodeProcess([str(executable), "--ros-args", "-r", f"__ns:={ns}"])
    context = rclpy.context.Context()
    rclpy.init(context=context)
    try:
        with service as proc:
            spinner = Spinner(context)
            try:
                client_node = spinner.add(Node("smoke_client", namespace=ns, context=context))
                client = client_node.create_client(GetDynamicsCoefficients, "get_dynamics_coefficients")
                puma = load_robot("puma560")
                qn = puma.named_poses["qn"]  # the nominal pose: arm stretched forward
                response = call(client, GetDynamicsCoefficients.Request(position=list(qn)), timeout=60.0)
                assert response.success, response.message
                assert list(response.joint_names) == puma.joint_names
                np.testing.assert_allclose(response.gravity, gravity_torques(puma, qn), rtol=0, atol=1e-12)
                assert abs(response.gravity[1]) > 10.0  # the shoulder really carries the arm at qn
                assert proc.poll() is None
            finally:
                spinner.close()
    finally:
        rclpy.try_shutdown(context=context)
    service.assert_clean_exit()
