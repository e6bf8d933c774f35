"""What an identification produced (:class:`IdentificationResult`), and the checks it is made of.

The excitation check (:func:`check_excitation`), the identified model (:func:`identified_model`: the
fit's parameters as a robot file can hold them) and the payload (:func:`payload_of`) of the fit made by
:func:`.fitting.fit_statistics`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.errors import ModelError
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.models.provenance import Provenance

from .base import BaseParameters
from .bounds import Ellipsoid
from .estimate import Fit, NormalEquations
from .friction_laws import DEFAULT_FRICTION
from .parameters import (
    IdentificationError,
    ParameterSet,
    apply_parameters,
    body_of,
    link_parameters,
    physical_problem,
)
from .reversals import ReversalFit
from .samples import PipelineSettings, SampleStatistics
from .stribeck import StribeckFit

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
    # per joint, {nominal|identified}_{train|holdout|holdout_moving}: training rows (those slower than the
    # reversal velocity left out), every held-out row, the held-out rows at or above the reversal velocity
    rms: dict[str, FloatArray | None]
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
    provenance: Provenance | None = None  # how the stock model's chain was chosen (written to the model file)
    friction: str = DEFAULT_FRICTION  # the friction law fitted (.friction_laws)
    stribeck: StribeckFit | None = None  # friction "stribeck": per joint velocity and excess
    coulomb_widths: FloatArray | None = None  # friction "smooth-coulomb": per joint the tanh width
    friction_comparison: list[dict[str, Any]] = field(default_factory=list)  # every law on the same split
    ellipsoids: list[Ellipsoid] = field(default_factory=list)  # per link the bound of its mass (.bounds)
    plausibility: list[dict[str, Any]] = field(default_factory=list)  # per link: mass and centre of mass vs bounds
    bounded: bool = False  # the consistent fit kept each link's mass in its bounding ellipsoid
    effort_lag_scores: list[dict[str, Any]] = field(default_factory=list)  # effort_lag "auto": each lag's score
    reversals: ReversalFit | None = None  # each joint's Coulomb width from the slow rows (.reversals)
    choice: Any = None  # .choice.Choice: the rows, friction law and window chosen by cross-validation
    method: str = "identify"  # or "plain": plain weighted least squares (the baseline)
    sensor_noise: FloatArray | None = None  # (n,) the torque sensor's noise apart from the residual (.noise)
    offset_use: str = "reading"  # the offsets: a bias of the reading, or a torque the drive applies (deployed)
    offset_vif: FloatArray | None = None  # (n,) each offset's variance inflation factor (.collinear; NaN: none)
    offsets_held: NDArray[np.bool_] | None = None  # (n,) the offsets held at zero (.collinear)

    @property
    def names(self) -> tuple[str, ...]:
        return self.pset.names(self.model)

    @property
    def offsets_deployed(self) -> bool:
        """Whether the identified model applies the fitted offsets (``offset_use`` "torque", a set with ``Fo``)."""
        return self.offset_use == "torque" and self.offsets is not None and self.identified is not None

    @property
    def offsets(self) -> FloatArray | None:
        """The identified constant torque per joint, if the set has ``Fo``: a bias of the reading, or with
        ``offset_use`` "torque" a torque the drive applies (then deployed in ``identified``)."""
        if not self.pset.offset:
            return None
        cols = self.pset.layout(self.model).joint_column["Fo"]
        return np.asarray(self.fit.theta[cols], dtype=float)


def payload_parameter_set(model: RobotModel) -> ParameterSet:
    """The last link's inertial parameters and the offsets; everything else at its nominal value."""
    return ParameterSet(armature=False, viscous=False, coulomb="none", offset=True, links=(model.dof - 1,))


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


def payload_of(model: RobotModel, theta: FloatArray, pset: ParameterSet) -> dict[str, Any]:
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


def identified_model(
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
