"""Exceptions of robot_dynamics. All are ``ValueError`` subclasses so callers can catch either."""

from __future__ import annotations


class RobotDynamicsError(ValueError):
    """Base class of the package's user-facing errors."""


class ModelError(RobotDynamicsError):
    """A robot description (DH YAML, URDF) is malformed or unsupported.

    The message names the file (or ``<robot_description>``) and the field, e.g.
    ``puma.yaml: joints[2].inertia: not positive semi-definite (eigenvalues ...)``.
    """

    def __init__(self, source: str, field: str, problem: str) -> None:
        self.source = source
        self.field = field
        self.problem = problem
        where = f"{source}: {field}" if field else source
        super().__init__(f"{where}: {problem}")


class ModelWarning(UserWarning):
    """A robot description loaded, but something in it deserves attention (massless links, ...).

    The message is plain text naming the file and the element (never a source path), e.g.
    ``tiago.urdf: link[base_antenna_left_link]/inertial/inertia: is not positive semi-definite ...``;
    command-line tools print it as ``robot-dynamics: warning: <message>``.
    """


class StateError(RobotDynamicsError):
    """A joint state / trajectory / torque input has the wrong shape, non-finite values or unknown joints."""
