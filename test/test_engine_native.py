"""The native backend (C compiled from the engine's traced programs) equals the Python backend to
1e-12 at many random states (single and batch, every public function and variant), agrees with
Pinocchio, caches its libraries on disk, falls back to Python without a compiler, and the friction
fast paths equal the breakdown path.

Each robot's library is compiled once for the test session, into its temporary cache directory.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from engine_reference import (
    EXAMPLE_ROBOTS,
    URDF_ARMS,
    max_relative_error,
    pinocchio_puma560,
    pinocchio_urdf,
    random_states,
)

import robot_dynamics as rd
from robot_dynamics import _native
from robot_dynamics.dynamics import _c_codegen, _dispatch, native
from robot_dynamics.dynamics._kernels import kernels
from robot_dynamics.dynamics.stick_slip import forward_dynamics_with_friction
from robot_dynamics.errors import RobotDynamicsError, StateError
from robot_dynamics.friction import apply_friction
from robot_dynamics.model import DHRow, DHTable, Inertial, RobotModel, from_dh

TOL = 1e-12
ROBOTS = ("puma560", "puma560_modified", "stanford", "panda", "ur5")


def _load(name: str) -> RobotModel:
    if name in URDF_ARMS:
        path, tip, _ = URDF_ARMS[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # off-chain joints held at zero (panda's fingers)
            return rd.load_robot(str(EXAMPLE_ROBOTS / path), tip_link=tip)
    return rd.load_robot(name)


@pytest.fixture(scope="module")
def cache() -> Path:
    """The test session's cache directory (see conftest.py): a library compiled by one test file
    (the default backend compiles each model on first use) is reused by the others."""
    return _native.cache_dir()


@pytest.fixture(scope="module", params=ROBOTS)
def robot(request: pytest.FixtureRequest, cache: Path) -> RobotModel:
    model = _load(request.param)
    library = native.load(model)
    assert library is not None and library.directory.parent == cache / "engine"
    return model


def _close(name: str, a: object, b: object) -> None:
    err = max_relative_error(np.asarray(a), np.asarray(b))
    assert err < TOL, f"{name}: {err:.2e}"


def test_native_equals_python(robot: RobotModel) -> None:
    n = robot.dof
    q, qd, qdd = random_states(40, n, 150)
    w = np.random.default_rng(41).normal(0.0, 10.0, (150, 6))
    tau = np.random.default_rng(42).normal(0.0, 5.0, (150, n))
    single = range(0, 150, 10)

    def both(name: str, call) -> None:  # type: ignore[no-untyped-def]
        _close(f"{name} batch", call(q, qd, qdd, w, tau, "native"), call(q, qd, qdd, w, tau, "python"))
        for k in single:
            args = (q[k], qd[k], qdd[k], w[k], tau[k])
            _close(f"{name} single", call(*args, "native"), call(*args, "python"))

    for motor in (None, False, True):
        for load in (False, True):
            both(
                f"ID motor={motor} load={load}",
                lambda q, qd, qdd, w, t, b, load=load, motor=motor: rd.inverse_dynamics(
                    robot, q, qd, qdd, friction=False, wrench=w if load else None, motor_inertia=motor, backend=b
                ),
            )
            both(
                f"FD motor={motor} load={load}",
                lambda q, qd, qdd, w, t, b, load=load, motor=motor: rd.forward_dynamics(
                    robot, q, qd, t, friction=False, wrench=w if load else None, motor_inertia=motor, backend=b
                ),
            )
        both(
            f"D motor={motor}",
            lambda q, qd, qdd, w, t, b, motor=motor: rd.inertia_matrix(robot, q, motor_inertia=motor, backend=b),
        )
    for smooth, kind in ((None, "tanh"), (True, "tanh"), (True, "linear")):
        both(
            f"ID friction smooth={smooth} {kind}",
            lambda q, qd, qdd, w, t, b, smooth=smooth, kind=kind: rd.inverse_dynamics(
                robot, q, qd, qdd, smooth=smooth, smooth_kind=kind, backend=b
            ),
        )
        both(
            f"ID friction + wrench smooth={smooth} {kind}",
            lambda q, qd, qdd, w, t, b, smooth=smooth, kind=kind: rd.inverse_dynamics(
                robot, q, qd, qdd, wrench=w, smooth=smooth, smooth_kind=kind, backend=b
            ),
        )
    both("c", lambda q, qd, qdd, w, t, b: rd.gravity_torques(robot, q, backend=b))
    both("h", lambda q, qd, qdd, w, t, b: rd.coriolis_centrifugal(robot, q, qd, backend=b))
    both("h_ikm", lambda q, qd, qdd, w, t, b: rd.coriolis_tensor(robot, q, backend=b))
    for gravity in (True, False):
        both(
            f"reactions gravity={gravity}",
            lambda q, qd, qdd, w, t, b, gravity=gravity: np.concatenate(
                [
                    x.reshape(*np.shape(q)[:-1], -1)
                    for x in rd.rnea_with_reactions(robot, q, qd, qdd, wrench=w, gravity=gravity, backend=b)
                ],
                axis=-1,
            ),
        )
    parts = ("total", "inertial", "coriolis_centrifugal", "gravity", "friction", "motor_inertia", "tool_wrench")
    native_parts = rd.inverse_dynamics(robot, q, qd, qdd, wrench=w, breakdown=True, backend="native")
    python_parts = rd.inverse_dynamics(robot, q, qd, qdd, wrench=w, breakdown=True, backend="python")
    for part in parts:
        _close(f"breakdown {part}", getattr(native_parts, part), getattr(python_parts, part))


def _native_result(name: str, model: RobotModel, q, qd, qdd, tau, k):  # type: ignore[no-untyped-def]
    if name == "rnea":
        return rd.inverse_dynamics(model, q[k], qd[k], qdd[k], friction=False, backend="native")
    if name == "crba":
        return rd.inertia_matrix(model, q[k], backend="native")
    if name == "gravity":
        return rd.gravity_torques(model, q[k], backend="native")
    if name == "nle":
        return rd.coriolis_centrifugal(model, q[k], qd[k], backend="native") + rd.gravity_torques(
            model, q[k], backend="native"
        )
    return rd.forward_dynamics(model, q[k], qd[k], tau[k], friction=False, backend="native")


def test_native_matches_pinocchio(cache: Path) -> None:
    pin = pytest.importorskip("pinocchio")
    for model, pm in ((rd.load_robot("puma560"), pinocchio_puma560()), (_load("panda"), pinocchio_urdf("panda"))):
        data = pm.createData()
        q, qd, qdd = random_states(50, model.dof, 100)
        tau = np.random.default_rng(51).normal(0.0, 5.0, (100, model.dof))
        ref = {
            "rnea": [pin.rnea(pm, data, *s).copy() for s in zip(q, qd, qdd, strict=True)],
            "crba": [],
            "gravity": [pin.computeGeneralizedGravity(pm, data, a).copy() for a in q],
            "nle": [pin.nonLinearEffects(pm, data, a, b).copy() for a, b in zip(q, qd, strict=True)],
            "aba": [pin.aba(pm, data, *s).copy() for s in zip(q, qd, tau, strict=True)],
        }
        for a in q:
            M = pin.crba(pm, data, a).copy()
            ref["crba"].append(np.triu(M) + np.triu(M, 1).T)
        all_states = np.arange(100)
        for name, expected in ref.items():
            expected_array = np.array(expected)
            batch = _native_result(name, model, q, qd, qdd, tau, all_states)
            assert max_relative_error(batch, expected_array) < 1e-9, (model.name, name)
            for k in range(0, 100, 7):  # single
                single = _native_result(name, model, q, qd, qdd, tau, k)
                assert max_relative_error(single, expected_array[k]) < 1e-9, (model.name, name, k)


def _everything() -> RobotModel:
    from test_friction_fast import everything

    return everything()


@pytest.mark.parametrize("name", ["puma560", "puma560_modified", "everything"])
def test_friction_fast_paths_equal_the_breakdown(name: str, cache: Path) -> None:
    """``inverse_dynamics(friction=True)`` without breakdown (the compiled friction program for one
    state, ``friction_total`` for a batch, friction fused into C on the native path) equals the
    breakdown path (``apply_friction``) for every smoothing variant, with and without a tool load."""
    model = _everything() if name == "everything" else rd.load_robot(name)
    n = model.dof
    q, qd, qdd = random_states(60, n, 120, scale=0.5)
    rng = np.random.default_rng(61)
    qd[rng.uniform(size=qd.shape) < 0.15] = 0.0  # joints at rest
    qd[:15] *= 1e-3  # inside the smoothing windows
    w = rng.normal(0.0, 10.0, (120, 6))
    for smooth, kind in ((None, "tanh"), (False, "tanh"), (True, "tanh"), (True, "linear")):
        for load in (None, w):
            reference = rd.inverse_dynamics(
                model, q, qd, qdd, wrench=load, smooth=smooth, smooth_kind=kind, breakdown=True, backend="python"
            )
            assert reference.friction_terms is not None
            for backend in ("python", "native"):
                fast = rd.inverse_dynamics(
                    model, q, qd, qdd, wrench=load, smooth=smooth, smooth_kind=kind, backend=backend
                )
                _close(f"{name} {backend} batch {kind} {smooth}", fast, reference.total)
                for k in range(0, 120, 6):
                    one = rd.inverse_dynamics(
                        model,
                        q[k],
                        qd[k],
                        qdd[k],
                        wrench=None if load is None else load[k],
                        smooth=smooth,
                        smooth_kind=kind,
                        backend=backend,
                    )
                    _close(f"{name} {backend} single {kind} {smooth}", one, reference.total[k])
    # smooth_kind reaches the friction package: the linear window differs from tanh inside it
    tanh = rd.inverse_dynamics(model, q[:15], qd[:15], qdd[:15], smooth=True)
    linear = rd.inverse_dynamics(model, q[:15], qd[:15], qdd[:15], smooth=True, smooth_kind="linear")
    tau_joint = rd.inverse_dynamics(model, q[:15], qd[:15], qdd[:15], friction=False)
    if model.has_friction and not rd.needs_reactions(model):
        expected = tau_joint + apply_friction(model, qd[:15], tau_joint, smooth=True, smooth_kind="linear").total
        _close("linear window", linear, expected)
    assert np.abs(tanh - linear).max() > 1e-6
    with pytest.raises(ValueError, match="smooth_kind must be one of"):
        rd.inverse_dynamics(model, q[0], qd[0], qdd[0], smooth=True, smooth_kind="cubic")
    with pytest.raises(ValueError, match="smooth_kind must be one of"):
        rd.inverse_dynamics(model, q[0], qd[0], qdd[0], smooth=True, smooth_kind="cubic", backend="native")


def test_forward_friction_passes_the_tool_load_to_the_stick_slip_solver(cache: Path) -> None:
    """With load-dependent friction the wrench must reach the bearing reactions and transmissions:
    forward dynamics inverts inverse dynamics (both with friction and the load); subtracting J^T w
    from the torque instead does not."""
    model = rd.load_robot("puma560_modified")
    q, qd, qdd = random_states(70, 6, 40, scale=1.0)
    w = np.random.default_rng(71).normal(0.0, 20.0, (40, 6))
    for backend in ("python", "native"):
        tau = rd.inverse_dynamics(model, q, qd, qdd, wrench=w, backend=backend)
        back = rd.forward_dynamics(model, q, qd, tau, wrench=w, backend=backend)
        assert np.abs(back - qdd).max() < 1e-9
        np.testing.assert_array_equal(back, forward_dynamics_with_friction(model, q, qd, tau, wrench=w))
        one = rd.forward_dynamics(model, q[3], qd[3], tau[3], wrench=w[3], backend=backend)
        assert np.abs(one - qdd[3]).max() < 1e-9
    jtw = rd.inverse_dynamics(model, q, qd, qdd, friction=False, wrench=w) - rd.inverse_dynamics(
        model, q, qd, qdd, friction=False
    )
    assert np.abs(forward_dynamics_with_friction(model, q, qd, tau - jtw) - qdd).max() > 1e-3


def test_native_input_checks_and_odd_inputs(cache: Path) -> None:
    model = rd.load_robot("puma560")
    q, qd, qdd = random_states(80, 6, 3)
    expected = rd.inverse_dynamics(model, q[0], qd[0], qdd[0], backend="python")
    for args in (
        (list(q[0]), list(qd[0]), list(qdd[0])),
        (q.T[:, 0], qd.T[:, 0], qdd.T[:, 0]),  # non-contiguous views
        (q[0].astype(np.float32), qd[0], qdd[0].astype(np.int64)),  # other dtypes are converted
    ):
        reference = rd.inverse_dynamics(model, *(np.asarray(a, dtype=float) for a in args), backend="python")
        _close("odd single input", rd.inverse_dynamics(model, *args, backend="native"), reference)
    _close("list input", rd.inverse_dynamics(model, list(q[0]), qd[0], qdd[0], backend="native"), expected)
    assert rd.inverse_dynamics(model, q[:1], qd[:1], qdd[:1], backend="native").shape == (1, 6)
    bad = qdd[0].copy()
    bad[2] = np.nan
    with pytest.raises(StateError, match=r"qdd: non-finite values .* index 2"):
        rd.inverse_dynamics(model, q[0], qd[0], bad, backend="native")
    with pytest.raises(StateError, match=r"q: expected shape \(6,\) or \(N, 6\)"):
        rd.inertia_matrix(model, np.zeros(5), backend="native")
    with pytest.raises(StateError, match="backend: expected None, 'python' or 'native', got 'fast'"):
        rd.inertia_matrix(model, q[0], backend="fast")
    with pytest.raises(StateError, match="'generated' is not an engine backend"):
        rd.forward_dynamics(model, q[0], qd[0], qdd[0], backend="generated")
    massless = from_dh("massless", DHTable("standard", (DHRow("revolute", 1.0, 0.0, 0.0, 0.0),)), [Inertial()])
    for call in (
        lambda: rd.forward_dynamics(massless, [0.1], [0.0], [1.0], backend="native"),
        lambda: rd.forward_dynamics(massless, np.array([0.1]), np.array([0.0]), np.array([1.0]), backend="native"),
        lambda: rd.forward_dynamics(
            massless, np.full((3, 1), 0.1), np.zeros((3, 1)), np.ones((3, 1)), backend="native"
        ),
    ):
        with pytest.raises(StateError, match="not positive definite"):
            call()


def test_threads_use_their_own_buffers(cache: Path) -> None:
    model = rd.load_robot("puma560")
    q, qd, qdd = random_states(90, 6, 200)
    expected = rd.inverse_dynamics(model, q, qd, qdd, backend="python")
    results: dict[int, np.ndarray] = {}

    def work(offset: int) -> None:
        order = np.roll(np.arange(200), offset * 37)
        out = np.empty((200, 6))
        for k in order:
            out[k] = rd.inverse_dynamics(model, q[k], qd[k], qdd[k], backend="native")
        results[offset] = out

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for out in results.values():
        _close("threaded", out, expected)
    assert len(results) == 4


def test_large_batches_split_over_threads_give_the_same_values(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch of at least 2 x 4096 states runs on several threads, each on whole lane blocks; every
    state is computed alone, so any split gives the one-thread values bit for bit (and the Python
    batch's). Odd sizes and thread counts exercise the runs' ends; a wrong offset would leave parts
    of the uninitialised output or repeat states."""
    model = _load("panda")
    n = model.dof
    q, qd, qdd = random_states(130, n, 3 * 4096 + 7)
    calls = {
        "ID": lambda: rd.inverse_dynamics(model, q, qd, qdd, backend="native"),
        "D": lambda: rd.inertia_matrix(model, q, backend="native"),
        "FD": lambda: rd.forward_dynamics(model, q, qd, qdd, friction=False, backend="native"),
    }
    try:
        rd.set_batch_threads(1)
        expected = {what: call() for what, call in calls.items()}
        np.testing.assert_array_equal(expected["D"], rd.inertia_matrix(model, q, backend="python"))
        for threads in (2, 3, 7):
            rd.set_batch_threads(threads)
            for what, call in calls.items():
                np.testing.assert_array_equal(call(), expected[what], err_msg=f"{what}, {threads} threads")
    finally:
        rd.set_batch_threads(None)
    monkeypatch.setenv(native.THREADS_ENV, "3")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert rd.batch_threads() == 3
    monkeypatch.delenv(native.THREADS_ENV)
    assert rd.batch_threads() == 1  # Dask's workers set OMP_NUM_THREADS to their share
    monkeypatch.setenv("OMP_NUM_THREADS", "4,2")  # OpenMP's nested form: the first level
    assert rd.batch_threads() == 4
    monkeypatch.delenv("OMP_NUM_THREADS")
    cpus = rd.batch_threads()
    assert cpus >= 1
    for ignored in ("", "0", "many"):  # not a count: passed over, as OpenMP runtimes do
        monkeypatch.setenv("OMP_NUM_THREADS", ignored)
        assert rd.batch_threads() == cpus
    monkeypatch.delenv("OMP_NUM_THREADS")
    rd.set_batch_threads(2)
    assert rd.batch_threads() == 2
    rd.set_batch_threads(None)
    monkeypatch.setenv(native.THREADS_ENV, "two")
    with pytest.raises(RobotDynamicsError, match=r"\$ROBOT_DYNAMICS_THREADS must be a positive integer, not 'two'"):
        rd.batch_threads()
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="positive integer"):
            rd.set_batch_threads(bad)  # type: ignore[arg-type]
    library = native.load(model)
    assert library is not None
    batch = library.batch[_dispatch.INERTIA[library.motors]]
    with pytest.raises(ValueError, match="threads must be at least 1"):
        batch._function(q, np.empty((q.shape[0], n * n)), 0)


