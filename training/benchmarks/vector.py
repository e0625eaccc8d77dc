"""Vector envs of the default env: Gymnasium's ``SyncVectorEnv`` of 8 and the bare env, in CPU time.

Random valid actions (resets included, the vector env's own autoreset), env steps per CPU
second: ``sync_vs_bare`` is the median, over ``repeats`` pairs measured in turns, of a
``SyncVectorEnv`` of ``n_envs`` ``aco_env/Fleet5`` envs' steps (``n_envs`` per call) per CPU
second over the bare env's.
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np

import scenarios
from aco_env.registration import FLEET5_ID
from training.benchmarks.env import random_steps_per_s


def _random_valid(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random valid action per row of ``(B, A)`` masks."""
    scores = rng.random(masks.shape) * (masks > 0)
    return scores.argmax(axis=1)


def vector_steps_per_cpu_s(venv: gym.vector.VectorEnv, calls: int, seed: int = 0) -> float:
    """Env steps (``num_envs`` per call) per CPU second under random valid actions."""
    rng = np.random.default_rng(seed)
    observation, _ = venv.reset(seed=seed)
    started = time.process_time()
    for _ in range(calls):
        observation, *_ = venv.step(_random_valid(observation["action_mask"], rng))
    return calls * venv.num_envs / (time.process_time() - started)


def bench_vector(steps: int = 20_000, n_envs: int = 8, repeats: int = 3) -> dict[str, Any]:
    """``SyncVectorEnv`` of ``n_envs`` Fleet5 envs against the bare env (module docstring)."""
    scenario = scenarios.load(gym.spec(FLEET5_ID).kwargs["scenario"])
    bare_runs, sync_runs = [], []
    for _ in range(repeats):
        bare_runs.append(random_steps_per_s(gym.make(FLEET5_ID, scenario=scenario), steps, masked=True)[0])
        sync = gym.vector.SyncVectorEnv([lambda: gym.make(FLEET5_ID, scenario=scenario)] * n_envs)
        sync_runs.append(vector_steps_per_cpu_s(sync, steps // n_envs))
        sync.close()
    return {
        "bare_steps_per_cpu_s": max(bare_runs),
        "sync_steps_per_cpu_s": max(sync_runs),
        "sync_vs_bare": float(np.median([s / b for s, b in zip(sync_runs, bare_runs, strict=True)])),
        "n_envs": n_envs,
        "clock": "cpu",
    }
