"""``dynamics.launch.py`` + the simulator closing the loop (+ robot_state_publisher) (ROS 2 Jazzy / Kilted).

    ros2 launch robot_dynamics simulation.launch.py robot_config:=puma560 robot_state_publisher:=true
    ros2 launch robot_dynamics simulation.launch.py urdf:=ur5_robot.urdf engine:=mujoco \
        plant_deviations:=config/plant_deviations.yaml lockstep:=true use_sim_time:=true contact:=true

Includes ``dynamics.launch.py`` (all its arguments apply) and adds the simulator, which integrates
the forward dynamics from the feed-forward torques (``feedforward/commands``, or ``commands_topic``,
remapped onto its ``commands`` input) and publishes ``joint_states``, which the feed-forward node
reads: with no trajectory the robot holds its start pose under gravity + friction compensation;
publish a ``trajectory_msgs/JointTrajectory`` on ``joint_trajectory`` to make it move. With
``robot_state_publisher:=true`` the robot's URDF (the ``urdf`` file, or ``robot_config`` exported to
URDF) is published for RViz (checked to be installed before any node starts), and the nodes can take
it from the ``robot_description`` topic (``use_robot_description_topic:=true``). ``engine:=mujoco``
(+ ``plant_deviations`` or ``mjcf``) simulates on MuJoCo; ``torque_sensing:=link`` publishes what
link-side joint torque sensors read (after the joints' friction) as the effort; ``lockstep:=true`` (with
``use_sim_time:=true``) makes the simulator the clock, stepping once per answered state (with
``contact:=true`` once the contact node has answered it too, so its collision events come before the
next state).

Every node is required (see ``dynamics.launch.py``). Without launch_ros:
``robot_dynamics_bringup --simulator`` with the same ``NAME:=VALUE`` arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource

from robot_dynamics.ros.launch_actions import node_actions, resolved_arguments
from robot_dynamics.ros.launch_support import DYNAMICS_ARGUMENTS, SIMULATION_ARGUMENTS, simulation_nodes


def simulation_entities(context: LaunchContext) -> list[Any]:
    # every argument is checked here, before the included file starts its nodes
    return node_actions(simulation_nodes(resolved_arguments(context, {**DYNAMICS_ARGUMENTS, **SIMULATION_ARGUMENTS})))


def generate_launch_description() -> LaunchDescription:
    dynamics = Path(__file__).resolve().parent / "dynamics.launch.py"
    return LaunchDescription(
        [
            DeclareLaunchArgument(name, default_value=value, description=text)
            for name, (value, text) in SIMULATION_ARGUMENTS.items()
        ]
        + [
            OpaqueFunction(function=simulation_entities),
            IncludeLaunchDescription(PythonLaunchDescriptionSource(str(dynamics))),
        ]
    )
