"""Recursive Newton–Euler inverse dynamics in link frames (Luh–Walker–Paul; Fu et al. 3.3-50..58).

Written for the model's frame convention (``model.py``): joint ``i`` turns or slides ``F_i`` about
its ``axis`` (a constant vector in ``F_i``), ``F_i``'s origin lies on joint ``i``'s axis, at
``p_i`` in ``F_{i-1}``. All quantities of link ``i`` are in ``F_i``; ``R_i`` is the rotation of ``F_i``
in ``F_{i-1}``. This is Fu's link-frame recursion (``R_i^T z0`` of Fu is our ``axis``) with the
origin acceleration propagated from the parent's origin, which is what arbitrary joint origins need
(for standard DH models it gives Fu's numbers exactly).

Forward, i = 1..n (revolute | prismatic):
  w_i  = R_i^T w_{i-1} + a_i qd_i                         | R_i^T w_{i-1}                 (3.3-50)
  wd_i = R_i^T wd_{i-1} + a_i qdd_i + (R_i^T w_{i-1}) x a_i qd_i | R_i^T wd_{i-1}        (3.3-51)
  vd_i = R_i^T (vd_{i-1} + wd_{i-1} x p_i + w_{i-1} x (w_{i-1} x p_i))
                                             [+ a_i qdd_i + 2 w_i x a_i qd_i]            (3.3-52)
  a_i  = vd_i + wd_i x s_i + w_i x (w_i x s_i)           (centre of mass)               (3.3-53)
  F_i  = m_i a_i,   N_i = I_i wd_i + w_i x (I_i w_i)                                     (3.3-54, 55)
(``wd x r + w x (w x r)`` is evaluated as ``lambda r`` with the lambda matrix of Dhanaraj (1990) Table 2.4,
shared by ``s_i`` and ``p_{i+1}``; ``w x (I w)`` of a principal-axes inertia as ``(D_x k_x, ...)``.)
Backward, i = n..1, (f_{n+1}, n_{n+1}) = the load the tool exerts on the environment, in the tool
frame at its origin (R_{n+1}, p_{n+1} = the tool pose in F_n):
  f_i  = R_{i+1} f_{i+1} + F_i                                                           (3.3-56)
  n_i  = N_i + R_{i+1} n_{i+1} + p_{i+1} x (R_{i+1} f_{i+1}) + s_i x F_i                   (3.3-57)
  tau_i = n_i . a_i (revolute),  f_i . a_i (prismatic)                                    (3.3-58)
Gravity enters as the base acceleration ``vd_0 = -g`` (``w_0 = wd_0 = 0``). These are Fu's equations with
the misprints of 3.3-50..53 and of Table 3.3's moment equation corrected (see docs/references.md).

``f_i, n_i`` are the force and moment that link i-1 exerts on link i through joint i, at the
origin of ``F_i``, in ``F_i`` — the reactions that load-dependent friction needs.

The function works on any scalars (see :mod:`._trace`); the engine runs it once per model on
traced values and compiles the result (:mod:`._kernels`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._chain import Chain
from ._trace import Scalar
from ._vector import Vec3, gyroscopic, lambda_matrix


def newton_euler(
    chain: Chain,
    q: Sequence[Scalar],
    qd: Sequence[Scalar],
    qdd: Sequence[Scalar],
    base_acceleration: Vec3,
    load: tuple[Vec3, Vec3] | None = None,
) -> tuple[list[Scalar], list[Vec3], list[Vec3]]:
    """``(tau, f, n)`` of the rigid chain; ``base_acceleration`` = ``vd_0`` (``-g`` for gravity)."""
    n = chain.dof
    w, wd, vd = Vec3.zero(), Vec3.zero(), base_acceleration
    lam = lambda_matrix(w, wd)
    rotations, offsets, forces, moments = [], [], [], []
    for i, link in enumerate(chain.links):
        R, p = link.transform(q[i])
        a = link.axis
        # velocities and accelerations of link i, carried from link i-1 (3.3-50..52)
        vd = R.T @ (vd + lam @ p)
        w_parent = R.T @ w
        if link.prismatic:
            w = w_parent
            wd = R.T @ wd
            vd = vd + a * qdd[i] + 2.0 * w.cross(a * qd[i])
        else:
            w = w_parent + a * qd[i]
            wd = R.T @ wd + a * qdd[i] + w_parent.cross(a * qd[i])
        lam = lambda_matrix(w, wd)
        acc_com = vd + lam @ link.com  # 3.3-53
        forces.append(acc_com * link.mass)  # F_i (3.3-54)
        moments.append(link.inertia @ wd + gyroscopic(link.inertia, w))  # N_i (3.3-55)
        rotations.append(R)
        offsets.append(p)

    # backward recursion (3.3-56..58); start from the load at the tool frame
    R_next, p_next = chain.tool_rotation, chain.tool_translation
    f_next, n_next = load if load is not None else (Vec3.zero(), Vec3.zero())
    tau: list[Scalar] = [0.0] * n
    f_out: list[Vec3] = [Vec3.zero()] * n
    n_out: list[Vec3] = [Vec3.zero()] * n
    for i in reversed(range(n)):
        link = chain.links[i]
        f_child = R_next @ f_next
        f_i = f_child + forces[i]
        n_i = moments[i] + R_next @ n_next + p_next.cross(f_child) + link.com.cross(forces[i])
        tau[i] = (f_i if link.prismatic else n_i).dot(link.axis)
        f_out[i], n_out[i] = f_i, n_i
        R_next, p_next, f_next, n_next = rotations[i], offsets[i], f_i, n_i
    return tau, f_out, n_out
