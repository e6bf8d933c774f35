"""C source for the native backend, emitted from the engine's traced programs.

The engine's algorithms are traced once per model into straight-line programs with the model's
constants folded in (:mod:`._trace`); :class:`._trace.Program` keeps the live operations. Every
operation template (``+ - * /``, ``sin``, ``cos``, ``sqrt``, float literals) maps one to one to C,
so a kernel becomes one ``static`` C function of ``const`` locals.

**Lanes.** The C works on ``rd_v``, a vector of ``RD_LANES`` doubles (GCC/Clang vector extension:
2 lanes with SSE2/NEON, 4 with AVX2): a batch runs ``RD_LANES`` states at once through the same
straight-line code — every operation is done lane by lane in IEEE arithmetic, so each lane gives
exactly what the scalar program would — and one state fills all lanes with itself. Constants are
splatted (``RD_SPLAT``); sin/cos of the joint angles are vector code but for the table reads,
``sqrt`` (``hypot``), ``tanh`` and the efficiency-curve ``interp`` are vector code, the friction's
``exp`` runs lane by lane. ::

    static void k3(const rd_v *restrict in_q, const rd_v *restrict in_qd, ..., rd_v *restrict out)

sin and cos of the joint angles use :c:func:`rd_vsincos`: the table + short polynomial method of
:mod:`._sincos` (about 1e-16 absolute, 4x faster than the C library's ``sincos``; the C library
beyond ``|q| > 1e5``, lane by lane), so the native batch reproduces the Python batch path's values;
a one-state call uses the C library's ``sin``/``cos`` like the Python single-state path
(``math.sin``).

Programs with friction (:mod:`._friction_trace`) also compare, select and call the friction's
functions; a comparison becomes a lane mask ``rd_m`` (all bits set where true), a select
``rd_select(mask, a, b)`` (both computed, no branch: the friction's sign switches are
unpredictable), ``tanh``/``exp``/``abs``/``hypot`` their vector helpers, and a table interpolation
``rd_vinterp`` over ``static const`` tables. The friction is therefore written once (over the
tracer's scalar, :mod:`robot_dynamics.friction.law`) and reaches C like any traced program.

The entry points and the CPython extension module around these functions are emitted by
:mod:`._c_extension`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._sincos import _SIZE, _STEP, _STEP_HI, _STEP_LO, _TWO_PI_LO, LIMIT, _truncate
from ._trace import Program

_ANGLE_FUNCTIONS = ("sin({0})", "cos({0})")


def _hex(value: float) -> str:
    return float(value).hex()


_HI41 = _truncate(_STEP, 12)  # as _sincos._table: i * _HI41 is exact, the rest enters to first order
_LO41 = (_STEP - _HI41) + _TWO_PI_LO / _SIZE

_PRELUDE = f"""#include <math.h>

#define RD_TABLE {_SIZE}
static double rd_sin_table[RD_TABLE], rd_cos_table[RD_TABLE];

__attribute__((constructor)) static void rd_init_tables(void)
{{
    /* sin, cos of 2 pi i / {_SIZE}, built like robot_dynamics.dynamics._sincos._table */
    for (int i = 0; i < RD_TABLE; ++i) {{
        const double a = i * {_hex(_HI41)}, d = i * {_hex(_LO41)};
        const double s = sin(a), c = cos(a);
        rd_sin_table[i] = s + d * c;
        rd_cos_table[i] = c - d * s;
    }}
}}

/* set around a one-state call: sin and cos from the C library, as the Python single-state path's
   math.sin and math.cos, so that a single call gives the Python backend's values bit for bit */
static _Thread_local int rd_single_state;

/* sin and cos of every lane: in a one-state call (every lane holds the same state) the C library's,
   computed once; in a batch the table method of _sincos.sincos on the whole vector, and, as there,
   the C library's for an angle beyond the table's range (or not finite), lane by lane */
