"""The cases of the closed-loop experiment, the ratios it reports and their targets.

Every case runs the same PD gains on the same plant and tracks the same motion; they differ in the
feed-forward node's ``control_law``, ``feedforward_source`` and robot file, and in the efforts the
trajectory carries (:mod:`robot_dynamics.experiment`). The excitation run that records the data for
identification uses B's settings (a day-one controller: the stock file's feed-forward).

With a sensor profile whose delays are not zero the feed-forward node is told them
(``measurement_delay``, ``command_delay``, as a controls engineer configures the driver's latencies);
each case is then also run without that setting, as ``<case>-uncomp`` (:func:`uncompensated`), so the
benefit of the compensation is measured on the same plant and noise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from robot_dynamics.errors import RobotDynamicsError

Efforts = Literal["none", "stock", "plant", "plain"]
RobotFile = Literal["stock", "identified"]
UNCOMPENSATED = "-uncomp"  # suffix of a case run without the delay settings


@dataclass(frozen=True)
class Case:
    """One run: the node's law and feed-forward source, the robot file it loads, the efforts sent."""

    key: str
    title: str
    control_law: str
    feedforward_source: str = "model"
    efforts: Efforts = "none"
    robot_file: RobotFile = "stock"  # the file the node loads: stock or identified (identify's fit)
    compensate_delays: bool = True  # the node is told the sensors' delays (when they have any)

    @property
    def parameters(self) -> dict[str, str]:
        """The feed-forward node's run-time parameters for this case (without the delays)."""
        return {"control_law": self.control_law, "feedforward_source": self.feedforward_source}


CASES: dict[str, Case] = {
    case.key: case
    for case in (
        Case("A", "PD only", "pd"),
        Case("B", "PD + feed-forward of the stock file", "pd_feedforward"),
        Case(
            "B-exact",
            "PD + the stock file's inverse dynamics as trajectory efforts",
            "pd_feedforward",
            "trajectory",
            "stock",
        ),
        Case("C", "PD + feed-forward of the identified file", "pd_feedforward", robot_file="identified"),
        Case(
            "C-plain",
            "PD + a plain least-squares fit of the same recording, its torques as trajectory efforts",
            "pd_feedforward",
            "trajectory",
            "plain",
        ),
        Case(
            "D",
            "PD + the plant's exact inverse dynamics (mj_inverse, through the drive) as trajectory efforts",
            "pd_feedforward",
            "trajectory",
            "plant",
        ),
    )
}
#: The run that records the identification data: B's law on the excitation trajectory.
EXCITATION = Case("excitation", "excitation run (B's settings) recorded for identify", "pd_feedforward")
#: Reported ratios of overall tracking RMS (numerator, denominator) and their targets (None: none).
RATIOS: dict[tuple[str, str], float | None] = {
    ("C", "A"): 0.05,
    ("C", "B"): 0.1,
    ("C", "D"): 1.5,
    ("C", "C-plain"): 1.0,
    ("B", "A"): None,
    ("B", "B-exact"): 1.02,
}
#: The targets with a real arm's sensors (measured state, torque constants, delays): what differs from
#: :data:`RATIOS`. The noise and the drive's errors leave every model-based case a floor of its own.
SENSED_RATIOS: dict[tuple[str, str], float | None] = {("C", "A"): None, ("C", "B"): 0.6}


def uncompensated(case: Case) -> Case:
    """``case`` run without the delay settings: key ``<key>-uncomp``."""
    return replace(
        case,
        key=case.key + UNCOMPENSATED,
        title=case.title + ", delays not compensated",
        compensate_delays=False,
    )


def ratio_targets(sensed: bool) -> dict[tuple[str, str], float | None]:
    """The ratios reported and their targets; with sensors, :data:`SENSED_RATIOS` over :data:`RATIOS`, and
    each model-based case against itself without delay compensation (no target: the benefit)."""
    if not sensed:
        return dict(RATIOS)
    out = {**RATIOS, **SENSED_RATIOS}
    out.update({(k, k + UNCOMPENSATED): None for k in ("A", "B", "C", "C-plain", "D")})
    return out


def parse_cases(text: str) -> tuple[str, ...]:
    """``"A,B,C"`` -> the cases in the order of :data:`CASES`; ValueError naming an unknown one."""
    keys = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in keys if k not in CASES]
    if unknown or not keys:
        raise RobotDynamicsError(f"cases {text!r}: expected a comma-separated subset of {list(CASES)}")
    return tuple(k for k in CASES if k in keys)
