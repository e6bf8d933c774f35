"""The installed executables as processes: fatal start-up errors, and the one-process bringup."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is not installed")

from rclpy.node import Node  # noqa: E402
from ros_harness import Collector, NodeProcess, Spinner, call, wait_until  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402

from robot_dynamics.dynamics import gravity_torques, inertia_matrix  # noqa: E402
from robot_dynamics.models import load_robot  # noqa: E402
from robot_dynamics.ros.messages import ROBOT_DESCRIPTION_QOS, from_multiarray  # noqa: E402
from robot_dynamics.ros.process import StopRequest, run_nodes  # noqa: E402
from robot_dynamics_interfaces.srv import GetDynamicsCoefficients  # noqa: E402

pytestmark = pytest.mark.ros


def executable_path(name: str) -> str:
    """Where ``ros2 run robot_dynamics <name>`` finds it: ``<prefix>/lib/robot_dynamics/<name>`` (setup.cfg)."""
    for candidate in (Path(sys.prefix) / "lib" / "robot_dynamics" / name, Path(sys.executable).parent / name):
        if candidate.is_file():
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        pytest.fail(
            f"executable {name} is not installed (pip install -e . installs it into <prefix>/lib/robot_dynamics)"
        )
    return found


REPO = Path(__file__).resolve().parent.parent
EXECUTABLES = ["feedforward_node", "dynamics_service_node", "simulator_node", "robot_dynamics_bringup"]


def run(executable: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [executable_path(executable), *args], capture_output=True, text=True, timeout=timeout, env=dict(os.environ)
    )


def output_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The process's non-empty output lines, without Fast DDS's own shared-memory transport notices
    (printed by the middleware, not the node, when another process on the machine holds a port's
    lock file: e.g. one left behind by a killed process)."""
    text = (result.stdout + result.stderr).splitlines()
    return [line for line in text if line.strip() and "RTPS_TRANSPORT_SHM" not in line]


@pytest.mark.parametrize("executable", EXECUTABLES)
def test_a_missing_robot_config_is_one_fatal_line_and_a_nonzero_exit(executable: str) -> None:
    result = run(executable, "--ros-args", "-p", "robot_config:=/nonexistent/robot.yaml")
    lines = output_lines(result)
    assert result.returncode == 1, (result.returncode, lines)
    assert len(lines) == 1, lines
    assert "FATAL" in lines[0] and "/nonexistent/robot.yaml" in lines[0], lines[0]
    assert "Traceback" not in result.stderr


def test_a_malformed_urdf_is_one_fatal_line(tmp_path: Path) -> None:
    params = tmp_path / "bad.yaml"
    params.write_text(
        '/**:\n  ros__parameters:\n    robot_description: \'<robot name="broken"><link name="a"></robot>\'\n'
    )
    result = run("feedforward_node", "--ros-args", "--params-file", str(params))
    lines = output_lines(result)
    assert result.returncode == 1, (result.returncode, lines)
    assert len(lines) == 1 and "cannot load the robot_description URDF" in lines[0], lines


def test_no_robot_description_on_the_topic_times_out_with_one_fatal_line() -> None:
    result = run(
        "feedforward_node",
        "--ros-args",
        "-r",
        "__ns:=/lonely_description_test",
        "-p",
        "use_robot_description_topic:=true",
        "-p",
        "robot_description_timeout:=1.0",
    )
    lines = [line for line in output_lines(result) if "INFO" not in line]
    assert result.returncode == 1, (result.returncode, lines)
    assert len(lines) == 1 and "no robot_description received on /lonely_description_test/robot_description" in lines[0]


def test_a_bad_urdf_on_the_topic_is_one_fatal_line(context: Any) -> None:
    ns = f"/bad_description_{os.getpid()}"
    spinner = Spinner(context)
    try:
        node = spinner.add(Node("bad_description_publisher", namespace=ns, context=context))
        pub = node.create_publisher(String, "robot_description", ROBOT_DESCRIPTION_QOS)
        pub.publish(String(data="<robot name='x'><joint name='j' type='revolute'></robot>"))
        result = run(
            "dynamics_service_node", "--ros-args", "-r", f"__ns:={ns}", "-p", "use_robot_description_topic:=true"
        )
    finally:
        spinner.close()
    lines = [line for line in output_lines(result) if "INFO" not in line]
    assert result.returncode == 1, (result.returncode, lines)
    assert len(lines) == 1 and "robot_description topic: cannot load the robot_description URDF" in lines[0], lines


