"""Shared machinery for generated native code: the C compiler, the on-disk cache, ctypes loading.

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
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from robot_dynamics.errors import RobotDynamicsError

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


def toolchain() -> str:
    """What else the compiled code depends on: compiler command, machine, Python's pointer size."""
    return f"{os.environ.get('CC', 'cc')}|{platform.machine()}|{platform.system()}|{ctypes.sizeof(ctypes.c_void_p)}"


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
    "CACHE_ENV",
    "DEFAULT_FLAGS",
    "MARKER",
    "POINTER",
    "bind",
    "cache_dir",
    "compile_shared",
    "compiler",
    "files_hash",
    "hash_key",
    "have_compiler",
    "publish",
    "remove_entries",
    "toolchain",
]
