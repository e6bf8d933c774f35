"""The identified parameters beside the plant's and the stock file's (the closed-loop experiment's report).

Per joint the viscous ``Fv`` and Coulomb ``Fc`` friction and the armature ``Ia``, per link the mass, of the
stock file, the plant (its true model: what MuJoCo simulates, :attr:`robot_dynamics.plant.MujocoPlant.
true_model`) and the identified file, with the identified value's error against the plant's; each with
how joint torques determine it (the base parameters of :func:`robot_dynamics.identification.base.
base_parameters`): ``alone`` (a base parameter of its own: its identified value can be compared),
``regrouped`` (only in a combination with others, e.g. a link's mass with the next links' first moments:
its identified value alone means little) or ``no effect``.

:func:`base_parameter_summary`: the base parameters themselves (the combinations joint torques determine)
of the three models, each with its torque scale (the RMS of its regressor column over random states,
N·m per unit), so that an error is also said as the torque it makes; a base parameter is *significant*
when the plant's value makes at least :data:`SIGNIFICANT_NM` of torque that way. A first moment of
0.002 kg·m or a product of inertia of 0.001 kg·m² is a base parameter too: its relative error can be
large while its torque is a few mN·m.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from robot_dynamics.identification.base import base_parameters
from robot_dynamics.identification.parameters import ParameterSet, nominal_parameters
from robot_dynamics.model import RobotModel

PARAMETERS = {"Fv": "viscous friction", "Fc": "Coulomb friction", "Ia": "armature", "m": "mass"}
#: N·m: a base parameter whose plant value makes less torque than this (its value x its torque scale) is
#: not counted as significant.
SIGNIFICANT_NM = 0.01
#: The relative error a significant base parameter is held to (the identification targets).
WITHIN = 0.05


def parameter_rows(stock: RobotModel, plant: RobotModel, identified: RobotModel | None) -> list[dict[str, Any]]:
    """Per joint ``Fv``, ``Fc``, ``Ia`` and per link ``m`` of the three models, each with how joint torques
    determine it (module docstring); ``identified`` None: the first two only."""
    pset = ParameterSet(offset=False)
    names = pset.names(stock)
    base = base_parameters(stock, pset)
    determined = {
        **dict.fromkeys(base.dependent, "regrouped"),
        **dict.fromkeys(base.unidentifiable, "no effect"),
        **{
            name: "alone" for name, text in zip(base.names, base.expressions, strict=True) if text == f"{name} = {name}"
        },
    }
    values = {
        label: dict(zip(names, nominal_parameters(m, pset).tolist(), strict=True))
        for label, m in (("stock", stock), ("plant", plant))
    }
    if identified is not None:
        values["identified"] = dict(zip(names, nominal_parameters(identified, pset).tolist(), strict=True))
    rows = []
    for kind, what in PARAMETERS.items():
        for j, joint in enumerate(stock.joints):
            key = f"{kind}{j + 1}"
            row: dict[str, Any] = {
                "parameter": key,
                "what": what,
                "of": joint.link_name if kind == "m" else joint.name,
                "determined": determined.get(key, "regrouped"),
                **{label: v[key] for label, v in values.items()},
            }
            if identified is not None:
                error = values["identified"][key] - values["plant"][key]
                row["error"] = error
                row["relative_error"] = error / abs(values["plant"][key]) if values["plant"][key] else None
            rows.append(row)
    return rows


def base_parameter_summary(stock: RobotModel, plant: RobotModel, identified: RobotModel) -> dict[str, Any]:
    """The base parameters of the three models (module docstring): ``rows`` (name, expression, values,
    ``scale_nm``, ``error``, ``relative_error``, ``error_nm``, ``significant``), and over the significant
    ones how many lie within :data:`WITHIN` of the plant's, the 90th percentile and largest relative error,
    and the largest error as torque over every base parameter."""
    pset = ParameterSet(offset=False)
    base = base_parameters(stock, pset)
    values = {
        label: base.to_base(nominal_parameters(m, pset))
        for label, m in (("stock", stock), ("plant", plant), ("identified", identified))
    }
    error = values["identified"] - values["plant"]
    contribution = np.abs(values["plant"]) * base.scale
    significant = contribution >= SIGNIFICANT_NM
    relative = error / np.where(values["plant"] != 0.0, np.abs(values["plant"]), np.inf)  # signed
    rows = [
        {
            "name": name,
            "expression": text,
            **{label: float(v[k]) for label, v in values.items()},
            "scale_nm": float(base.scale[k]),
            "error": float(error[k]),
            "relative_error": float(relative[k]) if values["plant"][k] != 0.0 else None,
            "error_nm": float(abs(error[k]) * base.scale[k]),
            "significant": bool(significant[k]),
        }
        for k, (name, text) in enumerate(zip(base.names, base.expressions, strict=True))
    ]
    held = np.abs(relative[significant])
    return {
        "significant_nm": SIGNIFICANT_NM,
        "within": WITHIN,
        "count": base.rank,
        "significant": int(significant.sum()),
        "within_count": int((held <= WITHIN).sum()),
        "p90_relative_error": float(np.percentile(held, 90.0)) if held.size else None,
        "max_relative_error": float(held.max()) if held.size else None,
        "max_error_nm": float(np.max(np.abs(error) * base.scale)),
        "rows": rows,
    }


def base_parameter_lines(base: Mapping[str, Any] | None) -> list[str]:
    """The base parameters' summary, and the significant ones further than ``within`` from the plant's."""
    if not base:
        return []
    within, floor = base["within"], base["significant_nm"]
    lines = [
        "",
        "## Base parameters: identified vs plant",
        "",
        f"{base['count']} base parameters; {base['significant']} significant (the plant's value makes at least "
        f"{floor:g} N·m of torque: the value times the RMS of its regressor column over random states), "
        f"**{base['within_count']} of them within {100 * within:g} %** of the plant's (90th percentile "
        f"{100 * base['p90_relative_error']:.2g} %, largest {100 * base['max_relative_error']:.2g} %); the "
        f"largest error of any base parameter makes {base['max_error_nm']:.3g} N·m.",
    ]
    off = [r for r in base["rows"] if r["significant"] and abs(r["relative_error"] or 0.0) > within]
    if off:
        lines += ["", "| base parameter | plant | identified | error | as torque (N·m) |", "|---|---:|---:|---:|---:|"]
        for r in off:
            error = f"{r['error']:+.3g} ({100 * r['relative_error']:+.1f} %)"
            lines.append(
                f"| {r['expression']} | {r['plant']:.4g} | {r['identified']:.4g} | {error} | {r['error_nm']:.3g} |"
            )
    return lines
