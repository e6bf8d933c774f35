"""The structure of robot_dynamics: its import graph, layers, cycles and module sizes.

The graph is built with ``ast`` over every module of the package (nothing is imported). Every import
counts: module-level ones, function-level ones (marked "in a function": they still make the module
depend on the other, they only hide it until the call) and ``if TYPE_CHECKING:`` ones (marked
"type checking only"). ``from package import name`` is an import of the submodule ``package.name``
when that is a module, else of the package.

Layers, lowest first (a module may import its own layer and lower ones, never a higher one):

0. ``model``, ``errors``, ``trajectory``, ``_native`` — the robot description, the error types,
   trajectory sampling, the compiled-library cache: the vocabulary every other module uses;
1. ``models`` (robot files: DH YAML, URDF), ``friction`` (friction laws and parameters), ``payload``
   (a model with a load: uses the models' inertia checks), ``user_input`` (joint maps and locked
   joints from the command line or parameters: uses the models' "did you mean" suggestions);
2. ``dynamics`` (the engine);
3. applications of the engine, independent of one another: ``identification`` (the regressor on the
   engine's tracer), ``symbolic`` (closed forms and generated code), ``bag`` (rosbag evaluation),
   ``feedforward`` (the feed-forward law shared by the ROS node and the bag evaluation), ``control``
   (the control law around it: PD, computed torque, limits, the stale rule), ``plant`` (the simulator's
   physics: the engine's forward dynamics or MuJoCo, the only importer of ``mujoco``), ``contact``
   (collision detection on the observer's residual, shared by the contact node and the bag command),
   ``experiment`` (the closed-loop experiment's motions, cases and report: uses ``bag.tracking``,
   ``plant`` and ``identification``); and the package facade ``robot_dynamics/__init__.py``, which
   re-exports the engine, friction and models
   and, on first use, ``identify``;
4. ``ros`` (rclpy nodes; the only package that imports ROS);
5. ``cli`` (the command line, which can start anything below).

The same order is documented in docs/engine.md ("Layers"). No module may be longer than 400 lines
unless its docstring says why (contains "longer than 400 lines because").

``KNOWN_VIOLATIONS`` lists exactly the violations of today's tree, each with its reason: the tests
fail on any other violation, and also when a listed one has gone (then delete its entry), so the
list only shrinks.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "robot_dynamics"
MAX_LINES = 400
LONG_REASON = "longer than 400 lines because"

#: Layer of each top-level part of the package ("" = the package's own __init__.py).
LAYERS: dict[str, int] = {
    "model": 0,
    "errors": 0,
    "trajectory": 0,
    "_native": 0,
    "_sources": 0,
    "models": 1,
    "friction": 1,
    "payload": 1,
    "user_input": 1,
    "dynamics": 2,
    "": 3,
    "identification": 3,
    "symbolic": 3,
    "bag": 3,
    "feedforward": 3,
    "control": 3,
    "plant": 3,
    "contact": 3,
    "experiment": 3,
    "reaction": 3,
    "collision": 3,
    "ros": 4,
    "cli": 5,
}

#: Third-party packages that are ROS: only ``robot_dynamics.ros`` may import them.
ROS_PACKAGES = ("rclpy", "rcl_interfaces", "builtin_interfaces", "launch", "launch_ros", "ament_index_python")
ROS_SUFFIXES = ("_msgs", "_srvs", "_interfaces")

#: Today's violations (names without the ``robot_dynamics.`` prefix); see the module docstring.
KNOWN_VIOLATIONS: dict[str, str] = {
    # -- modules over 400 lines without a stated reason --------------------------------------------
    "size: model": "RobotModel, its frames, DH conversion and validation in one module",
    "size: dynamics._c_codegen": "the C emitter of the traced programs (comparisons, selects, calls, tables)",
    "size: symbolic.schedule": "the parallel schedule of the closed forms with its report",
    "size: symbolic.newton_euler": "the symbolic Newton-Euler recursion and its program builder",
    "size: cli.bag": "the evaluate, replay, demo and make-sample-bag commands in one module",
}


# ------------------------------------------------------------------------------------------------
# the graph
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Import:
    """``source`` imports ``target`` at ``line`` of ``path``."""

    source: str
    target: str
    path: Path
    line: int
    in_function: bool
    type_only: bool

    def where(self, root: Path) -> str:
        marks = [m for m, on in (("in a function", self.in_function), ("type checking only", self.type_only)) if on]
        note = f" ({', '.join(marks)})" if marks else ""
        return f"{self.path.relative_to(root.parent)}:{self.line}: {self.source} -> {self.target}{note}"


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name of every module of the package at ``root`` (a package is its ``__init__.py``)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.Module) -> Iterable[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Every import statement with (in a function, under ``if TYPE_CHECKING``)."""

    def visit(
        node: ast.AST, in_function: bool, type_only: bool
    ) -> Iterable[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function, type_only
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from visit(child, in_function, True)
            for child in node.orelse:
                yield from visit(child, in_function, type_only)
            return
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            yield from visit(child, inner, type_only)

    yield from visit(tree, False, False)


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: Mapping[str, Path]) -> set[str]:
    top = module.split(".")[0]

    def existing(name: str) -> str:
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    if isinstance(node, ast.Import):
        return {existing(a.name) for a in node.names if a.name.split(".")[0] == top}
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    if base.split(".")[0] != top:
        return set()
    return {existing(f"{base}.{a.name}") for a in node.names}


