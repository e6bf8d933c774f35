"""The native backend: the engine's traced programs compiled to C, one extension module per model.

The traced programs of :mod:`._kernels` are emitted as C (:mod:`._c_codegen`), wrapped as a CPython
extension module (:mod:`._c_extension`), compiled with the system compiler and cached on disk
(:mod:`robot_dynamics._native`): one state is one ``METH_FASTCALL`` call reading the NumPy arrays
directly, a batch is one call that loops in C (without the GIL for large batches). Friction is traced
like the rest (:mod:`._friction_trace`) and fused into the same C call. Entries are named by
:class:`~._kernel_key.KernelKey`. Which backend a call uses (``backend=``, :func:`~._dispatch.prepare`,
the process default, ``"auto"`` by default) is decided by :mod:`._dispatch`; the first native use of a
model costs ~0.3-3 s of tracing and compiling, once per model and machine, later processes load the
cached module in milliseconds. Without a C compiler (and no cached module), :func:`load` warns once and
returns ``None`` (the Python backend is used); so does a cache entry that fails to load.

The cache key hashes the model, the compiler settings and the source of every module that feeds the
C generation, found by following this module's imports (:func:`generator_modules`).
"""

from __future__ import annotations

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
from typing import Any, cast

import numpy as np

from .. import _native
from .._sources import imported_modules, sources_hash
from ..errors import RobotDynamicsError
from ..friction.parameters import friction_parameters
from ..model import FloatArray, RobotModel
from . import _c_codegen, _c_extension
from ._c_extension import Entry
from ._friction_trace import friction_kernel
from ._kernel_key import FRICTION_VARIANTS, FrictionVariant, KernelKey
from ._kernels import ModelKernels, kernels

FLAGS: tuple[str, ...] = ("-O1", "-fno-math-errno", "-ffp-contract=off", "-pthread")
"""Compiler flags: no contraction into fused multiply-adds, so every lane rounds like the Python program.
``-O1``: the traced programs are already straight-line code with the constants folded. ``-O2`` made
the Panda's inverse and forward dynamics batches 20-30% faster (D about the same) but compiling 60%
longer (1.5 -> 2.5 s for the Panda; a model's first use, and the test suite compiles ~200 models);
GCC's ``-flto=auto`` won that back only for the largest models (2.8 -> 2.0 s at ``-O1``, a
0.7 s model took longer). Single calls ran no faster with either."""


def compiler_flags() -> tuple[str, ...]:
    """:data:`FLAGS` and the vector width's flags (:func:`vector_lanes`)."""
    return (*FLAGS, *vector_lanes()[1])


_SUBDIR = "engine"
_loaded: dict[str, NativeModel] = {}  # by library directory: shared by equal models
_build_lock = threading.Lock()
_warned = [False]


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


def generator_modules() -> tuple[str, ...]:
    """The modules whose code feeds the generated C: this one and what it imports, transitively."""
    return imported_modules(__name__)


def _cache_key(model: RobotModel) -> str:
    """The library's directory name: the model, the generator's source (:func:`generator_modules`),
    the compiler flags and vector width, and the toolchain."""
    lanes = vector_lanes()[0]
    flags = " ".join(compiler_flags())
    sources = sources_hash(__name__)
    return _native.hash_key(["engine-native", model.fingerprint(), sources, flags, str(lanes), _native.toolchain()])


