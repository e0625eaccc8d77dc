"""The waiting-time term: hours queued over every queue spell, and stale TTL entries that wake nothing."""

from __future__ import annotations

import numpy as np
import pytest

from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, ObjectiveWeights, Telemetry, TwinSpec, default_fleet

WEIGHTS = ObjectiveWeights(wait_usd_per_job_hour=2.0)


def _twin(jobs: tuple[JobSpec, ...], horizon_s: float = 7200.0, **settings: object) -> DigitalTwin:
    fleet = default_fleet()
    telemetry = Telemetry.constant(len(fleet), 20, 30, horizon_s, 300)
    fixed = settings.pop("fixed_interruptions_s", None)
    twin = DigitalTwin(TwinSpec(fleet, jobs, telemetry, EpisodeSettings(horizon_s, weights=WEIGHTS, **settings), fixed))
    twin.reset(np.random.default_rng(0))
    return twin


def test_wait__is_counted_from_arrival_to_the_first_start() -> None:
    """A job deferred over two ticks and then placed waited 600 s - 100 s = 500 s."""
    twin = _twin((JobSpec("j", 100, 60, "batch", 1, 1),), spot_interruptions=False)
    twin.defer()  # asked at 100 s, again at the ticks 300 s and 600 s
    twin.defer()
    assert twin.time_s == 600.0
    twin.place(0)
    while not twin.done:
        twin.defer()
    objective = twin.objective()
    assert objective["wait_job_hours"] == pytest.approx(500 / 3600, rel=1e-12)
    assert objective["wait_usd"] == pytest.approx(2.0 * 500 / 3600, rel=1e-12)
    assert objective.total_usd == pytest.approx(objective.cost_usd + objective["wait_usd"], rel=1e-12)


def test_wait__of_unserved_jobs_runs_until_they_leave_the_queue() -> None:
    """TTL rejection: the TTL; still queued at the horizon: until the horizon; unplaceable: nothing."""
    jobs = (
        JobSpec("ttl", 0, 60, "batch", 1, 1),
        JobSpec("horizon", 3000, 60, "batch", 1, 1),
        JobSpec("huge", 100, 60, "batch", 64, 8),
    )
    twin = _twin(jobs, horizon_s=3600.0, queue_ttl_s=1000.0)
    while not twin.done:
        twin.defer()
    objective = twin.objective()
    assert objective["rejections"] == 3
    assert objective["wait_job_hours"] == pytest.approx((1000 + 600) / 3600, rel=1e-12)


def test_wait__counts_every_queue_spell_of_an_evicted_job() -> None:
    """Requeued by an eviction at 1200 s, a preemptible job waits again: until its TTL, or its next start."""
    fleet = default_fleet()
    spot = next(i for i, node in enumerate(fleet) if node.is_spot)
    jobs = (JobSpec("p", 0, 3000, "batch", 1, 1, preemptible=True),)
    interruptions = tuple((1200.0,) if i == spot else () for i in range(len(fleet)))
    twin = _twin(jobs, queue_ttl_s=900.0, fixed_interruptions_s=interruptions)
    twin.place(spot)  # at 0 s: no wait
    while not twin.done:  # requeued at 1200 s, then deferred until its TTL rejects it at 2100 s
        twin.defer()
    assert twin.time_s >= 2100.0 and twin.job_counts()["rejected"] == 1
    assert twin.objective()["wait_job_hours"] == pytest.approx(900 / 3600, rel=1e-12)

    restarted = _twin(jobs, queue_ttl_s=900.0, fixed_interruptions_s=interruptions)
    restarted.place(spot)
    while restarted.time_s < 1500.0:  # requeued at 1200 s, asked again at the ticks
        restarted.defer()
    assert restarted.time_s == 1500.0
    restarted.place(0)
    while not restarted.done:
        restarted.defer()
    assert restarted.objective()["wait_job_hours"] == pytest.approx(300 / 3600, rel=1e-12)
    assert restarted.metrics()["mean_wait_s"] == pytest.approx(300.0, rel=1e-12)


def _decision_times(twin: DigitalTwin, job_id: str) -> list[float]:
    """Play ``twin`` placing every job but ``job_id`` on node 0 and deferring that one; when it was asked."""
    asked = []
    while not twin.done:
        if twin.current_job.job_id == job_id:
            asked.append(twin.time_s)
            twin.defer()
        else:
            twin.place(0)
    return asked


def test_ttl_entry_of_a_started_job_wakes_nothing() -> None:
    """Job ``a`` starts at 0 s (TTL 1000 s): a deferred job is not asked again at 1000 s, when nothing happens."""
    jobs = (JobSpec("a", 0, 60, "batch", 1, 1), JobSpec("b", 100, 60, "batch", 1, 1))
    twin = _twin(jobs, queue_ttl_s=1000.0, spot_interruptions=False)
    assert _decision_times(twin, "b") == [100.0, 300.0, 600.0, 900.0]  # the ticks; b's TTL ends it at 1100 s


def test_completion_of_an_evicted_run_wakes_nothing() -> None:
    """A run cut short at 1200 s would have completed at 1400 s: a deferred job is not asked again then."""
    fleet = default_fleet()
    spot = next(i for i, node in enumerate(fleet) if node.is_spot)
    jobs = (JobSpec("p", 0, 1400, "batch", 1, 1), JobSpec("b", 1250, 60, "batch", 1, 1))
    interruptions = tuple((1200.0,) if i == spot else () for i in range(len(fleet)))
    twin = _twin(jobs, horizon_s=1800.0, queue_ttl_s=500.0, fixed_interruptions_s=interruptions)
    twin.place(spot)
    assert _decision_times(twin, "b") == [1250.0, 1500.0]  # the tick at 1500 s; b's TTL ends it at 1750 s
