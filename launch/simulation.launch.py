"""Simulator closing the loop with the feed-forward node, + the service node (ROS 2 Jazzy / Kilted).

    ros2 launch robot_dynamics simulation.launch.py robot_config:=puma560 robot_state_publisher:=true

The simulator integrates the forward dynamics from ``feedforward/commands`` (remapped onto its
``commands`` input) and publishes ``joint_states``, which the feed-forward node reads: with no
trajectory the robot holds its start pose under gravity + friction compensation; publish a
``trajectory_msgs/JointTrajectory`` on ``joint_trajectory`` to make it move. With
``robot_state_publisher:=true`` the robot's URDF (the ``urdf`` file, or ``robot_config`` exported to
URDF) is published for RViz, and the nodes can take it from the ``robot_description`` topic.

Arguments: those of ``dynamics.launch.py`` plus ``robot_state_publisher`` (true/false).
Without launch_ros: ``robot_dynamics_bringup --simulator`` starts the same nodes.
"""

from __future__ import annotations

from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from robot_dynamics.ros.launch_support import default_params_file, exported_urdf, parse_bool, robot_parameters

ARGUMENTS = {
    "robot_config": ("", "bundled robot name or DH YAML path (empty = the default robot, puma560)"),
    "urdf": ("", "URDF file of the robot (used instead of robot_config when given)"),
    "base_link": ("", "first link of the chain (empty = the model's root)"),
    "tip_link": ("", "last link of the chain (empty = the model's tip)"),
    "locked_joints": ("", "joints made rigid, NAME=POSITION,NAME (rad or m; NAME alone = 0)"),
    "joint_map": ("", "topic joint names of model joints, TOPIC_NAME=MODEL_NAME,..."),
    "friction": ("true", "friction compensation and simulated friction on/off"),
    "namespace": ("", "namespace of the nodes"),
    "params_file": (default_params_file(), "node parameter file"),
    "robot_state_publisher": ("false", "also start robot_state_publisher with the robot's URDF"),
}


def simulation_nodes(context: LaunchContext) -> list[Node]:
    arg = {name: LaunchConfiguration(name).perform(context) for name in ARGUMENTS}
    shared = robot_parameters(
        arg["robot_config"],
        arg["urdf"],
        arg["friction"],
        arg["base_link"],
        arg["tip_link"],
        arg["locked_joints"],
        arg["joint_map"],
    )
    params = [arg["params_file"], shared]
    ns = arg["namespace"]
    nodes = [
        Node(
            package="robot_dynamics",
            executable="feedforward_node",
            name="feedforward_node",
            namespace=ns,
            parameters=params,
            output="screen",
        ),
        Node(
            package="robot_dynamics",
            executable="dynamics_service_node",
            name="dynamics_service_node",
            namespace=ns,
            parameters=params,
            output="screen",
        ),
        Node(
            package="robot_dynamics",
            executable="simulator_node",
            name="simulator_node",
            namespace=ns,
            parameters=params,
            remappings=[("commands", "feedforward/commands")],
            output="screen",
        ),
    ]
    if parse_bool(arg["robot_state_publisher"], "robot_state_publisher"):
        nodes.append(
            Node(
                package="robot_state_publisher",
                executable="robot_state_publisher",
                name="robot_state_publisher",
                namespace=ns,
                parameters=[{"robot_description": exported_urdf(arg["robot_config"], arg["urdf"])}],
                output="screen",
            )
        )
    return nodes


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            DeclareLaunchArgument(name, default_value=value, description=text)
            for name, (value, text) in ARGUMENTS.items()
        ]
        + [OpaqueFunction(function=simulation_nodes)]
    )