static inline __attribute__((always_inline)) void rd_vsincos(rd_v q, rd_v *s, rd_v *c)
{{
    if (rd_single_state) {{
        const double s0 = sin(q[0]), c0 = cos(q[0]);
        *s = RD_SPLAT(s0);
        *c = RD_SPLAT(c0);
        return;
    }}
    rd_v x = q; /* the angles the table serves, 0 in the other lanes */
    int inside = 1;
    for (int l = 0; l < RD_LANES; ++l)
        if (!(fabs(q[l]) <= {_hex(LIMIT)})) {{
            x[l] = 0.0;
            inside = 0;
        }}
    /* x = k h + r, |r| <= h/2 (Cody-Waite, h split in two); k rounded by adding 1.5 * 2^52, whose unit
       in the last place is 1, so k mod RD_TABLE is in the low bits of that sum */
    const rd_v shifted = x * RD_SPLAT({_hex(1.0 / _STEP)}) + RD_SPLAT(0x1.8p52);
    const rd_v k = shifted - RD_SPLAT(0x1.8p52);
    const rd_v r = (x - k * RD_SPLAT({_hex(_STEP_HI)})) - k * RD_SPLAT({_hex(_STEP_LO)});
    const __typeof__(x < x) index = (__typeof__(x < x))shifted & (RD_TABLE - 1);
    rd_v sk, ck;
    for (int l = 0; l < RD_LANES; ++l) {{
        sk[l] = rd_sin_table[index[l]];
        ck[l] = rd_cos_table[index[l]];
    }}
    const rd_v r2 = r * r;
    const rd_v sin_r = r - r * (r2 * RD_SPLAT({_hex(1.0 / 6.0)}));
    const rd_v one_minus_cos_r = r2 * (RD_SPLAT(0.5) - r2 * RD_SPLAT({_hex(1.0 / 24.0)}));
    *s = sk + (ck * sin_r - sk * one_minus_cos_r);
    *c = ck - (ck * one_minus_cos_r + sk * sin_r);
    if (!inside)
        for (int l = 0; l < RD_LANES; ++l)
            if (!(fabs(q[l]) <= {_hex(LIMIT)})) {{
                (*s)[l] = sin(q[l]);
                (*c)[l] = cos(q[l]);
            }}
}}
"""


def _lanewise(name: str, function: str) -> str:
    return (
        f"static inline rd_v {name}(rd_v x)\n{{\n    rd_v r;\n"
        f"    for (int l = 0; l < RD_LANES; ++l) r[l] = {function}(x[l]);\n    return r;\n}}\n"
    )


_VECTOR_HELPERS = (
    "/* lane by lane: library functions, and the friction's calls */\n"
    + "".join(
        _lanewise(name, function)
        for name, function in (
            ("rd_vsqrt", "sqrt"),
            ("rd_vsin", "sin"),
            ("rd_vcos", "cos"),
            ("rd_vexp", "exp"),
            ("rd_vabs", "fabs"),
        )
    )
    + """
static inline rd_v rd_vhypot(rd_v x, rd_v y)
{
    /* one state: the C library's hypot, as math.hypot in the Python single-state path */
    if (rd_single_state) return RD_SPLAT(hypot(x[0], y[0]));
    /* the bearing loads are far from overflow: the plain formula (~1 ulp) is 6x faster than hypot */
    return rd_vsqrt(x * x + y * y);
}

/* a comparison gives a mask per lane (all bits set where true): pick a or b by bits, no branch */
typedef __typeof__(RD_SPLAT(0.0) < RD_SPLAT(0.0)) rd_m;
static inline rd_v rd_select(rd_m m, rd_v a, rd_v b)
{
    return (rd_v)((m & (rd_m)a) | (~m & (rd_m)b));
}

static inline rd_v rd_vinterp(rd_v u, const double *xs, const double *es, int count)
{
    /* linear interpolation clamped at the ends, as friction.law.interp (same segment, same
       formula, so the same value), branch-free: the segment [x0, x1] with x0 <= u < x1 is picked by
       selects over the (few) table points instead of a search that branches per lane */
    if (count == 1) return RD_SPLAT(es[0]);
    rd_v x0 = RD_SPLAT(xs[0]), x1 = RD_SPLAT(xs[1]), e0 = RD_SPLAT(es[0]), e1 = RD_SPLAT(es[1]);
    for (int j = 1; j < count - 1; ++j) {
        const rd_m beyond = RD_SPLAT(xs[j]) <= u;
        x0 = rd_select(beyond, RD_SPLAT(xs[j]), x0);
        e0 = rd_select(beyond, RD_SPLAT(es[j]), e0);
        x1 = rd_select(beyond, RD_SPLAT(xs[j + 1]), x1);
        e1 = rd_select(beyond, RD_SPLAT(es[j + 1]), e1);
    }
    const rd_v r = e0 + (e1 - e0) * (u - x0) / (x1 - x0);
    const rd_v low = rd_select(u <= RD_SPLAT(xs[0]), RD_SPLAT(es[0]), r);
    return rd_select(u >= RD_SPLAT(xs[count - 1]), RD_SPLAT(es[count - 1]), low);
}

