"""Friction traced into the inverse-dynamics program (dynamics._friction_trace) and the native friction
helpers: the same numbers as the friction program run on Python floats, bit for bit on one state."""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import numpy as np
import pytest
from test_friction_fast import everything

import robot_dynamics as rd
from robot_dynamics import _native
from robot_dynamics.dynamics import _c_codegen, _c_extension, _kernels, native
from robot_dynamics.dynamics._friction_trace import FUNCTIONS, friction_kernel, trace_friction
from robot_dynamics.dynamics._trace import Tape
from robot_dynamics.friction import scalar_friction
from robot_dynamics.friction.law import interp as _interp
from robot_dynamics.friction.parameters import friction_parameters
from robot_dynamics.model import RobotModel

VARIANTS = (("exact", False, "tanh"), ("tanh", True, "tanh"), ("linear", True, "linear"))


def _model(name: str) -> RobotModel:
    return everything() if name == "everything" else rd.load_robot(name)


def _states(n: int, count: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q, qd, qdd = (rng.uniform(-2.0, 2.0, (count, n)) for _ in range(3))
    qd[rng.uniform(size=qd.shape) < 0.15] = 0.0  # joints at rest
    qd[: count // 4] *= 1e-3  # inside the smoothing windows
    return q, qd, qdd, rng.normal(0.0, 10.0, (count, 6))


@pytest.mark.parametrize("name", ["puma560", "puma560_modified", "everything"])
def test_traced_program_equals_the_friction_program_bit_for_bit(name: str) -> None:
    """One state: Newton–Euler with the friction traced onto it gives exactly the floats of the
    compiled friction program fed from the Newton–Euler program (every variant, motor inertia on and
    off, with and without a tool load)."""
    model = _model(name)
    K = _kernels.kernels(model)
    n = model.dof
    reactions = K.needs_reactions(model)
    q, qd, qdd, w = _states(n, 150, 11)
    for variant, smooth, kind in VARIANTS:
        program = scalar_friction(model, smooth=smooth, smooth_kind=kind, include_tau=True)
        for motor in (False, True):
            for load in (False, True):
                fused = K.inverse_friction(motor, load, variant)
                assert fused is not None
                rigid = K.rnea(motor=motor, load=load, reactions=reactions)
                for k in range(len(q)):
                    args = [q[k].tolist(), qd[k].tolist(), qdd[k].tolist(), *([w[k].tolist()] if load else [])]
                    r = list(rigid.scalar(*args))
                    force, moment = (r[n : 4 * n], r[4 * n :]) if reactions else (None, None)
                    expected = program(args[1], r[:n], force, moment)
                    assert list(fused.scalar(*args)) == expected, (variant, motor, load, k)


@pytest.mark.parametrize("name", ["puma560_modified", "everything"])
def test_batches_in_chunks_equal_the_breakdown(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch runs the traced program chunk by chunk on NumPy rows (numpy.where / c * a selects,
    sqrt-form hypot, numpy.interp); it equals apply_friction(...).total to 1e-12 across chunk edges."""
    model = _model(name)
    monkeypatch.setattr(_kernels, "CHUNK", 37)
    q, qd, qdd, w = _states(model.dof, 100, 12)
    for _, smooth, kind in VARIANTS:
        for load in (None, w):
            reference = rd.inverse_dynamics(
                model, q, qd, qdd, wrench=load, smooth=smooth, smooth_kind=kind, breakdown=True, backend="python"
            )
            assert reference.friction_terms is not None
            fast = rd.inverse_dynamics(
                model, q, qd, qdd, wrench=load, smooth=smooth, smooth_kind=kind, backend="python"
            )
            scale = 1.0 + np.abs(reference.total)
            assert np.max(np.abs(fast - reference.total) / scale) < 1e-12, (kind, smooth, load is None)


def test_tracer_compares_selects_and_calls(tmp_path: Path) -> None:
    """Comparisons (negated operands mirrored), selects (folded when decided by constants) and the
    friction's functions give the Python values, on floats and on arrays."""
    tape = Tape(FUNCTIONS)
    x, y = tape.input("v", 2)
    assert tape.compare(1.0, "<", 2.0) is True and tape.select(False, x, y) is y
    assert tape.select(tape.compare(x, ">", 0.0), 0.5, 0.5) == 0.5  # equal branches: no select
    table = ((0.0, 0.5, 2.0), (0.2, 0.6, 0.9))
    outputs = [
        tape.select(tape.compare(-x, ">", 0.25), 1.5, 0.0),  # (-x > 0.25) = (x < -0.25)
        tape.select(tape.compare(0.0, ">=", -y), x * 2.0, -y),
        tape.select(tape.compare(-x, "<", -y), 3.0, -4.0),  # two constants
        tape.select(tape.compare(x, "!=", y), x, 0.0),
        tape.call("tanh", -x * 3.0) + tape.call("exp", -tape.call("abs", -y)),
        tape.call("hypot", x - y, -y) + tape.call("interp", tape.call("abs", x), literals=table),
        tape.call("interp", 0.25, literals=table),  # folded
    ]
    assert outputs[-1] == 0.4
    kernel = tape.compile("demo", outputs)

    def expected(a: float, b: float) -> list[float]:
        return [
            1.5 if -a > 0.25 else 0.0,
            a * 2.0 if -b <= 0.0 else -b,
            3.0 if -a < -b else -4.0,
            a if a != b else 0.0,
            math.tanh(-a * 3.0) + math.exp(-abs(-b)),
            math.hypot(a - b, -b) + _interp(abs(a), *table),
            0.4,
        ]

    values = [-2.0, -0.5, -0.25, -0.0, 0.0, 0.1, 0.25, 0.5, 3.0]
    pairs = [(a, b) for a in values for b in values]
    for a, b in pairs:
        assert list(kernel.scalar([a, b])) == expected(a, b)
    rows = np.array(pairs).T.copy()
    columns = kernel.array(rows, None, None)
    for j, column in enumerate(columns):
        want = np.array([expected(a, b)[j] for a, b in pairs])
        np.testing.assert_allclose(np.broadcast_to(column, want.shape), want, rtol=1e-15, atol=1e-15)
    if _native.have_compiler():  # the same program emitted as C (masks, selects, vector calls, tables)
        function = _c_codegen.kernel_function("demo", kernel.program)
        assert "const rd_m " in function and "rd_select(" in function and "rd_vinterp(" in function
        out = _run_c(tmp_path, function, kernel.n_outputs, np.array(pairs))
        want = np.array([expected(a, b) for a, b in pairs])
        exact = [0, 1, 2, 3, 6]  # compares and selects: the same floats; tanh/exp/hypot within an ulp or two
        assert out[:, exact].tolist() == want[:, exact].tolist()
        np.testing.assert_allclose(out, want, rtol=1e-15, atol=1e-15)


def _run_c(tmp_path: Path, function: str, n_outputs: int, inputs: np.ndarray) -> np.ndarray:
    """Compile one kernel function as an extension module with a batch entry point; run it on ``inputs``
    ``(count, k)``."""
    lanes, flags = native.vector_lanes()
    entry = _c_extension.Entry("e0", "demo", (inputs.shape[1],), n_outputs)
    source = tmp_path / "demo.c"
    source.write_text(_c_extension.library_source("test program", lanes, [function], [entry], "rd_demo"))
    path = _native.compile_extension(
        source, tmp_path, "rd_demo", flags=(*native.FLAGS, *flags), include_dirs=_c_extension.include_dirs()
    )
    module = _native.load_extension("rd_demo", path)
    rows = np.ascontiguousarray(inputs, dtype=float)
    out = np.empty((len(rows), n_outputs))
    module.e0_batch(rows, out)
    return out


@pytest.mark.parametrize("name", ["puma560_modified", "everything"])
def test_friction_kernel_alone_is_the_float_program(name: str) -> None:
    """The friction traced alone (the native backend's friction function) gives exactly the floats of
    the program run on Python floats, on one state; the batch variant within 1e-12."""
    model = _model(name)
    p = friction_parameters(model)
    n = model.dof
    rng = np.random.default_rng(15)
    _, qd, _, _ = _states(n, 200, 16)
    tau = rng.uniform(-60.0, 60.0, qd.shape)
    tau[:10] = 0.0  # the transmission's tau_out = 0 boundary
    force, moment = rng.normal(0.0, 40.0, (200, 3 * n)), rng.normal(0.0, 8.0, (200, 3 * n))
    for variant, smooth, kind in VARIANTS:
        kernel = friction_kernel(p, variant)
        assert friction_kernel(p, variant) is kernel  # built once
        program = scalar_friction(model, smooth=smooth, smooth_kind=kind, include_tau=True)
        reactions = [force, moment] if p.has_bearing else []
        assert kernel.arguments == ("qd", "tau", *(("force", "moment") if p.has_bearing else ()))
        expected = []
        for k in range(len(qd)):
            args = [qd[k].tolist(), tau[k].tolist(), *(r[k].tolist() for r in reactions)]
            want = program(*args, *([None, None] if not p.has_bearing else []))
            assert list(kernel.scalar(*args)) == want, (variant, k)
            expected.append(want)
        rows = [np.ascontiguousarray(a.T) for a in (qd, tau, *reactions)]
        batch = np.array([np.broadcast_to(c, (len(qd),)) for c in kernel.array(*rows, None, None)]).T
        np.testing.assert_allclose(batch, np.array(expected), rtol=1e-13, atol=1e-12)


def test_unknown_variant_and_missing_reactions_are_reported() -> None:
    p = friction_parameters(_model("puma560_modified"))
    tape = Tape(FUNCTIONS)
    qd, tau = tape.input("qd", 6), tape.input("tau", 6)
    with pytest.raises(ValueError, match="friction variant must be one of"):
        trace_friction(p, "cubic", tape, qd, tau, None, None)
    with pytest.raises(ValueError, match="needs the joint reactions"):
        trace_friction(p, "exact", tape, qd, tau, None, None)


@pytest.mark.skipif(not _native.have_compiler(), reason="needs a C compiler")
def test_native_interpolation_is_the_scalar_one(tmp_path: Path) -> None:
    """The branch-free vector interpolation of the native friction picks the same segment and
    computes the same formula as the friction package's scalar interp: identical floats."""
    lanes, flags = native.vector_lanes()
    harness = """
void vinterp(long count, const double *u, const double *xs, const double *es, int points, double *out)
{
    for (long i = 0; i + RD_LANES <= count; i += RD_LANES) {
        rd_v v;
        for (int l = 0; l < RD_LANES; ++l) v[l] = u[i + l];
        const rd_v r = rd_vinterp(v, xs, es, points);
        for (int l = 0; l < RD_LANES; ++l) out[i + l] = r[l];
    }
}
"""
    source = tmp_path / "vinterp.c"
    source.write_text(_c_codegen.prelude(lanes) + harness)
    library = _native.compile_shared(source, tmp_path / "libvinterp.so", flags=(*native.FLAGS, *flags))
    function = ctypes.CDLL(str(library)).vinterp
    function.argtypes = [ctypes.c_long, *([ctypes.c_void_p] * 3), ctypes.c_int, ctypes.c_void_p]
    function.restype = None
    rng = np.random.default_rng(14)
    tables = [
        ((0.0, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0), (0.3, 0.5, 0.6, 0.7, 0.78, 0.82, 0.84, 0.85)),
        ((0.1, 0.7), (0.4, 0.9)),
        ((0.5,), (0.8,)),
    ]
    for xs, es in tables:
        u = np.concatenate([rng.uniform(-0.2, 1.3, 4000), xs, np.nextafter(xs, -1.0), np.nextafter(xs, 2.0)])
        u = np.ascontiguousarray(u[: len(u) // lanes * lanes])
        out = np.empty_like(u)
        x_arr, e_arr = np.array(xs), np.array(es)
        function(len(u), u.ctypes.data, x_arr.ctypes.data, e_arr.ctypes.data, len(xs), out.ctypes.data)
        assert out.tolist() == [_interp(float(v), xs, es) for v in u]
