"""The oracle at scale: the capacity-free bound and the hindsight greedy plan.

(:mod:`agents.oracle.bounds.capacity_free`, :mod:`agents.oracle.plans.hindsight_greedy`.)

On small random instances (interruptions, TTLs, both cost models, both deadline rules, with and
without cpu contention) the bound is below the exhaustive optimum and every policy, and the
plan's replay is at or above the optimum. An episode over the memory budget is decomposed, not
refused, and the oracle agent replays its plan to exactly the reported objective.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from aco_env import ClusterSchedulingEnv
from aco_env.hindsight import hindsight_of
from agents.oracle import OracleAgent, OracleTooLargeError, solve_oracle
from agents.oracle.bounds.capacity_free import capacity_free_bound
from agents.oracle.model.instance import OracleInstance
from agents.oracle.plans.hindsight_greedy import hindsight_greedy_plan
from agents.oracle.plans.replay import replay_plan
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, ObjectiveWeights, Telemetry, TwinSpec
from digital_twin.episode_settings import PROCESSOR_SHARING
from tests.agents.oracle.test_oracle_energy import WEIGHED, _two_regions
from tests.agents.oracle.test_oracle_random import (
    assert_below_policies_and_the_optimum,
    brute_force_optimum,
    cheapest,
    policy_objective,
    small_specs,
)
from tests.helpers import first_fit, seeded_random_policy

TOL = 1e-9


@pytest.mark.heavy
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs(exact_grid=False), st.booleans())
def test_scale__bound_below_the_exhaustive_optimum_below_the_plan(spec: TwinSpec, contended: bool) -> None:
    if contended:
        spec = spec.with_settings(interference=PROCESSOR_SHARING)
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    view = twin.hindsight()
    inst = OracleInstance.from_hindsight(view)
    bound = capacity_free_bound(inst)
    plan_usd = min(replay_plan(view, hindsight_greedy_plan(view, inst), repair).total_usd for repair in (False, True))
    for policy in (first_fit, cheapest, seeded_random_policy(1), seeded_random_policy(2, defer_prob=0.5)):
        assert policy_objective(spec, policy) >= bound - TOL
    optimum = brute_force_optimum(spec, plan_usd)
    assume(optimum is not None)  # rare: a decision tree too big to enumerate
    assert optimum is not None
    assert bound <= optimum + TOL, (bound, optimum)
    assert plan_usd >= optimum - TOL


@pytest.mark.heavy
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(small_specs(exact_grid=False, energy=True), small_specs(exact_grid=False, tiny_cpu=True, energy=True)))
def test_scale__bound_with_energy_and_carbon_below_the_exhaustive_optimum(spec: TwinSpec) -> None:
    """Energy and carbon weighed (a GPU node, curves, carbon off the grid): policies >= bound; bound <= optimum.

    The bound also charges at least what it charged with neither weighed.
    """
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    view = twin.hindsight()
    bound = capacity_free_bound(OracleInstance.from_hindsight(view))
    free = dataclasses.replace(spec.settings, weights=dataclasses.replace(
        spec.settings.weights, energy_usd_per_kwh=0.0, carbon_usd_per_kg=0.0))  # fmt: skip
    unweighed = DigitalTwin(dataclasses.replace(spec, settings=free))
    unweighed.reset(np.random.default_rng(0))
    assert bound >= capacity_free_bound(OracleInstance.from_hindsight(unweighed.hindsight())) - TOL
    plan_usd = min(replay_plan(view, hindsight_greedy_plan(view, inst), repair).total_usd
                   for inst in (OracleInstance.from_hindsight(view),) for repair in (False, True))  # fmt: skip
    assert_below_policies_and_the_optimum(spec, bound, plan_usd)


def test_capacity_free__a_job_waits_for_the_clean_hour_in_its_bound() -> None:
    """One job, two regions, carbon falling at 1200 s in one: the bound is the optimum, found at an interior kink.

    (The oracle's plan for the same episode: tests/agents/oracle/test_oracle_energy.py.) 0.06 USD
    of compute, 0.02 of energy (60 W for 1200 s at 1 USD/kWh), 0.02 of carbon (1 g at 20 USD/kg).
    """
    spec = _two_regions(WEIGHED)
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    bound = capacity_free_bound(OracleInstance.from_hindsight(twin.hindsight()))
    assert bound == pytest.approx(0.06 + 0.02 + 20.0 * 0.02 * 50.0 / 1000.0, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scale__bound_below_the_heuristics_on_the_default_scenario(seed: int) -> None:
    """fleet5-synthetic (contention, interruptions, waiting cost): below first-fit, cheapest, random."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    env.reset(seed=seed)
    view = hindsight_of(env)
    spec = dataclasses.replace(view.spec, fixed_interruptions_s=view.interruptions_s)
    bound = capacity_free_bound(OracleInstance.from_hindsight(view))
    assert bound > 0.0
    for policy in (first_fit, cheapest, seeded_random_policy(3)):
        assert policy_objective(spec, policy) >= bound - TOL


def test_solve_oracle__over_the_budget_it_decomposes_and_the_agent_replays_the_plan() -> None:
    env = ClusterSchedulingEnv("fleet5-synthetic")
    agent = OracleAgent(env, memory_budget_gb=1e-3)
    obs, _ = env.reset(seed=0)
    agent.reset(0)
    result = agent.episode_result()
    assert result.status == "decomposed" and result.plan_source == "hindsight greedy"
    assert result.plan_program is None and result.bound_program is None
    assert result.memory_estimate.peak_bytes > 1e6
    assert 0.0 < result.lower_bound_usd <= result.plan_objective_usd
    assert result.gap == pytest.approx((result.plan_objective_usd - result.lower_bound_usd) / result.plan_objective_usd)
    done, info = False, {}
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.predict(obs)[0])
        done = terminated or truncated
    assert abs(info["episode_metrics"]["objective_usd"] - result.plan_objective_usd) <= TOL


