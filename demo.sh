#!/usr/bin/env bash
# The README's main-job command: set up the environment (idempotent: scripts/bootstrap.sh runtime,
# a no-op when nothing changed), then the full demo on the bundled PUMA 560:
#   offline evaluation of data/puma560_sample, the robot_dynamics nodes started in their own process,
#   the bag replayed through them and their outputs recorded, a per-joint summary table and a plot
#   (out/demo/, ignored by git). Extra arguments go to `robot-dynamics demo` (e.g. --rate 2, --out DIR).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
scripts/bootstrap.sh runtime
exec .venv/bin/python -m robot_dynamics.cli demo "$@"