def test_a_bad_parameter_value_is_one_fatal_line() -> None:
    result = run("simulator_node", "--ros-args", "-p", "rate:=-5.0")
    lines = output_lines(result)
    assert result.returncode == 1 and len(lines) == 1 and "rate must be > 0 Hz" in lines[0], lines


BAD_STARTS = {
    # ROS-argument errors: one FATAL line, without rcl's extra "[ERROR] [rcl]: Failed to parse global arguments"
    "malformed_yaml": (
        "robot_dynamics_bringup",
        ["--params-file", "{bad_yaml}"],
        "bad --ros-args: Couldn't parse params file",
    ),
    "malformed_yaml_one_node": (
        "feedforward_node",
        ["--params-file", "{bad_yaml}"],
        "bad --ros-args: Couldn't parse params file",
    ),
    "dangling_p": ("dynamics_service_node", ["-p"], "bad --ros-args: Couldn't parse trailing -p flag"),
    # a wrong type and a bad range, as the executables report them (the rest: test_ros_parameters.py)
    "bool_as_integer": (
        "feedforward_node",
        ["-p", "friction:=1"],
        "parameter friction: expected a bool (true or false), got 1",
    ),
    "zero_period": (
        "simulator_node",
        ["-p", "diagnostics_period:=0.0"],
        "parameter diagnostics_period: must be a finite number > 0 s, got 0.0",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_STARTS))
def test_a_bad_start_up_parameter_or_ros_argument_is_one_fatal_line(case: str, tmp_path: Path) -> None:
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("/**:\n  ros__parameters:\n    friction: [true\n")
    executable, args, message = BAD_STARTS[case]
    result = run(executable, "--ros-args", *(a.format(bad_yaml=bad_yaml) for a in args))
    lines = output_lines(result)
    assert result.returncode == 1, (result.returncode, lines)
    assert len(lines) == 1 and "FATAL" in lines[0] and message in lines[0], lines


def test_ctrl_c_while_the_package_imports_exits_quietly(tmp_path: Path) -> None:
    """The executables' entry points catch a Ctrl-C (or SIGTERM) from their first statement on: here
    it arrives while the engine and rclpy import (the first ~0.3-1 s of every start), deterministically."""
    from importlib.metadata import entry_points

    scripts = {e.name: e.value for e in entry_points(group="console_scripts") if e.name in EXECUTABLES}
    assert scripts == {name: f"robot_dynamics_executables:{name}" for name in EXECUTABLES}
    (tmp_path / "interrupted_start.py").write_text(
        "import os, signal\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "import robot_dynamics.ros.feedforward_node  # the heavy imports, interrupted\n"
        "def main():\n    return 3\n"
    )
    code = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import robot_dynamics_executables as e; "
        "sys.exit(e._run('interrupted_start'))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


# Ctrl-C during start-up, at deterministic points: the executable run as its console script runs it,
# with a profile hook (main thread, from run_nodes on) that signals the process at the entry of a named
# function ("FILE:FUNCTION", first call), once the main thread counted N Python calls ("N"), or when
# the nodes spin ("spinning"); several points = one signal each, in order. A dry run (no points)
# stops itself when the nodes spin and reports the calls counted.
INTERRUPTED_RUN = """
import os, sys, time
executable, points, signum, *args = sys.argv[1:]
points = [p for p in points.split(",") if p]
from robot_dynamics.ros import process
state = {"calls": 0, "spinning": None, "fired": 0}

def spinning(frame, event, arg):
    return event == "c_call" and arg is time.sleep and frame.f_code.co_name == "spin_nodes"

def due(frame, event, arg):
    point = points[state["fired"]]
    if point == "spinning":
        return spinning(frame, event, arg)
    if point.isdigit():
        return event == "call" and state["calls"] >= int(point)
    file, _, function = point.partition(":")
    code = frame.f_code
    return event == "call" and code.co_name == function and code.co_filename.endswith(file)

def profile(frame, event, arg):
    state["calls"] += event == "call"
    if state["spinning"] is None and spinning(frame, event, arg):
        state["spinning"] = state["calls"]
        if not points:
            os.kill(os.getpid(), int(signum))
    if state["fired"] < len(points) and due(frame, event, arg):
        state["fired"] += 1
        os.kill(os.getpid(), int(signum))

run_nodes = process.run_nodes
def profiled(*args, **kwargs):
    sys.setprofile(profile)
    try:
        return run_nodes(*args, **kwargs)
    finally:
        sys.setprofile(None)
        print(f"@ calls {state['calls']} spinning {state['spinning']} fired {state['fired']}", file=sys.stderr)
process.run_nodes = profiled
import robot_dynamics_executables
sys.argv = [executable, *args]
sys.exit(getattr(robot_dynamics_executables, executable)())
"""
ROBOT = ["-p", "robot_config:=fu_two_link", "-p", "backend:=python"]
#: executable, its arguments before --ros-args, extra --ros-args
STARTS = {
    "feedforward_node": ("feedforward_node", [], []),
    "dynamics_service_node": ("dynamics_service_node", [], []),
    "simulator_node": ("simulator_node", [], []),
    "contact_node": ("contact_node", [], []),
    "bringup": ("robot_dynamics_bringup", ["--simulator", "contact:=true"], []),
}
#: the steps of a start, and of the teardown after a stop request (a second signal)
START_POINTS = [
    ["rclpy/__init__.py:init"],
    ["robot_node.py:start_robot"],  # the robot parameters read, the model loaded
    ["_dispatch.py:prepare"],  # the engine's programs (compiled to C with backend native)
    ["threading.py:start"],  # the first thread: the simulator's stepping thread, or an executor's
    ["spinning", "node.py:destroy_node"],
    ["spinning", "rclpy/__init__.py:try_shutdown"],
]
#: the steps after a start-up error (a sibling's fatal error makes ros2 launch stop the rest)
FAILED_START_POINTS = [
    ["process.py:_fatal"],
    ["node.py:destroy_node"],
    ["rclpy/__init__.py:try_shutdown"],
    ["process.py:restore"],
]


