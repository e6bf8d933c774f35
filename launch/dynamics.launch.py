"""Feed-forward torque node + dynamics service node (ROS 2 Jazzy / Kilted).

    ros2 launch robot_dynamics dynamics.launch.py robot_config:=puma560 friction:=true namespace:=arm
    ros2 launch robot_dynamics dynamics.launch.py urdf:=/path/to/robot.urdf
    ros2 launch robot_dynamics dynamics.launch.py urdf:=panda.urdf tip_link:=panda_hand_tcp \
        locked_joints:=panda_finger_joint1,panda_finger_joint2 joint_map:=fer_joint1=panda_joint1,...

Arguments: ``robot_config`` (bundled robot name or DH YAML path), ``urdf`` (URDF file, preferred when
given), ``base_link``/``tip_link`` (the chain), ``locked_joints`` (``NAME=POS,NAME``: joints made
rigid), ``joint_map`` (``TOPIC_NAME=MODEL_NAME,...``: the nodes use the topic names), ``friction``
(true/false), ``namespace``, ``params_file`` (node parameters, default
``config/robot_dynamics.yaml``), ``use_robot_description_topic`` (take the URDF from the
``robot_description`` topic instead). Without launch_ros, ``robot_dynamics_bringup`` starts the same
nodes with the same parameter file.
"""

from __future__ import annotations

from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from robot_dynamics.ros.launch_support import default_params_file, parse_bool, robot_parameters

ARGUMENTS = {
    "robot_config": ("", "bundled robot name or DH YAML path (empty = the default robot, puma560)"),
    "urdf": ("", "URDF file of the robot (used instead of robot_config when given)"),
    "base_link": ("", "first link of the chain (empty = the model's root)"),
    "tip_link": ("", "last link of the chain (empty = the model's tip)"),
    "locked_joints": ("", "joints made rigid, NAME=POSITION,NAME (rad or m; NAME alone = 0)"),
    "joint_map": ("", "topic joint names of model joints, TOPIC_NAME=MODEL_NAME,..."),
    "friction": ("true", "friction compensation on/off"),
    "namespace": ("", "namespace of the nodes"),
    "params_file": (default_params_file(), "node parameter file"),
    "use_robot_description_topic": ("false", "take the URDF from the robot_description topic"),
}


def dynamics_nodes(context: LaunchContext) -> list[Node]:
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
    if parse_bool(arg["use_robot_description_topic"], "use_robot_description_topic"):
        shared.pop("robot_description", None)
        shared["use_robot_description_topic"] = True
    params = [arg["params_file"], shared]
    return [
        Node(
            package="robot_dynamics",
            executable="feedforward_node",
            name="feedforward_node",
            namespace=arg["namespace"],
            parameters=params,
            output="screen",
        ),
        Node(
            package="robot_dynamics",
            executable="dynamics_service_node",
            name="dynamics_service_node",
            namespace=arg["namespace"],
            parameters=params,
            output="screen",
        ),
    ]


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            DeclareLaunchArgument(name, default_value=value, description=text)
            for name, (value, text) in ARGUMENTS.items()
        ]
        + [OpaqueFunction(function=dynamics_nodes)]
    )
