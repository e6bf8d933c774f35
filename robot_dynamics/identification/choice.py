"""Which rows to fit and which friction law: chosen from the data by blocked cross-validation.

Every constant that decides which rows count — per joint the reversal velocity below which its rows
are left out, whether every joint's rows near a joint's sticking are left out (the stick band), the
friction law, the differentiation window — changes what the fit sees, and the best value depends on
the recording (its rate, its length, how slowly each joint moves, how noisy the sensors are). A
value that removes most of a slow joint's rows at 30 Hz can be right at 1 kHz. So each is chosen by
K-fold cross-validation *inside the training part* (Hastie, Tibshirani & Friedman, "The Elements of
Statistical Learning", 2nd ed., section 7.10; blocked, contiguous folds in time because neighbouring
samples are correlated: Roberts et al., "Cross-validation strategies for data with temporal, spatial,
hierarchical, or phylogenetic structure", Ecography 40, 2017): the training part of every data set is
cut into :data:`.samples.FOLDS` contiguous blocks; for each candidate and each block, the candidate's
rows of the other blocks are fitted and the fit is scored on **every** row of the block left out (the
rows the feed-forward will meet, stuck ones included). The score is the torque RMS over every joint's
rows in N·m (the unit the feed-forward's error is in: the joints weigh by their torque error, not by
their noise), pooled over the blocks. The held-out part never enters, so its figure stays a test.

The fits are the weighted least squares of :mod:`.fitting` (two-pass weights, the law's nonlinear
parameters searched as in the final fit) with a tiny prior (:data:`CV_PRIOR`, so that a block's
absence cannot leave a parameter undetermined). The regressor is built once: the reduction keeps the
sums by row class and fold (:class:`.spans.Buckets`), and a candidate's sums are sums of classes.

Candidates (:func:`choose`), each given value fixed instead of searched:

1. one reversal velocity for every joint from :data:`VELOCITIES`, the stick band on and off, with
   the ``viscous-coulomb`` law — among them the plain least-squares row selection (every joint's
   rows slower than :data:`PLAIN_VELOCITY` left out, no stick band: :func:`plain_selection`);
2. from the best of these, each joint's velocity in turn (one sweep of coordinate descent): a joint
   that moves slowly can keep rows another joint's cut would remove;
3. every friction law (:data:`.friction_laws.FRICTION_LAWS`) on the rows chosen;
4. (with the validator's ``consistent`` options) the physically consistent fit of the chosen rows and law,
   and where it validates worse than plain least squares, also that of plain least squares' rows and law:
   the better of them replaces the least-squares choice if it validates no worse than plain least squares,
   and is kept as :attr:`Choice.fallback` otherwise — the fit deployed when the least-squares parameters
   make no robot model (on recordings whose torques carry what no rigid body explains, the consistent fit
   of the rows least squares preferred can validate several per cent worse than that of plain's rows).

The candidate with the lowest score is chosen; the plain selection is always among those scored, so
the choice can only be worse than plain least squares on held-out data by the difference between the
validation blocks and the held-out part.

The module is longer than 400 lines because the validator, the search over candidates and the loop over
differentiation windows (:func:`choose_rows`) are one algorithm, read top to bottom.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.linalg

from robot_dynamics.bag.differentiate import SavitzkyGolay
from robot_dynamics.errors import ModelError
from robot_dynamics.model import FloatArray, RobotModel

from .base import BaseParameters, base_parameters
from .consistent import fit_consistent
from .estimate import NormalEquations, scaled_system
from .fitting import CONSISTENT_PRIOR, STRIBECK_DECAY, WIDTH_EVIDENCE, _family, _noise, _stribeck_known, _with_widths
from .friction_laws import FRICTION_LAWS, columns, fit_widths, friction_parameter_set
from .parameters import IdentificationError, ParameterSet, nominal_parameters
from .result import check_excitation
from .rows import Buckets, Part, Selection
from .samples import WINDOW_S, PipelineSettings, SampleStatistics, with_selection
from .stribeck import fit_stribeck_sums

VELOCITIES = (0.0, 0.05, 0.1)  # rad/s or m/s: the reversal velocities tried (per joint in step 2)
PLAIN_VELOCITY = 0.05  # rad/s or m/s: plain least squares leaves out each joint's rows slower than this
PLAIN_FRICTION = "viscous-coulomb"  # plain least squares' friction columns (unless a law is given)
CV_PRIOR = 1e-6  # the validation fits' pull toward the stock base parameters (relative information)
WINDOWS = (0.05, 0.1)  # s: the differentiation windows tried (each one more reduction of the data)
WINDOW_STATES = 200_000  # states: above this the window is not searched (WINDOW_S; --window auto forces it)
MARGIN = 0.005  # a candidate is chosen over plain least squares only if it validates this much better


class NoCandidate(IdentificationError):
    """Every candidate failed (the data leave parameters undetermined whatever the rows): the fit with the
    given or default settings says what is missing."""


def plain_selection(model: RobotModel) -> Selection:
    """The rows of plain weighted least squares: each joint's rows at or above :data:`PLAIN_VELOCITY`."""
    return Selection(tuple(PLAIN_VELOCITY for _ in range(model.dof)), False)


