"""The live cluster in-process: evictions, TTL rejections, cancellations, refused batches and the journal."""

from __future__ import annotations

from pathlib import Path

import pytest

import scenarios
from serving.events import EventBatch, EventError, JobRequest
from serving.live import LiveCluster
from serving.service import PlacementService

ARM = "node-arm-02"


def job(job_id: str, cores: float = 4.0, arch: str | None = None, preemptible: bool = False) -> JobRequest:
    return JobRequest(job_id, "batch", cores, 8.0, 600.0, required_arch=arch, preemptible=preemptible)


def cluster(agent: str = "first-fit") -> LiveCluster:
    return LiveCluster(scenarios.load("fleet5-synthetic"), agent)


def test_live__a_spot_node_going_down_evicts_its_jobs() -> None:
    """Down: the preemptible job on it is queued again (and placed elsewhere), the other one fails."""
    live = cluster()
    live.apply(EventBatch(1.0, submit=(job("keep", arch="arm64", preemptible=True), job("lose", arch="arm64"))))
    assert live.jobs["keep"].node_id == ARM and live.jobs["lose"].node_id == ARM
    result = live.apply(EventBatch(2.0, down=(ARM,)))
    assert live.jobs["lose"].status == "failed"
    assert live.jobs["keep"].status == "queued" and live.jobs["keep"].queued_s == 2.0  # no other arm64 node
    assert {r.job_id for r in result.changed} == {"keep", "lose"}
    result = live.apply(EventBatch(3.0, up=(ARM,)))
    assert [(d.job_id, d.node_id) for d in result.decisions] == [("keep", ARM)]


def test_live__a_job_waiting_past_its_ttl_is_rejected_at_its_expiry() -> None:
    """A queued job is rejected when the scenario's TTL (1800 s) runs out, with that time as its end."""
    live = cluster()
    live.apply(EventBatch(1.0, submit=(job("big", cores=32, arch="x86_64"),)))
    live.apply(EventBatch(2.0, submit=(job("wait", cores=32, arch="x86_64"),)))
    assert live.jobs["wait"].status == "queued"
    live.apply(EventBatch(1000.0))
    assert live.jobs["wait"].status == "queued"  # not yet: the twin may stand past now, the records never do
    live.apply(EventBatch(1900.0))
    assert live.jobs["wait"].status == "rejected" and live.jobs["wait"].ended_s == 1802.0


def test_live__cancelling_a_queued_job_is_as_if_it_was_never_submitted() -> None:
    """After a queued job is cancelled, the decisions are those of the episode without it (FIFO would put it first)."""
    events = [
        EventBatch(1.0, submit=(job("a", cores=32, arch="x86_64"),)),
        EventBatch(2.0, submit=(job("b", cores=30, arch="x86_64"), job("c", cores=20, arch="x86_64"))),
        EventBatch(3.0, finish=("a",)),
    ]
    with_cancel, without = cluster(), cluster()
    for live in (with_cancel, without):
        live.apply(events[0])
    with_cancel.apply(events[1])
    with_cancel.apply(EventBatch(2.5, cancel=("b",)))
    without.apply(EventBatch(2.0, submit=(job("c", cores=20, arch="x86_64"),)))
    assert with_cancel.jobs["b"].status == "cancelled" and with_cancel.jobs["c"].status == "queued"
    late = [(d.job_id, d.node_id) for d in with_cancel.apply(events[2]).decisions]
    assert late == [(d.job_id, d.node_id) for d in without.apply(events[2]).decisions] == [("c", "node-cpu-01")]


def test_live__a_refused_batch_changes_nothing() -> None:
    """A batch with one bad event is refused whole: no job of it is submitted, the clock does not move."""
    live = cluster()
    live.apply(EventBatch(1.0, submit=(job("a"),)))
    with pytest.raises(EventError) as refused:
        live.apply(EventBatch(5.0, submit=(job("b"),), finish=("nope",)))
    assert refused.value.field == "finish[0]" and refused.value.conflict
    assert set(live.jobs) == {"a"} and live.time_s == 1.0
    with pytest.raises(EventError, match="cpu_cores"):
        live.apply(EventBatch(5.0, submit=(job("c", cores=-1),)))


