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
   parameters, armature, joint-side friction; the constant offset is a sensor bias, reported but
   not deployed), and per joint the RMS error of the stock and the identified model on the training
   and the held-out data.

``payload_only``: the last link's 10 inertial parameters (link + payload) and the offsets only; every
other parameter keeps its nominal value (its torque is subtracted as known). The payload — the
identified last link minus the nominal one — is reported in the tool frame.

(The module is slightly longer than 400 lines because the five steps are one sequence filling one
result; the per-bag work, the fits and the report live in their own modules.)
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from robot_dynamics.errors import ModelError
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.models.robots import DEFAULT_ROBOT, load_robot

from .base import BaseParameters, base_parameters
from .consistent import fit_consistent
from .estimate import Fit, NormalEquations, fit_least_squares
from .parallel import default_jobs, map_tasks
from .parameters import (
    IdentificationError,
    ParameterSet,
    apply_parameters,
    body_of,
    link_parameters,
    nominal_parameters,
    physical_problem,
)
from .samples import BagTask, PipelineSettings, SampleStatistics, bag_statistics, bags_in_spans, expand_bags

NOISE_FLOOR = 1e-6  # sigma_j is at least this fraction of joint j's RMS torque (noise-free data)
COST_WARNING = 1.1  # consistent cost / least-squares cost above which the report warns
RANK_TOLERANCE = 1e-10  # smallest eigenvalue / largest of the scaled base normal equations


@dataclass(frozen=True)
class Excitation:
    """What the data determine: joints that never moved, base parameters left undetermined."""

    static_joints: tuple[str, ...]
    undetermined: tuple[str, ...]  # base parameter names
    eigenvalue_ratio: float  # smallest / largest eigenvalue of the scaled base normal equations


@dataclass
class IdentificationResult:
    """Everything :func:`identify` found (see :mod:`.report` for the JSON report and the plot)."""

    model: RobotModel  # the nominal (stock) model
    identified: RobotModel | None  # None: the fit's parameters make no loadable model (model_problem)
    pset: ParameterSet
    base: BaseParameters
    fit: Fit
    weights: FloatArray  # (n,) 1 / sigma_j^2 used in the second pass
    noise_std: FloatArray  # (n,) sigma_j (estimated or given)
    train: NormalEquations  # unweighted
    holdout: NormalEquations | None
    rms: dict[str, FloatArray | None]  # nominal_train, identified_train, nominal_holdout, identified_holdout
    excitation: Excitation
    bags: list[SampleStatistics]
    settings: PipelineSettings
    consistent: bool
    prior_weight: float
    sources: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    payload: dict[str, Any] | None = None
    elapsed: dict[str, float] = field(default_factory=dict)
    created: str = ""
    model_problem: str | None = None
    wls_cost: float = 0.0  # the weighted least-squares cost (the consistent fit's is fit.cost)

    @property
    def names(self) -> tuple[str, ...]:
        return self.pset.names(self.model)

    @property
    def offsets(self) -> FloatArray | None:
        """The identified constant torque per joint (sensor bias), if the set has ``Fo``."""
        if not self.pset.offset:
            return None
        cols = self.pset.layout(self.model).joint_column["Fo"]
        return np.asarray(self.fit.theta[cols], dtype=float)


def payload_parameter_set(model: RobotModel) -> ParameterSet:
    """The last link's inertial parameters and the offsets; everything else at its nominal value."""
    return ParameterSet(armature=False, viscous=False, coulomb="none", offset=True, links=(model.dof - 1,))


def _sum(parts: Sequence[NormalEquations | None]) -> NormalEquations | None:
    total: NormalEquations | None = None
    for part in parts:
        if part is not None:
            total = part if total is None else total + part
    return total


def _rms_from_sse(sse: FloatArray, count: int) -> FloatArray:
    return np.sqrt(np.asarray(sse, dtype=float) / max(count, 1))


