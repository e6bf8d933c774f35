"""One data set (a bag, or arrays) -> its normal equations: the per-bag step of the pipeline.

For each bag, independently of every other (so bags can be processed anywhere and summed):

1. read the ``sensor_msgs/JointState`` stream with the project's bag reader
   (:func:`robot_dynamics.bag.read_topics`, :func:`~robot_dynamics.bag.decode_joint_states`)
   in the model's joint order (``joint_map`` renames bag joints to model joints); with an
   ``effort_lag`` of ``L`` messages, pair each state with the effort ``L`` messages later (:func:`lagged`);
2. differentiate with the Savitzky–Golay filter on the real stamps
   (:mod:`robot_dynamics.bag.differentiate`): ``qdd`` from the measured velocity (or ``qd`` and ``qdd``
   from the position when the stream has no velocity); or, ``acceleration="difference"``, each step's
   change of velocity unsmoothed (:mod:`robot_dynamics.bag.step_difference`: a simulator's recording);
   drop ``window // 2`` samples at each end, where the filter's window is shifted inwards;
3. split by time: the last ``holdout`` fraction is kept out of the fit (held-out data), with a gap
   of one filter window between the two parts so that no filter window spans both;
4. a joint whose position moves less than ``min_motion`` (peak to peak) in the bag is treated as
   standing still there (``qd = qdd = 0``): its sensor noise must not pose as excitation of its
   friction and armature parameters;
5. cut the training and held-out rows into time spans of ``chunk`` states (:mod:`.spans`), each
   differentiated with half a filter window of overlap on either side (so the cut changes nothing),
   and, span by span, build the regressor's non-zero rows chunk by chunk (bounded memory) and
   reduce to per-joint normal equations ``Y^T Y``, ``Y^T tau``, ``tau^T tau``,
   after subtracting the torque the parameter set leaves at its model value (the model's inverse
   dynamics with the fitted friction law, :func:`.regressor.friction_law`, minus ``Y theta_nominal``: other links
   for a payload fit, Stribeck, the asymmetric Coulomb part, ...); the stock model's squared errors
   (smooth friction, as the nodes compute it) are summed alongside for the nominal-vs-identified
   comparison. A joint's rows below its ``reversal_velocity`` are left out of its sums; with
   ``stick_velocity`` > 0 so are every joint's rows within half a filter window of where any joint
   starts or stops sticking (:func:`.spans.stick_band`; the filter's error, so not with "difference").

The module is longer than 400 lines because the per-data-set step's settings, its statistics and the
reading of a bag belong together: a worker process (a local process or a Dask worker) imports this
module to reduce a bag, and nothing else of the pipeline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from robot_dynamics.bag.decode import JointStateSeries, decode_joint_states
from robot_dynamics.bag.differentiate import DEFAULT_POLYORDER
from robot_dynamics.bag.reader import JOINT_STATE, BagError, read_topics, topic_name
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.model import FloatArray, RobotModel

from .estimate import NormalEquations
from .parallel import map_tasks
from .parameters import IdentificationError, ParameterSet
from .rows import Buckets, Part, Selection
from .spans import (
    Plan,
    Span,
    SpanResult,
    derivatives,
    fold,
    plan,
    reduce_span,
    shared,
    spans,
)
from .stribeck import GRID as STRIBECK_GRID

# rad/s or m/s: the tanh widths the smooth-coulomb law searches, octaves about the default 0.01
COULOMB_WIDTHS = 0.01 * 2.0 ** np.arange(-2, 6)

CHUNK = 20_000  # states per regressor block (~100 MB of temporaries for a 7-DoF arm)
MIN_MOTION = 0.01  # rad or m, peak to peak: less and the joint counts as standing still in that bag
REVERSAL_VELOCITY = 0.1  # rad/s or m/s: slower and a joint's training rows are left out (stiction at reversals)
STICK_VELOCITY = 0.005  # rad/s or m/s: slower, a joint sticks; 0: no rows left out around sticking (step 5)
WINDOW_S = 0.05  # s: Savitzky-Golay window of the identification (half the bag tools' default: less smoothing bias)
BAG_SUFFIXES = (".mcap", ".db3")
MAX_LAG = 5  # samples: the largest effort lag accepted (identify --effort-lag)
ACCELERATIONS = ("savgol", "difference")  # how the acceleration is estimated (step 2)
CUT_EDGES = (0.05, 0.1)  # rad/s or m/s: the speeds that cut each joint's rows into classes (spans.Buckets)
FOLDS = 5  # contiguous blocks of the training part: the folds of the blocked cross-validation (.choice)


@dataclass(frozen=True)
class PipelineSettings:
    """How each data set is read and prepared (module docstring)."""

    joint_states: str = "joint_states"
    joint_map: tuple[tuple[str, str], ...] = ()  # (bag joint name, model joint name)
    holdout: float = 0.3
    window_s: float = WINDOW_S
    polyorder: int = DEFAULT_POLYORDER
    min_motion: float = MIN_MOTION
    chunk: int = CHUNK
    reversal_velocity: float | tuple[float, ...] = REVERSAL_VELOCITY  # per joint, or one for all
    stick_velocity: float = STICK_VELOCITY  # > 0: a joint slower than this sticks (step 5, spans.stick_band)
    stick_band: bool = True  # every joint's rows around a joint's sticking left out of the fit (step 5)
    cut_edges: tuple[float, ...] = CUT_EDGES  # the row classes' speeds, besides the reversal velocities
    folds: int = FOLDS  # training folds reduced apart (blocked cross-validation, .choice)
    stribeck_grid: tuple[float, ...] = tuple(float(v) for v in STRIBECK_GRID)  # () = no Stribeck sums
    coulomb_widths: tuple[float, ...] = tuple(float(v) for v in COULOMB_WIDTHS)  # () = no Coulomb-width sums
    effort_lag: int = 0  # samples: the effort of message k + lag goes with the state of message k (step 1)
    acceleration: str = "savgol"  # or "difference", unsmoothed (step 2; robot_dynamics.bag.step_difference)

    def grids(self) -> dict[str, FloatArray]:
        """The column families reduced alongside (:mod:`.columns`) and their grids."""
        out = {"stribeck": np.asarray(self.stribeck_grid, dtype=float), "coulomb": np.asarray(self.coulomb_widths)}
        return {k: v for k, v in out.items() if v.size}

    def reversal(self, model: RobotModel) -> FloatArray:
        """``(n,)`` velocity below which a joint's training rows are left out (step 5)."""
        v = np.asarray(self.reversal_velocity, dtype=float)
        if v.ndim == 0:
            return np.full(model.dof, float(v))
        if v.shape != (model.dof,):
            raise IdentificationError(
                f"reversal velocity: expected one value or {model.dof} (one per joint of {model.name!r}), got {len(v)}"
            )
        return v.copy()

    def edges(self, model: RobotModel) -> tuple[float, ...]:
        """The speeds that cut each joint's rows into classes: :attr:`cut_edges` and the reversal velocities."""
        values = {float(v) for v in self.cut_edges} | {float(v) for v in self.reversal(model)}
        return tuple(sorted(v for v in values if v > 0.0))

    def selection(self, model: RobotModel) -> Selection:
        """The rows the fit uses (step 5)."""
        return Selection(tuple(float(v) for v in self.reversal(model)), self.stick_band and self.stick_velocity > 0.0)

    def __post_init__(self) -> None:
        if not (isinstance(self.folds, int) and self.folds >= 1):
            raise IdentificationError(f"folds must be a positive integer, got {self.folds!r}")
        v = np.asarray(self.reversal_velocity, dtype=float)
        if v.ndim > 1 or not np.all(np.isfinite(v)) or np.any(v < 0.0):
            raise IdentificationError(f"reversal_velocity must be >= 0 (one value or one per joint), got {v.tolist()}")
        if v.ndim == 1:
            object.__setattr__(self, "reversal_velocity", tuple(float(x) for x in v))
        if not (math.isfinite(self.stick_velocity) and self.stick_velocity >= 0.0):
            raise IdentificationError(f"stick_velocity must be >= 0, got {self.stick_velocity}")
        if not 0.0 <= self.holdout < 1.0:
            raise IdentificationError(f"holdout must be in [0, 1), got {self.holdout}")
        if not self.min_motion >= 0.0:
            raise IdentificationError(f"min_motion must be >= 0, got {self.min_motion}")
        if self.acceleration not in ACCELERATIONS:
            raise IdentificationError(f"acceleration must be one of {list(ACCELERATIONS)}, got {self.acceleration!r}")
        if isinstance(self.effort_lag, bool) or not isinstance(self.effort_lag, int) or abs(self.effort_lag) > MAX_LAG:
            raise IdentificationError(
                f"effort lag must be an integer from -{MAX_LAG} to {MAX_LAG}, got {self.effort_lag!r}"
            )


