"""The twin's protocol: invalid placements, rejections, spot draws, hindsight, spec errors."""

from __future__ import annotations

import numpy as np
import pytest

from digital_twin import (
    DigitalTwin,
    EpisodeSettings,
    InvalidPlacementError,
    JobSpec,
    SpecError,
    Telemetry,
    TwinSpec,
    default_fleet,
)
from tests.helpers import apply_action, first_fit, run_twin


def spec_with(jobs: tuple[JobSpec, ...], horizon_s: float = 7200.0, **settings: object) -> TwinSpec:
    fleet = default_fleet()
    telemetry = Telemetry.constant(len(fleet), 20, 30, horizon_s, 300)
    return TwinSpec(fleet, jobs, telemetry, EpisodeSettings(horizon_s, **settings))


def test_place__invalid_node_raises_and_changes_nothing() -> None:
    """Placing on a node that cannot take the job raises and leaves the state as it was."""
    jobs = (JobSpec("gpu-job", 0, 600, "batch", 2, 4, gpu_count=2),)
    twin = DigitalTwin(spec_with(jobs), record_events=True)
    twin.reset(np.random.default_rng(0))
    before = (twin.event_log, twin.objective(), twin.job_counts(), [a.tolist() for a in twin.node_free()])
    for node in (0, 1, 2, 99, -1):
        with pytest.raises(InvalidPlacementError, match=r"gpu-job|node index"):
            twin.place(node)
    assert (twin.event_log, twin.objective(), twin.job_counts(), [a.tolist() for a in twin.node_free()]) == before
    assert twin.feasible_mask() == [False, False, False, True, True]
    twin.place(3)
    assert twin.terminated


def test_twin__unplaceable_job_is_rejected_on_arrival() -> None:
    """A job that fits on no node of the fleet, even empty, is rejected at once (no decision asked)."""
    jobs = (JobSpec("huge", 0, 60, "batch", 64, 8), JobSpec("ok", 10, 60, "batch", 1, 1))
    twin = DigitalTwin(spec_with(jobs))
    twin.reset(np.random.default_rng(0))
    assert twin.current_job is not None and twin.current_job.job_id == "ok"
    assert twin.job_counts()["rejected"] == 1


def test_twin__ttl_rejects_a_job_that_waits_too_long() -> None:
    """Deferring until the TTL expires rejects the job at enqueue time + TTL."""
    jobs = (JobSpec("j", 0, 60, "batch", 1, 1),)
    twin = DigitalTwin(spec_with(jobs, queue_ttl_s=1000.0), record_events=True)
    twin.reset(np.random.default_rng(0))
    asked_at = []
    while not twin.done:
        asked_at.append(twin.time_s)
        twin.defer()
    assert asked_at == [0.0, 300.0, 600.0, 900.0]  # re-asked after each tick
    assert twin.event_log[-1] == (1000.0, "rejected-ttl", "j", "")
    assert twin.objective()["rejections"] == 1 and twin.terminated


def test_twin__preemptible_job_returns_to_the_queue_when_evicted() -> None:
    """An interruption re-queues preemptible jobs (progress lost) and fails the others."""
    fleet = default_fleet()
    jobs = (JobSpec("keep", 0, 3000, "batch", 1, 1, preemptible=True), JobSpec("lose", 0, 3000, "batch", 1, 1))
    interruptions = ((), (1000.0,), (), (), ())
    spec = TwinSpec(
        fleet,
        jobs,
        Telemetry.constant(5, 20, 30, 7200, 300),
        EpisodeSettings(7200),
        fixed_interruptions_s=interruptions,
    )
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(0))
    twin.place(1)
    twin.place(1)
    assert twin.time_s == 1000.0 and twin.current_job.job_id == "keep"
    assert not twin.can_place(1)  # the node is down
    twin.place(0)
    assert twin.terminated and twin.time_s == 4000.0
    assert twin.job_counts()["completed"] == 1 and twin.job_counts()["failed"] == 1
    arm_rate = 0.12 / 3600 / 16
    cpu_rate = 0.48 / 3600 / 32
    assert twin.objective().cost_usd == pytest.approx(2 * arm_rate * 1000 + cpu_rate * 3000)


