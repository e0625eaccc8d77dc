"""On planted episodes no agent scores below the planted optimum (below it: a bug in the agent or the certificate)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils import seeding

from aco_env.registration import PLANTED5_ID
from agents import make_agent
from tests.helpers import online_agent_params, run_episode

ONLINE = [param for param in online_agent_params() if param.values[0] != "lookahead"]
"""Every registered online agent but the lookahead (about 10 s per planted episode: two seeds, below)."""
SEEDS = range(20)


def optimum_usd(env: gym.Env, seed: int) -> float:
    """The planted optimum of ``env``'s episode for ``seed`` (drawn as the env draws it)."""
    return env.unwrapped.scenario.planted_episode(seeding.np_random(seed)[0]).optimum_usd


@pytest.mark.parametrize("agent", ONLINE)
def test_online_agent__never_below_the_planted_optimum(agent: str) -> None:
    """Twenty planted5 episodes per agent: objective >= the planted optimum, and the agents are above it."""
    env = gym.make(PLANTED5_ID)
    player = make_agent(agent, env)
    gaps = []
    for seed in SEEDS:
        objective = run_episode(env, player, seed)["objective_usd"]
        optimum = optimum_usd(env, seed)
        assert objective >= optimum * (1.0 - 1e-9), f"{agent}, seed {seed}: {objective} < the planted {optimum}"
        gaps.append(objective / optimum - 1.0)
    assert np.mean(gaps) > 0.0  # the planted episodes are not solved by the heuristic for free


@pytest.mark.heavy
@pytest.mark.parametrize("agent", ["lookahead", "lookahead-clairvoyant"])
def test_lookahead__never_below_the_planted_optimum(agent: str) -> None:
    """The lookahead and its clairvoyant twin (hindsight, yet a policy: the optimum bounds it), two episodes."""
    env = gym.make(PLANTED5_ID)
    player = make_agent(agent, env)
    for seed in (0, 1):
        assert run_episode(env, player, seed)["objective_usd"] >= optimum_usd(env, seed) * (1.0 - 1e-9)
