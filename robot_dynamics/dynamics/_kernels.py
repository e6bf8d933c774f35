"""Per-model compiled programs of the engine's algorithms, and how to run them on states.

``kernels(model)`` traces the algorithms (:mod:`.rnea`, :mod:`.crba`, :mod:`.cholesky`, :mod:`.momentum`,
:mod:`.geometric_jacobian`, :mod:`.frame_acceleration`, :mod:`.task_inertia`) for one model
on first use, folding its constants (:mod:`._trace`), and caches the compiled programs on the model
object, by :class:`~._kernel_key.KernelKey`; inverse dynamics with friction is Newton–Euler with the
friction package's program traced onto its torques and reactions (:mod:`._friction_trace`).
``run(kernel, batch, values)`` evaluates one state with Python floats or a batch with NumPy arrays,
``CHUNK`` samples at a time (one ufunc per operation and chunk: vectorised over samples, joints
unrolled; the chunk keeps the working set in cache). Which backend runs a program is decided by
:mod:`._dispatch`.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ..friction import needs_reactions
from ..friction.parameters import friction_parameters
from ..model import FloatArray, RobotModel
from ._chain import Chain, chain_of
from ._friction_trace import FUNCTIONS, trace_friction
from ._kernel_key import FrictionVariant, KernelKey
from ._sincos import sincos
from ._trace import Kernel, Scalar, Tape
from ._vector import Vec3
from .cholesky import cholesky_solve
from .crba import composite_inertia_matrix
from .frame_acceleration import jacobian_rate
from .geometric_jacobian import geometric_jacobian
from .momentum import momentum_and_rate
from .observer_step import observer_step
from .rnea import newton_euler
from .task_inertia import inverse_task_inertia

CHUNK = 4096


class CompiledLibrary(Protocol):
    """What the dispatch needs of a model's compiled library (:class:`.native.NativeModel`)."""

    fast: dict[KernelKey, Callable[..., FloatArray | None]]  # one state: None hands over to validation

    def run(self, key: KernelKey, batch: bool, values: Sequence[Any]) -> FloatArray | None: ...


_CACHE: dict[int, tuple[weakref.ref[RobotModel], ModelKernels]] = {}  # by id(model), dropped with the model
_LOCK = threading.Lock()