@dataclass(frozen=True)
class SampleStatistics:
    """What one data set contributes: the sums (:class:`.spans.Part`: normal equations, stock-model
    squared errors, column families' sums) of the training rows a :class:`.spans.Selection` keeps and
    of the held-out rows (all of them, those the selection leaves out also on their own); and the same
    by row class (:class:`.spans.Buckets`) per training fold and for the held-out part, from which any
    other selection's sums follow (:func:`with_selection`)."""

    name: str
    train_sums: Part
    holdout_sums: Part | None
    messages: int  # joint states read
    duration: float  # s
    motion: FloatArray  # (n,) peak-to-peak position per joint
    static: tuple[str, ...] = ()  # joints that stood still in this data set
    excitation: FloatArray = field(default_factory=lambda: np.zeros(0))  # (n,) max |qd| per joint (train)
    folds: tuple[Buckets, ...] = ()  # the training part's sums by row class, per fold (in time order)
    holdout_buckets: Buckets | None = None  # the held-out part's sums by row class
    selection: Selection | None = None  # the rows of train_sums (and those left out of holdout_sums)
    excerpt: tuple[FloatArray, FloatArray, FloatArray | None, FloatArray] | None = None  # raw t, q, qd, tau

    @property
    def train(self) -> NormalEquations:
        return self.train_sums.ne

    @property
    def holdout(self) -> NormalEquations | None:
        return None if self.holdout_sums is None else self.holdout_sums.ne

    @property
    def nominal_sse_train(self) -> FloatArray:
        """(n,) sum of (stock model - measured)^2 per joint over the training rows."""
        return self.train_sums.sse

    @property
    def nominal_sse_holdout(self) -> FloatArray:
        return np.zeros_like(self.train_sums.sse) if self.holdout_sums is None else self.holdout_sums.sse


