"""The oracle on the default scenario (fleet5-synthetic): exact replay, valid bound, solve times.

Run ``pytest -m slow tests/agents/oracle/test_oracle_fleet5.py -s`` for the seeds 0-4 table of both cost
models (solve times, gaps, proven optimality) that goes into docs/benchmarks.md.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import scenarios
from aco_env.env import ClusterSchedulingEnv
from aco_env.hindsight import hindsight_of
from agents.oracle import OracleAgent, solve_oracle

TOL = 1e-9


Chooser = Callable[[dict[str, np.ndarray]], int]


def _play(env: ClusterSchedulingEnv, seed: int, choose: Chooser) -> float:
    """Objective of an episode played by ``choose(obs) -> action``."""
    obs, _ = env.reset(seed=seed)
    done, info = False, {}
    while not done:
        obs, _, terminated, truncated, info = env.step(choose(obs))
        done = terminated or truncated
        assert not info["invalid_action"]
    return float(info["episode_metrics"]["objective_usd"])


def _first_valid(obs: dict[str, np.ndarray]) -> int:
    return int(np.flatnonzero(obs["action_mask"])[0])


def _cheapest_valid(env: ClusterSchedulingEnv) -> Chooser:
    prices = np.array([n.price_per_hour_usd for n in env.fleet])

    def choose(obs: dict[str, np.ndarray]) -> int:
        valid = np.flatnonzero(obs["action_mask"][:-1])
        return int(valid[np.argmin(prices[valid])]) if len(valid) else env.n_nodes

    return choose


def _oracle_episode(env: ClusterSchedulingEnv, seed: int, **options: object) -> tuple[float, OracleAgent]:
    agent = OracleAgent(env, **options)
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    done, info = False, {}
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.predict(obs)[0])
        done = terminated or truncated
        assert not info["invalid_action"]
    return float(info["episode_metrics"]["objective_usd"]), agent


@pytest.mark.heavy
def test_oracle__fleet5_replay_is_exact_and_heuristics_stay_above_the_bound() -> None:
    """Default episode (seed 0, prorated): replay == plan, and no heuristic beats the bound."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    replayed, agent = _oracle_episode(env, seed=0)
    result = agent.last_result
    assert result is not None
    print(
        f"\nfleet5-synthetic seed 0 prorated: oracle solve {result.solve_time_s:.2f} s "
        f"(plan {result.plan_program.solve_time_s:.2f} s, bound {result.bound_program.solve_time_s:.2f} s), "
        f"plan {result.plan_objective_usd:.6f} USD, bound {result.lower_bound_usd:.6f} USD, gap {result.gap:.2%}"
    )
    assert abs(replayed - result.plan_objective_usd) <= TOL
    assert result.plan_program.status == "optimal"
    assert result.lower_bound_usd <= result.plan_objective_usd + TOL
    for choose in (_first_valid, _cheapest_valid(env), lambda obs: env.n_nodes):
        assert _play(env, 0, choose) >= result.lower_bound_usd - TOL


@pytest.mark.heavy
def test_oracle__time_limited_solves_still_give_an_achievable_plan_and_a_valid_bound() -> None:
    """With a tiny time limit the fallbacks (greedy plan, weaker bound) keep both guarantees."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    replayed, agent = _oracle_episode(env, seed=1, time_limit_s=0.05)
    hurried = agent.last_result
    assert hurried is not None
    assert abs(replayed - hurried.plan_objective_usd) <= TOL
    full = solve_oracle(hindsight_of(env), time_limit_s=60.0)
    assert hurried.lower_bound_usd <= full.lower_bound_usd + TOL
    assert hurried.plan_objective_usd >= full.plan_objective_usd - TOL
    assert full.lower_bound_usd <= hurried.plan_objective_usd + TOL


@pytest.mark.slow
@pytest.mark.parametrize("cost_model", ["prorated", "active-nodes"])
def test_oracle__fleet5_seeds_0_to_4_report(cost_model: str) -> None:
    """Seeds 0-4: replay == plan and bound <= plan for each; prints times, gaps and proofs."""
    env = ClusterSchedulingEnv(scenarios.load("fleet5-synthetic").with_settings(cost_model=cost_model))
    print(f"\nfleet5-synthetic, {cost_model}, 60 s limit per solve")
    print("seed  plan_usd   bound_usd  gap      status          plan_s  bound_s  plan_program")
    for seed in range(5):
        replayed, agent = _oracle_episode(env, seed=seed, time_limit_s=60.0)
        r = agent.last_result
        assert r is not None
        print(
            f"{seed:>4}  {r.plan_objective_usd:9.6f}  {r.lower_bound_usd:9.6f}  {r.gap:7.2%}  {r.status:<14}  "
            f"{r.plan_program.solve_time_s:6.1f}  {r.bound_program.solve_time_s:7.1f}  {r.plan_program.status}"
        )
        assert abs(replayed - r.plan_objective_usd) <= TOL
        assert r.lower_bound_usd <= r.plan_objective_usd + TOL