class ModelKernels:
    """The compiled programs of one model, built lazily."""

    def __init__(self, model: RobotModel) -> None:
        self.chain: Chain = chain_of(model)
        self.n = model.dof
        self.has_friction = model.has_friction
        self.motor_inertia_in_d = model.motor_inertia_in_d
        self.reflected_motor_inertia: FloatArray = np.array(model.arrays.reflected_motor_inertia)
        self._built: dict[KernelKey, Kernel] = {}
        self._lock = threading.Lock()
        self._needs_reactions: bool | None = None
        self.native: CompiledLibrary | None = None  # the backend=None library, set by _dispatch.prepare
        self.native_library: CompiledLibrary | bool | None = None  # loaded library; False: unavailable
        self.pinned_python = False  # _dispatch.prepare(model, "python"): backend=None stays Python
        self.frames: dict[object, Any] = {}  # the frames tasks named, by name or index (.task_space)
        # the library backend=None resolved to under the process default (None: Python), and that
        # default (_dispatch._default; "unresolved" until the first call)
        self.default_native: CompiledLibrary | None = None
        self.default_for: str | None = "unresolved"
        self._model = weakref.ref(model)

    def needs_reactions(self, model: RobotModel) -> bool:
        """Whether the model's friction needs the joint reactions (load-dependent bearing friction)."""
        if self._needs_reactions is None:
            self._needs_reactions = bool(needs_reactions(model))
        return self._needs_reactions

    def kernel(self, key: KernelKey) -> Kernel:
        """The program of ``key`` (built on first use). Inverse dynamics with friction may not be
        traceable: :meth:`program` returns ``None`` for it, this raises ``KeyError``."""
        found = self._built.get(key)
        if found is not None:
            return found
        found = self.program(key)
        if found is None:
            raise KeyError(f"the friction program of {key!r} cannot be traced")
        return found

    def program(self, key: KernelKey) -> Kernel | None:
        """The program of ``key``, or ``None`` for a friction program outside the traceable subset."""
        found = self._built.get(key)
        if found is not None:
            return found
        kind = key.kind
        if kind == "rnea":
            return self.rnea(
                velocity=key.velocity,
                acceleration=key.acceleration,
                gravity=key.gravity,
                motor=key.motor,
                load=key.load,
                reactions=key.reactions,
            )
        if kind == "inertia":
            return self.inertia(key.motor)
        if kind == "forward":
            return self.forward(key.motor, key.load)
        if kind == "coriolis_tensor":
            return self.coriolis_tensor()
        if kind == "momentum":
            return self.momentum(key.motor)
        if kind == "jacobian":
            return self.jacobian()
        if kind == "observer":
            return self.observer(key.motor, key.friction)
        if kind == "frame":
            return self.frame()
        if kind == "task":
            return self.task(key.motor)
        assert key.friction is not None  # kind "id_friction" (KernelKey checks the pairing)
        return self.inverse_friction(key.motor, key.load, key.friction)

    def _get(self, key: KernelKey, build: Callable[[], Kernel]) -> Kernel:
        kernel = self._built.get(key)
        if kernel is None:
            with self._lock:
                kernel = self._built.get(key)
                if kernel is None:
                    kernel = build()
                    self._built[key] = kernel
        return kernel

    # -- inverse dynamics ---------------------------------------------------------------------
    def rnea(
        self,
        *,
        velocity: bool = True,
        acceleration: bool = True,
        gravity: bool = True,
        motor: bool = False,
        load: bool = False,
        reactions: bool = False,
    ) -> Kernel:
        """Newton–Euler torques (then ``f``, ``n`` flattened when ``reactions``).

        Arguments of the program: ``q``, then ``qd`` / ``qdd`` / ``w`` (the tool load, 6) if enabled.
        A disabled velocity or acceleration is the constant 0, folded away.
        """
        key = KernelKey.rnea(
            velocity=velocity, acceleration=acceleration, gravity=gravity, motor=motor, load=load, reactions=reactions
        )
        found = self._built.get(key)
        if found is not None:
            return found

        def build() -> Kernel:
            tape = Tape()
            _, tau, f, m = self._newton_euler(tape, velocity, acceleration, gravity, motor, load)
            outputs = list(tau)
            if reactions:
                outputs += [c for v in f for c in v] + [c for v in m for c in v]
            return tape.compile("rnea", outputs)

        return self._get(key, build)

    def _newton_euler(
        self, tape: Tape, velocity: bool, acceleration: bool, gravity: bool, motor: bool, load: bool
    ) -> tuple[list[Scalar], list[Scalar], list[Vec3], list[Vec3]]:
        """Traced Newton–Euler ``(qd, tau [+ G^2 Jm qdd], f, n)``; declares the inputs q[, qd][, qdd][, w]."""
        n = self.n
        q = tape.input("q", n)
        qd: list[Scalar] = tape.input("qd", n) if velocity else [0.0] * n
        qdd: list[Scalar] = tape.input("qdd", n) if acceleration else [0.0] * n
        wrench = tape.input("w", 6) if load else None
        base = -self.chain.gravity if gravity else Vec3.zero()
        loads = (Vec3(*wrench[:3]), Vec3(*wrench[3:])) if wrench is not None else None
        tau, f, m = newton_euler(self.chain, q, qd, qdd, base, loads)
        if motor and acceleration:
            tau = [t + jm * a for t, jm, a in zip(tau, self.reflected_motor_inertia.tolist(), qdd, strict=True)]
        return qd, tau, f, m

    def inverse_friction(self, motor: bool, load: bool, variant: FrictionVariant) -> Kernel:
        """Inverse dynamics with friction, ``tau + b`` (arguments q, qd, qdd[, w]): Newton–Euler (with
        ``G^2 Jm qdd`` when ``motor``) and the friction package's program for ``variant`` ("exact",
        "tanh" or "linear") traced onto its torques and reactions."""
        key = KernelKey.inverse_friction(motor, load, variant)
        found = self._built.get(key)
        if found is not None:
            return found

        def build() -> Kernel:
            model = self._model()
            assert model is not None  # the kernels are dropped with their model
            p = friction_parameters(model)
            tape = Tape(FUNCTIONS)
            qd, tau, f, m = self._newton_euler(tape, True, True, True, motor, load)
            force = [c for v in f for c in v] if p.has_bearing else None  # Fu 3.3-56, 3.3-57
            moment = [c for v in m for c in v] if p.has_bearing else None
            return tape.compile("id_friction", trace_friction(p, variant, tape, qd, tau, force, moment))

        return self._get(key, build)

    # -- inertia matrix, forward dynamics -----------------------------------------------------
    def inertia(self, motor: bool) -> Kernel:
        """D(q), row-major ``n*n`` outputs."""

        def build() -> Kernel:
            tape = Tape()
            D = composite_inertia_matrix(self.chain, tape.input("q", self.n), motor)
            return tape.compile("inertia", [d for row in D for d in row])

        return self._get(KernelKey.inertia(motor), build)

    def forward(self, motor: bool, load: bool) -> Kernel:
        """qdd = D^-1 (tau - h - c [- J^T w]) with a Cholesky factorisation; arguments q, qd, tau[, w]."""

        def build() -> Kernel:
            tape = Tape()
            n = self.n
            q, qd, tau = tape.input("q", n), tape.input("qd", n), tape.input("tau", n)
            wrench = tape.input("w", 6) if load else None
            loads = (Vec3(*wrench[:3]), Vec3(*wrench[3:])) if wrench is not None else None
            bias, _, _ = newton_euler(self.chain, q, qd, [0.0] * n, -self.chain.gravity, loads)
            D = composite_inertia_matrix(self.chain, q, motor)
            qdd = cholesky_solve(D, [t - b for t, b in zip(tau, bias, strict=True)])
            return tape.compile("forward", qdd)

        return self._get(KernelKey.forward(motor, load), build)

    def observer(self, motor: bool, variant: FrictionVariant | None) -> Kernel:
        """One observer step (:mod:`.observer_step`), ``3 n`` outputs; arguments q, qd, tau, prev (3 n),
        coef (2 n + 1); ``variant`` None: without friction."""
        key = KernelKey.observer(motor, variant)
        found = self._built.get(key)
        if found is not None:
            return found
        model = self._model()
        assert model is not None  # the kernels are dropped with their model
        p = friction_parameters(model) if variant is not None else None

        def build() -> Kernel:
            n = self.n
            tape = Tape(FUNCTIONS)
            q, qd, tau = tape.input("q", n), tape.input("qd", n), tape.input("tau", n)
            prev, coef = tape.input("prev", 3 * n), tape.input("coef", 2 * n + 1)

            def still(qd: Any, rigid: Any, f: Any, m: Any) -> Any:  # h + c + b
                if p is None or variant is None:
                    return rigid
                force = [c for v in f for c in v] if p.has_bearing else None
                moment = [c for v in m for c in v] if p.has_bearing else None
                return trace_friction(p, variant, tape, qd, rigid, force, moment)

            return tape.compile("observer", observer_step(self.chain, q, qd, tau, prev, coef, motor, still))

        return self._get(key, build)

    # -- kinematics -----------------------------------------------------------------------------
    def jacobian(self) -> Kernel:
        """The tool origin's Jacobian in ``F_0`` then the tool rotation, ``6 n + 9`` outputs; argument q."""

        def build() -> Kernel:
            tape = Tape()
            J, R, _ = geometric_jacobian(self.chain, tape.input("q", self.n))
            return tape.compile("jacobian", [*(v for row in J for v in row), *(v for row in R.rows for v in row)])

        return self._get(KernelKey.jacobian(), build)

    def _frame_outputs(self, tape: Tape) -> tuple[list[Scalar], list[list[Scalar]], list[Scalar]]:
        """Traced outputs of the frame the input ``s`` names — its pose in ``F_0`` (4 x 4, row-major), its
        Jacobian (``6 x n``) and ``Jdot qd`` (6) in base axes — with the inputs q, qd, s declared; and
        ``J`` and ``q`` for what follows."""
        n = self.n
        q, qd, weights = tape.input("q", n), tape.input("qd", n), tape.input("s", n + 2)
        J, R, p = geometric_jacobian(self.chain, q, weights)
        pose = [*R.rows[0], p.x, *R.rows[1], p.y, *R.rows[2], p.z, 0.0, 0.0, 0.0, 1.0]
        rate = jacobian_rate(self.chain, q, qd, weights)
        return [*pose, *(v for row in J for v in row), *rate], J, q

    def frame(self) -> Kernel:
        """A frame's pose in ``F_0``, Jacobian and ``Jdot qd`` (base axes), ``16 + 6 n + 6`` outputs;
        arguments q, qd, s (the frame's weights, :mod:`.geometric_jacobian`)."""

        def build() -> Kernel:
            tape = Tape()
            return tape.compile("frame", self._frame_outputs(tape)[0])

        return self._get(KernelKey.frame(), build)

    def task(self, motor: bool) -> Kernel:
        """The outputs of :meth:`frame` then ``J D^-1 J^T`` (36, row-major); arguments q, qd, s.
        ``ZeroDivisionError`` while building when a pivot of D is a constant 0 (a joint that moves no mass)."""

        def build() -> Kernel:
            tape = Tape()
            outputs, J, q = self._frame_outputs(tape)
            A = inverse_task_inertia(J, self.chain, q, motor)
            return tape.compile("task", [*outputs, *(v for row in A for v in row)])

        return self._get(KernelKey.task(motor), build)

    # -- velocity coupling ----------------------------------------------------------------------
    def momentum(self, motor: bool) -> Kernel:
        """``D qd`` then ``dD/dt qd`` (:mod:`.momentum`), ``2 n`` outputs; arguments q, qd."""

        def build() -> Kernel:
            tape = Tape()
            p, rate = momentum_and_rate(self.chain, tape.input("q", self.n), tape.input("qd", self.n), motor)
            return tape.compile("momentum", [*p, *rate])

        return self._get(KernelKey.momentum(motor), build)

    def coriolis_tensor(self) -> Kernel:
        """h_ikm (Fu 3.2-33), ``n*n*n`` outputs, by probing the velocity terms of Newton–Euler.

        h(q, qd) is a quadratic form in qd, so with unit velocities e_k:
        h_ikk = h_i(e_k) and h_ikm = h_imk = (h_i(e_k + e_m) - h_i(e_k) - h_i(e_m)) / 2.
        The unit velocities are constants: each probe folds to a small program.
        """

        def build() -> Kernel:
            tape = Tape()
            n = self.n
            q = tape.input("q", n)
            zero = [0.0] * n

            def h(velocity: list[float]) -> list[Scalar]:
                return newton_euler(self.chain, q, velocity, zero, Vec3.zero())[0]

            unit = [h([1.0 if j == k else 0.0 for j in range(n)]) for k in range(n)]
            H: list[Scalar] = [0.0] * (n * n * n)
            for k in range(n):
                for i in range(n):
                    H[(i * n + k) * n + k] = unit[k][i]
                for m in range(k + 1, n):
                    pair = h([1.0 if j in (k, m) else 0.0 for j in range(n)])
                    for i in range(n):
                        value = (pair[i] - unit[k][i] - unit[m][i]) * 0.5
                        H[(i * n + k) * n + m] = H[(i * n + m) * n + k] = value
            return tape.compile("coriolis_tensor", H)

        return self._get(KernelKey.coriolis_tensor(), build)


