"""Steps 2–5 of the pipeline (:mod:`.pipeline`) on already reduced data: base parameters, excitation,
two-pass weights, the friction law's fit, the consistent fit within the links' bounds, the RMS errors.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime, timezone

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.errors import ModelError
from robot_dynamics.model import FloatArray, RobotModel

from .base import BaseParameters, base_parameters
from .bounds import MASS_BAND, Ellipsoid, density_bounds, link_ellipsoids, plausibility
from .collinear import T_HOLD, VIF_HOLD, held_offsets, hold_offsets, offset_estimates, offset_vif
from .columns import ColumnSums
from .consistent import fit_consistent
from .estimate import NormalEquations, fit_least_squares
from .friction_laws import DEFAULT_FRICTION, check_friction, fit_widths, select_statistics, with_coulomb_widths
from .parameters import IdentificationError, ParameterSet, link_parameters, nominal_parameters
from .result import IdentificationResult, check_excitation, identified_model, payload_of
from .rows import Part
from .samples import PipelineSettings, SampleStatistics
from .stribeck import StribeckFit, fit_stribeck_sums, with_stribeck

NOISE_FLOOR = 1e-6  # sigma_j is at least this fraction of joint j's RMS torque (noise-free data)
COST_WARNING = 1.1  # consistent cost / least-squares cost above which the report warns
CONSISTENT_PRIOR = 1e-6  # the consistent fit's pull toward the stock base parameters when none is given
WIDTH_EVIDENCE = 10.0  # a Coulomb width other than v_s must lower the weighted cost by this (sigma^2 units)
STRIBECK_DECAY = 3.0  # the smallest Stribeck velocity searched is the reversal cut / this


def _sum(parts: Sequence[Part | None]) -> Part | None:
    total: Part | None = None
    for part in parts:
        if part is not None:
            total = part if total is None else total + part
    return total


def _stribeck_known(data: Sequence[Part | None], fit: StribeckFit) -> list[NormalEquations | None]:
    """The normal equations of ``tau`` minus the fitted Stribeck torque, for each part's rows."""
    out: list[NormalEquations | None] = []
    for part in data:
        sums = None if part is None else part.families.get("stribeck")
        if part is None or sums is None:
            out.append(None if part is None else part.ne)
        else:
            out.append(sums.known(part.ne, sums.pick(fit.velocity), fit.excess))
    return out


def _with_widths(
    data: Sequence[Part | None], columns: NDArray[np.intp], widths: FloatArray
) -> list[NormalEquations | None]:
    """The normal equations with each joint's Coulomb column ``tanh(qd / width_j)``, for each part's rows."""
    out: list[NormalEquations | None] = []
    for part in data:
        sums = None if part is None else part.families.get("coulomb")
        if part is None or sums is None:
            out.append(None if part is None else part.ne)
        else:
            out.append(sums.replaced(part.ne, columns, sums.pick(widths)))
    return out


def _family(part: Part, shape: str, friction: str) -> ColumnSums:
    sums = part.families.get(shape)
    if sums is None:
        raise IdentificationError(f"friction {friction!r} needs the {shape} column sums: reduce with their grid")
    return sums


def _rms(sse: FloatArray, rows: FloatArray) -> FloatArray:
    return np.sqrt(np.asarray(sse, dtype=float) / np.maximum(rows, 1.0))


