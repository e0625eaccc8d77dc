"""Env throughput through ``gymnasium.make`` (default wrappers) next to CartPole-v1, same process."""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np

import aco_env  # noqa: F401  (registers the ids)


def _steps_per_s(env: gym.Env, steps: int, masked: bool, seed: int = 0) -> tuple[float, float]:
    """Uniformly random (valid, when ``masked``) actions for ``steps`` steps; (steps/s, sim s/s)."""
    rng = np.random.default_rng(seed)
    observation, _ = env.reset(seed=seed)
    n_actions = env.action_space.n
    sim_s = 0.0
    started = time.perf_counter()
    for _ in range(steps):
        if masked:
            valid = np.flatnonzero(observation["action_mask"])
            action = int(valid[int(rng.integers(len(valid)))])
        else:
            action = int(rng.integers(n_actions))
        observation, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            sim_s += info.get("sim_time_s", 0.0)
            observation, _ = env.reset()
    wall = time.perf_counter() - started
    return steps / wall, sim_s / wall


def bench_env(steps: int = 20_000, repeats: int = 3) -> dict[str, Any]:
    """Best-of-``repeats`` steps/s of ``aco_env/Fleet5-v0`` and ``CartPole-v1``, and their ratio."""
    ours = max((_steps_per_s(gym.make("aco_env/Fleet5-v0"), steps, masked=True) for _ in range(repeats)),
               key=lambda r: r[0])
    cartpole = max(_steps_per_s(gym.make("CartPole-v1"), steps, masked=False)[0] for _ in range(repeats))
    return {
        "env_steps_per_s": ours[0],
        "cartpole_steps_per_s": cartpole,
        "env_vs_cartpole": ours[0] / cartpole,
        "env_sim_seconds_per_wall_second": ours[1],
        "steps": steps,
    }