def test_large_batch_outputs_are_reused_once_freed_and_never_while_alive(cache: Path) -> None:
    """Outputs of 16 MB and more come from a small pool: a freed result's block serves the next batch
    of its size (no fresh pages to fault in and zero), while a result, or a view of it, that is still
    alive is never handed out again."""
    model = _load("panda")
    n = model.dof
    q = random_states(132, n, 50_000)[0]  # D: 50k x 49 doubles = 19.6 MB
    expected = rd.inertia_matrix(model, q, backend="python")

    def address(a: np.ndarray) -> int:
        return int(a.__array_interface__["data"][0])

    first = rd.inertia_matrix(model, q, backend="native")
    second = rd.inertia_matrix(model, q[::-1].copy(), backend="native")
    assert address(first) != address(second)  # both alive: two blocks
    np.testing.assert_array_equal(first, expected)
    np.testing.assert_array_equal(second, expected[::-1])
    kept = address(first)
    view = first[10:20]  # a view keeps the block alive
    del first
    third = rd.inertia_matrix(model, q, backend="native")
    assert address(third) not in (kept, address(second))
    np.testing.assert_array_equal(view, expected[10:20])
    del view, second
    fourth = rd.inertia_matrix(model, q, backend="native")
    assert address(fourth) == kept  # the first free slot: the block of the first result
    np.testing.assert_array_equal(fourth, expected)
    freed = address(third)
    del third
    fifth = rd.inertia_matrix(model, q, backend="native")
    assert address(fifth) == freed  # the block freed last is taken again
    np.testing.assert_array_equal(fifth, expected)


