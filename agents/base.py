"""The one seam every decision maker implements, and the registry of named agents.

An agent is bound to one env and decides online, from what is known at decision time: the
observation, ``env.unwrapped.fleet`` and ``env.unwrapped.cluster_view()`` (the fleet, the
episode's settings, the telemetry up to the current tick, the node state, the current job and
the queue: :class:`aco_env.ClusterView`). The future (jobs not yet arrived, later telemetry,
spot interruptions) is hindsight, read through :mod:`aco_env.hindsight` (``hindsight_of(env)``,
``planted_of(env)``) only by the agents registered as hindsight agents
(``hindsight=True``: the oracle, ``lookahead-clairvoyant``, the planted expert), which are no
online policies and are labelled so wherever agents are listed.
Its ``predict`` has the signature of Stable-Baselines3's ``PolicyPredictor``, so SB3's
``evaluate_policy`` and our evaluator treat every agent alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from digital_twin import DEFERRALS, NEXT_EVENT

AgentState = tuple[np.ndarray, ...] | None


@runtime_checkable
class Agent(Protocol):
    """A placement policy for :class:`aco_env.ClusterSchedulingEnv` (or the placement env).

    ``reset(seed)`` is called after each ``env.reset()`` and before the episode's first
    ``predict``; agents with internal state (round-robin pointer, pheromone, a solved plan, a
    random generator) start over there. ``predict`` gets the observation of the env's current
    decision and returns the action (a numpy int array of shape ``()``) and the recurrent state
    (always ``None`` here).
    """

    name: str

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode (the env has just been reset)."""
        ...

    def predict(
        self,
        observation: dict[str, np.ndarray],
        state: AgentState = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, AgentState]:
        """The action for the current decision."""
        ...


AgentFactory = Callable[..., Agent]
"""``factory(env, **options) -> Agent``; ``env`` is the (possibly wrapped) env the agent acts in."""


class AgentSpecError(ValueError):
    """An agent name or ``sb3:`` spec that names no agent (the message lists the known ones)."""


@dataclass(frozen=True)
class AgentEntry:
    """A registered agent.

    Attributes:
        factory: Builds the agent for an env.
        deferral: The deferral rule the agent's defers may be re-asked under
            (:mod:`digital_twin.sim.deferral`): ``NEW_FIT`` declares that the agent defers only
            when none of the nodes it accepts has room, so asking it again before the job fits
            somewhere new would repeat its answer. Evaluations build the agent's env with this
            rule (:func:`agents.build.agent_deferral`); the episode is the same, with fewer decisions.
        hindsight: The agent reads the episode's future (:mod:`aco_env.hindsight`): a
            reference or an expert that labels training states, not an online policy (checks
            of online agents leave it out).
    """

    factory: AgentFactory
    deferral: str = NEXT_EVENT
    hindsight: bool = False


_REGISTRY: dict[str, AgentEntry] = {}


def register_agent(
    name: str, factory: AgentFactory, *, deferral: str = NEXT_EVENT, hindsight: bool = False, overwrite: bool = False
) -> None:
    """Add a named agent factory (names are lower-case with dashes, e.g. ``"first-fit"``).

    ``deferral`` and ``hindsight`` are the :class:`AgentEntry` fields of the same names.
    """
    if not name or name != name.strip().lower() or " " in name:
        raise ValueError(f"agent names are lower-case words joined by dashes, got {name!r}")
    if name in _REGISTRY and not overwrite:
        raise ValueError(f"an agent named {name!r} is already registered")
    if not callable(factory):
        raise TypeError(f"the factory for {name!r} must be callable")
    if deferral not in DEFERRALS:
        raise ValueError(f"deferral must be one of {DEFERRALS}, got {deferral!r}")
    if not isinstance(hindsight, bool):
        raise TypeError(f"hindsight must be True or False, got {hindsight!r}")
    _REGISTRY[name] = AgentEntry(factory, deferral, hindsight)


def agent_names() -> list[str]:
    """Registered agent names, sorted."""
    return sorted(_REGISTRY)


def listed_agent_names() -> str:
    """The registered names for a message or a listing: sorted, comma-separated, hindsight agents marked.

    >>> "oracle (hindsight)" in listed_agent_names()
    True
    """
    return ", ".join(f"{name} (hindsight)" if _REGISTRY[name].hindsight else name for name in agent_names())


def is_hindsight_agent(name: str) -> bool:
    """Whether ``name`` (options aside: ``NAME[...]``) is a registered agent that reads the episode's future.

    False for unknown names and ``sb3:`` specs.
    """
    entry = None if name.startswith("sb3:") else _REGISTRY.get(name.partition("[")[0])
    return entry is not None and entry.hindsight


def registered_agent(name: str) -> AgentEntry | None:
    """The entry registered as ``name`` (``None``: no agent has that name)."""
    return _REGISTRY.get(name)
