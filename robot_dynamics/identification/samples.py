"""One data set (a bag, or arrays) -> its normal equations: the per-bag step of the pipeline.

For each bag, independently of every other (so bags can be processed anywhere and summed):

1. read the ``sensor_msgs/JointState`` stream with the project's bag reader
   (:func:`robot_dynamics.bag.io.read_topics`, :func:`~robot_dynamics.bag.io.decode_joint_states`)
   in the model's joint order (``joint_map`` renames bag joints to model joints);
2. differentiate with the Savitzky–Golay filter on the real stamps
   (:mod:`robot_dynamics.bag.differentiate`): ``qdd`` from the measured velocity (or ``qd`` and ``qdd``
   from the position when the stream has no velocity), and drop ``window // 2`` samples at each end,
   where the filter's window is shifted inwards and less accurate;
3. split by time: the last ``holdout`` fraction is kept out of the fit (held-out data), with a gap
   of one filter window between the two parts so that no filter window spans both;
4. a joint whose position moves less than ``min_motion`` (peak to peak) in the bag is treated as
   standing still there (``qd = qdd = 0``): its sensor noise must not pose as excitation of its
   friction and armature parameters;
5. build the regressor chunk by chunk (bounded memory) and reduce to per-joint normal equations
   ``Y^T Y``, ``Y^T tau``, ``tau^T tau`` (:func:`robot_dynamics.identification.normal_equations`),
   after subtracting the torque the parameter set leaves at its model value (the model's inverse
   dynamics with the fitted friction law, :func:`friction_law`, minus ``Y theta_nominal``: other links
   for a payload fit, Stribeck, the asymmetric Coulomb part, ...); the stock model's squared errors
   (smooth friction, as the nodes compute it) are summed alongside for the nominal-vs-identified
   comparison.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.bag import io
from robot_dynamics.bag.differentiate import DEFAULT_POLYORDER, DEFAULT_WINDOW_S, SavitzkyGolay, savgol
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.model import FloatArray, RobotModel

from .estimate import NormalEquations, _gram
from .parameters import IdentificationError, ParameterSet, nominal_parameters
from .regressor import joint_rows, with_coulomb_velocity

CHUNK = 20_000  # states per regressor block (~100 MB of temporaries for a 7-DoF arm)
MIN_MOTION = 0.01  # rad or m, peak to peak: less and the joint counts as standing still in that bag
BAG_SUFFIXES = (".mcap", ".db3")


@dataclass(frozen=True)
class PipelineSettings:
    """How each data set is read and prepared (module docstring)."""

    joint_states: str = "joint_states"
    joint_map: tuple[tuple[str, str], ...] = ()  # (bag joint name, model joint name)
    holdout: float = 0.3
    window_s: float = DEFAULT_WINDOW_S
    polyorder: int = DEFAULT_POLYORDER
    min_motion: float = MIN_MOTION
    chunk: int = CHUNK

    def __post_init__(self) -> None:
        if not 0.0 <= self.holdout < 1.0:
            raise IdentificationError(f"holdout must be in [0, 1), got {self.holdout}")
        if not self.min_motion >= 0.0:
            raise IdentificationError(f"min_motion must be >= 0, got {self.min_motion}")


@dataclass(frozen=True)
class SampleStatistics:
    """What one data set contributes: normal equations and error sums, train and held-out parts."""

    name: str
    train: NormalEquations
    holdout: NormalEquations | None
    nominal_sse_train: FloatArray  # (n,) sum of (stock model - measured)^2 per joint
    nominal_sse_holdout: FloatArray
    messages: int  # joint states read
    duration: float  # s
    motion: FloatArray  # (n,) peak-to-peak position per joint
    static: tuple[str, ...] = ()  # joints that stood still in this data set
    excitation: FloatArray = field(default_factory=lambda: np.zeros(0))  # (n,) max |qd| per joint (train)


@dataclass(frozen=True)
class BagTask:
    """One bag to reduce (a plain picklable value: sent to worker processes or a Dask cluster)."""

    path: str
    model: RobotModel
    pset: ParameterSet
    settings: PipelineSettings


# ----------------------------------------------------------------------------------------------
# finding bags
# ----------------------------------------------------------------------------------------------
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


# ----------------------------------------------------------------------------------------------
# reading
# ----------------------------------------------------------------------------------------------
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


def read_bag(path: str, model: RobotModel, settings: PipelineSettings) -> io.JointStateSeries:
    """The joint states of a bag in the model's joint order (efforts required)."""
    raw = io.read_topics(path, [settings.joint_states], types={settings.joint_states: io.JOINT_STATE})
    names = bag_names_for(model, dict(settings.joint_map))
    try:
        series = io.decode_joint_states(raw[io.topic_name(settings.joint_states)], names)
    except io.BagError as exc:
        raise IdentificationError(f"{path}: {exc} (robot {model.name!r})") from None
    if series.effort is None:
        raise IdentificationError(
            f"{path}: the joint states on {series.topic} carry no effort: identification needs measured joint "
            "torques (record the driver's effort field)"
        )
    return series