def check_excitation(ne: NormalEquations, base: BaseParameters, static: Sequence[str], model: RobotModel) -> Excitation:
    """Base parameters the data cannot determine (module docstring, step 2).

    The base normal equations, scaled by each base column's typical magnitude on random states
    (``base.scale``), are decomposed; eigenvectors with eigenvalue below ``RANK_TOLERANCE`` times the
    largest are directions without information, named by their dominant base parameters.
    """
    idx = np.asarray(base.independent, dtype=np.intp)
    a = np.asarray(ne.ata_joint.sum(axis=0), dtype=float)[np.ix_(idx, idx)]
    scale = np.asarray(base.scale, dtype=float)
    scale = np.where(scale > 0.0, scale, 1.0)
    s = a / np.outer(scale, scale)
    values, vectors = np.linalg.eigh(0.5 * (s + s.T))
    top = float(values[-1]) if values.size else 0.0
    if not top > 0.0:
        return Excitation(tuple(static), tuple(base.names), 0.0)
    weak = values < RANK_TOLERANCE * top
    names: list[str] = []
    for k in np.flatnonzero(weak):
        v = np.abs(vectors[:, k])
        for i in np.flatnonzero(v >= 0.3 * v.max()):
            if base.names[i] not in names:
                names.append(base.names[i])
    return Excitation(tuple(static), tuple(names), float(max(values[0], 0.0) / top))


def _noise(ne: NormalEquations, theta: FloatArray, p_base: int) -> FloatArray:
    """Per-joint residual standard deviation of ``theta`` on ``ne`` (degrees of freedom shared out)."""
    n, count = ne.joints, ne.count
    rss = ne.residual_rms(theta) ** 2 * count
    dof = max(count - p_base / n, 1.0)
    sigma = np.sqrt(rss / dof)
    rms_tau = np.sqrt(np.maximum(np.asarray(ne.btb_joint, dtype=float), 0.0) / max(count, 1))
    return np.maximum(sigma, NOISE_FLOOR * rms_tau + 1e-300)


def _payload(model: RobotModel, theta: FloatArray, pset: ParameterSet) -> dict[str, Any]:
    """The identified last link minus the nominal one, in the tool frame (mass, com, inertia about com)."""
    lay = pset.layout(model)
    last = model.dof - 1
    phi = np.asarray(theta[lay.link_slice(last)], dtype=float)
    delta = phi - link_parameters(model.joints[last].link)
    out: dict[str, Any] = {"link": model.joints[last].link_name, "frame": "tool", "mass": float(delta[0])}
    if not delta[0] > 0.0:
        out["problem"] = f"identified payload mass {delta[0]:.6g} kg is not positive (no payload detected)"
        return out
    body = body_of(delta, where="payload")
    r, p = model.tool[:3, :3], model.tool[:3, 3]
    com = r.T @ (body.com - p)
    inertia = r.T @ body.inertia @ r
    out["com"] = com.tolist()
    out["inertia"] = [inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[1, 2], inertia[0, 2]]
    out["inertia_order"] = "Ixx, Iyy, Izz, Ixy, Iyz, Ixz (about the centre of mass, tool-frame axes)"
    return out


def _identified_model(
    model: RobotModel, fit: Fit, pset: ParameterSet, consistent: bool, warnings: list[str]
) -> RobotModel:
    """The model with the fitted parameters; IdentificationError if no robot file could hold it.

    The consistent fit is a rigid body per link by construction. A least-squares fit may leave links
    the data hardly determine as no rigid body (a link's mass and first moments that only enter
    regrouped, e.g. the PUMA's first link): kept with a warning when the model stays loadable
    (mass >= 0, inertia positive semi-definite, friction and armature >= 0), refused otherwise.
    """
    from robot_dynamics.models.validation import inertia_definiteness_problem

    try:
        if consistent:
            return fit.model(model, pset)
        identified = apply_parameters(model, fit.theta, pset, check=False)
    except ModelError as exc:
        raise IdentificationError(f"the {fit.method} parameters do not make a robot model: {exc}") from None
    problems = []
    for joint in identified.joints:
        link = joint.link
        problem = "negative mass" if link.mass < 0.0 else inertia_definiteness_problem(link.inertia)
        f = joint.friction
        if problem is None and (f.viscous < 0.0 or f.coulomb[0] < 0.0 or f.coulomb[1] > 0.0):
            problem = f"negative friction (viscous {f.viscous:.4g}, Coulomb {f.coulomb[0]:.4g}/{f.coulomb[1]:.4g})"
        if problem is None and joint.motor is not None and joint.motor.inertia < 0.0:
            problem = f"negative armature {joint.motor.reflected_inertia:.4g}"
        if problem is not None:
            problems.append(f"joint {joint.name!r}: {problem}")
        elif link.mass > 0.0 and physical_problem(link_parameters(link)) is not None:
            warnings.append(f"least-squares link of joint {joint.name!r} is no rigid body (triangle inequality)")
    if problems:
        raise IdentificationError(
            "the least-squares parameters are not physically realisable (" + "; ".join(problems) + "); use the "
            "consistent fit (--consistent) or record more exciting motion"
        )
    return identified


