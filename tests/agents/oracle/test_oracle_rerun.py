"""Evict-and-rerun plans: a preemptible job run once to be evicted, then rerun past its first TTL."""

from __future__ import annotations

import dataclasses
import importlib.util
from unittest import mock

import numpy as np
import pytest

from agents.oracle import solve_oracle
from agents.oracle.milp.limits import SolveLimits
from agents.oracle.model.instance import OracleInstance
from agents.oracle.plans.candidates import program_candidates
from agents.oracle.plans.options import plan_options
from agents.oracle.plans.rerun import MAX_FIRST_RUN_STARTS, eligible
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, Telemetry, TwinSpec
from digital_twin.objective import PENALTY_INDEX
from tests.agents.oracle.test_oracle_random import TOL, brute_force_optimum, replay_plan
from tests.paths import ROOT

SPOT_PER_S = 0.36 / 4 / 3600  # a 1-core job's share of the 4-core spot node
ON_DEMAND_PER_S = 0.72 / 2 / 3600  # and of the 2-core on-demand node


def _spec(**job_fields: object) -> TwinSpec:
    """``p`` (1 core, 1200 s, TTL 600 s) arrives at 0; the cheap spot node goes down at 900 s until 1200 s."""
    fleet = (
        NodeSpec("spot", "arm64", "spot", 4, 16, 0.36, interruption_prob_per_hour=0.5),
        NodeSpec("od", "arm64", "on-demand", 2, 8, 0.72),
    )
    fields = {"preemptible": True, **job_fields}
    jobs = (JobSpec("p", 0.0, 1200.0, "batch", 1, 2, **fields),)  # type: ignore[arg-type]
    return TwinSpec(
        fleet,
        jobs,
        Telemetry.constant(2, 10, 10, 3600, 300),
        EpisodeSettings(3600.0, queue_ttl_s=600.0, spot_recovery_s=300.0),
        fixed_interruptions_s=((900.0,), ()),
    )


def _solve(spec: TwinSpec):  # type: ignore[no-untyped-def]
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    return solve_oracle(twin.hindsight())


def test_oracle__a_preemptible_job_waits_past_its_ttl_for_the_spot_node_through_an_eviction() -> None:
    """Run on spot from the tick at 300 s until the interruption evicts it, then rerun there after the recovery.

    That costs 600 s + 1200 s of the spot node (0.045 USD) against 1200 s on demand (0.12):
    the eviction of a preemptible job is free and re-queues it with a fresh TTL, so it can wait
    past its first TTL (600 s) for the spot node's recovery at 1200 s. Starting the first run
    at 0 would pay 300 s more; 300 s is the last decision time before the TTL. The bound
    knows the first run cannot start later, so the plan is proven optimal, and it is the
    exhaustive optimum.
    """
    spec = _spec()
    result = _solve(spec)
    assert result.plan == {"p": (0, 1200.0)}
    assert result.plan_first_runs == {"p": (0, 300.0, 900.0)}
    assert result.plan_objective_usd == pytest.approx((600.0 + 1200.0) * SPOT_PER_S, abs=1e-12)
    assert result.proven_optimal
    replayed = replay_plan(spec, result)
    assert abs(replayed - result.plan_objective_usd) <= TOL
    assert brute_force_optimum(spec, replayed) == pytest.approx(result.plan_objective_usd, abs=TOL)


def test_oracle__a_job_that_cannot_be_requeued_runs_on_demand() -> None:
    """Not preemptible, the same job would fail at the interruption: it runs on demand at once."""
    result = _solve(_spec(preemptible=False))
    assert result.plan == {"p": (1, 0.0)} and result.plan_first_runs == {}
    assert result.plan_objective_usd == pytest.approx(1200.0 * ON_DEMAND_PER_S, abs=1e-12)
    assert result.proven_optimal


def test_rerun_families__first_runs_end_at_the_interruption_and_reruns_start_after_it() -> None:
    spec = _spec()
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    inst = OracleInstance.from_hindsight(twin.hindsight())
    assert eligible(inst, 0)
    options = plan_options(inst)
    family = options.family >= 0
    firsts, reruns = family & options.evicted, family & ~options.evicted
    assert (options.node[firsts] == 0).all() and (options.use_end_s[firsts] == 900.0).all()
    assert 0 < firsts.sum() <= MAX_FIRST_RUN_STARTS
    assert set(options.start_lo_s[firsts].tolist()) == {0.0, 300.0}  # the starts in (900 - 1200, 900) within the TTL
    assert (options.start_lo_s[reruns] >= 900.0).all() and (options.start_lo_s[reruns] < 1500.0).all()
    wait = PENALTY_INDEX["wait"]
    rerun_wait = (options.start_lo_s[reruns] - 900.0) / 3600.0  # the second queue spell, from the eviction
    assert np.array_equal(options.counts[reruns, wait], rerun_wait)
    assert np.array_equal(options.counts[firsts, wait], options.start_lo_s[firsts] / 3600.0)


