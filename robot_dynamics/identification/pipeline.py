"""``identify``: recorded bags -> identified model (the pipeline; pure, no ROS).

1. every bag is reduced to its normal equations on its own (:mod:`.samples`: read, differentiate,
   split off the held-out part, regressor chunk by chunk), in parallel (:mod:`.parallel`: local
   processes or a Dask cluster); the per-bag results are summed in bag order, so the result does not
   depend on how the bags were spread over workers;
2. the base parameters of the model and parameter set (Gautier & Khalil 1990; Khalil & Dombre,
   "Modeling, Identification and Control of Robots", 2002, section 12.3.3) and the data's
   excitation: a base parameter the data do not determine (a joint that never moved, a direction of
   the normal equations with no information) is named, and either fixed at its nominal value by the
   prior (``prior_weight > 0``) or reported as an error;
3. two-pass weighted least squares (Khalil & Dombre 12.4.2; Gautier 1997): an unweighted fit gives
   each joint's residual variance ``sigma_j^2``, the second pass weighs joint ``j`` with
   ``1 / sigma_j^2``; its residuals give the final ``sigma_j`` (an unweighted fit lets the joints
   with large torques dominate and overstates the small joints' noise), or ``noise_std`` is given;
4. by default the physically consistent fit: the same weighted cost over every link's positive
   definite pseudo-inertia (Wensing, Kim & Slotine 2017), a convex semidefinite program (:mod:`.consistent`);
5. the identified model (:func:`~robot_dynamics.identification.apply_parameters`: inertial
   parameters, armature, joint-side friction; the constant offset a bias of the reading, reported but
   not deployed, or with ``offsets="torque"`` a torque the drive applies, deployed by
   :func:`~.parameters.deploy_offsets`: docs/identification.md, "Offsets"), and per joint the RMS
   error of the stock and the identified model on the training and the held-out data.

``payload_only``: the last link's 10 inertial parameters (link + payload) and the offsets only; every
other parameter keeps its nominal value (its torque is subtracted as known). The payload — the
identified last link minus the nominal one — is reported in the tool frame.

Step 1 is :func:`identify` here; steps 2–5 are :func:`.fitting.fit_statistics`; the result is
:class:`.result.IdentificationResult`. With the default parameter set the data are reduced once with
every friction law's parameters (:mod:`.friction_laws`), the chosen law is fitted and, for the report,
every other law on the same split (:func:`compare_laws`).

The module is longer than 400 lines because :func:`identify` is where the steps meet — the reading, the
effort's pairing, the choice of rows (:mod:`.choice`), the fit, the reversal fit and the sensor-noise
estimate — with every option a user gives and its check, in the order they run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from robot_dynamics.errors import ModelError
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.models.provenance import Provenance
from robot_dynamics.models.robots import DEFAULT_ROBOT, load_robot

from .base import BaseParameters, base_parameters
from .bounds import MASS_BAND, density_bounds, link_ellipsoids
from .choice import PLAIN_FRICTION, PLAIN_VELOCITY, Choice, choose_rows
from .fitting import fit_statistics
from .friction_laws import (
    DEFAULT_FRICTION,
    FRICTION_LAWS,
    check_friction,
    friction_parameter_set,
    reduction_parameter_set,
)
from .noise import sensor_noise
from .parallel import default_jobs, map_tasks
from .parameters import IdentificationError, ParameterSet, check_offset_use, deploy_offsets
from .result import Excitation, IdentificationResult, payload_parameter_set
from .reversals import fit_reversals, slow_series
from .samples import (
    ACCELERATIONS,
    REVERSAL_VELOCITY,
    STICK_VELOCITY,
    WINDOW_S,
    BagTask,
    PipelineSettings,
    SampleStatistics,
    bag_statistics,
    bags_in_spans,
    expand_bags,
    with_selection,
)

__all__ = ["Excitation", "IdentificationResult", "compare_laws", "fit_statistics", "identify", "robot_geometry"]

METHODS = ("identify", "plain")  # identify's fit, or plain weighted least squares (the baseline)
AUTO = "auto"


def _velocities(value: float | Sequence[float]) -> float | tuple[float, ...]:
    if isinstance(value, (int, float)):
        return float(value)
    return tuple(float(v) for v in value)


def robot_geometry(
    robot: str | RobotModel, model: RobotModel, provenance: Provenance | None
) -> list[FloatArray | None] | None:
    """The URDF geometry of ``model``'s links (:func:`robot_dynamics.models.link_geometry.link_points`),
    from the file and chain options of ``provenance`` or the URDF file ``robot``; None if there is none."""
    from robot_dynamics.models.link_geometry import link_points

    base: str | None = None
    tip: str | None = None
    locks: dict[str, float] = {}
    if provenance is not None and provenance.robot:
        source, base, tip, locks = (
            provenance.robot,
            provenance.base_link,
            provenance.tip_link,
            dict(provenance.locked_joints),
        )
    elif isinstance(robot, str):
        source = robot
    else:
        return None
    if Path(source).suffix.lower() not in (".urdf", ".xml") or not Path(source).is_file():
        return None
    try:
        points = link_points(source, base, tip, locks)
    except (ModelError, OSError):
        return None
    return points if len(points) == model.dof else None


def compare_laws(
    model: RobotModel,
    stats: Sequence[SampleStatistics],
    result: IdentificationResult,
    coulomb: str,
    options: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """Every friction law (:data:`.friction_laws.FRICTION_LAWS`) fitted like ``result`` on the same data
    and split: per law the per-joint training and held-out RMS (every held-out row, and those at or above
    the reversal velocity), the noise estimate, and one held-out score ``sqrt(mean_j rms_j^2 / sigma_j^2)``
    on the latter rows, with ``result``'s ``sigma`` for every law."""
    rows: list[dict[str, Any]] = []
    for law in FRICTION_LAWS:
        try:
            r = (
                result
                if law == result.friction
                else fit_statistics(
                    model,
                    friction_parameter_set(law, coulomb),
                    stats,
                    friction=law,
                    base=result.base,  # reused where the law's parameters are the same (stribeck)
                    ellipsoids=result.ellipsoids,
                    **options,
                )
            )
        except (IdentificationError, ModelError) as exc:
            rows.append({"friction": law, "error": str(exc)})
            continue
        held, moving, train = r.rms["identified_holdout"], r.rms["identified_holdout_moving"], r.rms["identified_train"]
        score = None if moving is None else float(np.sqrt(np.mean(moving**2 * result.weights)))
        rows.append(
            {
                "friction": law,
                "method": r.fit.method,
                "holdout_score": score,
                "holdout_rms": None if held is None else [float(v) for v in held],
                "holdout_moving_rms": None if moving is None else [float(v) for v in moving],
                "train_rms": None if train is None else [float(v) for v in train],
                "noise_std": [float(v) for v in r.noise_std],
                "deployable": r.identified is not None,
            }
        )
    return rows