@dataclass
class Candidate:
    """One candidate's validation: ``score`` the pooled torque RMS (N·m, every joint's rows), ``rms (n,)``
    per joint, ``rows (n,)`` the training rows the selection keeps per joint (every fold)."""

    selection: Selection
    friction: str
    stage: str
    score: float | None = None
    rms: FloatArray | None = None
    rows: FloatArray | None = None
    error: str | None = None
    window_s: float | None = None
    consistent: bool = False  # scored with the physically consistent fit (else weighted least squares)

    def label(self) -> str:
        return f"{self.selection.label()}, {self.friction}, {'consistent' if self.consistent else 'least squares'}"

    def as_dict(self, names: Sequence[str]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "stage": self.stage,
            "reversal_velocity": list(self.selection.reversal),
            "stick_band": self.selection.stick,
            "friction": self.friction,
            "fit": "consistent" if self.consistent else "least squares",
            "score": self.score,
            "rms": None if self.rms is None else dict(zip(names, map(float, self.rms), strict=True)),
            "rows": None if self.rows is None else dict(zip(names, map(int, self.rows), strict=True)),
        }
        if self.window_s is not None:
            out["window_s"] = self.window_s
        if self.error:
            out["error"] = self.error
        return out


@dataclass
class Choice:
    """What :func:`choose` scored and chose; ``given``: the settings the user fixed (not searched)."""

    chosen: Candidate
    candidates: list[Candidate]
    plain: Candidate | None
    folds: int
    given: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float = 0.0
    fallback: Candidate | None = None  # the consistent fit to deploy if the chosen least squares make no robot


def _minus(a: Part, b: Part) -> Part:
    families = {k: v - b.families[k] for k, v in a.families.items() if k in b.families}
    return Part(a.ne - b.ne, a.sse - b.sse, families)


def fold_buckets(stats: Sequence[SampleStatistics]) -> list[Buckets]:
    """Per fold the row classes of every data set added (fold ``k`` of each data set together)."""
    folds = len(stats[0].folds)
    out = []
    for k in range(folds):
        total = stats[0].folds[k]
        for s in stats[1:]:
            total = total + s.folds[k]
        out.append(total)
    return out


