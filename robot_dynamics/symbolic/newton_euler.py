"""Customised modified Newton–Euler inverse dynamics as a straight-line program (thesis ch. 2).

The thesis's modified NE (Dhanaraj (1990) Table 2.4; misprints corrected, see docs/references.md),
generated symbolically for one robot the way its §2.4 prescribes: every vector element
becomes a named intermediate (no re-substitution, so no expression swell), multiplications by
0 and 1 and additions of 0 disappear (the parameters are numbers, with exact 0/±1 in the
transforms), constants are folded, ``sin q_i``/``cos q_i`` are computed once.

Frames are the model's joint frames (``T_i = X_i Rot(axis_i, q_i)``), so URDF arms with general
origins and axes work too; the savings of the thesis appear where the origin rotation has 0/±1
entries (DH arms, most URDF arms).

Forward recursion, ``i = 1..n`` (all vectors of link i in ``F_i``; ``R_i = R_o,i Rot(u_i, q_i)``;
``P_i`` = origin of ``F_i`` in ``F_{i-1}``; initial ``w_0 = dw_0 = 0``, ``a_0 = -g``, ``lambda_0 = 0``):

* ``w_i = R_i^T w_{i-1} + u qd_i`` (Table 2.4 step 1)
* ``dw_i = R_i^T dw_{i-1} + u qdd_i + qd_i (w_i x u)`` — the 2-multiplication Coriolis term (step 2)
* ``k = (w_y w_z, w_z w_x, w_x w_y)``, ``lambda_i`` with ``lambda r = dw x r + w x (w x r)`` (step 2A)
* ``a_i = R_i^T (a_{i-1} + lambda_{i-1} P_i)`` (+ ``u qdd + 2 qd (w_i x u)`` prismatic) (step 3)

then, per method:

* ``"thesis"`` — Table 2.4 as printed: ``a_ci = a_i + lambda_i s_i``, ``F = m a_ci``,
  ``N = I dw + w x I w`` (the D_x k_x form, extended to products of inertia),
  ``n_i = R n_{i+1} + N + s x F + P_{i+1} x (R f_{i+1})``;
* ``"origin"`` — moments about the joint origin with first moments ``MS = m s`` and the inertia
  ``J`` about the origin (Khalil & Kleinfinger): ``F = m a_i + lambda_i MS``,
  ``N = J dw + w x J w + MS x a_i``, ``n_i = R n_{i+1} + N + P_{i+1} x (R f_{i+1})``;
* ``"regrouped"`` (default) — ``"origin"`` with the base inertial parameters: the part of link j's
  inertial parameters that is invariant under the motion of joint j and produces no force or
  torque along it (revolute: ``lambda (E - u u^T)``, the first moment along ``u``, the mass;
  prismatic: the rotational inertia) is moved onto link j-1 (or dropped at the fixed base).
  The torques are unchanged (exact algebra); many parameters become zero and their operations
  disappear.

``tau_i = u . n_i`` (revolute) or ``u . f_i`` (prismatic), plus ``Im_i qdd_i`` (reflected motor inertia).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

import sympy as sp

from robot_dynamics.symbolic.model import SymbolicLink, SymbolicRobot
from robot_dynamics.symbolic.program import Program, eliminate_dead_code, optimize

Method = Literal["regrouped", "origin", "thesis"]
METHODS: tuple[Method, ...] = ("regrouped", "origin", "thesis")
Vec = list[sp.Expr]
XYZ = "xyz"


class _Emitter:
    """Names non-trivial expressions (value numbering: an expression, or its negative, seen before
    reuses the earlier name)."""

    def __init__(self, reserved: set[str]) -> None:
        self.assignments: list[tuple[sp.Symbol, sp.Expr]] = []
        self.known: dict[sp.Expr, sp.Symbol] = {}
        self.taken = set(reserved)

    @staticmethod
    def trivial(e: sp.Expr) -> bool:
        if e.is_Atom:
            return True
        return isinstance(e, sp.Mul) and len(e.args) == 2 and e.args[0] == -1 and e.args[1].is_Symbol

    def __call__(self, name: str, expr: sp.Expr) -> sp.Expr:
        e = sp.sympify(expr)
        if self.trivial(e):
            return e
        if e in self.known:
            return self.known[e]
        neg = -e
        if neg in self.known:
            return -self.known[neg]
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        sym = sp.Symbol(name, real=True)
        self.assignments.append((sym, e))
        self.known[e] = sym
        return sym

    def vec(self, name: str, v: Sequence[sp.Expr]) -> Vec:
        return [self(f"{name}{c}", e) for c, e in zip(XYZ, v, strict=False)]


def _matvec(m: sp.Matrix, v: Sequence[sp.Expr]) -> Vec:
    return [sp.expand(sum((m[r, c] * v[c] for c in range(3)), sp.Integer(0))) for r in range(3)]


def _cross(a: Sequence[sp.Expr], b: Sequence[sp.Expr]) -> Vec:
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def _add(*vs: Sequence[sp.Expr]) -> Vec:
    return [sum((v[k] for v in vs), sp.Integer(0)) for k in range(3)]


def _scale(c: sp.Expr, v: Sequence[sp.Expr]) -> Vec:
    return [c * x for x in v]


def joint_rotation(axis: sp.Matrix, c: sp.Expr, s: sp.Expr) -> sp.Matrix:
    """``Rot(axis, q)`` with ``c = cos q``, ``s = sin q`` (Rodrigues; exact for axis-aligned axes)."""
    u = axis
    k = sp.Matrix([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    return (sp.eye(3) + s * k + (1 - c) * (k * k)).applyfunc(sp.expand)


# -------------------------------------------------------------------------------------------
# inertial parameters
# -------------------------------------------------------------------------------------------
InertialParams = tuple[sp.Expr, sp.Matrix, sp.Matrix]  # (mass, first moment or com, inertia)


def origin_parameters(link: SymbolicLink) -> InertialParams:
    """``(M, MS, J)``: mass, first moment ``m s`` and inertia about the frame origin (in ``F_i``)."""
    m, s = link.mass, link.com
    j = link.inertia + m * ((s.T * s)[0, 0] * sp.eye(3) - s * s.T)
    return m, (m * s).applyfunc(sp.expand), j.applyfunc(sp.expand)


def _axis_index(u: sp.Matrix) -> int | None:
    nz = [k for k in range(3) if u[k] != 0]
    return nz[0] if len(nz) == 1 else None


REGROUP_CHOICES = 4
"""Ways to choose ``lambda`` in the revolute regrouping ``J -= lambda (E - u u^T)`` (axis ``u = ±e_k``,
``e1, e2`` the other two axes): 0 zeroes ``J[e1,e1]``, 1 zeroes ``J[e2,e2]``, 2 and 3 zero the
gyroscopic coefficients ``J[k,k] - J[e2,e2]`` and ``J[e1,e1] - J[k,k]`` (thesis's ``D_x``, ``D_y``)."""


def regrouped_parameters(robot: SymbolicRobot, choices: Sequence[int] | None = None) -> list[InertialParams]:
    """Base inertial parameters ``(M, MS, J)`` about each joint origin (see the module docstring).

    ``choices[j]`` (default 0) picks ``lambda`` for revolute joint ``j`` (:data:`REGROUP_CHOICES`).
    """
    params = [list(origin_parameters(lk)) for lk in robot.links]
    e3 = sp.eye(3)
    for j in reversed(range(robot.n)):
        lk = robot.links[j]
        m, ms, jj = params[j]
        u = lk.axis
        if lk.is_prismatic:
            jb, msb, mb = jj, sp.zeros(3, 1), sp.Integer(0)
        else:
            k = _axis_index(u)
            lam = sp.Integer(0)
            if k is not None:
                e1, e2 = (k + 1) % 3, (k + 2) % 3
                choice = choices[j] if choices is not None else 0
                lam = (jj[e1, e1], jj[e2, e2], jj[e2, e2] - jj[k, k], jj[e1, e1] - jj[k, k])[choice]
            jb = lam * (e3 - u * u.T)
            msb = (u.T * ms)[0, 0] * u
            mb = m
        params[j] = [sp.expand(m - mb), (ms - msb).applyfunc(sp.expand), (jj - jb).applyfunc(sp.expand)]
        if j == 0:
            continue  # the fixed base absorbs it
        r, p = lk.rotation, lk.translation
        c = r * msb
        jp = r * jb * r.T + mb * ((p.T * p)[0, 0] * e3 - p * p.T) + 2 * (p.T * c)[0, 0] * e3 - p * c.T - c * p.T
        pm, pms, pj = params[j - 1]
        params[j - 1] = [
            sp.expand(pm + mb),
            (pms + c + mb * p).applyfunc(sp.expand),
            (pj + jp).applyfunc(sp.expand),
        ]
    return [(m, ms, jj) for m, ms, jj in params]


def shift_origins(robot: SymbolicRobot, shifts: Sequence[sp.Expr | float]) -> SymbolicRobot:
    """The same robot with the origin of each joint frame moved along its own joint axis by
    ``shifts[i]`` (the axis is fixed in both neighbouring links, so this is only a choice of frame).

    Torques are unchanged (a moment about a point on the axis has the same component along the
    axis); the sparsity of the origin vectors ``P_i`` changes, and with it the operation count (the
    thesis's Table 4.4-4.6 savings come from zeros in ``P_i`` and ``s_i``).
    """
    links = []
    previous = sp.zeros(3, 1)
    for lk, d in zip(robot.links, shifts, strict=False):
        delta = sp.sympify(d)
        if delta.is_number and abs(float(delta)) < 1e-15:
            delta = sp.Integer(0)
        p = (lk.translation + delta * lk.rotation * lk.axis - previous).applyfunc(sp.expand)
        links.append(replace(lk, translation=p, com=(lk.com - delta * lk.axis).applyfunc(sp.expand)))
        previous = delta * lk.axis
    return replace(robot, links=tuple(links))


def symmetric_about_axis(params: InertialParams, axis: sp.Matrix) -> bool:
    """Whether a body's inertial parameters are invariant under rotation about ``axis`` (mass
    centre on the axis, inertia ``a (E - u u^T) + b u u^T``): then it can be evaluated in the
    frame of its joint at ``q = 0``, saving the rotation by ``q``."""
    _, ms, j = params
    u = axis
    along = (u.T * ms)[0, 0]
    if any(sp.expand(x) != 0 for x in ms - along * u):
        return False
    b = (u.T * j * u)[0, 0]
    a = (j.trace() - b) / 2
    rest = j - b * (u * u.T) - a * (sp.eye(3) - u * u.T)
    return all(sp.expand(x) == 0 for x in rest)


# -------------------------------------------------------------------------------------------
# the generator
# -------------------------------------------------------------------------------------------
def _euler(emit: _Emitter, i: int, j: sp.Matrix, dw: Vec, k: Vec, sq: Vec, lam: list[Vec]) -> Vec:
    """``J dw + w x (J w)`` from the named k, squares and lambda entries (thesis eq. 2.41-2.42)."""
    jxx, jyy, jzz = j[0, 0], j[1, 1], j[2, 2]
    jxy, jxz, jyz = j[0, 1], j[0, 2], j[1, 2]

    def diff(name: str, a: sp.Expr, b: sp.Expr, coeff: sp.Expr) -> sp.Expr:
        return emit(name, a - b) if coeff != 0 else sp.Integer(0)

    # (dw_y - k_y) = -lam31, (dw_z + k_z) = lam21, (dw_x + k_x) = lam32, (dw_z - k_z) = -lam12,
    # (dw_x - k_x) = -lam23, (dw_y + k_y) = lam13; squares: sq_y - sq_z = lam22 - lam33 ...
    nx = jxx * dw[0] - jxy * lam[2][0] + jxz * lam[1][0] + jyz * diff(f"dq{i}x", sq[1], sq[2], jyz) + (jzz - jyy) * k[0]
    ny = jyy * dw[1] + jxy * lam[2][1] - jyz * lam[0][1] + jxz * diff(f"dq{i}y", sq[2], sq[0], jxz) + (jxx - jzz) * k[1]
    nz = jzz * dw[2] - jxz * lam[1][2] + jyz * lam[0][2] + jxy * diff(f"dq{i}z", sq[0], sq[1], jxy) + (jyy - jxx) * k[2]
    return [nx, ny, nz]


class _Lazy:
    """lambda-matrix entries named on first use (so unused entries never appear)."""

    def __init__(self, emit: _Emitter, i: int, w: Vec, dw: Vec) -> None:
        self.emit, self.i, self.w, self.dw = emit, i, w, dw
        self.k = emit.vec(f"k{i}", [w[1] * w[2], w[2] * w[0], w[0] * w[1]])
        self.sq = emit.vec(f"ww{i}", [w[0] ** 2, w[1] ** 2, w[2] ** 2])
        k, sq, a = self.k, self.sq, dw
        self.expr = [
            [-(sq[1] + sq[2]), k[2] - a[2], k[1] + a[1]],
            [k[2] + a[2], -(sq[0] + sq[2]), k[0] - a[0]],
            [k[1] - a[1], k[0] + a[0], -(sq[0] + sq[1])],
        ]

    def matrix(self) -> list[Vec]:
        return [[self.emit(f"L{self.i}_{r + 1}{c + 1}", self.expr[r][c]) for c in range(3)] for r in range(3)]


def _times(lam: list[Vec] | None, r: Sequence[sp.Expr]) -> Vec:
    if lam is None:
        return [sp.Integer(0)] * 3
    return [sum((lam[row][c] * r[c] for c in range(3) if r[c] != 0), sp.Integer(0)) for row in range(3)]


def generate(
    robot: SymbolicRobot,
    *,
    method: Method = "regrouped",
    choices: Sequence[int] | None = None,
    name: str = "inverse_dynamics",
) -> Program:
    """The unoptimised program of the recursion (one frame choice, one regrouping choice)."""
    n = robot.n
    q, qd, qdd = robot.q, robot.qd, robot.qdd
    reserved = {s.name for s in robot.parameters} | {s.name for s in q + qd + qdd}
    trig: list[tuple[sp.Symbol, sp.Expr]] = []
    cs: list[tuple[sp.Expr, sp.Expr]] = []
    for i, lk in enumerate(robot.links, start=1):
        if lk.is_prismatic:
            cs.append((sp.Integer(1), sp.Integer(0)))
            continue
        s, c = sp.Symbol(f"s{i}"), sp.Symbol(f"c{i}")
        trig += [(s, sp.sin(q[i - 1])), (c, sp.cos(q[i - 1]))]
        reserved |= {s.name, c.name}
        cs.append((c, s))
    emit = _Emitter(reserved)

    if method == "thesis":
        params = [(lk.mass, lk.com, lk.inertia) for lk in robot.links]
    elif method == "origin":
        params = [origin_parameters(lk) for lk in robot.links]
    else:
        params = regrouped_parameters(robot, choices)

    # a last link symmetric about its axis is evaluated in the frame of joint n at q_n = 0: its
    # wrench there does not depend on q_n, so the rotations by q_n (forward and back) disappear.
    last = robot.links[-1] if n else None
    unrotated_last = last is not None and not last.is_prismatic and symmetric_about_axis(params[-1], last.axis)

    def origin_of(idx: int) -> Vec:
        """P: origin of F_idx in F_idx-1 (idx 1-based)."""
        lk = robot.links[idx - 1]
        p = lk.translation
        if lk.is_prismatic:
            p = p + lk.rotation * lk.axis * q[idx - 1]
        return [sp.expand(x) for x in p]

    # ---------------- forward recursion (Table 2.4 steps 1-4) ----------------
    zero: Vec = [sp.Integer(0)] * 3
    w, dw = zero, zero
    a: Vec = [-x for x in robot.gravity]
    lam_prev: list[Vec] | None = None
    ws, dws, accs, lams, lazies = [], [], [], [], []
    rq_t: list[sp.Matrix] = []
    for i, lk in enumerate(robot.links, start=1):
        u = list(lk.axis)
        ro_t = lk.rotation.T
        c, s = cs[i - 1]
        rotate = not lk.is_prismatic and not (i == n and unrotated_last)
        rt = joint_rotation(lk.axis, c, s).T if rotate else sp.eye(3)
        rq_t.append(rt)
        wp = emit.vec(f"wr{i}", _matvec(ro_t, w))
        dwp = emit.vec(f"dwr{i}", _matvec(ro_t, dw))
        v = emit.vec(f"v{i}", _add(a, _times(lam_prev, origin_of(i))))
        vp = emit.vec(f"vr{i}", _matvec(ro_t, v))
        if lk.is_prismatic:
            w_i, dw_i = wp, dwp
            cor = _cross(w_i, u)
            a_i = emit.vec(f"a{i}", _add(vp, _scale(qdd[i - 1], u), _scale(2 * qd[i - 1], cor)))
        else:
            w_i = emit.vec(f"w{i}", _add(_matvec(rt, wp), _scale(qd[i - 1], u)))
            cor = [sp.expand(x) for x in _cross(w_i, u)]
            dw_i = emit.vec(f"dw{i}", _add(_matvec(rt, dwp), _scale(qdd[i - 1], u), _scale(qd[i - 1], cor)))
            a_i = emit.vec(f"a{i}", _matvec(rt, vp))
        lazy = _Lazy(emit, i, w_i, dw_i)
        lam_i = lazy.matrix()
        ws.append(w_i)
        dws.append(dw_i)
        accs.append(a_i)
        lams.append(lam_i)
        lazies.append(lazy)
        w, dw, a, lam_prev = w_i, dw_i, a_i, lam_i

    # ---------------- link forces and moments (steps 4-6) ----------------
    forces: list[Vec] = []
    moments: list[Vec] = []
    extra: list[Vec] = []  # s x F (thesis method)
    for i in range(1, n + 1):
        m, ms, jj = params[i - 1]
        a_i, lam_i, lazy = accs[i - 1], lams[i - 1], lazies[i - 1]
        euler = _euler(emit, i, jj, dws[i - 1], lazy.k, lazy.sq, lam_i)
        if method == "thesis":
            ac = emit.vec(f"ac{i}", _add(a_i, _times(lam_i, list(ms))))
            f_ = emit.vec(f"F{i}", _scale(m, ac))
            n_ = emit.vec(f"N{i}", euler)
            extra.append([sp.expand(x) for x in _cross(list(ms), f_)])
        else:
            f_ = emit.vec(f"F{i}", _add(_scale(m, a_i), _times(lam_i, list(ms))))
            n_ = emit.vec(f"N{i}", _add(euler, _cross(list(ms), a_i)))
            extra.append(zero)
        forces.append(f_)
        moments.append(n_)

    # ---------------- backward recursion (steps 7-9) ----------------
    f_next: Vec = zero
    n_next: Vec = zero
    taus: list[sp.Expr] = [sp.Integer(0)] * n
    for i in range(n, 0, -1):
        if i < n:
            lk = robot.links[i]  # joint i+1
            r_o = lk.rotation
            rq = rq_t[i].T
            fr = emit.vec(f"fq{i}", _matvec(rq, f_next))
            fr = emit.vec(f"fr{i}", _matvec(r_o, fr))
            nr = emit.vec(f"nq{i}", _matvec(rq, n_next))
            nr = emit.vec(f"nr{i}", _matvec(r_o, nr))
            p_next = origin_of(i + 1)
            pxf = _cross(p_next, fr)
        else:
            fr, nr, pxf = zero, zero, zero
        f_i = emit.vec(f"f{i}", _add(forces[i - 1], fr))
        n_i = emit.vec(f"n{i}", _add(moments[i - 1], nr, pxf, extra[i - 1]))
        lk = robot.links[i - 1]
        u = list(lk.axis)
        along = f_i if lk.is_prismatic else n_i
        taus[i - 1] = sp.expand(sum((u[k] * along[k] for k in range(3)), sp.Integer(0))) + lk.motor_inertia * qdd[i - 1]
        f_next, n_next = f_i, n_i

    program = Program(
        name=name,
        q=q,
        qd=qd,
        qdd=qdd,
        parameters=robot.parameters,
        trig=tuple(trig),
        assignments=tuple(emit.assignments),
        outputs=tuple(taus),
        output_names=tuple(f"tau{i}" for i in range(1, n + 1)),
        notes={"method": method, "robot": robot.name},
    )
    return program


def _key(program: Program) -> tuple[int, int]:
    o = program.ops()
    return (o.mul + o.add, o.mul)


def _quick(program: Program) -> Program:
    return eliminate_dead_code(program)


def _shift_candidates(robot: SymbolicRobot, i: int, shifts: list[sp.Expr]) -> list[sp.Expr]:
    """Shifts of joint ``i``'s origin that zero a component of ``P_i`` or ``P_{i+1}``."""
    out: list[sp.Expr] = [sp.Integer(0)]
    lk = robot.links[i]
    prev = robot.links[i - 1].axis * shifts[i - 1] if i > 0 else sp.zeros(3, 1)
    ru = lk.rotation * lk.axis
    base = lk.translation - prev
    for k in range(3):
        if ru[k] != 0:
            out.append(sp.expand(-base[k] / ru[k]))
    if i + 1 < robot.n:
        nxt = robot.links[i + 1]
        ahead = nxt.translation + shifts[i + 1] * nxt.rotation * nxt.axis
        for k in range(3):
            if lk.axis[k] != 0:
                out.append(sp.expand(ahead[k] / lk.axis[k]))
    unique: list[sp.Expr] = []
    for c in out:
        if c.is_number and all(abs(float(c - x)) > 1e-12 for x in unique):
            unique.append(c)
    return unique


def inverse_dynamics_program(
    robot: SymbolicRobot,
    *,
    method: Method = "regrouped",
    optimized: bool = True,
    search: bool = True,
    name: str = "inverse_dynamics",
) -> Program:
    """The customised inverse dynamics ``tau(q, qd, qdd)`` of ``robot`` as a :class:`Program`.

    ``search`` (numeric robots): choose the origin shifts along the joint axes
    (:func:`shift_origins`) and the regrouping choices (:data:`REGROUP_CHOICES`) that give the
    fewest operations, by coordinate descent (two sweeps over the joints).
    """
    if method not in METHODS:
        raise ValueError(f"unknown Newton-Euler method {method!r}; choose from {list(METHODS)}")
    shifts: list[sp.Expr] = [sp.Integer(0)] * robot.n
    choices = [0] * robot.n
    if search and optimized and not robot.values and robot.n:
        best = _key(_quick(generate(robot, method=method, choices=choices, name=name)))
        for _sweep in range(2):
            improved = False
            for i in range(robot.n):
                for cand in _shift_candidates(robot, i, shifts):
                    trial = shifts.copy()
                    trial[i] = cand
                    key = _key(_quick(generate(shift_origins(robot, trial), method=method, choices=choices, name=name)))
                    if key < best:
                        best, shifts, improved = key, trial, True
                if method == "regrouped" and not robot.links[i].is_prismatic:
                    for choice in range(REGROUP_CHOICES):
                        trial_c = choices.copy()
                        trial_c[i] = choice
                        key = _key(
                            _quick(generate(shift_origins(robot, shifts), method=method, choices=trial_c, name=name))
                        )
                        if key < best:
                            best, choices, improved = key, trial_c, True
            if not improved:
                break
    shifted = shift_origins(robot, shifts) if any(x != 0 for x in shifts) else robot
    program = generate(shifted, method=method, choices=choices, name=name)
    program.notes["origin_shifts"] = ", ".join(f"{float(x):.6g}" for x in shifts)
    program.notes["regroup_choices"] = ", ".join(str(c) for c in choices)
    return optimize(program) if optimized else program
