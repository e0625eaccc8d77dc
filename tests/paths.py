"""Where the tests find the repository, their own data and the real traces (whatever folder a test sits in)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The repository's root."""
DATA = ROOT / "tests" / "data"
"""The tests' own files: recorded episodes, frozen scenarios."""
_TRACES_VARIABLE = os.environ.get("ACO_ENV_TRACES", str(ROOT.parent / "shared" / "traces"))
TRACES = Path(_TRACES_VARIABLE) if _TRACES_VARIABLE else ROOT / "tests" / "data" / "no-traces"
"""The real traces (never committed), where the scenarios' ``${ACO_ENV_TRACES}`` points; tests that
need them skip when they are absent. An empty variable (the Makefile's, in a clone with no traces
beside it) names a folder that does not exist."""
