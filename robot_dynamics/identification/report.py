"""What ``identify`` writes: the JSON report, the plot and the identified model (the text summary it
prints: :mod:`.report_text`).

Every file is written atomically (a temporary file in the same directory, then a rename), and the
callers write only after a successful fit, so a failed run leaves nothing behind.

The model file is a ``format: chain`` robot YAML (:mod:`robot_dynamics.models.chain_yaml`) that
``load_robot``, ``evaluate`` and every node accept, with an ``identified:`` metadata block (source
robot, bags, date, method, parameter set, RMS errors). ``fmt="urdf"`` writes a URDF instead
(:func:`robot_dynamics.models.model_to_urdf`): URDF's ``<dynamics damping friction>`` hold only viscous
and symmetric Coulomb friction; the asymmetric levels, the tanh width and the motor data go into the
``<robot_dynamics>`` element, which robot_dynamics reads back and other URDF tools ignore.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from robot_dynamics.model import FloatArray
from robot_dynamics.models.chain_yaml import dumps_chain_yaml, write_text_atomic

from .parameters import IdentificationError, link_parameters, nominal_parameters, physical_problem
from .pipeline import IdentificationResult
from .regressor import friction_law, regressor
from .samples import BagTask, held_out_series

FORMATS = ("yaml", "urdf")


def robot_label(result: IdentificationResult) -> str:
    """The stock model's source as a user names it: a bundled robot by name, else its file (or name)."""
    from robot_dynamics.models.robots import bundled_robot_path, bundled_robots

    model = result.model
    source = model.source or model.name
    try:
        for name in bundled_robots():
            if Path(source).resolve() == bundled_robot_path(name).resolve():
                return name
    except (ValueError, OSError):
        pass
    return source


def _floats(values: FloatArray | None) -> list[float] | None:
    return None if values is None else [float(v) for v in np.asarray(values, dtype=float)]


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def consistency(result: IdentificationResult) -> list[dict[str, Any]]:
    """Per link of the fitted parameters (the model's own where not identified): mass, rigid body or why not."""
    lay = result.pset.layout(result.model)
    rows = []
    for i, joint in enumerate(result.model.joints):
        phi = result.fit.theta[lay.link_slice(i)] if i in lay.links else link_parameters(joint.link)
        problem = physical_problem(phi)
        rows.append(
            {
                "joint": joint.name,
                "link": joint.link_name,
                "identified": i in lay.links,
                "mass": float(phi[0]),
                "physical": problem is None,
                "problem": problem,
            }
        )
    return rows


