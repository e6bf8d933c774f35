"""Backend selection and the native backend: the engine's traced programs compiled to C.

Backends of the engine's public functions (``backend=`` argument):

* ``"python"`` (also ``"numeric"``): the traced straight-line programs run as Python — floats for one
  state, NumPy rows for a batch (:mod:`._kernels`). Nothing to build; the default.
* ``"native"``: the same traced programs emitted as C (:mod:`._c_codegen`), compiled with the system
  compiler into a shared library per model, cached on disk (:mod:`robot_dynamics._native`) and
  called through ``ctypes``: one state in a preallocated per-thread buffer, a batch in one call that
  loops in C (without the GIL). Friction is translated from the friction package's generated
  single-state program and fused into the same C call.
* ``None``: the model's prepared backend (:func:`prepare`), else the process default
  (:func:`set_default_backend`, initially ``$ROBOT_DYNAMICS_BACKEND`` or ``"python"``).

The default stays ``"python"`` so that a library call never compiles behind the caller's back (the
first native use of a model costs ~0.3-2 s of tracing and compiling, once per model and machine;
later processes load the cached library in milliseconds). Long-running users — ROS nodes,
benchmarks, batch jobs — opt in with ``prepare(model)`` (per model, compiles now) or
``set_default_backend("native")`` (process-wide). Without a C compiler (and no cached library), the
native backend warns once and the Python backend is used.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import platform
import re
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native
from ..errors import RobotDynamicsError, StateError
from ..model import FloatArray, RobotModel
from . import _c_codegen
from ._c_codegen import Entry, NotTranslatable

if TYPE_CHECKING:
    from ._kernels import ModelKernels

BACKEND_ENV = "ROBOT_DYNAMICS_BACKEND"
BACKENDS = ("python", "native")
GENERATED = (
    "backend: 'generated' is not an engine backend; for the symbolic package's generated code use "
    "robot_dynamics.symbolic.get_backend(model).inverse_dynamics(q, qd, qdd)"
)
FLAGS: tuple[str, ...] = ("-O2", "-fno-math-errno", "-ffp-contract=off")
"""Compiler flags: no contraction into fused multiply-adds, so every lane rounds like the Python program."""
FRICTION_VARIANTS = ("exact", "tanh", "linear")  # smooth=False, smooth=True with smooth_kind
_SUBDIR = "engine"
_LIBRARY = "libengine.so"
_GENERATOR_FILES = {
    "dynamics": (
        "_trace.py",
        "_kernels.py",
        "_chain.py",
        "_vector.py",
        "_sincos.py",
        "rnea.py",
        "crba.py",
        "forward.py",
        "_c_codegen.py",
        "native.py",
    ),
    "friction": ("_scalar.py", "parameters.py", "smooth.py"),
    "": ("model.py", "_native.py"),
}

Key = tuple[Any, ...]

_default: list[str] = ["python"]
_default_checked = [False]
_loaded: dict[str, NativeModel] = {}  # by library directory: shared by equal models
_build_lock = threading.Lock()
_warned = [False]


# -- selection ------------------------------------------------------------------------------------
def _check_name(backend: str, what: str = "backend") -> str:
    name = "python" if backend == "numeric" else backend
    if name == "generated":
        raise StateError(GENERATED.replace("backend", what, 1))
    if name not in BACKENDS:
        raise StateError(f"{what}: expected None, 'python' or 'native', got {backend!r}")
    return name


def default_backend() -> str:
    """The process-wide backend for ``backend=None`` on models that were not :func:`prepare` d."""
    if not _default_checked[0]:
        _default_checked[0] = True
        env = os.environ.get(BACKEND_ENV)
        if env:
            _default[0] = _check_name(env, f"${BACKEND_ENV}")
    return _default[0]


def set_default_backend(backend: str) -> str:
    """Set the process-wide default backend (``"python"`` or ``"native"``); returns the previous one."""
    if backend == "generated":
        raise StateError(f"backend: the process default can be 'python' or 'native'. {GENERATED}")
    name = _check_name(backend)
    previous = default_backend()
    _default[0] = name
    return previous


def prepare(model: RobotModel, backend: str = "native") -> str:
    """Make ``backend`` the model's backend for calls with ``backend=None``, building it now.

    ``"native"`` traces and compiles the model's library (or loads it from the cache); returns the
    backend in effect: ``"native"``, or ``"python"`` when no C compiler is available (warned once).
    ``"python"`` pins the model to the Python backend (whatever the process default).
    """
    from ._kernels import kernels

    name = _check_name(backend)
    K = kernels(model)
    K.pinned_python = name == "python"
    if name == "python":
        K.native = None
        return "python"
    library = load(model, K)
    K.native = library
    return "native" if library is not None else "python"


def resolve(model: RobotModel, K: ModelKernels, backend: str | None) -> NativeModel | None:
    """The native library to use for a call (``None``: the Python programs)."""
    if backend is None:
        if K.native is not None:
            return K.native
        if K.pinned_python or (_default[0] == "python" and _default_checked[0]):
            return None
        backend = default_backend()
    if backend == "native":
        library = K.native_library
        if library is None:
            return load(model, K)
        return library if isinstance(library, NativeModel) else None
    _check_name(backend)
    return None


# -- the library of one model ---------------------------------------------------------------------
def rnea_key(
    velocity: bool = True,
    acceleration: bool = True,
    gravity: bool = True,
    motor: bool = False,
    load: bool = False,
    reactions: bool = False,
) -> Key:
    """The kernel key of a Newton–Euler variant (as :meth:`._kernels.ModelKernels.rnea` uses it)."""
    return ("rnea", velocity, acceleration, gravity, motor, load, reactions)


def _alias(key: Key, motors: bool) -> Key:
    """Without motor inertia the motor switch changes nothing: map ``motor=True`` keys to ``False``."""
    if motors:
        return key
    if key[0] == "rnea" and key[4]:
        return (*key[:4], False, *key[5:])
    if key[0] in ("forward", "inertia", "id_friction") and key[1]:
        return (key[0], False, *key[2:])
    return key


@functools.cache
def vector_lanes() -> tuple[int, tuple[str, ...]]:
    """``(lanes, extra flags)``: 4 doubles per vector with AVX2 (x86-64 CPUs that have it, Linux), else 2
    (SSE2, or NEON on ARM). ``$ROBOT_DYNAMICS_NATIVE_LANES=2`` forces the baseline."""
    if os.environ.get("ROBOT_DYNAMICS_NATIVE_LANES") == "2":
        return 2, ()
    if platform.machine().lower() in ("x86_64", "amd64"):
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
        if re.search(r"^flags\s*:.*\bavx2\b", cpuinfo, re.MULTILINE):
            return 4, ("-mavx2",)
    return 2, ()


def _cache_key(model: RobotModel) -> str:
    here = Path(__file__).resolve().parent
    sources = [
        _native.files_hash(here.parent / sub if sub else here.parent, names) for sub, names in _GENERATOR_FILES.items()
    ]
    lanes, extra = vector_lanes()
    flags = " ".join([*FLAGS, *extra])
    return _native.hash_key(["engine-native", model.fingerprint(), *sources, flags, str(lanes), _native.toolchain()])


def _build(model: RobotModel, K: ModelKernels, target: Path) -> None:
    """Trace the kernels, emit C, compile into ``target`` and write ``meta.json`` (last).

    Ten traced programs are compiled: Newton–Euler with/without tool load and reactions, D, c, h, the
    gravity-free reactions, and forward dynamics (with/without tool load) for the model's motor-inertia
    setting. The other motor-inertia variants, the other forward dynamics (Newton–Euler bias + D +
    Cholesky), h_ikm (probing h) and inverse dynamics with friction are small C functions calling
    them, so the library compiles in one to two seconds.
    """
    start = time.perf_counter()
    lanes, extra_flags = vector_lanes()
    n = K.n
    reflected = [float(x) for x in K.reflected_motor_inertia]
    motors = any(x != 0.0 for x in reflected)
    motor_options = (False, True) if motors else (False,)
    functions: list[str] = []
    entries: list[Entry] = []
    meta_entries: list[dict[str, Any]] = []
    compiled: dict[Key, tuple[str, tuple[int, ...], int]] = {}  # public key -> C function, inputs, outputs

    def add(key: Key, function: str, inputs: tuple[int, ...], outputs: int) -> None:
        compiled[key] = (function, inputs, outputs)
        symbol = f"e{len(entries)}"
        entries.append(Entry(symbol, function, inputs, outputs))
        meta_entries.append({"symbol": symbol, "key": list(key), "inputs": list(inputs), "outputs": outputs})

    traced = [rnea_key(load=load, reactions=reactions) for load in (False, True) for reactions in (False, True)]
    traced += [
        ("inertia", False),
        rnea_key(velocity=False, acceleration=False),  # c, gravity_torques
        rnea_key(acceleration=False, gravity=False),  # h, coriolis_centrifugal
        rnea_key(gravity=False, reactions=True),  # unit reactions of the stick-slip solver
    ]
    for load in (False, True):
        key = ("forward", K.motor_inertia_in_d and motors, load)
        try:
            K.kernel(key)
        except (ValueError, ZeroDivisionError):  # a pivot that is a constant 0: the composite reports it
            continue
        traced.append(key)
    for index, key in enumerate(traced):
        kernel = K.kernel(key)
        functions.append(_c_codegen.kernel_function(f"k{index}", kernel.program))
        add(key, f"k{index}", tuple(len(names) for _, names in kernel.program.inputs), kernel.n_outputs)
    if motors:
        for load in (False, True):
            for reactions in (False, True):
                rigid, inputs, outputs = compiled[rnea_key(load=load, reactions=reactions)]
                name = f"rnea_motor_{int(load)}{int(reactions)}"
                arguments = ["in_q", "in_qd", "in_qdd", *(["in_w"] if load else [])]
                functions.append(_c_codegen.motor_function(name, rigid, arguments, reflected))
                add(rnea_key(motor=True, load=load, reactions=reactions), name, inputs, outputs)
        functions.append(_c_codegen.inertia_motor_function("inertia_motor", compiled[("inertia", False)][0], reflected))
        add(("inertia", True), "inertia_motor", (n,), n * n)
    for motor in motor_options:
        for load in (False, True):
            if ("forward", motor, load) in compiled:  # traced
                continue
            name = f"forward_{int(motor)}{int(load)}"
            bias = compiled[rnea_key(load=load)][0]
            inertia = compiled[("inertia", motor)][0]
            functions.append(_c_codegen.forward_function(name, n, bias, inertia, load))
            add(("forward", motor, load), name, (n, n, n, *((6,) if load else ())), n)
    functions.append(_c_codegen.coriolis_tensor_function("coriolis_tensor", n, compiled[traced[6]][0]))
    add(("coriolis_tensor",), "coriolis_tensor", (n,), n * n * n)

    friction_note = "model without friction"
    if model.has_friction:
        from ..friction._scalar import scalar_source
        from ..friction.parameters import friction_parameters

        p = friction_parameters(model)
        reactions = K.needs_reactions(model)
        try:
            sources = {
                variant: _c_codegen.friction_function(
                    f"friction_{variant}",
                    scalar_source(p, variant != "exact", "tanh" if variant == "exact" else variant, True),
                )
                for variant in FRICTION_VARIANTS
            }
        except NotTranslatable as exc:
            friction_note = f"friction kept in Python: {exc}"
        else:
            friction_note = "friction fused in C"
            for translated in sources.values():
                functions += [translated.declarations, translated.definition]
            for motor in motor_options:
                for load in (False, True):
                    rigid, inputs, _ = compiled[rnea_key(motor=motor, load=load, reactions=reactions)]
                    for variant in FRICTION_VARIANTS:
                        name = f"id_friction_{int(motor)}{int(load)}_{variant}"
                        functions.append(
                            _c_codegen.friction_inverse_function(name, n, rigid, f"friction_{variant}", load, reactions)
                        )
                        add(("id_friction", motor, load, variant), name, inputs, n)

    header = (
        f"robot_dynamics native engine library: robot {model.name!r}, {model.dof} joints\n"
        f"model fingerprint {model.fingerprint()}\n"
        "generated from the engine's traced programs (robot_dynamics.dynamics._c_codegen); do not edit"
    )
    source = target / "engine.c"
    source.write_text(_c_codegen.library_source(header, lanes, [f for f in functions if f], entries))
    generated = time.perf_counter()
    _native.compile_shared(source, target / _LIBRARY, flags=(*FLAGS, *extra_flags))
    meta = {
        "robot": model.name,
        "dof": model.dof,
        "lanes": lanes,
        "flags": [*FLAGS, *extra_flags],
        "fingerprint": model.fingerprint(),
        "motors": motors,
        "friction": friction_note,
        "entries": meta_entries,
        "operations": sum(K.kernel(key).operations for key in traced),
        "trace_seconds": round(generated - start, 3),
        "compile_seconds": round(time.perf_counter() - generated, 3),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    (target / _native.MARKER).write_text(json.dumps(meta, indent=1))


def load(model: RobotModel, K: ModelKernels | None = None, *, cache: Path | str | None = None) -> NativeModel | None:
    """The model's native library: loaded from the cache, or traced and compiled first.

    ``None`` (after one warning per process) when it would have to be compiled and no C compiler is
    available. Memoised on the model's kernels and, by library, across equal models.
    """
    if K is None:
        from ._kernels import kernels

        K = kernels(model)
    if K.native_library is not None and cache is None:
        return K.native_library if isinstance(K.native_library, NativeModel) else None
    root = (Path(cache) if cache is not None else _native.cache_dir()) / _SUBDIR
    key = _cache_key(model)
    with _build_lock:
        directory = root / key
        found = _loaded.get(str(directory))
        if found is None:
            if not (directory / _native.MARKER).exists() and not _native.have_compiler():
                if not _warned[0]:
                    _warned[0] = True
                    warnings.warn(
                        f"robot_dynamics: the native backend needs a C compiler and {os.environ.get('CC', 'cc')!r} "
                        "was not found; using the Python backend (set CC to a C compiler)",
                        RuntimeWarning,
                        stacklevel=3,
                    )
                K.native_library = False
                return None
            try:
                directory = _native.publish(root, key, lambda tmp: _build(model, K, tmp))
            except RobotDynamicsError as exc:  # e.g. a compiler without the vector extension
                warnings.warn(
                    f"robot_dynamics: building the native library of {model.name!r} failed; using the Python "
                    f"backend for it. {exc}",
                    RuntimeWarning,
                    stacklevel=3,
                )
                K.native_library = False
                return None
            found = NativeModel(directory, model.dof)
            _loaded[str(directory)] = found
    if cache is None:
        K.native_library = found
    return found


def clear_cache(cache: Path | str | None = None) -> int:
    """Delete the cached native libraries (loaded ones stay usable in this process)."""
    root = (Path(cache) if cache is not None else _native.cache_dir()) / _SUBDIR
    return _native.remove_entries(root)


# -- calling ------------------------------------------------------------------------------------------
_ndarray = np.ndarray


class SingleCall:
    """One entry point for one state: inputs copied into a per-thread buffer, one ctypes call.

    ``fast(*arrays)`` takes NumPy arrays of exactly the input shapes and returns the output array,
    or ``None`` (another type or shape, a non-finite input or output): the caller then takes its
    general path, which validates and reports. ``values(lists)`` runs validated input lists.
    """

    __slots__ = ("_function", "_local", "fast", "n_in", "n_out", "out_shape", "sizes")

    def __init__(
        self, function: Callable[[int], int], sizes: Sequence[int], n_out: int, out_shape: tuple[int, ...] = ()
    ) -> None:
        self._function = function
        self.sizes = tuple(sizes)
        self.n_in = sum(self.sizes)
        self.n_out = n_out
        self.out_shape = out_shape or (n_out,)  # of the arrays fast() returns
        self._local = threading.local()
        self.fast = self._make_fast()

    def _state(self) -> tuple[Any, ...]:
        state = getattr(self._local, "state", None)
        if state is None:
            buffer = np.zeros(self.n_in + self.n_out)
            views = []
            offset = 0
            for size in self.sizes:
                views.append(buffer[offset : offset + size])
                offset += size
            state = (int(buffer.ctypes.data), *views, buffer[self.n_in :].reshape(self.out_shape), buffer)
            self._local.state = state
        return state

    def _make_fast(self) -> Callable[..., FloatArray | None]:
        function, local, allocate = self._function, self._local, self._state
        shapes = [(size,) for size in self.sizes]
        if len(shapes) == 1:
            (s0,) = shapes

            def fast1(a: Any) -> FloatArray | None:
                if type(a) is not _ndarray or a.shape != s0:
                    return None
                try:
                    address, va, out, _ = local.state
                except AttributeError:
                    address, va, out, _ = allocate()
                try:
                    va[...] = a
                except (TypeError, ValueError):
                    return None
                if function(address):
                    return None
                return out.copy()

            return fast1
        if len(shapes) == 2:
            s0, s1 = shapes

            def fast2(a: Any, b: Any) -> FloatArray | None:
                if type(a) is not _ndarray or type(b) is not _ndarray or a.shape != s0 or b.shape != s1:
                    return None
                try:
                    address, va, vb, out, _ = local.state
                except AttributeError:
                    address, va, vb, out, _ = allocate()
                try:
                    va[...] = a
                    vb[...] = b
                except (TypeError, ValueError):
                    return None
                if function(address):
                    return None
                return out.copy()

            return fast2
        if len(shapes) == 3:
            s0, s1, s2 = shapes

            def fast3(a: Any, b: Any, c: Any) -> FloatArray | None:
                if (
                    type(a) is not _ndarray
                    or type(b) is not _ndarray
                    or type(c) is not _ndarray
                    or a.shape != s0
                    or b.shape != s1
                    or c.shape != s2
                ):
                    return None
                try:
                    address, va, vb, vc, out, _ = local.state
                except AttributeError:
                    address, va, vb, vc, out, _ = allocate()
                try:
                    va[...] = a
                    vb[...] = b
                    vc[...] = c
                except (TypeError, ValueError):
                    return None
                if function(address):
                    return None
                return out.copy()

            return fast3

        def fast_any(*arrays: Any) -> FloatArray | None:
            if len(arrays) != len(shapes) or any(
                type(a) is not _ndarray or a.shape != s for a, s in zip(arrays, shapes, strict=True)
            ):
                return None
            return self.values([a.tolist() for a in arrays], strict=True)

        return fast_any

    def values(self, values: Sequence[Sequence[float]], *, strict: bool = False) -> FloatArray | None:
        """Run validated input lists; the output (``None`` only with ``strict`` and a failed check)."""
        state = self._state()
        address, views, out = state[0], state[1:-2], state[-2]
        for view, value in zip(views, values, strict=True):
            view[...] = value
        status = self._function(address)
        if strict and status:
            return None
        return out.reshape(self.n_out).copy()


class BatchCall:
    """One entry point for ``(N, k)`` row-major batches: one ctypes call, the loop runs in C."""

    __slots__ = ("_function", "n_out", "sizes")

    def __init__(self, function: Callable[..., None], sizes: Sequence[int], n_out: int) -> None:
        self._function = function
        self.sizes = tuple(sizes)
        self.n_out = n_out

    def __call__(self, arrays: Sequence[Any]) -> FloatArray:
        blocks = [np.ascontiguousarray(a, dtype=np.float64) for a in arrays]
        count = blocks[0].shape[0]
        out = np.empty((count, self.n_out))
        if count:
            self._function(count, *(int(b.ctypes.data) for b in blocks), int(out.ctypes.data))
        return out


class NativeModel:
    """The loaded native library of one model: its entry points by kernel key."""

    def __init__(self, directory: Path, n: int) -> None:
        self.directory = directory
        self.n = n
        self.meta: dict[str, Any] = json.loads((directory / _native.MARKER).read_text())
        self.motors = bool(self.meta["motors"])
        entries = [(tuple(e["key"]), e["symbol"], tuple(e["inputs"]), int(e["outputs"])) for e in self.meta["entries"]]
        library = directory / _LIBRARY
        pointer = _native.POINTER
        singles = _native.bind(
            library, {f"rd_{symbol}": (ctypes.c_int, [pointer]) for _, symbol, _, _ in entries}, hold_gil=True
        )
        batches = _native.bind(
            library,
            {
                f"rd_{symbol}_batch": (None, [ctypes.c_long, *([pointer] * (len(inputs) + 1))])
                for _, symbol, inputs, _ in entries
            },
        )
        self.single: dict[Key, SingleCall] = {}
        self.batch: dict[Key, BatchCall] = {}
        for key, symbol, inputs, outputs in entries:
            shape = (n, n) if key[0] == "inertia" else ()  # D comes back as a matrix
            self.single[key] = SingleCall(singles[f"rd_{symbol}"], inputs, outputs, shape)
            self.batch[key] = BatchCall(batches[f"rd_{symbol}_batch"], inputs, outputs)
        # the hot single-state entries: inverse dynamics by (motor, friction variant or None); D and
        # forward dynamics by motor switch; c; h
        self.inertia = {motor: self.single[self.key(("inertia", motor))].fast for motor in (False, True)}
        self.forward = {motor: self.single[self.key(("forward", motor, False))].fast for motor in (False, True)}
        self.gravity = self.single[rnea_key(velocity=False, acceleration=False)].fast
        self.velocity_terms = self.single[rnea_key(acceleration=False, gravity=False)].fast
        self.inverse: dict[tuple[bool, str | None], Callable[..., FloatArray | None]] = {}
        for motor in (False, True):
            self.inverse[(motor, None)] = self.single[self.key(rnea_key(motor=motor))].fast
            for variant in FRICTION_VARIANTS:
                fused = self.single.get(self.key(("id_friction", motor, False, variant)))
                if fused is not None:
                    self.inverse[(motor, variant)] = fused.fast
        self.has_friction = any(key[0] == "id_friction" for key, _, _, _ in entries)

    def key(self, key: Key) -> Key:
        """``key`` as the library stores it (motor variants alias when the model has no motors)."""
        return _alias(key, self.motors)

    def run(self, key: Key, batch: bool, values: Sequence[Any]) -> FloatArray | None:
        """Evaluate kernel ``key`` on validated values (lists or ``(N, k)`` arrays); ``None`` if the
        library does not hold it."""
        stored = _alias(key, self.motors)
        if batch:
            call = self.batch.get(stored)
            return None if call is None else call(values)
        single = self.single.get(stored)
        return None if single is None else single.values(values)