def with_selection(stats: SampleStatistics, selection: Selection) -> SampleStatistics:
    """``stats`` with the training and held-out sums of ``selection``'s rows (from its row classes)."""
    train = stats.folds[0]
    for more in stats.folds[1:]:
        train = train + more
    held = stats.holdout_buckets
    return replace(
        stats,
        train_sums=train.select(selection),
        holdout_sums=None if held is None else held.split(selection),
        selection=selection,
    )


@dataclass(frozen=True)
class BagTask:
    """One bag to reduce (a plain picklable value: sent to worker processes or a Dask cluster)."""

    path: str
    model: RobotModel
    pset: ParameterSet
    settings: PipelineSettings


def is_bag(path: Path) -> bool:
    """A rosbag2 directory (``metadata.yaml`` inside) or a single ``.mcap``/``.db3`` file."""
    return (path.is_dir() and (path / "metadata.yaml").is_file()) or (
        path.is_file() and path.suffix.lower() in BAG_SUFFIXES
    )


def expand_bags(paths: list[str] | tuple[str, ...]) -> list[str]:
    """Bags of ``paths`` in order: a bag as is, a directory of bags as its bags sorted by name."""
    out: list[str] = []
    for text in paths:
        path = Path(text).expanduser()
        if not path.exists():
            raise IdentificationError(f"{text}: no such bag or directory")
        if is_bag(path):
            out.append(str(path))
            continue
        if not path.is_dir():
            raise IdentificationError(f"{text}: not a rosbag2 bag (a directory with metadata.yaml, .mcap or .db3)")
        found = sorted(str(p) for p in path.iterdir() if is_bag(p))
        if not found:
            raise IdentificationError(f"{text}: a directory without bags (no metadata.yaml, .mcap or .db3 inside)")
        out += found
    duplicates = sorted({p for p in out if out.count(p) > 1})
    if duplicates:
        raise IdentificationError(f"bags given more than once: {duplicates}")
    return out


def bag_names_for(model: RobotModel, joint_map: Mapping[str, str]) -> list[str]:
    """The bag's joint names in model order (``joint_map``: bag name -> model name)."""
    reverse: dict[str, str] = {}
    for bag_name, model_name in joint_map.items():
        if model_name not in model.joint_names:
            raise IdentificationError(
                f"joint map {bag_name}={model_name}: the robot {model.name!r} has no joint {model_name!r} "
                f"(joints: {', '.join(model.joint_names)})"
            )
        if model_name in reverse:
            raise IdentificationError(f"joint map: two bag joints map to {model_name!r}")
        reverse[model_name] = bag_name
    return [reverse.get(name, name) for name in model.joint_names]


