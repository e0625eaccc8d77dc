"""The twin's optional compiled core: the simulator (:mod:`digital_twin.sim`) compiled by mypyc, used only while fresh.

The twin is pure Python, and its sources stay the one truth. ``make install`` (so ``make run``
and ``make test``) also compiles every module of :mod:`digital_twin.sim` (:data:`COMPILED_MODULES`)
with mypyc (mypy's compiler of type-annotated Python to C extensions) into
``digital_twin/_compiled/``, which git ignores. Importing :mod:`digital_twin.sim` then loads
those builds in place of the sources, **only if** they were built from exactly the package's
current sources: a SHA-256 of every ``.py`` file under ``digital_twin/`` is written beside the
build and checked at import. An edited source therefore never runs stale compiled code: the
import warns once and runs the sources until the next ``make install`` (or ``python -m
digital_twin.compile_core``).

The compiled twin gives the same results bit for bit (a test plays episodes both ways) and
about twice the decisions per second (docs/benchmarks.md). Set ``ACO_ENV_PURE_PYTHON=1`` to
run the sources although a fresh build exists, e.g. to step through the twin in a debugger.

Commands (:mod:`digital_twin.compile_core`)::

    python -m digital_twin.compile_core            # compile (needs mypy's mypyc, setuptools and a C compiler)
    python -m digital_twin.compile_core --status   # which twin an import of digital_twin runs, and why

This module imports nothing from :mod:`digital_twin` (the ``__init__`` of :mod:`digital_twin.sim`
and of each package in it calls :func:`activate` before any module of it is imported).
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
COMPILED_PACKAGE = "sim"
"""The package of ``digital_twin`` that is compiled, whole: every module in it and in its packages."""


def _modules_of(package: Path) -> tuple[str, ...]:
    """The modules under ``package`` (a directory of ``digital_twin``), dotted from ``digital_twin``, sorted."""
    return tuple(
        sorted(
            ".".join(path.relative_to(PACKAGE_DIR).with_suffix("").parts)
            for path in package.rglob("*.py")
            if path.name != "__init__.py"
        )
    )


COMPILED_MODULES: tuple[str, ...] = _modules_of(PACKAGE_DIR / COMPILED_PACKAGE)
"""The compiled modules, dotted from ``digital_twin`` (``"sim.twin"``, ``"sim.features.rule_checks"``,
...): exactly the modules of :mod:`digital_twin.sim`, everything an env step runs in the twin.
The packages' ``__init__`` files stay interpreted: they choose the build (:func:`activate`)."""
GROUP = "digital_twin.sim.native_core"
"""mypyc's name of the build's shared library (``digital_twin/sim/native_core__mypyc.<suffix>``)."""

COMPILED = "compiled"
PURE = "pure-python"

status = PURE
"""What :func:`decide` decided: :data:`COMPILED` or :data:`PURE`."""
reason = "not decided"
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
    return all((package / f"{name.replace('.', '/')}{suffix}").is_file() for name in COMPILED_MODULES)


_decided = False


def activate(package_path: list[str], package: str = COMPILED_PACKAGE) -> None:
    """Put the build of ``digital_twin.<package>`` first on its ``__path__`` if the build is fresh.

    Called by the ``__init__`` of :mod:`digital_twin.sim` (and of each package in it) before any
    module of it is imported. The first call decides (:func:`decide`); a stale build leaves
    the sources.
    """
    if not _decided:
        decide()
    if status == COMPILED:
        package_path.insert(0, str(BUILD_DIR / "digital_twin" / package.replace(".", "/")))


def decide() -> None:
    """Decide whether the fresh build runs: set :data:`status` and :data:`reason`.

    Warns (``RuntimeWarning``) when a build exists but is stale, since that silently costs speed.
    """
    global status, reason, _decided
    _decided = True
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
    status, reason = COMPILED, f"mypyc build in {BUILD_DIR}"
