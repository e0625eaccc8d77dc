"""The twin's optional compiled core: its hot modules compiled by mypyc, used only while fresh.

The twin is pure Python, and its sources stay the one truth. ``make install`` (so ``make run``
and ``make test``) also compiles the modules of :data:`COMPILED_MODULES` with mypyc (mypy's
compiler of type-annotated Python to C extensions) into ``digital_twin/_compiled/``, which git
ignores. Importing :mod:`digital_twin` then loads those builds in place of the sources, **only
if** they were built from exactly the package's current sources: a SHA-256 of every ``.py``
file under ``digital_twin/`` is written beside the build and checked at import. An edited
source therefore never runs stale compiled code: the import warns once and runs the sources
until the next ``make install`` (or ``python -m digital_twin.compile_core``).

The compiled twin gives the same results bit for bit (a test plays episodes both ways) and
about twice the decisions per second (docs/benchmarks.md). Set ``ACO_ENV_PURE_PYTHON=1`` to
run the sources although a fresh build exists, e.g. to step through the twin in a debugger.

Commands (:mod:`digital_twin.compile_core`)::

    python -m digital_twin.compile_core            # compile (needs mypy's mypyc, setuptools and a C compiler)
    python -m digital_twin.compile_core --status   # which twin an import of digital_twin runs, and why

This module imports nothing from :mod:`digital_twin` (the package's ``__init__`` calls
:func:`activate` before importing any other module of it).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import sys
import warnings
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
BUILD_DIR = PACKAGE_DIR / "_compiled"
"""Where the build lives: the package directory of the compiled modules and the digest file."""
DIGEST_FILE = BUILD_DIR / "SOURCES.sha256"
PURE_PYTHON_ENV = "ACO_ENV_PURE_PYTHON"
"""Set to ``1`` to run the pure-Python twin although a fresh build exists."""
COMPILED_MODULES: tuple[str, ...] = (
    "constants",
    "contention",
    "deferral",
    "energy_accounting",
    "energy_constants",
    "event_handlers",
    "event_log",
    "event_loop",
    "gpu_fragmentation",
    "interference",
    "job_queue",
    "measures",
    "rule_checks",
    "rule_events",
    "state",
    "twin",
    "twin_views",
    "work_clocks",
    "workflow_events",
    "workflow_handlers",
)
"""The modules of ``digital_twin`` that are compiled: the state, the event loop, its handlers,
the work clocks and interference, the energy accounting, the objective's measures, the placement
rules' checks, and the twin's per-decision methods (everything an env step runs in the twin)."""
GROUP = "digital_twin.native_core"
"""mypyc's name of the build's shared library (``digital_twin/native_core__mypyc.<suffix>``)."""

COMPILED = "compiled"
PURE = "pure-python"

status = PURE
"""What :func:`activate` decided: :data:`COMPILED` or :data:`PURE`."""
reason = "not activated"
"""Why, in words (for ``python -m digital_twin.compile_core --status`` and the benchmark report)."""


def source_digest() -> str:
    """SHA-256 (hex) of every ``.py`` file of the package, by relative path, the build excluded."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if BUILD_DIR in path.parents:
            continue
        digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def _built_for_this_interpreter() -> bool:
    """Whether the build holds an extension of every compiled module for this Python."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    package = BUILD_DIR / "digital_twin"
    return all((package / f"{name}{suffix}").is_file() for name in COMPILED_MODULES)


def activate(package_path: list[str]) -> None:
    """Put the build first on ``digital_twin.__path__`` if it is fresh; else leave the sources.

    Called by ``digital_twin/__init__.py`` before any other submodule is imported. Sets
    :data:`status` and :data:`reason`; warns (``RuntimeWarning``) when a build exists but is
    stale, since that silently costs speed.
    """
    global status, reason
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        status, reason = PURE, f"{PURE_PYTHON_ENV} is set"
        return
    if not DIGEST_FILE.is_file():
        status, reason = PURE, "not built (make install, or python -m digital_twin.compile_core)"
        return
    if DIGEST_FILE.read_text().strip() != source_digest():
        status, reason = PURE, "the build is older than the sources (rebuild: python -m digital_twin.compile_core)"
        warnings.warn(f"digital_twin: {reason}; running the pure-Python twin", RuntimeWarning, stacklevel=2)
        return
    if not _built_for_this_interpreter():
        status, reason = PURE, f"built for another Python than {sys.version.split()[0]}"
        return
    package_path.insert(0, str(BUILD_DIR / "digital_twin"))
    status, reason = COMPILED, f"mypyc build in {BUILD_DIR}"