def run_interrupted(
    executable: str, points: list[str], args: list[str], signum: int = signal.SIGINT, env: dict[str, str] | None = None
) -> tuple[int, str, dict[str, int | None]]:
    """Status, output and the profile's counts of ``executable`` signalled at ``points``."""
    argv = [sys.executable, "-c", INTERRUPTED_RUN, executable, ",".join(points), str(int(signum)), *args]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env or dict(os.environ))
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{executable} {points}: still running after 120 s (a point never reached?): {exc.output}")
    out = result.stdout + result.stderr
    counts = [line.split() for line in out.splitlines() if line.startswith("@ calls ")]
    assert counts, out
    _, _, calls, _, spin, _, fired = counts[-1]
    return (
        result.returncode,
        out,
        {"calls": int(calls), "spinning": None if spin == "None" else int(spin), "fired": int(fired)},
    )


def assert_clean_stop(status: int, out: str, points: list[str], fired: int) -> None:
    """No traceback of any kind; status 1 after the one fatal line of a failed start-up, else 0."""
    for mark in ("Traceback", "Exception ignored", "Fatal Python error", "terminate called", "KeyboardInterrupt"):
        assert mark not in out, (points, out)
    fatal = out.count("[FATAL]")
    assert fatal <= 1 and status == (1 if fatal else 0), (points, status, out)
    assert fired == len(points), (points, out)


