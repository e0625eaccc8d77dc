"""Data paths in a scenario file: relative to the file, or under an environment variable."""

from __future__ import annotations

import os
import re
from pathlib import Path

from digital_twin.errors import short_repr
from digital_twin.scenario.schema import Section

VAR = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A path starting with ``${NAME}``: the folder named by the environment variable ``NAME``."""


def resolve_path(section: Section, key: str, data_files: list[Path]) -> Path:
    """The path under ``key``: ``${VAR}/...`` from the environment, else relative to the file.

    A ``${VAR}`` path is appended to ``data_files`` (real data the scenario needs).
    """
    text: str = section.get(key, str, required=True)
    if "\x00" in text:
        raise section.error(key, f"a path cannot hold a NUL character, got {short_repr(text)}")
    match = VAR.match(text)
    if match:
        base = os.environ.get(match.group(1))
        # With the variable unset the path keeps its ${VAR} text: missing_data() reports it and
        # reading it raises an error that says which variable to set.
        path = Path(base) / text[match.end() :].lstrip("/") if base else Path(text)
        data_files.append(path)
        return path
    return (Path(section.file).parent / text).resolve()