def test_service__a_state_file_replays_to_the_same_episode(tmp_path: Path) -> None:
    """Saved and replayed, the journal gives the same job records and decisions, the agent not asked again."""
    service = PlacementService(cluster("aco"), state_path=tmp_path / "state.json")
    service.apply(EventBatch(1.0, submit=tuple(job(f"j{k}", cores=3) for k in range(12))))
    service.apply(EventBatch(50.0, finish=("j0", "j3"), submit=(job("late", cores=6),)))
    service.save()
    fresh = cluster("aco")

    def not_asked(*args: object, **kwargs: object) -> None:
        raise AssertionError("a replay takes the recorded decisions: the agent is not asked")

    fresh.agent.predict = not_asked  # type: ignore[method-assign]
    again = PlacementService(fresh, state_path=tmp_path / "state.json")
    assert again.cluster.jobs == service.cluster.jobs
    assert [(d.job_id, d.node_id) for d in again.cluster.decisions] == [
        (d.job_id, d.node_id) for d in service.cluster.decisions
    ]


def test_service__a_damaged_state_file_is_one_clear_error(tmp_path: Path) -> None:
    """A state file of another scenario, or not JSON, is refused naming the file and what is wrong."""
    from serving.service import StateFileError

    path = tmp_path / "state.json"
    path.write_text("{not json")
    with pytest.raises(StateFileError, match=r"state\.json: cannot read"):
        PlacementService(cluster(), state_path=path)
    path.write_text('{"format": "aco-env-live-journal", "scenario": "toy3", "batches": []}')
    with pytest.raises(StateFileError, match="scenario"):
        PlacementService(cluster(), state_path=path)


def test_service__concurrent_clients_are_grouped_and_cancellations_replay() -> None:
    """8 threads submit, cancel queued jobs and finish running ones on the service's clock: no error, nothing lost."""
    import threading

    from serving.loadtest import check_journal

    service = PlacementService(cluster())
    errors: list[BaseException] = []

    def client(index: int) -> None:
        try:
            for k in range(15):
                job_id = f"c{index}-{k}"
                cores = 30 if k % 3 == 0 else 1  # the big ones often wait: then they are cancelled
                service.apply(EventBatch(None, submit=(job(job_id, cores=cores, arch="x86_64"),)))
                status = service.job(job_id).status
                verb = "finish" if status == "running" else "cancel"
                service.apply(EventBatch(None, **{verb: (job_id,)}))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    records = service.cluster.jobs
    assert len(records) == 120 and all(r.status in ("completed", "cancelled") for r in records.values())
    assert any(r.status == "cancelled" for r in records.values())
    exceeded, twice, _ = check_journal(service.journal(), service.cluster.known.fleet)
    assert exceeded == 0 and twice == 0


@pytest.mark.heavy
def test_live__every_online_agent_serves_and_hindsight_agents_are_refused() -> None:
    """Each registered online agent places a stream of jobs in a live cluster; the oracle is refused by name."""
    import agents
    from agents import AgentSpecError, is_hindsight_agent
    from serving.build import build_service

    online = [name for name in agents.agent_names() if not is_hindsight_agent(name)]
    assert {"first-fit", "aco", "lookahead"} <= set(online)
    for name in online:
        live = cluster(name)
        for k in range(8):
            ended = (f"j{k - 3}",) if k >= 3 and live.jobs[f"j{k - 3}"].status == "running" else ()
            live.apply(EventBatch(10.0 * k, submit=(job(f"j{k}", cores=2),), finish=ended))
        assert sum(d.node_id is not None for d in live.decisions) == 8, name
    with pytest.raises(AgentSpecError, match="future"):
        build_service("oracle", "fleet5-synthetic")
