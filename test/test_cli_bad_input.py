"""Every sub-command, run in-process with bad input: exit status 2 and one clear line.

The line is ``robot-dynamics COMMAND: error: ...`` and carries no Python noise: no traceback, no
``numpy``/``zero-size array``/``[Errno ...]`` text, no source paths of the package.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from robot_dynamics.bag import BagWriter
from robot_dynamics.cli import main

PACKAGE = Path(__file__).resolve().parent.parent / "robot_dynamics"
NOISE = re.compile(r"Traceback|numpy|zero-size array|Errno|\.py\b|site-packages|File \"|object at 0x", re.IGNORECASE)
T0 = 1_700_000_000_000_000_000

ROBOT_COMMANDS = {
    # command: the arguments that make it run once the robot is fine (robot given as {robot})
    "info": ["info", "{robot}"],
    "export-urdf": ["export-urdf", "{robot}", "--out", "{tmp}/out.urdf"],
    "id": ["id", "{robot}", "--q", "0"],
    "coefficients": ["coefficients", "{robot}", "--q", "0"],
    "fd": ["fd", "{robot}", "--q", "0"],
    "task-space": ["task-space", "{robot}", "--q", "0"],
    "symbolic": ["symbolic", "{robot}", "--out", "{tmp}/sym", "--no-search"],
    "schedule": ["schedule", "{robot}", "--processors", "1"],
    "evaluate": ["evaluate", "{bag}", "--robot", "{robot}"],
    "tracking": ["tracking", "{files}/tracked_bag", "--robot", "{robot}"],
    "make-sample-bag": ["make-sample-bag", "{tmp}/sample", "--robot", "{robot}", "--duration", "1.6"],
    "demo": ["demo", "--bag", "{bag}", "--robot", "{robot}", "--out", "{tmp}/demo"],
    "replay": ["replay", "{bag}", "--check", "--robot", "{robot}"],
    "identify": ["identify", "{bag}", "--robot", "{robot}", "--out", "{tmp}/identified.yaml"],
    "excitation": ["excitation", "{robot}", "--duration", "2", "--harmonics", "1", "--out", "{tmp}/traj.yaml"],
    "contact": ["contact", "{bag}", "--robot", "{robot}"],
    "closed-loop": ["closed-loop", "{robot}", "--out", "{tmp}/closed_loop"],
    "collision": ["collision", "{robot}", "--obstacles", "{tmp}/t.yaml", "--out", "{tmp}/c", "--start", "0"],
}

BAD_ROBOTS = {
    "missing file": ("{tmp}/nothing.urdf", "nothing.urdf: no such file"),
    "unknown name": ("puma561", "puma561: not a bundled robot (did you mean 'puma560'?)"),
    "bad YAML": ("{files}/bad.yaml", "bad.yaml"),
    "YAML list": ("{files}/list.yaml", "list.yaml"),
    "bad URDF": ("{files}/bad.urdf", "bad.urdf"),
    "empty URDF": ("{files}/empty.urdf", "empty.urdf"),
    "URDF without joints": ("{files}/nojoints.urdf", "nojoints.urdf"),
    "directory": ("{files}", "files"),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("files")
    (root / "bad.yaml").write_text("robot: [unclosed\n  joints: {\n")
    (root / "list.yaml").write_text("- 1\n- 2\n")
    (root / "bad.urdf").write_text('<robot name="broken"><link name="a"></robot>')
    (root / "empty.urdf").write_text("")
    (root / "nojoints.urdf").write_text('<robot name="r"><link name="a"/></robot>')
    (root / "not_a_bag.db3").write_text("hello, I am not sqlite\n")
    (root / "empty_dir").mkdir()
    junk = root / "junk_bag"
    junk.mkdir()
    (junk / "metadata.yaml").write_text("rosbag2_bagfile_information: [1, 2\n")
    (junk / "junk_bag_0.mcap").write_bytes(b"\x89MCAP0\r\n" + bytes(range(256)))
    names = [f"joint{i}" for i in range(1, 7)]
    q = np.zeros((40, 6))
    with BagWriter(root / "nan_bag") as w:
        q_nan = q.copy()
        q_nan[5, 2] = np.nan
        w.write_joint_states("joint_states", T0 + np.arange(40) * 5_000_000, names, q_nan, q, q)
    with BagWriter(root / "short_bag") as w:
        w.write_joint_states("joint_states", T0 + np.arange(3) * 5_000_000, names, q[:3], q[:3], q[:3])
    with BagWriter(root / "unstamped_bag") as w:
        w.write_joint_states(
            "joint_states", T0 + np.zeros(40, dtype=np.int64), names, q, q, q, stamps=np.zeros(40, dtype=np.int64)
        )
    with BagWriter(root / "good_bag") as w:
        t = np.arange(60) * 5_000_000
        w.write_joint_states("joint_states", T0 + t, names, q[:1].repeat(60, 0), q[:1].repeat(60, 0), stamps=T0 + t)
    with BagWriter(root / "tracked_bag") as w:
        t = np.arange(60) * 5_000_000
        w.write_joint_states("joint_states", T0 + t, names, q[:1].repeat(60, 0), q[:1].repeat(60, 0), stamps=T0 + t)
        w.write_joint_trajectory("joint_trajectory", T0, names, [0.0, 0.2], np.zeros((2, 6)))
    (root / "exists").mkdir()
    (root / "a_file").write_text("x")
    (root / "short_plant.yaml").write_text("damping: [1.0, 2.0]\n")
    (root / "negative_plant.yaml").write_text("friction: {joint3: -1.0}\n")
    massless = "".join(f"<body name='l{k}'><joint name='joint{k}' type='hinge'/>" for k in range(1, 7)) + "</body>" * 6
    (root / "massless.xml").write_text(f"<mujoco><worldbody>{massless}</worldbody></mujoco>\n")  # does not compile
    return root


def fill(args: list[str], tmp: Path, files: Path, **more: str) -> list[str]:
    values = {"tmp": str(tmp), "files": str(files), "bag": str(files / "good_bag"), **more}
    return [a.format(**values) for a in args]


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    status = main(argv)
    captured = capsys.readouterr()
    err = captured.err
    command = argv[0]
    lines = [line for line in err.splitlines() if not line.startswith(f"robot-dynamics {command}: warning: ")]
    assert status == 2, (argv, status, err, captured.out[-500:])
    errors = [line for line in lines if line.startswith(f"robot-dynamics {command}: error: ")]
    assert len(errors) == 1, (argv, err)
    usage = [line for line in lines if line not in errors]
    # argparse's own errors come after its usage text; everything else is the one line alone
    assert not usage or usage[0].startswith("usage: robot-dynamics"), (argv, err)
    assert not NOISE.search(errors[0]), (argv, errors[0])
    assert str(PACKAGE) not in err, (argv, err)
    return errors[0]


@pytest.mark.parametrize("command", sorted(ROBOT_COMMANDS))
@pytest.mark.parametrize("case", sorted(BAD_ROBOTS))
def test_a_bad_robot_is_one_line_for_every_command(
    tmp_path: Path, files: Path, capsys: pytest.CaptureFixture[str], command: str, case: str
) -> None:
    robot, expected = BAD_ROBOTS[case]
    robot = robot.format(tmp=tmp_path, files=files)
    line = run(capsys, fill(ROBOT_COMMANDS[command], tmp_path, files, robot=robot))
    assert expected.format(tmp=tmp_path) in line, line
    assert not (tmp_path / "out.urdf").exists() and not (tmp_path / "sample").exists()


CHAIN_CASES = {
    # options after the command's arguments, and a piece of the expected line
    "unknown tip link": (["--tip-link", "panda_hnad"], "panda_hnad"),
    "unknown base link": (["--base-link", "nowhere"], "nowhere"),
    "lock syntax": (["--lock-joint", "=0.1"], "--lock-joint: expected NAME or NAME=POSITION, got '=0.1'"),
    "lock value": (["--lock-joint", "panda_finger_joint1=open"], "'open' is not a number"),
    "lock not finite": (["--lock-joint", "panda_finger_joint1=1e999"], "non-finite values (nan or inf)"),
    "lock twice": (["--lock-joint", "a", "--lock-joint", "a=1"], "joint 'a' is locked twice"),
    "unknown locked joint": (["--tip-link", "panda_hand_tcp", "--lock-joint", "panda_thumb"], "lock"),
}


@pytest.fixture(scope="module")
def panda() -> str:
    from engine_reference import EXAMPLE_ROBOTS

    return str(EXAMPLE_ROBOTS / "panda_description" / "urdf" / "panda.urdf")


@pytest.mark.parametrize("command", ["info", "id", "evaluate", "symbolic", "make-sample-bag"])
@pytest.mark.parametrize("case", sorted(CHAIN_CASES))
def test_bad_chain_options_are_one_line(
    tmp_path: Path, files: Path, panda: str, capsys: pytest.CaptureFixture[str], command: str, case: str
) -> None:
    options, expected = CHAIN_CASES[case]
    line = run(capsys, fill(ROBOT_COMMANDS[command], tmp_path, files, robot=panda) + options)
    assert expected in line.lower() or expected in line, line


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["id", "puma560", "--q", "nan", "0", "0", "0", "0", "0"],
            "--q: non-finite values (nan or inf) at joint 'joint1'",
        ),
        (["id", "puma560", "--q", "qn", "--qd", "inf,0,0,0,0,0"], "--qd: non-finite values (nan or inf) at joint"),
        (["id", "puma560", "--q", "qn", "--qdd", "1e999", "0", "0", "0", "0", "0"], "--qdd: non-finite"),
        (
            ["id", "puma560", "--q", "qn", "--wrench", "0 0 nan 0 0 0"],
            "--wrench: non-finite values (nan or inf) at index 2",
        ),
        (["id", "puma560", "--q", "1", "2"], "--q: expected 6 values for robot 'puma560', got 2"),
        (["id", "puma560", "--q", "qx"], "--q: 'qx' is not a number"),
        (["id", "puma560", "--q", "1/0", "0", "0", "0", "0", "0"], "--q: '1/0' is not a number"),
        (["id", "puma560", "--q", "9**9**9", "0", "0", "0", "0", "0"], "is not a number"),
        (["id", "puma560", "--q", "(" * 1000 + "1" + ")" * 1000], "--q: '" + "(" * 37 + "...' is not a number"),
        (["fd", "puma560", "--q", "qn", "--tau", "1", "2", "3"], "--tau: expected 6 values"),
        (["task-space", "puma560", "--q", "qn", "--link", "link9"], "has no link 'link9' (did you mean 'link6'?)"),
        (["task-space", "puma560", "--q", "qn", "--link", "7"], "has links 0..6 (0 the base), got 7"),
        (["task-space", "puma560", "--q", "qn", "--axes", "world"], "invalid choice: 'world'"),
        (["task-space", "puma560", "--q", "qn", "--inertia", "--rcond", "2"], "rcond: expected a number between 0"),
        (
            ["task-space", "puma560", "--q", "qz", "--link", "link2", "--inertia"],
            "(2 of 6 joints move it): J D^-1 J^T (6 rows) is singular",
        ),
        (["coefficients", "puma560", "--q", "qn", "--qd", "nan"], "--qd: expected 6 values"),
        (["coefficients", "fu_two_link", "--q", "0", "nan"], "--q: non-finite values (nan or inf) at joint 'joint2'"),
        (["id", "puma560"], "the following arguments are required: --q"),
        (["id", "puma560", "--q", "qn", "--wrench-frame", "moon"], "invalid choice: 'moon'"),
        (["info", "puma560", "--tip-link", "link3"], "tip_link: 'link3' contradicts the file, whose chain has"),
        (["export-urdf", "puma560", "--out", "{files}/exists"], "exists: is a directory"),
        (["export-urdf", "puma560", "--out", "{tmp}/no/such/dir/r.urdf"], "no such file or directory"),
        (["symbolic", "scara", "--symbols", "mass,colour"], "unknown symbolic parameter groups ['colour']"),
        (["symbolic", "scara", "--rename", "a1"], "--rename: expected OLD=NEW"),
        (["symbolic", "scara", "--out", "{files}/a_file", "--no-search"], "a_file"),
        (["schedule", "scara", "--processors", "0"], "--processors must be at least 1"),
        (["schedule", "scara", "--processors", "many"], "invalid int value: 'many'"),
        (["evaluate", "{tmp}/nothing"], "does not exist"),
        (["evaluate", "{files}/empty_dir"], "empty_dir"),
        (["evaluate", "{files}/not_a_bag.db3"], "not_a_bag.db3"),
        (["evaluate", "{files}/a_file"], "a_file"),
        (["evaluate", "{files}/junk_bag"], "junk_bag"),
        (["evaluate", "{files}/nan_bag"], "position not finite in 1 of 40 messages"),
        (["evaluate", "{files}/short_bag"], "3 messages, too few to differentiate"),
        (["evaluate", "{files}/unstamped_bag"], "/joint_states: receive times do not increase"),
        (["evaluate", "{bag}", "--joint-map", "arm_1"], "--joint-map: expected BAG_NAME=MODEL_NAME, got 'arm_1'"),
        (["evaluate", "{bag}", "--joint-map", "=joint1"], "--joint-map: expected BAG_NAME=MODEL_NAME, got '=joint1'"),
        (["evaluate", "{bag}", "--joint-map", "arm_1="], "--joint-map: expected BAG_NAME=MODEL_NAME, got 'arm_1='"),
        (["evaluate", "{bag}", "--joint-map", "a=joint1", "--joint-map", "a=joint2"], "'a' is mapped twice"),
        (["evaluate", "{bag}", "--joint-map", "a=joint1", "--joint-map", "b=joint1"], "both map to model joint"),
        (["evaluate", "{bag}", "--joint-map", "arm_1=joint7"], "robot 'puma560' has no joint 'joint7'"),
        (["evaluate", "{bag}", "--joint-map", "joint2=joint1"], "['joint2'] would name two joints"),
        (["evaluate", "{bag}", "--joint-map", "arm_1=joint1"], "missing ['arm_1'"),
        (["evaluate", "{bag}", "--window", "nan"], "window"),
        (["evaluate", "{bag}", "--window", "-1"], "window"),
        (["evaluate", "{bag}", "--polyorder", "-2"], "polyorder"),
        (["evaluate", "{bag}", "--accel", "trajectory"], "joint_trajectory"),
        (["evaluate", "{bag}", "--out", "{files}/exists"], "exists"),
        (["evaluate", "{bag}", "--csv", "{files}/exists"], "exists"),
        (["evaluate", "{bag}", "--plot", "{files}/a_file/p.png"], "a_file"),
        (["tracking", "{tmp}/nothing"], "does not exist"),
        (["tracking", "{files}/junk_bag"], "junk_bag"),
        (["tracking", "{bag}"], "joint_trajectory"),
        (["tracking", "{files}/tracked_bag", "--trajectory", ""], "--trajectory: a trajectory topic is needed"),
        (["tracking", "{files}/tracked_bag", "--json", "-", "--csv", "-"], "only one of them can go to stdout"),
        (["tracking", "{files}/tracked_bag", "--joint-map", "arm_1=joint1"], "missing ['arm_1'"),
        (["tracking", "{files}/tracked_bag", "--joint-map", "arm_1"], "--joint-map: expected BAG_NAME=MODEL_NAME"),
        (["tracking", "{files}/tracked_bag", "--csv", "{files}/exists"], "exists"),
        (["tracking", "{files}/tracked_bag", "--plot", "{files}/a_file/p.png"], "a_file"),
        (["tracking", "{files}/tracked_bag", "--trajectory", "joint_states"], "joint_states"),
        (["replay", "{tmp}/nothing"], "does not exist"),
        (["replay", "{files}/empty_dir"], "empty_dir"),
        (["replay", "{files}/a_file"], "a_file"),
        (["replay", "{bag}", "--record", "/x"], "--record /x: give the message type"),
        (["replay", "{bag}", "--check", "--joint-map", "x=joint9"], "has no joint 'joint9'"),
        (["replay", "{bag}", "--rate", "0"], "--rate must be positive and finite, got 0.0"),
        (["replay", "{bag}", "--rate", "nan"], "--rate must be positive and finite, got nan"),
        (["replay", "{bag}", "--wait", "-1"], "--wait must be non-negative and finite"),
        (["demo", "--bag", "{tmp}/nothing"], "nothing"),
        (["demo", "--bag", "{bag}", "--joint-map", "x"], "--joint-map: expected BAG_NAME=MODEL_NAME"),
        (["demo", "--bag", "{bag}", "--rate", "-1"], "--rate must be positive and finite, got -1.0"),
        (["make-sample-bag", "{tmp}/s", "--duration", "nan"], "--duration must be more than 1.5 s"),
        (["make-sample-bag", "{tmp}/s", "--rate", "inf"], "--rate must be positive and finite"),
        (["make-sample-bag", "{tmp}/s", "--rate", "0"], "--rate must be positive and finite"),
        (["make-sample-bag", "{files}/good_bag", "--duration", "1.6"], "exists"),
        (["make-sample-bag", "{tmp}/s", "--duration", "1.6", "--joint-map", "x=joint9"], "has no joint 'joint9'"),
        (["identify", "{bag}", "--out", "{tmp}/m.yaml"], "the following arguments are required: --robot"),
        (["identify", "{bag}", "--robot", "puma560", "--out", "{tmp}/m.yaml", "--holdout", "1.5"], "--holdout"),
        (["identify", "{files}/nan_bag", "--robot", "puma560", "--out", "{tmp}/m.yaml"], "not finite"),
        (
            ["identify", "{files}/short_bag", "--robot", "puma560", "--out", "{tmp}/m.yaml"],
            "3 joint states (0.01 s) are too short",
        ),
        (["identify", "{files}/empty_dir", "--robot", "puma560", "--out", "{tmp}/m.yaml"], "empty_dir"),
        (["identify", "{bag}", "--robot", "puma560", "--joint-map", "x", "--out", "{tmp}/m.yaml"], "--joint-map"),
        (
            ["excitation", "puma560", "--duration", "0", "--harmonics", "1", "--out", "{tmp}/t.yaml"],
            "duration must be a positive",
        ),
        (
            ["excitation", "puma560", "--duration", "2", "--harmonics", "0", "--out", "{tmp}/t.yaml"],
            "harmonics must be an integer >= 1",
        ),
        (["excitation", "fu_two_link", "--duration", "2", "--harmonics", "1", "--out", "{tmp}/t.yaml"], "limit"),
        (["contact", "{bag}"], "the following arguments are required: --robot"),
        (["contact", "{bag}", "--robot", "puma560"], "/joint_states: the joint states carry no effort"),
        (["contact", "{tmp}/nothing", "--robot", "puma560"], "does not exist"),
        (["contact", "{files}/junk_bag", "--robot", "puma560"], "junk_bag"),
        (["contact", "{files}/unstamped_bag", "--robot", "puma560"], "/joint_states: receive times do not increase"),
        (["contact", "{files}/nan_bag", "--robot", "puma560", "--gain", "0"], "--gain: every value must be finite"),
        (["contact", "{files}/nan_bag", "--robot", "puma560", "--gain", "1", "2"], "--gain: expected 1 or 6 values"),
        (["contact", "{files}/nan_bag", "--robot", "puma560", "--gain", "fast"], "--gain: 'fast' is not a number"),
        (["contact", "{files}/nan_bag", "--robot", "puma560", "--thresholds", "-1"], "--thresholds: every value"),
        (["contact", "{files}/nan_bag", "--robot", "puma560", "--thresholds", "nan"], "--thresholds: every value"),
        (["contact", "{files}/nan_bag", "--robot", "puma560", "--thresholds", "1,2"], "--thresholds: expected 1 or 6"),
        (["contact", "{files}/nan_bag", "--robot", "puma560", "--clear-ratio", "0"], "--clear-ratio: must be > 0"),
        (["contact", "{bag}", "--robot", "puma560", "--reversal-thresholds", "1"], "give --thresholds too"),
        (
            [
                "contact",
                "{files}/nan_bag",
                "--robot",
                "puma560",
                "--thresholds",
                "1",
                "--reversal-thresholds",
                "1",
                "2",
            ],
            "--reversal-thresholds: expected 1 or 6",
        ),
        (
            ["contact", "{files}/nan_bag", "--robot", "puma560", "--reversal-velocity", "-1"],
            "--reversal-velocity: every",
        ),
        (["contact", "{files}/nan_bag", "--robot", "puma560", "--calibrate", "--margin", "0.5"], "--margin must be"),
        (["contact", "{bag}", "--robot", "puma560", "--calibrate", "--thresholds", "1"], "not allowed with argument"),
        (["contact", "{bag}", "--robot", "puma560", "--params", "{tmp}/p.yaml"], "--params writes the thresholds"),
        (["contact", "{bag}", "--robot", "puma560", "--joint-map", "x"], "--joint-map: expected BAG_NAME=MODEL_NAME"),
        (["contact", "{files}/nan_bag", "--robot", "puma560", "--json", "{files}/exists"], "exists"),
        (["contact", "{files}/nan_bag", "--robot", "puma560", "--plot", "{files}/a_file/p.png"], "a_file"),
        *(
            (["closed-loop", "puma560", "--out", "{tmp}/cl", *more], expected)
            for more, expected in (
                (["--kp", "nan"], "--kp: gain 0 is not finite (nan)"),
                (["--kd", "1", "1", "1", "1", "1", "-2"], "--kd: gain 5 is negative (-2); gains must be >= 0"),
                (["--kp", "1", "2"], "--kp: expected 6 gains (one per joint, model joint order) or one for all, got 2"),
                (["--plant", "{files}/short_plant.yaml"], "short_plant.yaml: damping: 2 values for the 6 joints"),
                (["--plant", "{files}/negative_plant.yaml"], "negative_plant.yaml: friction[joint3]: must be >= 0"),
                (["--plant", "{tmp}/nothing.yaml"], "nothing.yaml"),
                (["--mjcf", "{files}/massless.xml"], "massless.xml: MuJoCo cannot compile it: Error: mass and inertia"),
                (["--mjcf", "{tmp}/nothing.xml"], "--mjcf"),
                (["--rate", "0"], "--rate must be a finite number > 0, got 0.0"),
                (["--bandwidth", "nan"], "--bandwidth must be a finite number > 0, got nan"),
                (["--reach", "-1"], "--reach must be a finite number > 0"),
                (["--harmonics", "0"], "--harmonics must be >= 1"),
                (["--friction", "coulomb"], "--friction must be auto or one of viscous-coulomb, smooth-coulomb"),
                (["--cases", "A,E"], "cases 'A,E': expected a comma-separated subset of"),
                (["--start", "1", "2"], "--start: expected 6 values"),
                (["--start", "0", "0", "0", "0", "0", "9"], "outside the joint limits of ['joint6']"),
            )
        ),
    ],
)
def test_bad_values_are_one_line(
    tmp_path: Path, files: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    line = run(capsys, fill(argv, tmp_path, files))
    assert expected.format(tmp=tmp_path, files=files) in line, line


def test_the_sweep_covers_every_command() -> None:
    from robot_dynamics.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert set(sub.choices) == set(ROBOT_COMMANDS)  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _no_ros_wait(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A replay or an experiment that got past its checks would start or wait for nodes: fail fast instead."""
    import robot_dynamics.ros.closed_loop as closed_loop_module
    import robot_dynamics.ros.replay as replay_module

    def no_experiment(*args: object, **kwargs: object) -> None:
        raise AssertionError("the bad input reached the experiment")

    monkeypatch.setattr(closed_loop_module.Experiment, "run", no_experiment)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the bad input reached the replay")

    import robot_dynamics.ros.demo as demo_module

    monkeypatch.setattr(replay_module, "replay", refuse)
    monkeypatch.setattr(demo_module, "start_nodes", refuse)
    yield
