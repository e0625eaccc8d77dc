"""The bundled scenario catalogue: YAML files beside this module, loaded by name or path.

>>> "fleet5-synthetic" in names()
True
>>> load("fleet5-synthetic").settings.horizon_s
14400.0
"""

from __future__ import annotations

import os
from pathlib import Path

from digital_twin.errors import did_you_mean
from digital_twin.scenario import Limits, Scenario, ScenarioError, load_scenario

DEFAULT = "fleet5-synthetic"
CATALOGUE_DIR = Path(__file__).resolve().parent
TRACES_ENV = "ACO_ENV_TRACES"
"""Environment variable naming the folder that holds real traces (see README)."""


def names() -> list[str]:
    """Names of the bundled scenarios (file stems), sorted."""
    return sorted(p.stem for p in CATALOGUE_DIR.glob("*.yaml"))


def path_of(name: str) -> Path:
    """The file of a bundled scenario."""
    path = CATALOGUE_DIR / f"{name}.yaml"
    if not path.exists():
        raise ScenarioError(unknown_name(name))
    return path


def load(name_or_path: str | os.PathLike[str] | Scenario, limits: Limits | None = None) -> Scenario:
    """A bundled scenario by name, a scenario file by path, or a :class:`Scenario` as is.

    ``limits`` (default :class:`~digital_twin.limits.Limits`) bounds what a file may ask for;
    a file's own ``limits:`` mapping may raise all but the two that guard reading it.
    """
    if isinstance(name_or_path, Scenario):
        return name_or_path
    text = os.fspath(name_or_path)
    if text in names():
        return load_scenario(path_of(text), limits)
    if text.endswith((".yaml", ".yml")) or os.sep in text:
        return load_scenario(text, limits)
    raise ScenarioError(f"{text!r} is not a .yaml path, and {unknown_name(text)}")


def unknown_name(name: str) -> str:
    """The message for a name no bundled scenario has: the closest names, then all of them.

    >>> unknown_name("fleet5-synthetc").split(";")[0]
    "no bundled scenario named 'fleet5-synthetc' (did you mean 'fleet5-synthetic' or 'fleet50-synthetic'?)"
    """
    bundled = names()
    return f"no bundled scenario named {name!r}{did_you_mean(name, bundled)}; bundled: {', '.join(bundled)}"