/* exp(y) for y in [-708, 0] in every lane, branch-free: y = k ln2 + r, |r| <= ln2/2, e^r by its
   Taylor series to r^13 (truncation < 5e-18 relative), 2^k assembled from its exponent bits */
static inline rd_v rd_vexp_negative(rd_v y)
{
    y = rd_select(y < RD_SPLAT(-708.0), RD_SPLAT(-708.0), y);
    const rd_v magic = RD_SPLAT(0x1.8p52);
    const rd_v kb = y * RD_SPLAT(0x1.71547652b82fep+0) + magic; /* k rounded to nearest, held in the low bits */
    const rd_v k = kb - magic;
    const rd_v r = (y - k * RD_SPLAT(0x1.62e42fee00000p-1)) - k * RD_SPLAT(0x1.a39ef00000000p-33);
    /* Estrin's scheme (short dependency chains): pairs c_2i + c_2i+1 r, then powers r^2, r^4, r^8 */
    const rd_v r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    const rd_v p01 = RD_SPLAT(1.0) + r, p23 = RD_SPLAT(1.0 / 2.0) + r * RD_SPLAT(1.0 / 6.0);
    const rd_v p45 = RD_SPLAT(1.0 / 24.0) + r * RD_SPLAT(1.0 / 120.0);
    const rd_v p67 = RD_SPLAT(1.0 / 720.0) + r * RD_SPLAT(1.0 / 5040.0);
    const rd_v p89 = RD_SPLAT(1.0 / 40320.0) + r * RD_SPLAT(1.0 / 362880.0);
    const rd_v p1011 = RD_SPLAT(1.0 / 3628800.0) + r * RD_SPLAT(1.0 / 39916800.0);
    const rd_v p1213 = RD_SPLAT(1.0 / 479001600.0) + r * RD_SPLAT(1.0 / 6227020800.0);
    const rd_v low = (p01 + p23 * r2) + (p45 + p67 * r2) * r4;
    const rd_v high = (p89 + p1011 * r2) + p1213 * r4;
    const rd_v p = low + high * r8;
    const rd_m bits = (rd_m)kb - (rd_m)magic; /* k as an integer */
    const rd_m scale = (bits + 1023) << 52;
    return p * (rd_v)scale;
}

/* tanh(x) = sign(x) (1 - t) / (1 + t), t = exp(-2 |x|): absolute error ~2e-16, exactly +-1 for
   |x| > 19.1 (t < 2.6e-17 rounds away), -0.0 kept; vectorised where the C library's tanh runs lane
   by lane. When every lane is saturated (|x| >= 19.5: a joint faster than 19.5 smoothing velocities,
   the usual case while moving) the result is sign(x) without the exponential: the same value. */
