"""Load-dependent joint (bearing) friction, Dhanaraj (1990) Table 3.1 (eqs. 3.3-3.5), corrected pairing.

Inputs are the *frictionless* reaction force ``f`` and moment ``n`` that link i-1 exerts on link i at
the origin of ``F_i`` (Gogoussis & Donath 1988 premise, Dhanaraj (1990) §3.2: with the motion given, the
reactions do not depend on friction), expressed in an axis-aligned joint frame whose z axis is the
joint axis (see :func:`axis_frame`). With ``mu`` the friction coefficient, ``r`` the journal/thrust
radius and ``d`` the spacing of the two supports, the friction magnitudes are

* journal bearing (revolute), two radial bearings at ``z = +d/2`` (A) and ``z = -d/2`` (B):
  ``|tau_f| = (mu r / d) [ |(d/2 f_x + n_y, d/2 f_y - n_x)| + |(d/2 f_x - n_y, d/2 f_y + n_x)| ]``;
* linear bearing (prismatic), same supports, x and y faces carry their loads separately:
  ``|f_f| = (mu / d) [ |d/2 f_x + n_y| + |d/2 f_y - n_x| + |d/2 f_x - n_y| + |d/2 f_y + n_x| ]``;
* thrust bearing (revolute): ``|tau_f| = mu r |f_z|`` (Table 3.1; eq. 3.5's ``f_x`` is a misprint);

and the compensating torque is ``sgn(qd) |tau_f|`` (0 at rest; ``smooth`` substitutes ``s(qd)``).

Two-bearing statics (the derivation behind the journal pairing, docs/friction.md, docs/references.md): the radial
bearing forces ``F_A``, ``F_B`` (in the xy plane) carry the reaction, so ``F_A + F_B = f_xy`` and
``r_A x F_A + r_B x F_B = n_xy`` with ``r_A = (0, 0, d/2) = -r_B``. Since
``(0, 0, h) x (F_x, F_y, 0) = (-h F_y, h F_x, 0)``:
``F_A = f_xy/2 - (z x n)/d = ((d/2 f_x + n_y), (d/2 f_y - n_x)) / d`` and
``F_B = f_xy/2 + (z x n)/d = ((d/2 f_x - n_y), (d/2 f_y + n_x)) / d``. The thesis prints the pairing
``(d/2 f_x - n_y, d/2 f_y - n_x)`` / ``(d/2 f_x + n_y, d/2 f_y + n_x)``, which is a mirror image:
it changes when the x-y axes are turned about the joint axis, which a physical friction torque
cannot. The linear-bearing sum of absolute components is the same under either pairing.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.friction.smooth import as_float
from robot_dynamics.model import FloatArray


def axis_frame(axis: ArrayLike) -> FloatArray:
    """Rotation ``R`` (rows ``e_x, e_y, a``) taking ``F_i`` components to a frame whose z is the axis.

    ``e_x`` is the ``F_i`` coordinate axis least aligned with ``a`` (first one on ties), made
    orthogonal to ``a``; ``e_y = a x e_x``. For a coordinate axis the frame is axis-aligned:
    z -> (x, y, z), x -> (y, z, x), y -> (x, -z, y), -z -> (x, -y, -z).
    """
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    v = np.zeros(3)
    v[int(np.argmin(np.abs(a)))] = 1.0
    ex = v - (v @ a) * a
    ex /= np.linalg.norm(ex)
    ey = np.cross(a, ex)
    return np.array([ex, ey, a])


def journal_bearing(
    force: ArrayLike, moment: ArrayLike, mu: ArrayLike, radius: ArrayLike, spacing: ArrayLike
) -> FloatArray:
    """Magnitude ``(mu r/d)(|F_A| + |F_B|) d`` of journal-bearing friction (Dhanaraj eq. 3.3, misprint corrected).

    ``force``, ``moment``: ``(..., 3)`` in the axis frame (z = joint axis).
    """
    f = as_float(force)
    n = as_float(moment)
    hx = 0.5 * as_float(spacing) * f[..., 0]
    hy = 0.5 * as_float(spacing) * f[..., 1]
    nx, ny = n[..., 0], n[..., 1]
    a = np.hypot(hx + ny, hy - nx)  # bearing A at z = +d/2, times d
    b = np.hypot(hx - ny, hy + nx)  # bearing B at z = -d/2, times d
    return as_float(mu) * as_float(radius) / as_float(spacing) * (a + b)


def linear_bearing(force: ArrayLike, moment: ArrayLike, mu: ArrayLike, spacing: ArrayLike) -> FloatArray:
    """Magnitude of linear-bearing friction force (Dhanaraj (1990) eq. 3.4): ``mu`` times the normal loads."""
    f = as_float(force)
    n = as_float(moment)
    hx = 0.5 * as_float(spacing) * f[..., 0]
    hy = 0.5 * as_float(spacing) * f[..., 1]
    nx, ny = n[..., 0], n[..., 1]
    total = np.abs(hx + ny) + np.abs(hy - nx) + np.abs(hx - ny) + np.abs(hy + nx)
    return as_float(mu) / as_float(spacing) * total


def thrust_bearing(force: ArrayLike, mu: ArrayLike, radius: ArrayLike) -> FloatArray:
    """Magnitude ``mu r |f_z|`` of thrust-bearing friction (Dhanaraj (1990) Table 3.1)."""
    f = as_float(force)
    return as_float(mu) * as_float(radius) * np.abs(f[..., 2])
