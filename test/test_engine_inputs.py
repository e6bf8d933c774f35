"""Shapes, batching and input errors of the engine's public functions; the compiled-program machinery
(constant folding, both evaluation paths) and the batch sin/cos."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from engine_reference import puma560, random_states

import robot_dynamics as rd
from robot_dynamics.dynamics import _kernels
from robot_dynamics.dynamics._sincos import sincos
from robot_dynamics.dynamics._trace import Tape
from robot_dynamics.errors import StateError
from robot_dynamics.model import Motor

MODEL = puma560()


def test_single_and_batch_shapes() -> None:
    q, qd, qdd = random_states(70, 6, 4)
    assert rd.inverse_dynamics(MODEL, q[0], qd[0], qdd[0]).shape == (6,)
    assert rd.inverse_dynamics(MODEL, q, qd, qdd).shape == (4, 6)
    assert rd.inertia_matrix(MODEL, q[0]).shape == (6, 6)
    assert rd.inertia_matrix(MODEL, q).shape == (4, 6, 6)
    assert rd.coriolis_tensor(MODEL, q).shape == (4, 6, 6, 6)
    assert rd.coriolis_matrix(MODEL, q[0], qd[0]).shape == (6, 6)
    assert rd.forward_dynamics(MODEL, q, qd, qdd).shape == (4, 6)
    tau, force, moment = rd.rnea_with_reactions(MODEL, q, qd, qdd)
    assert tau.shape == (4, 6) and force.shape == moment.shape == (4, 6, 3)
    assert rd.jacobian(MODEL, q).shape == (4, 6, 6) and rd.forward_kinematics(MODEL, q[0]).shape == (4, 4)
    assert rd.robmat_coefficients(MODEL, q).B.shape == (4, 6, 15)
    # a single state next to a batch is broadcast; lists and tuples are accepted
    mixed = rd.inverse_dynamics(MODEL, q, qd[0], list(qdd[0]))
    assert np.allclose(mixed, rd.inverse_dynamics(MODEL, q, np.tile(qd[0], (4, 1)), np.tile(qdd[0], (4, 1))))
    assert rd.inverse_dynamics(MODEL, np.zeros((0, 6)), np.zeros((0, 6)), np.zeros((0, 6))).shape == (0, 6)


def test_batch_equals_single_states_across_chunks() -> None:
    """The NumPy program (chunked, table sin/cos) and the Python-float program give the same numbers."""
    count = _kernels.CHUNK + 37
    q, qd, qdd = random_states(71, 6, count)
    q[::7] *= 50.0  # large angles exercise the range reduction
    batch = rd.inverse_dynamics(MODEL, q, qd, qdd)
    picks = [0, 1, _kernels.CHUNK - 1, _kernels.CHUNK, count - 1]
    single = np.array([rd.inverse_dynamics(MODEL, q[i], qd[i], qdd[i]) for i in picks])
    assert np.abs(batch[picks] - single).max() < 1e-12


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: rd.inverse_dynamics(MODEL, np.zeros(5), np.zeros(6), np.zeros(6)),
            r"q: expected shape \(6,\) or \(N, 6\)",
        ),
        (lambda: rd.inverse_dynamics(MODEL, np.zeros(6), np.zeros((2, 3)), np.zeros(6)), r"qd: expected shape \(6,\)"),
        (
            lambda: rd.inverse_dynamics(MODEL, np.zeros(6), np.zeros(6), [0, 0, math.nan, 0, 0, 0]),
            r"qdd: non-finite values .* index 2",
        ),
        (
            lambda: rd.inverse_dynamics(MODEL, np.zeros((3, 6)), np.zeros((4, 6)), np.zeros(6)),
            "qd: batch of 4 samples does not match q with 3",
        ),
        (
            lambda: rd.inverse_dynamics(MODEL, np.full((2, 6), np.inf), np.zeros(6), np.zeros(6)),
            r"q: non-finite values .* \(0, 0\)",
        ),
        (lambda: rd.inverse_dynamics(MODEL, ["a"] * 6, np.zeros(6), np.zeros(6)), "q: expected numbers"),
        (
            lambda: rd.inverse_dynamics(MODEL, np.zeros(6), np.zeros(6), np.zeros(6), wrench=np.zeros(5)),
            r"wrench: expected shape \(6,\) or \(N, 6\) \(a wrench",
        ),
        (
            lambda: rd.inverse_dynamics(
                MODEL, np.zeros(6), np.zeros(6), np.zeros(6), wrench=np.zeros(6), wrench_frame="tip"
            ),
            "wrench_frame: expected",
        ),
        (
            lambda: rd.inverse_dynamics(MODEL, np.zeros(6), np.zeros(6), np.zeros(6), backend="fast"),
            "backend: expected",
        ),
        (lambda: rd.forward_dynamics(MODEL, np.zeros(6), np.zeros(6), np.zeros(7)), r"tau: expected shape \(6,\)"),
        (
            lambda: rd.inertia_matrix(MODEL, np.zeros((2, 2, 6))),
            r"q: expected shape \(6,\) or \(N, 6\) \(6 joints of robot 'puma560'\), got \(2, 2, 6\)",
        ),
        (lambda: rd.forward_kinematics(MODEL, np.zeros(6), frame="tool"), "frame: expected 'world' or 'base'"),
    ],
)
def test_input_errors_name_the_argument(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StateError, match=message):
        call()


def test_tracer_folds_constants() -> None:
    tape = Tape()
    x, y = tape.input("v", 2)
    out = [x * 0.0 + y * 1.0, (x + 0.0) * -2.0 - (-y), 3.0 * 4.0 + 0.0 * x, x * y - y * x]
    kernel = tape.compile("demo", out)
    assert kernel.scalar([1.5, 2.5]) == (2.5, 1.5 * -2.0 + 2.5, 12.0, 0.0)
    assert kernel.operations == 4  # x*2, y - t, x*y (shared by both products), t - t
    rows = kernel.array(np.array([[1.5, 1.0], [2.5, -1.0]]), None, None)
    assert np.allclose(rows[1], [-0.5, -3.0]) and rows[2] == 12.0


def test_compiled_program_drops_zero_parameters() -> None:
    """PUMA 560's DH zeros fold away: far fewer operations than a general 6-joint Newton-Euler."""
    kernels = _kernels.kernels(MODEL)
    assert kernels.rnea(motor=True).operations < 420
    assert kernels.inertia(True).operations < 240
    assert _kernels.kernels(MODEL) is kernels  # cached per model