static inline rd_v rd_vtanh(rd_v x)
{
    if (rd_single_state) return RD_SPLAT(tanh(x[0])); /* one state: as math.tanh */
    const rd_m sign = (rd_m)RD_SPLAT(-0.0);
    const rd_v a = (rd_v)((rd_m)x & ~sign);
    const rd_m large = a >= RD_SPLAT(19.5);
    long saturated = -1;
    for (int l = 0; l < RD_LANES; ++l) saturated &= large[l];
    if (saturated) return (rd_v)((rd_m)RD_SPLAT(1.0) | ((rd_m)x & sign));
    const rd_v t = rd_vexp_negative(RD_SPLAT(-2.0) * a);
    const rd_v magnitude = (RD_SPLAT(1.0) - t) / (RD_SPLAT(1.0) + t);
    return (rd_v)((rd_m)magnitude | ((rd_m)x & sign));
}
"""
)


def prelude(lanes: int) -> str:
    """The helpers every library starts with, for vectors of ``lanes`` doubles."""
    splat = ", ".join(["(x)"] * lanes)
    vector = (
        f"#define RD_LANES {lanes}\n"
        f"typedef double rd_v __attribute__((vector_size({8 * lanes})));\n"
        f"#define RD_SPLAT(x) ((rd_v){{{splat}}})\n\n"
    )
    return vector + _PRELUDE + "\n" + _VECTOR_HELPERS


_LITERAL = re.compile(r"(?<![\w.])(\d+\.\d*(?:e[+-]?\d+)?|\d+e[+-]?\d+)")
_CALL = re.compile(r"\b(sin|cos|sqrt|tanh|exp|abs|hypot)\(")
_COMPARISON = re.compile(r"^-?\{0\} (>|<|>=|<=|==|!=) \S+$")
_SELECT = re.compile(r"^\((\S+) if \{0\} else (\S+)\)$")
_INTERP = re.compile(r"^interp\((-?\{0\}), \(([^()]*)\), \(([^()]*)\)\)$")


def _vector_expression(template: str, operands: Sequence[str]) -> str:
    """An operation template over vectors: literals splatted, functions on vectors (``rd_v...``)."""
    text = _LITERAL.sub(lambda m: f"RD_SPLAT({m.group(1)})", template)
    return _CALL.sub(lambda m: f"rd_v{m.group(1)}(", text).format(*operands)


def _numbers(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def _operation(target: str, template: str, operands: Sequence[str]) -> list[str]:
    """The C of one traced operation: ``+ - * /``, the tracer's functions, a comparison (a lane mask
    ``rd_m``, all bits set where true), a select (``a if c else b``: both computed, lanes picked by
    the mask, no branch) or a clamped table interpolation (the table as ``static const`` arrays)."""
    if _COMPARISON.match(template):
        return [f"const rd_m {target} = {_vector_expression(template, operands)};"]
    select = _SELECT.match(template)
    if select:
        chosen, other = (_vector_expression(branch, operands) for branch in select.groups())
        return [f"const rd_v {target} = rd_select({operands[0]}, {chosen}, {other});"]
    interp = _INTERP.match(template)
    if interp:
        argument, xs, es = interp.group(1).format(*operands), _numbers(interp.group(2)), _numbers(interp.group(3))
        if len(xs) != len(es) or not xs:
            raise ValueError(f"interp: tables of different lengths in {template!r}")
        return [
            f"static const double {target}_x[] = {{{', '.join(_hex(x) for x in xs)}}};",
            f"static const double {target}_y[] = {{{', '.join(_hex(e) for e in es)}}};",
            f"const rd_v {target} = rd_vinterp({argument}, {target}_x, {target}_y, {len(xs)});",
        ]
    return [f"const rd_v {target} = {_vector_expression(template, operands)};"]


def kernel_function(name: str, program: Program) -> str:
    """``static void name(const rd_v *in_<group>..., rd_v *out)`` computing the program's outputs."""
    used: set[str] = set()
    for _, _, operands in program.lines:
        used.update(operands)
    for expression in program.outputs:
        used.add(expression.lstrip("-"))
    params = [f"const rd_v *restrict in_{group}" for group, _ in program.inputs]
    lines = [f"static void {name}({', '.join([*params, 'rd_v *restrict out'])})", "{"]
    for group, names in program.inputs:
        for index, variable in enumerate(names):
            if variable in used:
                lines.append(f"    const rd_v {variable} = in_{group}[{index}];")
    inputs = {variable for _, names in program.inputs for variable in names}
    angles = sorted({ops[0] for _, template, ops in program.lines if template in _ANGLE_FUNCTIONS and ops[0] in inputs})
    for angle in angles:
        lines.append(f"    rd_v s_{angle}, c_{angle};")
        lines.append(f"    rd_vsincos({angle}, &s_{angle}, &c_{angle});")
    for target, template, operands in program.lines:
        if template in _ANGLE_FUNCTIONS and operands[0] in inputs:
            lines.append(f"    const rd_v {target} = {template[0]}_{operands[0]};")
        else:
            lines += [f"    {line}" for line in _operation(target, template, operands)]
    for index, expression in enumerate(program.outputs):
        value = expression if expression.lstrip("-")[:1].isalpha() else f"RD_SPLAT({expression})"
        lines.append(f"    out[{index}] = {value};")
    lines.append("}")
    return "\n".join(lines)


# -- composite functions (calls of the traced kernels) ----------------------------------------------
def _params(names: Sequence[str]) -> str:
    return ", ".join(f"const rd_v *restrict {a}" for a in names)


