"""The engine's one dispatch (robot_dynamics.dynamics._dispatch) and its kernel keys.

Kernel keys are interned (equal keys are one object), canonical (switches that do not apply have one
value) and survive the native library's JSON; the backend name is checked in one place with the same
messages for every public function; the fast single-state path hands anything unusual to validation.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from engine_reference import random_states

import robot_dynamics as rd
from robot_dynamics import _sources
from robot_dynamics.dynamics import _dispatch
from robot_dynamics.dynamics._kernel_key import FRICTION_VARIANTS, KernelKey
from robot_dynamics.dynamics._kernels import kernels
from robot_dynamics.errors import StateError

PACKAGE = Path(rd.__file__).resolve().parent


def test_kernel_keys_are_interned_and_canonical() -> None:
    assert KernelKey.rnea() is KernelKey("rnea", True, True, True)
    assert KernelKey.rnea(motor=True, load=True) == KernelKey.rnea(load=True, motor=True)
    assert KernelKey.rnea(motor=True) is not KernelKey.rnea()
    # G^2 Jm qdd needs an acceleration: the motor switch of a velocity-only program is dropped
    assert KernelKey.rnea(acceleration=False, motor=True) is KernelKey.rnea(acceleration=False)
    assert KernelKey.inertia(False).with_motor() is KernelKey.inertia(True)
    assert KernelKey.inertia(True).with_motor() is None
    assert KernelKey.coriolis_tensor().with_motor() is None
    keys = {KernelKey.rnea(velocity=v, load=w) for v in (False, True) for w in (False, True)}
    assert len(keys) == 4 and KernelKey.rnea(load=True) in keys
    for key in (
        KernelKey.rnea(gravity=False, reactions=True),
        KernelKey.forward(True, True),
        KernelKey.coriolis_tensor(),
        *(KernelKey.inverse_friction(True, False, v) for v in FRICTION_VARIANTS),
    ):
        assert KernelKey.from_json(key.to_json()) is key


def test_kernel_keys_reject_what_does_not_exist() -> None:
    with pytest.raises(ValueError, match="kernel kind"):
        KernelKey("crba")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="friction variant"):
        KernelKey("id_friction", motor=True)
    with pytest.raises(ValueError, match="friction variant"):
        KernelKey("rnea", friction="tanh")
    with pytest.raises(TypeError, match="must be bools"):
        KernelKey("rnea", 1)  # type: ignore[arg-type]
    assert KernelKey.rnea(velocity=True).velocity is True  # the interned key was not touched
    with pytest.raises(ValueError, match="expected an object with fields"):
        KernelKey.from_json({"kind": "rnea", "speed": True})


def test_one_backend_check_for_every_public_function() -> None:
    model = rd.load_robot("fu_two_link")
    q, qd, qdd = random_states(3, 2, 4)
    calls = {
        "inverse_dynamics": lambda b: rd.inverse_dynamics(model, q, qd, qdd, backend=b),
        "breakdown": lambda b: rd.inverse_dynamics(model, q[0], qd[0], qdd[0], breakdown=True, backend=b),
        "rnea_with_reactions": lambda b: rd.rnea_with_reactions(model, q, qd, qdd, backend=b),
        "forward_dynamics": lambda b: rd.forward_dynamics(model, q[0], qd[0], qdd[0], backend=b),
        "inertia_matrix": lambda b: rd.inertia_matrix(model, q[0], backend=b),
        "coriolis_centrifugal": lambda b: rd.coriolis_centrifugal(model, q, qd, backend=b),
        "gravity_torques": lambda b: rd.gravity_torques(model, q, backend=b),
        "coriolis_tensor": lambda b: rd.coriolis_tensor(model, q[0], backend=b),
        "robmat_coefficients": lambda b: rd.robmat_coefficients(model, q, backend=b),
    }
    for name, call in calls.items():
        with pytest.raises(StateError, match=r"^backend: expected None, 'python' or 'native', got 'gpu'$"):
            call("gpu")
        with pytest.raises(StateError, match=r"^backend: 'generated' is not an engine backend"):
            call("generated")
        numeric = call("numeric")  # the old name of the Python backend
        python = call("python")
        if isinstance(python, tuple | list):
            python, numeric = python[0], numeric[0]
        if hasattr(python, "total"):
            python, numeric = python.total, numeric.total
        if hasattr(python, "M"):
            python, numeric = python.M, numeric.M
        assert np.array_equal(python, numeric), name
    with pytest.raises(StateError, match=r"\$ROBOT_DYNAMICS_BACKEND: expected None, 'python' or 'native'"):
        _dispatch.check_backend("fast", "$ROBOT_DYNAMICS_BACKEND")


def test_the_fast_path_hands_unusual_input_to_validation() -> None:
    """``single`` takes only finite float64 arrays of the exact shape; everything else gets the same
    answer through validation, or its error."""
    model = rd.load_robot("puma560")
    K = kernels(model)
    q, qd, qdd = random_states(5, 6, 1)
    key = _dispatch.INVERSE[(model.motor_inertia_in_d, "exact")]
    expected = _dispatch.single(model, K, "python", key, q[0], qd[0], qdd[0])
    assert expected is not None
    assert np.array_equal(rd.inverse_dynamics(model, q[0], qd[0], qdd[0], backend="python"), expected)
    for odd in (list(q[0]), q[0].astype(np.float32), q[0].reshape(1, 6)):
        assert _dispatch.single(model, K, "python", key, odd, qd[0], qdd[0]) is None
        out = rd.inverse_dynamics(model, odd, qd[0], qdd[0], backend="python")
        tol = 1e-3 if np.asarray(odd).dtype == np.float32 else 1e-12
        np.testing.assert_allclose(out.reshape(6), expected, rtol=0, atol=tol)
    bad = q[0].copy()
    bad[4] = np.inf
    assert _dispatch.single(model, K, "python", key, bad, qd[0], qdd[0]) is None
    with pytest.raises(StateError, match=r"q: non-finite values .* index 4"):
        rd.inverse_dynamics(model, bad, qd[0], qdd[0], backend="python")
    # a bad smooth_kind has no key: the error comes from the general path
    assert (model.motor_inertia_in_d, "cubic") not in _dispatch.INVERSE
    with pytest.raises(ValueError, match="smooth_kind"):
        rd.inverse_dynamics(model, q[0], qd[0], qdd[0], smooth=True, smooth_kind="cubic")


def _private_imports(path: Path) -> list[str]:
    """``from .x import _name`` of a private name (not a module) from a public module of the package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            module = node.module.rsplit(".", 1)[-1]
            package = "robot_dynamics.dynamics" if node.level == 1 else "robot_dynamics"
            full = f"{package}.{node.module}" if node.level else node.module
            for alias in node.names:
                if _sources.module_path(f"{full}.{alias.name}") is not None:
                    continue  # a module of a package
                if alias.name.startswith("_") and not module.startswith("_"):
                    found.append(f"{path.name}: from {node.module} import {alias.name}")
    return found


def test_public_engine_modules_do_not_import_each_others_privates() -> None:
    modules = sorted((PACKAGE / "dynamics").glob("*.py"))
    assert len(modules) > 10
    offenders = [hit for path in modules for hit in _private_imports(path)]
    # stick_slip reuses two NumPy friction terms of friction.combine (the friction package's own)
    assert [hit for hit in offenders if not hit.startswith("stick_slip.py")] == []
