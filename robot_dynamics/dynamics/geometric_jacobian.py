"""The geometric Jacobian of the tool-frame origin, by one pass over the joint frames.

Frames as in :mod:`.rnea` (``R_i``, ``p_i``: rotation and origin of ``F_i`` in ``F_{i-1}``; the axis
``a_i`` constant in ``F_i``). Forward, i = 1..n, the pose of ``F_i`` in the base frame ``F_0``
(Fu 3.2-6)::

    R0_i = R0_{i-1} R_i,   o_i = o_{i-1} + R0_{i-1} p_i,   z_i = R0_i a_i

then the tool frame (``R_t``, ``p_t`` in ``F_n``): ``R0_t = R0_n R_t``, ``p_0t = o_n + R0_n p_t``; and the
columns (base-frame components, rows ``[v; w]``)::

    revolute i:  [z_i x (p_0t - o_i); z_i]        prismatic i:  [z_i; 0]

so that ``J qd = [v_t; w_t]``, the linear velocity of the tool origin and the angular velocity.
Written over scalars, the engine traces it once per model and compiles it (:mod:`._kernels`); the
public function (frames, batches) is :func:`.tool_jacobian.jacobian`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._chain import Chain
from ._trace import Scalar
from ._vector import Mat3, Vec3, identity


def geometric_jacobian(chain: Chain, q: Sequence[Scalar]) -> tuple[list[list[Scalar]], Mat3]:
    """``(J, R0_t)``: the ``6 x n`` Jacobian rows (base frame) and the tool frame's rotation in ``F_0``."""
    rotation, origin = identity(), Vec3.zero()
    axes: list[Vec3] = []
    origins: list[Vec3] = []
    for i, link in enumerate(chain.links):
        R, p = link.transform(q[i])
        origin = origin + rotation @ p
        rotation = rotation @ R
        axes.append(rotation @ link.axis)
        origins.append(origin)
    tool = origin + rotation @ chain.tool_translation
    columns: list[tuple[Vec3, Vec3]] = [
        (z, Vec3.zero()) if link.prismatic else (z.cross(tool - o), z)
        for link, z, o in zip(chain.links, axes, origins, strict=True)
    ]
    rows: list[list[Scalar]] = [[0.0] * chain.dof for _ in range(6)]
    for j, (linear, angular) in enumerate(columns):
        for r, value in enumerate((*linear, *angular)):
            rows[r][j] = value
    return rows, rotation @ chain.tool_rotation
