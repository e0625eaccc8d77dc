"""Checks the commands run on their arguments before any work starts.

Each raises :class:`training.errors.UsageError` (the command line is wrong) or
:class:`~training.errors.DataError` (a file or folder is), with one line that names the option
and says how to fix it, so a mistake costs nothing: no episode is played and no file written
before every input and output has been checked.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import scenarios
from digital_twin.scenario import Scenario, ScenarioError
from training.errors import DataError, UsageError


def count(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer ``>= minimum`` (argparse reports others as usage errors)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"  # argparse names the type in its messages
    return parse


def percent(text: str) -> float:
    """An argparse ``type``: a number in [0, 100]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percent, got {text!r}") from None
    if not 0.0 <= value <= 100.0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be in [0, 100], got {text}")
    return value


percent.__name__ = "percent in [0, 100]"


def writable_dir(path: Path, option: str) -> Path:
    """Create ``path`` (and parents) if needed and check a file can be written in it.

    Raises:
        DataError: It is a file, or cannot be created or written (read-only, no permission).
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise DataError(f"{option} {path}: is a file, not a folder; give a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise DataError(f"{option} {path}: cannot write there ({reason}); give a writable folder") from None
    return path


def writable_file(path: Path, option: str) -> Path:
    """Check that ``path`` can be written (its folder is created if needed; an existing file is kept).

    Raises:
        DataError: It is a folder, or its folder cannot be written.
    """
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{option} {path}: is a folder; give a file name")
    writable_dir(path.parent if str(path.parent) else Path("."), option)
    if path.exists() and not os.access(path, os.W_OK):
        raise DataError(f"{option} {path}: the file is read-only; give another file name")
    return path


def scenario(name_or_path: str, option: str = "--scenario", need_data: bool = True) -> Scenario:
    """A loaded scenario, or the error a user can act on.

    Raises:
        UsageError: Neither a bundled name nor a path to a scenario file.
        DataError: The file is invalid, or (with ``need_data``) data it reads is not present
            (the message names the file and the variable to set).
    """
    text = str(name_or_path)
    is_path = text.endswith((".yaml", ".yml")) or os.sep in text
    if not is_path and text not in scenarios.names():
        raise UsageError(f"{option}: not a .yaml path, and {scenarios.unknown_name(text)}")
    try:
        loaded = scenarios.load(text)
    except ScenarioError as exc:
        raise DataError(str(exc)) from None
    if need_data and loaded.missing_data():
        missing = loaded.missing_data()[0]
        hint = (
            f"set {scenarios.TRACES_ENV} to the folder that holds the traces"
            if "${" in str(missing)
            else "check the path in the scenario file"
        )
        raise DataError(f"{option} {text}: needs data that is not present: {missing} ({hint})")
    return loaded


def agent_list(text: str, option: str = "--agents") -> list[str]:
    """Comma-separated agent names (``NAME[key=value,...]`` with options) or ``sb3:`` specs, each checked.

    Models are not loaded, and options are checked when the agent is built.

    Raises:
        UsageError: The list is empty, names an agent twice, or names an unknown agent or algorithm.
        DataError: An ``sb3:`` model file is missing, truncated or corrupt.
    """
    from agents import AgentSpecError, check_agent_name, listed_agent_names
    from agents.sb3_agent import ModelFileError
    from agents.spec import split_agent_specs

    names = split_agent_specs(text)
    if not names:
        raise UsageError(f"{option} is empty; give one or more of {listed_agent_names()} or sb3:PATH")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UsageError(f"{option} names {', '.join(repeated)} more than once")
    for name in names:
        try:
            check_agent_name(name)
        except AgentSpecError as exc:
            raise UsageError(f"{option}: {exc}") from None
        except ModelFileError as exc:
            raise DataError(f"{option}: {exc}") from None
    return names


def oracle_budget() -> float:
    """The oracle's memory budget in bytes (a bad ``ACO_ENV_ORACLE_MEMORY_GB`` is a usage error)."""
    from agents.oracle.sizing.budget import budget_bytes

    try:
        return budget_bytes()
    except ValueError as exc:
        raise UsageError(str(exc)) from None


PLANTED_EXPERT = "planted"
"""The agent that follows a planted episode's schedule (:mod:`agents.planted`): planted scenarios only."""


def planted_scenario_names() -> list[str]:
    """The bundled scenarios whose episodes are planted (``workload: source: planted``)."""
    return [name for name in scenarios.names() if scenarios.load(name).planted]


def agent_options(agents: Sequence[str], scenario: Scenario, option: str = "--agents") -> None:
    """Build each agent written with options (``NAME[key=value,...]``) once, on ``scenario``'s env, to check them.

    So that a misspelt or bad option ends the command before any work, not in every episode.

    Raises:
        UsageError: An option the agent does not take, or a value it refuses.
    """
    from aco_env import ClusterSchedulingEnv
    from agents import AgentSpecError, make_agent

    with_options = [name for name in agents if not name.startswith("sb3:") and "[" in name]
    if not with_options:
        return
    env = ClusterSchedulingEnv(scenario)
    try:
        for name in with_options:
            try:
                make_agent(name, env)
            except AgentSpecError as exc:
                raise UsageError(f"{option}: {exc}") from None
            except (ValueError, TypeError) as exc:
                raise UsageError(f"{option}: {name}: {exc}") from None
    finally:
        env.close()


def agents_fit_scenario(agents: Sequence[str], scenario: Scenario, option: str) -> None:
    """Refuse the planted expert on a scenario that is not planted: it has no schedule to follow.

    Raises:
        UsageError: ``agents`` names the planted expert and ``scenario`` is not planted.
    """
    from agents.spec import agent_base_name

    if PLANTED_EXPERT in map(agent_base_name, agents) and not scenario.planted:
        raise UsageError(
            f"{option}: the {PLANTED_EXPERT} expert follows a planted schedule; {scenario.name} is not planted "
            f"(planted: {', '.join(planted_scenario_names())})"
        )
