"""``Jdot qd`` of a frame on the chain: its classical acceleration at ``qdd = 0``, by one forward pass.

The frame's twist is ``[v; w] = J(q) qd`` (:mod:`.geometric_jacobian`); differentiating,
``[a; alpha] = J qdd + Jdot qd``: ``Jdot qd`` is the acceleration of the frame's origin and its angular
acceleration when the joints do not accelerate (the bias a task-space controller subtracts:
``xdd = J qdd + Jdot qd``; Siciliano, Sciavicco, Villani & Oriolo, *Robotics: Modelling, Planning and
Control*, §3.1).

It is the accelerations of the recursive Newton–Euler formulation at ``qdd = 0`` (Siciliano et al.
§7.5, Fu 3.3-50..52), written in base axes for the frames of :mod:`.geometric_jacobian` (``z_i``,
``o_i`` of ``F_i`` in ``F_0``; ``o_i`` lies on joint i's axis and is a point of link i-1). From a base
at rest, i = 1..n, with ``r_i = o_i - o_{i-1}``::

    a_i     = a_{i-1} + alpha_{i-1} x r_i + w_{i-1} x (w_{i-1} x r_i)      (o_i on link i-1)
              [+ 2 w_{i-1} x z_i qd_i]                                      (prismatic: Coriolis)
    alpha_i = alpha_{i-1} + w_{i-1} x z_i qd_i,   w_i = w_{i-1} + z_i qd_i   (revolute; prismatic: unchanged)

The frame (weights ``s``, joints that move it ``m_i``, its origin ``p``) is a point of the last link
once the joints after it are held: with ``qd_i`` replaced by ``m_i qd_i`` the links beyond the frame
move with it, so the frame's origin accelerates as a point of link n::

    Jdot qd = [a_n + alpha_n x (p - o_n) + w_n x (w_n x (p - o_n));  alpha_n]

(for the tool frame the ``m_i`` are the constant 1 and fold away). Base axes, like the Jacobian.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._chain import Chain
from ._trace import Scalar
from ._vector import Vec3
from .geometric_jacobian import chain_frames, chosen_pose, moved_by


def jacobian_rate(chain: Chain, q: Sequence[Scalar], qd: Sequence[Scalar], weights: Sequence[Scalar]) -> list[Scalar]:
    """``Jdot qd`` ``[a; alpha]`` (6 scalars, base axes) of the frame the weights name."""
    frames = chain_frames(chain, q)
    _, p = chosen_pose(frames, weights)
    moving = [rate * m for rate, m in zip(qd, moved_by(weights), strict=True)]
    w, alpha, a = Vec3.zero(), Vec3.zero(), Vec3.zero()
    for i, link in enumerate(chain.links):
        z, r = frames.axes[i], frames.origins[i + 1] - frames.origins[i]
        a = a + alpha.cross(r) + w.cross(w.cross(r))
        turn = z * moving[i]
        if link.prismatic:
            a = a + w.cross(turn) * 2.0
        else:
            alpha = alpha + w.cross(turn)
            w = w + turn
    r = p - frames.origins[chain.dof]
    a = a + alpha.cross(r) + w.cross(w.cross(r))
    return [*a, *alpha]
