"""``robot-dynamics`` command line: one sub-module per area registers its sub-commands.

Each module in ``COMMAND_MODULES`` exposes ``register(subparsers)``, which adds its sub-commands
with ``set_defaults(func=...)``; ``func(args) -> int`` is the exit status. Errors a user can fix
(bad robot file, bad numbers) are raised as ``robot_dynamics.errors.RobotDynamicsError`` or
``ValueError`` and printed as one line, exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

COMMAND_MODULES: tuple[str, ...] = (
    "models",
    "bag",
    "tracking",
    "dynamics",
    "symbolic",
    "identify",
    "excitation",
    "contact",
    "closed_loop",
    "collision",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="robot-dynamics",
        description="Dynamics of serial manipulators: models, Newton-Euler, Lagrange-Euler D/h/c, friction, "
        "symbolic equations, rosbag evaluation, parameter identification.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(f"robot_dynamics.cli.{name}").register(sub)
    return parser


def error_text(exc: BaseException) -> str:
    """One line for a user's error: the message itself, never ``[Errno 2]`` or a ``KeyError``'s quotes."""
    if isinstance(exc, KeyError) and exc.args:
        text = str(exc.args[0])
    elif isinstance(exc, OSError) and exc.strerror:
        names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
        text = f"{': '.join(names)}: {exc.strerror.lower()}" if names else exc.strerror.lower()
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (status 2, after argparse's message) and --help (0)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        status: int = args.func(args)
    except BrokenPipeError:  # output piped into e.g. ``head``: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ValueError, KeyError, OSError) as exc:
        print(f"robot-dynamics {args.command}: error: {error_text(exc)}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
