"""Time spans of one data set: the unit of work of the reduction, so that several cores serve one bag.

A data set's training and held-out rows (:class:`Plan`) are cut into spans of ``chunk`` states
counted from each part's first row. A :class:`Span` carries its states plus ``window // 2`` samples
on each side (the halo), so the Savitzky–Golay derivatives of its rows are computed from exactly the
same centred windows as on the whole series (:mod:`robot_dynamics.bag.differentiate`: every sample's
fit uses only its own window). :func:`reduce_span` returns one :class:`NormalEquations` and one
stock-model error sum per chunk; :func:`fold` adds them in row order. The sequence of chunks and the
order of the additions are therefore those of a single pass over the whole part, whichever process
reduced which span: the result is the same bit for bit however the spans are spread over workers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.bag.differentiate import SavitzkyGolay, savgol
from robot_dynamics.bag.step_difference import step_accelerations
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.model import FloatArray, RobotModel

from .columns import ColumnSums, direction
from .estimate import NormalEquations, _gram
from .parameters import IdentificationError, ParameterSet, nominal_parameters
from .regressor import friction_law, joint_rows
from .rows import Buckets, Part, classes

Grids = dict[str, FloatArray]  # column family (.columns.SHAPES) -> grid of its nonlinear parameter


class _Chunk:
    """The sums of one chunk, filled joint by joint (:func:`accumulate_parts`)."""

    def __init__(self, n: int, p: int, count: int, grids: Grids) -> None:
        self.ata, self.atb, self.btb = np.zeros((n, p, p)), np.zeros((n, p)), np.zeros(n)
        self.rows, self.sse, self.count = np.zeros(n), np.zeros(n), count
        self.families = {k: ColumnSums.empty(k, np.tile(g, (n, 1)), p) for k, g in grids.items()}

    def add(
        self,
        j: int,
        cols: NDArray[np.intp],
        A: FloatArray,
        b: FloatArray,
        error: FloatArray,
        s: FloatArray,
        v: FloatArray,
    ) -> None:
        """Joint ``j``'s rows ``A`` (theta ``cols``), right-hand side ``b``, stock error, direction, velocity."""
        self.rows[j] += len(b)
        self.sse[j] += error @ error
        if not len(b):
            return
        A = np.asfortranarray(A)
        self.ata[j][np.ix_(cols, cols)] += _gram(A)
        self.atb[j, cols] += b @ A
        self.btb[j] += b @ b
        for family in self.families.values():
            family.add_rows(j, cols, A, s, v, b)

    def part(self, slow: Part | None = None) -> Part:
        ne = NormalEquations(self.ata, self.atb, self.btb, self.count, rows=self.rows)
        return Part(ne, self.sse, self.families, slow)