def summary(result: IdentificationResult) -> dict[str, Any]:
    """The JSON report (base parameters, values, std, condition number, RMS, consistency, ...)."""
    model, fit, base = result.model, result.fit, result.base
    names = result.names
    nominal_full = nominal_parameters(model, result.pset)
    nominal_base = np.asarray(base.to_base(nominal_full), dtype=float)
    std = np.asarray(fit.std_base, dtype=float)
    values = np.asarray(fit.theta_base, dtype=float)
    base_rows = []
    for k, name in enumerate(base.names):
        base_rows.append(
            {
                "name": name,
                "expression": base.expressions[k],
                "value": float(values[k]),
                "std": _finite(float(std[k])),
                "relative_std": _finite(float(std[k] / abs(values[k]))) if values[k] != 0.0 else None,
                "nominal": float(nominal_base[k]),
            }
        )
    joints = []
    for j, joint in enumerate(model.joint_names):
        row: dict[str, Any] = {"joint": joint, "noise_std": float(result.noise_std[j])}
        if result.sensor_noise is not None:
            row["sensor_noise_std"] = _finite(float(result.sensor_noise[j]))
        for key, rms in result.rms.items():
            row[f"rms_{key}"] = None if rms is None else float(rms[j])
        offsets = result.offsets
        if offsets is not None:
            row["offset"] = float(offsets[j])
        if result.offset_vif is not None and not np.isnan(result.offset_vif[j]):
            row["offset_vif"] = _finite(float(result.offset_vif[j]))
            row["offset_held"] = bool(result.offsets_held is not None and result.offsets_held[j])
        joints.append(row)
    return {
        "robot": model.name,
        "robot_source": robot_label(result),
        "created": result.created,
        "method": fit.method,
        "identify_method": result.method,
        "consistent": result.consistent,
        "prior_weight": result.prior_weight,
        "parameter_set": _pset(result),
        "offsets": {"use": result.offset_use, "deployed": result.offsets_deployed},
        "samples": {
            "train": int(result.train.count),
            "holdout": int(result.holdout.count) if result.holdout is not None else 0,
            "holdout_fraction": result.settings.holdout,
        },
        "bags": [
            {
                "path": s.name,
                "messages": s.messages,
                "duration_s": s.duration,
                "train_samples": int(s.train.count),
                "holdout_samples": int(s.holdout.count) if s.holdout is not None else 0,
                "static_joints": list(s.static),
            }
            for s in result.bags
        ],
        "condition_number": _finite(float(fit.condition_number)),
        "cost": {"fit": float(fit.cost), "least_squares": float(result.wls_cost), "sigma2": float(fit.sigma2)},
        "base_parameters": base_rows,
        "unidentifiable": list(getattr(base, "unidentifiable", ())),
        "parameters": {name: float(v) for name, v in zip(names, np.asarray(fit.theta, dtype=float), strict=True)},
        "parameter_table": parameter_table(result),
        "joints": joints,
        "rms_note": "RMS of model - measured torque [N m or N]; identified includes the estimated offsets; train: "
        "the rows fitted; holdout: every held-out row; holdout_moving: those the fit's row selection keeps",
        "noise_note": "noise_std: the fit's residual standard deviation per joint (its weights; holds the sensor's "
        "noise and every error the model leaves, e.g. a controller's reaction to velocity noise); "
        "sensor_noise_std: the torque sensor's noise, from the residual's high-frequency part less what the "
        "measured state's noise explains",
        "choice": choice_block(result),
        "friction": friction_block(result),
        "effort_lag": effort_lag_block(result),
        "friction_comparison": result.friction_comparison,
        "consistency": consistency(result),
        "plausibility": {"bounded": result.bounded, "links": result.plausibility},
        "excitation": {
            "static_joints": list(result.excitation.static_joints),
            "undetermined": list(result.excitation.undetermined),
            "information_ratio": result.excitation.eigenvalue_ratio,
            "condition_number": _finite(float(fit.condition_number)),
            "peak_velocity": _floats(np.max([s.excitation for s in result.bags], axis=0)),
            "rows_kept": _floats(result.train.rows / max(result.train.count, 1)),
        },
        "payload": result.payload,
        "warnings": list(result.warnings),
        "elapsed_s": {k: float(v) for k, v in result.elapsed.items()},
    }


def parameter_table(result: IdentificationResult) -> list[dict[str, Any]]:
    """Per parameter: stock and identified value, and the standard deviation where the parameter is a
    base parameter by itself (the others enter the torques only in combinations: see base_parameters)."""
    stock = nominal_parameters(result.model, result.pset)
    alone = {
        name: float(std)
        for name, expression, std in zip(result.base.names, result.base.expressions, result.fit.std_base, strict=True)
        if expression.split("=", 1)[-1].strip() == name
    }
    return [
        {
            "name": name,
            "stock": float(s),
            "identified": float(v),
            "std": _finite(alone[name]) if name in alone else None,
        }
        for name, s, v in zip(result.names, stock, np.asarray(result.fit.theta, dtype=float), strict=True)
    ]


