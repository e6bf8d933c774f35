#!/usr/bin/env python3
"""Regenerates the committed sample bag data/puma560_sample (deterministic: same bytes every time).

Usage: .venv/bin/python scripts/make_sample_bag.py      (= robot-dynamics make-sample-bag --force)
What is simulated: robot_dynamics/bag/sample.py and docs/rosbag.md.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from robot_dynamics.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["make-sample-bag", str(ROOT / "data" / "puma560_sample"), "--force", *sys.argv[1:]]))
