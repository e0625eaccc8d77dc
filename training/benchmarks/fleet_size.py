"""The env at every fleet size: its step against the twin's decision, its memory, a first-fit episode, in CPU time.

For each scenario (the default 5-node fleet, and the 1,523- and 4,278-node GPU fleets when
their data is present), in this process, with the scenario's data read before anything is timed:

* ``twin_us_per_decision``: the twin alone, driven by first-fit (no env, no agent), CPU
  microseconds per decision over the first ``decisions`` decisions of the episodes of seeds 0,
  1, ... (building and resetting a twin not timed);
* ``env_us_per_step``: the env (:class:`aco_env.ClusterSchedulingEnv`) on the same episodes and
  the same decisions, each action the first valid one of ``obs["action_mask"]`` (its ``argmax``;
  resets not timed);
* ``env_vs_twin``: the median, over ``repeats`` pairs measured in turns (twin, env, twin, ...),
  of the env's step cost over the twin's decision cost: what the env adds to the physics;
* ``env_kb_per_node``: what one env holds after ``reset`` and 200 steps (tracemalloc's current
  size; the scenario's data read before, but every table derived from it built by this first
  env), per node; ``env_peak_kb_per_node`` its peak;
* ``first_fit_decisions_per_cpu_s``: a whole first-fit episode through the env and the
  registered ``first-fit`` agent (which reads :meth:`~aco_env.ClusterSchedulingEnv.cluster_view`),
  ``reset`` included, decisions per CPU second (best of ``repeats``);
* ``reset_us``: the env's ``reset`` (a new episode of the scenario, seeds 1, 2, ...), CPU
  microseconds, best of ``repeats`` means.

Every time is CPU time (``time.process_time``): a shared machine's other load does not count.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from typing import Any

import numpy as np

import scenarios
from aco_env import ClusterSchedulingEnv
from agents import make_agent
from digital_twin import native
from digital_twin.scenario import Scenario
from training.evaluation.rollout import play_episode

SCENARIOS = ("fleet5-synthetic", "openb1523-alibaba2023", "spotgpu4278-alibaba2026")
"""The fleets measured: 5, 1,523 and 4,278 nodes."""


def twin_cpu_per_decision(scenario: Scenario, decisions: int, seed: int = 0) -> tuple[float, int]:
    """CPU seconds per decision of the twin alone under first-fit over ``decisions`` decisions.

    Episodes of seeds ``seed``, ``seed + 1``, ... until that many decisions are made; building
    and resetting each episode's twin is not timed.
    """
    made, cpu_s = 0, 0.0
    while made < decisions:
        rng = np.random.default_rng(seed)
        twin = scenario.twin(scenario.make_spec(rng))
        twin.reset(rng)
        started = time.process_time()
        while not twin.done and made < decisions:
            mask = twin.feasible_mask()
            twin.place(mask.index(True))
            made += 1
        cpu_s += time.process_time() - started
        seed += 1
    return cpu_s / made, made


def env_cpu_per_step(env: ClusterSchedulingEnv, decisions: int, seed: int = 0) -> tuple[float, int]:
    """CPU seconds per step of ``env`` under first-fit from the observation's mask, over ``decisions`` steps.

    Episodes of seeds ``seed``, ``seed + 1``, ... (their resets are not timed).
    """
    made, cpu_s = 0, 0.0
    while made < decisions:
        observation, _ = env.reset(seed=seed)
        started = time.process_time()
        while made < decisions:
            action = int(observation["action_mask"].argmax())  # the first valid action (defer, the last, always is)
            observation, _, terminated, truncated, _ = env.step(action)
            made += 1
            if terminated or truncated:
                break
        cpu_s += time.process_time() - started
        seed += 1
    return cpu_s / made, made


def env_memory_kb(scenario: Scenario, decisions: int) -> tuple[float, float]:
    """``(held, peak)`` KB of traced Python allocations of one env built, reset and stepped ``decisions`` times."""
    gc.collect()
    tracemalloc.start()
    try:
        env = ClusterSchedulingEnv(scenario)
        env_cpu_per_step(env, decisions)
        gc.collect()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del env
    return held / 1024.0, peak / 1024.0


def first_fit_episode(scenario: Scenario, seed: int = 0) -> tuple[float, int]:
    """``(CPU seconds, decisions)`` of one whole first-fit episode (agent and env, reset included)."""
    env = ClusterSchedulingEnv(scenario)
    agent = make_agent("first-fit", env)
    started = time.process_time()
    result = play_episode(env, agent, seed)
    return time.process_time() - started, int(result.metrics["decisions"])


def reset_cpu_us(env: ClusterSchedulingEnv, resets: int) -> float:
    """Mean CPU microseconds of ``resets`` resets of ``env`` on seeds 1, 2, ..."""
    started = time.process_time()
    for seed in range(1, resets + 1):
        env.reset(seed=seed)
    return (time.process_time() - started) / resets * 1e6


def bench_fleet_size(
    scenario_names: tuple[str, ...] = SCENARIOS,
    decisions: int = 3000,
    repeats: int = 3,
    resets: int = 200,
    episodes: bool = True,
) -> dict[str, Any]:
    """One row per scenario whose data is present (the module docstring says what); the others in ``skipped``."""
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for name in scenario_names:
        scenario = scenarios.load(name)
        if scenario.missing_data():
            skipped.append(name)
            continue
        scenario.make_spec(np.random.default_rng(0))  # the data read (and cached) before anything is timed
        held_kb, peak_kb = env_memory_kb(scenario, min(decisions, 200))  # the first env: it builds every table
        env = ClusterSchedulingEnv(scenario)
        twin_runs, env_runs = [], []
        for _ in range(repeats):
            twin_runs.append(twin_cpu_per_decision(scenario, decisions))
            env_runs.append(env_cpu_per_step(env, decisions))
        row: dict[str, Any] = {
            "scenario": name,
            "nodes": env.n_nodes,
            "decisions": twin_runs[0][1],
            "twin_us_per_decision": min(run[0] for run in twin_runs) * 1e6,
            "env_us_per_step": min(run[0] for run in env_runs) * 1e6,
            "env_vs_twin": float(np.median([e[0] / t[0] for e, t in zip(env_runs, twin_runs, strict=True)])),
            "env_kb_per_node": held_kb / env.n_nodes,
            "env_peak_kb_per_node": peak_kb / env.n_nodes,
            "reset_us": min(reset_cpu_us(env, max(1, resets // max(1, env.n_nodes // 100))) for _ in range(repeats)),
        }
        if episodes:
            runs = [first_fit_episode(scenario) for _ in range(repeats if env.n_nodes < 100 else 1)]
            cpu_s, made = min(runs)
            row["first_fit_decisions_per_cpu_s"] = made / cpu_s
            row["first_fit_episode_decisions"] = made
        rows.append(row)
    return {"runs": rows, "skipped": skipped, "twin_core": native.status, "clock": "cpu"}

