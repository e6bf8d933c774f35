"""Kinetic and potential energy of the chain (used to check the simulator conserves energy).

K = 1/2 qd^T D(q) qd      (D including G^2 Jm per ``motor_inertia``: the rotors' kinetic energy
                           in the Robotics Toolbox approximation)
P = -sum_i m_i g . r_i(q)  (r_i the centre of mass of link i, g the gravity vector, both in F_0)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..model import FloatArray, RobotModel
from ._state import as_batch, states
from .coefficients import inertia_matrix
from .kinematics import com_positions


def kinetic_energy(model: RobotModel, q: ArrayLike, qd: ArrayLike, *, motor_inertia: bool | None = None) -> FloatArray:
    """``1/2 qd^T D qd``: a float for one state, ``(N,)`` for a batch."""
    batch, values = states(model, q=q, qd=qd)
    qb, qdb = as_batch(batch, values)
    D = inertia_matrix(model, qb, motor_inertia=motor_inertia)
    energy = 0.5 * np.einsum("Ni,Nij,Nj->N", qdb, D, qdb)
    return energy if batch else energy[0]


def potential_energy(model: RobotModel, q: ArrayLike) -> FloatArray:
    """``-sum m_i g . r_i``: a float for one state, ``(N,)`` for a batch (zero at the base origin)."""
    batch, (qs,) = states(model, q=q)
    qb = as_batch(batch, [qs])[0]
    r = com_positions(model, qb)
    energy = -np.einsum("n,Nni,i->N", model.arrays.mass, r, model.gravity_base)
    return energy if batch else energy[0]