@pytest.mark.parametrize("interruptions", [(900.0, 2100.0), (900.0, 1500.0, 2400.0), (450.0, 2000.0)])
def test_oracle__bound_below_the_exhaustive_optimum_with_chains_of_evictions(interruptions: tuple[float, ...]) -> None:
    """Several interruptions of the spot node: the job may be evicted more than once before its last run.

    The bound charges the first and the last evicted run (the larger); it must stay below the
    optimum over every action sequence, and the plan must replay to its value.
    """
    spec = dataclasses.replace(_spec(), fixed_interruptions_s=(interruptions, ()))
    result = _solve(spec)
    replayed = replay_plan(spec, result)
    assert abs(replayed - result.plan_objective_usd) <= TOL
    optimum = brute_force_optimum(spec, replayed)
    assert optimum is not None
    assert result.lower_bound_usd <= optimum + TOL <= result.plan_objective_usd + 2 * TOL


def test_example_oracle_gap__splits_the_gap_at_the_nominal_program(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/oracle_gap.py on toy3: plan >= nominal program >= bound on each row, and the sums add up."""
    path = ROOT / "examples" / "oracle_gap.py"
    module_spec = importlib.util.spec_from_file_location("oracle_gap", path)
    assert module_spec is not None and module_spec.loader is not None
    example = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(example)
    with mock.patch("sys.argv", ["oracle_gap.py", "--scenario", "toy3", "--seeds", "0-1"]):
        example.main()
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split("|") for line in lines if line.startswith("| ") and "seed" not in line]
    assert len(rows) == 2
    for row in rows:
        plan, program, bound, above, below = (float(row[k]) for k in (2, 3, 4, 6, 7))
        assert bound <= program + TOL  # the bound is below the nominal plan program's optimum
        assert above == pytest.approx(plan - program, abs=2e-4) and below == pytest.approx(program - bound, abs=2e-4)


@pytest.mark.parametrize("wait_usd_per_job_hour", [0.3, 3.0])
@pytest.mark.parametrize(("interruptions", "horizon_s"), [((900.0,), 3600.0), ((900.0, 1500.0), 3600.0),
                                                          ((900.0,), 1500.0)])
def test_oracle__a_requeued_job_pays_its_second_wait(
    wait_usd_per_job_hour: float, interruptions: tuple[float, ...], horizon_s: float
) -> None:
    """Waiting is charged: a job evicted from the spot node waits again, from the eviction to its next start.

    The plan's charged value equals the twin's replay (its rerun pays the second queue spell),
    and the bound stays below the exhaustive optimum, which may requeue the job and never
    restart it (it then waits until its TTL or the horizon).
    """
    spec = _spec()
    weights = dataclasses.replace(spec.settings.weights, wait_usd_per_job_hour=wait_usd_per_job_hour)
    settings = dataclasses.replace(spec.settings, horizon_s=horizon_s, weights=weights)
    spec = dataclasses.replace(spec, settings=settings, fixed_interruptions_s=(interruptions, ()),
                               telemetry=Telemetry.constant(2, 10, 10, horizon_s, 300))
    result = _solve(spec)
    replayed = replay_plan(spec, result)
    assert abs(replayed - result.plan_objective_usd) <= TOL, (replayed, result.plan_objective_usd)
    _assert_program_charges_its_plan_as_replayed(spec)
    optimum = brute_force_optimum(spec, replayed)
    assert optimum is not None
    assert result.lower_bound_usd <= optimum + TOL <= result.plan_objective_usd + 2 * TOL


def test_oracle__the_rerun_plan_pays_both_queue_spells() -> None:
    """With waiting at 0.3 USD/job-hour ``p`` runs on spot from 0, is evicted at 900 s, and reruns at 1200 s.

    It waits 0 s, then 300 s from the eviction to the recovery: 2100 s of the spot node
    (0.0525) plus 300 s of waiting (0.025) beat 1200 s on demand (0.12) and starting at 300 s
    (0.045 + 0.05).
    """
    spec = _spec()
    weights = dataclasses.replace(spec.settings.weights, wait_usd_per_job_hour=0.3)
    spec = dataclasses.replace(spec, settings=dataclasses.replace(spec.settings, weights=weights))
    result = _solve(spec)
    assert result.plan == {"p": (0, 1200.0)}
    assert result.plan_first_runs == {"p": (0, 0.0, 900.0)}
    assert result.plan_objective_usd == pytest.approx(2100.0 * SPOT_PER_S + 0.3 * 300.0 / 3600.0, abs=1e-12)
    assert abs(replay_plan(spec, result) - result.plan_objective_usd) <= TOL
    _assert_program_charges_its_plan_as_replayed(spec)
    assert result.plan_breakdown["wait_job_hours"] == pytest.approx(300.0 / 3600.0, abs=1e-12)
    assert brute_force_optimum(spec, replay_plan(spec, result)) == pytest.approx(result.plan_objective_usd, abs=TOL)


def _assert_program_charges_its_plan_as_replayed(spec: TwinSpec) -> None:
    """The plan program (nominal runs) charges its MILP plan what the twin's replay counts (no contention: exactly).

    Solved here, not through ``solve_oracle``, which stops at the arrival plan once it is proven.
    """
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    view = twin.hindsight()
    batch = program_candidates(OracleInstance.from_hindsight(view), view, None, SolveLimits(), 1e-7, contended=False)
    milp = [candidate for candidate in batch if candidate.source == "milp"]
    assert len(milp) == 1 and milp[0].program is not None and milp[0].program.objective_usd is not None
    assert milp[0].program.objective_usd == pytest.approx(milp[0].total_usd, abs=TOL)
