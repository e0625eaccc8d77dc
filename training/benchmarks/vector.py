"""Vector envs of the default env against the bare env, in CPU time: Gymnasium's ``SyncVectorEnv`` and the batched env.

Random valid actions, resets included (each vector env's own autoreset), env steps per CPU
second; each ratio is the median, over ``repeats`` pairs measured in turns, of the vector env's
steps (``num_envs`` per call) per CPU second over the bare env's (``gym.make`` with its default
wrappers and ``info``):

* ``sync_vs_bare``: a ``SyncVectorEnv`` of ``n_envs`` ``aco_env/Fleet5`` envs with the default ``info``;
* ``sync_final_vs_bare``: the same with the vector-friendly ``info="final"``;
* ``batched_{B}_vs_bare``: :class:`aco_env.vector_env.BatchedClusterEnv` of ``B`` envs, for each
  ``B`` of ``batches`` (the trainer's 16, and larger: a batch still steps each twin and encodes each
  observation in Python, and once the envs' memory outgrows the CPU's caches a step costs more).
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np

import scenarios
from aco_env.registration import FLEET5_ID
from aco_env.vector_env import BatchedClusterEnv
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


def bench_vector(
    steps: int = 20_000, n_envs: int = 8, batches: tuple[int, ...] = (16, 64, 256), repeats: int = 3
) -> dict[str, Any]:
    """The vector envs against the bare env (module docstring)."""
    scenario = scenarios.load(gym.spec(FLEET5_ID).kwargs["scenario"])
    batched = [f"batched_{b}" for b in batches]
    runs: dict[str, list[float]] = {key: [] for key in ("bare", "sync", "sync_final", *batched)}
    for _ in range(repeats):
        runs["bare"].append(random_steps_per_s(gym.make(FLEET5_ID, scenario=scenario), steps, masked=True)[0])
        for key, info in (("sync", "full"), ("sync_final", "final")):
            make = [lambda info=info: gym.make(FLEET5_ID, scenario=scenario, info=info)] * n_envs
            sync = gym.vector.SyncVectorEnv(make)
            runs[key].append(vector_steps_per_cpu_s(sync, steps // n_envs))
            sync.close()
        for key, b in zip(batched, batches, strict=True):
            runs[key].append(vector_steps_per_cpu_s(BatchedClusterEnv(scenario, b), max(1, steps // b)))
    result: dict[str, Any] = {f"{key}_steps_per_cpu_s": max(values) for key, values in runs.items()}
    for key in ("sync", "sync_final", *batched):
        pairs = zip(runs[key], runs["bare"], strict=True)
        result[f"{key}_vs_bare"] = float(np.median([vector / bare for vector, bare in pairs]))
    result.update(n_envs=n_envs, batches=list(batches), clock="cpu")
    return result