def fit_statistics(
    model: RobotModel,
    pset: ParameterSet,
    stats: Sequence[SampleStatistics],
    *,
    settings: PipelineSettings | None = None,
    consistent: bool = True,
    noise_std: Sequence[float] | None = None,
    prior_weight: float = 0.0,
    seed: int = 0,
    payload_only: bool = False,
    sources: Sequence[str] = (),
) -> IdentificationResult:
    """Steps 2–5 of the module docstring on already reduced data sets."""
    settings = settings or PipelineSettings()
    if not stats:
        raise IdentificationError("no data to identify from")
    clock = time.perf_counter()
    train = _sum([s.train for s in stats])
    assert train is not None
    holdout = _sum([s.holdout for s in stats])
    n = model.dof
    base = base_parameters(model, pset, rng=np.random.default_rng(seed))
    nominal = nominal_parameters(model, pset)
    static = [name for name in model.joint_names if all(name in s.static for s in stats)]
    excitation = check_excitation(train, base, static, model)
    warnings: list[str] = []
    if train.count * n < len(base.names):
        raise IdentificationError(
            f"{train.count} training samples x {n} joints are fewer than the {len(base.names)} base parameters"
        )
    if excitation.undetermined:
        what = ", ".join(excitation.undetermined)
        moved = f"peak to peak < {settings.min_motion:g}"
        still = f"joints that never moved ({moved}): {', '.join(static)}; " if static else ""
        if prior_weight <= 0.0:
            raise IdentificationError(
                f"the data do not determine these base parameters: {what} ({still}smallest/largest information "
                f"{excitation.eigenvalue_ratio:.1e}). Move every joint through its range while recording, or pass "
                "a prior weight (--prior W) to keep their nominal values"
            )
        warnings.append(f"not determined by the data, kept at nominal values by the prior: {what}")
    if static:
        warnings.append(f"joints that never moved in any bag: {', '.join(static)}")

    if noise_std is not None:
        sigma = np.asarray(noise_std, dtype=float)
        if sigma.shape != (n,) or not np.all(sigma > 0.0):
            raise IdentificationError(f"noise_std: expected {n} positive values, got {list(sigma)}")
    else:  # first pass unweighted; its residuals weigh the second, whose residuals refine the weights once
        sigma = _noise(train, fit_least_squares(train, base, nominal, prior_weight).theta, len(base.names))
        refit = fit_least_squares(train.with_weights(1.0 / sigma**2), base, nominal, prior_weight)
        sigma = _noise(train, refit.theta, len(base.names))
    weights = 1.0 / sigma**2
    weighted = train.with_weights(weights)
    fit = wls = fit_least_squares(weighted, base, nominal=nominal, prior_weight=prior_weight)
    if consistent:
        if prior_weight > 0.0:
            fit = fit_consistent(weighted, model, pset, base, nominal=nominal, prior_weight=prior_weight)
        else:
            fit = fit_consistent(weighted, model, pset, base, nominal=nominal)  # its own small default prior
        ratio = fit.cost / wls.cost if wls.cost > 0.0 else 1.0
        if ratio > COST_WARNING:
            warnings.append(
                f"the consistent fit's cost is {ratio:.2f} times the least-squares cost: the data ask for "
                "parameters no rigid body has (published non-physical inertia, unmodelled effects, or poor "
                "excitation); compare with --no-consistent"
            )
    identified: RobotModel | None = None
    model_problem = None
    try:
        identified = _identified_model(model, fit, pset, consistent, warnings)
        identified = identified.with_changes(name=f"{model.name}_identified", source="")
    except IdentificationError as exc:
        model_problem = str(exc)
        warnings.append(model_problem)
    held_count = holdout.count if holdout is not None else 0
    rms: dict[str, FloatArray | None] = {
        "nominal_train": _rms_from_sse(sum((s.nominal_sse_train for s in stats), np.zeros(n)), train.count),
        "identified_train": np.asarray(train.residual_rms(fit.theta), dtype=float),
        "nominal_holdout": None,
        "identified_holdout": None,
    }
    if holdout is not None:
        rms["nominal_holdout"] = _rms_from_sse(sum((s.nominal_sse_holdout for s in stats), np.zeros(n)), held_count)
        rms["identified_holdout"] = np.asarray(holdout.residual_rms(fit.theta), dtype=float)
    return IdentificationResult(
        model=model,
        identified=identified,
        model_problem=model_problem,
        wls_cost=wls.cost,
        pset=pset,
        base=base,
        fit=fit,
        weights=weights,
        noise_std=sigma,
        train=train,
        holdout=holdout,
        rms=rms,
        excitation=excitation,
        bags=list(stats),
        settings=settings,
        consistent=consistent,
        prior_weight=prior_weight,
        sources=list(sources),
        warnings=warnings,
        payload=_payload(model, fit.theta, pset) if payload_only else None,
        elapsed={"fit_s": time.perf_counter() - clock},
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


def identify(
    bags: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    robot: str | RobotModel = DEFAULT_ROBOT,
    *,
    pset: ParameterSet | None = None,
    payload_only: bool = False,
    consistent: bool = True,
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
) -> IdentificationResult:
    """Identify ``robot``'s dynamic parameters from recorded bags (module docstring).

    ``bags``: bag paths and/or directories of bags. ``robot``: a bundled name, robot file, URDF, or a
    :class:`RobotModel`. ``pset``: the parameters to identify (default: all inertial parameters,
    armature, viscous and Coulomb friction with ``coulomb`` "tanh" or "sign", and offsets);
    ``payload_only`` overrides it. ``holdout``: fraction of each bag (its end) kept for validation.
    ``noise_std``: per-joint torque noise (default: estimated, two-pass). ``prior_weight``: pull
    toward the nominal base parameters (needed when the data leave some undetermined).
    ``jobs``/``scheduler``: where the bags are reduced (:mod:`.parallel`; with fewer bags than local
    ``jobs``, the bags are read here and their time spans shared among the processes). Errors a user can fix are
    :class:`IdentificationError` (bags) or :class:`ModelError` (robot).
    """
    clock = time.perf_counter()
    model = robot if isinstance(robot, RobotModel) else load_robot(robot)
    items = [bags] if isinstance(bags, (str, os.PathLike)) else list(bags)
    paths = expand_bags([os.fspath(b) for b in items])
    if payload_only:
        pset = payload_parameter_set(model)
    elif pset is None:
        if coulomb not in ("tanh", "sign"):
            raise IdentificationError(f"coulomb must be 'tanh' or 'sign', got {coulomb!r}")
        pset = ParameterSet(coulomb=coulomb)  # type: ignore[arg-type]
    if settings is None:
        settings = PipelineSettings(
            joint_states=joint_states, joint_map=tuple(sorted((joint_map or {}).items())), holdout=holdout
        )
    if scheduler is not None:  # workers elsewhere: absolute paths (the bags must be readable there)
        paths = [str(Path(path).resolve()) for path in paths]
    tasks = [BagTask(path, model, pset, settings) for path in paths]
    if scheduler is None and len(tasks) < (jobs or default_jobs()):
        # fewer bags than workers: read them here and share their time spans among the workers
        stats = bags_in_spans(tasks, jobs=jobs, progress=progress)
    else:
        stats = map_tasks(bag_statistics, tasks, jobs=jobs, scheduler=scheduler, progress=progress)
    reduced = time.perf_counter()
    result = fit_statistics(
        model,
        pset,
        stats,
        settings=settings,
        consistent=consistent,
        noise_std=noise_std,
        prior_weight=prior_weight,
        seed=seed,
        payload_only=payload_only,
        sources=paths,
    )
    result.elapsed = {"reduce_s": reduced - clock, **result.elapsed, "total_s": time.perf_counter() - clock}
    return result
