"""``load_robot``: one entry point for bundled robots, DH YAML files, URDF files and URDF text.

Bundled robots are the DH YAML files in ``config/robots/``; they are found in the source tree
(next to the package) and, once installed, under ``<prefix>/share/robot_dynamics/config/robots``
(``sys.prefix`` first, then every ``AMENT_PREFIX_PATH`` entry).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from ..errors import ModelError
from ..model import RobotModel
from .chain_yaml import is_chain_document, parse_chain
from .dh_yaml import parse_dh
from .lock import lock_joints
from .provenance import apply_chain_options, read_provenance
from .urdf import load_urdf, loads_urdf, looks_like_xml
from .validation import suggest
from .yaml_text import read_text_file, read_yaml

DEFAULT_ROBOT = "puma560"
PACKAGE = "robot_dynamics"
_YAML_SUFFIXES = (".yaml", ".yml")
_URDF_SUFFIXES = (".urdf", ".xml")
SOURCE_TREE_ROBOTS = Path(__file__).resolve().parents[2] / "config" / "robots"


def installed_directories(folder: str) -> list[Path]:
    """Where an install puts the package's ``config/<folder>`` files: below ``sys.prefix``, then below
    every ``AMENT_PREFIX_PATH`` entry (setup.py data_files)."""
    below = Path("share") / PACKAGE / "config" / folder
    prefixes = [sys.prefix, *(p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p)]
    return [Path(prefix) / below for prefix in prefixes]


def robot_directories() -> list[Path]:
    """Candidate locations of the bundled robot files, in search order."""
    return [SOURCE_TREE_ROBOTS, *installed_directories("robots")]


def robots_directory() -> Path:
    """The first directory holding bundled robot files."""
    for directory in robot_directories():
        if directory.is_dir() and any(directory.glob("*.yaml")):
            return directory
    searched = ", ".join(str(d) for d in robot_directories())
    raise ModelError("bundled robots", "", f"no robot files found (searched {searched})")


def bundled_robots() -> list[str]:
    """Names of the bundled robots (``load_robot(name)`` loads them)."""
    return sorted(p.stem for p in robots_directory().glob("*.yaml"))


def bundled_robot_path(name: str) -> Path:
    """The YAML file of a bundled robot."""
    names = bundled_robots()
    if name not in names:
        raise ModelError(name, "", f"not a bundled robot{suggest(name, names)}; bundled: {', '.join(names)}")
    return robots_directory() / f"{name}.yaml"


def load_robot(
    source: str | os.PathLike[str] | RobotModel = DEFAULT_ROBOT,
    base_link: str | None = None,
    tip_link: str | None = None,
    locked_joints: Mapping[str, float] | None = None,
) -> RobotModel:
    """Load a robot model.

    ``source``: a bundled robot name (``"puma560"``, see :func:`bundled_robots`), a DH or chain YAML file,
    a URDF file, or URDF XML text (a ``robot_description``). ``base_link``/``tip_link`` choose the
    chain of a URDF (see :mod:`robot_dynamics.models.urdf_chain`). ``locked_joints`` ``{joint: position}``
    (rad or m) makes joints rigid at a position: for a URDF while choosing the chain (gripper
    fingers, mimic joints follow their locked master), for a DH robot or a :class:`RobotModel` by
    merging the locked joint's link into the previous one (:func:`robot_dynamics.models.lock.lock_joints`).
    A YAML robot file is one chain: options that agree with it (its own base and tip link, the
    locks a generated file records in its ``provenance``) are no-ops, others are refused naming both
    values (:mod:`robot_dynamics.models.provenance`).
    A :class:`RobotModel` without locked joints is returned as is. Errors are
    :class:`robot_dynamics.errors.ModelError` naming the file and the field.
    """
    locked = locked_joints or None
    if isinstance(source, RobotModel):
        if base_link is not None or tip_link is not None:
            raise ModelError(source.name, "base_link/tip_link", "only apply when loading a URDF")
        return lock_joints(source, locked, source.name) if locked else source
    if isinstance(source, str) and looks_like_xml(source):
        return loads_urdf(source, base_link=base_link, tip_link=tip_link, locked_joints=locked)
    text = os.fspath(source)
    if not isinstance(text, str):
        raise ModelError(repr(source), "", "expected a robot name, a file path or URDF XML text")
    path = Path(text).expanduser()
    is_name = isinstance(source, str) and os.sep not in text and "/" not in text and not path.suffix
    if is_name and not path.exists():
        path = bundled_robot_path(text)
    elif not path.is_file():
        hint = ""
        if is_name or not path.suffix:
            hint = f"{suggest(text, bundled_robots())}; bundled robots: {', '.join(bundled_robots())}"
        raise ModelError(text, "", f"no such file, and not URDF XML text{hint}")
    suffix = path.suffix.lower()
    if suffix in _URDF_SUFFIXES or (suffix not in _YAML_SUFFIXES and _starts_with_xml(path)):
        return load_urdf(path, base_link=base_link, tip_link=tip_link, locked_joints=locked)
    # a DH table or ``format: chain`` (chain_yaml): one chain, the options must agree with it (provenance)
    data = read_yaml(read_text_file(path), path.name)
    if is_chain_document(data):
        model, provenance = parse_chain(data, path.name, str(path)), read_provenance(data, path.name)
    else:
        model, provenance = parse_dh(data, source=path.name, location=str(path)), None
    return apply_chain_options(model, provenance, base_link, tip_link, locked, path.name)


def _starts_with_xml(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return looks_like_xml(handle.read(256))
    except OSError:
        return False