def test_twin__horizon_truncates_with_jobs_running() -> None:
    """Jobs still running at the horizon leave the episode truncated, costs counted to the horizon."""
    jobs = (JobSpec("long", 0, 10_000, "batch", 32, 8),)
    twin = DigitalTwin(spec_with(jobs, horizon_s=3600.0))
    twin.reset(np.random.default_rng(0))
    twin.place(0)
    assert twin.truncated and twin.time_s == 3600.0
    assert twin.objective().cost_usd == pytest.approx(0.48)


def test_spot_draws__match_the_poisson_rate() -> None:
    """Over many seeds the mean interruption count matches -ln(1-p) per hour (recovery aside)."""
    fleet = default_fleet()
    spec = TwinSpec(
        fleet,
        (JobSpec("j", 0, 1, "batch", 1, 1),),
        Telemetry.constant(5, 0, 0, 36_000, 300),
        EpisodeSettings(36_000, spot_recovery_s=1.0),
    )
    counts = []
    for seed in range(400):
        twin = DigitalTwin(spec)
        twin.reset(np.random.default_rng(seed))
        counts.append([len(t) for t in twin.hindsight().interruptions_s])
    mean = np.mean(counts, axis=0)
    expected = [10 * n.interruption_rate_per_s * 3600 for n in fleet]
    assert mean[[0, 2, 3]].tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(mean[[1, 4]], np.array(expected)[[1, 4]], rtol=0.1)


def test_hindsight__is_read_only_and_agrees_with_the_run() -> None:
    """The hindsight arrays cannot be written, and the interruptions it shows happen in the run."""
    jobs = tuple(JobSpec(f"j{k}", 60.0 * k, 1200, "batch", 2, 2, preemptible=True) for k in range(40))
    spec = TwinSpec(default_fleet(), jobs, Telemetry.constant(5, 20, 30, 36_000, 300), EpisodeSettings(36_000))
    twin = DigitalTwin(spec, record_events=True)
    seed = next(s for s in range(100) if any(_view(spec, s).interruptions_s))
    view = _view(spec, seed)
    with pytest.raises(ValueError, match="read-only"):
        view.background_cpu_pct[0, 0] = 1.0
    run_twin(twin, first_fit, seed)
    logged = [(t, node) for t, event, _, node in twin.event_log if event == "interruption"]
    promised = sorted(
        (t, spec.fleet[i].node_id)
        for i, times in enumerate(view.interruptions_s)
        for t in times
        if t <= twin.time_s  # the episode ends when every job is terminal
    )
    assert logged and sorted(logged) == promised
    node, times = next((i, times) for i, times in enumerate(view.interruptions_s) if times)
    assert view.is_down(node, times[0]) and not view.is_down(node, times[0] + spec.settings.spot_recovery_s)


def _view(spec: TwinSpec, seed: int):  # a small local helper
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(seed))
    return twin.hindsight()


def test_twin_spec__telemetry_shorter_than_horizon_is_an_error() -> None:
    """A trace that ends before the horizon is refused with both lengths in the message."""
    with pytest.raises(SpecError, match="covers 3000 s, shorter than the horizon of 7200 s"):
        TwinSpec(default_fleet(), (), Telemetry.constant(5, 0, 0, 3000, 300), EpisodeSettings(7200))


def test_twin_spec__telemetry_node_count_must_match_fleet() -> None:
    """Telemetry columns and fleet size must agree."""
    with pytest.raises(SpecError, match="3 node columns but the fleet has 5"):
        TwinSpec(default_fleet(), (), Telemetry.constant(3, 0, 0, 3600, 300), EpisodeSettings(3600))


@pytest.mark.parametrize("bad", [np.nan, -1.0, 101.0])
def test_telemetry__rejects_bad_values_with_their_position(bad: float) -> None:
    """NaN or out-of-range background values are refused, naming the tick and node."""
    array = np.full((4, 2, 2), 10.0)
    array[2, 1, 0] = bad
    with pytest.raises(SpecError, match="tick 2, node 1"):
        Telemetry(array, 300)


