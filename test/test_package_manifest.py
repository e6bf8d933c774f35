"""package.xml names a rosdep key for every package that robot_dynamics imports at run time.

``rosdep install --from-paths src --ignore-src`` installs what package.xml declares, nothing else: an
import without a key works here (the pinned .venv has it) and fails on a ROS machine after rosdep.
Every import of the package counts (module-level, inside functions, ``import_module("...")`` with a
literal name), type-checking-only ones excepted; the installed launch files and the executables'
module too. A new third-party import fails here until it has a row in ``KEYS`` and its key is in
package.xml (or, for a module without a key, package.xml's comments name it).
"""

from __future__ import annotations

import ast
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from test_structure import PACKAGE, _import_nodes, module_names

REPO = PACKAGE.parent
NO_KEY = None

#: top-level module imported -> its rosdep key (NO_KEY: none exists; package.xml's comments must say so).
KEYS: dict[str, str | None] = {
    "numpy": "python3-numpy",
    "scipy": "python3-scipy",
    "sympy": "python3-sympy",
    "yaml": "python3-yaml",
    "lxml": "python3-lxml",
    "matplotlib": "python3-matplotlib",
    "yourdfpy": "python3-yourdfpy-pip",
    "trimesh": "python3-trimesh-pip",
    "rosbags": "python3-rosbags-pip",
    "mujoco": "python3-mujoco-pip",
    "dask": NO_KEY,
    "distributed": NO_KEY,
    "xacro": "xacro",
    "rclpy": "rclpy",
    "ament_index_python": "ament_index_python",
    "launch": "launch",
    "launch_ros": "launch_ros",
    "rcl_interfaces": "rcl_interfaces",
    "builtin_interfaces": "builtin_interfaces",
    "std_msgs": "std_msgs",
    "std_srvs": "std_srvs",
    "sensor_msgs": "sensor_msgs",
    "geometry_msgs": "geometry_msgs",
    "trajectory_msgs": "trajectory_msgs",
    "diagnostic_msgs": "diagnostic_msgs",
    "rosgraph_msgs": "rosgraph_msgs",
    # built by setup.py with this package (rosdep cannot see it): package.xml lists what its build needs
    "robot_dynamics_interfaces": NO_KEY,
}


def _module_literals(tree: ast.AST) -> set[str]:
    """Names given as a literal to ``import_module(...)`` / ``importlib.import_module(...)``."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "import_module" and isinstance(node.args[0].value, str):
                out.add(node.args[0].value)
    return out


def runtime_imports(paths: list[Path], root: Path = REPO) -> dict[str, str]:
    """Top-level module -> the first file (relative to ``root``) importing it (stdlib, relative imports
    and robot_dynamics itself left out)."""
    found: dict[str, str] = {}
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        names = set(_module_literals(tree))
        for node, _, type_only in _import_nodes(tree):
            if type_only:
                continue
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif node.level == 0 and node.module:
                names.add(node.module)
        for name in sorted(names):
            found.setdefault(name.split(".")[0], str(path.relative_to(root)))
    return {m: where for m, where in found.items() if m not in sys.stdlib_module_names and m != "robot_dynamics"}


def manifest() -> tuple[set[str], str]:
    """package.xml's run-time keys (exec_depend and depend) and the text of its comments."""
    root = ET.parse(REPO / "package.xml", parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))).getroot()
    keys = {e.text.strip() for e in root if e.tag in ("exec_depend", "depend") and e.text}
    comments = " ".join(e.text or "" for e in root if e.tag is ET.Comment)
    return keys, comments


def package_files() -> list[Path]:
    return [*module_names(PACKAGE).values(), REPO / "robot_dynamics_executables.py", *sorted(REPO.glob("launch/*.py"))]


def test_every_runtime_import_has_a_rosdep_key_in_package_xml() -> None:
    imports = runtime_imports(package_files())
    keys, comments = manifest()
    unknown = [f"{where}: imports {m}" for m, where in sorted(imports.items()) if m not in KEYS]
    assert not unknown, "imports without a row in KEYS (add its rosdep key here and to package.xml):\n" + "\n".join(
        unknown
    )
    missing = [f"{KEYS[m]} (for {m}, {where})" for m, where in imports.items() if KEYS[m] and KEYS[m] not in keys]
    assert not missing, "package.xml lacks the exec_depend of: " + ", ".join(sorted(missing))
    unexplained = [m for m in imports if KEYS[m] is NO_KEY and m not in comments]
    assert not unexplained, f"package.xml's comments do not say why these have no key: {unexplained}"


def test_the_scan_sees_lazy_and_literal_imports(tmp_path: Path) -> None:
    """The check cannot pass by missing an import: function-level and import_module ones count."""
    module = tmp_path / "robot_dynamics" / "m.py"
    module.parent.mkdir()
    module.write_text(
        "import os\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import typed_only\n"
        "def f():\n    import lazy_pkg.sub\n    return importlib.import_module('literal_pkg.msg')\n"
        "from . import sibling\nfrom robot_dynamics import x\n"
    )
    assert runtime_imports([module], tmp_path) == {
        "lazy_pkg": "robot_dynamics/m.py",
        "literal_pkg": "robot_dynamics/m.py",
    }