class Validator:
    """Scores candidates on the folds of reduced data sets (module docstring)."""

    def __init__(
        self,
        model: RobotModel,
        stats: Sequence[SampleStatistics],
        reduced: ParameterSet,
        coulomb: str,
        prior_weight: float = 0.0,
        seed: int = 0,
        bases: dict[ParameterSet, BaseParameters] | None = None,
        consistent: Mapping[str, Any] | None = None,
    ) -> None:
        if not stats or not stats[0].folds:
            raise IdentificationError("cross-validation needs data reduced by folds")
        self.model, self.reduced, self.coulomb, self.seed = model, reduced, coulomb, seed
        self.bases = {} if bases is None else bases  # shared with the final fit: each set's once
        self._selections: dict[tuple[Selection, tuple[str, ...]], tuple[list[Part], Part]] = {}
        self._valid: dict[tuple[int, ParameterSet, tuple[str, ...]], Part] = {}
        self.consistent = consistent  # fit_consistent's bounds and mass band: candidates may use it
        self.folds = fold_buckets(stats)
        self.whole = [f.total() for f in self.folds]
        self.prior = max(prior_weight, CV_PRIOR)
        self.user_prior = prior_weight  # without one, a candidate must determine every base parameter
        self.fixed = nominal_parameters(model, reduced)

    def _selected(self, selection: Selection, law: str) -> tuple[list[Part], Part]:
        """Per fold the rows ``selection`` keeps, and their total, with the column families ``law`` needs
        (computed once per selection and law)."""
        key = (selection, _families(law))
        if key not in self._selections:
            chosen = [_only(f.select(selection), key[1]) for f in self.folds]
            total = chosen[0]
            for part in chosen[1:]:
                total = total + part
            self._selections[key] = (chosen, total)
        return self._selections[key]

    def score(self, candidate: Candidate) -> Candidate:
        """``candidate`` with its validation score (or the error that prevented it)."""
        try:
            pset = friction_parameter_set(candidate.friction, self.coulomb)
            keep = columns(self.model, self.reduced, pset)
            chosen, total = self._selected(candidate.selection, candidate.friction)
            n = self.model.dof
            sse, rows = np.zeros(n), np.zeros(n)
            if pset not in self.bases:
                self.bases[pset] = base_parameters(self.model, pset, rng=np.random.default_rng(self.seed))
            base = self.bases[pset]
            nominal = nominal_parameters(self.model, pset)
            if self.user_prior <= 0.0:  # the final fit has no prior to keep what the data leave undetermined
                undetermined = check_excitation(total.select(keep, self.fixed).ne, base, (), self.model).undetermined
                if undetermined:
                    raise IdentificationError(f"the data do not determine {', '.join(undetermined)}")
            for k in range(len(self.folds)):
                train = _minus(total, chosen[k]).select(keep, self.fixed)
                valid_key = (k, pset, _families(candidate.friction))
                if valid_key not in self._valid:
                    self._valid[valid_key] = _only(self.whole[k], valid_key[2]).select(keep, self.fixed)
                valid = self._valid[valid_key]
                theta, (ne,) = self._fit(
                    train, [valid], candidate.friction, candidate.selection, pset, base, nominal, candidate.consistent
                )
                sse += ne.residual_sum(theta)
                rows += ne.rows
            candidate.rows = np.asarray(total.ne.rows, dtype=float)
            candidate.rms = np.sqrt(sse / np.maximum(rows, 1.0))
            candidate.score = float(np.sqrt(sse.sum() / max(rows.sum(), 1.0)))
        except (IdentificationError, ModelError, np.linalg.LinAlgError) as exc:
            candidate.error = str(exc)
        return candidate

    def _fit(
        self,
        train: Part,
        others: list[Part],
        friction: str,
        selection: Selection,
        pset: ParameterSet,
        base: BaseParameters,
        nominal: FloatArray,
        consistent: bool = False,
    ) -> tuple[FloatArray, list[NormalEquations]]:
        """Two-pass weighted least squares of ``train`` with ``friction``'s nonlinear parameters searched
        (as :func:`.fitting.fit_statistics` does); the parameters and ``others``' normal equations of the law."""
        prior, pb = self.prior, len(base.names)
        parts = [train, *others]
        data = [p.ne for p in parts]
        if friction == "stribeck":
            smallest = np.asarray(selection.reversal) / STRIBECK_DECAY
            family = _family(train, "stribeck", friction)
            sfit = fit_stribeck_sums(data[0], family, base, nominal, prior, smallest=smallest)
            data = [ne for ne in _stribeck_known(parts, sfit) if ne is not None]
        sigma = _noise(data[0], _solve(data[0], base, nominal, prior), pb)
        sigma = _noise(data[0], _solve(data[0].with_weights(1.0 / sigma**2), base, nominal, prior), pb)
        weights = 1.0 / sigma**2
        if friction == "smooth-coulomb":
            fc = pset.layout(self.model).joint_column["Fc"]
            family = _family(train, "coulomb", friction)
            start = family.pick(np.full(self.model.dof, pset.coulomb_velocity))
            pick = fit_widths(data[0].with_weights(weights), family, fc, base, nominal, prior, start, WIDTH_EVIDENCE)
            if pick != start:
                widths = np.array([family.grids[j, k] for j, k in enumerate(pick)])
                data = [ne for ne in _with_widths(parts, fc, widths) if ne is not None]
        if consistent and self.consistent is not None:
            weighted = data[0].with_weights(weights)
            prior_c = max(prior, CONSISTENT_PRIOR)
            fit = fit_consistent(
                weighted, self.model, pset, base, nominal=nominal, prior_weight=prior_c, **self.consistent
            )
            return fit.theta, data[1:]
        theta = _solve(data[0].with_weights(weights), base, nominal, prior)
        return theta, data[1:]


