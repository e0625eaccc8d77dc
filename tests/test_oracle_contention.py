"""The oracle under cpu contention: bound <= exhaustive optimum <= the plan's replayed objective.

The random small instances of :mod:`tests.test_oracle_random` (backgrounds of 10-80 %, so a full
node is slowed) with processor sharing on: runs last longer than the programs' nominal
durations, completions fall between the tick-grid points, and the bound must still hold against
every decision sequence of the twin. The plan's objective is what the twin charges when it
replays the plan (:func:`agents.oracle.replay.replay_plan`), also through the env's agent rule.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, assume, given, settings

from agents.oracle import solve_oracle
from digital_twin import DigitalTwin, TwinSpec
from digital_twin.contention import PROCESSOR_SHARING
from tests.helpers import first_fit, seeded_random_policy
from tests.test_oracle_random import TOL, brute_force_optimum, cheapest, policy_objective, replay_plan, small_specs


def _check(spec: TwinSpec) -> None:
    spec = dataclasses.replace(spec, interference=PROCESSOR_SHARING)
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    result = solve_oracle(twin.hindsight(), time_limit_s=20.0)
    replayed = replay_plan(spec, result)
    assert abs(replayed - result.plan_objective_usd) <= TOL, (replayed, result.plan_objective_usd)
    assert result.lower_bound_usd <= result.plan_objective_usd + TOL
    for policy in (first_fit, cheapest, seeded_random_policy(1), seeded_random_policy(2, defer_prob=0.5)):
        assert policy_objective(spec, policy) >= result.lower_bound_usd - TOL
    optimum = brute_force_optimum(spec, replayed)
    assume(optimum is not None)  # rare: a decision tree too big to enumerate
    assert optimum is not None
    assert result.lower_bound_usd <= optimum + TOL, (result.lower_bound_usd, optimum)
    assert result.plan_objective_usd >= optimum - TOL


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs(exact_grid=False))
def test_oracle_contention__bound_below_the_optimum_below_the_replayed_plan(spec: TwinSpec) -> None:
    """Random instances with interruptions and contention."""
    _check(spec)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs(exact_grid=True))
def test_oracle_contention__on_the_tick_grid_too(spec: TwinSpec) -> None:
    """Arrivals and durations on the tick grid: contention moves completions off it."""
    _check(spec)