def _finite_rows(path: str, series: io.JointStateSeries) -> None:
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
def friction_law(model: RobotModel, pset: ParameterSet) -> tuple[bool, RobotModel]:
    """``(smooth, model)`` whose inverse dynamics is the law ``Y theta`` is fitted with: exact sign for
    ``coulomb="sign"``; else smooth, with the set's tanh width where Coulomb friction is identified
    (and the model's own widths where it is not, as the nodes compute it)."""
    if pset.coulomb == "sign":
        return False, model
    if pset.coulomb == "tanh" and any(j.friction.smoothing_velocity != pset.coulomb_velocity for j in model.joints):
        return True, with_coulomb_velocity(model, pset.coulomb_velocity)
    return True, model


def _accumulate(
    model: RobotModel,
    pset: ParameterSet,
    q: FloatArray,
    qd: FloatArray,
    qdd: FloatArray,
    tau: FloatArray,
    chunk: int,
) -> tuple[NormalEquations, FloatArray]:
    """Normal equations of ``tau - fixed`` and the stock model's squared errors, chunk by chunk."""
    from robot_dynamics.dynamics import inverse_dynamics

    smooth, reference = friction_law(model, pset)
    theta0 = nominal_parameters(model, pset)
    n, p = model.dof, pset.size(model)
    total: NormalEquations | None = None
    sse = np.zeros(n)
    for start in range(0, q.shape[0], chunk):
        sl = slice(start, start + chunk)
        stock = np.asarray(inverse_dynamics(model, q[sl], qd[sl], qdd[sl], friction=True, smooth=True), dtype=float)
        sse += np.sum((stock - tau[sl]) ** 2, axis=0)
        if smooth and reference is model:
            law = stock
        else:
            law = np.asarray(inverse_dynamics(reference, q[sl], qd[sl], qdd[sl], friction=True, smooth=smooth))
        # the fitted torque tau - fixed, fixed = law - Y theta0 (the torque outside Y theta at the
        # model's values), joint by joint from the regressor's non-zero rows (never (N, n, p))
        target = tau[sl] - law
        ata, atb, btb = np.zeros((n, p, p)), np.zeros((n, p)), np.zeros(n)
        for j, cols, A in joint_rows(model, q[sl], qd[sl], qdd[sl], pset):
            b = target[:, j] + A @ theta0[cols]
            ata[j][np.ix_(cols, cols)] = _gram(A)
            atb[j, cols] = b @ A
            btb[j] = b @ b
        part = NormalEquations(ata, atb, btb, int(target.shape[0]))
        total = part if total is None else total + part
    assert total is not None
    return total, sse


@dataclass(frozen=True)
class Prepared:
    """Derivatives and the train/held-out rows of one data set (module docstring, steps 2–4)."""

    qd: FloatArray
    qdd: FloatArray
    train: slice
    holdout: slice | None
    static: NDArray[np.bool_]
    motion: FloatArray


