"""Building an agent by name: a registered agent (:mod:`agents.base`), or a saved SB3 model (``sb3:PATH``).

A registered name may carry options, ``NAME[key=value,...]`` (:mod:`agents.spec`).
:func:`make_agent` builds either; :func:`check_agent_name` checks a name without building it,
and :func:`agent_deferral` says under which deferral rule to build the agent's env. Saved models
load through :mod:`agents.sb3_agent`, which imports torch only when a model is loaded.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from agents.base import Agent, AgentEntry, AgentSpecError, listed_agent_names, registered_agent
from agents.spec import parse_agent_spec


def check_agent_name(name: str) -> None:
    """Check that ``name`` is a registered agent (options allowed) or a usable ``sb3:`` spec, without building it.

    Raises:
        AgentSpecError: An unknown name or algorithm (the message lists the known ones), or a
            malformed ``NAME[key=value,...]``.
        agents.sb3_agent.ModelFileError: The ``sb3:`` model file is missing, truncated or corrupt.
    """
    if name.startswith("sb3:"):
        from agents.sb3_agent import parse_sb3_spec  # no torch at import

        parse_sb3_spec(name[4:])
    else:
        _entry(name)


def agent_deferral(name: str) -> str:
    """The deferral rule to build ``name``'s env with (an ``sb3:`` model's: the rule it was trained under).

    Raises:
        AgentSpecError, agents.sb3_agent.ModelFileError: As :func:`check_agent_name`.
    """
    if name.startswith("sb3:"):
        from agents.sb3_agent import parse_sb3_spec  # no torch at import

        return parse_sb3_spec(name[4:]).deferral
    return _entry(name).deferral


def make_agent(name: str, env: gym.Env, **options: Any) -> Agent:
    """Build the agent ``name`` bound to ``env``.

    ``name`` is a registered name, optionally with options (``lookahead[candidates=8]``; keyword
    ``options`` given here win over them), or ``sb3:PATH`` for a saved Stable-Baselines3 model.

    Raises:
        AgentSpecError: An unknown name, algorithm or option.
    """
    if name.startswith("sb3:"):
        from agents.sb3_agent import load_sb3_agent  # torch is imported only here

        return load_sb3_agent(name[4:], env, **options)
    _, written = parse_agent_spec(name)
    entry = _entry(name)
    try:
        return entry.factory(env, **{**written, **options})
    except TypeError as exc:
        if "unexpected keyword argument" not in str(exc):
            raise
        raise AgentSpecError(f"agent {name!r}: no such option ({exc})") from None


def _entry(name: str) -> AgentEntry:
    """The registry entry of ``name`` (options stripped).

    Raises:
        AgentSpecError: A malformed spec, or no agent registered under its name.
    """
    base, _ = parse_agent_spec(name)
    entry = registered_agent(base)
    if entry is None:
        raise AgentSpecError(f"unknown agent {base!r}; registered: {listed_agent_names()}, or sb3:PATH")
    return entry