LAGS = (0, 1, -1)  # effort lags (messages) effort_lag="auto" tries


def pairings(settings: PipelineSettings, effort_lag: int | str, acceleration: str) -> list[PipelineSettings]:
    """The settings to try: every effort lag of :data:`LAGS` (``effort_lag="auto"``) with every
    acceleration of :data:`.samples.ACCELERATIONS` (``acceleration="auto"``), or the one given."""
    lags = LAGS if effort_lag == "auto" else (settings.effort_lag,)
    accelerations = ACCELERATIONS if acceleration == "auto" else (settings.acceleration,)
    return [replace(settings, effort_lag=lag, acceleration=a) for a in accelerations for lag in lags]


def lag_scores(results: Sequence[IdentificationResult]) -> list[float | None]:
    """Per least-squares fit, its training score ``sqrt(mean_j rms_j^2 / sigma_j^2)``, with the first
    fit's ``sigma`` for every one. The fits differ only in how effort and state are paired (the effort
    lag, the acceleration's estimate) and have the same parameters: the pairing that explains the data
    leaves the smallest residual. (Not the held-out score: on a short excitation the held-out error is
    mostly the fit's extrapolation, the same for every pairing; nor a constrained fit's: an active
    bound would decide. An unsmoothed acceleration of noisy velocities puts the noise, amplified,
    into the regressor: its residual is the larger one.)"""
    weights = results[0].weights
    out: list[float | None] = []
    for r in results:
        rms = r.rms["identified_train"]
        out.append(None if rms is None else float(np.sqrt(np.mean(rms**2 * weights))))
    return out