def import_graph(root: Path) -> list[Import]:
    """Every import of a module of the package at ``root`` by a module of it (no self-imports)."""
    modules = module_names(root)
    out = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node, in_function, type_only in _import_nodes(tree):
            for target in sorted(_targets(node, module, is_package, modules)):
                if target != module:
                    out.append(Import(module, target, path, node.lineno, in_function, type_only))
    return out


def strongly_connected(nodes: Iterable[str], edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            connect(v)
    return components


def short(module: str) -> str:
    return module.split(".", 1)[1] if "." in module else ""


def layer_of(module: str, layers: Mapping[str, int]) -> int | None:
    return layers.get(short(module).split(".")[0])


def cycle_violations(imports: list[Import], root: Path) -> dict[str, str]:
    """``"cycle: a, b, ..."`` -> the imports that close it (file:line)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for imp in imports:
        edges[imp.source].add(imp.target)
    out = {}
    for component in strongly_connected(edges, edges):
        members = set(component)
        lines = [imp.where(root) for imp in imports if imp.source in members and imp.target in members]
        out["cycle: " + ", ".join(short(m) or "(package)" for m in component)] = "\n    ".join(lines)
    return out


def layer_violations(imports: list[Import], root: Path, layers: Mapping[str, int]) -> dict[str, str]:
    """``"layer: a -> b"`` -> where (file:line) and the two layers."""
    out: dict[str, list[str]] = defaultdict(list)
    for imp in imports:
        low, high = layer_of(imp.source, layers), layer_of(imp.target, layers)
        if low is not None and high is not None and high > low:
            key = f"layer: {short(imp.source) or '(package)'} -> {short(imp.target) or '(package)'}"
            out[key].append(f"{imp.where(root)} (layer {low} imports layer {high})")
    return {k: "\n    ".join(v) for k, v in out.items()}


def size_violations(root: Path) -> dict[str, str]:
    """``"size: a"`` -> its length, for modules over MAX_LINES whose docstring gives no reason."""
    out = {}
    for module, path in module_names(root).items():
        text = path.read_text(encoding="utf-8")
        count = len(text.splitlines())
        if count > MAX_LINES and LONG_REASON not in (ast.get_docstring(ast.parse(text)) or ""):
            out[f"size: {short(module)}"] = (
                f"{path.relative_to(root.parent)}: {count} lines; split it or say in the module docstring "
                f"why it is {LONG_REASON} ..."
            )
    return out


def check(found: Mapping[str, str], kind: str) -> None:
    """No violation of ``kind`` besides the known ones, and every known one still there."""
    known = {k for k in KNOWN_VIOLATIONS if k.startswith(kind + ":")}
    new = {k: v for k, v in found.items() if k not in known}
    gone = sorted(known - set(found))
    problems = [f"{k}\n    {v}" for k, v in sorted(new.items())]
    problems += [f"{k}: fixed (or changed): delete it from KNOWN_VIOLATIONS in {Path(__file__).name}" for k in gone]
    assert not problems, f"{len(new)} new and {len(gone)} gone {kind} violation(s):\n" + "\n".join(problems)


# ------------------------------------------------------------------------------------------------
# the package
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return import_graph(PACKAGE)


def test_every_module_has_a_layer() -> None:
    missing = sorted({short(m).split(".")[0] for m in module_names(PACKAGE)} - set(LAYERS))
    assert not missing, f"top-level parts of robot_dynamics without a layer (add them to LAYERS): {missing}"


def test_no_import_cycles(imports: list[Import]) -> None:
    check(cycle_violations(imports, PACKAGE), "cycle")


def test_no_import_from_a_lower_layer_to_a_higher_one(imports: list[Import]) -> None:
    check(layer_violations(imports, PACKAGE, LAYERS), "layer")


def test_no_module_over_400_lines_without_a_reason() -> None:
    check(size_violations(PACKAGE), "size")


def test_known_violations_are_of_a_known_kind() -> None:
    assert all(k.split(":")[0] in ("cycle", "layer", "size") and v for k, v in KNOWN_VIOLATIONS.items())


def test_only_the_ros_package_imports_ros() -> None:
    """The engine is plain Python + NumPy/SciPy/SymPy: ``import robot_dynamics`` works without ROS."""
    found = []
    for module, path in module_names(PACKAGE).items():
        if short(module).split(".")[0] == "ros":
            continue
        for node, _, _ in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                if top in ROS_PACKAGES or top.endswith(ROS_SUFFIXES):
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: imports {name}")
    assert not found, "ROS imports outside robot_dynamics.ros:\n" + "\n".join(found)


def test_only_the_plant_package_imports_mujoco() -> None:
    """MuJoCo is the simulator's physics engine, nothing else's: only ``robot_dynamics.plant`` loads it."""
    found = []
    for module, path in module_names(PACKAGE).items():
        if short(module).split(".")[0] == "plant":
            continue
        for node, _, _ in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"{path.relative_to(PACKAGE.parent)}:{node.lineno}" for n in names if n.split(".")[0] == "mujoco"]
    assert not found, "mujoco imported outside robot_dynamics.plant:\n" + "\n".join(found)


# ------------------------------------------------------------------------------------------------
# the analysis itself, on a small package with every case
# ------------------------------------------------------------------------------------------------
def test_the_analysis_finds_cycles_layer_violations_and_long_modules(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    files = {
        "__init__.py": "from .low import base\n",
        "low/__init__.py": "",
        "low/base.py": "from typing import TYPE_CHECKING\nname = 1\nif TYPE_CHECKING:\n    from pkg.high import api\n",
        "low/a.py": "def f():\n    from . import b\n",
        "low/b.py": "import pkg.low.a\nimport os\n",
        "high/__init__.py": "",
        "high/api.py": "from ..low import base\nfrom pkg.low.base import name\n",
        "long.py": '"""Short."""\n' + "x = 1\n" * 400,
        "long_ok.py": '"""Long, and longer than 400 lines because it must be."""\n' + "x = 1\n" * 400,
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    graph = import_graph(root)
    edges = {(i.source, i.target, i.line, i.in_function, i.type_only) for i in graph}
    assert edges == {
        ("pkg", "pkg.low.base", 1, False, False),
        ("pkg.low.base", "pkg.high.api", 4, False, True),
        ("pkg.low.a", "pkg.low.b", 2, True, False),
        ("pkg.low.b", "pkg.low.a", 1, False, False),
        ("pkg.high.api", "pkg.low.base", 1, False, False),
        ("pkg.high.api", "pkg.low.base", 2, False, False),
    }
    cycles = cycle_violations(graph, root)
    assert set(cycles) == {"cycle: low.a, low.b", "cycle: high.api, low.base"}
    assert "pkg/low/a.py:2: pkg.low.a -> pkg.low.b (in a function)" in cycles["cycle: low.a, low.b"]
    layers = layer_violations(graph, root, {"low": 0, "high": 1, "": 1, "long": 0, "long_ok": 0})
    assert set(layers) == {"layer: low.base -> high.api"}
    assert "pkg/low/base.py:4:" in layers["layer: low.base -> high.api"]
    assert "(type checking only) (layer 0 imports layer 1)" in layers["layer: low.base -> high.api"]
    assert set(size_violations(root)) == {"size: long"}