def accumulate_parts(
    model: RobotModel,
    pset: ParameterSet,
    q: FloatArray,
    qd: FloatArray,
    qdd: FloatArray,
    tau: FloatArray,
    chunk: int,
    edges: Sequence[float] = (),
    grids: Grids | None = None,
    sticking: NDArray[np.bool_] | None = None,
    static: NDArray[np.bool_] | None = None,
) -> list[Buckets]:
    """Per chunk the sums of ``tau - fixed``, the torque the parameters explain, by row class
    (:class:`Buckets`): joint ``j``'s row goes to the band of ``|qd_j|`` among ``edges`` (a ``static``
    joint's rows to the last band: it keeps them whatever the cut) and, where ``sticking (N,)``
    (:func:`stick_band`), to the band's sticking class. Every row is added once, to one class; any
    selection of the rows (:class:`Selection`) is then a sum of classes. ``grids``: the column families
    (:mod:`.columns`) whose sums are reduced alongside, over the same rows, and their grids."""
    from robot_dynamics.dynamics import inverse_dynamics

    smooth, reference = friction_law(model, pset)
    theta0 = nominal_parameters(model, pset)
    n, p = model.dof, pset.size(model)
    cuts = np.asarray(sorted(edges), dtype=float)
    m = classes(edges)
    parts = []
    for start in range(0, q.shape[0], chunk):
        sl = slice(start, start + chunk)
        stock = np.asarray(inverse_dynamics(model, q[sl], qd[sl], qdd[sl], friction=True, smooth=True), dtype=float)
        error = stock - tau[sl]
        if smooth and reference is model:
            law = stock
        else:
            law = np.asarray(inverse_dynamics(reference, q[sl], qd[sl], qdd[sl], friction=True, smooth=smooth))
        # the fitted torque tau - fixed, fixed = law - Y theta0 (the torque outside Y theta at the
        # model's values), joint by joint from the regressor's non-zero rows (never (N, n, p))
        target = tau[sl] - law
        count = int(target.shape[0])
        cells = [_Chunk(n, p, count if k == 0 else 0, grids or {}) for k in range(m)]
        s = direction(pset, qd[sl])
        stuck = np.zeros(count, dtype=np.intp) if sticking is None else sticking[sl].astype(np.intp)
        for j, cols, A in joint_rows(model, q[sl], qd[sl], qdd[sl], pset):
            b = target[:, j] + A @ theta0[cols]
            v, e, sj = qd[sl, j], error[:, j], s[:, j]
            if static is not None and static[j]:  # a joint standing still keeps its rows
                band: NDArray[np.intp] = np.full(count, len(cuts), dtype=np.intp)
            else:
                band = np.searchsorted(cuts, np.abs(v), "right")
            cls = 2 * band + stuck
            sizes = np.bincount(cls, minlength=m)
            if sizes.max() == count:  # every row in one class (the usual case on a fast arm)
                cells[int(cls[0])].add(j, cols, A, b, e, sj, v)
                continue
            order = np.argsort(cls, kind="stable")
            A, b, e, sj, v = A[order], b[order], e[order], sj[order], v[order]
            bounds = np.concatenate([[0], np.cumsum(sizes)])
            for k in range(m):
                rows = slice(int(bounds[k]), int(bounds[k + 1]))
                cells[k].add(j, cols, A[rows], b[rows], e[rows], sj[rows], v[rows])
        parts.append(Buckets(tuple(float(x) for x in cuts), tuple(cell.part() for cell in cells)))
    return parts


@dataclass(frozen=True)
class Plan:
    """How a data set is cut (samples module docstring, steps 2–4), before any differentiation."""

    filt: SavitzkyGolay
    train: slice
    holdout: slice | None
    static: NDArray[np.bool_]
    motion: FloatArray


def _check_times(name: str, t: FloatArray) -> None:
    if not np.all(np.isfinite(t)):
        raise IdentificationError(f"{name}: sample times are not all finite")
    steps = np.diff(t)
    if np.any(steps <= 0.0):
        k = int(np.argmax(steps <= 0.0)) + 1
        raise IdentificationError(
            f"{name}: sample times must increase strictly: sample {k} at {t[k]:.9g} s follows {t[k - 1]:.9g} s "
            "(duplicated or reordered stamps)"
        )


def plan(t: FloatArray, q: FloatArray, settings: PipelineLike, name: str = "arrays") -> Plan:
    """The filter window, the training and held-out rows and the joints standing still."""
    count = int(t.shape[0])
    duration = float(t[-1] - t[0]) if count > 1 else 0.0
    try:
        filt = SavitzkyGolay.for_times(t, settings.window_s, settings.polyorder)
    except RobotDynamicsError as exc:
        raise IdentificationError(f"{name}: {exc}") from None
    _check_times(name, t)
    window, half = filt.window, filt.window // 2
    usable = count - 2 * half
    holdout_n = math.floor(usable * settings.holdout) if settings.holdout > 0 else 0
    gap = window if holdout_n else 0
    train_n = usable - holdout_n - gap
    minimum = max(2 * window, 20)
    if train_n < minimum or (settings.holdout > 0 and holdout_n < window):
        raise IdentificationError(
            f"{name}: {count} joint states ({duration:.2f} s) are too short to identify from: after dropping "
            f"{2 * half} edge samples of the {window}-sample differentiation window, a {gap}-sample gap and the "
            f"hold-out ({settings.holdout:.0%}), {max(train_n, 0)} training samples remain; at least {minimum} "
            "are needed (record longer, or lower --holdout)"
        )
    motion = np.ptp(q, axis=0)
    train = slice(half, half + train_n)
    held = slice(half + train_n + gap, count - half) if holdout_n else None
    return Plan(filt, train, held, motion < settings.min_motion, motion)


