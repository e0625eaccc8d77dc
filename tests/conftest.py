"""Test-wide set-up: find the real traces (never committed) beside the repository.

Tests and scenarios read real data through ``ACO_ENV_TRACES``; when it is unset and
``../shared/traces`` exists (the developers' and CI's layout), point it there. Tests that need
the data skip cleanly when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.optional_extras import missing_extras, needs_a_missing_extra

_SHARED_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"

if "ACO_ENV_TRACES" not in os.environ and _SHARED_TRACES.is_dir():
    os.environ["ACO_ENV_TRACES"] = str(_SHARED_TRACES)

# Importing it registers agents in the global registry, which other test modules read at
# collection: only worker processes import it (tests.failing_agents), never doctest collection.
collect_ignore = ["register_failing_agents.py"]


def pytest_ignore_collect(collection_path: Path, config: object) -> bool | None:
    """In a base install (no torch, SB3, FastAPI, Ray): leave out the test modules that import them at the top."""
    del config
    if collection_path.suffix == ".py" and missing_extras() and needs_a_missing_extra(collection_path):
        return True
    return None
