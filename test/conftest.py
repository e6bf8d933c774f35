"""Shared test configuration.

ROS isolation: every test session (and every pytest-xdist worker of one) gets its own ROS_DOMAIN_ID
(1-101), reserved with an exclusive lock file so concurrent sessions on one machine never share a
domain, and discovery stays on this machine (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST). Both are set
before any rclpy context exists and are inherited by node processes the tests start.
"""

from __future__ import annotations

import fcntl
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest

_DOMAIN_LOCK = None


def _reserve_domain_id() -> int:
    global _DOMAIN_LOCK
    ids = list(range(1, 102))
    random.shuffle(ids)
    for domain in ids:
        path = Path(tempfile.gettempdir()) / f"robot_dynamics_ros_domain_{domain}.lock"
        handle = open(path, "w")  # noqa: SIM115 - held open for the whole session
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _DOMAIN_LOCK = handle
        return domain
    raise RuntimeError("no free ROS_DOMAIN_ID in 1..101")


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist workers inherit the controller's environment: each reserves a domain of its own, so
    # two workers' nodes (same node and topic names) never meet.
    if "ROBOT_DYNAMICS_TEST_DOMAIN" not in os.environ or os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ["ROBOT_DYNAMICS_TEST_DOMAIN"] = str(_reserve_domain_id())
    os.environ["ROS_DOMAIN_ID"] = os.environ["ROBOT_DYNAMICS_TEST_DOMAIN"]
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ.pop("ROS_LOCALHOST_ONLY", None)
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ.setdefault("PYTHONFAULTHANDLER", "1")  # a crashing node process prints every thread's stack
    # Compiled engine/generated-code libraries go to a per-session cache (inherited by node processes),
    # so the tests neither depend on nor fill the user's ~/.cache/robot_dynamics.
    # The engine's default backend in the tests (and their node processes, whose `backend` parameter is
    # `auto`) is Python: each model a test builds would otherwise be traced and compiled to C (two hundred
    # models, most of the suite's CPU time). The native programs are tested where a test asks for them
    # (backend="native", the node parameter `backend: native`) against the Python ones.
    os.environ.setdefault("RD_BACKEND", "python")
    if "ROBOT_DYNAMICS_CACHE" not in os.environ:
        os.environ["ROBOT_DYNAMICS_CACHE"] = _SESSION_CACHE = tempfile.mkdtemp(prefix="robot_dynamics_test_cache_")
        config.add_cleanup(lambda: shutil.rmtree(_SESSION_CACHE, ignore_errors=True))


REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


# -- strict skips ----------------------------------------------------------------------------------
# ./test.sh installs every test extra (Pinocchio, Robotics Toolbox, rclpy, ...), so there a skipped
# reference comparison means lost coverage, not a missing optional tool: with RD_STRICT_SKIPS=1 the
# session fails on any skip except the ones named here (launch_ros has no PyPI wheel).
_ALLOWED_SKIPS = ("launch_ros is not installable",)
_UNEXPECTED_SKIPS: list[str] = []


def _note_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    if report.skipped and os.environ.get("RD_STRICT_SKIPS") == "1":
        reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if not any(allowed in reason for allowed in _ALLOWED_SKIPS):
            _UNEXPECTED_SKIPS.append(f"{report.nodeid}: {reason}")


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _note_skip(report)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _note_skip(report)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _UNEXPECTED_SKIPS:
        print("\nRD_STRICT_SKIPS: unexpected skips (a test extra missing or broken?):")
        for line in _UNEXPECTED_SKIPS:
            print(f"  {line}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
