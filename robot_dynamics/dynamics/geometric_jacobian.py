"""The geometric Jacobian of a frame on the chain, by one pass over the joint frames.

Frames as in :mod:`.rnea` (``R_i``, ``p_i``: rotation and origin of ``F_i`` in ``F_{i-1}``; the axis
``a_i`` constant in ``F_i``). Forward, i = 1..n, the pose of ``F_i`` in the base frame ``F_0``
(Fu 3.2-6)::

    R0_i = R0_{i-1} R_i,   o_i = o_{i-1} + R0_{i-1} p_i,   z_i = R0_i a_i

and the tool frame ``T`` (``R_t``, ``p_t`` in ``F_n``): ``R0_T = R0_n R_t``, ``o_T = o_n + R0_n p_t``.

**The frame.** A task names one of the frames ``F_0`` (the base), ``F_1..F_n`` (the links) and ``T`` by
weights ``s_0..s_{n+1}``, one of them 1 and the others 0; its pose is::

    R = sum_k s_k R0_k,   p = sum_k s_k o_k

and joint i moves it when the frame is ``F_i..F_n`` or ``T``: ``m_i = sum_{k >= i} s_k`` (1 or 0). With
constant weights (the tool frame, :func:`tool_weights`) the tracer folds the choice away; given as a
program input, one program serves every frame (products by 0 and 1 and sums with 0 are exact, so
each frame gets exactly its own numbers).

**The Jacobian** (Siciliano, Sciavicco, Villani & Oriolo, *Robotics: Modelling, Planning and
Control*, §3.1.3: our ``z_i``, ``o_i`` on joint i's axis are the book's ``z_{i-1}``, ``p_{i-1}``), columns
in base axes, rows ``[v; w]``::

    revolute i:  m_i [z_i x (p - o_i); z_i]        prismatic i:  m_i [z_i; 0]

so that ``J qd = [v; w]``, the linear velocity of the frame origin and the angular velocity.
Written over scalars, the engine traces it once per model and compiles it (:mod:`._kernels`); the
public functions are :func:`.tool_jacobian.jacobian` (the tool frame) and :mod:`.task_space` (any frame).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._chain import Chain
from ._trace import Scalar
from ._vector import Mat3, Vec3, identity


@dataclass(frozen=True)
class ChainFrames:
    """The forward pass: ``R0_k``, ``o_k`` of ``F_0, F_1..F_n, T`` (``n + 2`` each) and the joint axes
    ``z_1..z_n`` (``n``), all in ``F_0``."""

    rotations: list[Mat3]
    origins: list[Vec3]
    axes: list[Vec3]


def chain_frames(chain: Chain, q: Sequence[Scalar]) -> ChainFrames:
    """The poses of every frame of the chain in ``F_0`` and the joint axes (module doc)."""
    rotation, origin = identity(), Vec3.zero()
    rotations, origins, axes = [rotation], [origin], []
    for i, link in enumerate(chain.links):
        R, p = link.transform(q[i])
        origin = origin + rotation @ p
        rotation = rotation @ R
        axes.append(rotation @ link.axis)
        rotations.append(rotation)
        origins.append(origin)
    rotations.append(rotation @ chain.tool_rotation)
    origins.append(origin + rotation @ chain.tool_translation)
    return ChainFrames(rotations, origins, axes)


def tool_weights(chain: Chain) -> list[Scalar]:
    """The weights ``s`` of the tool frame ``T`` (constants)."""
    weights: list[Scalar] = [0.0] * (chain.dof + 1)
    return [*weights, 1.0]


def chosen_pose(frames: ChainFrames, weights: Sequence[Scalar]) -> tuple[Mat3, Vec3]:
    """``(R, p)`` of the frame the weights name: ``sum_k s_k R0_k``, ``sum_k s_k o_k``."""
    R, p = Mat3([[0.0] * 3 for _ in range(3)]), Vec3.zero()
    for s, rotation, origin in zip(weights, frames.rotations, frames.origins, strict=True):
        R, p = R + rotation * s, p + origin * s
    return R, p


def moved_by(weights: Sequence[Scalar]) -> list[Scalar]:
    """``m_i = sum_{k >= i} s_k``, i = 1..n: 1 if joint i moves the frame, else 0."""
    n = len(weights) - 2
    moved: list[Scalar] = [0.0] * n
    total: Scalar = weights[n + 1]
    for i in reversed(range(n)):
        total = total + weights[i + 1]
        moved[i] = total
    return moved


def geometric_jacobian(
    chain: Chain, q: Sequence[Scalar], weights: Sequence[Scalar] | None = None
) -> tuple[list[list[Scalar]], Mat3, Vec3]:
    """``(J, R, p)``: the ``6 x n`` Jacobian rows (base axes) of the frame the weights name (default the
    tool frame), its rotation and origin in ``F_0``."""
    frames = chain_frames(chain, q)
    R, p = chosen_pose(frames, tool_weights(chain) if weights is None else weights)
    moved = moved_by(tool_weights(chain) if weights is None else weights)
    rows: list[list[Scalar]] = [[0.0] * chain.dof for _ in range(6)]
    origins = frames.origins[1 : chain.dof + 1]
    for j, (link, z, o, m) in enumerate(zip(chain.links, frames.axes, origins, moved, strict=True)):
        axis = z * m  # m_i z_i: the column is zero for a joint that does not move the frame
        linear, angular = (axis, Vec3.zero()) if link.prismatic else (axis.cross(p - o), axis)
        for r, value in enumerate((*linear, *angular)):
            rows[r][j] = value
    return rows, R, p