def friction_block(result: IdentificationResult) -> dict[str, Any]:
    """The friction law fitted, the rows it left out, and the Stribeck terms if any."""
    block: dict[str, Any] = {
        "law": result.friction,
        "reversal_velocity": _floats(result.settings.reversal(result.model)),
        "stick_velocity": result.settings.stick_velocity,
        "stick_band": result.settings.stick_band and result.settings.stick_velocity > 0.0,
        "window_s": result.settings.window_s,
    }
    if result.coulomb_widths is not None:
        block["coulomb_width"] = _floats(result.coulomb_widths)
    if result.reversals is not None:
        block["reversals"] = result.reversals.as_dict(result.model.joint_names)
        block["smooth_kind"] = {"chosen": result.reversals.shape, "slow_rows_squared_error": result.reversals.costs}
    if result.stribeck is not None:
        block["stribeck_velocity"] = _floats(result.stribeck.velocity)
        block["stribeck_excess"] = _floats(result.stribeck.excess)
        block["stribeck_excess_std"] = _floats(result.stribeck.std_excess)
    return block


def choice_block(result: IdentificationResult) -> dict[str, Any] | None:
    """The rows, friction law and window chosen by cross-validation (:mod:`.choice`): each candidate's
    score and, per joint, the training rows it keeps."""
    choice = result.choice
    if choice is None:
        return None
    names = result.model.joint_names
    return {
        "folds": choice.folds,
        "score": "validation torque RMS over every joint's rows of the left-out fold [N m or N], pooled",
        "given": choice.given,
        "chosen": choice.chosen.as_dict(names),
        "plain": None if choice.plain is None else choice.plain.as_dict(names),
        "candidates": [c.as_dict(names) for c in choice.candidates],
        "elapsed_s": choice.elapsed_s,
    }


def effort_lag_block(result: IdentificationResult) -> dict[str, Any]:
    """The messages between a state and its effort, the acceleration's estimate, and (``auto``) each
    pairing's training score."""
    block: dict[str, Any] = {"lag": result.settings.effort_lag, "acceleration": result.settings.acceleration}
    if result.effort_lag_scores:
        block["chosen"] = "auto"
        block["scores"] = result.effort_lag_scores
    return block


def _pset(result: IdentificationResult) -> dict[str, Any]:
    p = result.pset
    return {
        "inertial": p.inertial,
        "links": list(p.identified_links(result.model)),
        "armature": p.armature,
        "viscous": p.viscous,
        "coulomb": p.coulomb,
        "coulomb_velocity": p.coulomb_velocity,
        "asymmetric": p.asymmetric,
        "offset": p.offset,
        "parameters": len(result.names),
        "base_parameters": len(result.base.names),
    }


def offsets_block(result: IdentificationResult) -> dict[str, Any]:
    """The fitted offsets and what was done with them: ``offsets`` ("reading": a bias of the recorded
    torque, not deployed; "torque": a torque the drive applies, deployed in the model's
    ``friction.offset``), ``offsets_deployed`` and the values under ``offsets_deployed_values`` or
    ``offsets_not_deployed``."""
    deployed = result.offsets_deployed
    key = "offsets_deployed_values" if deployed else "offsets_not_deployed"
    return {"offsets": result.offset_use, "offsets_deployed": deployed, key: _floats(result.offsets)}


def metadata(result: IdentificationResult) -> dict[str, Any]:
    """The ``identified:`` block of the model file: provenance and the headline numbers."""
    rms = {k: _floats(v) for k, v in result.rms.items()}
    return {
        "from_robot": robot_label(result),
        "bags": [s.name for s in result.bags],
        "created": result.created,
        "method": result.fit.method,
        "friction": friction_block(result),
        "effort_lag": effort_lag_block(result),
        "parameter_set": _pset(result),
        "samples": {"train": int(result.train.count), "holdout": int(result.holdout.count) if result.holdout else 0},
        "condition_number": _finite(float(result.fit.condition_number)),
        "rms": rms,
        **offsets_block(result),
        "tool": "robot-dynamics identify",
    }


