"""The generated-code backend: agrees with the numeric engine, is cached on disk keyed by the model
fingerprint, reloaded without regeneration, and invalidated when the model changes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.errors import RobotDynamicsError, StateError
from robot_dynamics.symbolic import backend as be


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("rd_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROBOT_DYNAMICS_CACHE", str(root))
        yield root
    be.clear_cache(root)


def _states(n: int, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(-np.pi, np.pi, (count, n)), rng.uniform(-3, 3, (count, n)), rng.uniform(-10, 10, (count, n))


def test_c_backend_matches_engine_on_puma(cache: Path) -> None:
    model = rd.load_robot("puma560")
    b = be.get_backend(model, "c")
    assert b.directory.parent == cache / "symbolic"
    q, qd, qdd = _states(6, 50)
    ref = rd.inverse_dynamics(model, q, qd, qdd, friction=False)
    np.testing.assert_allclose(b.inverse_dynamics(q, qd, qdd), ref, rtol=0, atol=1e-12)
    single = np.array([b.inverse_dynamics(x, y, z) for x, y, z in zip(q, qd, qdd, strict=False)])
    np.testing.assert_allclose(single, ref, rtol=0, atol=1e-12)
    nested = b.inverse_dynamics(q.reshape(5, 10, 6), qd.reshape(5, 10, 6), qdd.reshape(5, 10, 6))
    assert nested.shape == (5, 10, 6)
    np.testing.assert_allclose(nested.reshape(50, 6), ref, rtol=0, atol=1e-12)
    # lists and non-contiguous inputs take the general path
    np.testing.assert_allclose(b.inverse_dynamics(list(q[0]), list(qd[0]), list(qdd[0])), ref[0], atol=1e-12)
    np.testing.assert_allclose(b.inverse_dynamics(q.T[:, 3], qd.T[:, 3], qdd.T[:, 3]), ref[3], atol=1e-12)
    assert b.operations["mul"] > 0 and b.operations["add"] > 0


def test_generated_code_equals_the_engine(cache: Path) -> None:
    """The generated code is the rigid-body part (with the model's motor inertia) of the engine's
    inverse dynamics; friction is the engine's (``backend="generated"`` is not an engine backend)."""
    model = rd.load_robot("puma560")
    q, qd, qdd = _states(6, 20, seed=1)
    generated = be.get_backend(model).inverse_dynamics(q, qd, qdd)
    np.testing.assert_allclose(generated, rd.inverse_dynamics(model, q, qd, qdd, friction=False), rtol=0, atol=1e-10)
    with pytest.raises(StateError, match=r"symbolic\.get_backend"):
        rd.inverse_dynamics(model, q, qd, qdd, backend="generated")


def test_motor_inertia_switch(cache: Path) -> None:
    model = rd.load_robot("puma560")
    with_motor = be.get_backend(model, "c")
    without = be.get_backend(model, "c", motor_inertia=False)
    assert without.directory != with_motor.directory
    q, qd, qdd = _states(6, 5, seed=2)
    reflected = model.arrays.reflected_motor_inertia
    np.testing.assert_allclose(
        with_motor.inverse_dynamics(q, qd, qdd) - without.inverse_dynamics(q, qd, qdd), qdd * reflected, atol=1e-12
    )


def test_python_backend_and_cache_reuse(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = rd.load_robot("fu_two_link")
    first = be.get_backend(model, "python")
    assert be.get_backend(model, "python") is first  # memoised in-process
    q, qd, qdd = _states(2, 10, seed=3)
    np.testing.assert_allclose(
        first.inverse_dynamics(q, qd, qdd), rd.inverse_dynamics(model, q, qd, qdd, friction=False), atol=1e-12
    )
    created = first.meta["created"]
    # a new process: nothing in memory, the code on disk is loaded, not regenerated
    monkeypatch.setattr(be, "_memo", {})

    def no_generation(*args: object, **kwargs: object) -> None:
        raise AssertionError("regenerated although the cache is valid")

    monkeypatch.setattr(be, "_generate", no_generation)
    again = be.get_backend(model, "python")
    assert again is not first and again.directory == first.directory and again.meta["created"] == created
    np.testing.assert_allclose(again.inverse_dynamics(q, qd, qdd), first.inverse_dynamics(q, qd, qdd), atol=0)


def test_changed_model_invalidates_the_cache(cache: Path) -> None:
    model = rd.load_robot("fu_two_link")
    old = be.get_backend(model, "python")
    j1, j2 = model.joints
    changed = model.with_changes(joints=(j1, replace(j2, link=replace(j2.link, mass=2.5))))
    assert changed.fingerprint() != model.fingerprint()
    new = be.get_backend(changed, "python")
    assert new.directory != old.directory
    q, qd, qdd = _states(2, 10, seed=4)
    np.testing.assert_allclose(
        new.inverse_dynamics(q, qd, qdd), rd.inverse_dynamics(changed, q, qd, qdd, friction=False), atol=1e-12
    )
    assert np.abs(new.inverse_dynamics(q, qd, qdd) - old.inverse_dynamics(q, qd, qdd)).max() > 1e-3
    # gravity is a model parameter too
    tilted = model.with_changes(gravity=np.array([0.0, 0.0, -9.81]))
    assert be.get_backend(tilted, "python").directory not in (old.directory, new.directory)


def test_bad_input_is_named(cache: Path) -> None:
    model = rd.load_robot("fu_two_link")
    b = be.get_backend(model, "python")
    with pytest.raises(StateError, match=r"same shape \(\.\.\., 2\); got \(3,\), \(2,\), \(2,\)"):
        b.inverse_dynamics(np.zeros(3), np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError, match="unknown backend language 'fortran'"):
        be.get_backend(model, "fortran")  # type: ignore[arg-type]


def test_missing_compiler_is_a_clear_error(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "no-such-compiler-xyz")
    model = rd.load_robot("one_axis")
    with pytest.raises(RobotDynamicsError, match="the C backend needs a C compiler, and 'no-such-compiler-xyz'"):
        be.get_backend(model, "c", cache=cache / "other")
