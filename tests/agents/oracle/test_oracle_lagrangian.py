"""The Lagrangian bound at scale (agents.oracle.bounds.lagrangian): valid, never weaker, tighter where capacity binds.

Invariants, on random small instances (interruptions, TTLs, both cost models, both deadline
rules, every weight set, with and without cpu contention) and on the default scenario: ``L(0)``
is the capacity-free bound; the bound is below every policy (first-fit, cheapest, random,
ACO, the hindsight greedy plan) and below the exhaustive optimum; it is repeatable bit for bit;
and where two jobs want one cheap node at once it is strictly above the capacity-free bound.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from aco_env import ClusterSchedulingEnv
from aco_env.hindsight import hindsight_of
from agents import make_agent
from agents.oracle import OracleAgent, solve_oracle
from agents.oracle.bounds.capacity_free import capacity_free_bound, scale_bound
from agents.oracle.bounds.lagrangian import lagrangian_bound
from agents.oracle.model.instance import OracleInstance
from agents.oracle.plans.hindsight_greedy import hindsight_greedy_plan
from agents.oracle.plans.replay import replay_plan
from digital_twin import DigitalTwin, EpisodeSettings, HindsightView, JobSpec, NodeSpec, Telemetry, TwinSpec
from digital_twin.episode_settings import PROCESSOR_SHARING
from tests.agents.oracle.test_oracle_random import (
    WEIGHTS,
    assert_below_policies_and_the_optimum,
    brute_force_optimum,
    cheapest,
    policy_objective,
    small_specs,
)
from tests.helpers import first_fit, run_episode, seeded_random_policy
from tests.strategies import twin_specs

TOL = 1e-9
ITERATIONS = 200
TICK_S = 600.0


@st.composite
def crowded_specs(draw: st.DrawFn) -> TwinSpec:
    """1-2 small nodes and 3-4 jobs arriving within 10 minutes: capacity often binds.

    Nodes of 2-4 cores (spot ones interrupted at drawn times), jobs of 2-4 cores lasting 10-40
    minutes, any TTL, weights, cost model, deadline rule and interference.
    """
    horizon = 2400.0
    fleet = tuple(
        NodeSpec(f"n{i}", "x86_64", "spot" if spot else "on-demand", draw(st.sampled_from((2, 4))), 16,
                 draw(st.sampled_from((0.072, 0.36, 3.6))), interruption_prob_per_hour=0.5 if spot else 0.0)
        for i, spot in enumerate(draw(st.lists(st.booleans(), min_size=1, max_size=2)))
    )
    jobs = tuple(
        JobSpec(f"j{k}", float(draw(st.integers(0, 600))), float(draw(st.integers(600, 2400))),
                draw(st.sampled_from(("latency-critical", "batch"))), draw(st.sampled_from((2, 2, 4))), 2,
                preemptible=draw(st.booleans()), deadline_s=draw(st.sampled_from((None, 300.0, 1500.0))))
        for k in range(draw(st.integers(3, 4)))
    )
    interruptions = tuple(
        tuple(sorted(draw(st.lists(st.integers(1, int(horizon) - 1), max_size=1)))) if n.is_spot else () for n in fleet
    )
    background = np.zeros((int(horizon // TICK_S), len(fleet), 2))
    background[:, :, 0] = draw(st.sampled_from((10.0, 60.0, 90.0)))
    return TwinSpec(
        fleet,
        jobs,
        Telemetry(background, TICK_S),
        EpisodeSettings(
            horizon,
            queue_ttl_s=draw(st.sampled_from((None, 300.0, 900.0))),
            spot_recovery_s=300.0,
            cost_model=draw(st.sampled_from(("prorated", "active-nodes"))),
            weights=draw(st.sampled_from(WEIGHTS)),
            deadline_rule=draw(st.sampled_from(("first-start", "completion"))),
            interference=draw(st.sampled_from(("none", PROCESSOR_SHARING))),
        ),
        fixed_interruptions_s=interruptions,
    )


def _episode(spec: TwinSpec) -> tuple[HindsightView, OracleInstance, float]:
    """The episode's hindsight, its instance and the hindsight greedy plan's objective (the target)."""
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    view = twin.hindsight()
    inst = OracleInstance.from_hindsight(view)
    plan = hindsight_greedy_plan(view, inst)
    return view, inst, min(replay_plan(view, plan, repair).total_usd for repair in (False, True))


def _assert_starts_at_the_capacity_free_bound(inst: OracleInstance, target_usd: float) -> float:
    """``L(0)`` equals the capacity-free bound (up to rounding); the reported bound is not below it."""
    free = capacity_free_bound(inst)
    zero = lagrangian_bound(inst, target_usd, 0)
    assert zero.iterations == 0 and zero.bound_usd == zero.initial_usd
    assert zero.initial_usd == pytest.approx(free, rel=1e-12, abs=1e-12)
    bound = scale_bound(inst, target_usd, ITERATIONS)
    assert bound >= free
    return bound


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs(exact_grid=False), st.booleans())
def test_lagrangian__below_every_policy_and_the_exhaustive_optimum(spec: TwinSpec, contended: bool) -> None:
    """Random small instances: capacity-free <= Lagrangian <= every policy, the plan and the exhaustive optimum."""
    if contended:
        spec = spec.with_settings(interference=PROCESSOR_SHARING)
    _, inst, plan_usd = _episode(spec)
    bound = _assert_starts_at_the_capacity_free_bound(inst, plan_usd)
    assert bound <= plan_usd + TOL
    for policy in (first_fit, cheapest, seeded_random_policy(1), seeded_random_policy(2, defer_prob=0.5)):
        assert policy_objective(spec, policy) >= bound - TOL
    optimum = brute_force_optimum(spec, plan_usd)
    assume(optimum is not None)  # rare: a decision tree too big to enumerate
    assert optimum is not None
    assert bound <= optimum + TOL, (bound, optimum)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(crowded_specs())
def test_lagrangian__below_every_policy_and_the_optimum_where_capacity_binds(spec: TwinSpec) -> None:
    """Crowded instances (the multipliers move): below every policy, the plan and the exhaustive optimum."""
    _, inst, plan_usd = _episode(spec)
    bound = _assert_starts_at_the_capacity_free_bound(inst, plan_usd)
    assert bound <= plan_usd + TOL
    assert_below_policies_and_the_optimum(spec, bound, plan_usd)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs(exact_grid=False), st.booleans())
def test_lagrangian__below_the_optimum_on_many_small_instances(spec: TwinSpec, contended: bool) -> None:
    """The small-instance property on many more instances (slow: the exhaustive search dominates)."""
    test_lagrangian__below_every_policy_and_the_exhaustive_optimum.hypothesis.inner_test(spec, contended)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(crowded_specs())
def test_lagrangian__below_the_optimum_on_many_crowded_instances(spec: TwinSpec) -> None:
    """The crowded property on ten times as many instances (slow)."""
    test_lagrangian__below_every_policy_and_the_optimum_where_capacity_binds.hypothesis.inner_test(spec)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs(exact_grid=True))
def test_lagrangian__below_the_exhaustive_optimum_on_the_tick_grid(spec: TwinSpec) -> None:
    """Events on the tick grid (where cells and ticks line up): still below the exhaustive optimum."""
    _, inst, plan_usd = _episode(spec)
    bound = _assert_starts_at_the_capacity_free_bound(inst, plan_usd)
    optimum = brute_force_optimum(spec, plan_usd)
    assume(optimum is not None)
    assert optimum is not None
    assert bound <= optimum + TOL, (bound, optimum)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(twin_specs(max_nodes=4, max_jobs=20))
def test_lagrangian__below_every_policy_on_medium_instances(spec: TwinSpec) -> None:
    """Up to 4 nodes and 20 jobs (random telemetry and interruptions drawn at reset): below the heuristics."""
    _, inst, plan_usd = _episode(spec)
    bound = _assert_starts_at_the_capacity_free_bound(inst, plan_usd)
    assert bound <= plan_usd + TOL
    for policy in (first_fit, cheapest, seeded_random_policy(3)):
        assert policy_objective(spec, policy) >= bound - TOL


def test_lagrangian__strictly_tighter_where_two_jobs_want_one_cheap_node() -> None:
    """Two 2-core jobs, a 2-core cheap node, a dear one and a short TTL: one of them must pay more.

    The capacity-free bound puts both on the cheap node at once; with capacity priced back in
    the bound rises above it, and stays below the exhaustive optimum.
    """
    fleet = (NodeSpec("cheap", "x86_64", "on-demand", 2, 8, 0.36), NodeSpec("dear", "x86_64", "on-demand", 2, 8, 3.6))
    jobs = tuple(JobSpec(f"j{k}", 0.0, 3600.0, "batch", 2, 2) for k in range(2))
    spec = TwinSpec(fleet, jobs, Telemetry.constant(2, 10, 10, 7200, 300), EpisodeSettings(7200.0, queue_ttl_s=600.0))
    _, inst, plan_usd = _episode(spec)
    free = capacity_free_bound(inst)
    result = lagrangian_bound(inst, plan_usd, ITERATIONS)
    assert result.bound_usd > free + 1e-6
    assert result.best_iteration > 0
    optimum = brute_force_optimum(spec, plan_usd)
    assert optimum is not None
    assert result.bound_usd <= optimum + TOL


@pytest.mark.parametrize("seed", [0, 1])
def test_lagrangian__below_the_agents_on_the_default_scenario(seed: int) -> None:
    """fleet5-synthetic (contention, interruptions, waiting cost): below first-fit, cheapest, random, ACO."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    env.reset(seed=seed)
    view = hindsight_of(env)
    spec = dataclasses.replace(view.spec, fixed_interruptions_s=view.interruptions_s)
    inst = OracleInstance.from_hindsight(view)
    plan_usd = min(replay_plan(view, hindsight_greedy_plan(view, inst), r).total_usd for r in (False, True))
    bound = _assert_starts_at_the_capacity_free_bound(inst, plan_usd)
    assert 0.0 < bound <= plan_usd + TOL
    for policy in (first_fit, cheapest, seeded_random_policy(3)):
        assert policy_objective(spec, policy) >= bound - TOL
    aco = run_episode(env, make_agent("aco", env), seed=seed)
    assert aco["objective_usd"] >= bound - TOL


