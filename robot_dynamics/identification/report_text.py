"""The text summary ``identify`` prints: per-joint RMS errors, the noise estimate, the friction laws
side by side, the reversal widths, the effort lag and the payload."""

from __future__ import annotations

import numpy as np

from robot_dynamics.model import FloatArray

from .pipeline import IdentificationResult


def friction_table(result: IdentificationResult) -> list[str]:
    """The friction laws side by side on the held-out rows at or above the reversal velocity."""
    rows = result.friction_comparison
    if not rows:
        return []
    names = result.model.joint_names
    lines = [
        "held-out RMS per friction law (rows at or above the reversal velocity; score: RMS / sigma over joints)",
        f"{'law':<20}{'score':>8}  " + " ".join(f"{name[:10]:>10}" for name in names),
    ]
    for row in rows:
        mark = " *" if row["friction"] == result.friction else ""
        if "error" in row:
            lines.append(f"{row['friction'] + mark:<20}  failed: {row['error']}")
            continue
        held = row.get("holdout_moving_rms") or row.get("holdout_rms")
        score = row.get("holdout_score")
        cells = " ".join(f"{v:10.4g}" for v in held) if held else "-"
        lines.append(f"{row['friction'] + mark:<20}{score if score is not None else float('nan'):8.3f}  {cells}")
    return lines


def choice_table(result: IdentificationResult) -> list[str]:
    """The candidates of the cross-validation (:mod:`.choice`), their scores and the rows each keeps."""
    choice = result.choice
    if choice is None:
        return []
    names = result.model.joint_names
    lines = [
        f"rows, friction law and window chosen by {choice.folds}-fold blocked cross-validation in the training part "
        "(score: validation torque RMS over every row; * chosen, P plain least squares)",
        f"{'candidate (reversal velocity per joint, stick band, friction law)':<68}{'fit':>5}{'window':>7}{'score':>9}"
        "  rows kept per joint: " + " ".join(f"{n[:7]:>7}" for n in names),
    ]
    for c in choice.candidates:
        mark = "*" if c is choice.chosen else ("P" if c is choice.plain else " ")
        score = f"{c.score:9.4g}" if c.score is not None else f"{'failed':>9}"
        rows = " ".join(f"{int(v):7d}" for v in c.rows) if c.rows is not None else (c.error or "")
        what = f"{c.selection.label()}, {c.friction}"
        fit = "cons" if c.consistent else "LS"
        lines.append(f"{mark} {what[:66]:<66}{fit:>5}{_g(c.window_s):>7}{score}  {'':21}{rows}")
    given = ", ".join(f"{k} {v}" for k, v in choice.given.items())
    lines.append(
        f"chosen: {choice.chosen.label()}, window {_g(choice.chosen.window_s)} s (cross-validation took "
        f"{choice.elapsed_s:.1f} s{'; given: ' + given if given else ''})"
    )
    return lines


def _g(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _share(rows: FloatArray, count: int) -> str:
    """The smallest and largest share of ``count`` among ``rows`` (per joint), as percentages."""
    share = np.asarray(rows, dtype=float) / max(count, 1)
    low, high = float(share.min()), float(share.max())
    return f"{low:.0%}" if round(low, 2) == round(high, 2) else f"{low:.0%}–{high:.0%}"


def offset_lines(result: IdentificationResult) -> list[str]:
    """The fitted offsets, whether they were deployed, and per joint (when known) the offset's variance
    inflation factor and whether it was held at 0 (:mod:`.collinear`)."""
    offsets, vif, held = result.offsets, result.offset_vif, result.offsets_held
    if offsets is None:
        return []
    what = (
        "deployed (a torque the drive applies: the model's friction.offset)"
        if result.offsets_deployed
        else "not deployed (a bias of the reading)"
    )
    cells = []
    for j, name in enumerate(result.model.joint_names):
        state = " held at 0" if held is not None and held[j] else ""
        detail = f" (VIF {_g(float(vif[j]))}{state})" if vif is not None else ""
        cells.append(f"{name} {offsets[j]:.4g}{detail}")
    return [f"offsets {what}: " + ", ".join(cells)]


def format_table(result: IdentificationResult) -> str:
    """Per-joint RMS errors (stock vs identified, train and held-out) and the fit's headline."""
    fit = result.fit
    lines = [
        f"{result.model.name}: {len(result.bags)} bag(s), {result.train.count} training / "
        f"{result.holdout.count if result.holdout is not None else 0} held-out samples; "
        f"{len(result.names)} parameters, {len(result.base.names)} base parameters; {fit.method}, "
        f"condition number {fit.condition_number:.3g}",
        f"rows fitted per joint: {_share(result.train.rows, result.train.count)} of the training samples "
        f"(slower than the reversal velocity, or near a joint's sticking, left out)",
        f"{'':<12}{'training RMS':^22}{'held-out RMS':^22}{'residual':>10}{'sensor':>10}",
        f"{'joint':<12}{'nominal':>11}{'identified':>11}{'nominal':>11}{'identified':>11}{'sigma':>10}{'noise':>10}",
    ]
    r = result.rms
    for j, name in enumerate(result.model.joint_names):

        def cell(key: str, j: int = j) -> str:
            values = r.get(key)
            return f"{values[j]:11.4g}" if values is not None else f"{'-':>11}"

        lines.append(
            f"{name:<12}{cell('nominal_train')}{cell('identified_train')}{cell('nominal_holdout')}"
            f"{cell('identified_holdout')}{result.noise_std[j]:10.3g}"
            + (f"{result.sensor_noise[j]:10.3g}" if result.sensor_noise is not None else f"{'-':>10}")
        )
    lines += offset_lines(result)
    lines += friction_table(result)
    lines += choice_table(result)
    if result.reversals is not None:
        band = result.reversals
        cells = ", ".join(
            f"{name} {w:.3g} ({lead * 1e3:+.1f} ms)"
            for name, w, lead, n in zip(result.model.joint_names, band.width, band.lead, band.rows, strict=True)
            if n > 0
        )
        lines.append(f"Coulomb width (reversal timing) from the slow rows: {cells}")
        costs = ", ".join(f"{k} {_g(v)}" for k, v in (band.costs or {}).items())
        lines.append(f"direction function {band.shape} (slow rows' squared error: {costs})")
    lag, acceleration = result.settings.effort_lag, result.settings.acceleration
    if result.effort_lag_scores:
        several = len({d["acceleration"] for d in result.effort_lag_scores}) > 1
        scores = ", ".join(
            f"{d['lag']}{' ' + d['acceleration'] if several else ''}: {_g(d['score'])}"
            for d in result.effort_lag_scores
        )
        lines.append(f"effort lag {lag} message(s), acceleration {acceleration}, chosen by training score ({scores})")
    elif lag or acceleration != "savgol":
        lines.append(f"effort lag {lag} message(s), acceleration {acceleration}")
    lines += [f"warning: {w}" for w in result.warnings]
    if result.payload is not None:
        p = result.payload
        lines.append(
            f"payload: {p.get('mass', 0.0):.4g} kg"
            + (f" at {np.round(p['com'], 4).tolist()} m (tool frame)" if "com" in p else "")
        )
    return "\n".join(lines)
