"""Progress printer and PNG plot plumbing."""

from __future__ import annotations

import io as stdio

import numpy as np
import pytest

from robot_dynamics.bag.plot import plot_torques
from robot_dynamics.bag.progress import Progress
from robot_dynamics.errors import RobotDynamicsError


def test_progress_draws_when_enabled_and_stays_quiet_otherwise():
    out = stdio.StringIO()
    with Progress(3000, "reading", stream=out, enabled=True, interval=0.0) as p:
        for _ in range(3):
            p.update(1000)
    text = out.getvalue()
    assert "\rreading [" in text and "100%  3000/3000" in text and text.endswith("\n")
    quiet = stdio.StringIO()  # not a terminal: auto mode stays silent
    with Progress(10**6, "reading", stream=quiet) as p:
        p.update(10**6)
    assert quiet.getvalue() == ""


def test_plot_writes_png(tmp_path):
    t = np.linspace(0, 1, 50)
    measured = np.sin(np.outer(t, [1, 2, 3]))
    path = plot_torques(
        tmp_path / "sub" / "p.png", t, ["a", "b", "c"], {"measured": measured, "model": measured + 0.1, "x": None}
    )
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    with pytest.raises(RobotDynamicsError, match=r"plot curve 'model': expected shape \(50, 3\), got \(50, 2\)"):
        plot_torques(tmp_path / "q.png", t, ["a", "b", "c"], {"model": measured[:, :2]})
    with pytest.raises(RobotDynamicsError, match="nothing to plot"):
        plot_torques(tmp_path / "q.png", t, ["a"], {"model": None})