def test_solve_oracle__refuses_over_the_budget_when_asked_and_checks_the_choice() -> None:
    env = ClusterSchedulingEnv("toy3")
    env.reset(seed=0)
    with pytest.raises(OracleTooLargeError):
        solve_oracle(hindsight_of(env), memory_budget_bytes=1e3, too_large="refuse")
    with pytest.raises(ValueError, match="too_large"):
        solve_oracle(hindsight_of(env), too_large="shrink")


@st.composite
def _preemptible_specs(draw: st.DrawFn) -> TwinSpec:
    """Small random instances where every job is preemptible and waiting is dear: evictable jobs abound."""
    spec = draw(small_specs(exact_grid=False))
    jobs = tuple(dataclasses.replace(job, preemptible=True) for job in spec.jobs)
    weights = dataclasses.replace(spec.settings.weights,
                                  wait_usd_per_job_hour=draw(st.sampled_from((0.6, 2.0, 20.0))))
    return dataclasses.replace(spec, jobs=type(spec.jobs).of(jobs)).with_settings(weights=weights)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_preemptible_specs(), st.booleans())
def test_capacity_free__evictable_jobs_charged_their_least_ending_stay_below_the_optimum(
    spec: TwinSpec, contended: bool
) -> None:
    """Every job preemptible, waiting priced: the bound (evictable jobs charged their least ending) <= the optimum."""
    test_scale__bound_below_the_exhaustive_optimum_below_the_plan.hypothesis.inner_test(spec, contended)


def test_capacity_free__an_evictable_job_pays_at_least_its_cheapest_run() -> None:
    """One preemptible job, one spot node interrupted during its run, one dear on-demand node.

    The job can run on the spot node before the interruption, be evicted and requeued, and run
    again: whatever it does it is queued or running from its arrival, so the bound charges it
    the least of its endings (its whole run on the spot node), not 0. The optimum runs it at
    once on the spot node, is evicted at 300 s, waits for the recovery at 600 s and runs again.
    """
    fleet = (
        NodeSpec("spot", "x86_64", "spot", 4, 16, 0.36, interruption_prob_per_hour=0.5),
        NodeSpec("dear", "x86_64", "on-demand", 4, 16, 3.6),
    )
    job = JobSpec("j", 0.0, 600.0, "batch", 4, 8, preemptible=True)
    spec = TwinSpec(
        fleet, (job,), Telemetry(np.zeros((4, 2, 2)), 600.0),
        EpisodeSettings(2400.0, queue_ttl_s=None, spot_recovery_s=300.0,
                        weights=ObjectiveWeights(wait_usd_per_job_hour=2.0)),
        fixed_interruptions_s=((300.0,), ()),
    )
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    inst = OracleInstance.from_hindsight(twin.hindsight())
    bound = capacity_free_bound(inst)
    spot_run_usd = 0.36 / 3600.0 * 600.0
    assert bound == pytest.approx(spot_run_usd, rel=1e-12)
    optimum = 0.36 / 3600.0 * 300.0 + 2.0 / 3600.0 * 300.0 + spot_run_usd  # evicted run, wait, last run
    assert brute_force_optimum(spec, 10.0) == pytest.approx(optimum, rel=1e-9)
