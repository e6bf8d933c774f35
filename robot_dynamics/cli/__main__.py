"""``python -m robot_dynamics.cli ...`` = the ``robot-dynamics`` command (no installed entry point needed)."""

import sys

from robot_dynamics.cli import main

sys.exit(main())