def test_lagrangian__the_same_episode_gives_the_same_bound_bit_for_bit() -> None:
    """Determinism: two solves of one episode (built twice) agree exactly, on a capacity-binding instance."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    results = []
    for _ in range(2):
        env.reset(seed=2)
        inst = OracleInstance.from_hindsight(hindsight_of(env))
        doubled = dataclasses.replace(inst, job_cpu_m=inst.job_cpu_m * 4)  # make capacity bind
        results.append(lagrangian_bound(doubled, 50.0, ITERATIONS))
    assert results[0] == results[1]
    assert results[0].bound_usd.hex() == results[1].bound_usd.hex()


def test_solve_oracle__the_decomposed_bound_is_the_lagrangian_and_the_option_is_checked() -> None:
    """Over the budget: the reported bound is ``scale_bound``; iterations 0 gives the capacity-free bound."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    env.reset(seed=0)
    view = hindsight_of(env)
    inst = OracleInstance.from_hindsight(view)
    result = solve_oracle(view, memory_budget_bytes=1e3, lagrangian_iterations=30)
    assert result.status == "decomposed"
    assert result.lower_bound_usd == scale_bound(inst, result.plan_objective_usd, 30)
    assert capacity_free_bound(inst) <= result.lower_bound_usd <= result.plan_objective_usd
    plain = solve_oracle(view, memory_budget_bytes=1e3, lagrangian_iterations=0)
    assert plain.lower_bound_usd == pytest.approx(capacity_free_bound(inst), rel=1e-12)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="lagrangian_iterations"):
            solve_oracle(view, memory_budget_bytes=1e3, lagrangian_iterations=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="lagrangian_iterations"):
            OracleAgent(env, lagrangian_iterations=bad)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2, 8))
def test_lagrangian__below_the_agents_on_more_default_episodes(seed: int) -> None:
    """More seeds of fleet5-synthetic against the heuristics and ACO (slow: ACO plays each episode)."""
    test_lagrangian__below_the_agents_on_the_default_scenario(seed)
