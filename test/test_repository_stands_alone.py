"""The repository stands alone: no citation of documents that are not in it.

Code, docs, configuration, tests and benchmarks cite books and papers by author, title and
equation/table number (full list in docs/references.md). References to material outside the
repository (private numbered source files, a directory next to the checkout, a tracker's issue
numbers, a private notes file) cannot be followed by a reader and are rejected here.

The patterns are assembled from pieces so that this file does not match them itself.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("robot_dynamics", "docs", "config", "README.md", "test", "bench", "launch", "scripts")
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}

_SEED = "se" + "ed"
_ISSUE = "iss" + "ue"
FORBIDDEN = re.compile(
    "|".join(
        [
            _SEED + r" ?0[0-9]{2}",  # numbered source files
            r"\.\./" + "sha" + "red",  # a directory outside the checkout
            _ISSUE + r" [0-9]+",  # tracker issue numbers
            "sha" + "red/" + "spec",  # the private specification directory
            "dynamics" + "-reference",  # the private corrected-formula notes
            r"\b" + _SEED + r"s' ",  # "the <source files>' formulas" (not a dict key such as s['seed'])
        ]
    ),
    re.IGNORECASE,
)


def _files() -> list[Path]:
    this = Path(__file__).resolve()
    out: list[Path] = []
    for name in SCANNED:
        top = ROOT / name
        if top.is_file():
            out.append(top)
            continue
        for path in sorted(top.rglob("*")):
            if path.is_file() and not SKIP_DIRS.intersection(path.relative_to(ROOT).parts) and path != this:
                out.append(path)
    return out


def offending_lines(paths: list[Path], root: Path = ROOT) -> list[str]:
    """``file:line: text`` (file relative to ``root``) of every line matching :data:`FORBIDDEN`;
    binary files are skipped."""
    hits: list[str] = []
    for path in paths:
        data = path.read_bytes()
        if b"\0" in data:
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if FORBIDDEN.search(line):
                hits.append(f"{path.relative_to(root).as_posix()}:{number}: {line.strip()}")
    return hits


def test_scanned_tree_is_present() -> None:
    files = _files()
    names = {p.relative_to(ROOT).as_posix() for p in files}
    # the scan must actually see the package, the docs and the configurations
    assert "README.md" in names
    assert "docs/references.md" in names
    assert any(n.startswith("robot_dynamics/") and n.endswith(".py") for n in names)
    assert any(n.startswith("config/robots/") and n.endswith(".yaml") for n in names)
    assert len(files) > 100


@pytest.mark.parametrize(
    "text",
    [
        "see " + _SEED + " 003 Table 2.4",
        "(" + _SEED.capitalize() + "003)",
        "in ../" + "shared/spec/robots.md",
        "targets (" + _ISSUE + " 4)",
        "the " + _SEED + "s' closed forms",
        "dynamics" + "-reference.md section 8",
    ],
)
def test_pattern_catches_outside_references(text: str, tmp_path: Path) -> None:
    path = tmp_path / "sample.py"
    path.write_text(f"x = 1\n# {text}\n", encoding="utf-8")
    assert offending_lines([path], tmp_path) == [f"sample.py:2: # {text}"]


@pytest.mark.parametrize(
    "text",
    [
        "Dhanaraj (1990) Table 2.4 (misprint corrected, see docs/references.md)",
        "rng = np.random.default_rng(seed)",
        "Fu, Gonzalez & Lee eq. 3.3-53",
        "shared library",
    ],
)
def test_pattern_accepts_proper_citations(text: str, tmp_path: Path) -> None:
    path = tmp_path / "sample.py"
    path.write_text(f"# {text}\n", encoding="utf-8")
    assert offending_lines([path], tmp_path) == []


def test_binary_files_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "blob.bin"
    path.write_bytes(b"\0" + (_SEED + " 003").encode())
    assert offending_lines([path], tmp_path) == []


def test_no_references_to_documents_outside_the_repository() -> None:
    hits = offending_lines(_files())
    assert not hits, (
        "cite books and papers by author, title and equation/table number (docs/references.md), "
        "not documents outside the repository:\n" + "\n".join(hits)
    )
