"""The launch files' actions: :class:`.launch_support.NodeSpec` → ``launch_ros`` nodes, each required.

Imported only by ``launch/*.launch.py`` (it needs ``launch`` and ``launch_ros``, which have no PyPI
wheels). Every node is **required**: when one exits while the launch is not shutting down, the launch
shuts down (the other nodes get SIGINT, none is left running); a non-zero exit status (e.g. a node's
one-line FATAL start-up error) is raised as an error, so ``ros2 launch`` itself exits non-zero. A
bad launch argument (:class:`.launch_support.LaunchArgumentError`) is raised while the description
is evaluated, before any node starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from launch.action import Action
from launch.actions import RegisterEventHandler, Shutdown
from launch.event_handlers import OnProcessExit
from launch.events.process import ProcessExited
from launch.launch_context import LaunchContext
from launch_ros.actions import Node

from robot_dynamics.ros.launch_support import NodeSpec


class RequiredNodeError(RuntimeError):
    """A required node exited with a non-zero status: the launch fails."""


def resolved_arguments(context: LaunchContext, declared: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """The launch arguments' values in ``context`` (their defaults where not declared yet)."""
    return {name: str(context.launch_configurations.get(name, default)) for name, (default, _) in declared.items()}


def _on_exit(name: str) -> Callable[[ProcessExited, LaunchContext], list[Action]]:
    def handle(event: ProcessExited, context: LaunchContext) -> list[Action]:
        if context.is_shutdown:  # the launch is stopping: the nodes exit because they were told to
            return []
        if event.returncode != 0:
            raise RequiredNodeError(f"required node {name} exited with status {event.returncode}")
        return [Shutdown(reason=f"required node {name} exited")]

    return handle


def node_actions(specs: Sequence[NodeSpec]) -> list[Any]:
    """A ``launch_ros`` Node per spec, each with the handler that makes it required."""
    actions: list[Any] = []
    for spec in specs:
        node = Node(
            package=spec.package,
            executable=spec.executable,
            name=spec.name,
            namespace=spec.namespace,
            parameters=list(spec.parameters),
            remappings=list(spec.remappings),
            ros_arguments=["--log-level", spec.log_level] if spec.log_level else [],
            output="screen",
        )
        actions += [node, RegisterEventHandler(OnProcessExit(target_action=node, on_exit=_on_exit(spec.name)))]
    return actions
