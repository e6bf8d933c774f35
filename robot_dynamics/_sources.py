"""Which source files a generated artefact depends on, found from the code itself (for cache keys).

A compiled library stays valid while the code that generated it is unchanged. Instead of a hand-kept
list of files (which silently goes stale when a generator starts using another module),
:func:`imported_modules` follows the ``import`` statements of the generator's modules — at module
level and inside functions — through this package, transitively (``from package import name`` depends
on the package's ``__init__`` only when ``name`` is not a module of its own), and :func:`sources_hash` hashes the
source of every module found. Imports of other packages (NumPy, SymPy, the standard library) are not
followed: their versions are not part of the key.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

PACKAGE = "robot_dynamics"
_ROOT = Path(__file__).resolve().parent


def module_path(name: str) -> Path | None:
    """The source file of module ``name`` of this package (``None`` outside it or if there is none)."""
    parts = name.split(".")
    if parts[0] != PACKAGE or not all(part.isidentifier() for part in parts):
        return None
    base = _ROOT.joinpath(*parts[1:])
    if len(parts) > 1 and base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    init = base / "__init__.py"
    return init if init.is_file() else None


def read_source(path: Path) -> bytes:
    """The bytes of a source file (one place, so a test can present an edited file)."""
    return path.read_bytes()


# import statements anywhere in a file (also indented, inside functions); a parenthesised name list
# may span lines. A match inside a string can only add a module: the key gets stricter, never stale.
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)", re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.MULTILINE)


def _names(text: str) -> list[str]:
    """``a as b, c`` -> ``["a", "c"]`` (parentheses and line breaks allowed)."""
    words = (item.split() for item in text.strip("()").replace("\\", " ").split(","))
    return [w[0] for w in words if w]


def _imports(name: str, path: Path) -> set[str]:
    """The modules of this package that module ``name`` (file ``path``) imports anywhere in its code."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    source = read_source(path).decode("utf-8")
    found: set[str] = set()
    for line in _IMPORT.finditer(source):
        found.update(_names(line.group(1)))
    for dots, module, names in _FROM.findall(source):
        if dots:
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - len(dots) + 1])
            module = f"{base}.{module}" if module else base
        for item in _names(names):
            # `from package import module` depends on that module, `from module import name` on module
            found.add(f"{module}.{item}" if module_path(f"{module}.{item}") is not None else module)
    return {module for module in found if module_path(module) is not None}


def imported_modules(*roots: str) -> tuple[str, ...]:
    """``roots`` and every module of this package they import, directly or not (sorted names)."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = module_path(name)
        if path is None:
            raise ValueError(f"{name!r} is not a module of {PACKAGE}")
        seen.add(name)
        todo.extend(_imports(name, path) - seen)
    return tuple(sorted(seen))


@functools.cache
def sources_hash(*roots: str) -> str:
    """SHA-256 of the names and sources of :func:`imported_modules` ``(*roots)``.

    Computed once per process (the code of a running process does not change; clear with
    ``sources_hash.cache_clear()``).
    """
    h = hashlib.sha256()
    for name in imported_modules(*roots):
        path = module_path(name)
        assert path is not None  # imported_modules only returns modules with a source file
        h.update(name.encode())
        h.update(b"\0")
        h.update(read_source(path))
        h.update(b"\0")
    return h.hexdigest()