# ----------------------------------------------------------------------------------------------
# files
# ----------------------------------------------------------------------------------------------
def json_text(result: IdentificationResult) -> str:
    return json.dumps(summary(result), indent=2) + "\n"


def model_text(result: IdentificationResult, fmt: str = "yaml") -> str:
    """The identified model as chain YAML (default) or URDF text (module docstring)."""
    offsets = (
        "The constant torque offsets are torques the drive applies (its torque loop closes on the recorded "
        "sensor): deployed in each joint's friction.offset."
        if result.offsets_deployed
        else "The constant torque offsets are sensor biases: reported in identified.offsets_not_deployed, not part "
        "of the model."
    )
    header = (
        f"Identified by robot-dynamics identify from {robot_label(result)} on "
        f"{result.created}\n({len(result.bags)} bag(s), {result.fit.method}). {offsets}"
    )
    if result.identified is None:
        raise IdentificationError(result.model_problem or "no identified model")
    if fmt == "yaml":
        provenance = result.provenance.block() if result.provenance is not None else None
        return dumps_chain_yaml(result.identified, identified=metadata(result), header=header, provenance=provenance)
    if fmt == "urdf":
        from robot_dynamics.models import model_to_urdf

        text = model_to_urdf(result.identified)
        note = (
            f"<!-- {header.replace('--', '-')}\n     URDF <dynamics damping friction> hold viscous and symmetric "
            "Coulomb friction only: the asymmetric Coulomb levels,\n     the tanh smoothing width and the armature "
            "are in the <robot_dynamics> element (read by robot_dynamics, ignored by other tools). -->\n"
        )
        first_newline = text.index("\n") + 1  # after the XML declaration
        return text[:first_newline] + note + text[first_newline:]
    raise ValueError(f"unknown model format {fmt!r} (expected one of {FORMATS})")


def write_json(path: str | Path, result: IdentificationResult) -> Path:
    return write_text_atomic(path, json_text(result))


def write_model(path: str | Path, result: IdentificationResult, fmt: str = "yaml") -> Path:
    """The identified model file, atomically."""
    return write_text_atomic(path, model_text(result, fmt))


def render_plot(path: str | Path, result: IdentificationResult, bag: int = -1) -> Path:
    """Measured vs nominal vs identified torque per joint on one bag's held-out data (PNG)."""
    from robot_dynamics.bag.plot import plot_torques
    from robot_dynamics.dynamics import inverse_dynamics

    source = result.sources[bag]
    task = BagTask(source, result.model, result.pset, result.settings)
    t, q, qd, qdd, tau = held_out_series(task)
    nominal = inverse_dynamics(result.model, q, qd, qdd, friction=True, smooth=True)
    # the fitted model's torque: the known part at model values plus Y theta (offset included)
    smooth, law = friction_law(result.model, result.pset)
    y = regressor(result.model, q, qd, qdd, result.pset)
    theta0 = nominal_parameters(result.model, result.pset)
    identified = inverse_dynamics(law, q, qd, qdd, friction=True, smooth=smooth) + y @ (result.fit.theta - theta0)
    return plot_torques(
        path,
        t - t[0],
        result.model.joint_names,
        {"measured": tau, "nominal": nominal, "identified (+ offset)": identified},
        title=f"{result.model.name}: held-out data of {Path(source).name}",
    )


def temporary_path(final: str | Path) -> Path:
    """A fresh temporary file next to ``final`` (rename it onto ``final`` with :func:`os.replace`)."""
    out = Path(final)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=out.suffix or ".tmp", dir=out.parent)
    os.close(fd)
    return Path(tmp)


def write_plot(path: str | Path, result: IdentificationResult, bag: int = -1) -> Path:
    """:func:`render_plot` atomically."""
    tmp = temporary_path(path)
    try:
        render_plot(tmp, result, bag)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return Path(path)
