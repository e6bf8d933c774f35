"""One dispatch for the engine's public functions: backend, kernel key, validation, evaluation.

Every public numeric function (:mod:`.inverse`, :mod:`.forward`, :mod:`.coefficients`) is the same
sequence, written here once:

1. **backend** (:func:`library`): the ``backend=`` argument — ``"python"`` (also ``"numeric"``), the
   traced programs run as Python floats / NumPy rows (:mod:`._kernels`); ``"native"``, the same
   programs compiled to C (:mod:`.native`); ``None``, the model's prepared backend (:func:`prepare`),
   else the process default (:func:`default_backend`);
2. **kernel key** (:class:`~._kernel_key.KernelKey`): which program, e.g.
   ``KernelKey.rnea(motor=True, load=True)``;
3. **one state, fast** (:func:`single`): finite float64 arrays of the exact shapes go straight to the
   native entry or the Python-float program, with no further checks;
4. **otherwise validate** (:func:`validate`: shapes, finiteness, a common batch size, the wrench's
   frame) and **evaluate** (:func:`evaluate`: the native library if it holds the program, else the
   Python program).

:func:`general` is step 4 for the functions whose arguments are joint vectors only.

The default is ``"auto"`` (:func:`robot_dynamics._native.resolve_backend`): compiled C when a C
compiler is available — a model is traced and compiled on its first use (~0.3-3 s, once per model and
machine, then cached), with one log line per process — else Python with one warning.
``RD_BACKEND=python`` or ``set_default_backend("python")`` forces Python (e.g. short scripts over many
different models); ``prepare(model)`` compiles a model ahead of its first call. Generated code from
the symbolic package is not a backend of these functions: it is
:func:`robot_dynamics.symbolic.get_backend`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from .. import _native
from ..errors import StateError
from ..friction.smooth import check_smooth_kind
from ..model import FloatArray, RobotModel
from . import _state
from ._kernel_key import FRICTION_VARIANTS, FrictionVariant, KernelKey
from ._kernels import CompiledLibrary, ModelKernels, kernels, run
from .kinematics import forward_kinematics
from .native import load

Backend = Literal["python", "native"]
WrenchFrame = Literal["tool", "base", "world"]

BACKEND_ENV = "ROBOT_DYNAMICS_BACKEND"
BACKENDS: tuple[Backend, ...] = ("python", "native")
GENERATED = (
    "'generated' is not an engine backend; for the symbolic package's generated code use "
    "robot_dynamics.symbolic.get_backend(model).inverse_dynamics(q, qd, qdd)"
)

_default: Backend | None = None  # the process default; None until $ROBOT_DYNAMICS_BACKEND was read


# -- backend --------------------------------------------------------------------------------------
def check_backend(backend: str, what: str = "backend") -> Backend:
    """``backend`` as one of :data:`BACKENDS` (``"numeric"`` is ``"python"``), else a clear error."""
    if backend in ("python", "numeric"):
        return "python"
    if backend == "native":
        return "native"
    if backend == "generated":
        raise StateError(f"{what}: {GENERATED}")
    raise StateError(f"{what}: expected None, 'python' or 'native', got {backend!r}")


def default_backend() -> Backend:
    """The process-wide backend for ``backend=None`` on models that were not :func:`prepare` d:
    ``$ROBOT_DYNAMICS_BACKEND`` if set, else ``"auto"`` as ``$RD_BACKEND`` says
    (:func:`robot_dynamics._native.resolve_backend`: compiled C when a C compiler exists)."""
    global _default
    if _default is None:
        env = os.environ.get(BACKEND_ENV)
        _default = check_backend(env, f"${BACKEND_ENV}") if env else _native.resolve_backend()
    return _default


def set_default_backend(backend: str) -> str:
    """Set the process-wide default backend (``"python"``, ``"native"`` or ``"auto"``); returns the
    previous one."""
    global _default
    if backend == "generated":
        raise StateError(f"backend: the process default can be 'python', 'native' or 'auto'; {GENERATED}")
    name = _native.resolve_backend("auto") if backend == "auto" else check_backend(backend)
    previous = default_backend()
    _default = name
    return previous


def prepare(model: RobotModel, backend: str = "native") -> str:
    """Make ``backend`` the model's backend for calls with ``backend=None``, building it now.

    ``"native"`` traces and compiles the model's library (or loads it from the cache); returns the
    backend in effect: ``"native"``, or ``"python"`` when no C compiler is available (warned once).
    ``"python"`` pins the model to the Python backend (whatever the process default).
    """
    name = check_backend(backend)
    K = kernels(model)
    K.pinned_python = name == "python"
    if name == "python":
        K.native = None
        return "python"
    library = load(model, K)
    K.native = library
    return "native" if library is not None else "python"


def library(model: RobotModel, K: ModelKernels, backend: str | None) -> CompiledLibrary | None:
    """The native library a call runs on, ``None`` for the Python programs (see the module doc)."""
    if backend is None:
        if K.native is not None:
            return K.native
        if K.pinned_python or _default == "python":  # the value default_backend() settled on
            return None
        backend = default_backend()
    if check_backend(backend) == "python":
        return None
    found = K.native_library
    if found is None:
        return load(model, K)
    return None if isinstance(found, bool) else found


def _resolve_default(model: RobotModel, K: ModelKernels) -> CompiledLibrary | None:
    """:func:`library` for ``backend=None`` on a model that was not prepared, remembered on ``K`` with
    the process default it was resolved under (the single-state hot path then reads it in one
    attribute, and resolves again when the default changes)."""
    found = library(model, K, None)
    K.default_native, K.default_for = found, _default
    return found


# -- keys -------------------------------------------------------------------------------------------
def friction_variant(smooth: bool | None, smooth_kind: str) -> FrictionVariant:
    """The friction program: "exact" (discontinuous) unless ``smooth``; a bad ``smooth_kind`` is an error."""
    if not smooth:
        return "exact"
    check_smooth_kind(smooth_kind)
    return "linear" if smooth_kind == "linear" else "tanh"


# the single-state hot paths look their key up here instead of building one per call
INVERSE: dict[tuple[bool, str | None], KernelKey] = {
    (motor, variant): KernelKey.rnea(motor=motor)
    if variant is None
    else KernelKey.inverse_friction(motor, False, variant)
    for motor in (False, True)
    for variant in (None, *FRICTION_VARIANTS)
}
"""Inverse dynamics of one state without a wrench, by (motor switch, friction variant or ``None``)."""
INERTIA = {motor: KernelKey.inertia(motor) for motor in (False, True)}
FORWARD = {motor: KernelKey.forward(motor) for motor in (False, True)}
GRAVITY = KernelKey.rnea(velocity=False, acceleration=False)  # c(q)
VELOCITY = KernelKey.rnea(acceleration=False, gravity=False)  # h(q, qd)
INERTIAL = KernelKey.rnea(velocity=False, gravity=False)  # D_rigid(q) qdd
TOOL_LOAD = KernelKey.rnea(velocity=False, acceleration=False, gravity=False, load=True)  # J^T w
CORIOLIS_TENSOR = KernelKey.coriolis_tensor()
MOMENTUM = {motor: KernelKey.momentum(motor) for motor in (False, True)}  # D qd, dD/dt qd
JACOBIAN = KernelKey.jacobian()  # J in F_0, the tool rotation
OBSERVER = {
    (motor, variant): KernelKey.observer(motor, variant)
    for motor in (False, True)
    for variant in (None, *FRICTION_VARIANTS)
}  # one step of the momentum observer, by (motor switch, friction variant or None)


# -- validation -------------------------------------------------------------------------------------
def validate(
    model: RobotModel, joint_args: dict[str, ArrayLike], wrench: ArrayLike | None, wrench_frame: str
) -> tuple[bool, list[Any], Any]:
    """``(batch, values, load)``: joint vectors and the wrench with a common batch size (lists of floats
    for one state, ``(N, k)`` arrays for a batch, :mod:`._state`); the wrench turned into the tool frame
    (``None`` without one)."""
    what = f"{model.dof} joints of robot {model.name!r}"
    items = [(name, value, model.dof, what) for name, value in joint_args.items()]
    if wrench is not None:
        if wrench_frame not in ("tool", "base", "world"):
            raise StateError(f"wrench_frame: expected 'tool', 'base' or 'world', got {wrench_frame!r}")
        items.append(("wrench", wrench, 6, _state.WRENCH))
    batch, values = _state.validate(items)
    load_value = None
    if wrench is not None:
        load_value = values.pop()
        if wrench_frame != "tool":  # rotate f and n (both at the tool origin) into the tool frame
            q = values[0] if batch else np.array(values[0])
            pose = forward_kinematics(model, q, frame="world" if wrench_frame == "world" else "base")
            R = pose[..., :3, :3]
            w = np.asarray(load_value, dtype=float).reshape(-1, 2, 3)
            local = np.einsum("...ji,...kj->...ki", R if batch else R[None], w).reshape(-1, 6)
            load_value = local if batch else local[0].tolist()
    return batch, values, load_value


# -- evaluation -------------------------------------------------------------------------------------
def single(model: RobotModel, K: ModelKernels, backend: str | None, key: KernelKey, *arrays: Any) -> FloatArray | None:
    """Kernel ``key`` on one state given as finite float64 arrays of the exact input shapes, with no
    further checks; ``None`` for anything else (and for a forward-dynamics pivot that is not positive):
    the caller then validates and calls :func:`evaluate`, which reports. (The hot path: the common
    cases of :func:`library` are decided inline.)"""
    if backend is None:
        native = K.native
        if native is None and not K.pinned_python:
            native = K.default_native if K.default_for is _default else _resolve_default(model, K)
    else:
        native = library(model, K, backend)
    if native is not None:
        call = native.fast.get(key)
        return None if call is None else call(*arrays)
    lists = _state.fast_single(K.n, *arrays)
    if lists is None:
        return None
    kernel = K.program(key)
    if kernel is None:
        return None
    try:
        return np.array(kernel.scalar(*lists))
    except (ValueError, ZeroDivisionError):  # math.sqrt of a negative pivot, or a zero pivot
        return None


def try_evaluate(
    K: ModelKernels, native: CompiledLibrary | None, key: KernelKey, batch: bool, values: Sequence[Any]
) -> FloatArray | None:
    """Kernel ``key`` on validated values: on the native library if it holds the kernel, else the
    Python program; ``None`` if neither has it (a friction program outside the traceable subset)."""
    if native is not None:
        out = native.run(key, batch, values)
        if out is not None:
            return out
    kernel = K.program(key)
    return None if kernel is None else run(kernel, batch, values)


def evaluate(
    K: ModelKernels, native: CompiledLibrary | None, key: KernelKey, batch: bool, values: Sequence[Any]
) -> FloatArray:
    """:func:`try_evaluate` for a kernel that always exists (every kind but ``"id_friction"``)."""
    if native is not None:
        out = native.run(key, batch, values)
        if out is not None:
            return out
    return run(K.kernel(key), batch, values)


def general(
    model: RobotModel, K: ModelKernels, backend: str | None, key: KernelKey, dims: int = 1, **named: ArrayLike
) -> FloatArray:
    """Validate the joint-vector arguments ``named`` and evaluate ``key`` (after :func:`single` said
    ``None``); the result has ``dims`` axes of length n per state (torques 1, D 2, h_ikm 3), after the
    batch axis for a batch."""
    batch, values = _state.states(model, **named)
    out = evaluate(K, library(model, K, backend), key, batch, values)
    return out if dims == 1 else out.reshape(*out.shape[:-1], *(K.n,) * dims)
