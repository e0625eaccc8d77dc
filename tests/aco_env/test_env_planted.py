"""The env keeps each planted episode it draws (``planted()``, ``planted_action()``): hindsight, not observed."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils import seeding

import aco_env  # noqa: F401  (registers the ids)
from aco_env import ClusterSchedulingEnv
from aco_env.hindsight import hindsight_of, planted_action_of, planted_of, scenario_of
from aco_env.registration import FLEET5_ID, PLANTED5_ID, PLANTED50_ID
from aco_env.types import StepInfo


def test_planted__none_off_planted_scenarios() -> None:
    """On the default scenario there is no planted schedule and no planted action."""
    env = gym.make(FLEET5_ID).unwrapped
    env.reset(seed=0)
    assert planted_of(env) is None and planted_action_of(env) is None


def test_planted__needs_a_reset() -> None:
    """Before the first reset both accessors raise gymnasium's ResetNeeded."""
    env = ClusterSchedulingEnv("planted5")
    with pytest.raises(gym.error.ResetNeeded):
        planted_of(env)
    with pytest.raises(gym.error.ResetNeeded):
        planted_action_of(env)


@pytest.mark.parametrize("seed", range(4))
def test_planted__is_the_episode_the_env_plays_drawn_once(seed: int) -> None:
    """planted() is the scenario's draw for the seed, the twin plays its spec, and nothing else was drawn."""
    env = gym.make(PLANTED5_ID).unwrapped
    env.reset(seed=seed)
    episode = planted_of(env)
    rng = seeding.np_random(seed)[0]
    expected = scenario_of(env).planted_episode(rng)
    assert episode.planted_nodes == expected.planted_nodes and episode.optimum_usd == expected.optimum_usd
    assert hindsight_of(env).spec is episode.spec  # the episode played is the one kept, not a second draw
    assert env.np_random.bit_generator.state == rng.bit_generator.state  # one draw, as make_spec makes


@pytest.mark.parametrize(("env_id", "seeds"), [(PLANTED5_ID, range(5)), (PLANTED50_ID, range(2))])
def test_planted_action__followed_is_valid_at_every_decision_and_ends_at_the_optimum(env_id: str, seeds: range) -> None:
    """Playing planted_action(): each is the current job's planted node and valid; the objective is the optimum."""
    env = gym.make(env_id).unwrapped
    for seed in seeds:
        env.reset(seed=seed)
        episode = planted_of(env)
        ids = [job.job_id for job in episode.spec.jobs]
        while True:
            action = planted_action_of(env)
            assert action == episode.planted_nodes[ids.index(env.cluster_view().job.job_id)]
            assert env.action_masks()[action]
            _, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        assert planted_action_of(env) is None  # the episode is over
        assert info["episode_metrics"]["objective_usd"] == pytest.approx(episode.optimum_usd, rel=1e-9)
        assert info["episode_metrics"]["rejected_jobs"] == 0 and info["episode_metrics"]["failed_jobs"] == 0


def test_planted__is_neither_in_the_observation_nor_in_info() -> None:
    """A planted env's observation keys and shapes are the spaces'; info has StepInfo's keys only."""
    env = gym.make(PLANTED5_ID)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    for _ in range(10):
        assert set(info) <= set(StepInfo.__annotations__)
        obs, _, _, _, info = env.step(planted_action_of(env))
        assert env.observation_space.contains(obs)


def test_planted__an_unpickled_env_keeps_the_episode_and_plays_it_on() -> None:
    """Mid-episode, a pickled copy has the same planted schedule and answers the same planted actions."""
    env = gym.make(PLANTED5_ID).unwrapped
    env.reset(seed=2)
    for _ in range(7):
        env.step(planted_action_of(env))
    copy = pickle.loads(pickle.dumps(env))
    assert planted_of(copy).planted_nodes == planted_of(env).planted_nodes
    for _ in range(20):
        action = planted_action_of(env)
        assert planted_action_of(copy) == action
        obs, *_ = env.step(action)
        copy_obs, *_ = copy.step(action)
        np.testing.assert_array_equal(obs["nodes"], copy_obs["nodes"])
