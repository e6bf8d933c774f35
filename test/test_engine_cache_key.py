"""The compiled libraries' cache keys hash the generators' source, found from the code's imports.

A hand-kept list of generator files goes stale silently (friction/bearing.py and transmission.py,
whose constants end up in the C, were missing from one): the keys now hash every module of the package
that the generator imports, transitively, and editing any of them changes the key.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import robot_dynamics as rd
from robot_dynamics import _sources
from robot_dynamics.dynamics import native
from robot_dynamics.symbolic import backend as symbolic_backend


@pytest.fixture(autouse=True)
def fresh_hashes() -> Iterator[None]:
    _sources.sources_hash.cache_clear()
    yield
    _sources.sources_hash.cache_clear()


def _edited(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """Present an edited copy of ``module``'s source to the fingerprint (the file is not touched)."""
    target = _sources.module_path(module)
    assert target is not None
    original = _sources.read_source

    def read(path: Path) -> bytes:
        data = original(path)
        return data + b"\n# edited\n" if path == target else data

    monkeypatch.setattr(_sources, "read_source", read)
    _sources.sources_hash.cache_clear()


def test_engine_generator_modules_are_found_from_the_imports() -> None:
    modules = set(native.generator_modules())
    for name in (
        "robot_dynamics.dynamics.native",
        "robot_dynamics.dynamics._c_codegen",
        "robot_dynamics.dynamics._kernels",
        "robot_dynamics.dynamics._kernel_key",
        "robot_dynamics.dynamics.rnea",
        "robot_dynamics.dynamics.crba",
        "robot_dynamics.dynamics.cholesky",
        "robot_dynamics.friction.bearing",  # baked into the C through the friction parameters
        "robot_dynamics.friction.transmission",
        "robot_dynamics.model",
        "robot_dynamics._native",
    ):
        assert name in modules, name
    # the public API, the dispatch and the other layers do not feed the generated C
    for name in ("robot_dynamics.dynamics.inverse", "robot_dynamics.dynamics._dispatch", "robot_dynamics.bag"):
        assert name not in modules, name
    assert "robot_dynamics" not in modules  # `from robot_dynamics import _native` is the module, not the package


@pytest.mark.parametrize(
    "module",
    ["robot_dynamics.friction.bearing", "robot_dynamics.friction.transmission", "robot_dynamics.dynamics.cholesky"],
)
def test_editing_a_generator_module_changes_the_engine_key(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model = rd.load_robot("puma560")
    before = native._cache_key(model)
    assert native._cache_key(model) == before  # stable
    _edited(monkeypatch, module)
    assert native._cache_key(model) != before


def test_editing_another_module_keeps_the_engine_key(monkeypatch: pytest.MonkeyPatch) -> None:
    model = rd.load_robot("puma560")
    before = native._cache_key(model)
    _edited(monkeypatch, "robot_dynamics.dynamics.inverse")
    assert native._cache_key(model) == before


def test_symbolic_generator_key_follows_its_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    modules = _sources.imported_modules(symbolic_backend.__name__)
    # imported inside a function (only when code is generated) and still part of the key
    assert "robot_dynamics.symbolic.newton_euler" in modules
    assert "robot_dynamics.symbolic.codegen_python" in modules
    assert "robot_dynamics.model" in modules
    model = rd.load_robot("fu_two_link")
    before = symbolic_backend.cache_key(model, "c", True)
    _edited(monkeypatch, "robot_dynamics.symbolic.program")
    assert symbolic_backend.cache_key(model, "c", True) != before


def test_imports_are_resolved_like_python_does() -> None:
    assert _sources.module_path("robot_dynamics.friction") == Path(rd.__file__).parent / "friction" / "__init__.py"
    assert _sources.module_path("numpy") is None
    assert _sources.module_path("robot_dynamics.no_such_module") is None
    with pytest.raises(ValueError, match="not a module of robot_dynamics"):
        _sources.imported_modules("robot_dynamics.no_such_module")
    names = _sources._names("(\n    a as b,\n    c,\n)")
    assert names == ["a", "c"]