def _noise(ne: NormalEquations, theta: FloatArray, p_base: int) -> FloatArray:
    """Per-joint residual standard deviation of ``theta`` on ``ne`` (degrees of freedom shared out)."""
    n, rows = ne.joints, np.asarray(ne.rows, dtype=float)
    rss = ne.residual_sum(theta)
    dof = np.maximum(rows - p_base / n, 1.0)
    sigma = np.sqrt(rss / dof)
    rms_tau = np.sqrt(np.maximum(np.asarray(ne.btb_joint, dtype=float), 0.0) / np.maximum(rows, 1.0))
    sigma = np.maximum(sigma, NOISE_FLOOR * rms_tau + 1e-300)
    return np.where(rows > 0.0, sigma, 1.0)  # a joint without rows (always below the reversal cut): any weight


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
    friction: str = DEFAULT_FRICTION,
    reduced: ParameterSet | None = None,
    geometry: Sequence[FloatArray | None] | None = None,
    bounded: bool = True,
    base: BaseParameters | None = None,
    ellipsoids: Sequence[Ellipsoid] | None = None,
    hold: bool = False,
) -> IdentificationResult:
    """Steps 2–5 of the module docstring on already reduced data sets; ``reduced``: the parameter set
    the data were reduced with when it is a superset of ``pset`` (:mod:`.friction_laws`); ``geometry``:
    per link the points of its shapes (:func:`robot_dynamics.models.link_geometry.link_points`) for its
    bounding ellipsoid (:mod:`.bounds`; the joint frames where None); ``bounded``: the consistent fit
    keeps each link's mass in its ellipsoid and within :data:`.bounds.MASS_BAND` times its stock mass;
    ``hold``: each offset the data cannot tell from its joint's other parameters, nor from zero, held at
    zero (:mod:`.collinear`; on the final weights; :func:`.pipeline.identify` turns it on except for
    plain least squares)."""
    settings = settings or PipelineSettings()
    friction = check_friction(friction)
    if not stats:
        raise IdentificationError("no data to identify from")
    clock = time.perf_counter()
    stats = select_statistics(model, list(stats), reduced or pset, pset)
    train_part = _sum([s.train_sums for s in stats])
    assert train_part is not None
    held_part = _sum([s.holdout_sums for s in stats])
    moving_part = None if held_part is None else held_part.moving()
    parts = (train_part, held_part, moving_part)
    train, holdout, moving = (None if part is None else part.ne for part in parts)
    assert train is not None
    n = model.dof
    if base is None or base.parameter_names != pset.names(model):
        base = base_parameters(model, pset, rng=np.random.default_rng(seed))
    nominal = nominal_parameters(model, pset)
    static = [name for name in model.joint_names if all(name in s.static for s in stats)]
    excitation = check_excitation(train, base, static, model)
    warnings: list[str] = []
    if np.sum(train.rows) < len(base.names):
        raise IdentificationError(
            f"{int(np.sum(train.rows))} training rows ({train.count} samples x {n} joints, less the rows near "
            f"velocity reversals) are fewer than the {len(base.names)} base parameters"
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

    smallest = settings.reversal(model) / STRIBECK_DECAY  # the Stribeck term at the cut: >= exp(-STRIBECK_DECAY)
    sfit: StribeckFit | None = None
    widths: FloatArray | None = None
    if friction == "stribeck":  # the Stribeck term of an unweighted fit, known from here on
        sfit = fit_stribeck_sums(
            train, _family(train_part, "stribeck", friction), base, nominal, prior_weight, smallest=smallest
        )
        train, holdout, moving = _stribeck_known(parts, sfit)
        assert train is not None
    if noise_std is not None:
        sigma = np.asarray(noise_std, dtype=float)
        if sigma.shape != (n,) or not np.all(sigma > 0.0):
            raise IdentificationError(f"noise_std: expected {n} positive values, got {list(sigma)}")
    else:  # first pass unweighted; its residuals weigh the second, whose residuals refine the weights once
        sigma = _noise(train, fit_least_squares(train, base, nominal, prior_weight).theta, len(base.names))
        refit = fit_least_squares(train.with_weights(1.0 / sigma**2), base, nominal, prior_weight)
        sigma = _noise(train, refit.theta, len(base.names))
    weights = 1.0 / sigma**2
    if friction == "stribeck":  # the Stribeck term again, weighted
        measured = train_part.ne.with_weights(weights)
        sfit = fit_stribeck_sums(
            measured, _family(train_part, "stribeck", friction), base, nominal, prior_weight, smallest=smallest
        )
        train, holdout, moving = _stribeck_known(parts, sfit)
        assert train is not None
    if friction == "smooth-coulomb":  # each joint's Coulomb width, where the data ask for one
        fc = pset.layout(model).joint_column["Fc"]
        family = _family(train_part, "coulomb", friction)
        start = family.pick(np.full(n, pset.coulomb_velocity))
        pick = fit_widths(train.with_weights(weights), family, fc, base, nominal, prior_weight, start, WIDTH_EVIDENCE)
        widths = np.array([family.grids[j, k] for j, k in enumerate(pick)])
        if pick != start or not np.all(widths == pset.coulomb_velocity):  # else: viscous-coulomb, as reduced
            train, holdout, moving = _with_widths(parts, fc, widths)
            assert train is not None
        if noise_std is None and pick != start:
            sigma = _noise(
                train,
                fit_least_squares(train.with_weights(weights), base, nominal, prior_weight).theta,
                len(base.names),
            )
            weights = 1.0 / sigma**2
    weighted = train.with_weights(weights)
    fit = wls = fit_least_squares(weighted, base, nominal=nominal, prior_weight=prior_weight)
    offset_columns = pset.layout(model).joint_column["Fo"]
    vif = offset_vif(weighted, base, offset_columns)
    held = held_offsets(vif, *offset_estimates(wls, base, offset_columns)) if hold else np.zeros(n, dtype=bool)
    if held.any():
        weighted = hold_offsets(weighted, offset_columns, held)
        fit = wls = fit_least_squares(weighted, base, nominal=nominal, prior_weight=prior_weight)
        names = ", ".join(name for name, h in zip(model.joint_names, held, strict=True) if h)
        warnings.append(
            f"offsets held at zero (collinear with the joint's other torques, VIF > {VIF_HOLD:g}, and within "
            f"{T_HOLD:g} standard error of zero): {names}"
        )
    if ellipsoids is None:
        ellipsoids = link_ellipsoids(model, geometry)
    effective_prior = prior_weight
    if consistent:
        effective_prior = prior_weight if prior_weight > 0.0 else CONSISTENT_PRIOR
        limits = density_bounds(model, ellipsoids) if bounded else None
        fit = fit_consistent(
            weighted,
            model,
            pset,
            base,
            nominal=nominal,
            prior_weight=effective_prior,
            bounds=limits,
            mass_band=MASS_BAND if bounded else None,
        )
        # against least squares with the same prior: the ratio is then the constraints' alone
        same = wls if effective_prior == prior_weight else fit_least_squares(weighted, base, nominal, effective_prior)
        ratio = fit.cost / same.cost if same.cost > 0.0 else 1.0
        if ratio > COST_WARNING:
            warnings.append(
                f"the consistent fit's cost is {ratio:.2f} times the least-squares cost: the data ask for "
                "parameters no rigid body has (published non-physical inertia, unmodelled effects, or poor "
                "excitation); compare with --no-consistent"
            )
    identified: RobotModel | None = None
    model_problem = None
    try:
        identified = identified_model(model, fit, pset, consistent, warnings)
        if sfit is not None:
            identified = with_stribeck(identified, sfit.velocity, sfit.excess, check=consistent)
        if widths is not None:
            identified = with_coulomb_widths(identified, widths)
        identified = identified.with_changes(name=f"{model.name}_identified", source="")
    except (IdentificationError, ModelError) as exc:
        model_problem = str(exc)
        warnings.append(model_problem)
    lay = pset.layout(model)
    fitted = [
        fit.theta[lay.link_slice(i)] if i in lay.links else link_parameters(j.link) for i, j in enumerate(model.joints)
    ]
    plausible = plausibility(model, fitted, ellipsoids)
    for row in plausible:
        warnings += [f"link of joint {row['joint']!r}: {flag}" for flag in row["flags"]]
        if consistent and bounded and row["at_band_edge"]:
            warnings.append(
                f"link of joint {row['joint']!r}: mass {row['mass']:.4g} kg held at the edge of the mass band "
                f"[{MASS_BAND[0]:g}, {MASS_BAND[1]:g}] x stock {row['stock_mass']:.4g} kg: the torques ask for more, "
                "or cannot tell this mass from the others (--no-bounds shows the unbanded fit)"
            )
    rms: dict[str, FloatArray | None] = {
        "nominal_train": _rms(train_part.sse, train.rows),
        "identified_train": np.asarray(train.residual_rms(fit.theta), dtype=float),
    }
    for key, part, ne in (("holdout", held_part, holdout), ("holdout_moving", moving_part, moving)):
        rms[f"nominal_{key}"] = None if part is None else _rms(part.sse, part.ne.rows)
        rms[f"identified_{key}"] = None if ne is None else np.asarray(ne.residual_rms(fit.theta), dtype=float)
    return IdentificationResult(
        model=model,
        identified=identified,
        model_problem=model_problem,
        wls_cost=wls.cost,
        friction=friction,
        stribeck=sfit,
        coulomb_widths=widths,
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
        prior_weight=effective_prior,
        sources=list(sources),
        plausibility=plausible,
        ellipsoids=list(ellipsoids),
        bounded=bounded and consistent,
        warnings=warnings,
        payload=payload_of(model, fit.theta, pset) if payload_only else None,
        offset_vif=vif,
        offsets_held=held,
        elapsed={"fit_s": time.perf_counter() - clock},
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
