"""Env throughput through ``gymnasium.make`` (default wrappers) next to CartPole-v1, same process, in CPU time."""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np

import scenarios
from aco_env.registration import FLEET5_ID
from digital_twin import native
from training.benchmarks.pure_python import compiled_core_is_running, in_pure_python


def random_steps_per_s(env: gym.Env, steps: int, masked: bool, seed: int = 0) -> tuple[float, float]:
    """Uniformly random (valid, when ``masked``) actions for ``steps`` steps; (steps, sim s) per CPU second."""
    rng = np.random.default_rng(seed)
    observation, _ = env.reset(seed=seed)
    n_actions = env.action_space.n
    sim_s = 0.0
    started = time.process_time()
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
    cpu_s = time.process_time() - started
    return steps / cpu_s, sim_s / cpu_s


def bench_env(steps: int = 20_000, repeats: int = 5, compare_pure_python: bool = True) -> dict[str, Any]:
    """Best-of-``repeats`` steps/s of ``aco_env/Fleet5-v6`` and ``CartPole-v1``, and their ratio.

    The two are measured in turns (ours, CartPole, ours, ...) and the ratio is the median of
    the ratios of each pair, so that a machine whose speed drifts during the benchmark slows
    both sides of a pair alike and the ratio stays meaningful. The scenario is loaded once.
    With the twin's compiled core running and ``compare_pure_python``, the same is measured
    on the pure-Python twin in a child process (``pure_python``).
    """
    scenario = scenarios.load(gym.spec(FLEET5_ID).kwargs["scenario"])  # the id's own scenario, read once
    ours_runs, cartpole_runs = [], []
    for _ in range(repeats):
        ours_runs.append(random_steps_per_s(gym.make(FLEET5_ID, scenario=scenario), steps, masked=True))
        cartpole_runs.append(random_steps_per_s(gym.make("CartPole-v1"), steps, masked=False)[0])
    ours = max(ours_runs, key=lambda r: r[0])
    pair_ratios = [run[0] / cartpole for run, cartpole in zip(ours_runs, cartpole_runs, strict=True)]
    result: dict[str, Any] = {
        "env_steps_per_s": ours[0],
        "cartpole_steps_per_s": max(cartpole_runs),
        "env_vs_cartpole": float(np.median(pair_ratios)),
        "env_sim_seconds_per_wall_second": ours[1],
        "steps": steps,
        "twin_core": native.status,
    }
    if compare_pure_python and compiled_core_is_running():
        result["pure_python"] = in_pure_python(
            "training.benchmarks.env:bench_env", steps=steps, repeats=repeats, compare_pure_python=False
        )
    return result
