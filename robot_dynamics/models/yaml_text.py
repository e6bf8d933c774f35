"""Reading robot files written in YAML: UTF-8 text, safe loading, duplicate keys rejected.

A duplicate key is an error naming its line, not silently "last one wins" (PyYAML's default): a
robot file with two ``mass:`` entries for one link is a typo to report. Errors are
:class:`~robot_dynamics.errors.ModelError` naming the file, line and column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import ModelError


class _DuplicateKeyError(yaml.MarkedYAMLError):
    pass


_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available


class _StrictLoader(_SafeLoader):  # type: ignore[valid-type,misc]
    pass


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, (str, int, float, bool)) and key in seen:
            raise _DuplicateKeyError(
                "while reading a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
            )
        if isinstance(key, (str, int, float, bool)):
            seen.add(key)
    return dict(loader.construct_mapping(node, deep=True))


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(text: str, source: str) -> Any:
    """Parse YAML text (safe loader; duplicate keys rejected) with errors naming ``source``."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ModelError(source, where, f"invalid YAML: {problem}") from None


def read_text_file(path: Path) -> str:
    """The UTF-8 text of a robot file; ModelError naming the file if it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(str(path), "", f"cannot read the file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ModelError(str(path), "", f"not UTF-8 text: {exc.reason}") from None
