"""The oracle on the hand-worked toy instance (tests/toy3.py, scenarios/toy3.yaml): known optimum."""

from __future__ import annotations

import numpy as np
import pytest

import agents
from aco_env.env import ClusterSchedulingEnv
from agents.oracle import OracleAgent, OracleResult, solve_oracle
from digital_twin import DigitalTwin
from tests.toy3 import toy3_spec


def _solve(cost_model: str) -> OracleResult:
    twin = DigitalTwin(toy3_spec(cost_model))
    twin.reset(np.random.default_rng(0))
    return solve_oracle(twin.hindsight())


@pytest.mark.parametrize(("cost_model", "optimum_usd"), [("prorated", 0.424), ("active-nodes", 0.544)])
def test_oracle__toy3_plan_and_bound_equal_the_hand_computed_optimum(cost_model: str, optimum_usd: float) -> None:
    """Plan and bound both equal the optimum worked out by hand below, for both cost models.

    Nodes: n0 x86 4c $0.0001/s (bg 50 %), n1 arm spot 4c 16 GB $0.00002/s (bg 10 %, interrupted
    at 1200 s, down until 1800 s), n2 x86 2c 8 GB $0.0002/s (bg 80 %). SLA threshold 90 %, so
    a node may carry at most 1.6 / 3.2 / 0.2 cores at a tick without a violation. Ticks at 0,
    600, ..., 3000; TTL 900 s; weights SLA 0.1, QoS 0.2, eviction 0.3, deadline 0.4, rejection 0.5.
    None of the jobs is preemptible.

    * A (LC 2c, 0 s, 1800 s, must start before 900): it spans at least two ticks. On n0 its own
      2 cores give 50 + 50 = 100 % > 90 %: SLA 0.1 + cost 0.00005 $/s x 1800 = 0.09 -> 0.19.
      n2: SLA + 0.36; n1: QoS 0.2 + it runs into the 1200 s interruption (eviction 0.3);
      rejection 0.5. Best: n0, 0.19, whenever it starts.
    * B (batch 2c, 0 s, 3000 s): n1 always fails (it must start before 900 and runs past
      1200: >= 0.3), n2 costs 0.6, rejection 0.5; n0 costs 0.00005 x 3000 = 0.15 (starting at
      0, 300 or 600 it ends by the 3600 s horizon). Best: n0, 0.15.
    * D (batch 4c, 0 s, 600 s, deadline 200): the only decision point by 200 s is 0 s; a whole
      node: n1 at 0 costs 0.00002 x 600 = 0.012 and ends at 600 < 1200. Best 0.012.
    * E (batch 4c 16 GB, 600 s, 600 s): needs a whole n0 or n1. n1 from 600 ends exactly at
      1200 (completion before the interruption at equal times): 0.012, and D has left n1 at 600.
    * C (LC 1c, 300 s, 600 s, start before 1200): n0 is full (A + B; putting A or B elsewhere
      costs more than C saves, and C cannot fit between them: A and B must start before 900 and
      C runs 600 s in [300, 1800)); n1 is busy (D, then E) and then down; so n2: 80 + 50 % is
      over the threshold at any tick C spans, and C spans one unless it starts exactly on a
      tick: at 600 it runs [600, 1200) and no tick is strictly inside. Cost 0.0001 x 600 = 0.06.

    prorated: 0.09 + 0.15 + 0.012 + 0.012 + 0.06 = 0.324 cost + 0.1 SLA (A) = 0.424.
    active-nodes (same placement is optimal): n0 busy 3000 s (B; A inside it) x 0.0001 = 0.3,
    n1 busy [0, 1200) x 0.00002 = 0.024, n2 busy [600, 1200) x 0.0002 = 0.12: 0.444 + 0.1 = 0.544.
    """
    result = _solve(cost_model)
    assert result.plan_objective_usd == pytest.approx(optimum_usd, abs=1e-9)
    assert result.lower_bound_usd == pytest.approx(optimum_usd, abs=1e-9)
    assert result.proven_optimal and result.status == "proven-optimal"
    assert result.plan_breakdown["sla_violations"] == 1
    assert result.plan_breakdown["qos_violations"] == result.plan_breakdown["evictions"] == 0
    plan = result.plan
    assert plan["A"] is not None and plan["A"][0] == 0
    assert plan["B"] is not None and plan["B"][0] == 0
    assert (plan["C"], plan["D"], plan["E"]) == ((2, 600.0), (1, 0.0), (1, 600.0))


def test_oracle_agent__replays_toy3_through_the_env_to_the_optimum() -> None:
    """The registered agent, in the env on scenarios/toy3.yaml, scores exactly the plan's objective."""
    env = ClusterSchedulingEnv("toy3")
    agent = agents.make_agent("oracle", env)
    assert isinstance(agent, OracleAgent) and "oracle" in agents.agent_names()
    obs, _ = env.reset(seed=0)
    agent.reset(0)
    assert agent.last_result is not None
    total_reward, done = 0.0, False
    while not done:
        action, _ = agent.predict(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        total_reward += reward
        done = terminated or truncated
    assert not info["invalid_action"]
    assert info["episode_metrics"]["objective_usd"] == pytest.approx(0.424, abs=1e-12)
    assert -total_reward == pytest.approx(agent.last_result.plan_objective_usd, abs=1e-12)


def test_oracle_agent__predict_before_reset_is_an_error() -> None:
    """Without a solved episode the agent refuses to act rather than guess."""
    env = ClusterSchedulingEnv("toy3")
    obs, _ = env.reset(seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        OracleAgent(env).predict(obs)
