"""The model's constants in the form the recursive algorithms use (one :class:`Link` per joint).

Rounding residue of the frame changes is snapped to exact values before the constants are folded
into the compiled programs: ``cos(pi/2) = 6.1e-17`` in a DH rotation becomes 0 (rotation and axis
entries within 1e-14 of 0 or ±1; translations and centres of mass below 1e-14 m; inertia entries
below 1e-13 of the tensor's largest entry). This changes results by less than 1e-13 relative and
lets the tracer drop the multiplications by these zeros.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import FloatArray, RobotModel
from ._trace import Scalar
from ._vector import Mat3, Vec3, rotation_about

_ROTATION_TOL = 1e-14
_LENGTH_TOL = 1e-14
_INERTIA_RTOL = 1e-13


def _snap_unit(values: FloatArray) -> FloatArray:
    out = np.array(values, dtype=float)
    out[np.abs(out) < _ROTATION_TOL] = 0.0
    out[np.abs(out - 1.0) < _ROTATION_TOL] = 1.0
    out[np.abs(out + 1.0) < _ROTATION_TOL] = -1.0
    return out


def _snap_length(values: FloatArray) -> FloatArray:
    out = np.array(values, dtype=float)
    out[np.abs(out) < _LENGTH_TOL] = 0.0
    return out


def _snap_inertia(values: FloatArray) -> FloatArray:
    out = np.array(values, dtype=float)
    scale = float(np.abs(out).max(initial=0.0))
    out[np.abs(out) <= _INERTIA_RTOL * scale] = 0.0
    return 0.5 * (out + out.T)


@dataclass(frozen=True)
class Link:
    """Joint ``i`` and link ``i``: ``T_{i-1,i}(q) = (R0, p0) Rot/Trans(axis, q)``, link data in ``F_i``."""

    rotation: Mat3  # R0 = rotation of the joint origin X_i
    translation: Vec3  # p0 = translation of X_i
    axis: Vec3  # joint axis in F_i
    prismatic: bool
    mass: float
    com: Vec3  # s_i, centre of mass in F_i
    inertia: Mat3  # I_i about the centre of mass, F_i axes
    motor_inertia: float  # G^2 Jm

    def transform(self, q: Scalar) -> tuple[Mat3, Vec3]:
        """``(R_i, p_i)``: rotation of ``F_i`` in ``F_{i-1}`` and position of its origin."""
        if self.prismatic:
            return self.rotation, self.translation + self.rotation @ (self.axis * q)
        return self.rotation @ rotation_about(self.axis, q), self.translation


@dataclass(frozen=True)
class Chain:
    links: tuple[Link, ...]
    tool_rotation: Mat3  # tool frame in F_n
    tool_translation: Vec3
    gravity: Vec3  # g in F_0

    @property
    def dof(self) -> int:
        return len(self.links)


def chain_of(model: RobotModel) -> Chain:
    links = []
    for joint in model.joints:
        body = joint.link
        links.append(
            Link(
                rotation=Mat3.of(_snap_unit(joint.origin[:3, :3])),
                translation=Vec3.of(_snap_length(joint.origin[:3, 3])),
                axis=Vec3.of(_snap_unit(joint.axis)),
                prismatic=joint.is_prismatic,
                mass=body.mass,
                com=Vec3.of(_snap_length(body.com)),
                inertia=Mat3.of(_snap_inertia(body.inertia)),
                motor_inertia=joint.motor.reflected_inertia if joint.motor is not None else 0.0,
            )
        )
    return Chain(
        links=tuple(links),
        tool_rotation=Mat3.of(_snap_unit(model.tool[:3, :3])),
        tool_translation=Vec3.of(_snap_length(model.tool[:3, 3])),
        gravity=Vec3.of(model.gravity_base),
    )