def _build(model: RobotModel, K: ModelKernels, target: Path, module: str = "rd_engine") -> None:
    """Trace the kernels, emit C, compile the extension module ``module`` into ``target`` and write
    ``meta.json`` (last).

    The traced programs compiled: Newton–Euler with/without tool load and reactions, D, c, h,
    the gravity-free reactions, forward dynamics (with/without tool load) for the model's
    motor-inertia setting, the generalized momentum with its rate (:mod:`.momentum`; with and
    without motor inertia), the tool Jacobian (:mod:`.geometric_jacobian`), a chosen frame's pose,
    Jacobian and ``Jdot qd`` (:mod:`.frame_acceleration`) and the momentum observer's
    step with the model's default friction (:mod:`.observer_step`). The other
    motor-inertia variants, the other forward dynamics (Newton–Euler bias + D + Cholesky), h_ikm
    (probing h), inverse dynamics with friction and ``J D^-1 J^T`` (:mod:`.task_inertia`) are small C
    functions calling them, so the library compiles in one to two seconds.
    """
    start = time.perf_counter()
    lanes = vector_lanes()[0]
    n = K.n
    reflected = [float(x) for x in K.reflected_motor_inertia]
    motors = any(x != 0.0 for x in reflected)
    motor_options = (False, True) if motors else (False,)
    functions: list[str] = []
    entries: list[Entry] = []
    meta_entries: list[dict[str, Any]] = []
    compiled: dict[KernelKey, tuple[str, tuple[int, ...], int]] = {}  # key -> C function, inputs, outputs

    def add(key: KernelKey, function: str, inputs: tuple[int, ...], outputs: int) -> None:
        compiled[key] = (function, inputs, outputs)
        symbol = f"e{len(entries)}"
        entries.append(Entry(symbol, function, inputs, outputs, (n, n) if key.kind == "inertia" else ()))
        meta_entries.append({"symbol": symbol, "key": key.to_json(), "inputs": list(inputs), "outputs": outputs})

    rnea = KernelKey.rnea
    velocity_terms = rnea(acceleration=False, gravity=False)  # h, coriolis_centrifugal
    traced = [rnea(load=load, reactions=reactions) for load in (False, True) for reactions in (False, True)]
    traced += [
        KernelKey.inertia(False),
        rnea(velocity=False, acceleration=False),  # c, gravity_torques
        velocity_terms,
        rnea(gravity=False, reactions=True),  # unit reactions of the stick-slip solver
        *(KernelKey.momentum(motor) for motor in motor_options),  # the momentum observer's p, dD/dt qd
        KernelKey.jacobian(),
        KernelKey.frame(),  # a frame's pose, Jacobian and Jdot qd (task space)
        # the observer step a node runs: the model's D setting and its default friction (smooth, its kind)
        KernelKey.observer(
            K.motor_inertia_in_d, cast(FrictionVariant, model.smooth_kind) if model.has_friction else None
        ),
    ]
    for load in (False, True):
        key = KernelKey.forward(K.motor_inertia_in_d and motors, load)
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
                rigid, inputs, outputs = compiled[rnea(load=load, reactions=reactions)]
                name = f"rnea_motor_{int(load)}{int(reactions)}"
                arguments = ["in_q", "in_qd", "in_qdd", *(["in_w"] if load else [])]
                functions.append(_c_codegen.motor_function(name, rigid, arguments, reflected))
                add(rnea(motor=True, load=load, reactions=reactions), name, inputs, outputs)
        inertia = compiled[KernelKey.inertia(False)][0]
        functions.append(_c_codegen.inertia_motor_function("inertia_motor", inertia, reflected))
        add(KernelKey.inertia(True), "inertia_motor", (n,), n * n)
    for motor in motor_options:
        for load in (False, True):
            if KernelKey.forward(motor, load) in compiled:  # traced
                continue
            name = f"forward_{int(motor)}{int(load)}"
            bias = compiled[rnea(load=load)][0]
            inertia = compiled[KernelKey.inertia(motor)][0]
            functions.append(_c_codegen.forward_function(name, n, bias, inertia, load))
            add(KernelKey.forward(motor, load), name, (n, n, n, *((6,) if load else ())), n)
    frame = compiled[KernelKey.frame()][0]
    for motor in motor_options:  # the frame's outputs and J D^-1 J^T
        name = f"task_{int(motor)}"
        functions.append(_c_codegen.task_function(name, n, frame, compiled[KernelKey.inertia(motor)][0]))
        add(KernelKey.task(motor), name, (n, n, n + 2), 16 + 6 * n + 6 + 36)
    functions.append(_c_codegen.coriolis_tensor_function("coriolis_tensor", n, compiled[velocity_terms][0]))
    add(KernelKey.coriolis_tensor(), "coriolis_tensor", (n,), n * n * n)

    friction_note = "model without friction"
    if model.has_friction:
        p = friction_parameters(model)
        reactions = K.needs_reactions(model)
        friction_note = "friction fused in C"
        for variant in FRICTION_VARIANTS:
            functions.append(_c_codegen.kernel_function(f"friction_{variant}", friction_kernel(p, variant).program))
        for motor in motor_options:
            for load in (False, True):
                rigid, inputs, _ = compiled[rnea(motor=motor, load=load, reactions=reactions)]
                for variant in FRICTION_VARIANTS:
                    name = f"id_friction_{int(motor)}{int(load)}_{variant}"
                    functions.append(
                        _c_codegen.friction_inverse_function(name, n, rigid, f"friction_{variant}", load, reactions)
                    )
                    add(KernelKey.inverse_friction(motor, load, variant), name, inputs, n)

    header = (
        f"robot_dynamics native engine library: robot {model.name!r}, {model.dof} joints\n"
        f"model fingerprint {model.fingerprint()}\n"
        "generated from the engine's traced programs (robot_dynamics.dynamics._c_codegen); do not edit"
    )
    source = target / "engine.c"
    source.write_text(_c_extension.library_source(header, lanes, [f for f in functions if f], entries, module))
    generated = time.perf_counter()
    library = _native.compile_extension(
        source, target, module, flags=compiler_flags(), include_dirs=_c_extension.include_dirs()
    )
    meta = {
        "module": module,
        "library": library.name,
        "robot": model.name,
        "dof": model.dof,
        "lanes": lanes,
        "flags": list(compiler_flags()),
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
                directory = _native.publish(root, key, lambda tmp: _build(model, K, tmp, f"rd_engine_{key}"))
            except RobotDynamicsError as exc:  # e.g. a compiler without the vector extension
                warnings.warn(
                    f"robot_dynamics: building the native library of {model.name!r} failed; using the Python "
                    f"backend for it. {exc}",
                    RuntimeWarning,
                    stacklevel=3,
                )
                K.native_library = False
                return None
            try:
                found = NativeModel(directory, model.dof)
            except (ImportError, OSError, KeyError, ValueError) as exc:  # a damaged cache entry
                warnings.warn(
                    f"robot_dynamics: loading the native library of {model.name!r} from {directory} failed; "
                    f"using the Python backend for it (clear_cache() removes the entry). {exc}",
                    RuntimeWarning,
                    stacklevel=3,
                )
                K.native_library = False
                return None
            _loaded[str(directory)] = found
    if cache is None:
        K.native_library = found
    return found


def clear_cache(cache: Path | str | None = None) -> int:
    """Delete the cached native libraries (loaded ones stay usable in this process)."""
    root = (Path(cache) if cache is not None else _native.cache_dir()) / _SUBDIR
    return _native.remove_entries(root)


# -- calling ------------------------------------------------------------------------------------------
THREADS_ENV = "ROBOT_DYNAMICS_THREADS"
_threads: list[int | None] = [None]


def set_batch_threads(count: int | None) -> None:
    """Split large native batches over at most ``count`` threads (``None``: back to the default of
    :func:`batch_threads`). Worker processes that each serve one core set 1."""
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ValueError(f"batch threads must be a positive integer or None, not {count!r}")
    _threads[0] = count


def batch_threads() -> int:
    """Threads a large native batch (4096 states per thread at least) is split over: the value given
    to :func:`set_batch_threads`, else ``$ROBOT_DYNAMICS_THREADS`` (a positive integer, else an
    error), else ``$OMP_NUM_THREADS`` (which Dask's workers and many job schedulers set to their share
    of the cores; OpenMP's nested form ``4,2`` gives its first level, a value that is not a positive
    count is passed over as OpenMP runtimes do), else the CPUs this process may run on. Every state
    is computed alone, so the values do not depend on it."""
    if _threads[0] is not None:
        return _threads[0]
    given = os.environ.get(THREADS_ENV, "").strip()
    if given:
        count = _positive(given)
        if count is None:
            raise RobotDynamicsError(f"${THREADS_ENV} must be a positive integer, not {given!r}")
        return count
    return _positive(os.environ.get("OMP_NUM_THREADS", "").split(",")[0]) or _cpu_count()


def _positive(text: str) -> int | None:
    try:
        count = int(text.strip())
    except ValueError:
        return None
    return count if count >= 1 else None


@functools.cache
def _cpu_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class BatchCall:
    """One entry point for ``(N, k)`` row-major batches: one call into the extension, the loop runs in C
    (on :func:`batch_threads` threads for large batches) and the extension allocates the result."""

    __slots__ = ("_function", "n_out", "sizes")

    def __init__(self, function: Callable[..., Any], sizes: Sequence[int], n_out: int) -> None:
        self._function = function
        self.sizes = tuple(sizes)
        self.n_out = n_out

    def __call__(self, arrays: Sequence[Any]) -> FloatArray:
        blocks = [np.ascontiguousarray(a, dtype=np.float64) for a in arrays]
        out: FloatArray = self._function(*blocks, None, batch_threads())  # a new (N, n_out) array
        return out


SingleCall = Callable[..., Any]
"""A one-state function of the extension module (see :mod:`._c_codegen`): ``f(a0, ..., ak)`` returns
the output array, or ``None`` for inputs it does not take or non-finite values (the caller then takes
its general path, which validates and reports); ``f(a0, ..., ak, out)`` writes into ``out``."""


class NativeModel:
    """The loaded native extension module of one model: its entry points by kernel key."""

    def __init__(self, directory: Path, n: int) -> None:
        self.directory = directory
        self.n = n
        self.meta: dict[str, Any] = json.loads((directory / _native.MARKER).read_text())
        self.motors = bool(self.meta["motors"])
        entries = [
            (KernelKey.from_json(e["key"]), e["symbol"], tuple(e["inputs"]), int(e["outputs"]))
            for e in self.meta["entries"]
        ]
        module = _native.load_extension(self.meta["module"], directory / self.meta["library"])
        self.single: dict[KernelKey, SingleCall] = {}
        self.batch: dict[KernelKey, BatchCall] = {}
        self.outputs: dict[KernelKey, int] = {}
        for key, symbol, inputs, outputs in entries:
            self.single[key] = getattr(module, symbol)
            self.batch[key] = BatchCall(getattr(module, f"{symbol}_batch"), inputs, outputs)
            self.outputs[key] = outputs
        if not self.motors:  # without motor inertia the motor switch changes nothing: one entry for both
            for key, _, _, _ in entries:
                alias = key.with_motor()
                if alias is not None and alias not in self.single:
                    self.single[alias], self.batch[alias] = self.single[key], self.batch[key]
                    self.outputs[alias] = self.outputs[key]
        self.fast: dict[KernelKey, SingleCall] = self.single
        """The single-state entries by key: ``fast(*arrays)`` returns ``None`` for anything the extension
        does not take (the caller then validates and uses :meth:`run`)."""
        self.has_friction = any(key.kind == "id_friction" for key, _, _, _ in entries)

    def run(self, key: KernelKey, batch: bool, values: Sequence[Any]) -> FloatArray | None:
        """Evaluate kernel ``key`` on validated values (lists or ``(N, k)`` arrays); ``None`` if the
        library does not hold it."""
        if batch:
            call = self.batch.get(key)
            return None if call is None else call(values)
        single = self.single.get(key)
        if single is None:
            return None
        out = np.empty(self.outputs[key])
        single(*values, out)
        return out