def read_bag(path: str, model: RobotModel, settings: PipelineSettings) -> JointStateSeries:
    """The joint states of a bag in the model's joint order (efforts required)."""
    raw = read_topics(path, [settings.joint_states], types={settings.joint_states: JOINT_STATE})
    names = bag_names_for(model, dict(settings.joint_map))
    try:
        series = decode_joint_states(raw[topic_name(settings.joint_states)], names)
    except BagError as exc:
        raise IdentificationError(f"{path}: {exc} (robot {model.name!r})") from None
    if series.effort is None:
        raise IdentificationError(
            f"{path}: the joint states on {series.topic} carry no effort: identification needs measured joint "
            "torques (record the driver's effort field)"
        )
    return series


def _finite_rows(path: str, series: JointStateSeries) -> None:
    for what, values in (("position", series.position), ("velocity", series.velocity), ("effort", series.effort)):
        if values is None:
            continue
        bad = ~np.isfinite(values).all(axis=1)
        if bad.any():
            k = int(np.argmax(bad))
            raise IdentificationError(
                f"{path}: {what} missing or not finite in {int(bad.sum())} of {len(series)} joint states "
                f"(first: message {k})"
            )


# ----------------------------------------------------------------------------------------------
# preparation and reduction
# ----------------------------------------------------------------------------------------------
def _split(
    model: RobotModel,
    pset: ParameterSet,
    t: FloatArray,
    q: FloatArray,
    qd: FloatArray | None,
    tau: FloatArray,
    settings: PipelineSettings,
    name: str,
) -> tuple[Plan, list[Span], int]:
    """The data set's plan, its training spans (fold by fold) then its held-out spans, and the number of
    training spans."""
    cut = plan(t, q, settings, name)
    chunk = max(1, int(settings.chunk))
    grid = settings.grids()
    edges = settings.edges(model)
    stick, acc = settings.stick_velocity, settings.acceleration
    train: list[Span] = []
    bounds = np.linspace(cut.train.start, cut.train.stop, settings.folds + 1).round().astype(int)
    for k in range(settings.folds):
        rows = slice(int(bounds[k]), int(bounds[k + 1]))
        train += spans(model, pset, t, q, qd, tau, rows, cut, chunk, name, edges, grid, k, stick, acc)
    held = (
        []
        if cut.holdout is None
        else spans(model, pset, t, q, qd, tau, cut.holdout, cut, chunk, name, edges, grid, 0, stick, acc)
    )
    return cut, train + held, len(train)


EXCERPT = 50_000  # states of each data set's training part kept raw for the sensor-noise estimate (.noise)


def _statistics(
    model: RobotModel,
    name: str,
    t: FloatArray,
    cut: Plan,
    results: list[SpanResult],
    n_train: int,
    settings: PipelineSettings,
    raw: tuple[FloatArray, FloatArray, FloatArray | None, FloatArray],
) -> SampleStatistics:
    n = model.dof
    folds, peak = fold(results[:n_train], n, settings.folds)
    held, _ = fold(results[n_train:], n)
    if any(f is None for f in folds):
        raise IdentificationError(f"{name}: too few training samples for {settings.folds} folds")
    half = cut.filt.window // 2
    lo, hi = cut.train.start - half, min(cut.train.start + EXCERPT, cut.train.stop) + half
    excerpt = (raw[0][lo:hi], raw[1][lo:hi], None if raw[2] is None else raw[2][lo:hi], raw[3][lo:hi])
    stats = SampleStatistics(
        name=name,
        train_sums=folds[0].total(),  # type: ignore[union-attr]
        holdout_sums=None,
        messages=int(t.shape[0]),
        duration=float(t[-1] - t[0]),
        motion=cut.motion,
        static=tuple(model.joint_names[j] for j in np.flatnonzero(cut.static)),
        excitation=peak,
        folds=tuple(f for f in folds if f is not None),
        holdout_buckets=held[0],
        excerpt=excerpt,
    )
    return with_selection(stats, settings.selection(model))


def statistics_from_arrays(
    model: RobotModel,
    pset: ParameterSet,
    t: FloatArray,
    q: FloatArray,
    qd: FloatArray | None,
    tau: FloatArray,
    settings: PipelineSettings = PipelineSettings(),
    *,
    name: str = "arrays",
    jobs: int | None = 1,
    scheduler: Any = None,
) -> SampleStatistics:
    """The per-data-set reduction (module docstring, steps 2–5) of measured ``t, q, qd, tau``.

    Its time spans (:mod:`.spans`) are reduced in this process (``jobs=1``), in ``jobs`` local
    processes or on a Dask ``scheduler`` (:func:`.parallel.map_tasks`), with the same result.
    """
    cut, tasks, n_train = _split(model, pset, t, q, qd, tau, settings, name)
    results = map_tasks(reduce_span, tasks, jobs=jobs, scheduler=scheduler, progress=False, label="spans")
    return _statistics(model, name, t, cut, results, n_train, settings, (t, q, qd, tau))


