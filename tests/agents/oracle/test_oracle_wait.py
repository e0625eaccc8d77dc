"""The oracle charges the waiting-time term as the twin counts it (known answers)."""

from __future__ import annotations

import numpy as np
import pytest

from agents.oracle import solve_oracle
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, ObjectiveWeights, Telemetry, TwinSpec

ONE_CORE = (NodeSpec("n0", "x86_64", "on-demand", 1, 8, 0.36),)  # 0.36 USD/h: 0.06 USD per 600 s job


def _solve(jobs: tuple[JobSpec, ...], weights: ObjectiveWeights, **settings: object) -> tuple[float, float, dict]:
    telemetry = Telemetry.constant(1, 20, 30, 3600, 300)
    spec = TwinSpec(ONE_CORE, jobs, telemetry, EpisodeSettings(3600, weights=weights, **settings))
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    result = solve_oracle(twin.hindsight(), time_limit_s=30.0)
    assert result.proven_optimal
    return result.plan_objective_usd, result.lower_bound_usd, result.plan


def test_oracle__second_job_waits_for_the_first_and_pays_for_it() -> None:
    """One core, two 600 s jobs at 0 s: the second starts at 600 s; objective 2 x 0.06 + 600 s x 3.6 USD/h."""
    jobs = (JobSpec("a", 0, 600, "batch", 1, 1), JobSpec("b", 0, 600, "batch", 1, 1))
    plan_usd, bound_usd, plan = _solve(jobs, ObjectiveWeights(wait_usd_per_job_hour=3.6))
    assert plan_usd == pytest.approx(0.12 + 0.6, abs=1e-12)
    assert bound_usd == pytest.approx(plan_usd, abs=1e-9)
    assert sorted(start for _, start in plan.values()) == [0.0, 600.0]


def test_oracle__waiting_is_charged_to_jobs_left_unserved() -> None:
    """A job rejected by its TTL waited the TTL: with a 900 s TTL the second job is served at 600 s
    (wait 0.6 USD < rejection 1.0 + wait 0.9 USD); without the wait term the totals differ by it."""
    jobs = (JobSpec("a", 0, 600, "batch", 1, 1), JobSpec("b", 0, 600, "batch", 1, 1))
    priced, _, _ = _solve(jobs, ObjectiveWeights(wait_usd_per_job_hour=3.6), queue_ttl_s=900.0)
    free, _, _ = _solve(jobs, ObjectiveWeights(), queue_ttl_s=900.0)
    assert (priced, free) == pytest.approx((0.72, 0.12), abs=1e-12)


def test_oracle__a_job_that_cannot_start_within_its_ttl_pays_the_rejection_and_the_ttl_of_wait() -> None:
    """Two 3000 s jobs on one core with a 600 s TTL: the second is rejected at 600 s and costs
    1 USD of rejection + 600 s at 6 USD/h of wait; plan and bound agree."""
    jobs = (JobSpec("a", 0, 3000, "batch", 1, 1), JobSpec("b", 0, 3000, "batch", 1, 1))
    plan_usd, bound_usd, plan = _solve(jobs, ObjectiveWeights(wait_usd_per_job_hour=6.0), queue_ttl_s=600.0)
    assert sum(v is None for v in plan.values()) == 1
    assert plan_usd == pytest.approx(0.36 * 3000 / 3600 + 1.0 + 1.0, abs=1e-12)
    assert bound_usd == pytest.approx(plan_usd, abs=1e-9)
