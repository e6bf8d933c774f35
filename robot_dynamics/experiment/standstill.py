"""The standstill after a motion of the closed-loop experiment: the noise a control law passes to the motors.

Over a hold at the motion's goal after it ends (the controller's hold law), the standard deviation of each
joint's commanded torque faster than :data:`SLOW_HZ` and the share of its variance above
:data:`HIGH_FREQUENCY` Hz (Parseval over the one-sided spectrum), and of the true position: the noise a law
passes from the sensors to the motors at rest, and whether the arm buzzes. (Slower is the PD's settling of
the motion's last error against the friction: a stock model's arm creeps for seconds through MuJoCo's soft
friction, its torque drifting by tenths of N m.)

* :func:`standstill`: the figures of one hold, from the commanded torques and the true positions;
* :func:`standstill_lines`: the report's table of them, per case and joint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from robot_dynamics.bag.decode import JointStateSeries

HIGH_FREQUENCY = 100.0  # Hz: standstill, the share of the torque's variance above this
SLOW_HZ = 1.0  # Hz: standstill, the torque's variation slower than this is the PD's settling, not noise
SETTLE_S = 0.5  # s after a motion's end before its standstill is measured (the PD's settling: ~10 / wn)


def standstill(
    commands: JointStateSeries, truth: JointStateSeries | None, start: int, end: int, rate: float
) -> dict[str, Any]:
    """At rest between the stamps ``start`` and ``end`` (ns), per joint: ``torque_std``, the standard
    deviation of the commanded torque's variation faster than :data:`SLOW_HZ` (N m: the noise the law
    passes to the motors; the slower part is the PD settling the last of the motion's error against the
    friction, reported as ``torque_std_total`` with it), ``torque_share_above``, the share of that
    variance above :data:`HIGH_FREQUENCY` Hz (0 where the rate's Nyquist frequency is below it), both by
    Parseval over the one-sided spectrum of the torque less its straight-line trend; and the true
    position's standard deviation (rad; None without the truth)."""
    inside = (commands.stamps >= start) & (commands.stamps <= end)
    n = len(commands.names)
    tau = commands.effort[inside] if commands.effort is not None else np.zeros((0, n))
    out: dict[str, Any] = {"samples": int(tau.shape[0]), "seconds": (end - start) * 1e-9, "slow_hz": SLOW_HZ}
    if tau.shape[0] < 3:
        out.update(torque_std=[math.nan] * n, torque_std_total=[math.nan] * n, torque_share_above=None)
    else:
        out["torque_std_total"] = tau.std(axis=0).tolist()
        t = np.arange(tau.shape[0], dtype=np.float64)
        trend = np.polynomial.polynomial.polyfit(t, tau, 1)  # (2, n): the straight line through each joint
        x = tau - (trend[0] + np.outer(t, trend[1]))
        spectrum = np.abs(np.fft.rfft(x, axis=0)) ** 2
        spectrum[1 : (tau.shape[0] + 1) // 2] *= 2.0  # one-sided: every bin but DC and Nyquist twice
        spectrum /= tau.shape[0] ** 2  # Parseval: the bins sum to the variance
        frequency = np.fft.rfftfreq(tau.shape[0], 1.0 / rate)
        fast = spectrum[frequency >= SLOW_HZ].sum(axis=0)
        high = spectrum[frequency > HIGH_FREQUENCY].sum(axis=0)
        out["torque_std"] = np.sqrt(fast).tolist()
        out["share_above_hz"] = HIGH_FREQUENCY
        out["torque_share_above"] = np.divide(high, fast, out=np.zeros_like(fast), where=fast > 0).tolist()
    if truth is not None:
        kept = (truth.stamps >= start) & (truth.stamps <= end)
        out["position_std"] = truth.position[kept].std(axis=0).tolist() if kept.any() else None
    return out


def standstill_lines(cases: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The standstill table of the report (:func:`standstill`), per case and joint."""
    held = {k: c["standstill"] for k, c in cases.items() if c.get("standstill") and c["standstill"]["samples"]}
    if not held:
        return []
    first = next(iter(held.values()))
    lines = [
        "",
        f"## Standstill ({first['seconds']:.2g} s at the goal after each motion, from {SETTLE_S:g} s after its end)",
        "",
        f"Standard deviation of the commanded torque's variation faster than {SLOW_HZ:g} Hz per joint (N·m), "
        f"the share of its variance above {HIGH_FREQUENCY:g} Hz (of the joint with the largest), the whole "
        "torque's standard deviation (with the PD's slow settling) and the true position's (rad).",
        "",
        "| case | torque std per joint | largest | share above | with the settling, largest | position std, largest |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for key, h in held.items():
        std = h["torque_std"]
        share = h.get("torque_share_above")
        worst = int(np.argmax(std))
        shown = "–" if share is None else f"{100 * share[worst]:.0f} %"
        position = "–" if not h.get("position_std") else f"{max(h['position_std']):.2g}"
        total = "–" if not h.get("torque_std_total") else f"{max(h['torque_std_total']):.3g}"
        cells = " ".join(f"{v:.3g}" for v in std)
        lines.append(f"| {key} | {cells} | {std[worst]:.3g} | {shown} | {total} | {position} |")
    return lines
