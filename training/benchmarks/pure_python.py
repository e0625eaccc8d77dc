"""Run a benchmark function again with the twin's pure-Python sources, in a child process.

The twin's compiled core (:mod:`digital_twin.native`) is chosen once per process, at import;
comparing it with the sources needs a second process with ``ACO_ENV_PURE_PYTHON=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from digital_twin import native

_CHILD = (
    "import importlib, json, sys\n"
    "module, function = sys.argv[1].split(':')\n"
    "print(json.dumps(getattr(importlib.import_module(module), function)(**json.loads(sys.argv[2]))))\n"
)


def compiled_core_is_running() -> bool:
    """Whether this process runs the twin's compiled core (a pure-Python comparison then makes sense)."""
    return native.status == native.COMPILED


def in_pure_python(target: str, timeout_s: float = 1800.0, **options: Any) -> dict[str, Any]:
    """``module:function(**options)`` in a child process that runs the pure-Python twin.

    Args:
        target: ``"module:function"``; the function returns a JSON-ready dict.
        timeout_s: The child is killed after this long (``subprocess.TimeoutExpired``).
        **options: JSON-ready keyword arguments of the function.

    Raises:
        subprocess.CalledProcessError: The child failed (its stderr is in the exception).
    """
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, target, json.dumps(options)],
        env={**os.environ, native.PURE_PYTHON_ENV: "1"},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=True,
    )
    result: dict[str, Any] = json.loads(child.stdout.strip().splitlines()[-1])
    return result