def _per_joint(value: float | Sequence[float], n: int) -> tuple[float, ...]:
    """One reversal velocity for every joint, or one per joint, as ``n`` values."""
    if isinstance(value, (int, float)):
        return tuple(float(value) for _ in range(n))
    return tuple(float(x) for x in value)


def _families(law: str) -> tuple[str, ...]:
    """The column families (:mod:`.columns`) a law's fit reads."""
    return {"stribeck": ("stribeck",), "smooth-coulomb": ("coulomb",)}.get(law, ())


def _only(part: Part, families: tuple[str, ...]) -> Part:
    """``part`` with only the column families ``families`` (the others cost work and are not read)."""
    return Part(part.ne, part.sse, {k: v for k, v in part.families.items() if k in families})


def _solve(ne: NormalEquations, base: BaseParameters, nominal: FloatArray, prior: float) -> FloatArray:
    """The weighted least-squares parameters (:func:`.estimate.fit_least_squares` without its statistics:
    one Cholesky solve of the scaled base normal equations with the prior)."""
    _, _, H, g = scaled_system(ne, base, nominal, prior)
    z = scipy.linalg.cho_solve(scipy.linalg.cho_factor(H), g)
    return base.to_full(z / base.scale, nominal)


def choose(
    validator: Validator,
    *,
    velocities: Sequence[float | Sequence[float]] | None = None,
    sticks: Sequence[bool] = (False, True),
    laws: Sequence[str] | None = None,
    plain_friction: str = PLAIN_FRICTION,
) -> Choice:
    """The candidates of the module docstring, scored; ``velocities``: the reversal velocities to try
    (None: :data:`VELOCITIES`; one value: the user's, or a tuple of per-joint values as one candidate),
    ``sticks``: the stick band's settings to try, ``laws``: the friction laws (None: every law). With the
    validator's ``consistent`` options, the chosen rows and law are also scored with the physically
    consistent fit, and plain least squares' rows and law too where that validates worse than plain
    least squares (step 4). Plain least squares' rows and law are kept unless a candidate validates
    :data:`MARGIN` better (where the values given allow them); the better consistent fit is kept unless
    it validates worse than plain least squares, and is the choice's ``fallback`` either way."""
    clock = time.perf_counter()
    model = validator.model
    n = model.dof
    tried: list[Candidate] = []
    seen: dict[tuple[Selection, str, bool], Candidate] = {}

    def run(selection: Selection, friction: str, stage: str, consistent: bool = False) -> Candidate:
        key = (selection, friction, consistent)
        if key not in seen:
            seen[key] = validator.score(Candidate(selection, friction, stage, consistent=consistent))
            tried.append(seen[key])
        return seen[key]

    def value(c: Candidate) -> float:
        return np.inf if c.score is None else c.score

    law_list = list(FRICTION_LAWS) if laws is None else list(laws)
    first_law = PLAIN_FRICTION if PLAIN_FRICTION in law_list else law_list[0]
    searched = velocities is None
    uniform = [_per_joint(v, n) for v in (VELOCITIES if velocities is None else velocities)]
    plain = run(plain_selection(model), plain_friction, "plain")  # the reference, always scored
    # a candidate only where the values given allow its rows and law
    allowed = plain.selection.reversal in uniform and False in sticks and plain_friction in law_list

    def best_of() -> Candidate:
        return min((c for c in tried if c is not plain or allowed), key=value)

    for stick in sticks:
        for cut in uniform:
            run(Selection(cut, stick), first_law, "uniform")
    best = best_of()
    if searched:  # step 2: each joint's own reversal velocity
        current = best
        for j in range(n):
            for v in VELOCITIES:
                per_joint = list(current.selection.reversal)
                if per_joint[j] == v:
                    continue
                per_joint[j] = v
                trial = run(Selection(tuple(per_joint), current.selection.stick), current.friction, "per joint")
                if value(trial) < value(current):
                    current = trial
        best = best_of()
    for law in law_list:  # step 3: the friction law on the chosen rows
        run(best.selection, law, "friction")
    chosen = best_of()
    if allowed and value(chosen) > (1.0 - MARGIN) * value(plain):  # no clear gain: plain least squares' rows
        chosen = plain
    fallback: Candidate | None = None
    if validator.consistent is not None:  # step 4: the physically consistent fit of the chosen rows and law
        rigid = run(chosen.selection, chosen.friction, "fit", consistent=True)
        reference = value(plain) if plain.score is not None else value(chosen)
        other_rows = (chosen.selection, chosen.friction) != (plain.selection, plain.friction)
        if value(rigid) > reference and allowed and other_rows:  # ... and of plain least squares' rows and law
            rigid = min(rigid, run(plain.selection, plain.friction, "fit", consistent=True), key=value)
        if value(rigid) <= reference:  # a rigid body that does no worse than plain least squares
            chosen = rigid
        fallback = rigid if rigid.score is not None else None
    if chosen.score is None:
        problems = "; ".join(f"{c.label()}: {c.error}" for c in tried[:3])
        raise NoCandidate(f"no candidate could be fitted in cross-validation ({problems})")
    return Choice(chosen, tried, plain, len(validator.folds), elapsed_s=time.perf_counter() - clock, fallback=fallback)


