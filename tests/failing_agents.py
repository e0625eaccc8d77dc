"""Agents that fail on purpose, for the execution backends' retry tests (:func:`register` registers them).

Each is first-fit, except that starting the episode of seed :data:`FAILING_SEED` goes wrong:

| name | on seed ``FAILING_SEED`` |
|---|---|
| ``flaky-first-fit`` | raises on the first attempt, then plays (a transient failure) |
| ``broken-first-fit`` | raises on every attempt |
| ``crashing-first-fit`` | kills its process on the first attempt (``os._exit``), then plays |

Every attempt at that seed leaves a file in the folder named by ``$ACO_ENV_TEST_ATTEMPTS`` (the
attempts of units run in other processes count too), so a test can count them.

Importing this module registers nothing: the agent registry is global, and test modules read it
when they are collected (every registered agent is played by ``test_agents_registry.py``). Only
worker processes, and the CLI processes some tests start, register them, by importing
:data:`REGISTER_MODULE` (evaluations pass it as ``agent_modules=(REGISTER_MODULE,)``); the test
process never does, and ``conftest.py`` keeps doctest collection from importing it.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from agents import make_agent, register_agent
from agents.base import AgentState

REGISTER_MODULE = "tests.register_failing_agents"
"""Importing it registers these agents: what an evaluation's workers import to know them."""
ATTEMPTS_ENV = "ACO_ENV_TEST_ATTEMPTS"
"""The folder where each attempt at :data:`FAILING_SEED` leaves a file."""
FAILING_SEED = 1
"""The seed whose episode fails."""
FLAKY, BROKEN, CRASHING = "flaky-first-fit", "broken-first-fit", "crashing-first-fit"


def attempts(name: str, seed: int = FAILING_SEED) -> int:
    """How many times agent ``name`` started the episode of ``seed`` (in any process)."""
    return len(list(Path(os.environ[ATTEMPTS_ENV]).glob(f"{name}.{seed}.*")))


class FailingFirstFit:
    """First-fit that fails when starting the episode of :data:`FAILING_SEED` (how: ``name``)."""

    def __init__(self, env: gym.Env, name: str) -> None:
        self.name = name
        self._inner = make_agent("first-fit", env)

    def reset(self, seed: int | None = None) -> None:
        """Record the attempt and fail as the agent's kind says; then start first-fit's episode."""
        if seed == FAILING_SEED:
            earlier = attempts(self.name, seed)
            (Path(os.environ[ATTEMPTS_ENV]) / f"{self.name}.{seed}.{uuid.uuid4().hex}").touch()
            if self.name == BROKEN or (self.name == FLAKY and earlier == 0):
                raise RuntimeError(f"{self.name} fails on seed {seed} (attempt {earlier + 1})")
            if self.name == CRASHING and earlier == 0:
                os._exit(17)  # as a worker killed by the system would end
        self._inner.reset(seed)

    def predict(
        self,
        observation: dict[str, np.ndarray],
        state: AgentState = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, AgentState]:
        """First-fit's action."""
        return self._inner.predict(observation, state, episode_start, deterministic)


def _factory(name: str) -> Any:
    def factory(env: gym.Env) -> FailingFirstFit:
        return FailingFirstFit(env, name)

    return factory


def register() -> None:
    """Register the three agents (again, if they are: a process may import both module names)."""
    for name in (FLAKY, BROKEN, CRASHING):
        register_agent(name, _factory(name), overwrite=True)
