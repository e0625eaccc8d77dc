"""The oracle on workflow episodes, against the exhaustive optimum over the twin's decisions.

Tiny random instances (:func:`tests.agents.oracle.test_oracle_random.small_specs`, 2-4 jobs)
become workflows: each job may depend on earlier ones, the workflows get weights and
deadlines, and the objective weighs workflow hours and late workflows. For each: the plan
replays through the twin to exactly its objective (the replay releases each task at its
parents' completion), and the bound is below four policies and the brute-force optimum over
every action sequence the twin allows.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agents.oracle import solve_oracle
from agents.oracle.bounds.capacity_free import capacity_free_bound, scale_bound
from agents.oracle.model.instance import OracleInstance
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, ObjectiveWeights, Telemetry, TwinSpec
from digital_twin.objective import PENALTY_INDEX
from digital_twin.workflows import WorkflowSpec
from digital_twin.workload import Workload
from tests.agents.oracle.test_oracle_random import _check_instance, brute_force_optimum, policy_objective, small_specs
from tests.helpers import first_fit

TOL = 1e-9


@st.composite
def workflow_specs(draw: st.DrawFn, exact_grid: bool) -> TwinSpec:
    """A small spec whose jobs form one or two workflows (random edges to earlier jobs), workflow terms weighed."""
    spec = draw(small_specs(exact_grid=exact_grid))
    jobs = sorted(spec.jobs, key=lambda job: job.arrival_s)
    n_workflows = draw(st.integers(1, 2))
    tasks = []
    for k, job in enumerate(jobs):
        w = draw(st.integers(0, n_workflows - 1))
        earlier = [p for p in tasks if p.workflow == f"w{w}"]
        parents = tuple(p.job_id for p in earlier if draw(st.booleans()))
        tasks.append(dataclasses.replace(job, job_id=f"t{k}", workflow=f"w{w}", parents=parents))
    horizon = spec.settings.horizon_s
    workflows = [
        WorkflowSpec(f"w{w}", weight=draw(st.sampled_from((1.0, 3.0))),
                     deadline_s=draw(st.sampled_from((None, horizon / 2, horizon - 1.0))))
        for w in range(n_workflows)
    ]
    weights = dataclasses.replace(
        spec.settings.weights,
        workflow_usd_per_hour=draw(st.sampled_from((0.0, 0.5, 4.0))),
        workflow_deadline_miss_usd=draw(st.sampled_from((0.0, 1.0))),
    )
    settings_ = dataclasses.replace(spec.settings, weights=weights)
    return dataclasses.replace(spec, jobs=Workload.of(tasks, workflows), settings=settings_)


@pytest.mark.heavy  # seconds of CPU: the rest layer (make test), not make test-fast
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflow_specs(exact_grid=False))
def test_oracle__bound_below_the_exhaustive_optimum_on_random_dags(spec: TwinSpec) -> None:
    """Random DAGs, interruptions, TTLs, both cost models: bound <= optimum <= plan == replay, heuristics >= bound."""
    _check_instance(spec, exact_grid=False)  # workflows: no exact meeting claimed
    _check_bounds_at_scale(spec)


def _check_bounds_at_scale(spec: TwinSpec) -> None:
    """The capacity-free bound (its critical-path charge of the workflow terms) and the Lagrangian one <= optimum."""
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    inst = OracleInstance.from_hindsight(twin.hindsight())
    first_fit_usd = policy_objective(spec, first_fit)
    optimum = brute_force_optimum(spec, first_fit_usd)
    assume(optimum is not None)
    assert optimum is not None
    assert capacity_free_bound(inst) <= optimum + TOL, (capacity_free_bound(inst), optimum)
    assert scale_bound(inst, first_fit_usd, 20) <= optimum + TOL


@pytest.mark.heavy  # seconds of CPU: the rest layer (make test), not make test-fast
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflow_specs(exact_grid=True))
def test_oracle__bound_below_the_exhaustive_optimum_on_random_dags_on_the_tick_grid(spec: TwinSpec) -> None:
    """The same on the tick grid (no interruptions): releases at completions fall on the grid too."""
    _check_instance(spec, exact_grid=False)  # workflows: no exact meeting claimed


def _chain_spec(weights: ObjectiveWeights, deadline_s: float | None = None) -> TwinSpec:
    """A chain a -> b -> c of 600 s tasks on one cheap node and one dear node, one workflow of weight 2."""
    fleet = (NodeSpec("cheap", "x86_64", "on-demand", 4, 16, 0.36), NodeSpec("dear", "x86_64", "on-demand", 4, 16, 3.6))
    jobs = [
        JobSpec("a", 0.0, 600.0, "batch", 4, 2, workflow="w"),
        JobSpec("b", 0.0, 600.0, "batch", 4, 2, workflow="w", parents=("a",)),
        JobSpec("c", 0.0, 600.0, "batch", 4, 2, workflow="w", parents=("b",)),
        JobSpec("x", 0.0, 1200.0, "batch", 4, 2),  # holds the cheap node for 20 minutes if placed there first
    ]
    background = np.full((6, 2, 2), 10.0)
    return TwinSpec(
        fleet,
        Workload.of(jobs, [WorkflowSpec("w", weight=2.0, deadline_s=deadline_s)]),
        Telemetry(background, 600.0),
        EpisodeSettings(3600.0, spot_interruptions=False, weights=weights),
    )


def test_oracle__a_chain_is_planned_back_to_back_and_its_hours_are_charged() -> None:
    """The chain's tasks run one after another; the plan and the bound charge the workflow's hours exactly.

    Without a price on workflow time everything waits for the cheap node. With 4 USD per
    weighted hour the chain goes first (3 x 600 s = 0.5 h, x 2 = 1 h: 4 USD) and the
    independent job after it, or on the dear node: plan, bound and the exhaustive optimum meet.
    """
    for usd_per_hour in (0.0, 4.0):
        spec = _chain_spec(ObjectiveWeights(workflow_usd_per_hour=usd_per_hour))
        twin = DigitalTwin(spec)
        twin.reset(np.random.default_rng(0))
        result = solve_oracle(twin.hindsight())
        optimum = brute_force_optimum(spec, result.plan_objective_usd)
        assert optimum is not None
        assert result.lower_bound_usd <= optimum + TOL <= result.plan_objective_usd + 2 * TOL
        assert abs(result.plan_objective_usd - optimum) <= 1e-9, (usd_per_hour, result.plan, optimum)
        hours = result.plan_breakdown.counts[PENALTY_INDEX["workflow"]]
        assert hours >= 2.0 * 1800.0 / 3600.0 - 1e-12  # the chain takes at least 30 minutes, weight 2


def test_oracle__a_missed_workflow_deadline_is_charged_by_plan_and_bound() -> None:
    """A deadline of 1,000 s no schedule of a 1,800 s chain meets: plan and bound both count the miss."""
    spec = _chain_spec(ObjectiveWeights(workflow_deadline_miss_usd=5.0), deadline_s=1000.0)
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    result = solve_oracle(twin.hindsight())
    assert result.plan_breakdown.counts[PENALTY_INDEX["workflow_deadline"]] == 1
    assert result.lower_bound_usd >= 5.0 - TOL
    assert result.lower_bound_usd <= result.plan_objective_usd + TOL
