"""Where the energy tests find the real power and carbon files, and how they write small ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.paths import TRACES

POWER_MODELS = "power-models"
EIA = "carbon-intensity-eia-2022"


def real(relative: str) -> Path:
    """The real file under the traces folder, or skip the test when it is not on this machine."""
    path = TRACES / relative
    if not path.is_file():
        pytest.skip(f"{relative} not present (set ACO_ENV_TRACES to the traces folder)")
    return path


def write(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` and return the path."""
    path.write_text(text)
    return path
