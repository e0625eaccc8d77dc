"""Building an agent by name: a registered agent (:mod:`agents.base`), or a saved SB3 model (``sb3:PATH``).

:func:`make_agent` builds either; :func:`check_agent_name` checks a name without building it,
and :func:`agent_deferral` says under which deferral rule to build the agent's env. Saved models
load through :mod:`agents.sb3_agent`, which imports torch only when a model is loaded.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from agents.base import Agent, AgentSpecError, listed_agent_names, registered_agent
from digital_twin import NEXT_EVENT


def check_agent_name(name: str) -> None:
    """Check that ``name`` is a registered agent or a usable ``sb3:`` spec, without building it.

    Raises:
        AgentSpecError: An unknown name or algorithm (the message lists the known ones).
        agents.sb3_agent.ModelFileError: The ``sb3:`` model file is missing, truncated or corrupt.
    """
    if name.startswith("sb3:"):
        from agents.sb3_agent import parse_sb3_spec  # no torch at import

        parse_sb3_spec(name[4:])
    elif registered_agent(name) is None:
        raise AgentSpecError(f"unknown agent {name!r}; registered: {listed_agent_names()}, or sb3:PATH")


def agent_deferral(name: str) -> str:
    """The deferral rule to build ``name``'s env with (``NEXT_EVENT`` for ``sb3:`` models)."""
    check_agent_name(name)
    entry = registered_agent(name)
    return NEXT_EVENT if entry is None else entry.deferral


def make_agent(name: str, env: gym.Env, **options: Any) -> Agent:
    """Build the agent ``name`` bound to ``env``.

    ``name`` is a registered name or ``sb3:PATH`` for a saved Stable-Baselines3 model.

    Raises:
        AgentSpecError: An unknown name or algorithm.
    """
    if name.startswith("sb3:"):
        from agents.sb3_agent import load_sb3_agent  # torch is imported only here

        return load_sb3_agent(name[4:], env, **options)
    check_agent_name(name)
    entry = registered_agent(name)
    assert entry is not None  # check_agent_name raised otherwise
    return entry.factory(env, **options)