def kernels(model: RobotModel) -> ModelKernels:
    """The compiled programs of ``model`` (built on first use, kept while the model lives)."""
    entry = _CACHE.get(id(model))
    if entry is not None and entry[0]() is model:
        return entry[1]
    with _LOCK:
        entry = _CACHE.get(id(model))
        if entry is not None and entry[0]() is model:
            return entry[1]
        found = ModelKernels(model)
        key = id(model)

        def forget(ref: weakref.ref[RobotModel]) -> None:
            if _CACHE.get(key, (None,))[0] is ref:
                del _CACHE[key]

        _CACHE[key] = (weakref.ref(model, forget), found)
        return found


def run(kernel: Kernel, batch: bool, values: Sequence[Any]) -> FloatArray:
    """Evaluate ``kernel`` on validated values (see :mod:`._state`): ``(k,)`` or ``(N, k)`` result."""
    if not batch:
        return np.array(kernel.scalar(*values), dtype=float)
    count = values[0].shape[0]
    out = np.empty((count, kernel.n_outputs))
    for start in range(0, count, CHUNK):
        stop = min(start + CHUNK, count)
        # a fresh contiguous (k, chunk) block per argument: one row per variable, hot in cache
        rows = [np.ascontiguousarray(v[start:stop].T) for v in values]
        for j, column in enumerate(kernel.array(*rows, *sincos(rows[0]))):
            out[start:stop, j] = column
    return out
