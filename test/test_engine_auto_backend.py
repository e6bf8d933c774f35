"""The default backend ``auto``: compiled C when a C compiler exists (built on first use, cached per
model fingerprint, one log line), else Python with one warning; ``RD_BACKEND=python`` forces Python;
two processes building the same library at once both succeed; and the native extension gives the
Python backend's values bit for bit (single states and batches).

The process-wide choice is made once per process, so the choices are checked in fresh interpreters
(each with its own empty cache directory).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS, URDF_ARMS, random_states

import robot_dynamics as rd
from robot_dynamics import _native
from robot_dynamics.dynamics import _dispatch, native
from robot_dynamics.dynamics._kernel_key import KernelKey
from robot_dynamics.errors import StateError
from robot_dynamics.model import RobotModel

REPO = Path(__file__).resolve().parent.parent
LOG_LINE = "backend 'auto' uses compiled C"

SCRIPT = textwrap.dedent(
    """
    import json, logging, sys, time, warnings
    from pathlib import Path

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
    import numpy as np
    import robot_dynamics as rd
    from robot_dynamics.dynamics._kernels import kernels
    from robot_dynamics.dynamics.native import NativeModel

    name, barrier = sys.argv[1], sys.argv[2]
    if barrier:  # start together: the second process must not find the first one's library
        Path(barrier, str(sys.argv[3])).touch()
        while len(list(Path(barrier).iterdir())) < 2:
            time.sleep(0.005)
    model = rd.load_robot(name)
    q, qd, qdd = np.random.default_rng(5).uniform(-2, 2, (3, 20, model.dof))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        default = rd.default_backend()
        batch = rd.inverse_dynamics(model, q, qd, qdd)
        single = rd.inverse_dynamics(model, q[0], qd[0], qdd[0])
        other = rd.load_robot(name)  # an equal model: same library, no second log line or warning
        inertia = rd.inertia_matrix(other, q[0])
    print(json.dumps({
        "default": default,
        "native": isinstance(kernels(model).native_library, NativeModel),
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
        "batch": batch.tolist(), "single": single.tolist(), "inertia": inertia.tolist(),
    }))
    """
)


def _run(cache: Path, name: str = "fu_two_link", **env: str) -> tuple[dict[str, Any], str]:
    """Run SCRIPT in a fresh interpreter; (its JSON result, its stderr)."""
    proc = _start(cache, name, "", 0, **env)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    return json.loads(out), err


def _start(cache: Path, name: str, barrier: str, index: int, **env: str) -> subprocess.Popen[str]:
    environment = {k: v for k, v in os.environ.items() if k not in (_native.BACKEND_ENV, _dispatch.BACKEND_ENV)}
    environment.update({"PYTHONPATH": str(REPO), _native.CACHE_ENV: str(cache), **env})
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, name, barrier, str(index)],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _expected(name: str = "fu_two_link") -> dict[str, np.ndarray]:
    model = rd.load_robot(name)
    q, qd, qdd = np.random.default_rng(5).uniform(-2, 2, (3, 20, model.dof))
    return {
        "batch": rd.inverse_dynamics(model, q, qd, qdd, backend="python"),
        "single": rd.inverse_dynamics(model, q[0], qd[0], qdd[0], backend="python"),
        "inertia": rd.inertia_matrix(model, q[0], backend="python"),
    }


def _entries(cache: Path) -> list[str]:
    root = cache / "engine"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def _assert_python_values(result: dict[str, Any]) -> None:
    for what, expected in _expected().items():
        np.testing.assert_array_equal(np.array(result[what]), expected, err_msg=what)


def test_auto_compiles_on_first_use_with_one_log_line(tmp_path: Path) -> None:
    if not _native.have_compiler():
        pytest.skip("no C compiler on this machine")
    result, err = _run(tmp_path)
    assert result["default"] == "native" and result["native"], err
    assert result["warnings"] == []
    assert err.count(LOG_LINE) == 1, err
    assert str(tmp_path) in err  # the log line names the cache directory
    (entry,) = _entries(tmp_path)  # built on first use, once for both equal models
    assert (tmp_path / "engine" / entry / _native.MARKER).exists()
    _assert_python_values(result)
    # a second process loads the cached library: nothing is rebuilt
    meta = json.loads((tmp_path / "engine" / entry / _native.MARKER).read_text())
    again, _ = _run(tmp_path)
    assert again["native"] and _entries(tmp_path) == [entry]
    assert json.loads((tmp_path / "engine" / entry / _native.MARKER).read_text())["created"] == meta["created"]


def test_auto_without_a_compiler_warns_once_and_runs_python(tmp_path: Path) -> None:
    result, err = _run(tmp_path / "cache", CC=str(tmp_path / "no-such-cc"))
    assert result["default"] == "python" and not result["native"]
    (warning,) = result["warnings"]
    assert warning.startswith("RuntimeWarning: robot_dynamics: no C compiler") and "no-such-cc" in warning
    assert LOG_LINE not in err
    assert _entries(tmp_path / "cache") == []
    _assert_python_values(result)


def test_rd_backend_python_forces_python(tmp_path: Path) -> None:
    result, err = _run(tmp_path, RD_BACKEND="python")
    assert result["default"] == "python" and not result["native"]
    assert result["warnings"] == [] and LOG_LINE not in err
    assert _entries(tmp_path) == []  # nothing compiled
    _assert_python_values(result)


def test_resolve_backend_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_native.BACKEND_ENV, raising=False)
    assert _native.resolve_backend("native") == "native"
    assert _native.resolve_backend("python") == _native.resolve_backend("numeric") == "python"
    monkeypatch.setenv(_native.BACKEND_ENV, " Python ")
    assert _native.resolve_backend() == "python"
    monkeypatch.setenv(_native.BACKEND_ENV, "fast")
    with pytest.raises(StateError, match=r"\$RD_BACKEND: expected 'auto', 'native' or 'python', got 'fast'"):
        _native.resolve_backend()
    with pytest.raises(StateError, match=r"^backend: expected 'auto', 'native' or 'python', got 'gpu'"):
        _native.resolve_backend("gpu")
    monkeypatch.setenv("CC", "no-such-compiler-for-auto")
    monkeypatch.setattr(_native, "_announced", set())
    with pytest.warns(RuntimeWarning, match="no C compiler"):
        assert _native.resolve_backend("auto") == "python"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process
        assert _native.resolve_backend("auto") == "python"


def test_concurrent_first_builds_both_succeed(tmp_path: Path) -> None:
    if not _native.have_compiler():
        pytest.skip("no C compiler on this machine")
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    cache = tmp_path / "cache"
    procs = [_start(cache, "fu_two_link", str(barrier), i) for i in range(2)]
    deadline = time.monotonic() + 180
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    assert all(r["default"] == "native" and r["native"] for r in results)
    assert len(_entries(cache)) == 1  # one published entry; the loser's private directory is gone
    for result in results:
        _assert_python_values(result)


# -- bit for bit -------------------------------------------------------------------------------------
def _load(name: str) -> RobotModel:
    if name in URDF_ARMS:
        path, tip, _ = URDF_ARMS[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return rd.load_robot(str(EXAMPLE_ROBOTS / path), tip_link=tip)
    return rd.load_robot(name)


@pytest.mark.parametrize("name", ["puma560", "ur5", "panda"])
def test_native_gives_the_python_values_bit_for_bit(name: str) -> None:
    """Same traced programs, IEEE operations without contraction, the same sin/cos per path (the C
    library's for one state, the table method for a batch): equal to the last bit. The smooth
    friction's vector tanh is within 1e-15 of the C library's."""
    model = _load(name)
    if native.load(model) is None:
        pytest.skip("no C compiler on this machine")
    n = model.dof
    q, qd, qdd = random_states(4242, n, 40)
    calls = {
        "inverse dynamics": lambda b, s: rd.inverse_dynamics(model, q[s], qd[s], qdd[s], backend=b),
        "rigid body": lambda b, s: rd.inverse_dynamics(model, q[s], qd[s], qdd[s], friction=False, backend=b),
        "D": lambda b, s: rd.inertia_matrix(model, q[s], backend=b),
        "forward": lambda b, s: rd.forward_dynamics(model, q[s], qd[s], qdd[s], friction=False, backend=b),
        "c": lambda b, s: rd.gravity_torques(model, q[s], backend=b),
        "h": lambda b, s: rd.coriolis_centrifugal(model, q[s], qd[s], backend=b),
    }
    for what, call in calls.items():
        np.testing.assert_array_equal(call("native", slice(None)), call("python", slice(None)), err_msg=what)
        for k in range(q.shape[0]):
            np.testing.assert_array_equal(call("native", k), call("python", k), err_msg=f"{what}, state {k}")
    for k in (slice(None), 0, 1, 2):
        smooth = rd.inverse_dynamics(model, q[k], qd[k], qdd[k], smooth=True, backend="native")
        reference = rd.inverse_dynamics(model, q[k], qd[k], qdd[k], smooth=True, backend="python")
        assert np.abs(smooth - reference).max() <= 1e-15 * max(1.0, np.abs(reference).max())


def test_the_extension_checks_its_arguments() -> None:
    model = rd.load_robot("puma560")
    library = native.load(model)
    if library is None:
        pytest.skip("no C compiler on this machine")
    call = library.single[KernelKey.rnea(motor=library.motors)]
    q, qd, qdd = random_states(4243, 6, 1)
    assert call(q[0], qd[0], qdd[0][:5]) is None  # wrong length: the caller's general path reports
    assert call(q[0], qd[0], qdd[0].astype(np.float32)) is None  # another dtype: converted by the caller
    assert call(q[0], qd[0], np.full(6, np.nan)) is None  # not finite: reported by the caller
    out = np.empty(6)
    assert call(q[0], qd[0], [np.inf, 0, 0, 0, 0, 0], out) == 1
    with pytest.raises(TypeError, match="argument 2 is not a float64 vector of length 6"):
        call(q[0], qd[0], "abcdef", out)
    with pytest.raises(TypeError, match="out is not a writable float64 buffer of 6 values"):
        call(q[0], qd[0], qdd[0], np.empty(5))
    batch = library.batch[KernelKey.rnea(motor=library.motors)]
    with pytest.raises(ValueError, match="argument 1 holds 12 values, expected 3 x 6"):
        batch._function(np.zeros((3, 6)), np.zeros((2, 6)), np.zeros((3, 6)), np.empty((3, 6)))
    with pytest.raises(TypeError, match="expected 4 or 5 arguments, got 3"):
        batch._function(np.zeros((3, 6)), np.zeros((3, 6)), np.empty((3, 6)))


def test_a_damaged_cache_entry_falls_back_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not _native.have_compiler():
        pytest.skip("no C compiler on this machine")
    monkeypatch.setenv(_native.CACHE_ENV, str(tmp_path))
    library = native.load(rd.load_robot("one_axis"))
    assert library is not None
    meta = json.loads((library.directory / _native.MARKER).read_text())
    meta["module"] = "rd_engine_not_this_one"  # the file defines no PyInit_ of that name
    (library.directory / _native.MARKER).write_text(json.dumps(meta))
    monkeypatch.setattr(native, "_loaded", {})  # as in a new process
    model = rd.load_robot("one_axis")
    with pytest.warns(RuntimeWarning, match="loading the native library of 'one_axis' from .* failed"):
        assert native.load(model) is None
    q, qd, qdd = random_states(4244, 1, 4)
    np.testing.assert_array_equal(
        rd.inverse_dynamics(model, q, qd, qdd, backend="native"),
        rd.inverse_dynamics(model, q, qd, qdd, backend="python"),
    )
