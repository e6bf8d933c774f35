"""The robot options every command that takes a robot shares.

``ROBOT`` (positional, or ``--robot``): a bundled robot name, a DH YAML file or a URDF file;
``--base-link L`` / ``--tip-link L``: the chain of a URDF; ``--lock-joint NAME[=POSITION]``
(repeatable): a joint made rigid at POSITION (rad or m, default 0; ``pi/2``-style expressions);
``--joint-map BAG_NAME=MODEL_NAME`` (repeatable; commands that read or write joint names in
bags): the name a joint has in the bag or on the topic, then its name in the model.

Warnings of the model loader (``ModelWarning``) print as one line each,
``robot-dynamics COMMAND: warning: ...``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..model import RobotModel
from ..models.robots import DEFAULT_ROBOT, load_robot
from ..user_input import check_joint_map, parse_joint_map, parse_locked_joints

ROBOT_HELP = "bundled robot name, DH YAML file or URDF file"


def add_joint_states_option(parser: argparse.ArgumentParser) -> None:
    """``--joint-states TOPIC`` of the commands that read a bag's joint states."""
    parser.add_argument("--joint-states", default="joint_states", metavar="TOPIC", help="default: %(default)s")


def add_progress_option(parser: argparse.ArgumentParser) -> None:
    """``--progress/--no-progress`` of the commands that read a bag (the bar's rule: bag.progress.LONG_JOB)."""
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: on a terminal, for bags of 20000+ messages)",
    )


def add_robot_options(
    parser: argparse.ArgumentParser,
    *,
    positional: bool,
    default: str | None = DEFAULT_ROBOT,
    joint_map: bool = True,
) -> None:
    """ROBOT (positional or ``--robot``; required when ``default`` is None) and the chain options."""
    suffix = f" (default: {default})" if default is not None else ""
    if positional:
        if default is None:
            parser.add_argument("robot", metavar="ROBOT", help=ROBOT_HELP)
        else:
            parser.add_argument("robot", metavar="ROBOT", nargs="?", default=default, help=ROBOT_HELP + suffix)
    else:
        parser.add_argument(
            "--robot", metavar="ROBOT", default=default, required=default is None, help=ROBOT_HELP + suffix
        )
    parser.add_argument("--base-link", metavar="LINK", default=None, help="URDF: first link of the chain")
    parser.add_argument("--tip-link", metavar="LINK", default=None, help="URDF: last link of the chain")
    parser.add_argument(
        "--lock-joint",
        metavar="NAME[=POSITION]",
        action="append",
        default=[],
        help="make a joint rigid at POSITION (rad or m, default 0; e.g. gripper fingers); repeatable",
    )
    if joint_map:
        parser.add_argument(
            "--joint-map",
            metavar="BAG_NAME=MODEL_NAME",
            action="append",
            default=[],
            help="a joint's name in the bag/on the topic and its name in the model; repeatable",
        )


def narrator(json_out: bool) -> Callable[[str], None]:
    """Where an experiment command narrates its progress: standard error when standard output carries
    its JSON report, else standard output."""
    stream = sys.stderr if json_out else sys.stdout
    return lambda text: print(text, file=stream, flush=True)


def print_report(json_out: bool, out: str, markdown: Callable[[], str], wrote: str) -> None:
    """An experiment command's report: ``out/report.json`` as written, or the Markdown and what was written."""
    if json_out:
        print((Path(out) / "report.json").read_text(), end="")
    else:
        print(markdown())
        print(f"wrote {Path(out) / 'report.md'}, {wrote}")


def print_warning(command: str, text: object) -> None:
    print(f"robot-dynamics {command}: warning: {' '.join(str(text).split())}", file=sys.stderr)


def load_robot_from_args(args: argparse.Namespace) -> RobotModel:
    """The model the robot options describe (checks ``--joint-map`` against it when given)."""
    locks = parse_locked_joints(getattr(args, "lock_joint", None) or [], "--lock-joint")
    command = getattr(args, "command", None) or "robot"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_robot(args.robot, args.base_link, args.tip_link, locked_joints=locks or None)
    for w in caught:
        if issubclass(w.category, UserWarning):
            print_warning(command, w.message)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    mapping = joint_map_from_args(args)
    if mapping:
        check_joint_map(model, mapping, "--joint-map")
    return model


def joint_map_from_args(args: argparse.Namespace) -> dict[str, str]:
    """``--joint-map`` as ``{bag name: model name}`` (empty when not given)."""
    return parse_joint_map(getattr(args, "joint_map", None) or [], "--joint-map")


def experiment_friction_law(given: str | None) -> str:
    """The friction law an experiment has identify fit (``--friction``; None: the experiments' default,
    ``auto``: identify's own choice), checked."""
    from ..errors import RobotDynamicsError
    from ..experiment.settings import Settings
    from ..identification.friction_laws import FRICTION_LAWS

    law = Settings.friction_law if given is None else given
    if law not in ("auto", *FRICTION_LAWS):
        raise RobotDynamicsError(f"--friction must be auto or one of {', '.join(FRICTION_LAWS)}, got {law!r}")
    return law


def experiment_rate(given: float | None, profile: Any) -> float:
    """An experiment's control rate: ``--rate`` as given, else the sensor profile's (a
    :class:`~robot_dynamics.plant.SensorProfile` or None), else 1000 Hz."""
    if given is not None:
        return given
    return profile.rate if profile is not None and profile.rate is not None else 1000.0
