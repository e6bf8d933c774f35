"""Shared machinery for generated native code: the C compiler, the on-disk cache, loading, the default backend.

Used by the engine's native backend (:mod:`robot_dynamics.dynamics.native`) and the symbolic
package's generated-code backend (:mod:`robot_dynamics.symbolic.backend`).

* **Cache.** Generated code lives under :func:`cache_dir` — ``$ROBOT_DYNAMICS_CACHE`` if set, else
  ``$XDG_CACHE_HOME/robot_dynamics`` or ``~/.cache/robot_dynamics`` — one directory per entry,
  named by a key that hashes everything the code depends on (the model's ``fingerprint()``, the
  source of the generator, the compiler and its flags; see :func:`hash_key`, :func:`files_hash`).
  :func:`publish` builds an entry in a private temporary directory and renames it into place
  (atomic), so concurrent processes never see half-written code and never need a lock file.
* **Compiler.** ``$CC`` or ``cc`` (:func:`compiler`), shared library built with
  :func:`compile_shared`. :func:`have_compiler` answers without raising.
* **Extension modules.** :func:`compile_extension` builds generated C that includes ``Python.h``
  into a CPython extension module (the engine's native backend: one ``METH_FASTCALL`` function per
  kernel, so a call costs what the arithmetic costs); :func:`load_extension` loads it from its file
  with :class:`importlib.machinery.ExtensionFileLoader` (not through ``sys.modules``).
* **Default backend.** :func:`resolve_backend` turns ``"auto"`` (the default, or ``$RD_BACKEND``)
  into ``"native"`` when a C compiler is available (one log line per process) or ``"python"`` (one
  warning per process); ``RD_BACKEND=python`` forces Python.
* **Loading.** :func:`bind` opens a shared library with ``ctypes`` and declares its functions with
  plain pointer (integer address) arguments: the cheapest call ctypes offers. ``hold_gil=True``
  keeps the GIL during the call (``ctypes.PyDLL``): right for sub-microsecond calls, where
  releasing and re-acquiring it costs more than the call.

Nothing here imports SymPy or NumPy.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.machinery
import importlib.metadata
import importlib.util
import logging
import os
import platform
import shutil
import subprocess
import sysconfig
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from robot_dynamics.errors import RobotDynamicsError, StateError

CACHE_ENV = "ROBOT_DYNAMICS_CACHE"
DEFAULT_FLAGS: tuple[str, ...] = ("-O2",)
MARKER = "meta.json"
"""The file :func:`publish` requires in an entry (written last by the builder)."""


def cache_dir() -> Path:
    """Root of the on-disk cache (see the module docstring)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "robot_dynamics"


def compiler(hint: str = "") -> str:
    """The C compiler command: ``$CC`` or ``cc``; a :class:`RobotDynamicsError` if there is none."""
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        raise RobotDynamicsError(
            f"the C backend needs a C compiler, and {cc!r} was not found (set CC{', ' + hint if hint else ''})"
        )
    return cc


def have_compiler() -> bool:
    """Whether :func:`compiler` finds a compiler (``$CC`` is re-read every time)."""
    return shutil.which(os.environ.get("CC", "cc")) is not None


def extension_suffix() -> str:
    """The file suffix of this interpreter's extension modules (e.g. ``.cpython-311-x86_64-linux-gnu.so``)."""
    return str(sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def compile_extension(
    source: Path,
    directory: Path,
    module: str,
    *,
    flags: Sequence[str] = DEFAULT_FLAGS,
    include_dirs: Sequence[str] = (),
    hint: str = "",
) -> Path:
    """Compile ``source`` (C defining ``PyInit_<module>``) into the extension module file
    ``directory/<module><suffix>``, with this interpreter's ``Python.h`` and ``include_dirs`` on the
    include path."""
    includes = [f"-I{d}" for d in (sysconfig.get_paths()["include"], *include_dirs)]
    return compile_shared(source, directory / f"{module}{extension_suffix()}", flags=(*flags, *includes), hint=hint)


def load_extension(module: str, path: Path) -> ModuleType:
    """The extension module ``module`` from its file ``path`` (not registered in ``sys.modules``)."""
    loader = importlib.machinery.ExtensionFileLoader(module, str(path))
    spec = importlib.util.spec_from_file_location(module, str(path), loader=loader)
    if spec is None:  # pragma: no cover - only for a path the loader does not accept
        raise RobotDynamicsError(f"cannot load the extension module {path}")
    loaded = importlib.util.module_from_spec(spec)
    loader.exec_module(loaded)
    return loaded


def compile_shared(source: Path, library: Path, *, flags: Sequence[str] = DEFAULT_FLAGS, hint: str = "") -> Path:
    """Compile ``source`` (a .c file) into the shared library ``library``."""
    cmd = [compiler(hint), *flags, "-shared", "-fPIC", "-o", str(library), str(source), "-lm"]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RobotDynamicsError(f"compiling {source} failed ({' '.join(cmd)}):\n{result.stderr.strip()}")
    return library


@functools.cache
def files_hash(directory: Path, names: tuple[str, ...]) -> str:
    """SHA-256 of the named files of ``directory`` (the generator's own source, for cache keys)."""
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode())
        h.update((directory / name).read_bytes())
    return h.hexdigest()


