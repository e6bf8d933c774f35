"""Forward kinematics of every frame and the tool pose (vectorised NumPy).

Frames follow ``model.py``: ``T_{i-1,i}(q) = X_i M_i(q_i)`` with ``M_i = Rot(axis_i, q_i)`` (revolute,
Rodrigues ``c E + s [a]x + (1 - c) a a^T``) or ``Trans(axis_i q_i)`` (prismatic);
``A0_i = T_{0,1} ... T_{i-1,i}`` is the pose of ``F_i`` in the base frame ``F_0`` (Fu's ``0A_i``,
3.2-6), the tool pose is ``A0_n @ model.tool`` and ``model.base @ ...`` in the world.

The geometric Jacobian of the tool-frame origin is a compiled engine program
(:mod:`.geometric_jacobian`, :func:`.tool_jacobian.jacobian`).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import StateError
from ..model import FloatArray, RobotModel
from ._state import as_batch, states

Frame = Literal["base", "world", "tool"]


@dataclass(frozen=True)
class _JointTerms:
    """``T_{i-1,i}(q_i) = fixed + cos(q_i) cosine + sin(q_i) sine + q_i slide`` for every joint, ``(n, 4, 4)``.

    Rodrigues split over the constant origin: ``X_i Rot(a, q) = X_i [a a^T + c (E - a a^T) + s [a]x]``
    (revolute; origin translation unchanged) and ``X_i Trans(a q) = X_i + q [0, R_X a; 0, 0]``
    (prismatic), so the transforms of all joints are four array operations.
    """

    fixed: FloatArray
    cosine: FloatArray
    sine: FloatArray
    slide: FloatArray


_TERMS: weakref.WeakKeyDictionary[RobotModel, _JointTerms] = weakref.WeakKeyDictionary()


def _joint_terms(model: RobotModel) -> _JointTerms:
    terms = _TERMS.get(model)
    if terms is not None:
        return terms
    arr = model.arrays
    n = model.dof
    a = arr.axis  # (n, 3)
    K = np.zeros((n, 3, 3))  # [a]x
    K[:, 0, 1], K[:, 0, 2], K[:, 1, 2] = -a[:, 2], a[:, 1], -a[:, 0]
    K[:, 1, 0], K[:, 2, 0], K[:, 2, 1] = a[:, 2], -a[:, 1], a[:, 0]
    aaT = np.einsum("ni,nj->nij", a, a)
    revolute = ~arr.prismatic[:, None, None]
    R = arr.origin_rotation
    fixed = np.zeros((n, 4, 4))
    fixed[:, :3, :3] = np.where(revolute, R @ aaT, R)
    fixed[:, :3, 3] = arr.origin_translation
    fixed[:, 3, 3] = 1.0
    cosine, sine, slide = np.zeros((n, 4, 4)), np.zeros((n, 4, 4)), np.zeros((n, 4, 4))
    cosine[:, :3, :3] = np.where(revolute, R @ (np.eye(3) - aaT), 0.0)
    sine[:, :3, :3] = np.where(revolute, R @ K, 0.0)
    slide[:, :3, 3] = np.where(revolute[:, :, 0], 0.0, np.einsum("nij,nj->ni", R, a))
    terms = _JointTerms(fixed, cosine, sine, slide)
    _TERMS[model] = terms
    return terms


def joint_transforms(model: RobotModel, q: FloatArray) -> FloatArray:
    """``T_{i-1,i}(q_i)`` for a batch ``q`` of shape ``(N, n)``: ``(N, n, 4, 4)``."""
    t = _joint_terms(model)
    qe = q[:, :, None, None]
    return np.asarray(t.fixed + np.cos(qe) * t.cosine + np.sin(qe) * t.sine + qe * t.slide)


def batch_frame_poses(model: RobotModel, q: FloatArray) -> FloatArray:
    """``A0_i`` for ``i = 1..n`` of a validated batch ``(N, n)``: ``(N, n, 4, 4)`` (no checks)."""
    local = joint_transforms(model, q)
    poses = np.empty_like(local)
    for i in range(model.dof):  # A0_i = A0_{i-1} T_{i-1,i}, A0_1 = T_{0,1}
        poses[:, i] = local[:, 0] if i == 0 else poses[:, i - 1] @ local[:, i]
    return poses


def _finish(batch: bool, value: FloatArray) -> FloatArray:
    return value if batch else value[0]


def frame_poses(model: RobotModel, q: object) -> FloatArray:
    """Poses of the joint frames ``F_1..F_n`` in the base frame ``F_0``: ``(..., n, 4, 4)``."""
    batch, (qs,) = states(model, q=q)
    return _finish(batch, batch_frame_poses(model, as_batch(batch, [qs])[0]))


def forward_kinematics(model: RobotModel, q: object, *, frame: Frame = "world") -> FloatArray:
    """Tool pose ``(..., 4, 4)``: in the world (``model.base`` applied, the default) or in ``F_0`` ("base")."""
    batch, (qs,) = states(model, q=q)
    qb = as_batch(batch, [qs])[0]
    tool = model.tool if model.dof == 0 else batch_frame_poses(model, qb)[:, -1] @ model.tool
    if frame == "world":
        tool = model.base @ tool
    elif frame != "base":
        raise StateError(f"frame: expected 'world' or 'base', got {frame!r}")
    return _finish(batch, np.asarray(tool))


def com_positions(model: RobotModel, q: object) -> FloatArray:
    """Centres of mass of the links in the base frame ``F_0``: ``(..., n, 3)``."""
    batch, (qs,) = states(model, q=q)
    poses = batch_frame_poses(model, as_batch(batch, [qs])[0])
    com = np.einsum("Nnij,nj->Nni", poses[..., :3, :3], model.arrays.com) + poses[..., :3, 3]
    return _finish(batch, com)
