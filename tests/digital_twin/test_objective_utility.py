"""The lost-utility term: latency-critical jobs lose SLO utility as their latency passes the SLO (known answers)."""

from __future__ import annotations

import numpy as np
import pytest

from aco_env import ClusterSchedulingEnv
from aco_env.hindsight import scenario_of
from agents.oracle import solve_oracle
from digital_twin import DigitalTwin, JobSpec, ObjectiveWeights
from digital_twin.sim.measures import utility_loss
from tests.small_twins import ONE_CORE, SPOT_TWO_CORES, batch, lc, play, spec_of

WEIGHTS = ObjectiveWeights(utility_loss_usd=2.0)


def test_utility_loss__is_zero_to_the_slo_then_linear_to_one_at_twice_it() -> None:
    """u(x) = 1 for x <= 1, 2 - x for 1 < x < 2, 0 beyond: the loss is 1 - u."""
    slo = 1200.0
    losses = [utility_loss(latency, slo) for latency in (0.0, 600.0, 1200.0, 1500.0, 1800.0, 2400.0, 10_000.0)]
    assert losses == [0.0, 0.0, 0.0, 0.25, 0.5, 1.0, 1.0]


@pytest.mark.parametrize(
    ("start_s", "lost"),
    [(0.0, 0.0), (600.0, 0.0), (900.0, 0.25), (1200.0, 0.5), (1800.0, 1.0), (2400.0, 1.0)],
)
def test_utility__a_completed_job_loses_by_its_latency_over_the_slo(start_s: float, lost: float) -> None:
    """A 600 s latency-critical job (SLO 2 x 600 s = 1200 s) started at ``start_s`` completes at start + 600 s."""
    spec = spec_of((lc("j", 0.0, 600.0),), queue_ttl_s=None, weights=WEIGHTS)
    twin, _ = play(spec, {"j": (0, start_s)})
    objective = twin.objective()
    assert objective["utility_lost"] == pytest.approx(lost, abs=1e-12)
    assert objective["utility_usd"] == pytest.approx(2.0 * lost, abs=1e-12)
    assert objective.total_usd == pytest.approx(0.0001 * 600 + 2.0 * lost, abs=1e-12)


def test_utility__the_slo_is_the_scenario_factor_times_the_nominal_duration() -> None:
    """Factor 1.25: SLO 750 s; a 600 s job completing 1200 s after arrival loses (1200 / 750 - 1) = 0.6."""
    spec = spec_of((lc("j", 0.0, 600.0),), queue_ttl_s=None, weights=WEIGHTS, latency_slo_factor=1.25)
    twin, _ = play(spec, {"j": (0, 600.0)})
    assert twin.objective()["utility_lost"] == pytest.approx(0.6, rel=1e-12)


def test_utility__batch_and_stream_jobs_never_count() -> None:
    """Only latency-critical jobs have a latency SLO: a late batch job and a rejected one lose nothing."""
    spec = spec_of((batch("late", 0.0, 600.0), batch("rejected", 0.0, 60.0, cores=64)), queue_ttl_s=None,
                   weights=WEIGHTS)
    twin, _ = play(spec, {"late": (0, 2400.0)})
    assert twin.job_counts()["rejected"] == 1
    assert twin.objective()["utility_lost"] == 0.0


def test_utility__failed_rejected_and_unserved_latency_critical_jobs_lose_everything() -> None:
    """A failure (spot interruption), a TTL rejection, an unplaceable job, one queued at the horizon: 1 each."""
    jobs = (
        lc("fails", 0.0, 600.0),
        lc("ttl", 0.0, 60.0),
        JobSpec("unplaceable", 0.0, 60.0, "latency-critical", 64, 2),
        lc("queued", 3000.0, 60.0),
    )
    spec = spec_of(jobs, fleet=(SPOT_TWO_CORES,), queue_ttl_s=1000.0, weights=WEIGHTS,
                   fixed_interruptions_s=((300.0,),))
    twin, _ = play(spec, {"fails": (0, 0.0)})
    counts = twin.job_counts()
    assert (counts["failed"], counts["rejected"], counts["pending"]) == (1, 2, 1)
    assert twin.objective()["utility_lost"] == 4.0


