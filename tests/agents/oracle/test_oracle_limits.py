"""The oracle's solve limits: work (branch-and-bound nodes) by default, so results repeat on any machine."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator

import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, milp

from aco_env import ClusterSchedulingEnv
from aco_env.hindsight import hindsight_of
from agents.oracle import OracleAgent, solve_oracle
from agents.oracle.milp.limits import DEFAULT_NODE_LIMIT, NODE_LIMIT, OPTIMAL, TIME_LIMIT, SolveLimits


def _knapsack(limits: SolveLimits) -> tuple[str, np.ndarray, float, float, int]:
    """A multi-dimensional knapsack HiGHS needs ~1,000 nodes for: (status, x, value, dual bound, nodes)."""
    rng = np.random.default_rng(0)
    weights = rng.integers(10, 100, (8, 80))
    values = rng.integers(10, 100, 80)
    res = milp(
        -values,
        integrality=np.ones(80),
        bounds=Bounds(0, 1),
        constraints=LinearConstraint(weights, -np.inf, weights.sum(axis=1) / 3),
        options=limits.highs_options(),
    )
    return limits.status_of(res.status, str(res.message)), res.x, res.fun, res.mip_dual_bound, res.mip_node_count


def _burn(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.fixture
def busy_cpus() -> Iterator[None]:
    """Two processes spinning on the CPUs while the test runs (the load a time limit is sensitive to)."""
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_burn, args=(30.0,), daemon=True) for _ in range(2)]
    for worker in workers:
        worker.start()
    yield
    for worker in workers:
        worker.terminate()
        worker.join(timeout=10)


def test_limits__bad_values_are_refused_with_their_name() -> None:
    for bad in (0, -3, 1.5, True, "10"):
        with pytest.raises(ValueError, match="node_limit"):
            SolveLimits(node_limit=bad)  # type: ignore[arg-type]
    for bad in (0, -1.0, float("nan"), True, "30"):
        with pytest.raises(ValueError, match="time_limit_s"):
            SolveLimits(time_limit_s=bad)  # type: ignore[arg-type]
    assert SolveLimits().highs_options() == {"node_limit": DEFAULT_NODE_LIMIT}
    assert SolveLimits(None, None).highs_options() == {}


@pytest.mark.subprocess
def test_limits__a_node_limited_solve_repeats_exactly_under_load(busy_cpus: None) -> None:
    """The same program and node limit give the same solution, value, bound and status, idle or loaded."""
    del busy_cpus
    status, x, value, dual, nodes = _knapsack(SolveLimits(node_limit=40))
    assert status == NODE_LIMIT and nodes == 40
    assert dual <= value  # minimising: a valid bound below the incumbent
    for _ in range(2):
        again = _knapsack(SolveLimits(node_limit=40))
        assert again[0] == status and again[4] == nodes
        assert np.array_equal(again[1], x) and again[2] == value and again[3] == dual


def test_limits__the_full_search_is_optimal_and_a_wall_cap_is_reported_as_such() -> None:
    status, _, value, dual, nodes = _knapsack(SolveLimits(node_limit=None))
    assert status == OPTIMAL and value == dual and nodes > 40
    assert _knapsack(SolveLimits(node_limit=None, time_limit_s=1e-4))[0] == TIME_LIMIT


def test_oracle__default_solves_have_no_wall_time_limit_and_report_their_search() -> None:
    """The agent's defaults are the node limit alone; the programs say how many nodes they took."""
    env = ClusterSchedulingEnv("toy3")
    env.reset(seed=0)
    agent = OracleAgent(env)
    assert agent.limits == SolveLimits(DEFAULT_NODE_LIMIT, None)
    agent.reset(0)
    result = agent.episode_result()
    assert result.status == "proven-optimal"
    assert result.plan_program.search_nodes >= 1 and result.bound_program is not None
    assert result.bound_program.search_nodes >= 1
    with pytest.raises(ValueError, match="node_limit"):
        OracleAgent(env, node_limit=0)


@pytest.mark.slow
def test_oracle__a_work_limited_episode_repeats_exactly() -> None:
    """fleet5-synthetic seed 2 needs 3 nodes for its bound: stopped after 1, twice, the numbers agree."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    env.reset(seed=2)
    first = solve_oracle(hindsight_of(env), node_limit=1)
    second = solve_oracle(hindsight_of(env), node_limit=1)
    assert first.status == "work-limit"
    for name in ("plan", "plan_objective_usd", "lower_bound_usd", "status", "gap", "plan_source"):
        assert getattr(first, name) == getattr(second, name), name
    full = solve_oracle(hindsight_of(env))
    assert first.lower_bound_usd <= full.lower_bound_usd + 1e-9
