"""The identified parameters beside the plant's and the stock file's (the closed-loop experiment's report).

Per joint the viscous ``Fv`` and Coulomb ``Fc`` friction and the armature ``Ia``, per link the mass, of the
stock file, the plant (its true model: what MuJoCo simulates, :attr:`robot_dynamics.plant.MujocoPlant.
true_model`) and the identified file, with the identified value's error against the plant's; each with
how joint torques determine it (the base parameters of :func:`robot_dynamics.identification.base.
base_parameters`): ``alone`` (a base parameter of its own: its identified value can be compared),
``regrouped`` (only in a combination with others, e.g. a link's mass with the next links' first moments:
its identified value alone means little) or ``no effect``.
"""

from __future__ import annotations

from typing import Any

from robot_dynamics.identification.base import base_parameters
from robot_dynamics.identification.parameters import ParameterSet, nominal_parameters
from robot_dynamics.model import RobotModel

PARAMETERS = {"Fv": "viscous friction", "Fc": "Coulomb friction", "Ia": "armature", "m": "mass"}


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