@functools.cache
def _numpy_version() -> str:
    try:
        return importlib.metadata.version("numpy")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - numpy is a dependency
        return "none"


def toolchain() -> str:
    """What else the compiled code depends on: compiler command, machine, Python's pointer size, the
    interpreter's extension ABI and the NumPy version (whose C API the extension modules use)."""
    return (
        f"{os.environ.get('CC', 'cc')}|{platform.machine()}|{platform.system()}|{ctypes.sizeof(ctypes.c_void_p)}"
        f"|{extension_suffix()}|numpy {_numpy_version()}"
    )


def hash_key(parts: Iterable[str]) -> str:
    """A short hex key for a cache entry from the strings it depends on."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def publish(root: Path, key: str, build: Callable[[Path], None]) -> Path:
    """``root/key``, built by ``build(directory)`` first if it is not in the cache yet.

    ``build`` writes into a fresh private directory and must write :data:`MARKER` last; the
    directory is then renamed into place (if another process won the race, its entry is kept).
    """
    directory = root / key
    if (directory / MARKER).exists():
        return directory
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
    try:
        build(tmp)
        if not (tmp / MARKER).exists():
            raise RobotDynamicsError(f"cache entry {key}: the builder wrote no {MARKER}")
        try:
            tmp.rename(directory)  # atomic publish
        except OSError:  # another process published the same entry first
            if not (directory / MARKER).exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return directory


def remove_entries(root: Path) -> int:
    """Delete every entry under ``root``; returns how many were removed."""
    removed = 0
    if root.is_dir():
        for entry in root.iterdir():
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
                removed += 1
    return removed


BACKEND_ENV = "RD_BACKEND"
"""Environment variable choosing the default backend: ``auto`` (default), ``native`` or ``python``."""

_log = logging.getLogger("robot_dynamics")
_announced: set[str] = set()  # "native" once logged, "python" once warned
_announce_lock = threading.Lock()


def resolve_backend(name: str | None = None) -> Literal["native", "python"]:
    """The backend ``name`` stands for (``None``: ``$RD_BACKEND``, else ``"auto"``).

    ``"auto"`` is ``"native"`` when a C compiler is found (:func:`have_compiler`; the compiled
    library of a model is then built on its first use and cached per model fingerprint under
    :func:`cache_dir`), with one log line (``INFO``, logger ``robot_dynamics``) per process; else
    ``"python"``, with one :class:`RuntimeWarning` per process. ``"python"`` (or ``"numeric"``) and
    ``"native"`` are taken as they are.
    """
    given = name if name is not None else os.environ.get(BACKEND_ENV, "")
    choice = given.strip().lower() or "auto"
    if choice in ("python", "numeric"):
        return "python"
    if choice == "native":
        return "native"
    if choice != "auto":
        where = "backend" if name is not None else f"${BACKEND_ENV}"
        raise StateError(f"{where}: expected 'auto', 'native' or 'python', got {given!r}")
    found = have_compiler()
    with _announce_lock:
        first = ("native" if found else "python") not in _announced
        _announced.add("native" if found else "python")
    if found:
        if first:
            _log.info(
                "robot_dynamics: backend 'auto' uses compiled C (compiler %r); each model is compiled on "
                "first use and cached in %s (RD_BACKEND=python turns this off)",
                os.environ.get("CC", "cc"),
                cache_dir(),
            )
        return "native"
    if first:
        warnings.warn(
            f"robot_dynamics: no C compiler ({os.environ.get('CC', 'cc')!r} was not found), so the engine "
            "runs its slower Python backend; install a C compiler or set CC to one (RD_BACKEND=python "
            "chooses Python explicitly)",
            RuntimeWarning,
            stacklevel=2,
        )
    return "python"


Signature = tuple[Any, Sequence[Any]]
"""``(restype, argtypes)`` of a C function for :func:`bind`."""

POINTER = ctypes.c_void_p


def bind(library: Path, functions: Mapping[str, Signature], *, hold_gil: bool = False) -> dict[str, Any]:
    """The named functions of ``library`` as ctypes callables (``restype``, ``argtypes`` set).

    Pointer arguments declared as :data:`POINTER` take plain integer addresses (e.g. NumPy's
    ``array.ctypes.data``, looked up once and cached by the caller).
    """
    lib = (ctypes.PyDLL if hold_gil else ctypes.CDLL)(str(library))
    bound = {}
    for name, (restype, argtypes) in functions.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = list(argtypes)
        bound[name] = function
    return bound


__all__ = [
    "BACKEND_ENV",
    "CACHE_ENV",
    "DEFAULT_FLAGS",
    "MARKER",
    "POINTER",
    "bind",
    "cache_dir",
    "compile_extension",
    "compile_shared",
    "compiler",
    "extension_suffix",
    "files_hash",
    "hash_key",
    "have_compiler",
    "load_extension",
    "publish",
    "remove_entries",
    "resolve_backend",
    "toolchain",
]