@pytest.mark.parametrize("case", sorted(STARTS))
def test_ctrl_c_at_any_step_of_the_start_up_or_teardown_stops_cleanly(case: str) -> None:
    """SIGINT or SIGTERM (what ros2 launch sends) at named steps of the start-up and at points spread
    over it (counted in a dry run): status 0, no traceback. The handler only records the request; the
    start-up stops at its next step (when it raised KeyboardInterrupt, a signal in the teardown or in a
    finaliser printed a traceback)."""
    executable, before, extra = STARTS[case]  # (the simulator's MuJoCo engine: test_ros_simulator_plant.py)
    args = [*before, "--ros-args", "-r", f"__ns:=/interrupted_{case}_{os.getpid()}", *ROBOT, *extra]
    status, out, counts = run_interrupted(executable, [], args)
    assert_clean_stop(status, out, [], 0)
    spun = counts["spinning"]
    assert spun is not None, out
    spread = [[str(spun * k // 3)] for k in (1, 2)]
    for k, points in enumerate(START_POINTS + spread):
        signum = signal.SIGTERM if k % 3 == 2 else signal.SIGINT
        status, out, counts = run_interrupted(executable, points, args, signum)
        assert_clean_stop(status, out, points, int(counts["fired"] or 0))


@pytest.mark.parametrize("executable", ["feedforward_node", "robot_dynamics_bringup"])
def test_ctrl_c_after_a_failed_start_up_keeps_its_one_fatal_line_and_status(executable: str) -> None:
    """Under ros2 launch the nodes of a bad robot fail together: the first to exit makes launch SIGINT
    the others, which are then in their own teardown after their fatal line (a traceback and status -2
    from that teardown was 2 in 20 failing simulation launches). Here the signal comes at each step of
    that teardown: the one fatal line, status 1."""
    args = ["--ros-args", "-p", "robot_config:=does_not_exist", "-r", f"__ns:=/failed_start_{os.getpid()}"]
    status, out, counts = run_interrupted(executable, [], args)
    assert status == 1 and out.count("[FATAL]") == 1, out
    total = int(counts["calls"] or 0)
    spread = [[str(total * k // 3)] for k in (1, 2)]
    for k, points in enumerate(FAILED_START_POINTS + spread):
        signum = signal.SIGTERM if k % 2 else signal.SIGINT
        status, out, counts = run_interrupted(executable, points, args, signum)
        assert_clean_stop(status, out, points, int(counts["fired"] or 0))


def test_a_signal_while_the_process_exits_leaves_its_status(tmp_path: Path) -> None:
    """Once main() returned only the interpreter's and the middleware's teardown is left, where Python
    has reset its own handlers: the executables then ignore SIGINT and SIGTERM, which would end the
    process with status -2. Under ros2 launch that is when the nodes of a bad robot get the SIGINT of
    a sibling's failure (-2 for 57 of 60 stopped nodes in 20 failing launches of each file)."""
    (tmp_path / "failing_start.py").write_text("def main():\n    return 1\n")
    code = (
        f"import signal, sys; sys.path.insert(0, {str(tmp_path)!r}); import robot_dynamics_executables as e; "
        "status = e._run('failing_start'); "
        "print([signal.getsignal(s) is signal.SIG_IGN for s in (signal.SIGINT, signal.SIGTERM)]); sys.exit(status)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (1, "[True, True]\n", "")
    # the whole executable: the signal at moments of its exit after its fatal line, as launch sends it
    for delay in (0.0, 0.01, 0.03, 0.1, 0.2):
        argv = [executable_path("feedforward_node"), "--ros-args", "-p", "robot_config:=does_not_exist"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if "[FATAL]" in line:
                time.sleep(delay)
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGINT)
                break
        out = "".join(lines) + proc.stdout.read()
        proc.wait(timeout=60)
        assert proc.returncode == 1 and "Traceback" not in out, (delay, proc.returncode, out)


def test_ctrl_c_while_the_robot_compiles_stops_after_the_compile(tmp_path: Path) -> None:
    """The first start with a robot compiles its C library (~1-2 s, a fresh cache here): a signal then
    takes effect once it is built, status 0, no traceback."""
    env = {**os.environ, "ROBOT_DYNAMICS_CACHE": str(tmp_path / "cache")}
    args = ["--ros-args", "-p", "robot_config:=fu_two_link", "-p", "backend:=native"]
    points = ["_native.py:compile_shared"]
    status, out, counts = run_interrupted("feedforward_node", points, args, env=env)
    assert_clean_stop(status, out, points, int(counts["fired"] or 0))
    assert counts["spinning"] is None and "native backend" in out, out  # built, then stopped before spinning


@pytest.fixture
def context() -> Iterator[Any]:
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=[])
    yield ctx
    rclpy.try_shutdown(context=ctx)


def test_bringup_closes_the_loop_with_the_parameter_file(context: Any) -> None:
    ns = f"/bringup_{os.getpid()}"
    start_pose = [0.0, 0.7, -0.9, 0.0, 0.4, 0.0]
    bringup = NodeProcess(
        [
            executable_path("robot_dynamics_bringup"),
            "--simulator",
            "--ros-args",
            "--params-file",
            str(REPO / "config" / "robot_dynamics.yaml"),
            "-r",
            f"__ns:={ns}",
            "-p",
            f"initial_position:=[{','.join(str(x) for x in start_pose)}]",
        ]
    )
    with bringup as proc:
        spinner = Spinner(context)
        try:
            client = spinner.add(Node("bringup_test_client", namespace=ns, context=context))
            states = Collector(client, JointState, "joint_states")
            commands = Collector(client, Float64MultiArray, "feedforward/commands")
            cli = client.create_client(GetDynamicsCoefficients, "get_dynamics_coefficients")
            res = call(cli, GetDynamicsCoefficients.Request(position=start_pose), timeout=60.0)
            puma = load_robot("puma560")
            assert res.success and list(res.joint_names) == puma.joint_names
            np.testing.assert_allclose(from_multiarray(res.inertia), inertia_matrix(puma, start_pose), atol=1e-12)
            wait_until(lambda: len(states.snapshot()) >= 200 and len(commands.snapshot()) >= 100, "the closed loop")
            last = states.snapshot()[-1]
            assert max(abs(a - b) for a, b in zip(last.position, start_pose, strict=True)) < 1e-3
            np.testing.assert_allclose(
                commands.snapshot()[-1].data, gravity_torques(puma, np.asarray(last.position)), atol=1e-6
            )
            assert proc.poll() is None
        finally:
            spinner.close()
    bringup.assert_clean_exit()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_a_busy_node_cleanly(context: Any, signum: int) -> None:
    """Ctrl-C, and the SIGTERM ``ros2 launch`` escalates to, while requests are in flight: status 0.

    The executables handle both signals themselves (``process.StopRequest``): with rclpy's handler,
    its signal thread raced the executors' teardown and segfaulted about once in 30 stops.
    """
    ns = f"/signal_{os.getpid()}_{int(signum)}"
    service = NodeProcess([executable_path("dynamics_service_node"), "--ros-args", "-r", f"__ns:={ns}"], signum)
    spinner = Spinner(context)
    try:
        with service:
            client = spinner.add(Node("signal_test_client", namespace=ns, context=context))
            cli = client.create_client(GetDynamicsCoefficients, "get_dynamics_coefficients")
            assert call(cli, GetDynamicsCoefficients.Request(position=[0.0] * 6), timeout=60.0).success
            for _ in range(50):
                cli.call_async(GetDynamicsCoefficients.Request(position=[0.1] * 6, velocity=[0.2] * 6))
    finally:
        spinner.close()
    service.assert_clean_exit()


def test_a_stop_request_while_the_spin_threads_start_still_stops_every_executor(monkeypatch: Any) -> None:
    """Ctrl-C after the first executor thread started but before the last: every thread is stopped.

    The window was real: a test client got its response from the first node and sent SIGINT
    while the bringup was still starting its simulator thread; KeyboardInterrupt then skipped the
    teardown and the interpreter finalised under spinning threads ("terminate called without an
    active exception", status -6, 4 in 140 stops under load).
    """
    from robot_dynamics.ros import process

    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=[])
    nodes = [Node(f"window_{i}_{os.getpid()}", context=ctx) for i in range(3)]
    stop = StopRequest()
    made: list[int] = []
    real_make_executor = process.make_executor

    def make_executor(context: Any = None) -> Any:
        if len(made) == 1:  # the first node is spinning now: the signal arrives
            stop(signal.SIGINT, None)
        made.append(1)
        return real_make_executor(context)

    monkeypatch.setattr(process, "make_executor", make_executor)

    def spinning() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("spin-window_")]

    try:
        try:
            status = process.spin_nodes(nodes, context=ctx, stop=stop)
        except KeyboardInterrupt:  # (would end the whole pytest session)
            names = [t.name for t in spinning()]
            pytest.fail(f"the stop request escaped spin_nodes as KeyboardInterrupt; still spinning: {names}")
        assert status == 0
        assert stop.requested and len(made) == 3
        assert spinning() == []
    finally:
        leftover = spinning()
        if leftover:  # the regression: wake the leftover executors before destroying their nodes
            rclpy.try_shutdown(context=ctx)
            for thread in leftover:
                thread.join(10.0)
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def test_run_nodes_handles_the_stop_signals_itself_not_rclpy() -> None:
    """The design that removes the Ctrl-C race, pinned: while the nodes spin, rclpy installed no
    signal handler (its signal thread is what crashed) and SIGINT goes to StopRequest; afterwards
    the previous handler is back. In-process, so it runs run_nodes exactly as main() does."""
    from rclpy.signals import SignalHandlerOptions, get_current_signal_handlers_options

    seen: dict[str, Any] = {}

    class Probe(Node):
        def __init__(self) -> None:
            super().__init__("signal_probe")
            self.create_timer(0.05, self.tick)

        def tick(self) -> None:
            if not seen:
                seen["options"] = get_current_signal_handlers_options()
                seen["handler"] = signal.getsignal(signal.SIGINT)
                os.kill(os.getpid(), signal.SIGINT)

    before = signal.getsignal(signal.SIGINT)
    assert run_nodes([("signal_probe", Probe)], ["signal_probe"]) == 0
    assert seen["options"] == SignalHandlerOptions.NO
    assert isinstance(seen["handler"], StopRequest) and seen["handler"].requested
    assert signal.getsignal(signal.SIGINT) is before
