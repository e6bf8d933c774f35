#!/usr/bin/env bash
# The README's main-job command: set up the environment (idempotent: scripts/bootstrap.sh runtime,
# a no-op when nothing changed), then the full demo on the bundled PUMA 560:
#   offline evaluation of data/puma560_sample, the robot_dynamics nodes started in their own process,
#   the bag replayed through them and their outputs recorded, a per-joint summary table and a plot
#   (out/demo/, ignored by git). Extra arguments go to `robot-dynamics demo` (e.g. --rate 2, --out DIR).
#
# `./demo.sh closed-loop`: the closed-loop experiment on the bundled Stanford arm and the MuJoCo plant of
#   config/plant_deviations_stanford.yaml — PD alone, PD + the stock file's feed-forward, excitation ->
#   recording -> identification -> PD + the identified feed-forward, PD + the plant's exact inverse
#   dynamics — through the simulator and feed-forward nodes in lock-step time; a table and a plot in
#   out/closed_loop/ (docs/closing-the-loop.md). Extra arguments go to `robot-dynamics closed-loop`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
scripts/bootstrap.sh runtime
if [[ "${1:-}" == "closed-loop" ]]; then
  shift
  exec .venv/bin/python -m robot_dynamics.cli closed-loop stanford --plant config/plant_deviations_stanford.yaml \
    --out out/closed_loop --duration 6 --excitation-duration 8 "$@"
fi
exec .venv/bin/python -m robot_dynamics.cli demo "$@"