def test_batch_sin_cos_on_whole_vectors_and_beyond_the_table(cache: Path) -> None:
    """A batch evaluates sin/cos a vector of lanes at a time; a block with any angle beyond the
    table's range (|q| > 1e5) takes the C library lane by lane, and a block of equal angles is
    computed once. Each gives the Python batch's values bit for bit."""
    model = rd.load_robot("puma560")
    rng = np.random.default_rng(131)
    q = rng.uniform(-10.0, 10.0, (64, 6))
    q[5, 2] = 2.5e5  # one lane of one block beyond the table
    q[17, :] = -3e7
    q[40:44] = q[40]  # a block of one state repeated
    q[50, 1] = 1e5  # at the limit: still the table
    for call in (
        lambda b: rd.inertia_matrix(model, q, backend=b),
        lambda b: rd.gravity_torques(model, q, backend=b),
    ):
        np.testing.assert_array_equal(call("native"), call("python"))


def test_the_default_backend_is_resolved_again_when_it_changes(cache: Path) -> None:
    """``backend=None`` on a model that was not prepared remembers what the process default gave it,
    until the default changes."""
    model = rd.load_robot("fu_two_link")
    K = kernels(model)
    q = np.array([0.3, -0.2])
    previous = rd.set_default_backend("native")
    try:
        expected = rd.inertia_matrix(model, q, backend="python")
        np.testing.assert_array_equal(rd.inertia_matrix(model, q), expected)
        assert isinstance(K.default_native, native.NativeModel)
        rd.set_default_backend("python")
        np.testing.assert_array_equal(rd.inertia_matrix(model, q), expected)
        assert K.default_native is None and K.default_for == "python"
        rd.set_default_backend("native")
        rd.inertia_matrix(model, q)
        assert isinstance(K.default_native, native.NativeModel)
    finally:
        rd.set_default_backend(previous)


