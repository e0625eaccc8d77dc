"""Every registered agent: protocol, full episodes, valid actions on random states, determinism."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aco_env  # noqa: F401  (registers the env ids)
from aco_env import hindsight as hindsight_module
from agents import agent_names, is_hindsight_agent, make_agent
from tests.helpers import (
    agent_env_id,
    agent_params,
    check_agent_protocol,
    make_quick_agent,
    online_agent_params,
    run_episode,
)
from tests.paths import ROOT

AGENTS = agent_params()
RANDOM_STATE_OPTIONS = {"oracle": {"time_limit_s": 2.0, "compute_bound": False, "replayed_rounds": 0}}
"""The oracle's options on states reached by random play: from such a state even its root node can
take 10 s of HiGHS's heuristics, so each solve is cut at 2 s (the test checks that the answer is a
valid action, which holds for any plan, not which plan)."""


@pytest.mark.subprocess
def test_agents_package__does_not_import_torch() -> None:
    """Importing agents (and every agent module it registers) leaves torch unimported."""
    code = "import sys, agents; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


@pytest.mark.smoke
def test_registry__has_the_reference_agents() -> None:
    """The issue's heuristics and ACO variants are registered at import of agents."""
    expected = {
        "random",
        "first-fit",
        "best-fit",
        "worst-fit",
        "cheapest",
        "round-robin",
        "tetris",
        "aco",
        "aco-reference",
        "aco-lstm",
        "aco-ema",
        "aco-persistence",
    }
    assert expected <= set(agent_names())


@pytest.mark.parametrize("name", AGENTS)
def test_agent__implements_the_protocol(name: str) -> None:
    """Each agent is an Agent, and its first action on Fleet5 (or its own env) is a valid int64 scalar array."""
    env = gym.make(agent_env_id(name))
    check_agent_protocol(make_quick_agent(name, env), env)


@pytest.mark.parametrize("name", AGENTS)
def test_agent__plays_a_full_fleet5_episode(name: str) -> None:
    """gym.make, reset(seed), agent.reset(seed), predict/step to the end, only valid actions."""
    env = gym.make(agent_env_id(name))
    metrics = run_episode(env, make_quick_agent(name, env), seed=1)
    assert metrics["decisions"] > 0 and metrics["invalid_actions"] == 0
    assert metrics["return"] == pytest.approx(-metrics["objective_usd"])


@pytest.mark.parametrize("name", AGENTS)
def test_agent__same_seed_same_episode(name: str) -> None:
    """Two runs with the same seed give the same episode metrics (all randomness is seeded)."""
    env = gym.make(agent_env_id(name))
    agent = make_quick_agent(name, env)
    assert run_episode(env, agent, seed=4) == run_episode(env, agent, seed=4)


@pytest.mark.parametrize("name", AGENTS)
def test_agent__reads_the_future_only_if_registered_as_hindsight(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the future's accessors refused, an online agent plays a whole episode; a hindsight agent cannot.

    The accessors are :mod:`aco_env.hindsight`'s (the episode's future, the planted schedule, the
    scenario), which all reach the env through its ``_twin_env``: refusing that refuses them all.
    """
    env = gym.make(agent_env_id(name))

    def refused(*args: object) -> None:
        raise LookupError(f"{name} read the episode's future")

    monkeypatch.setattr(hindsight_module, "_twin_env", refused)
    if not is_hindsight_agent(name):
        agent = make_quick_agent(name, env)
        assert run_episode(env, agent, seed=0)["invalid_actions"] == 0
        return
    with pytest.raises(LookupError, match="future"):  # when built (the planted expert) or when playing
        run_episode(env, make_quick_agent(name, env), seed=0)


def test_online_agent_params__leave_the_hindsight_agents_out() -> None:
    """The online agents the tests iterate are the registered ones that are not hindsight agents."""
    online = {param.values[0] for param in online_agent_params()}
    assert online == {name for name in agent_names() if not is_hindsight_agent(name)}
    assert {"oracle", "lookahead-clairvoyant"}.isdisjoint(online) and "lookahead" in online


RANDOM_PLAY = {"episode_seed": st.integers(0, 2**16), "steps": st.integers(0, 60), "agent_seed": st.integers(0, 2**16)}


@pytest.mark.parametrize("name", [agent for agent in AGENTS if agent.values != ("oracle",)])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**RANDOM_PLAY)
def test_agent__only_valid_actions_on_states_reached_by_random_play(
    name: str, episode_seed: int, steps: int, agent_seed: int
) -> None:
    """Along random play (defers included), every answer of the agent is a valid action."""
    _valid_actions_along_random_play(name, episode_seed, steps, agent_seed)


@pytest.mark.heavy
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**RANDOM_PLAY)
def test_oracle_agent__only_valid_actions_on_states_reached_by_random_play(
    episode_seed: int, steps: int, agent_seed: int
) -> None:
    """The oracle too, on fewer episodes: each one is a solve of a whole default episode (about 3 s)."""
    _valid_actions_along_random_play("oracle", episode_seed, steps, agent_seed)


def _valid_actions_along_random_play(name: str, episode_seed: int, steps: int, agent_seed: int) -> None:
    """Random play from ``episode_seed`` for ``steps`` steps; ``name`` answers every state with a valid action."""
    env = gym.make(agent_env_id(name))
    obs, _ = env.reset(seed=episode_seed)
    agent = make_agent(name, env, **RANDOM_STATE_OPTIONS.get(name, {}))
    agent.reset(seed=agent_seed)
    rng = np.random.default_rng(episode_seed)
    for _ in range(steps):
        mask = env.unwrapped.action_masks()
        action, _ = agent.predict(obs)  # the agent sees (and updates its state on) every state ...
        assert mask[int(action)], f"{name} chose invalid action {int(action)} with mask {mask}"
        obs, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(mask))))  # ... random play moves on
        if terminated or truncated:
            return
    action, _ = agent.predict(obs)
    assert env.unwrapped.action_masks()[int(action)]
