"""Generalized momentum ``p = D(q) qd`` and its rate ``dD/dt qd`` by one recursion over the links.

The momentum observer (:mod:`.momentum_observer`) needs ``p`` and ``(C + C^T) qd = dD/dt qd`` at every
sample; by way of D and the Coriolis matrix that is ``O(n^3)`` work and an ``n^3`` tensor. Both follow
from the links' momenta in ``O(n)`` instead, written in the link frames of :mod:`.rnea` (``R_i``,
``p_i``, the constant axis ``a_i`` in ``F_i``; vectors of link ``i`` in ``F_i``).

Forward, i = 1..n, from a base at rest: the angular velocity ``w_i`` and the velocity ``v_i`` of the
origin of ``F_i`` (revolute | prismatic)::

    w_i = R_i^T w_{i-1} + a_i qd_i                         | R_i^T w_{i-1}
    v_i = R_i^T (v_{i-1} + w_{i-1} x p_i)                  | R_i^T (v_{i-1} + w_{i-1} x p_i) + a_i qd_i

Link ``i``'s momentum about the origin of ``F_i`` (mass ``m``, first moment ``m s``, rotational
inertia about the origin ``I_O = I_c + m (s.s E - s s^T)``, as in :mod:`.crba`)::

    P_i = m v_i + w_i x (m s),        L_i = I_O w_i + (m s) x v_i

Backward, i = n..1, the momentum of the composite body of links i..n::

    P^C_i = P_i + R_{i+1} P^C_{i+1},   L^C_i = L_i + R_{i+1} L^C_{i+1} + p_{i+1} x (R_{i+1} P^C_{i+1})

Joint ``i``'s generalized momentum is the composite's momentum along its motion subspace ``S_i``
(``p = D qd``, since the composite's momentum is ``sum_k I^C_k S_k qd_k``), plus ``G^2 Jm qd_i`` when
D carries the motor inertia::

    p_i = a_i . L^C_i  (revolute)  |  a_i . P^C_i  (prismatic)

**The rate.** The Christoffel form gives ``C^T qd = dT/dq`` with the kinetic energy ``T = qd^T D qd / 2``
(``(C^T qd)_i = sum_jk c_jik qd_j qd_k``, and the two first-index terms of ``c_jik`` cancel in the sum);
moving joint ``i`` turns the subtree i..n about ``S_i``, which changes ``T`` at the rate
``(V_i x S_i) . H^C_i`` (spatial cross product of link i's spatial velocity ``V_i = (w_i, v_i)`` and
``S_i``; ``H^C_i = (L^C_i, P^C_i)``), so::

    (C^T qd)_i = -a_i . (w_i x L^C_i + v_i x P^C_i)  (revolute)  |  -a_i . (w_i x P^C_i)  (prismatic)

and ``dD/dt qd = C qd + C^T qd = h + C^T qd`` with ``h`` the Newton–Euler velocity terms (Fu 3.3-50..58
at ``qdd = 0`` without gravity; traced on the same tape, its velocity recursion is the one above and
is emitted once). Tested against ``D qd`` and ``(C + C^T) qd`` of :mod:`.coefficients` and against
Pinocchio (``computeCoriolisMatrix``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._chain import Chain
from ._trace import Scalar
from ._vector import Vec3, identity, outer
from .rnea import newton_euler


def momentum_and_rate(
    chain: Chain, q: Sequence[Scalar], qd: Sequence[Scalar], motor_inertia: bool
) -> tuple[list[Scalar], list[Scalar]]:
    """``(p, dD/dt qd)`` of the chain at ``(q, qd)``, each a list of ``n`` scalars."""
    n = chain.dof
    transforms = [link.transform(q[i]) for i, link in enumerate(chain.links)]
    w, v = Vec3.zero(), Vec3.zero()
    velocities: list[tuple[Vec3, Vec3]] = []
    linear: list[Vec3] = []
    angular: list[Vec3] = []
    for i, link in enumerate(chain.links):  # forward: velocities and each link's own momentum
        R, p = transforms[i]
        a = link.axis
        v = R.T @ (v + w.cross(p))
        if link.prismatic:
            w = R.T @ w
            v = v + a * qd[i]
        else:
            w = R.T @ w + a * qd[i]
        velocities.append((w, v))
        first = link.com * link.mass
        about_origin = link.inertia + (identity() * link.com.dot(link.com) - outer(link.com, link.com)) * link.mass
        linear.append(v * link.mass + w.cross(first))
        angular.append(about_origin @ w + first.cross(v))

    for i in reversed(range(1, n)):  # backward: composite momenta, tip to base
        R, p = transforms[i]
        carried = R @ linear[i]
        linear[i - 1] = linear[i - 1] + carried
        angular[i - 1] = angular[i - 1] + R @ angular[i] + p.cross(carried)

    h = newton_euler(chain, q, qd, [0.0] * n, Vec3.zero())[0]
    momentum: list[Scalar] = [0.0] * n
    rate: list[Scalar] = [0.0] * n
    for i, link in enumerate(chain.links):
        a = link.axis
        w, v = velocities[i]
        if link.prismatic:
            momentum[i] = linear[i].dot(a)
            coupling = -(w.cross(linear[i]).dot(a))
        else:
            momentum[i] = angular[i].dot(a)
            coupling = -((w.cross(angular[i]) + v.cross(linear[i])).dot(a))
        if motor_inertia:
            momentum[i] = momentum[i] + link.motor_inertia * qd[i]
        rate[i] = h[i] + coupling
    return momentum, rate