def test_backend_selection(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_dispatch, "_default", None)
    monkeypatch.delenv(_dispatch.BACKEND_ENV, raising=False)
    monkeypatch.setenv(_native.BACKEND_ENV, "python")  # the default is "auto" (test_engine_auto_backend.py)
    model = rd.load_robot("puma560")
    K = kernels(model)
    q, qd, qdd = random_states(95, 6, 1)
    assert rd.default_backend() == "python"
    rd.inverse_dynamics(model, q[0], qd[0], qdd[0])
    assert K.native_library is None  # RD_BACKEND=python: nothing compiled or loaded
    assert rd.prepare(model) == "native" and K.native is not None
    _close("prepared", rd.inverse_dynamics(model, q, qd, qdd), rd.inverse_dynamics(model, q, qd, qdd, backend="python"))
    assert rd.prepare(model, "python") == "python" and K.native is None
    other = rd.load_robot("puma560")
    previous = rd.set_default_backend("native")
    try:
        assert previous == "python" and rd.default_backend() == "native"
        rd.inertia_matrix(other, q[0])
        assert isinstance(kernels(other).native_library, native.NativeModel)
        assert kernels(other).native_library is K.native_library  # equal models share the library
        pinned = rd.load_robot("puma560")
        assert rd.prepare(pinned, "python") == "python"
        rd.inertia_matrix(pinned, q[0])
        assert kernels(pinned).native_library is None  # pinned to Python despite the default
    finally:
        rd.set_default_backend(previous)
    with pytest.raises(StateError, match="process default can be 'python', 'native' or 'auto'"):
        rd.set_default_backend("generated")
    with pytest.raises(StateError, match="backend: expected"):
        rd.prepare(model, "cuda")
    monkeypatch.setattr(_dispatch, "_default", None)
    monkeypatch.setenv(_dispatch.BACKEND_ENV, "native")
    assert rd.default_backend() == "native"
    monkeypatch.setattr(_dispatch, "_default", "python")


