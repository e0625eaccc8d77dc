"""The trainer's in-process VecEnv (the batched env behind SB3's interface) gives what B monitored single envs give."""

from __future__ import annotations

import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

import scenarios
from training.learning.batched_vec_env import BatchedVecEnv
from training.learning.config import TrainConfig
from training.learning.training_envs import make_env_fn, make_vec_env


@pytest.mark.parametrize("random_start_hour", [False, True])
def test_batched_vec_env__steps_as_a_dummy_vec_env_of_monitored_envs(random_start_hour: bool) -> None:
    """Observations, masks, rewards, dones, metrics, terminal observations, truncation flags and episode returns."""
    config = TrainConfig(n_envs=4, random_start_hour=random_start_hour)
    scenario = scenarios.load("fleet5-synthetic")
    batched = make_vec_env(config, [scenario, scenarios.load("fleet5-utility")], seed=7)
    assert isinstance(batched, BatchedVecEnv)
    tasks = [scenario, scenarios.load("fleet5-utility")]
    dummy = DummyVecEnv([make_env_fn(config, tasks[rank % 2], rank, 7) for rank in range(4)])
    dummy.seed(7)
    obs_a, obs_b = batched.reset(), dummy.reset()
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(400):
        assert all(np.array_equal(obs_a[key], obs_b[key]) for key in obs_a)
        masks = np.stack(batched.env_method("action_masks"))
        assert np.array_equal(masks, np.stack(dummy.env_method("action_masks")))
        actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in masks])
        obs_a, rewards_a, dones_a, infos_a = batched.step(actions)
        obs_b, rewards_b, dones_b, infos_b = dummy.step(actions)
        assert np.array_equal(rewards_a, rewards_b) and rewards_a.dtype == rewards_b.dtype
        assert np.array_equal(dones_a, dones_b)
        for a, b in zip(infos_a, infos_b, strict=True):
            assert a.get("episode_metrics") == b.get("episode_metrics")
            if "terminal_observation" in b:
                ended += 1
                final_a, final_b = a["terminal_observation"], b["terminal_observation"]
                assert all(np.array_equal(final_a[key], final_b[key]) for key in final_b)
                assert a["TimeLimit.truncated"] == b["TimeLimit.truncated"]
                assert (a["episode"]["r"], a["episode"]["l"]) == (b["episode"]["r"], b["episode"]["l"])
    assert ended >= 4
