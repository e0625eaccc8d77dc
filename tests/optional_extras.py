"""The fast layer without the optional extras: what a base install (``pip install aco-env``) can test.

The fast layer (tests/layers.py) runs in a base install with the test tools and no extra: no
torch, Stable-Baselines3, FastAPI or Ray (``make test-base`` builds such a venv and runs it). A
test module that imports an extra's module at its top level cannot be collected there: it is
left out (:func:`needs_a_missing_extra`, read from its source), and a test that needs an extra
for one check calls :func:`sb3_check_env` or :func:`pytest.importorskip`, which skip it there.
"""

from __future__ import annotations

import ast
import functools
import importlib.machinery
from pathlib import Path

import pytest

EXTRA_MODULES = ("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "fastapi", "uvicorn", "pydantic", "ray")
"""Top-level modules that come with an optional extra (``train``, ``serve``, ``ray``), not the base install."""


@functools.cache
def installed(module: str) -> bool:
    """Whether the top-level ``module`` can be imported here."""
    return importlib.machinery.PathFinder.find_spec(module) is not None  # not through the layers' import guard


def missing_extras() -> list[str]:
    """The extras' modules this environment lacks (empty in the full ``make install``)."""
    return [module for module in EXTRA_MODULES if not installed(module)]


def needs_a_missing_extra(path: Path) -> bool:
    """Whether the module at ``path`` imports, at its top level, an extra's module that is not installed."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in tree.body:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if any(name.split(".")[0] in EXTRA_MODULES and not installed(name.split(".")[0]) for name in names):
            return True
    return False


def sb3_check_env(env: object) -> None:
    """Stable-Baselines3's env checker on ``env``; skips the test where SB3 is not installed."""
    checker = pytest.importorskip("stable_baselines3.common.env_checker", reason="SB3 comes with the train extra")
    checker.check_env(env, warn=False)
