"""The joint-torque regressor ``Y(q, qd, qdd)``: ``tau = Y theta`` (Khalil & Dombre 2002, eq. 12.9).

Rigid-body part (Atkeson, An & Hollerbach 1986; Khalil & Dombre section 9.2): the forward recursion
of the link-frame Newton–Euler algorithm (Fu, Gonzalez & Lee eqs. 3.3-50..52, as in
:mod:`robot_dynamics.dynamics.rnea`) gives each link's angular velocity ``w``, angular acceleration
``wd`` and the acceleration ``vd`` of its frame origin (gravity as the base acceleration
``vd_0 = -g``), all in ``F_i``. The wrench link ``i`` needs, at the origin of ``F_i``, is linear in its
10 standard parameters ``(m, m c, I_O)``:

    f_i = m vd + wd x (m c) + w x (w x (m c))
    n_i = I_O wd + w x (I_O w) + (m c) x vd

and it loads joint ``j <= i`` (axis ``e``, both in ``F_i``; ``d`` = origin of ``F_i`` minus origin of
``F_j``) with ``tau_j = e . (n_i + d x f_i) = e . n_i + (e x d) . f_i`` (revolute) or ``e . f_i``
(prismatic) — the backward recursion 3.3-56..58 written per link. With ``u = e x d`` the row block of
link ``i`` at joint ``j`` is therefore

    m:    u . vd
    m c:  u x wd + w x (w x u) + vd x e
    I_O:  sym(e, wd) + sym(e x w, w),   sym(a, b) = (a_x b_x, a_x b_y + a_y b_x, ..., a_z b_z)

(prismatic ``j``: ``u = e`` and ``e = 0`` in these formulas). Joint axes and origin offsets of all
``j <= i`` are carried up the chain in the current link frame, so every quantity is a few
element-wise operations on ``(N, i)`` arrays: vectorised over the samples, loops over links only.

Friction and armature columns per joint: ``qdd`` (armature ``G^2 Jm``), ``qd`` (viscous), ``s``
(Coulomb), ``|s|`` (asymmetric Coulomb), ``1`` (offset), ``s = tanh(qd / v_s)`` or ``sgn(qd)``:
the engine's friction law (:func:`robot_dynamics.friction.friction_total`, ``b = c_v qd + s A + |s| B``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from robot_dynamics.dynamics._state import as_batch, states
from robot_dynamics.dynamics.inverse import inverse_dynamics
from robot_dynamics.errors import StateError
from robot_dynamics.model import FloatArray, RobotModel

from .parameters import Layout, ParameterSet, nominal_parameters

CHUNK = 20_000  # states per block of work (bounds the temporaries: ~100 MB for a 7-DoF arm)
_TOL = 1e-14

Vec = tuple[FloatArray, FloatArray, FloatArray]
Const = tuple[float, float, float]


# ----------------------------------------------------------------------------------------------
# vectors as (x, y, z) triples of arrays: contiguous components, no np.cross overhead
# ----------------------------------------------------------------------------------------------
def _cross(a: Vec, b: Vec) -> Vec:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _dot(a: Vec, b: Vec) -> FloatArray:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _add(a: Vec, b: Vec) -> Vec:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def _lincomb(coefficients: Const, v: Vec) -> FloatArray:
    """``sum_k c_k v_k`` with constant coefficients, skipping zeros (folded like the engine's tracer)."""
    out: FloatArray | None = None
    for c, x in zip(coefficients, v, strict=True):
        if c == 0.0:
            continue
        term = x if c == 1.0 else -x if c == -1.0 else c * x
        out = term if out is None else out + term
    return np.zeros_like(v[0]) if out is None else out


def _const_cross(k: Const, v: Vec) -> Vec:
    """``k x v`` for a constant vector ``k``."""
    return (
        _lincomb((0.0, -k[2], k[1]), v),
        _lincomb((k[2], 0.0, -k[0]), v),
        _lincomb((-k[1], k[0], 0.0), v),
    )


def _columns(v: Vec, k: int) -> Vec:
    return (v[0][k : k + 1], v[1][k : k + 1], v[2][k : k + 1])


def _snap(values: FloatArray) -> FloatArray:
    out = np.array(values, dtype=float)
    out[np.abs(out) < _TOL] = 0.0
    out[np.abs(out - 1.0) < _TOL] = 1.0
    out[np.abs(out + 1.0) < _TOL] = -1.0
    return out


class _Joint:
    """Constants of one joint: ``T_{i-1,i}(q) = (R0, t0) Rot/Trans(axis, q)``."""

    def __init__(self, rotation: FloatArray, translation: FloatArray, axis: FloatArray, prismatic: bool) -> None:
        r = _snap(rotation)
        self.columns = tuple((float(r[0, k]), float(r[1, k]), float(r[2, k])) for k in range(3))  # rows of R0^T
        self.t0: Const = tuple(float(x) for x in np.where(np.abs(translation) < _TOL, 0.0, translation))  # type: ignore[assignment]
        a = _snap(axis)
        self.axis: Const = (float(a[0]), float(a[1]), float(a[2]))
        self.prismatic = prismatic
        nonzero = [k for k in range(3) if a[k] != 0.0]
        self.coordinate = nonzero[0] if len(nonzero) == 1 else -1  # axis along +-x, y or z
        r0_axis = r @ a
        self.r0_axis: Const = (float(r0_axis[0]), float(r0_axis[1]), float(r0_axis[2]))

    def to_child(self, v: Vec, c: FloatArray | None, s: FloatArray | None) -> Vec:
        """``R_i^T v = Rot(axis, q)^T R0^T v``: a vector of ``F_{i-1}`` in ``F_i`` (``c, s`` = cos/sin q)."""
        u = (_lincomb(self.columns[0], v), _lincomb(self.columns[1], v), _lincomb(self.columns[2], v))
        if self.prismatic or c is None or s is None:
            return u
        k = self.coordinate
        if k >= 0:  # rotation about a coordinate axis by -q (sign of the axis folded into s)
            sk = s if self.axis[k] > 0 else -s
            i, j = (k + 1) % 3, (k + 2) % 3
            out = [u[0], u[1], u[2]]
            out[i] = c * u[i] + sk * u[j]
            out[j] = c * u[j] - sk * u[i]
            return (out[0], out[1], out[2])
        a = self.axis  # Rodrigues with angle -q
        ax_u = _const_cross(a, u)
        along = (1.0 - c) * _lincomb(a, u)
        return (
            c * u[0] - s * ax_u[0] + a[0] * along,
            c * u[1] - s * ax_u[1] + a[1] * along,
            c * u[2] - s * ax_u[2] + a[2] * along,
        )


def _lincomb_rows(rows: list[list[FloatArray | None]], v: Vec) -> list[FloatArray]:
    """``sum_c rows[k][c] v_c`` for every ``k``, per-state coefficients ``(1, N)`` (None = 0)."""
    out = []
    for row in rows:
        acc: FloatArray | None = None
        for coefficient, x in zip(row, v, strict=True):
            if coefficient is None:
                continue
            acc = coefficient * x if acc is None else acc + coefficient * x
        out.append(np.zeros_like(v[0]) if acc is None else acc)
    return out


def _link_block(w: Vec, wd: Vec, vd: Vec, e: Vec, u: Vec) -> list[FloatArray]:
    """One link's regressor rows at the joints below it, 10 arrays ``(k, N)`` (module docstring).

    ``w, wd, vd`` ``(1, N)`` of the link, ``e`` the joint axes and ``u = e x d`` ``(k, N)`` in its frame
    (states last: every operation runs over N contiguous values).
    ``u . vd``, ``lambda^T u + vd x e`` and ``sym(e, wd) + sym(e x w, w)`` are written as per-state
    coefficient matrices applied to ``u`` and ``e`` (fewest operations on the ``(k, N)`` arrays).
    """
    w0, w1, w2 = w
    a0, a1, a2 = wd
    v0, v1, v2 = vd
    s00, s11, s22 = w0 * w0, w1 * w1, w2 * w2
    s01, s02, s12 = w0 * w1, w0 * w2, w1 * w2
    ww = s00 + s11 + s22
    # lambda = skew(wd) + w w^T - |w|^2 E (lambda r = wd x r + w x (w x r)); rows: lambda^T
    lam_t: list[list[FloatArray | None]] = [
        [s00 - ww, s01 + a2, s02 - a1],
        [s01 - a2, s11 - ww, s12 + a0],
        [s02 + a1, s12 - a0, s22 - ww],
    ]
    first = _lincomb_rows(lam_t, u)
    cross = _lincomb_rows([[None, -v2, v1], [v2, None, -v0], [-v1, v0, None]], e)  # vd x e
    cols = [_dot(u, vd), *(first[k] + cross[k] for k in range(3))]
    inertia = _lincomb_rows(
        [
            [a0, s02, -s01],  # Ixx
            [a1 - s02, a0 + s12, s00 - s11],  # Ixy
            [a2 + s01, s22 - s00, a0 - s12],  # Ixz
            [-s12, a1, s01],  # Iyy
            [s11 - s22, a2 - s01, a1 + s02],  # Iyz
            [s12, -s02, a2],  # Izz
        ],
        e,
    )
    return cols + inertia  # not stacked: callers copy the rows where they need them


def _link_blocks(
    model: RobotModel, q: FloatArray, qd: FloatArray, qdd: FloatArray, links: tuple[int, ...]
) -> Iterator[tuple[int, list[FloatArray]]]:
    """``(i, block)`` for every link ``i`` in ``links``: its regressor rows at joints 0..i, 10 arrays
    ``(i + 1, N)`` (per parameter: joint, state) for states ``(N, n)``."""
    arrays = model.arrays
    count = q.shape[0]
    qT, qdT, qddT = (np.ascontiguousarray(x.T) for x in (q, qd, qdd))
    wanted = set(links)
    last = max(links)
    g = model.gravity_base
    zeros = np.zeros((1, count))
    w: Vec = (zeros, zeros, zeros)
    wd: Vec = w
    vd: Vec = (zeros - g[0], zeros - g[1], zeros - g[2])
    axes: Vec | None = None  # joint axes of joints 0..i-1, in the current frame, (i, N) each
    offsets: Vec | None = None  # origin of the current frame minus origin of F_j, current frame
    prismatic = arrays.prismatic
    for i in range(last + 1):
        jt = _Joint(arrays.origin_rotation[i], arrays.origin_translation[i], arrays.axis[i], bool(prismatic[i]))
        qi, qdi, qddi = qT[i : i + 1], qdT[i : i + 1], qddT[i : i + 1]
        if jt.prismatic:
            c = s = None
            p: Vec = tuple(jt.t0[k] + jt.r0_axis[k] * qi for k in range(3))  # type: ignore[assignment]
        else:
            c, s = np.cos(qi), np.sin(qi)
            p = (zeros + jt.t0[0], zeros + jt.t0[1], zeros + jt.t0[2])
        pre = _add(vd, _add(_cross(wd, p), _cross(w, _cross(w, p))))  # 3.3-52, parent frame
        # carry everything into F_i with one rotation: vd, w, wd, the axes and the origin offsets
        parts = [pre, w, wd]
        if axes is not None and offsets is not None:
            parts += [axes, _add(offsets, p)]
        stacked: Vec = tuple(np.concatenate([v[k] for v in parts]) for k in range(3))  # type: ignore[assignment]
        rotated = jt.to_child(stacked, c, s)
        vd, w_parent, wd_parent = (_columns(rotated, k) for k in range(3))
        a = jt.axis
        column = np.ones((1, count))
        new_axis: Vec = (column * a[0], column * a[1], column * a[2])
        if axes is None:
            axes, offsets = new_axis, (zeros, zeros, zeros)
        else:
            axes = tuple(np.concatenate([x[3 : 3 + i], y]) for x, y in zip(rotated, new_axis, strict=True))  # type: ignore[assignment]
            offsets = tuple(np.concatenate([x[3 + i :], zeros]) for x in rotated)  # type: ignore[assignment]
        assert axes is not None and offsets is not None
        a_qd = (a[0] * qdi, a[1] * qdi, a[2] * qdi)
        if jt.prismatic:
            w, wd = w_parent, wd_parent
            coriolis = _cross(w, a_qd)
            vd = _add(_add(vd, (a[0] * qddi, a[1] * qddi, a[2] * qddi)), _add(coriolis, coriolis))  # + 2 w x a qd
        else:
            w = _add(w_parent, a_qd)  # 3.3-50
            wd = _add(_add(wd_parent, (a[0] * qddi, a[1] * qddi, a[2] * qddi)), _cross(w_parent, a_qd))  # 3.3-51
        if i not in wanted:
            continue
        u = _cross(axes, offsets)
        e = axes
        slide = prismatic[: i + 1, None]
        if slide.any():  # prismatic joint j: tau_j = e . f, i.e. u = e and no moment term
            u = tuple(np.where(slide, ek, uk) for ek, uk in zip(axes, u, strict=True))  # type: ignore[assignment]
            e = tuple(np.where(slide, 0.0, ek) for ek in axes)  # type: ignore[assignment]
        yield i, _link_block(w, wd, vd, e, u)


def _joint_values(pset: ParameterSet, qd: FloatArray, qdd: FloatArray) -> dict[str, FloatArray]:
    """The per-joint friction/armature columns ``(N, n)`` by kind (``Ia Fv Fc Fa Fo``)."""
    values = {"Ia": qdd, "Fv": qd, "Fo": np.ones_like(qd)}
    if pset.coulomb != "none":
        s = np.tanh(qd / pset.coulomb_velocity) if pset.coulomb == "tanh" else np.sign(qd)
        values["Fc"], values["Fa"] = s, np.abs(s)
    return values


def _joint_columns(pset: ParameterSet, qd: FloatArray, qdd: FloatArray, lay: Layout, out: FloatArray) -> None:
    rows = np.arange(qd.shape[1])
    values = _joint_values(pset, qd, qdd)
    for kind, cols in lay.joint_column.items():
        if cols[0] >= 0:
            out[:, rows, cols] = values[kind]


def joint_rows(
    model: RobotModel, q: FloatArray, qd: FloatArray, qdd: FloatArray, pset: ParameterSet
) -> Iterator[tuple[int, NDArray[np.intp], FloatArray]]:
    """``(j, columns, A)`` per joint: the non-zero part of joint ``j``'s regressor rows, ``A (N, c_j)``
    holding the theta ``columns`` (links ``i >= j`` and joint ``j``'s own); states ``(N, n)`` as arrays.
    The building block of normal equations that never forms the whole ``(N, n, p)`` regressor."""
    lay = pset.layout(model)
    blocks = dict(_link_blocks(model, q, qd, qdd, lay.links)) if lay.links else {}
    values = _joint_values(pset, qd, qdd)
    kinds = [k for k in lay.joint_column if lay.joint_column[k][0] >= 0]
    for j in range(model.dof):
        links = [i for i in lay.links if i >= j]
        columns = [np.arange(lay.link_slice(i).start, lay.link_slice(i).stop) for i in links]
        columns.append(np.array([lay.joint_column[k][j] for k in kinds], dtype=np.intp))
        At = np.empty((10 * len(links) + len(kinds), q.shape[0]))  # A^T, so A is Fortran-ordered
        for k, i in enumerate(links):
            for r, rows in enumerate(blocks[i]):
                At[10 * k + r] = rows[j]
        for k, kind in enumerate(kinds):
            At[10 * len(links) + k] = values[kind][:, j]
        yield j, np.concatenate(columns).astype(np.intp), At.T


def _states(model: RobotModel, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike) -> tuple[bool, list[FloatArray]]:
    """``(single, [q, qd, qdd] as (N, n))``: the engine's validation (shapes, finiteness, its wording),
    and one shape for all three (the regressor does not broadcast one state over a batch)."""
    shapes = [np.shape(x) for x in (q, qd, qdd)]
    batch, values = states(model, q=q, qd=qd, qdd=qdd)
    for name, shape in zip(("qd", "qdd"), shapes[1:], strict=True):
        if shape != shapes[0]:
            raise StateError(
                f"{name}: expected shape (n,) or (N, n) with n = {model.dof} (robot {model.name!r}) and the same "
                f"shape for q, qd, qdd; got {shape}"
            )
    return not batch, as_batch(batch, values)


def regressor(
    model: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    pset: ParameterSet | None = None,
    *,
    chunk: int = CHUNK,
) -> FloatArray:
    """``Y`` with ``tau = Y theta``: ``(N, n, p)`` for states ``(N, n)``, ``(n, p)`` for one state ``(n,)``.

    ``theta`` as :func:`~.parameters.nominal_parameters` orders it (``pset``, default all parameters).
    Work proceeds ``chunk`` states at a time. For many states reduce directly with
    :func:`~.estimate.accumulate` instead of holding ``Y``.
    """
    pset = pset or ParameterSet()
    lay = pset.layout(model)
    single, (qa, qda, qdda) = _states(model, q, qd, qdd)
    out = np.zeros((qa.shape[0], model.dof, lay.size))
    for start in range(0, qa.shape[0], max(1, int(chunk))):
        sl = slice(start, start + max(1, int(chunk)))
        for i, block in _link_blocks(model, qa[sl], qda[sl], qdda[sl], lay.links) if lay.links else ():
            out[sl, : i + 1, lay.link_slice(i)] = np.stack(block, axis=-1).transpose(1, 0, 2)
        _joint_columns(pset, qda[sl], qdda[sl], lay, out[sl])
    return out[0] if single else out


def predict(
    model: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    theta: ArrayLike,
    pset: ParameterSet | None = None,
    *,
    chunk: int = CHUNK,
) -> FloatArray:
    """``Y theta`` ``(N, n)`` (or ``(n,)``) without holding ``Y``: chunk by chunk, joint by joint."""
    pset = pset or ParameterSet()
    th = np.asarray(theta, dtype=float)
    if th.shape != (pset.size(model),):
        raise StateError(f"theta: expected {pset.size(model)} parameters, got shape {th.shape}")
    single, (qa, qda, qdda) = _states(model, q, qd, qdd)
    out = np.empty(qa.shape)
    step = max(1, int(chunk))
    for start in range(0, qa.shape[0], step):
        sl = slice(start, start + step)
        for j, cols, A in joint_rows(model, qa[sl], qda[sl], qdda[sl], pset):
            out[sl, j] = A @ th[cols]
    return out[0] if single else out


def with_coulomb_velocity(model: RobotModel, velocity: float) -> RobotModel:
    """``model`` with every joint's friction ``smoothing_velocity`` set to ``velocity``."""
    joints = tuple(replace(j, friction=replace(j.friction, smoothing_velocity=velocity)) for j in model.joints)
    return model.with_changes(joints=joints)


def friction_law(model: RobotModel, pset: ParameterSet) -> tuple[bool, RobotModel]:
    """``(smooth, reference)``: ``inverse_dynamics(reference, ..., smooth=smooth)`` is the model's torque
    with the friction law ``Y theta`` is fitted with. ``coulomb="sign"``: the exact sign law. Otherwise
    the smooth law the nodes compensate with (``tanh``, each joint's ``smoothing_velocity``), the width
    set to ``pset.coulomb_velocity`` where Coulomb friction is identified (``coulomb="tanh"``, as the
    identified model deploys it) and the model's own where it is not (``coulomb="none"``)."""
    if pset.coulomb == "sign":
        return False, model
    if pset.coulomb == "tanh" and any(j.friction.smoothing_velocity != pset.coulomb_velocity for j in model.joints):
        return True, with_coulomb_velocity(model, pset.coulomb_velocity)
    return True, model


def fixed_torques(
    model: RobotModel, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, pset: ParameterSet | None = None
) -> FloatArray:
    """The model's torque not explained by ``Y theta``: ``inverse_dynamics - Y theta_nominal``.

    This is what the parameters outside ``pset`` contribute at their model values (the links not
    identified, friction switched off in the set, Stribeck/bearing/transmission friction); subtract
    it from measured torques before fitting. The friction law is :func:`friction_law`'s, the one
    :func:`inverse_dynamics` applies to the model (smooth unless ``coulomb="sign"``). It is zero (to
    rounding) for a model whose friction is viscous and Coulomb only, with all parameters identified.
    """
    pset = pset or ParameterSet()
    smooth, reference = friction_law(model, pset)
    tau = inverse_dynamics(reference, q, qd, qdd, friction=True, smooth=smooth, smooth_kind="tanh")
    return np.asarray(tau, dtype=float) - predict(model, q, qd, qdd, nominal_parameters(model, pset), pset)
