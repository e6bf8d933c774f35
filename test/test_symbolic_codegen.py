"""Generated Python and C inverse dynamics agree with the numeric engine to 1e-12 (PUMA 560 from DH,
UR5 from URDF with general joint frames), the printed code does exactly the counted operations,
and the C has no dynamic allocation."""

from __future__ import annotations

import ctypes
import importlib.metadata
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import sympy as sp
from engine_reference import EXAMPLE_ROBOTS

import robot_dynamics as rd
from robot_dynamics.symbolic.codegen_c import c_source, compile_shared, load
from robot_dynamics.symbolic.codegen_python import python_source
from robot_dynamics.symbolic.model import symbolic_robot
from robot_dynamics.symbolic.newton_euler import generate, inverse_dynamics_program
from robot_dynamics.symbolic.program import Program

ROBOTS = EXAMPLE_ROBOTS
UR5 = ROBOTS / "ur_description/urdf/ur5_robot.urdf"


def _ur5() -> rd.RobotModel:
    return rd.load_robot(str(UR5), tip_link="tool0")


def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"gen_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _states(n: int, count: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(-np.pi, np.pi, (count, n)), rng.uniform(-3, 3, (count, n)), rng.uniform(-10, 10, (count, n))


@pytest.fixture(scope="module", params=["puma560", "ur5"])
def generated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    model = rd.load_robot("puma560") if request.param == "puma560" else _ur5()
    program = inverse_dynamics_program(symbolic_robot(model), search=False)
    out = tmp_path_factory.mktemp(request.param)
    py = out / "gen.py"
    py.write_text(python_source(program, fingerprint=model.fingerprint()))
    src = out / "gen.c"
    src.write_text(c_source(program, fingerprint=model.fingerprint()))
    lib = compile_shared(src, out / "libgen.so")
    return model, program, _module(py), load(lib)


def test_generated_python_matches_engine(generated: tuple) -> None:
    model, _, module, _ = generated
    q, qd, qdd = _states(model.dof, 40, 1)
    ref = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
    batch = module.inverse_dynamics(q, qd, qdd)
    assert batch.shape == (40, model.dof)
    np.testing.assert_allclose(batch, ref, rtol=0, atol=1e-12)
    single = np.array([module.inverse_dynamics(a, b, c) for a, b, c in zip(q, qd, qdd, strict=False)])
    np.testing.assert_allclose(single, ref, rtol=0, atol=1e-12)
    nested = module.inverse_dynamics(q.reshape(4, 10, -1), qd.reshape(4, 10, -1), qdd.reshape(4, 10, -1))
    np.testing.assert_allclose(nested.reshape(40, -1), ref, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match=r"same shape \(\.\.\., 6\)"):
        module.inverse_dynamics(q[0, :5], qd[0, :5], qdd[0, :5])


def test_generated_c_matches_engine(generated: tuple) -> None:
    model, _, _, (single, batch) = generated
    n = model.dof
    q, qd, qdd = _states(n, 40, 2)
    ref = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
    q, qd, qdd = (np.ascontiguousarray(x) for x in (q, qd, qdd))
    out = np.empty_like(q)
    batch(len(q), q.ctypes.data, qd.ctypes.data, qdd.ctypes.data, out.ctypes.data)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)
    one = np.empty(n)
    for k in range(len(q)):
        single(q[k].ctypes.data, qd[k].ctypes.data, qdd[k].ctypes.data, one.ctypes.data)
        np.testing.assert_allclose(one, ref[k], rtol=0, atol=1e-12)


def test_ur5_has_general_joint_frames() -> None:
    model = _ur5()
    axes = {tuple(np.round(j.axis, 6)) for j in model.joints}
    assert (0.0, 1.0, 0.0) in axes  # not a DH model: joint axes along y, origins with offsets
    assert model.dh is None


def _c_body_ops(source: str) -> tuple[int, int]:
    """Multiplications and binary additions/subtractions printed in the C function body."""
    body = source.split("{", 1)[1].split("\n}\n", 1)[0]
    muls = adds = 0
    for line in body.splitlines():
        if "=" not in line or ("[" in line.split("=", 1)[1] and "tau[" not in line):
            continue
        rhs = line.split("=", 1)[1]
        tokens = re.findall(r"\d+\.\d*(?:e[-+]?\d+)?|\d+e[-+]?\d+|[A-Za-z_]\w*|[-+*/()]", rhs)
        prev = None
        for tok in tokens:
            if tok == "*":
                muls += 1
            elif tok in "+-" and prev is not None and prev not in "+-*/(":
                adds += 1
            prev = tok
    return muls, adds


def test_printed_code_does_exactly_the_counted_operations(generated: tuple) -> None:
    model, program, _, _ = generated
    src = c_source(program)
    ops = program.ops()
    assert _c_body_ops(src) == (ops.mul, ops.add)
    # no dynamic allocation, the only calls are sin/cos of the revolute joint angles
    assert not re.search(r"\b(malloc|calloc|realloc|free|alloca)\b", src)
    calls = re.findall(r"\b([a-z_]\w*)\(", src.split("{", 1)[1])
    assert set(calls) <= {"sin", "cos", "rd_inverse_dynamics", "rd_inverse_dynamics_batch"}
    assert calls.count("sin") <= model.dof


def test_optimisation_passes_keep_the_torques() -> None:
    model = rd.load_robot("stanford")
    robot = symbolic_robot(model)
    raw = generate(robot)
    best = inverse_dynamics_program(robot, search=False)
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-2, 2, (3, 6))
        ref = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
        np.testing.assert_allclose(raw.evaluate(q, qd, qdd), ref, atol=1e-12)
        np.testing.assert_allclose(best.evaluate(q, qd, qdd), ref, atol=1e-12)
    assert best.ops().mul < raw.ops().mul and best.ops().add < raw.ops().add


def test_symbolic_parameters_become_arguments(tmp_path: Path) -> None:
    model = rd.load_robot("robmat_double_pendulum")
    robot = symbolic_robot(model, ("mass", "length", "gravity"))
    program = inverse_dynamics_program(robot, method="thesis")
    assert [s.name for s in program.parameters] == ["a1", "a2", "g", "m1", "m2"]
    values = [robot.values[s] for s in program.parameters]
    py = tmp_path / "pend.py"
    py.write_text(python_source(program))
    module = _module(py)
    src = tmp_path / "pend.c"
    src.write_text(c_source(program, name="pend"))
    lib = ctypes.CDLL(str(compile_shared(src, tmp_path / "libpend.so")))
    fn = lib.pend
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p] * 5
    p = np.array(values)
    q, qd, qdd = _states(2, 10, 4)
    ref = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
    np.testing.assert_allclose(module.inverse_dynamics(q, qd, qdd, values), ref, atol=1e-12)
    out = np.empty(2)
    for k in range(10):
        a, b, c = (np.ascontiguousarray(x[k]) for x in (q, qd, qdd))
        fn(a.ctypes.data, b.ctypes.data, c.ctypes.data, p.ctypes.data, out.ctypes.data)
        np.testing.assert_allclose(out, ref[k], atol=1e-12)
    with pytest.raises(ValueError, match="params: expected values for"):
        module.inverse_dynamics(q[0], qd[0], qdd[0])


def test_program_symbols_are_consistent(generated: tuple) -> None:
    _, program, _, _ = generated
    assert isinstance(program, Program)
    defined = set(program.q + program.qd + program.qdd)
    for s, e in program.all_assignments():
        assert e.free_symbols <= defined, s
        defined.add(s)
    for o in program.outputs:
        assert sp.sympify(o).free_symbols <= defined
