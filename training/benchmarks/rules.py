"""Placement rules' speed: decisions per second on the rules scenario with its rules and without them.

The same episodes of ``fleet30-rules`` (30 nodes, ~300 jobs, :mod:`digital_twin.placement`) are
played by a first-fit driver in the twin (building each twin, which compiles its rules, timed
apart), and by uniformly random valid actions through ``gymnasium.make`` (resets included),
once with the scenario's ``placement`` section and once without it, in turns; the ratios are
medians over the pairs (a machine's drift cancels within a pair).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import gymnasium as gym
import numpy as np

import scenarios
from aco_env.registration import CLUSTER_SCHEDULING_ID
from digital_twin import DigitalTwin, TwinSpec
from training.benchmarks.env import random_steps_per_s

RULES_SCENARIO = "fleet30-rules"


def bench_rules(episodes: int = 5, env_steps: int = 5_000, repeats: int = 3) -> dict[str, Any]:
    """Best-of-``repeats`` decisions/s with and without the rules, in the twin and through the env."""
    with_rules = scenarios.load(RULES_SCENARIO)
    without = dataclasses.replace(with_rules, placement=None)
    specs = [with_rules.make_spec(np.random.default_rng(seed)) for seed in range(episodes)]
    twin_on, twin_off, env_on, env_off = [], [], [], []
    for _ in range(repeats):
        twin_on.append(_twin_decisions_per_s(specs))
        twin_off.append(_twin_decisions_per_s([dataclasses.replace(spec, rules=None) for spec in specs]))
        env_on.append(_env_steps_per_s(with_rules, env_steps))
        env_off.append(_env_steps_per_s(without, env_steps))
    return {
        "scenario": RULES_SCENARIO,
        "episodes": episodes,
        "jobs": sum(len(spec.jobs) for spec in specs),
        "twin_decisions_per_s": max(run[0] for run in twin_on),
        "twin_decisions_per_s_without_rules": max(run[0] for run in twin_off),
        "twin_with_vs_without": float(np.median([a[0] / b[0] for a, b in zip(twin_on, twin_off, strict=True)])),
        "twin_build_ms": min(run[1] for run in twin_on),
        "twin_build_ms_without_rules": min(run[1] for run in twin_off),
        "env_steps": env_steps,
        "env_steps_per_s": max(env_on),
        "env_steps_per_s_without_rules": max(env_off),
        "env_with_vs_without": float(np.median([a / b for a, b in zip(env_on, env_off, strict=True)])),
    }


def _env_steps_per_s(scenario: scenarios.Scenario, steps: int) -> float:
    """Uniformly random valid actions for ``steps`` steps through ``gymnasium.make`` on ``scenario``."""
    return random_steps_per_s(gym.make(CLUSTER_SCHEDULING_ID, scenario=scenario), steps, masked=True)[0]


def _twin_decisions_per_s(specs: list[TwinSpec]) -> tuple[float, float]:
    """First-fit through every episode of ``specs``: decisions per second of play, and ms to build a twin.

    Building a twin compiles the episode's rules (:mod:`digital_twin.sim.tables.rule_tables`): an
    env pays it once per episode, so it is timed apart from the play.
    """
    decisions, build_s, play_s = 0, 0.0, 0.0
    for spec in specs:
        started = time.perf_counter()
        twin = DigitalTwin(spec)
        built = time.perf_counter()
        twin.reset(np.random.default_rng(0))
        while not twin.done:
            twin.place(twin.feasible_mask().index(True))
            decisions += 1
        build_s += built - started
        play_s += time.perf_counter() - built
    return decisions / play_s, 1000.0 * build_s / len(specs)
