"""A rigid payload held by the tool, merged into the last link's inertial parameters.

The payload is given in the TOOL frame (``model.tool``, the tool pose in ``F_n``; see
:mod:`robot_dynamics.model`): mass ``m_p`` (kg), centre of mass ``c_p`` (m, tool frame) and the 3x3
inertia ``I_p`` about its own centre of mass with the tool frame's axes (URDF convention: products
of inertia as tensor entries). With ``tool = [[R, p], [0, 1]]`` the payload in ``F_n`` is

    c_p' = R c_p + p,      I_p' = R I_p R^T,

and the loaded last link is the rigid union of link ``n`` and the payload (mass-weighted centre of
mass, then the parallel-axis (Huygens–Steiner) theorem for each body; :meth:`Inertial.__add__`, the
same rule the URDF loader uses to merge fixed links):

    m = m_n + m_p,   c = (m_n c_n + m_p c_p') / m,
    I = sum_b [ I_b + m_b (|d_b|^2 E - d_b d_b^T) ],   d_b = c_b - c.

Exact: the rigid-body dynamics of the loaded model are those of the chain with the payload as an
extra body fixed to link ``n`` (what a URDF with a fixed payload link describes).

A payload *replaces* the previous one: :func:`with_payload` remembers, for every model it returns,
the unloaded model it started from (weakly, by object), and starts from that model again when given a
loaded one. Mass 0 clears the payload (the unloaded model itself is returned). A model derived from a
loaded one by other means (``with_changes``) is a new unloaded model.

Pure NumPy; no ROS imports.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import ArrayLike

from .errors import ModelError
from .model import FloatArray, Inertial, RobotModel
from .models.validation import inertia_problem

_UNLOADED: weakref.WeakKeyDictionary[RobotModel, tuple[RobotModel, Payload]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True, eq=False)
class Payload:
    """A checked payload in the tool frame (see :func:`check_payload`)."""

    mass: float = 0.0
    com: FloatArray = field(default_factory=lambda: np.zeros(3))
    inertia: FloatArray = field(default_factory=lambda: np.zeros((3, 3)))

    @property
    def is_empty(self) -> bool:
        return self.mass == 0.0

    def in_last_link_frame(self, model: RobotModel) -> Inertial:
        """The payload as an :class:`Inertial` in ``F_n`` (rotated and moved by ``model.tool``)."""
        return Inertial(self.mass, self.com, self.inertia).transformed(model.tool)

    def describe(self) -> str:
        """One line: ``"none"`` or the mass, centre of mass and inertia (tool frame)."""
        if self.is_empty:
            return "none"
        i = self.inertia
        return (
            f"{self.mass:.6g} kg at ({', '.join(f'{v:.6g}' for v in self.com)}) m, inertia "
            f"[ixx {i[0, 0]:.6g}, ixy {i[0, 1]:.6g}, ixz {i[0, 2]:.6g}, iyy {i[1, 1]:.6g}, "
            f"iyz {i[1, 2]:.6g}, izz {i[2, 2]:.6g}] kg m^2 (tool frame)"
        )


NO_PAYLOAD = Payload()


def check_payload(mass: float, com: ArrayLike, inertia: ArrayLike, source: str = "payload") -> Payload:
    """Validate a payload; :class:`ModelError` naming ``source`` and the field when it is not physical.

    ``mass`` finite and >= 0; ``com`` 3 finite numbers; ``inertia`` a symmetric positive
    semi-definite 3x3 whose principal moments satisfy the triangle inequality (relative tolerance
    1e-9, as the model loaders). Mass 0 (no payload) requires a zero inertia (a finite centre of mass
    is then ignored).
    """
    try:
        m = float(mass)
    except (TypeError, ValueError):
        raise ModelError(source, "mass", f"must be a number, got {mass!r}") from None
    if not math.isfinite(m):
        raise ModelError(source, "mass", f"must be a finite number, got {m}")
    if m < 0.0:
        raise ModelError(source, "mass", f"negative mass {m:g} kg")
    try:
        c = np.array(com, dtype=float)
        tensor = np.array(inertia, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(source, "com/inertia", f"must be numbers: {exc}") from None
    if c.shape != (3,):
        raise ModelError(source, "com", f"expected 3 numbers (x, y, z in the tool frame), got shape {c.shape}")
    if not np.isfinite(c).all():
        raise ModelError(source, "com", f"must be finite, got {c.tolist()}")
    if tensor.shape != (3, 3):
        raise ModelError(source, "inertia", f"expected a 3x3 tensor, got shape {tensor.shape}")
    problem = inertia_problem(tensor)
    if problem is not None:
        raise ModelError(source, "inertia", f"{problem}; got {tensor.tolist()}")
    if m == 0.0:
        if np.any(tensor != 0.0):
            raise ModelError(source, "inertia", "mass 0 clears the payload: the inertia must be zero too")
        return NO_PAYLOAD
    tensor = 0.5 * (tensor + tensor.T)  # symmetric within the tolerance: make it exact
    return Payload(m, c, tensor)


def payload_of(model: RobotModel) -> Payload:
    """The payload :func:`with_payload` put on ``model`` (``NO_PAYLOAD`` for any other model)."""
    entry = _UNLOADED.get(model)
    return entry[1] if entry is not None else NO_PAYLOAD


def without_payload(model: RobotModel) -> RobotModel:
    """The unloaded model a :func:`with_payload` result was made from (``model`` itself otherwise)."""
    entry = _UNLOADED.get(model)
    return entry[0] if entry is not None else model


def load_payload(model: RobotModel, payload: Payload) -> RobotModel:
    """``model`` (its unloaded original, if it carries a payload) with a checked ``payload``."""
    base = without_payload(model)
    if payload.is_empty:
        return base
    if base.dof == 0:
        raise ModelError(base.source or base.name, "payload", "the model has no joints to carry a payload")
    last = base.joints[-1]
    loaded_link = last.link + payload.in_last_link_frame(base)
    joints = (*base.joints[:-1], replace(last, link=loaded_link))
    loaded = base.with_changes(joints=joints)
    _UNLOADED[loaded] = (base, payload)
    return loaded


def with_payload(
    model: RobotModel,
    mass: float,
    com: ArrayLike = (0.0, 0.0, 0.0),
    inertia: ArrayLike | None = None,
) -> RobotModel:
    """``model`` carrying a rigid payload at its tool (replacing any payload it carries; mass 0 clears).

    ``com``: payload centre of mass in the tool frame (m); ``inertia``: 3x3 about that centre of mass,
    tool-frame axes (kg m^2; ``None`` = a point mass). :class:`ModelError` (a ``ValueError``) for a
    non-physical payload.
    """
    payload = check_payload(mass, com, np.zeros((3, 3)) if inertia is None else inertia)
    return load_payload(model, payload)


__all__ = ["NO_PAYLOAD", "Payload", "check_payload", "load_payload", "payload_of", "with_payload", "without_payload"]