def prepare(
    t: FloatArray, q: FloatArray, qd: FloatArray | None, settings: PipelineSettings, name: str = "arrays"
) -> Prepared:
    count = int(t.shape[0])
    duration = float(t[-1] - t[0]) if count > 1 else 0.0
    try:
        filt = SavitzkyGolay.for_times(t, settings.window_s, settings.polyorder)
    except RobotDynamicsError as exc:
        raise IdentificationError(f"{name}: {exc}") from None
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
    try:
        if qd is not None:
            (qdd,) = savgol(t, qd, (1,), filt)
            qd_used = np.array(qd, dtype=float)
        else:
            qd_used, qdd = savgol(t, q, (1, 2), filt)
    except RobotDynamicsError as exc:
        raise IdentificationError(f"{name}: {exc}") from None
    motion = np.ptp(q, axis=0)
    static = motion < settings.min_motion
    qd_used[:, static] = 0.0
    qdd[:, static] = 0.0
    train = slice(half, half + train_n)
    held = slice(half + train_n + gap, count - half) if holdout_n else None
    return Prepared(qd_used, qdd, train, held, static, motion)


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
) -> SampleStatistics:
    """The per-data-set reduction (module docstring, steps 2–5) of measured ``t, q, qd, tau``."""
    prep = prepare(t, q, qd, settings, name)
    tr = prep.train
    ne_train, sse_train = _accumulate(model, pset, q[tr], prep.qd[tr], prep.qdd[tr], tau[tr], settings.chunk)
    ne_held: NormalEquations | None = None
    sse_held: FloatArray = np.zeros(model.dof)
    if prep.holdout is not None:
        ho = prep.holdout
        ne_held, sse_held = _accumulate(model, pset, q[ho], prep.qd[ho], prep.qdd[ho], tau[ho], settings.chunk)
    return SampleStatistics(
        name=name,
        train=ne_train,
        holdout=ne_held,
        nominal_sse_train=sse_train,
        nominal_sse_holdout=sse_held,
        messages=int(t.shape[0]),
        duration=float(t[-1] - t[0]),
        motion=prep.motion,
        static=tuple(model.joint_names[j] for j in np.flatnonzero(prep.static)),
        excitation=np.max(np.abs(prep.qd[tr]), axis=0),
    )


def _bag_arrays(task: BagTask) -> tuple[FloatArray, FloatArray, FloatArray | None, FloatArray]:
    series = read_bag(task.path, task.model, task.settings)
    _finite_rows(task.path, series)
    assert series.effort is not None
    t = series.times()  # header stamps (receive times if unstamped); checked by the filter
    return t, series.position, series.velocity, series.effort


_MODELS: dict[tuple[str, tuple[str, ...]], RobotModel] = {}


def _shared(model: RobotModel) -> RobotModel:
    """One instance per distinct model in this process: every task arrives with its own unpickled copy,
    and the engine keeps its compiled kernels per instance (a worker reuses them across bags)."""
    key = (model.fingerprint(), tuple(model.joint_names))
    if key not in _MODELS and len(_MODELS) >= 8:
        _MODELS.clear()
    return _MODELS.setdefault(key, model)


def bag_statistics(task: BagTask) -> SampleStatistics:
    """Reads and reduces one bag (module docstring). A module-level function: picklable for workers.

    Every failure is an :class:`IdentificationError` whose message names the bag (exceptions cross
    process boundaries as their message).
    """
    try:
        model = _shared(task.model)
        t, q, qd, tau = _bag_arrays(task)
        return statistics_from_arrays(model, task.pset, t, q, qd, tau, task.settings, name=task.path)
    except IdentificationError:
        raise
    except (RobotDynamicsError, OSError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        if task.path not in str(message):
            message = f"{task.path}: {message}"
        raise IdentificationError(str(message)) from None


def held_out_series(task: BagTask) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """``t, q, qd, qdd, tau`` of a bag's held-out part exactly as :func:`bag_statistics` uses it (plots);
    the training part when there is no hold-out."""
    t, q, qd, tau = _bag_arrays(task)
    prep = prepare(t, q, qd, task.settings, task.path)
    rows = prep.holdout if prep.holdout is not None else prep.train
    return t[rows], q[rows], prep.qd[rows], prep.qdd[rows], tau[rows]
