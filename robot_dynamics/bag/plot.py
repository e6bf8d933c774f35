"""PNG plots of an evaluation: measured vs model joint torques, one panel per joint (matplotlib Agg).

Uses ``matplotlib.figure.Figure`` with the Agg canvas directly (no ``pyplot``, no global state, no
display needed), so it works headless and from threads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.model import FloatArray

# measured first (grey), then the model curves
_STYLES: tuple[dict[str, object], ...] = (
    {"color": "0.65", "linewidth": 2.6},
    {"color": "tab:blue", "linewidth": 1.0},
    {"color": "tab:orange", "linewidth": 1.0, "linestyle": "--"},
    {"color": "tab:green", "linewidth": 1.0, "linestyle": ":"},
    {"color": "tab:red", "linewidth": 1.0, "linestyle": "-."},
)


def plot_torques(
    path: str | Path,
    t: FloatArray,
    joint_names: Sequence[str],
    curves: Mapping[str, FloatArray | None],
    *,
    title: str = "",
    unit: str = "N·m",
    dpi: int = 100,
) -> Path:
    """Writes a PNG with one panel per joint; ``curves`` maps a legend label to an ``(N, n)`` array.

    ``None`` curves are skipped. Returns the path written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ts = np.asarray(t, dtype=float).reshape(-1)
    n = len(joint_names)
    drawn = {label: np.asarray(v, dtype=float) for label, v in curves.items() if v is not None}
    if not drawn:
        raise RobotDynamicsError("nothing to plot: no torque curves")
    for label, values in drawn.items():
        if values.shape != (ts.size, n):
            raise RobotDynamicsError(f"plot curve {label!r}: expected shape {(ts.size, n)}, got {values.shape}")
    cols = 2 if n > 3 else 1
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(6.0 * cols, 2.1 * rows + 0.8), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, sharex=True, squeeze=False)
    for j in range(rows * cols):
        ax = axes[j // cols][j % cols] if cols > 1 else axes[j][0]
        if j >= n:
            ax.set_visible(False)
            continue
        for (label, values), style in zip(drawn.items(), _STYLES, strict=False):
            ax.plot(ts, values[:, j], label=label, **style)
        ax.set_ylabel(f"{joint_names[j]} [{unit}]")
        ax.grid(True, linewidth=0.4, alpha=0.6)
        if j >= n - cols:
            ax.set_xlabel("time [s]")
    first = axes[0][0]
    fig.legend(*first.get_legend_handles_labels(), loc="outside lower center", ncols=len(drawn), frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", metadata={"Software": None})
    return out
