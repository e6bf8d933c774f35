"""The cases of the closed-loop experiment, the ratios it reports and their targets.

Every case runs the same PD gains on the same plant and tracks the same motion; they differ in the
feed-forward node's ``control_law``, ``feedforward_source`` and robot file, and in the efforts the
trajectory carries (:mod:`robot_dynamics.experiment`). The excitation run that records the data for
identification uses B's settings (a day-one controller: the stock file's feed-forward).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from robot_dynamics.errors import RobotDynamicsError

Efforts = Literal["none", "stock", "plant"]


@dataclass(frozen=True)
class Case:
    """One run: the node's law and feed-forward source, the robot file it loads, the efforts sent."""

    key: str
    title: str
    control_law: str
    feedforward_source: str = "model"
    efforts: Efforts = "none"
    identified: bool = False  # the node loads the identified file (else the stock one)

    @property
    def parameters(self) -> dict[str, str]:
        """The feed-forward node's run-time parameters for this case."""
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
        Case("C", "PD + feed-forward of the identified file", "pd_feedforward", identified=True),
        Case(
            "D",
            "PD + the plant's exact inverse dynamics (mj_inverse) as trajectory efforts",
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
    ("B", "A"): None,
    ("B", "B-exact"): 1.02,
}


def parse_cases(text: str) -> tuple[str, ...]:
    """``"A,B,C"`` -> the cases in the order of :data:`CASES`; ValueError naming an unknown one."""
    keys = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in keys if k not in CASES]
    if unknown or not keys:
        raise RobotDynamicsError(f"cases {text!r}: expected a comma-separated subset of {list(CASES)}")
    return tuple(k for k in CASES if k in keys)
