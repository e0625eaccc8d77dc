"""Test-wide set-up: find the real traces (never committed) beside the repository.

Tests and scenarios read real data through ``ACO_ENV_TRACES``; when it is unset and
``../shared/traces`` exists (the developers' and CI's layout), point it there. Tests that need
the data skip cleanly when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.optional_extras import missing_extras, needs_a_missing_extra

_SHARED_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"

if "ACO_ENV_TRACES" not in os.environ and _SHARED_TRACES.is_dir():
    os.environ["ACO_ENV_TRACES"] = str(_SHARED_TRACES)

# Importing it registers agents in the global registry, which other test modules read at
# collection: only worker processes import it (tests.failing_agents), never doctest collection.
collect_ignore = ["register_failing_agents.py"]


SMOKE_MARK = "pytest.mark.smoke"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave out the test modules this run cannot or need not import.

    In a base install (no torch, SB3, FastAPI, Ray): those that import them at the top. With
    ``-m smoke`` (``make smoke``): those that mark no test ``smoke``, so that the run imports
    only the few modules it runs, in seconds.
    """
    if collection_path.suffix != ".py":
        return None
    if missing_extras() and needs_a_missing_extra(collection_path):
        return True
    if config.option.markexpr == "smoke" and collection_path.name.startswith("test_"):
        return SMOKE_MARK not in collection_path.read_text(encoding="utf-8")
    return None
