"""A plain ``colcon build`` of a clone, as a ROS user runs it, gives working installed executables.

The repository (this working tree's tracked and untracked-not-ignored files, as a clone would have
them) is put into ``ws/src/robot_dynamics`` and built once for the module with the colcon of this
environment (requirements/test.txt), no ROS setup sourced: the ROS 2 wheels in the interpreter's
prefix are the underlay. colcon's crawl lists only ``robot_dynamics``; its setup.py builds
``robot_dynamics_interfaces`` into the same install prefix. Then, in bash after
``source install/setup.bash``: both packages import from the workspace and are in its ament index,
and an installed node answers over DDS and stops cleanly on Ctrl-C.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from rclpy.node import Node  # noqa: E402
from ros_harness import NodeProcess, Spinner, call, private_context, unique_name  # noqa: E402

from robot_dynamics.dynamics import inertia_matrix  # noqa: E402
from robot_dynamics.models import load_robot  # noqa: E402
from robot_dynamics.ros.messages import from_multiarray  # noqa: E402
from robot_dynamics_interfaces.srv import GetDynamicsCoefficients  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.ros, pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parent.parent
COLCON = Path(sys.executable).with_name("colcon")
#: what a shell without any ROS setup sourced has (the test session's own values left out)
NOT_INHERITED = ("AMENT_PREFIX_PATH", "CMAKE_PREFIX_PATH", "COLCON_PREFIX_PATH", "PYTHONPATH")


def clone_files() -> list[str]:
    """What a clone of this working tree holds: tracked files and untracked ones git does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    )
    return [name for name in listed.stdout.decode().split("\0") if name and (REPO / name).is_file()]


def in_workspace_shell(ws: Path, command: str) -> list[str]:
    """``bash -c`` running ``command`` in ``ws`` after ``source install/setup.bash``."""
    return ["bash", "-c", f"cd {shlex.quote(str(ws))} && source install/setup.bash && {command}"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not COLCON.is_file():
        pytest.skip("colcon is not installed (requirements/test.txt)")
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the files of a clone are unknown")
    ws = tmp_path_factory.mktemp("colcon_ws")
    source = ws / "src" / "robot_dynamics"
    for name in clone_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    listed = subprocess.run([str(COLCON), "list", "--names-only"], cwd=ws, env=env, capture_output=True, text=True)
    assert listed.stdout.split() == ["robot_dynamics"], listed.stdout + listed.stderr
    built = subprocess.run([str(COLCON), "build"], cwd=ws, env=env, capture_output=True, text=True, timeout=1700)
    log = ws / "log" / "latest_build" / "robot_dynamics" / "stdout_stderr.log"
    detail = log.read_text()[-6000:] if log.is_file() else ""
    assert built.returncode == 0, f"{built.stdout}\n{built.stderr}\n--- {log} (end) ---\n{detail}"
    return ws


@pytest.fixture
def context() -> Iterator[Any]:
    yield from private_context()


def test_both_packages_import_from_the_workspace_and_are_in_its_ament_index(workspace: Path) -> None:
    probe = (
        "import json, robot_dynamics, robot_dynamics_interfaces.srv;"
        "from ament_index_python.packages import get_package_prefix as p;"
        "print(json.dumps({'modules': [robot_dynamics.__file__, robot_dynamics_interfaces.srv.__file__],"
        " 'prefixes': [p('robot_dynamics'), p('robot_dynamics_interfaces')]}))"
    )
    out = subprocess.run(
        in_workspace_shell(workspace, f"{shlex.quote(sys.executable)} -c {shlex.quote(probe)}"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    found = json.loads(out.stdout.strip().splitlines()[-1])
    install = workspace / "install" / "robot_dynamics"
    for path in found["modules"] + found["prefixes"]:
        assert Path(path).resolve().is_relative_to(install.resolve()), found
    index = install / "share" / "ament_index" / "resource_index" / "packages"
    assert (index / "robot_dynamics").is_file() and (index / "robot_dynamics_interfaces").is_file()


def test_the_launch_files_and_config_are_installed(workspace: Path) -> None:
    share = workspace / "install" / "robot_dynamics" / "share" / "robot_dynamics"
    for folder in ("launch", "config", "config/robots", "config/sensors"):
        expected = {p.name for p in (REPO / folder).iterdir() if p.is_file()}
        assert expected and expected <= {p.name for p in (share / folder).iterdir()}, folder
    assert (share / "package.xml").is_file()


def test_an_installed_node_answers_over_dds_and_stops_cleanly_on_ctrl_c(workspace: Path, context: Any) -> None:
    ns = "/" + unique_name("colcon_ws_")
    exe = "install/robot_dynamics/lib/robot_dynamics/dynamics_service_node"
    node = NodeProcess(in_workspace_shell(workspace, f"exec {exe} --ros-args -p robot_config:=puma560 -r __ns:={ns}"))
    spinner = Spinner(context)
    try:
        with node:
            client = spinner.add(Node(unique_name("colcon_ws_client_"), namespace=ns, context=context))
            cli = client.create_client(GetDynamicsCoefficients, "get_dynamics_coefficients")
            q = [0.0, 0.785, 3.14, 0.0, 0.785, 0.0]
            res = call(cli, GetDynamicsCoefficients.Request(position=q), timeout=120.0)
            puma = load_robot("puma560")
            assert res.success and list(res.joint_names) == puma.joint_names, res.message
            np.testing.assert_allclose(from_multiarray(res.inertia), inertia_matrix(puma, q), atol=1e-12)
    finally:
        spinner.close()
    node.assert_clean_exit()