def test_utility__a_job_running_at_the_horizon_loses_by_the_time_it_has_been_in_the_system() -> None:
    """Factor 1: SLO 3000 s; started at 1200 s, still running at the 3600 s horizon: 3600 / 3000 - 1 = 0.2."""
    spec = spec_of((lc("j", 0.0, 3000.0),), queue_ttl_s=None, weights=WEIGHTS, latency_slo_factor=1.0)
    twin, _ = play(spec, {"j": (0, 1200.0)})
    assert twin.job_counts()["running"] == 1
    assert twin.objective()["utility_lost"] == pytest.approx(0.2, rel=1e-12)


def test_utility__counts_the_run_stretched_by_cpu_contention() -> None:
    """One core, 100 % background: a 1-core job runs at half speed, 600 s of work end at 1200 s.

    Factor 1.5: SLO 900 s, so the loss is 1200 / 900 - 1 = 1/3 (0 without interference).
    """
    jobs = (lc("j", 0.0, 600.0),)
    for interference, lost in (("processor-sharing", 1 / 3), ("none", 0.0)):
        spec = spec_of(jobs, fleet=(ONE_CORE,), cpu_pct=100.0, weights=WEIGHTS, latency_slo_factor=1.5,
                       interference=interference)
        twin, _ = play(spec, {"j": (0, 0.0)})
        assert twin.objective()["utility_lost"] == pytest.approx(lost, abs=1e-12), interference


def test_oracle__plans_for_utility_and_its_bound_meets_the_plan() -> None:
    """One 1-core slot, two 600 s latency-critical jobs at 0 s, TTL 900 s, factor 1.5 (SLO 900 s).

    The second can start only when the first completes (600 s): latency 1200 s, loss 1/3 (x 2
    USD), less than rejecting it (1 USD + its whole utility). Plan 2 x 0.06 + 2/3, bound alike.
    """
    spec = spec_of((lc("a", 0.0, 600.0), lc("b", 0.0, 600.0)), fleet=(ONE_CORE,), queue_ttl_s=900.0,
                   latency_slo_factor=1.5, weights=ObjectiveWeights(sla_violation_usd=0.0, utility_loss_usd=2.0))
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    result = solve_oracle(twin.hindsight(), time_limit_s=30.0)
    assert result.plan_objective_usd == pytest.approx(2 * 0.06 + 2.0 / 3.0, abs=1e-12)
    assert result.plan_breakdown["utility_lost"] == pytest.approx(1.0 / 3.0, abs=1e-12)
    assert result.lower_bound_usd == pytest.approx(result.plan_objective_usd, abs=1e-9)
    replayed, _ = play(spec, {job: planned for job, planned in result.plan.items() if planned is not None})
    assert replayed.objective_usd() == pytest.approx(result.plan_objective_usd, abs=1e-12)


@pytest.mark.parametrize("agent_seed", [0, 1])
def test_env__return_is_minus_the_objective_with_utility_fairness_and_completion_deadlines(agent_seed: int) -> None:
    """fleet5-utility (every new term on), random valid actions: the return is minus the episode objective."""
    env = ClusterSchedulingEnv(scenario="fleet5-utility")
    observation, _ = env.reset(seed=agent_seed)
    rng = np.random.default_rng(agent_seed)
    total, done, info = 0.0, False, {}
    while not done:
        action = int(rng.choice(np.flatnonzero(observation["action_mask"])))
        observation, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        done = terminated or truncated
    metrics = info["episode_metrics"]
    assert total == pytest.approx(-metrics["objective_usd"], rel=1e-9, abs=1e-9)
    assert metrics["utility_usd"] == metrics["utility_lost"] * 1.0
    assert metrics["unfairness_usd"] == metrics["unfairness"] * 2.0
    assert scenario_of(env).settings.deadline_rule == "completion"