def test_twin__jobs_queued_at_the_horizon_pay_the_rejection_penalty() -> None:
    """Deferring a job until the horizon is not free: it is charged as unserved (and stays pending)."""
    jobs = (JobSpec("late", 3500, 60, "batch", 1, 1),)
    twin = DigitalTwin(spec_with(jobs, horizon_s=3600.0), record_events=True)
    twin.reset(np.random.default_rng(0))
    while not twin.done:
        twin.defer()
    assert twin.truncated and twin.job_counts()["pending"] == 1
    assert twin.objective()["rejections"] == 1
    assert twin.event_log[-1] == (3600.0, "unserved-at-horizon", "late", "")


def test_objective_dict__agrees_with_the_breakdown() -> None:
    """The hot-path dict and scalar equal ObjectiveBreakdown.as_dict() and total_usd."""
    from tests.toy3 import TOY3_ACTIONS, toy3_spec

    twin = DigitalTwin(toy3_spec())
    twin.reset(np.random.default_rng(0))
    for action in TOY3_ACTIONS:
        assert twin.objective_dict() == pytest.approx(twin.objective().as_dict())
        assert twin.objective_usd() == pytest.approx(twin.objective().total_usd)
        apply_action(twin, action)
    assert twin.objective_dict() == pytest.approx(twin.objective().as_dict())


def test_twin__deadline_is_judged_at_the_first_start_only() -> None:
    """A job started on time, evicted and restarted after its deadline pays no deadline penalty."""
    fleet = default_fleet()
    jobs = (JobSpec("j", 0, 3000, "batch", 1, 1, preemptible=True, deadline_s=100.0),)
    spec = TwinSpec(
        fleet,
        jobs,
        Telemetry.constant(5, 20, 30, 7200, 300),
        EpisodeSettings(7200),
        fixed_interruptions_s=((), (1000.0,), (), (), ()),
    )
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    twin.place(1)  # on time, on the spot node that fails at 1000 s
    assert twin.time_s == 1000.0
    twin.place(0)  # restarted long after the deadline
    assert twin.objective()["deadline_misses"] == 0 and twin.terminated


@pytest.mark.parametrize("cpu_cores", [0.0004, 0.0])
def test_twin__a_gpu_job_below_one_millicore_pays_for_its_gpus_to_the_end(cpu_cores: float) -> None:
    """A GPU job whose cpu rounds to 0 millicores keeps paying its GPU share after another job ends.

    Node 3 (on-demand A100, 3.20 $/h, 4 GPUs): the GPU job (1 GPU, 3,600 s) costs 0.80 $; the
    CPU job on node 0 (4 of 32 cores at 0.48 $/h, 600 s) costs 0.01 $ and ends first.
    """
    if cpu_cores == 0.0:
        with pytest.raises(SpecError, match="cpu_cores"):
            JobSpec("gpu", 0, 3600, "batch", cpu_cores, 4, gpu_count=1)
        return
    jobs = (JobSpec("gpu", 0, 3600, "batch", cpu_cores, 4, gpu_count=1), JobSpec("cpu", 0, 600, "batch", 4, 8))
    twin = DigitalTwin(spec_with(jobs, horizon_s=7200.0))
    twin.reset(np.random.default_rng(0))
    twin.place(3)
    twin.place(0)
    assert twin.terminated
    assert twin.objective().cost_usd == pytest.approx(3.20 / 4 + 0.48 * 4 / 32 * 600 / 3600, rel=1e-12)


def test_reset__a_twin_reset_again_plays_the_episode_a_new_twin_plays() -> None:
    """The first reset starts from the state the constructor made; later resets from a new one: all equal."""
    jobs = tuple(JobSpec(f"j{k}", 60.0 * k, 900.0, "batch", 4, 8, preemptible=True) for k in range(40))
    spec = spec_with(jobs, horizon_s=36_000.0, spot_recovery_s=600.0)

    def played(twin: DigitalTwin, seed: int) -> tuple[object, ...]:
        times = run_twin(twin, first_fit, seed)
        return times, twin.decisions(), twin.objective(), twin.hindsight().interruptions_s

    reused = DigitalTwin(spec)
    episodes = [played(reused, seed) for seed in (3, 4, 3)]
    assert episodes == [played(DigitalTwin(spec), seed) for seed in (3, 4, 3)]
    assert episodes[0] != episodes[1] and any(episodes[1][3])  # the seeds' spot outages differ