def identify(
    bags: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    robot: str | RobotModel = DEFAULT_ROBOT,
    *,
    pset: ParameterSet | None = None,
    payload_only: bool = False,
    consistent: bool | None = None,
    coulomb: str = "tanh",
    holdout: float = 0.3,
    noise_std: Sequence[float] | None = None,
    prior_weight: float = 0.0,
    joint_states: str = "joint_states",
    joint_map: Mapping[str, str] | None = None,
    settings: PipelineSettings | None = None,
    jobs: int | None = None,
    scheduler: Any = None,
    progress: bool | None = None,
    seed: int = 0,
    provenance: Provenance | None = None,
    friction: str = AUTO,
    reversal_velocity: float | Sequence[float] | str = AUTO,
    stick_velocity: float | str = AUTO,
    compare_friction: bool = True,
    window: float | str | None = None,
    bounded: bool = True,
    geometry: Sequence[FloatArray | None] | None = None,
    effort_lag: int | str = 0,
    reversals: bool = True,
    acceleration: str = "savgol",
    method: str = "identify",
    sensor_noise_estimate: bool = True,
    offsets: str = "reading",
) -> IdentificationResult:
    """Identify ``robot``'s dynamic parameters from recorded bags (module docstring).

    ``bags``: bag paths and/or directories of bags. ``robot``: a bundled name, robot file, URDF, or a
    :class:`RobotModel`. ``pset``: the parameters to identify (default: all inertial parameters,
    armature, viscous and Coulomb friction with ``coulomb`` "tanh" or "sign", and offsets);
    ``payload_only`` overrides it. ``holdout``: fraction of each bag (its end) kept for validation.
    ``noise_std``: per-joint torque noise (default: estimated, two-pass). ``prior_weight``: pull
    toward the nominal base parameters (needed when the data leave some undetermined).
    ``friction``: the friction law (:data:`.friction_laws.FRICTION_LAWS`); ``reversal_velocity``: per
    joint (or one) velocity below which a joint's training rows are left out (velocity reversals);
    ``stick_velocity``: a joint slower than this sticks, and every joint's rows within half a
    differentiation window of where one starts or stops sticking are left out (0: none;
    :func:`.spans.stick_band`);
    ``compare_friction``: fit every law on the same split and report each one's held-out RMS
    (``result.friction_comparison``; not with ``pset`` or ``payload_only``). ``window``: seconds of the
    Savitzky–Golay differentiation window. ``bounded``/``geometry``: each link's mass kept in a bounding
    ellipsoid of its shapes (:mod:`.bounds`; default geometry: the URDF's, found through ``provenance``
    or ``robot``; the joint frames where there is none). ``effort_lag``: messages between a state and
    the effort that goes with it (:func:`.samples.lagged`), or ``"auto"``: each of :data:`LAGS` fitted
    by least squares and the one that leaves the smallest training residual kept (:func:`lag_scores`;
    ``result.settings.effort_lag``, the scores in ``result.effort_lag_scores``). ``acceleration``:
    "savgol" (the Savitzky–Golay derivative of the velocity), "difference" (each step's change of
    velocity, unsmoothed: :mod:`robot_dynamics.bag.step_difference`, for a simulator's noise-free
    recording) or "auto" (both fitted, with every lag under ``effort_lag="auto"``, and the smallest
    training residual kept, as for the lag). ``reversals``: each
    joint's Coulomb width (and the reversal's timing, reported) from the rows below the reversal
    velocity (:mod:`.reversals`; ``result.reversals``; a tanh Coulomb law only).
    ``method``: "identify" (the above) or "plain": plain weighted least squares, the baseline every
    choice is measured against (two-pass weights; each joint's rows slower than
    :data:`.choice.PLAIN_VELOCITY` left out, no stick band, ``viscous-coulomb`` unless ``friction`` is
    given, no consistent fit, no reversal fit, every offset fitted: :mod:`.collinear`). ``friction``,
    ``reversal_velocity``, ``stick_velocity``
    and ``window`` left at "auto" (``window`` None: "auto" up to :data:`WINDOW_STATES` states, else
    :data:`.samples.WINDOW_S`) are chosen by blocked cross-validation inside the training part
    (:mod:`.choice`; ``result.choice``); a value given is used as is. ``sensor_noise_estimate``: the
    torque sensor's noise apart from the residual (:mod:`.noise`; ``result.sensor_noise``).
    ``offsets``: what the fitted constant offsets ``Fo`` are (:data:`.parameters.OFFSET_USES`): "reading",
    a bias of the recorded torque only (motor-current sensing: the drive applies what it is commanded),
    reported, not deployed; "torque", a torque the drive applies for a zero command (its torque loop
    closes on the recorded sensor, whose offset it therefore applies), written into the identified model
    (``JointFriction.offset``) so that its feed-forward commands it (``result.offsets_deployed``).
    ``provenance``: the robot file and chain options ``robot`` was loaded with, recorded in the model
    file so that the same options load it as a no-op (:mod:`robot_dynamics.models.provenance`).
    ``jobs``/``scheduler``: where the bags are reduced (:mod:`.parallel`; with fewer bags than local
    ``jobs``, the bags are read here and their time spans shared among the processes). Errors a user can fix are
    :class:`IdentificationError` (bags) or :class:`ModelError` (robot).
    """
    clock = time.perf_counter()
    if effort_lag != "auto" and (isinstance(effort_lag, bool) or not isinstance(effort_lag, int)):
        raise IdentificationError(f"effort lag must be an integer or 'auto', got {effort_lag!r}")
    if acceleration != "auto" and acceleration not in ACCELERATIONS:
        raise IdentificationError(f"acceleration must be one of {[*ACCELERATIONS, 'auto']}, got {acceleration!r}")
    if method not in METHODS:
        raise IdentificationError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    if window is not None and window != AUTO and not (isinstance(window, (int, float)) and window > 0.0):
        raise IdentificationError(f"window must be a positive number of seconds or 'auto', got {window!r}")
    if stick_velocity != AUTO and not isinstance(stick_velocity, (int, float)):
        raise IdentificationError(f"stick velocity must be a number or 'auto', got {stick_velocity!r}")
    if isinstance(reversal_velocity, str) and reversal_velocity != AUTO:
        raise IdentificationError(f"reversal velocity must be numbers or 'auto', got {reversal_velocity!r}")
    if friction != AUTO:
        friction = check_friction(friction)
    offset_use = check_offset_use(offsets)
    plain = method == "plain"
    model = robot if isinstance(robot, RobotModel) else load_robot(robot)
    items = [bags] if isinstance(bags, (str, os.PathLike)) else list(bags)
    paths = expand_bags([os.fspath(b) for b in items])
    laws = pset is None and not payload_only  # the data reduced once for every friction law
    searching = laws and not plain  # the constants that decide which rows count, chosen from the data
    given: dict[str, Any] = {}
    if friction != AUTO:
        given["friction"] = friction
    if reversal_velocity != AUTO:
        given["reversal_velocity"] = _velocities(reversal_velocity)  # type: ignore[arg-type]
    if stick_velocity != AUTO:
        given["stick_velocity"] = float(stick_velocity)
    if window is not None and window != AUTO:
        given["window"] = float(window)
    law = friction if friction != AUTO else (PLAIN_FRICTION if plain else DEFAULT_FRICTION)
    if payload_only:
        pset = payload_parameter_set(model)
    elif pset is None:
        pset = friction_parameter_set(law, coulomb)
    superset = reduction_parameter_set(coulomb) if laws else pset
    default_cut: float | tuple[float, ...] = PLAIN_VELOCITY if plain else REVERSAL_VELOCITY
    if settings is None:
        settings = PipelineSettings(
            joint_states=joint_states,
            joint_map=tuple(sorted((joint_map or {}).items())),
            holdout=holdout,
            reversal_velocity=given.get("reversal_velocity", default_cut),
            stick_velocity=given.get("stick_velocity", STICK_VELOCITY),
            stick_band=not plain or "stick_velocity" in given,
            window_s=given.get("window", WINDOW_S),
            effort_lag=0 if effort_lag == "auto" else effort_lag,  # type: ignore[arg-type]
            acceleration="savgol" if acceleration == "auto" else acceleration,
        )
    if plain:
        consistent, reversals, compare_friction = False, False, False
    choose_fit = consistent is None and searching  # the consistent fit kept unless it validates worse than plain
    consistent = True if consistent is None else consistent
    if scheduler is not None:  # workers elsewhere: absolute paths (the bags must be readable there)
        paths = [str(Path(path).resolve()) for path in paths]
    options: dict[str, Any] = {
        "consistent": consistent,
        "noise_std": noise_std,
        "prior_weight": prior_weight,
        "seed": seed,
        "payload_only": payload_only,
        "sources": paths,
        "reduced": superset,
        "bounded": bounded,
        # collinear offsets held (:mod:`.collinear`) unless plain least squares or the offsets are deployed
        # (beside the gravity parameters: their shares then do not matter)
        "hold": not plain and offset_use == "reading",
        "geometry": geometry if geometry is not None else robot_geometry(robot, model, provenance),
    }

    reducing = [0.0]  # s spent reducing the bags
    # fewer bags than workers: read them here (their time spans shared among the workers); else where they are
    local = scheduler is None and len(paths) < (jobs or default_jobs())

    def reduce(lag_settings: PipelineSettings) -> list[SampleStatistics]:
        began = time.perf_counter()
        tasks = [BagTask(path, model, superset, lag_settings) for path in paths]
        if local:
            stats = bags_in_spans(tasks, jobs=jobs, progress=progress)
        else:
            stats = list(map_tasks(bag_statistics, tasks, jobs=jobs, scheduler=scheduler, progress=progress))
        reducing[0] += time.perf_counter() - began
        return stats

    bases: dict[ParameterSet, BaseParameters] = {}  # each parameter set's base parameters, computed once

    def fit(
        stats: list[SampleStatistics], lag_settings: PipelineSettings, law: str, **more: Any
    ) -> IdentificationResult:
        used = pset if not laws else friction_parameter_set(law, coulomb)
        assert used is not None
        if used not in bases:
            bases[used] = base_parameters(model, used, rng=np.random.default_rng(seed))
        return fit_statistics(
            model, used, stats, friction=law, base=bases[used], **{**options, "settings": lag_settings, **more}
        )

    scores: list[float | None] = []
    tried = pairings(settings, effort_lag, acceleration)
    if len(tried) > 1:  # least squares for each pairing (a constraint must not decide it), then the fit
        reductions = [reduce(candidate) for candidate in tried]
        scores = lag_scores([fit(st, c, law, consistent=False) for c, st in zip(tried, reductions, strict=True)])
        best = int(np.argmin([np.inf if v is None else v for v in scores]))
        settings, stats = tried[best], reductions[best]
    else:
        stats = reduce(settings)
    choice: Choice | None = None
    if searching:
        rigid: dict[str, Any] | None = None
        if choose_fit:
            ellipsoids = link_ellipsoids(model, options["geometry"])
            rigid = {
                "bounds": density_bounds(model, ellipsoids) if bounded else None,
                "mass_band": MASS_BAND if bounded else None,
            }
        choice, settings, stats = choose_rows(
            model, stats, settings, superset, coulomb, given, window, prior_weight, seed, reduce, bases, rigid
        )
        if choice is not None:  # (None: no candidate could be fitted; the fit below says why)
            law = choice.chosen.friction
            if choose_fit:
                options["consistent"] = consistent = choice.chosen.consistent
    result = fit(stats, settings, law)
    if choose_fit and not consistent and result.identified is None:  # no model file without it
        problem = result.model_problem or "not physically realisable"
        options["consistent"] = consistent = True
        if choice is not None and choice.fallback is not None:  # the consistent fit that validated best
            choice.chosen, sel, law = choice.fallback, choice.fallback.selection, choice.fallback.friction
            settings = replace(settings, reversal_velocity=sel.reversal, stick_band=sel.stick)
            stats = [with_selection(s, sel) for s in stats]
        result = fit(stats, settings, law)
        result.warnings.append(
            "the physically consistent fit validated worse than plain least squares, but the least-squares "
            f"parameters make no robot model ({problem}): kept the consistent fit that validated best"
            + ("" if choice is None else f" ({choice.chosen.label()})")
        )
    result.choice = choice
    result.method = method
    result.offset_use = offset_use
    if offset_use == "torque" and result.identified is not None:
        if result.offsets is None:
            result.warnings.append(
                f"offsets torque: the {law} law fits no offsets (a constant torque is its friction's Fa): none deployed"
            )
        else:  # before the reversal fit and the noise estimate: they see the model the nodes will run
            result.identified = deploy_offsets(result.identified, result.offsets)
    slow_cut = settings.reversal(model)
    if reversals and not payload_only and result.identified is not None and pset.coulomb == "tanh" and slow_cut.any():
        tasks = [BagTask(path, model, superset, settings) for path in paths]
        if local:
            series = [slow_series(task) for task in tasks]
        else:  # where the bags are (a cluster's workers): only the slow rows come back
            series = map_tasks(slow_series, tasks, jobs=jobs, scheduler=scheduler, progress=False, label="slow rows")
        result.reversals = fit_reversals(result.identified, series, slow_cut)
        result.identified = result.reversals.apply(result.identified)
    if sensor_noise_estimate and result.identified is not None:
        began = time.perf_counter()
        result.sensor_noise = sensor_noise(result.identified, stats, settings)
        result.elapsed["sensor_noise_s"] = time.perf_counter() - began
    result.effort_lag_scores = (
        [{"lag": c.effort_lag, "acceleration": c.acceleration, "score": v} for c, v in zip(tried, scores, strict=True)]
        if scores
        else []
    )
    fit_options = {**options, "settings": settings}
    if laws and compare_friction:
        result.friction_comparison = compare_laws(model, stats, result, coulomb, fit_options)
    if choice is not None:
        result.elapsed["choice_s"] = choice.elapsed_s
    result.provenance = provenance
    result.elapsed = {"reduce_s": reducing[0], **result.elapsed, "total_s": time.perf_counter() - clock}
    return result
