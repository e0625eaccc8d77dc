"""Training throughput: env steps (samples) per CPU second of ``aco-env train`` next to SB3 PPO on CartPole-v1.

Four learners, each timed in CPU time (``time.process_time``: a shared machine's other work does
not count) over the same number of steps after a warm-up rollout, in this process, in turns (so
a machine whose speed drifts slows them alike):

* ``cartpole``: SB3 ``PPO("MlpPolicy", "CartPole-v1")`` with SB3's defaults (one env, 2,048-step
  rollouts, minibatch 64, 10 epochs): the reference;
* ``cartpole_same_shape``: the same on CartPole with ``aco-env run``'s rollout shape (16 envs x
  512 steps, minibatch 1,024, 4 epochs): what the rollout shape alone costs;
* ``flat_one_env``: the flat policy on one env: MaskablePPO with SB3's ``MultiInputPolicy`` on
  one env behind SB3's ``Monitor`` with the env's full ``info`` (2,048-step rollouts, minibatch
  256, 4 epochs);
* ``run``: what ``aco-env run`` trains (:mod:`training.learning.main_job`): the set policy and
  ``RUN_ROLLOUT`` (16 envs batched in this process, 512 steps each per rollout, minibatch
  1,024, 4 epochs), their ``info`` the final metrics only (``EnvConfig(info="final")``, the
  batched env: :func:`training.learning.training_envs.make_vec_env`).

Each learner includes its policy updates, as ``aco-env train`` does; DAgger and evaluation are
not included. One torch thread.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

import scenarios
from aco_env.registration import CLUSTER_SCHEDULING_ID
from digital_twin.scenario import Scenario
from training.learning.config import TrainConfig
from training.learning.main_job import RUN_ROLLOUT
from training.learning.train import build_model
from training.learning.training_envs import make_vec_env

WARM_UP_STEPS = 2048


def bench_train(steps: int = 16_384, repeats: int = 2) -> dict[str, Any]:
    """Best-of-``repeats`` env steps/s of each learner; ratios against CartPole and the flat one-env setup."""
    torch.set_num_threads(1)
    scenario = scenarios.load(scenarios.DEFAULT)
    configs = {
        "flat_one_env": TrainConfig(policy="mlp", n_envs=1, n_steps=2048, progress_bar=False),
        "run": TrainConfig(**RUN_ROLLOUT, progress_bar=False),
    }
    best: dict[str, float] = {"cartpole": 0.0, "cartpole_same_shape": 0.0, **dict.fromkeys(configs, 0.0)}
    with tempfile.TemporaryDirectory() as logs:
        for _ in range(repeats):
            best["cartpole"] = max(best["cartpole"], _cartpole_steps_per_s(steps, {}))
            best["cartpole_same_shape"] = max(best["cartpole_same_shape"], _cartpole_steps_per_s(steps, RUN_ROLLOUT))
            for name, config in configs.items():
                venv = _flat_one_env(config, scenario) if name == "flat_one_env" else make_vec_env(config, scenario)
                try:
                    model = build_model(config, venv, Path(logs))
                    best[name] = max(best[name], _steps_per_s(model, steps))
                finally:
                    venv.close()
    return {
        "steps": steps,
        "cartpole_ppo_steps_per_s": best["cartpole"],
        "cartpole_same_shape_steps_per_s": best["cartpole_same_shape"],
        "flat_one_env_steps_per_s": best["flat_one_env"],
        "run_steps_per_s": best["run"],
        "run_n_envs": RUN_ROLLOUT["n_envs"],
        "run_vs_flat_one_env": best["run"] / best["flat_one_env"],
        "run_vs_cartpole_ppo": best["run"] / best["cartpole"],
        "run_vs_cartpole_same_shape": best["run"] / best["cartpole_same_shape"],
        "flat_one_env_vs_cartpole_ppo": best["flat_one_env"] / best["cartpole"],
    }


def _flat_one_env(config: TrainConfig, scenario: Scenario) -> VecEnv:
    """One env behind SB3's ``Monitor``: ``Monitor(gym.make(...))``, its ``info`` in full."""
    env = Monitor(gym.make(f"aco_env:{CLUSTER_SCHEDULING_ID}", scenario=scenario, reward_scale=config.reward_scale))
    env.reset(seed=config.seed)
    return DummyVecEnv([lambda: env])


def _cartpole_steps_per_s(steps: int, shape: dict[str, Any]) -> float:
    """SB3 PPO on CartPole-v1: SB3's defaults for an empty ``shape``, else its envs, rollout and minibatch sizes."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env as sb3_vec_env

    n_envs = shape.get("n_envs", 1)
    options = {key: shape[key] for key in ("n_steps", "batch_size") if key in shape}
    if shape:
        options["n_epochs"] = TrainConfig().n_epochs
    venv = sb3_vec_env("CartPole-v1", n_envs=n_envs, seed=0)
    model = PPO("MlpPolicy", venv, seed=0, device="cpu", verbose=0, **options)
    return _steps_per_s(model, steps, warm_up=max(WARM_UP_STEPS, n_envs * options.get("n_steps", 0)))


def _steps_per_s(model: Any, steps: int, warm_up: int = WARM_UP_STEPS) -> float:
    """Steps per CPU second of ``model.learn`` over ``steps`` steps, after a warm-up of ``warm_up`` steps."""
    model.learn(warm_up)
    started = time.process_time()
    model.learn(steps, reset_num_timesteps=False)
    return float(steps / (time.process_time() - started))


__all__ = ["bench_train"]
