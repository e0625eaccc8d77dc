"""The events a live cluster pushes, the decisions it gets back, and the jobs as the service knows them.

Plain frozen dataclasses, free of any web framework: the HTTP layer (:mod:`serving.api_models`),
the Kubernetes extender (:mod:`serving.kube`) and the Slurm bridge (:mod:`serving.slurm`) all
turn their inputs into these and hand them to :class:`serving.live.LiveCluster`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from digital_twin import JobSpec, SpecError
from serving.known import OPEN_RUN_S

QUEUED, RUNNING, COMPLETED, CANCELLED, FAILED, REJECTED = (
    "queued",
    "running",
    "completed",
    "cancelled",
    "failed",
    "rejected",
)
JOB_STATUSES = (QUEUED, RUNNING, COMPLETED, CANCELLED, FAILED, REJECTED)
"""A job's status in the service: queued (waiting for a node), running, then one of the four ends."""
ACTIVE = frozenset({QUEUED, RUNNING})


class EventError(ValueError):
    """An event the live cluster refuses; nothing of its batch was applied.

    Attributes:
        field: The request field at fault (``"submit[2].cpu_cores"``, ``"finish[0]"``, ``"time_s"``).
        conflict: True when the event contradicts the cluster's state (an unknown or finished job, a
            node already down, a time before the clock: HTTP 409), False when it is malformed (422).
    """

    def __init__(self, field: str, message: str, conflict: bool = False) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.conflict = conflict


@dataclass(frozen=True)
class JobRequest:
    """A job as its submitter states it (the fields of :class:`digital_twin.JobSpec` an online scheduler knows).

    Attributes:
        job_id: Unique in the live episode.
        workload: ``"latency-critical"``, ``"batch"`` or ``"stream"``.
        cpu_cores: CPU request, cores (> 0).
        mem_gb: Memory request, GB (> 0).
        duration_s: The run time the submitter declares, seconds (> 0): what agents see; the
            cluster's reported end is the real one.
        gpu_count, gpu_vram_gb, allowed_gpu_models, required_arch, priority, preemptible,
        deadline_s: As in :class:`digital_twin.JobSpec` (``deadline_s`` in episode seconds).
    """

    job_id: str
    workload: str
    cpu_cores: float
    mem_gb: float
    duration_s: float
    gpu_count: int = 0
    gpu_vram_gb: float = 0.0
    allowed_gpu_models: tuple[str, ...] | None = None
    required_arch: str | None = None
    priority: int = 50
    preemptible: bool = False
    deadline_s: float | None = None

    def job_spec(self, arrival_s: float) -> JobSpec:
        """The twin's job, submitted at ``arrival_s``, its end not known yet.

        Raises:
            SpecError: A field out of range (the message names the job and the field).
        """
        return JobSpec(
            self.job_id, arrival_s, OPEN_RUN_S, self.workload, self.cpu_cores, self.mem_gb, self.gpu_count,
            self.gpu_vram_gb, self.allowed_gpu_models, self.required_arch, self.priority, self.preemptible,
            self.deadline_s, declared_duration_s=self.duration_s,
        )  # fmt: skip

    @classmethod
    def of(cls, job: JobSpec) -> JobRequest:
        """What the submitter of ``job`` states: its declared run time, not the true one."""
        declared = job.declared_duration_s if job.declared_duration_s is not None else job.duration_s
        return cls(
            job.job_id, job.workload, job.cpu_cores, job.mem_gb, declared, job.gpu_count, job.gpu_vram_gb,
            job.allowed_gpu_models, job.required_arch, job.priority, job.preemptible, job.deadline_s,
        )  # fmt: skip


@dataclass(frozen=True)
class Background:
    """A node's background load (other tenants), measured now: cpu % and mem % in [0, 100]."""

    node_id: str
    cpu_pct: float
    mem_pct: float


@dataclass(frozen=True)
class EventBatch:
    """Everything that happened at one instant, applied together (the twin orders them as it would).

    Attributes:
        time_s: Seconds since the live episode started; ``None``: the service's clock now.
        submit: Jobs submitted.
        finish: Ids of running jobs that ended (completed).
        cancel: Ids of jobs cancelled (running ones end now; queued ones are withdrawn).
        telemetry: Background loads measured now.
        down: Spot nodes that went down (their running jobs are evicted).
        up: Nodes back up.
    """

    time_s: float | None = None
    submit: tuple[JobRequest, ...] = ()
    finish: tuple[str, ...] = ()
    cancel: tuple[str, ...] = ()
    telemetry: tuple[Background, ...] = ()
    down: tuple[str, ...] = ()
    up: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (the journal's form): :meth:`from_dict` reads it back."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EventBatch:
        """The batch :meth:`as_dict` wrote."""
        submit = tuple(
            JobRequest(**{**job, "allowed_gpu_models": _tuple_or_none(job.get("allowed_gpu_models"))})
            for job in data.get("submit", ())
        )
        return cls(
            data.get("time_s"), submit, tuple(data.get("finish", ())), tuple(data.get("cancel", ())),
            tuple(Background(**item) for item in data.get("telemetry", ())),
            tuple(data.get("down", ())), tuple(data.get("up", ())),
        )  # fmt: skip


def _tuple_or_none(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


@dataclass(frozen=True)
class Decision:
    """One decision the agent took (or the journal replayed).

    Attributes:
        time_s: Episode seconds.
        job_id: The job decided.
        node_id: Where it starts; ``None``: deferred (it stays queued).
        latency_ms: Wall time the agent took to decide, ms (0 for a replayed decision).
    """

    time_s: float
    job_id: str
    node_id: str | None
    latency_ms: float


@dataclass
class JobRecord:
    """A job as the service knows it.

    Attributes:
        job_id: Its id.
        status: One of :data:`JOB_STATUSES`.
        node_id: Its node while running (``None`` otherwise), or the node it ended on.
        submitted_s: When it was submitted, episode seconds.
        queued_s: When its current (or last) queue spell began (submission, or an eviction).
        started_s: When its current (or last) run started (``None``: never).
        ended_s: When it reached its end status (``None``: not yet).
    """

    job_id: str
    status: str
    node_id: str | None
    submitted_s: float
    queued_s: float
    started_s: float | None = None
    ended_s: float | None = None


__all__ = [
    "ACTIVE",
    "CANCELLED",
    "COMPLETED",
    "FAILED",
    "JOB_STATUSES",
    "QUEUED",
    "REJECTED",
    "RUNNING",
    "Background",
    "Decision",
    "EventBatch",
    "EventError",
    "JobRecord",
    "JobRequest",
    "SpecError",
]
