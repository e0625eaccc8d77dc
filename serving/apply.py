"""Checking a batch of events against the live cluster, then writing it into the known episode.

:func:`check_batch` finds every fault before anything changes (so a refused batch changes
nothing); :func:`apply_facts` then writes the batch into the cluster's
:class:`~serving.known.KnownEpisode` and job records. The twin is moved afterwards
(:meth:`serving.live.LiveCluster.apply`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from digital_twin import SpecError
from serving.events import CANCELLED, COMPLETED, QUEUED, RUNNING, EventBatch, EventError, JobRecord
from serving.known import KnownEpisode


class LiveCluster(Protocol):
    """What a batch is checked against and written into (:class:`serving.live.LiveCluster` has both)."""

    jobs: dict[str, JobRecord]
    known: KnownEpisode


def check_batch(cluster: LiveCluster, batch: EventBatch, t: float) -> set[str]:
    """Check ``batch`` (at ``t``) against ``cluster``; return the queued jobs it cancels.

    Raises:
        EventError: The first fault, naming its field (``submit[0].cpu_cores``, ``finish[1]``...).
    """
    jobs = cluster.jobs
    _check_unique("finish", batch.finish)
    _check_unique("cancel", [*batch.finish, *batch.cancel])
    for k, job_id in enumerate(batch.finish):
        record = jobs.get(job_id)
        if record is None or record.status != RUNNING:
            raise EventError(f"finish[{k}]", f"job {job_id!r} is {_status(record)}, not running", conflict=True)
    withdrawn = set()
    for k, job_id in enumerate(batch.cancel):
        record = jobs.get(job_id)
        if record is None or record.status not in (QUEUED, RUNNING):
            raise EventError(f"cancel[{k}]", f"job {job_id!r} is {_status(record)}: nothing to cancel", conflict=True)
        if record.status == QUEUED and record.started_s is not None:
            raise EventError(f"cancel[{k}]", f"job {job_id!r} ran before it was queued again (an eviction): the twin "
                             "cannot withdraw it; its queue TTL ends it", conflict=True)  # fmt: skip
        if record.status == QUEUED:
            withdrawn.add(job_id)
    _check_nodes(cluster, batch)
    _check_submissions(cluster, batch, t)
    _check_telemetry(cluster, batch)
    return withdrawn


def _check_submissions(cluster: LiveCluster, batch: EventBatch, t: float) -> None:
    """New ids, and jobs the twin accepts (:class:`~digital_twin.JobSpec`'s checks, the field named)."""
    jobs, seen = cluster.jobs, set()
    for k, job in enumerate(batch.submit):
        where = f"submit[{k}]"
        if job.job_id in jobs or job.job_id in seen:
            raise EventError(f"{where}.job_id", f"job {job.job_id!r} was submitted already", conflict=True)
        seen.add(job.job_id)
        try:
            job.job_spec(t)
        except SpecError as exc:
            raise EventError(f"{where}.{_field_named(str(exc))}", str(exc)) from None
        if job.deadline_s is not None and job.deadline_s < 0:
            raise EventError(f"{where}.deadline_s", "must be >= 0 (episode seconds)")


def _check_telemetry(cluster: LiveCluster, batch: EventBatch) -> None:
    """Known nodes, percentages in [0, 100]."""
    fleet = cluster.known.node_index
    for k, item in enumerate(batch.telemetry):
        if item.node_id not in fleet:
            raise EventError(f"telemetry[{k}].node_id", f"no node {item.node_id!r} in the fleet")
        for name in ("cpu_pct", "mem_pct"):
            value = getattr(item, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 100.0:
                raise EventError(f"telemetry[{k}].{name}", f"must be a percentage in [0, 100], got {value!r}")


def _check_nodes(cluster: LiveCluster, batch: EventBatch) -> None:
    """Nodes going down must be spot nodes that are up; nodes coming up must be down."""
    known, index = cluster.known, cluster.known.node_index
    _check_unique("down", batch.down)
    _check_unique("up", batch.up)
    for k, node_id in enumerate(batch.up):
        if node_id not in index:
            raise EventError(f"up[{k}]", f"no node {node_id!r} in the fleet")
        if not known.is_down(index[node_id]):
            raise EventError(f"up[{k}]", f"node {node_id!r} is not down", conflict=True)
    for k, node_id in enumerate(batch.down):
        if node_id not in index:
            raise EventError(f"down[{k}]", f"no node {node_id!r} in the fleet")
        i = index[node_id]
        if not known.fleet[i].is_spot:
            raise EventError(f"down[{k}]", f"node {node_id!r} is on-demand: the twin takes outages of spot nodes only")
        if known.is_down(i) and node_id not in batch.up:
            raise EventError(f"down[{k}]", f"node {node_id!r} is down already", conflict=True)


def apply_facts(cluster: LiveCluster, batch: EventBatch, t: float) -> None:
    """Write a checked ``batch`` at ``t`` into ``cluster``'s known episode and job records."""
    known, jobs = cluster.known, cluster.jobs
    for job_id in batch.finish:
        _end(cluster, job_id, t, COMPLETED)
    for job_id in batch.cancel:
        record = jobs[job_id]
        if record.status == RUNNING:
            _end(cluster, job_id, t, CANCELLED)
        else:
            known.withdraw(job_id)
            record.status, record.ended_s = CANCELLED, t
    for node_id in batch.up:
        known.node_up(known.node_index[node_id], t)
    for node_id in batch.down:
        known.node_down(known.node_index[node_id], t)
    for item in batch.telemetry:
        known.set_background(known.node_index[item.node_id], t, float(item.cpu_pct), float(item.mem_pct))
    for job in batch.submit:
        known.submit(job.job_spec(t))
        jobs[job.job_id] = JobRecord(job.job_id, QUEUED, None, t, t)


def _end(cluster: LiveCluster, job_id: str, t: float, status: str) -> None:
    record = cluster.jobs[job_id]
    assert record.started_s is not None
    cluster.known.end_run(job_id, record.started_s, t)
    record.status, record.ended_s = status, t


def _check_unique(field: str, ids: Iterable[str]) -> None:
    seen: set[str] = set()
    for k, item in enumerate(ids):
        if item in seen:
            raise EventError(f"{field}[{k}]", f"{item!r} is listed twice")
        seen.add(item)


def _status(record: JobRecord | None) -> str:
    return "unknown" if record is None else record.status


_JOB_FIELDS = ("job_id", "workload", "cpu_cores", "mem_gb", "gpu_count", "gpu_vram_gb", "allowed_gpu_models",
               "required_arch", "priority", "preemptible", "deadline_s", "declared_duration_s")  # fmt: skip


def _field_named(message: str) -> str:
    """The job field a :class:`~digital_twin.SpecError` message names (``duration_s`` for the declared run time)."""
    for name in _JOB_FIELDS:
        if name in message:
            return "duration_s" if name == "declared_duration_s" else name
    return "job"