def _windows(stats: Sequence[SampleStatistics], settings: PipelineSettings) -> list[float]:
    """The windows of :data:`WINDOWS` that differ in samples at the data's rate (the first data set's)."""
    first = stats[0]
    period = first.duration / max(first.messages - 1, 1)
    t = np.arange(64) * period
    out: dict[int, float] = {}
    for w in WINDOWS:
        out.setdefault(SavitzkyGolay.for_times(t, w, settings.polyorder).window, w)
    return list(out.values())


def choose_rows(
    model: RobotModel,
    stats: list[SampleStatistics],
    settings: PipelineSettings,
    superset: ParameterSet,
    coulomb: str,
    given: Mapping[str, Any],
    window: float | str | None,
    prior_weight: float,
    seed: int,
    reduce: Any,
    bases: dict[ParameterSet, BaseParameters],
    rigid: Mapping[str, Any] | None = None,
) -> tuple[Choice | None, PipelineSettings, list[SampleStatistics]]:
    """The rows, the friction law and the window chosen by cross-validation (:mod:`.choice`), each value
    ``given`` fixed; the chosen settings and the data sets' sums for them."""
    given_cut = given.get("reversal_velocity")
    velocities = None if given_cut is None else [given_cut]
    if "stick_velocity" in given:
        sticks: tuple[bool, ...] = (settings.stick_velocity > 0.0,)
    else:
        sticks = (False, True) if settings.acceleration == "savgol" else (False,)
    laws = None if "friction" not in given else [given["friction"]]
    states = sum(s.messages for s in stats)
    if "window" in given or settings.acceleration != "savgol":
        windows = [settings.window_s]
    elif window == "auto" or (window is None and states <= WINDOW_STATES):
        windows = _windows(stats, settings)
    else:
        windows = [settings.window_s]
    began = time.perf_counter()
    results: list[tuple[Choice, PipelineSettings, list[SampleStatistics]]] = []
    for w in windows:
        here = settings if w == settings.window_s else replace(settings, window_s=w)
        data = stats if here is settings else reduce(here)
        validator = Validator(model, data, superset, coulomb, prior_weight, seed, bases, rigid)
        plain = given.get("friction", PLAIN_FRICTION)
        try:
            picked = choose(validator, velocities=velocities, sticks=sticks, laws=laws, plain_friction=plain)
        except NoCandidate:
            continue
        for c in picked.candidates:
            c.window_s = w
        results.append((picked, here, data))
    scored = [r for r in results if r[0].chosen.score is not None]
    if not scored:
        return None, settings, stats
    choice, here, data = min(scored, key=lambda r: r[0].chosen.score or np.inf)
    candidates: list[Candidate] = [c for r in results for c in r[0].candidates]
    plains = [r[0].plain for r in results if r[0].plain is not None and r[0].plain.window_s == WINDOW_S]
    choice = Choice(
        choice.chosen,
        candidates,
        plains[0] if plains else choice.plain,
        choice.folds,
        dict(given),
        time.perf_counter() - began,
        choice.fallback,
    )
    sel = choice.chosen.selection
    settings = replace(here, reversal_velocity=sel.reversal, stick_band=sel.stick)
    return choice, settings, [with_selection(s, sel) for s in data]
