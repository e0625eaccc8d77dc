"""Building an agent by name: a registered agent (:mod:`agents.base`), or a saved SB3 model (``sb3:PATH``).

A registered name may carry options, ``NAME[key=value,...]`` (:mod:`agents.spec`).
:func:`make_agent` builds either; :func:`check_agent_name` checks a name without building it,
and :func:`agent_deferral` says under which deferral rule to build the agent's env. Saved models
load through :mod:`agents.sb3_agent`, which imports torch only when a model is loaded.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

import gymnasium as gym

from agents.base import Agent, AgentEntry, AgentSpecError, agent_names, listed_agent_names, registered_agent
from agents.spec import parse_agent_spec
from digital_twin.errors import did_you_mean


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
    given = {**written, **options}
    known = agent_option_names(entry)
    unknown = sorted(set(given) - set(known)) if known is not None else []
    if known is not None and unknown:
        raise AgentSpecError(_no_such_option(name, unknown[0], known))
    try:
        return entry.factory(env, **given)
    except TypeError as exc:
        if "unexpected keyword argument" not in str(exc):
            raise
        raise AgentSpecError(f"agent {name!r}: no such option ({exc})") from None


def agent_option_names(entry: AgentEntry) -> list[str] | None:
    """The options an agent takes: its factory's keyword parameters (the env excluded), sorted.

    A factory that passes ``**options`` on to the class it returns (its return annotation) takes
    that class's keyword parameters. ``None`` when they cannot be told (a factory without one).
    """
    factory: Any = entry.factory
    target = factory
    parameters = inspect.signature(factory).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        try:
            target = typing.get_type_hints(factory).get("return")
        except (NameError, TypeError):
            return None
        if not inspect.isclass(target):
            return None
        parameters = inspect.signature(target).parameters
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            return None
    keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sorted(name for name in list(parameters)[1:] if parameters[name].kind in keyword)


def _no_such_option(spec: str, option: str, known: list[str]) -> str:
    listed = ", ".join(known) if known else "none"
    return f"agent {spec!r}: no such option {option!r}{did_you_mean(option, known)}; its options: {listed}"


def _entry(name: str) -> AgentEntry:
    """The registry entry of ``name`` (options stripped).

    Raises:
        AgentSpecError: A malformed spec, or no agent registered under its name.
    """
    base, _ = parse_agent_spec(name)
    entry = registered_agent(base)
    if entry is None:
        close = did_you_mean(base, agent_names())
        raise AgentSpecError(f"unknown agent {base!r}{close}; registered: {listed_agent_names()}, or sb3:PATH")
    return entry