def test_sincos_accuracy() -> None:
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    rng = np.random.default_rng(72)
    q = np.concatenate([rng.uniform(-10, 10, 3000), rng.uniform(-1e5, 1e5, 300), np.linspace(-4, 4, 400), [0.0, -0.0]])
    s, c = sincos(q.reshape(2, -1))
    for x, sv, cv in zip(q, s.ravel(), c.ravel(), strict=True):
        assert abs(float(mpmath.sin(mpmath.mpf(x))) - sv) < 3e-16
        assert abs(float(mpmath.cos(mpmath.mpf(x))) - cv) < 3e-16
    big = np.array([2e5, -3e7])  # beyond the table's range: NumPy's functions
    assert np.array_equal(sincos(big)[0], np.sin(big))


def test_generated_code_is_not_an_engine_backend(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``backend="generated"`` is refused by every engine function with a pointer to the symbolic
    package; its ``get_backend(model)`` gives the rigid-body torques plus the model's motor inertia,
    equal to the engine's frictionless inverse dynamics."""
    backend = pytest.importorskip("robot_dynamics.symbolic.backend")
    monkeypatch.setattr(backend, "cache_dir", lambda: tmp_path)
    scara = rd.load_robot("scara")
    motors = tuple(replace(j, motor=Motor(2e-4, 40.0 + 10 * i)) for i, j in enumerate(scara.joints))
    model = scara.with_changes(joints=motors, motor_inertia_in_d=True)
    q, qd, qdd = random_states(73, 3, 20)
    for call in (
        lambda: rd.inverse_dynamics(model, q, qd, qdd, backend="generated"),
        lambda: rd.inverse_dynamics(model, q[0], qd[0], qdd[0], backend="generated", breakdown=True),
        lambda: rd.forward_dynamics(model, q[0], qd[0], qdd[0], backend="generated"),
        lambda: rd.inertia_matrix(model, q, backend="generated"),
        lambda: rd.gravity_torques(model, q[0], backend="generated"),
    ):
        with pytest.raises(StateError, match=r"'generated' is not an engine backend.*symbolic\.get_backend\(model\)"):
            call()
    from robot_dynamics.symbolic import get_backend

    for motor_inertia in (None, False):
        generated = get_backend(model, motor_inertia=motor_inertia).inverse_dynamics(q, qd, qdd)
        numeric = rd.inverse_dynamics(model, q, qd, qdd, friction=False, motor_inertia=motor_inertia)
        assert np.abs(generated - numeric).max() < 1e-12, motor_inertia
