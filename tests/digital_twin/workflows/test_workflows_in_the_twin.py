"""Workflows in the twin: tasks wait for their parents, failures cancel descendants, workflow terms add up.

Many random episodes (random DAGs, random placements and deferrals, spot evictions, TTLs) checked
by an independent referee of the event log (tests/digital_twin/workflows/referee.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, ObjectiveWeights, Telemetry, TwinSpec
from digital_twin.workflows import WorkflowSpec
from digital_twin.workload import Workload
from tests.digital_twin.workflows.referee import check_episode, workflow_makespan_s
from tests.helpers import run_twin, seeded_random_policy
from tests.small_twins import TWO_CORES, batch, spec_of
from tests.strategies import nodes

WEIGHTS = ObjectiveWeights(workflow_usd_per_hour=0.5, workflow_deadline_miss_usd=2.0)


@st.composite
def workflow_specs(draw: st.DrawFn) -> TwinSpec:
    """A random fleet with random DAG workflows and independent jobs, evictions and TTLs on."""
    horizon_s = float(draw(st.sampled_from((1800, 3600))))
    fleet = tuple(draw(nodes(i)) for i in range(draw(st.integers(1, 4))))
    jobs: list[JobSpec] = []
    described = []
    for w in range(draw(st.integers(1, 5))):
        submitted = float(draw(st.integers(0, int(horizon_s))))
        arrivals: dict[str, float] = {}
        for k in range(draw(st.integers(1, 6))):
            parents = tuple(p for p in arrivals if draw(st.booleans()))
            late = float(draw(st.sampled_from((0, 0, 0, 300))))  # some tasks arrive after the workflow
            at = max([submitted + late, *(arrivals[p] for p in parents)])  # never before a parent
            jobs.append(_job(draw, f"w{w}-t{k}", at, horizon_s, workflow=f"w{w}", parents=parents))
            arrivals[f"w{w}-t{k}"] = at
        if draw(st.booleans()):
            deadline = draw(st.one_of(st.none(), st.floats(0, 2 * horizon_s)))
            described.append(WorkflowSpec(f"w{w}", weight=draw(st.sampled_from((1.0, 2.5))), deadline_s=deadline))
    for k in range(draw(st.integers(0, 4))):
        jobs.append(_job(draw, f"solo{k}", float(draw(st.integers(0, int(horizon_s)))), horizon_s))
    tick_s = 300.0
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    background = rng.uniform(0, 100, (int(horizon_s // tick_s), len(fleet), 2))
    settings_ = EpisodeSettings(
        horizon_s,
        queue_ttl_s=draw(st.sampled_from((None, 120.0, 900.0))),
        spot_recovery_s=draw(st.sampled_from((60.0, 600.0))),
        interference=draw(st.sampled_from(("none", "processor-sharing"))),
        weights=WEIGHTS,
    )
    return TwinSpec(fleet, Workload.of(jobs, described), Telemetry(background, tick_s), settings_)


def _job(draw: st.DrawFn, job_id: str, arrival_s: float, horizon_s: float, **fields: object) -> JobSpec:
    return JobSpec(
        job_id=job_id,
        arrival_s=arrival_s,
        duration_s=float(draw(st.integers(1, int(horizon_s / 2)))),
        workload=draw(st.sampled_from(("latency-critical", "batch", "stream"))),
        cpu_cores=draw(st.sampled_from((0.5, 1, 2, 4))),
        mem_gb=draw(st.sampled_from((0.5, 2, 8))),
        preemptible=draw(st.booleans()),
        **fields,  # type: ignore[arg-type]
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=workflow_specs(), seed=st.integers(0, 2**32 - 1), defer_prob=st.sampled_from((0.0, 0.3, 0.8)))
def test_random_workflow_episodes_keep_the_release_rules_and_count_the_terms(
    spec: TwinSpec, seed: int, defer_prob: float
) -> None:
    """No task starts before its parents complete; the workflow terms equal the referee's."""
    twin = DigitalTwin(spec, record_events=True)
    run_twin(twin, seeded_random_policy(seed, defer_prob), seed)
    hours, late = check_episode(twin)
    counts = twin.objective().as_dict()
    assert math.isclose(counts["workflow_hours"], hours, rel_tol=1e-12, abs_tol=1e-12)
    assert counts["late_workflows"] == late
    assert math.isclose(twin.metrics()["workflow_makespan_s"], workflow_makespan_s(twin), rel_tol=1e-12, abs_tol=1e-9)


def _chain_spec(**settings_: object) -> TwinSpec:
    jobs = (
        batch("a", 0.0, 100.0, workflow="w"),
        batch("b", 0.0, 50.0, workflow="w", parents=("a",)),
        batch("c", 500.0, 50.0, workflow="w", parents=("a",)),
        batch("d", 500.0, 10.0, workflow="w", parents=("b", "c")),
    )
    workload = Workload.of(jobs, [WorkflowSpec("w", weight=2.0, deadline_s=600.0)])
    return spec_of(workload, (TWO_CORES,), weights=WEIGHTS, **settings_)  # type: ignore[arg-type]


def play(spec: TwinSpec, plan: dict[str, int]) -> DigitalTwin:
    """Place each job of ``plan`` on its node as soon as asked; defer the others until they leave."""
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(0))
    while not twin.done:
        job = twin.current_job
        assert job is not None
        if job.job_id in plan and twin.can_place(plan[job.job_id]):
            twin.place(plan[job.job_id])
        else:
            twin.defer()
    return twin


def test_a_fork_join_runs_in_dependency_order_and_counts_its_time() -> None:
    """a (0-100) releases b at 100 and c at its own arrival 500; d after both (550-560)."""
    twin = play(_chain_spec(), {job: 0 for job in "abcd"})
    starts = {job: t for t, event, job, _ in twin.event_log if event == "start"}
    assert starts == {"a": 0.0, "b": 100.0, "c": 500.0, "d": 550.0}
    counts = twin.objective().as_dict()
    assert counts["workflow_hours"] == pytest.approx(2.0 * 560.0 / 3600.0)
    assert counts["late_workflows"] == 0


def test_a_rejected_task_rejects_its_descendants_and_fails_the_workflow() -> None:
    """c is never placed: its TTL rejects it at 620, which rejects d; the workflow counts until the horizon."""
    twin = play(_chain_spec(queue_ttl_s=120.0), {"a": 0, "b": 0})
    log = [(t, event, job) for t, event, job, _ in twin.event_log if job]
    assert (620.0, "rejected-ttl", "c") in log and (620.0, "rejected-upstream", "d") in log
    assert twin.job_counts()["rejected"] == 2
    counts = twin.objective().as_dict()
    assert counts["workflow_hours"] == pytest.approx(2.0 * 3600.0 / 3600.0)
    assert counts["late_workflows"] == 1 and counts["rejections"] == 2


def test_tasks_held_back_at_the_horizon_are_unserved() -> None:
    """Nothing is placed: a waits until the horizon; b, c and d, held back, are unserved too."""
    twin = play(_chain_spec(queue_ttl_s=None), {})
    counts = twin.objective().as_dict()
    assert counts["rejections"] == 4
    assert sorted(job for _, event, job, _ in twin.event_log if event == "unserved-at-horizon") == ["a", "b", "c", "d"]
