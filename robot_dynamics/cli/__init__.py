"""``robot-dynamics`` command line: one sub-module per area registers its sub-commands.

Each module in ``COMMAND_MODULES`` exposes ``register(subparsers)``, which adds its sub-commands
with ``set_defaults(func=...)``; ``func(args) -> int`` is the exit status. Errors a user can fix
(bad robot file, bad numbers) are raised as ``robot_dynamics.errors.RobotDynamicsError`` or
``ValueError`` and printed as one line, exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMAND_MODULES: tuple[str, ...] = ("models", "bag", "dynamics", "symbolic", "identify", "excitation")


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.func(args)
    except (ValueError, KeyError, OSError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"robot-dynamics {args.command}: error: {message}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
