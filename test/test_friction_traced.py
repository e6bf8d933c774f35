"""Friction traced into the inverse-dynamics program (dynamics._friction_trace) and the native friction
helpers: the same numbers as the friction package's compiled program, bit for bit on one state."""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import numpy as np
import pytest
from test_friction_fast import everything

import robot_dynamics as rd
from robot_dynamics import _native
from robot_dynamics.dynamics import _c_codegen, _kernels, native
from robot_dynamics.dynamics._friction_trace import FUNCTIONS, NotTraceable, trace_friction
from robot_dynamics.dynamics._trace import Sym, Tape
from robot_dynamics.friction import _scalar, apply_friction, scalar_friction
from robot_dynamics.friction._scalar import _interp
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


def test_tracer_compares_selects_and_calls() -> None:
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


def test_replay_rejects_what_it_cannot_trace() -> None:
    tape = Tape(FUNCTIONS)
    qd = tape.input("qd", 1)
    head = "def friction(qd, tau, force, moment):\n    v0, = qd\n"
    for body in (
        "    b0 = v0 / 3.0\n    return [b0]",  # the tracer would multiply by 1/3: not the same float
        "    b0 = sorted(qd)\n    return [b0]",
        "    while v0:\n        pass\n    return [v0]",
        "    b0 = force[0]\n    return [b0]",  # no reactions given
        "    b0 = v0 if v0 else 0.0\n    return [b0]",
    ):
        with pytest.raises(NotTraceable):
            trace_friction(head + body, tape, qd, [0.0], None, None)
    assert isinstance(trace_friction(head + "    b0 = 2.0*v0\n    return [b0]", tape, qd, [0.0], None, None)[0], Sym)


def test_untraceable_friction_falls_back_to_the_batch_formulas(monkeypatch: pytest.MonkeyPatch) -> None:
    """A friction program outside the traceable subset: Newton–Euler plus friction_total instead."""
    model = rd.load_robot("puma560_modified")
    original = _scalar.scalar_source
    monkeypatch.setattr(
        _scalar, "scalar_source", lambda *a, **k: original(*a, **k).replace("    v0,", "    assert qd\n    v0,", 1)
    )
    assert _kernels.kernels(model).inverse_friction(True, False, "exact") is None
    q, qd, qdd, _ = _states(6, 20, 13)
    for smooth in (False, True):
        reference = rd.inverse_dynamics(model, q, qd, qdd, smooth=smooth, breakdown=True, backend="python").total
        np.testing.assert_allclose(rd.inverse_dynamics(model, q, qd, qdd, smooth=smooth, backend="python"), reference)
        single = rd.inverse_dynamics(model, q[3], qd[3], qdd[3], smooth=smooth, backend="python")
        np.testing.assert_allclose(single, reference[3], rtol=1e-14, atol=1e-12)
    tau = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
    _, force, moment = rd.rnea_with_reactions(model, q, qd, qdd)
    assert not np.array_equal(apply_friction(model, qd, tau, force, moment).total, 0.0)


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
