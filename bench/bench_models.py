"""Model loading cost: robot_dynamics loaders next to the libraries that read the same files.

Usage: ``.venv/bin/python bench/bench_models.py [--repeat 5]``

Rows (best of ``--repeat``, milliseconds per load; the first import of yourdfpy is excluded):

* ``puma560 DH YAML``: ``load_robot("puma560")`` (YAML parse, validation, ``from_dh``) vs Robotics
  Toolbox ``rtb.models.DH.Puma560()`` (a Python class, no file);
* ``<arm> URDF file``: ``load_robot(path, tip_link=..., locked_joints=...)`` (safe lxml parse,
  validation, yourdfpy cross-check, chain selection, locked/mimic joints, body merging) vs
  ``yourdfpy.URDF.load`` without meshes or scene graph, vs ``pinocchio.buildModelFromUrdf`` (C++
  urdfdom) and vs ``buildModelFromUrdf`` + ``buildReducedModel`` to the same chain (what a
  Pinocchio user does to get the same serial chain; the humanoids merge every other limb);
* ``export puma560``: ``model_to_urdf`` (with visuals) and the DH -> URDF -> model round trip.

The ratio column is robot_dynamics / reference. Loading happens once per node start, so these are
start-up costs, not control-loop costs.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import timeit
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from robot_dynamics import load_robot
from robot_dynamics.models import ModelWarning, loads_urdf, model_to_urdf

ROBOTS = Path(
    str(
        importlib.metadata.distribution("example-robot-data").locate_file(
            "cmeel.prefix/share/example-robot-data/robots"
        )
    )
)
ARMS: list[tuple[str, str, dict[str, Any]]] = [
    ("panda", "panda_description/urdf/panda.urdf", {"locked_joints": {"panda_finger_joint1": 0.0}}),
    ("ur5", "ur_description/urdf/ur5_robot.urdf", {}),
    ("baxter (left arm)", "baxter_description/urdf/baxter.urdf", {"tip_link": "left_gripper"}),
    ("icub (left arm)", "icub_description/robots/icub.urdf", {"tip_link": "l_hand"}),
    ("talos (left arm)", "talos_data/robots/talos_full_v2.urdf", {"tip_link": "gripper_left_base_link"}),
]


def best_ms(fn: Callable[[], object], repeat: int) -> float:
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ModelWarning)

    import pinocchio as pin
    import roboticstoolbox as rtb
    import yourdfpy

    rows: list[tuple[str, float, str, float]] = []
    rows.append(
        (
            "puma560 DH YAML",
            best_ms(lambda: load_robot("puma560"), args.repeat),
            "rtb Puma560()",
            best_ms(rtb.models.DH.Puma560, args.repeat),
        )
    )
    for label, file, options in ARMS:
        path = ROBOTS / file
        ours = best_ms(lambda p=path, o=options: load_robot(p, **o), args.repeat)
        chain = load_robot(path, **options).joint_names
        data = path.read_bytes()
        plain = best_ms(
            lambda d=data: yourdfpy.URDF.load(
                io.BytesIO(d), build_scene_graph=False, load_meshes=False, load_collision_meshes=False
            ),
            args.repeat,
        )
        pinocchio = best_ms(lambda p=path: pin.buildModelFromUrdf(str(p)), args.repeat)

        def reduced(p: Path = path, keep: list[str] = chain) -> object:
            full = pin.buildModelFromUrdf(str(p))
            lock = [i for i in range(1, full.njoints) if full.names[i] not in keep]
            return pin.buildReducedModel(full, lock, pin.neutral(full))

        rows.append((f"{label} URDF file", ours, "yourdfpy.URDF.load", plain))
        rows.append((f"{label} URDF file", ours, "pin.buildModelFromUrdf", pinocchio))
        rows.append((f"{label} URDF file", ours, "pin build + buildReducedModel", best_ms(reduced, args.repeat)))
    puma = load_robot("puma560")
    text = model_to_urdf(puma)
    export = best_ms(lambda: model_to_urdf(puma), args.repeat)
    reload = best_ms(lambda: loads_urdf(text), args.repeat)
    rows.append(("export puma560 (model_to_urdf)", export, "load puma560 DH YAML", rows[0][1]))
    rows.append(("load exported puma560 URDF", reload, "load puma560 DH YAML", rows[0][1]))

    header = f"{'robot_dynamics':34s} {'ms':>8s}   {'reference':28s} {'ms':>8s} {'ratio':>7s}"
    print(header)
    print("-" * len(header))
    for name, ms, ref_name, ref_ms in rows:
        print(f"{name:34s} {ms:8.3f}   {ref_name:28s} {ref_ms:8.3f} {ms / ref_ms:7.2f}")


if __name__ == "__main__":
    main()