def motor_function(name: str, kernel: str, arguments: Sequence[str], reflected: Sequence[float]) -> str:
    """``kernel`` + ``G^2 Jm qdd`` on the first ``n`` outputs (in the order the tracer adds it:
    ``tau_i + qdd_i * Jm_i``); ``arguments`` start with ``in_q, in_qd, in_qdd``."""
    lines = [f"static void {name}({_params(arguments)}, rd_v *restrict out)", "{"]
    lines.append(f"    {kernel}({', '.join(arguments)}, out);")
    for i, jm in enumerate(reflected):
        if jm != 0.0:
            lines.append(f"    out[{i}] = out[{i}] + in_qdd[{i}] * RD_SPLAT({_hex(jm)});")
    lines.append("}")
    return "\n".join(lines)


def inertia_motor_function(name: str, kernel: str, reflected: Sequence[float]) -> str:
    """``D(q)`` of ``kernel`` with ``G^2 Jm`` added to the diagonal (as :mod:`.crba` adds it)."""
    n = len(reflected)
    lines = [f"static void {name}(const rd_v *restrict in_q, rd_v *restrict out)", "{", f"    {kernel}(in_q, out);"]
    for i, jm in enumerate(reflected):
        if jm != 0.0:
            lines.append(f"    out[{i * n + i}] = out[{i * n + i}] + RD_SPLAT({_hex(jm)});")
    lines.append("}")
    return "\n".join(lines)


def _cholesky_lines(n: int) -> list[str]:
    """:func:`.cholesky.cholesky_factor` of ``D`` into ``L`` and ``inv`` (``1 / L_jj``), in C (same order
    of operations; a pivot that is not positive gives NaN)."""
    return [
        f"    for (int j = 0; j < {n}; ++j) {{",
        f"        rd_v pivot = D[j * {n} + j];",
        f"        for (int k = 0; k < j; ++k) pivot = pivot - L[j * {n} + k] * L[j * {n} + k];",
        f"        L[j * {n} + j] = rd_vsqrt(pivot);",
        f"        inv[j] = RD_SPLAT(1.0) / L[j * {n} + j];",
        f"        for (int i = j + 1; i < {n}; ++i) {{",
        f"            rd_v s = D[i * {n} + j];",
        f"            for (int k = 0; k < j; ++k) s = s - L[i * {n} + k] * L[j * {n} + k];",
        f"            L[i * {n} + j] = s * inv[j];",
        "        }",
        "    }",
    ]


def forward_function(name: str, n: int, bias: str, inertia: str, load: bool) -> str:
    """``qdd = D^-1 (tau - b)``: ``b`` from the Newton–Euler kernel ``bias`` at ``qdd = 0``, ``D`` from
    ``inertia``, then :func:`.forward.cholesky_solve` written out in C (same order of operations).
    A pivot that is not positive gives NaN (the caller reports it). (The traced forward kernel,
    which shares the joint transforms between both parts, is faster; this serves the other variants.)"""
    arguments = ["in_q", "in_qd", "in_tau", *(["in_w"] if load else [])]
    bias_args = ["in_q", "in_qd", "zero", *(["in_w"] if load else [])]
    return "\n".join(
        [
            f"static void {name}({_params(arguments)}, rd_v *restrict out)",
            "{",
            f"    rd_v zero[{n}], b[{n}], D[{n * n}], L[{n * n}], inv[{n}], y[{n}];",
            f"    for (int i = 0; i < {n}; ++i) zero[i] = RD_SPLAT(0.0);",
            f"    {bias}({', '.join(bias_args)}, b);",
            f"    {inertia}(in_q, D);",
            *_cholesky_lines(n),
            f"    for (int i = 0; i < {n}; ++i) {{",
            "        rd_v s = in_tau[i] - b[i];",
            f"        for (int k = 0; k < i; ++k) s = s - L[i * {n} + k] * y[k];",
            "        y[i] = s * inv[i];",
            "    }",
            f"    for (int i = {n - 1}; i >= 0; --i) {{",
            "        rd_v s = y[i];",
            f"        for (int k = i + 1; k < {n}; ++k) s = s - L[k * {n} + i] * out[k];",
            "        out[i] = s * inv[i];",
            "    }",
            "}",
        ]
    )


