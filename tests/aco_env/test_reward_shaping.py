"""Reward shaping by the committed cost: a placement carries its run's cost at once; the return is unchanged."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import aco_env  # noqa: F401  (registers the ids)
from aco_env import EnvConfig
from aco_env.registration import CLUSTER_SCHEDULING_ID, FLEET5_ID
from aco_env.types import COMMITTED_COST
from tests.toy3 import TOY3_ACTIONS


def _rewards(env: gym.Env, seed: int, actions: list[int] | None = None) -> tuple[list[float], list[int], dict]:
    """Rewards, actions and the final metrics of an episode: ``actions`` replayed, else random valid ones (seed 0)."""
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=seed)
    rewards, played = [], []
    while True:
        action = actions[len(played)] if actions is not None else int(rng.choice(np.flatnonzero(obs["action_mask"])))
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        played.append(action)
        if terminated or truncated:
            return rewards, played, info["episode_metrics"]


def test_toy3__each_placement_is_charged_its_run_at_once() -> None:
    """At t = 0, A on n2 commits 0.0002 $/s x 1800 s (all of n2's 2 cores) = 0.36 USD, then B on n1
    0.00002 $/s x 2/4 cores x 3000 s = 0.03 USD and, n1 being spot (interrupted with probability 0.1
    an hour), the eviction penalty 0.3 USD times 1 - 0.9 ** (3000 / 3600); no time passes between
    them, so nothing else is rewarded. The return is still the hand-computed objective's minus
    (tests/toy3.py)."""
    env = gym.make(CLUSTER_SCHEDULING_ID, scenario="toy3", reward_shaping=COMMITTED_COST)
    nodes = len(env.unwrapped.fleet)
    actions = [nodes if action is None else action for action in TOY3_ACTIONS]
    rewards, _, metrics = _rewards(env, 0, actions)
    assert rewards[:2] == pytest.approx([-0.36, -(0.03 + 0.3 * (1 - 0.9 ** (3000 / 3600)))], abs=1e-12)
    assert sum(rewards) == pytest.approx(-1.935, abs=1e-12)
    assert metrics["objective_usd"] == pytest.approx(1.935, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fleet5__shaping_keeps_the_episode_and_its_return(seed: int) -> None:
    """The same actions play the same episode shaped or not; the shaped return is minus the objective x scale,
    and the rewards differ step by step (the committed cost moves at every placement)."""
    plain, actions, metrics = _rewards(gym.make(FLEET5_ID, reward_scale=4.0), seed)
    shaped_env = gym.make(FLEET5_ID, reward_scale=4.0, reward_shaping=COMMITTED_COST)
    shaped, _, shaped_metrics = _rewards(shaped_env, seed, actions)
    assert shaped_metrics == metrics
    assert sum(shaped) == pytest.approx(-4.0 * metrics["objective_usd"], rel=1e-9, abs=1e-9)
    assert sum(plain) == pytest.approx(sum(shaped), rel=1e-9, abs=1e-9)
    assert sum(a != pytest.approx(b, abs=1e-12) for a, b in zip(plain, shaped, strict=True)) > len(plain) // 2


def test_config__refuses_an_unknown_shaping() -> None:
    with pytest.raises(ValueError, match="reward_shaping must be one of"):
        EnvConfig(reward_shaping="potential")
