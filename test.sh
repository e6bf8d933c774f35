#!/usr/bin/env bash
# The test command: sets up .venv idempotently (scripts/bootstrap.sh), then lint, types and pytest.
# Extra arguments go to pytest (e.g. ./test.sh -k friction). Exits non-zero on any failure,
# and pytest itself fails when no test was collected.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
scripts/bootstrap.sh test
echo "== ruff" >&2
.venv/bin/ruff check robot_dynamics test bench launch
.venv/bin/ruff format --check robot_dynamics test bench launch
echo "== mypy" >&2
.venv/bin/mypy
echo "== pytest" >&2
# every test extra is installed here, so a skip other than the known ones fails the run (test/conftest.py).
# The suite runs on every core (pytest-xdist, one ROS domain per worker, a test file per worker so its
# module fixtures are built once); RD_TEST_WORKERS=0 runs it in this process alone.
RD_STRICT_SKIPS=1 .venv/bin/python -m pytest -n "${RD_TEST_WORKERS:-auto}" --dist loadfile "$@"
