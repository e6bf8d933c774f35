"""Feed-forward torque node + dynamics service node (ROS 2 Jazzy / Kilted).

    ros2 launch robot_dynamics dynamics.launch.py robot_config:=puma560 namespace:=arm
    ros2 launch robot_dynamics dynamics.launch.py urdf:=/path/to/robot.urdf.xacro xacro_args:="arm_id:=fr3"
    ros2 launch robot_dynamics dynamics.launch.py urdf:=panda.urdf tip_link:=panda_hand_tcp \
        locked_joints:=panda_finger_joint1,panda_finger_joint2 commands_topic:=/effort_controller/commands
    ros2 launch robot_dynamics dynamics.launch.py params_file:=mine.yaml use_sim_time:=true log_level:=debug
    ros2 launch robot_dynamics dynamics.launch.py robot_config:=puma560 contact:=true contact_params_file:=arm.yaml

Arguments (``ros2 launch robot_dynamics dynamics.launch.py --show-args``):
``robot_config``, ``urdf`` (``.urdf`` or ``.xacro``, preferred when given) and ``xacro_args``,
``base_link``/``tip_link``, ``locked_joints``, ``joint_map``, ``friction``, ``use_sim_time``,
``use_robot_description_topic``, ``log_level``, ``commands_topic``, ``namespace``, ``params_file``,
``contact`` (also start the contact node) and ``contact_params_file``.
An argument that sets a node parameter overrides ``params_file`` only when given. Every node is
required: a node that fails ends the launch with a non-zero status. Without launch_ros,
``robot_dynamics_bringup`` takes the same ``NAME:=VALUE`` arguments and starts the same nodes.
"""

from __future__ import annotations

from typing import Any

from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction

from robot_dynamics.ros.launch_actions import node_actions, resolved_arguments
from robot_dynamics.ros.launch_support import DYNAMICS_ARGUMENTS, dynamics_nodes


def dynamics_entities(context: LaunchContext) -> list[Any]:
    return node_actions(dynamics_nodes(resolved_arguments(context, DYNAMICS_ARGUMENTS)))


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            DeclareLaunchArgument(name, default_value=value, description=text)
            for name, (value, text) in DYNAMICS_ARGUMENTS.items()
        ]
        + [OpaqueFunction(function=dynamics_entities)]
    )