class PipelineLike(Protocol):
    """What :func:`plan` reads of the pipeline settings (``samples.PipelineSettings``)."""

    @property
    def window_s(self) -> float: ...
    @property
    def polyorder(self) -> int: ...
    @property
    def holdout(self) -> float: ...
    @property
    def min_motion(self) -> float: ...


@dataclass(frozen=True)
class Span:
    """Rows ``rows`` (local indices) of a data set's states, with the differentiation halo around them."""

    model: RobotModel
    pset: ParameterSet
    name: str
    t: FloatArray
    q: FloatArray
    qd: FloatArray | None  # measured velocity, or None: differentiate the position
    tau: FloatArray
    rows: slice
    filt: SavitzkyGolay
    static: NDArray[np.bool_]
    chunk: int
    edges: tuple[float, ...] = ()  # speeds that cut each joint's rows into bands (Buckets)
    grids: Grids | None = None  # column families whose sums are reduced too, and their grids
    fold: int = 0  # the training fold the span lies in (held-out spans: 0)
    stick_velocity: float = 0.0  # > 0: the rows around a joint's sticking in classes of their own (stick_band)
    acceleration: str = "savgol"  # or "difference": each step's change of velocity (.bag.step_difference)


def derivatives(span: Span) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``qd, qdd`` of the span's rows (samples module docstring, steps 2 and 4), and ``qd`` of every
    state of the span (its halo too)."""
    try:
        if span.acceleration == "difference":
            qd_all, qdd = step_accelerations(span.t, span.q, span.qd)
        elif span.qd is not None:
            (qdd,) = savgol(span.t, span.qd, (1,), span.filt)
            qd_all = np.array(span.qd, dtype=float)
        else:
            qd_all, qdd = savgol(span.t, span.q, (1, 2), span.filt)
    except RobotDynamicsError as exc:
        raise IdentificationError(f"{span.name}: {exc}") from None
    qd_all[:, span.static] = 0.0
    qdd = np.array(qdd[span.rows])
    qdd[:, span.static] = 0.0
    return np.array(qd_all[span.rows]), qdd, qd_all


def stick_band(qd: FloatArray, stick_velocity: float, half: int, moving: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """``(N,)``: the states within ``half`` samples of where a ``moving`` joint starts or stops sticking:
    ``|qd_j| < stick_velocity`` for at least ``half`` samples in a row.

    Where a joint sticks and breaks away its acceleration jumps, and a derivative filter spreads the jump
    over its window: every state within half a window of it carries an acceleration error on that joint,
    which the inertia couples into every joint's torque. Those states are left out of every joint's sums
    (as a joint's own slow rows are). A joint that sticks throughout (or never) does not count, nor one
    that passes through zero velocity without resting there: a smooth reversal has no jump."""
    stuck = np.abs(qd[:, moving]) < stick_velocity
    count = stuck.shape[0]
    for j in range(stuck.shape[1]):  # drop the short runs (a run at either end of the span is kept)
        edges = np.flatnonzero(np.diff(np.concatenate([[0], stuck[:, j].astype(np.int8), [0]])))
        start, stop = edges[0::2], edges[1::2]
        short = (stop - start < half) & (start > 0) & (stop < count)
        inside = np.zeros(count + 1, dtype=np.int64)
        np.add.at(inside, start[short], 1)
        np.add.at(inside, stop[short], -1)
        stuck[np.cumsum(inside[:-1]) > 0, j] = False
    change = np.zeros(count + 1, dtype=np.int64)
    change[1:-1] = np.any(stuck[1:] != stuck[:-1], axis=1)  # a change between states k - 1 and k, at k
    changes = np.cumsum(change)  # changes at or before each state
    k = np.arange(count)
    upper, lower = np.minimum(k + half, count - 1), np.maximum(k - half, 0)
    return np.asarray(changes[upper] - changes[lower] > 0)


def spans(
    model: RobotModel,
    pset: ParameterSet,
    t: FloatArray,
    q: FloatArray,
    qd: FloatArray | None,
    tau: FloatArray,
    rows: slice,
    cut: Plan,
    chunk: int,
    name: str,
    edges: tuple[float, ...] = (),
    grids: Grids | None = None,
    fold: int = 0,
    stick_velocity: float = 0.0,
    acceleration: str = "savgol",
) -> list[Span]:
    """``rows`` cut into spans of ``chunk`` states (the last may be shorter), each with its halo;
    ``edges``: the speeds that cut each joint's rows into classes (:func:`accumulate_parts`)."""
    half = cut.filt.window // 2
    out = []
    for start in range(rows.start, rows.stop, chunk):
        stop = min(start + chunk, rows.stop)
        lo, hi = start - half, stop + half  # within the series: the parts leave half a window at each end
        out.append(
            Span(
                model,
                pset,
                name,
                t[lo:hi],
                q[lo:hi],
                None if qd is None else qd[lo:hi],
                tau[lo:hi],
                slice(half, half + stop - start),
                cut.filt,
                cut.static,
                chunk,
                edges,
                grids,
                fold,
                stick_velocity,
                acceleration,
            )
        )
    return out


@dataclass(frozen=True)
class SpanResult:
    parts: list[Buckets]  # per chunk, by row class: normal equations, stock-model squared errors, column sums
    peak: FloatArray  # (n,) max |qd| over the rows
    fold: int = 0  # the span's training fold


_MODELS: dict[tuple[str, tuple[str, ...]], RobotModel] = {}


def shared(model: RobotModel) -> RobotModel:
    """One instance per distinct model in this process: every task arrives with its own unpickled copy,
    and the engine keeps its compiled kernels per instance (a worker reuses them across tasks)."""
    key = (model.fingerprint(), tuple(model.joint_names))
    if key not in _MODELS and len(_MODELS) >= 8:
        _MODELS.clear()
    return _MODELS.setdefault(key, model)


def reduce_span(span: Span) -> SpanResult:
    """A span's per-chunk normal equations and stock-model errors. Module level: runs in workers.
    Failures are :class:`IdentificationError` naming the data set."""
    qd, qdd, qd_all = derivatives(span)
    rows = span.rows
    sticking = None
    if span.stick_velocity > 0.0 and span.acceleration == "savgol":  # (a step's difference spreads nothing)
        sticking = stick_band(qd_all, span.stick_velocity, span.filt.window // 2, ~span.static)[rows]
    try:
        model = shared(span.model)
        parts = accumulate_parts(
            model,
            span.pset,
            span.q[rows],
            qd,
            qdd,
            span.tau[rows],
            span.chunk,
            span.edges,
            span.grids,
            sticking,
            span.static,
        )
    except RobotDynamicsError as exc:
        raise IdentificationError(f"{span.name}: {exc}") from None
    return SpanResult(parts, np.max(np.abs(qd), axis=0), span.fold)


def fold(results: list[SpanResult], dof: int, folds: int = 1) -> tuple[list[Buckets | None], FloatArray]:
    """Per fold its spans' chunks added in order (None where it has none), and the peak ``|qd|`` per joint."""
    total: list[Buckets | None] = [None] * folds
    peak: FloatArray = np.zeros(dof)
    for result in results:
        for part in result.parts:
            here = total[result.fold]
            total[result.fold] = part if here is None else here + part
        peak = np.maximum(peak, result.peak)
    return total, peak