def task_function(name: str, n: int, frame: str, inertia: str) -> str:
    """The ``"task"`` kernel: the ``frame`` kernel's outputs (the pose, the ``6 x n`` Jacobian ``J`` from
    output 16 on, ``Jdot qd``), then ``J D^-1 J^T`` after them (36), ``D`` from ``inertia``:
    :func:`.task_inertia.inverse_task_inertia` written out in C (same order of operations)."""
    jacobian, product = 16, 16 + 6 * n + 6
    return "\n".join(
        [
            f"static void {name}({_params(['in_q', 'in_qd', 'in_s'])}, rd_v *restrict out)",
            "{",
            f"    rd_v D[{n * n}], L[{n * n}], inv[{n}], Y[{6 * n}];",
            f"    const rd_v *J = out + {jacobian};",
            f"    rd_v *A = out + {product};",
            f"    {frame}(in_q, in_qd, in_s, out);",
            f"    {inertia}(in_q, D);",
            *_cholesky_lines(n),
            "    for (int r = 0; r < 6; ++r)",  # Y_r = L^-1 J_r^T
            f"        for (int i = 0; i < {n}; ++i) {{",
            f"            rd_v s = J[r * {n} + i];",
            f"            for (int k = 0; k < i; ++k) s = s - L[i * {n} + k] * Y[r * {n} + k];",
            f"            Y[r * {n} + i] = s * inv[i];",
            "        }",
            "    for (int r = 0; r < 6; ++r)",  # (Y^T Y)_rc
            "        for (int c = 0; c <= r; ++c) {",
            f"            rd_v s = Y[r * {n}] * Y[c * {n}];",
            f"            for (int i = 1; i < {n}; ++i) s = s + Y[r * {n} + i] * Y[c * {n} + i];",
            "            A[r * 6 + c] = s;",
            "            A[c * 6 + r] = s;",
            "        }",
            "}",
        ]
    )


def coriolis_tensor_function(name: str, n: int, velocity_terms: str) -> str:
    """``h_ikm`` by probing the kernel ``velocity_terms(q, qd)`` = h with unit velocities (as
    :meth:`._kernels.ModelKernels.coriolis_tensor`): ``h_ikk = h_i(e_k)``,
    ``h_ikm = h_imk = (h_i(e_k + e_m) - h_i(e_k) - h_i(e_m)) / 2``."""
    return "\n".join(
        [
            f"static void {name}(const rd_v *restrict in_q, rd_v *restrict out)",
            "{",
            f"    rd_v e[{n}], unit[{n * n}], pair[{n}];",
            f"    for (int k = 0; k < {n}; ++k) e[k] = RD_SPLAT(0.0);",
            f"    for (int k = 0; k < {n}; ++k) {{",
            "        e[k] = RD_SPLAT(1.0);",
            f"        {velocity_terms}(in_q, e, unit + k * {n});",
            "        e[k] = RD_SPLAT(0.0);",
            "    }",
            f"    for (int k = 0; k < {n}; ++k) {{",
            f"        for (int i = 0; i < {n}; ++i) out[(i * {n} + k) * {n} + k] = unit[k * {n} + i];",
            f"        for (int m = k + 1; m < {n}; ++m) {{",
            "            e[k] = e[m] = RD_SPLAT(1.0);",
            f"            {velocity_terms}(in_q, e, pair);",
            "            e[k] = e[m] = RD_SPLAT(0.0);",
            f"            for (int i = 0; i < {n}; ++i) {{",
            f"                const rd_v value = (pair[i] - unit[k * {n} + i] - unit[m * {n} + i]) * RD_SPLAT(0.5);",
            f"                out[(i * {n} + k) * {n} + m] = out[(i * {n} + m) * {n} + k] = value;",
            "            }",
            "        }",
            "    }",
            "}",
        ]
    )


def friction_inverse_function(name: str, n: int, rigid: str, friction: str, load: bool, reactions: bool) -> str:
    """Inverse dynamics with friction in one call: ``rigid`` (Newton–Euler with the motor inertia,
    and the reactions when ``reactions``) then the traced friction kernel
    ``friction(qd, tau[, force, moment]) = tau + b`` (:func:`._friction_trace.friction_kernel`)."""
    arguments = ["in_q", "in_qd", "in_qdd", *(["in_w"] if load else [])]
    friction_args = ["in_qd", "r", *([f"r + {n}", f"r + {4 * n}"] if reactions else []), "out"]
    return "\n".join(
        [
            f"static void {name}({_params(arguments)}, rd_v *restrict out)",
            "{",
            f"    rd_v r[{7 * n if reactions else n}];",
            f"    {rigid}({', '.join(arguments)}, r);",
            f"    {friction}({', '.join(friction_args)});",
            "}",
        ]
    )