def test_cache_is_reused_and_keyed_by_the_model(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = rd.load_robot("fu_two_link")
    first = native.load(model)
    assert first is not None
    meta = first.meta
    assert meta["robot"] == "fu_two_link" and meta["fingerprint"] == model.fingerprint()
    assert (first.directory / "engine.c").read_text().count("static void k") >= 8

    def no_build(*args: object) -> None:
        raise AssertionError("rebuilt although the cache is valid")

    monkeypatch.setattr(native, "_build", no_build)
    monkeypatch.setattr(native, "_loaded", {})  # a new process: nothing in memory
    again = native.load(rd.load_robot("fu_two_link"))
    assert again is not None and again is not first and again.directory == first.directory
    assert again.meta["created"] == meta["created"]
    monkeypatch.undo()
    j1, j2 = model.joints
    heavier = model.with_changes(joints=(j1, replace(j2, link=replace(j2.link, mass=2.5))))
    other = native.load(heavier)
    assert other is not None and other.directory != first.directory
    q, qd, qdd = random_states(96, 2, 20)
    _close(
        "changed model",
        rd.inverse_dynamics(heavier, q, qd, qdd, backend="native"),
        rd.inverse_dynamics(heavier, q, qd, qdd, backend="python"),
    )


def test_without_a_compiler_python_is_used_with_one_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "no-such-compiler-xyz")
    monkeypatch.setenv(_native.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(native, "_warned", [False])
    model = rd.load_robot("one_axis")
    q, qd, qdd = random_states(97, 1, 5)
    with pytest.warns(RuntimeWarning, match="native backend needs a C compiler and 'no-such-compiler-xyz'"):
        assert rd.prepare(model) == "python"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        again = rd.load_robot("one_axis")
        np.testing.assert_array_equal(
            rd.inverse_dynamics(again, q, qd, qdd, backend="native"),
            rd.inverse_dynamics(again, q, qd, qdd, backend="python"),
        )
    assert kernels(again).native_library is False


def test_a_failing_compiler_falls_back_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "cc-broken"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'unsupported vector extension' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    monkeypatch.setenv(_native.CACHE_ENV, str(tmp_path / "cache"))
    model = rd.load_robot("one_axis")
    with pytest.warns(RuntimeWarning, match="(?s)building the native library of 'one_axis' failed.*unsupported vector"):
        assert rd.prepare(model) == "python"
    q, qd, qdd = random_states(99, 1, 3)
    np.testing.assert_array_equal(
        rd.inverse_dynamics(model, q, qd, qdd, backend="native"), rd.inverse_dynamics(model, q, qd, qdd)
    )


@pytest.mark.parametrize("lanes", ["2", "4"])
def test_vector_widths_and_short_batches(lanes: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The baseline two-lane build and the default build give the Python values for batches of
    every length (the last, short block of lanes repeats its last state) and one state."""
    monkeypatch.setenv(_native.CACHE_ENV, str(tmp_path))
    monkeypatch.setenv("ROBOT_DYNAMICS_NATIVE_LANES", lanes)
    native.vector_lanes.cache_clear()
    try:
        model = rd.load_robot("puma560_modified")
        library = native.load(model)
        assert library is not None and library.meta["lanes"] in ((2,) if lanes == "2" else (2, 4))
        q, qd, qdd = random_states(98, 6, 9)
        for count in (1, 2, 3, 5, 9):
            for call in (
                lambda b, c=count: rd.inverse_dynamics(model, q[:c], qd[:c], qdd[:c], backend=b),
                lambda b, c=count: rd.inertia_matrix(model, q[:c], backend=b),
                lambda b, c=count: rd.forward_dynamics(model, q[:c], qd[:c], qdd[:c], friction=False, backend=b),
            ):
                _close(f"batch of {count}", call("native"), call("python"))
        _close(
            "single",
            rd.inverse_dynamics(model, q[0], qd[0], qdd[0], backend="native"),
            rd.inverse_dynamics(model, q[0], qd[0], qdd[0], backend="python"),
        )
    finally:
        native.vector_lanes.cache_clear()


def test_vector_tanh_matches_the_c_library(tmp_path: Path) -> None:
    """The branch-free vector tanh of the smooth friction (exp by Estrin's scheme) is within 4e-16 of
    ``math.tanh`` everywhere, exactly +-1 beyond |x| = 19.1, and keeps the sign of zero."""
    import ctypes
    import math

    lanes, flags = native.vector_lanes()
    harness = """
void vtanh(long count, const double *x, double *y)
{
    for (long i = 0; i + RD_LANES <= count; i += RD_LANES) {
        rd_v v;
        for (int l = 0; l < RD_LANES; ++l) v[l] = x[i + l];
        const rd_v r = rd_vtanh(v);
        for (int l = 0; l < RD_LANES; ++l) y[i + l] = r[l];
    }
}
"""
    source = tmp_path / "vtanh.c"
    source.write_text(_c_codegen.prelude(lanes) + harness)
    library = _native.compile_shared(source, tmp_path / "libvtanh.so", flags=(*native.FLAGS, *flags))
    function = ctypes.CDLL(str(library)).vtanh
    function.argtypes = [ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    function.restype = None
    tiny = np.geomspace(1e-300, 1e3, 4000)
    x = np.concatenate(
        [np.linspace(-30, 30, 40001), tiny, -tiny, [0.0, -0.0, 1e308, -1e308, 5e-324, 19.1, 22.0, 710.0]]
    )
    x = np.ascontiguousarray(x[: len(x) // 4 * 4])
    y = np.empty_like(x)
    function(len(x), x.ctypes.data, y.ctypes.data)
    expected = np.array([math.tanh(v) for v in x])
    assert np.abs(y - expected).max() < 4e-16
    assert np.array_equal(np.signbit(y), np.signbit(expected))
    assert np.all(np.abs(y[np.abs(x) > 19.1]) == 1.0)