def _bag_arrays(task: BagTask) -> tuple[FloatArray, FloatArray, FloatArray | None, FloatArray]:
    series = read_bag(task.path, task.model, task.settings)
    _finite_rows(task.path, series)
    assert series.effort is not None
    t = series.times()  # header stamps (receive times if unstamped); checked by the filter
    return lagged(task.settings.effort_lag, t, series.position, series.velocity, series.effort)


def lagged(
    lag: int, t: FloatArray, q: FloatArray, qd: FloatArray | None, tau: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray | None, FloatArray]:
    """The effort of message ``k + lag`` paired with the state of message ``k`` (the ``|lag|`` messages
    without a partner dropped). A simulator that reports in each state the torque it applied over the
    step that led there (this package's ``simulator_node``, Gazebo's effort interface) has lag 1: its
    torque belongs to the state one message earlier."""
    if lag == 0:
        return t, q, qd, tau
    keep = slice(0, -lag) if lag > 0 else slice(-lag, None)
    moved = slice(lag, None) if lag > 0 else slice(0, lag)
    return t[keep], q[keep], None if qd is None else qd[keep], tau[moved]


def _named(path: str, exc: BaseException) -> IdentificationError:
    """An error of bag ``path`` as an :class:`IdentificationError` whose message names the bag."""
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    if path not in str(message):
        message = f"{path}: {message}"
    return IdentificationError(str(message))


def bag_statistics(task: BagTask) -> SampleStatistics:
    """Reads and reduces one bag (module docstring). A module-level function: picklable for workers.

    Every failure is an :class:`IdentificationError` whose message names the bag (exceptions cross
    process boundaries as their message).
    """
    try:
        model = shared(task.model)
        t, q, qd, tau = _bag_arrays(task)
        return statistics_from_arrays(model, task.pset, t, q, qd, tau, task.settings, name=task.path)
    except IdentificationError:
        raise
    except (RobotDynamicsError, OSError, KeyError) as exc:
        raise _named(task.path, exc) from None


def bags_in_spans(
    tasks: Sequence[BagTask], *, jobs: int | None = None, scheduler: Any = None, progress: bool | None = None
) -> list[SampleStatistics]:
    """The same as ``[bag_statistics(task) for task in tasks]``, with the bags read here and their time
    spans (:mod:`.spans`) reduced in parallel: several workers serve one long bag."""
    layout = []
    work: list[Span] = []
    for task in tasks:
        try:
            t, q, qd, tau = _bag_arrays(task)
            cut, parts, n_train = _split(task.model, task.pset, t, q, qd, tau, task.settings, task.path)
        except IdentificationError:
            raise
        except (RobotDynamicsError, OSError, KeyError) as exc:
            raise _named(task.path, exc) from None
        layout.append((task, (t, q, qd, tau), cut, len(work), len(work) + len(parts), n_train))
        work += parts
    states = sum(span.rows.stop - span.rows.start for span in work)
    if scheduler is None and tasks and states < tasks[0].settings.chunk:
        jobs = 1  # less than one chunk of work: starting processes would cost more than it saves
    results = map_tasks(reduce_span, work, jobs=jobs, scheduler=scheduler, progress=progress, label="spans")
    return [
        _statistics(task.model, task.path, raw[0], cut, results[a:b], n_train, task.settings, raw)
        for task, raw, cut, a, b, n_train in layout
    ]


def held_out_series(task: BagTask) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """``t, q, qd, qdd, tau`` of a bag's held-out part exactly as :func:`bag_statistics` uses it (plots);
    the training part when there is no hold-out."""
    return _part_series(task, holdout=True)


def training_series(task: BagTask) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """``t, q, qd, qdd, tau`` of a bag's training part, every row (the slow ones too), as
    :func:`bag_statistics` differentiates it (:mod:`.reversals`)."""
    return _part_series(task, holdout=False)


def _part_series(task: BagTask, holdout: bool) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    t, q, qd, tau = _bag_arrays(task)
    cut = plan(t, q, task.settings, task.path)
    rows = cut.holdout if holdout and cut.holdout is not None else cut.train
    acc, count = task.settings.acceleration, rows.stop - rows.start
    (span,) = spans(task.model, task.pset, t, q, qd, tau, rows, cut, count, task.path, acceleration=acc)
    qd_rows, qdd_rows, _ = derivatives(span)
    return t[rows], q[rows], qd_rows, qdd_rows, tau[rows]
