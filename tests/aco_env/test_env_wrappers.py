"""Wrappers and vector envs people expect, and short SB3 learning runs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import FlattenObservation, RecordEpisodeStatistics

import aco_env  # noqa: F401  (registers the ids)
from aco_env.observation import JOB_FEATURES, NODE_FEATURES
from aco_env.registration import FLEET5_ID


def _first_valid(obs: dict) -> int:
    return int(np.flatnonzero(obs["action_mask"])[0])


def test_flatten_and_episode_statistics__work_together() -> None:
    """FlattenObservation gives a flat box; RecordEpisodeStatistics reports the episode return."""
    env = RecordEpisodeStatistics(FlattenObservation(gym.make(FLEET5_ID)))
    obs, _ = env.reset(seed=0)
    assert obs.ndim == 1 and env.observation_space.contains(obs)
    total = 0.0
    while True:
        mask = env.unwrapped.action_masks()
        obs, reward, terminated, truncated, info = env.step(int(np.flatnonzero(mask)[-2 if mask[:-1].any() else -1]))
        total += reward
        if terminated or truncated:
            break
    assert info["episode"]["r"] == pytest.approx(total)


def test_sb3_monitor_and_dummy_vec_env__step_through_an_episode() -> None:
    """Monitor + DummyVecEnv run to an episode end and auto-reset."""
    monitor = pytest.importorskip("stable_baselines3.common.monitor")
    vec_env = pytest.importorskip("stable_baselines3.common.vec_env")
    vec = vec_env.DummyVecEnv([lambda: monitor.Monitor(gym.make(FLEET5_ID))])
    vec.seed(0)
    obs = vec.reset()
    for _ in range(400):
        action = np.array([int(np.flatnonzero(obs["action_mask"][0])[0])])
        obs, _, dones, infos = vec.step(action)
        if dones[0]:
            assert "episode" in infos[0] and "episode_metrics" in infos[0]
            break
    else:
        pytest.fail("no episode ended in 400 steps")


@pytest.mark.subprocess
def test_sb3_subproc_vec_env__runs_two_workers() -> None:
    """SubprocVecEnv with two spawned processes (the "module:id" form imports aco_env there)."""
    vec_env = pytest.importorskip("stable_baselines3.common.vec_env")
    vec = vec_env.SubprocVecEnv([lambda: gym.make(f"aco_env:{FLEET5_ID}") for _ in range(2)], start_method="spawn")
    try:
        obs = vec.reset()
        masks = np.stack(vec.env_method("action_masks"))
        assert masks.shape == (2, 6)
        actions = np.array([int(np.flatnonzero(m)[0]) for m in masks])
        obs, rewards, _, _ = vec.step(actions)
        assert obs["nodes"].shape == (2, 5, len(NODE_FEATURES)) and rewards.shape == (2,)
    finally:
        vec.close()


@pytest.mark.parametrize(
    "vector_cls", [gym.vector.SyncVectorEnv, pytest.param(gym.vector.AsyncVectorEnv, marks=pytest.mark.subprocess)]
)
def test_gymnasium_vector_envs__autoreset_next_step(vector_cls: type) -> None:
    """Gymnasium's vector envs run with the declared NEXT_STEP autoreset mode."""
    envs = vector_cls([lambda: gym.make(FLEET5_ID) for _ in range(2)])
    try:
        assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
        obs, _ = envs.reset(seed=[0, 1])
        for _ in range(5):
            actions = np.array([_first_valid({"action_mask": m}) for m in obs["action_mask"]])
            obs, rewards, _, _, _ = envs.step(actions)
        assert obs["job"].shape == (2, len(JOB_FEATURES)) and rewards.dtype == np.float64
    finally:
        envs.close()


@pytest.mark.training
def test_maskable_ppo__learns_a_few_thousand_steps() -> None:
    """sb3-contrib MaskablePPO trains on Fleet5 through action_masks() without error."""
    from sb3_contrib import MaskablePPO

    model = MaskablePPO("MultiInputPolicy", gym.make(FLEET5_ID), n_steps=512, batch_size=128,
                        n_epochs=2, seed=0, device="cpu")
    model.learn(total_timesteps=2048)
    assert model.num_timesteps >= 2048


@pytest.mark.training
def test_ppo__learns_a_few_thousand_steps() -> None:
    """Plain PPO trains on Fleet5 (invalid actions are penalised, not fatal)."""
    from stable_baselines3 import PPO

    model = PPO("MultiInputPolicy", gym.make(FLEET5_ID), n_steps=512, batch_size=128,
                n_epochs=2, seed=0, device="cpu")
    model.learn(total_timesteps=2048)
    assert model.num_timesteps >= 2048
