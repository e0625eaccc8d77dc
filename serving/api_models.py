"""The HTTP service's request and response bodies (pydantic), and their translation to :mod:`serving.events`.

Field names follow the twin's (``cpu_cores``, ``mem_gb``, ``duration_s``); the reference system's
names are accepted too (``workload_type``, ``cpu_cores_min``, ``memory_gb_min``), and its answer
to ``POST /jobs`` is kept (``status``, ``node_id``, ``scheduling_latency_ms``). Every number is
finite; unknown fields are refused, so a typo is a 422 naming it, not a silent default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from digital_twin.fleet import MAX_AMOUNT
from serving.events import Background, Decision, EventBatch, JobRecord, JobRequest

Workload = Literal["latency-critical", "batch", "stream"]
Arch = Literal["x86_64", "arm64", "gpu-node"]
NameJob = Callable[[], str]
"""Returns a fresh job id (for jobs submitted without one)."""


def _seconds() -> float | None:
    """The ``time_s`` field of an event body."""
    return Field(default=None, ge=0.0, le=1e12, description="Episode seconds; omitted: the service's clock now.")


class Body(BaseModel):
    """Strict bodies: unknown fields and non-finite numbers are refused."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)


class JobIn(Body):
    """A job to place (``POST /jobs``, ``submit`` of ``POST /events``)."""

    job_id: str | None = Field(None, min_length=1, max_length=253, description="Unique; omitted: the service names it.")
    workload: Workload = Field("batch", validation_alias=AliasChoices("workload", "workload_type"))
    cpu_cores: float = Field(gt=0.0, le=MAX_AMOUNT, validation_alias=AliasChoices("cpu_cores", "cpu_cores_min"))
    mem_gb: float = Field(gt=0.0, le=MAX_AMOUNT, validation_alias=AliasChoices("mem_gb", "memory_gb_min"))
    duration_s: float | None = Field(
        None, gt=0.0, le=1e9, description="Declared run time; omitted: the service's default."
    )
    gpu_count: int = Field(0, ge=0, le=10**6)
    gpu_vram_gb: float = Field(0.0, ge=0.0, le=1e6)
    allowed_gpu_models: list[str] | None = None
    required_arch: Arch | None = None
    priority: int = Field(50, ge=1, le=100)
    preemptible: bool = False
    deadline_s: float | None = Field(None, ge=0.0, le=1e12)

    def request(self, job_id: str, default_duration_s: float) -> JobRequest:
        """The job as :class:`serving.events.JobRequest`."""
        models = tuple(self.allowed_gpu_models) if self.allowed_gpu_models is not None else None
        duration = self.duration_s if self.duration_s is not None else default_duration_s
        return JobRequest(
            job_id, self.workload, self.cpu_cores, self.mem_gb, duration, self.gpu_count, self.gpu_vram_gb, models,
            self.required_arch, self.priority, self.preemptible, self.deadline_s,
        )  # fmt: skip


class SubmitIn(JobIn):
    """``POST /jobs``: one job, submitted at ``time_s``."""

    time_s: float | None = _seconds()


class At(Body):
    """A body that only says when (``finish``, ``cancel``, ``down``, ``up``)."""

    time_s: float | None = _seconds()


class BackgroundIn(Body):
    """A node's background load (other tenants) measured now."""

    node_id: str = Field(min_length=1)
    cpu_pct: float = Field(ge=0.0, le=100.0)
    mem_pct: float = Field(ge=0.0, le=100.0)


class TelemetryIn(Body):
    """``POST /nodes/{node_id}/telemetry``."""

    time_s: float | None = _seconds()
    cpu_pct: float = Field(ge=0.0, le=100.0)
    mem_pct: float = Field(ge=0.0, le=100.0)


class EventsIn(Body):
    """``POST /events``: everything that happened at one instant (applied together, as the twin orders it)."""

    time_s: float | None = _seconds()
    submit: list[JobIn] = Field(default_factory=list, max_length=10_000)
    finish: list[str] = Field(default_factory=list, max_length=10_000)
    cancel: list[str] = Field(default_factory=list, max_length=10_000)
    telemetry: list[BackgroundIn] = Field(default_factory=list, max_length=10_000)
    down: list[str] = Field(default_factory=list, max_length=10_000)
    up: list[str] = Field(default_factory=list, max_length=10_000)

    def batch(self, name_job: NameJob, default_duration_s: float) -> EventBatch:
        """The :class:`serving.events.EventBatch` (jobs without an id are named by ``name_job``)."""
        return EventBatch(
            self.time_s,
            tuple(job.request(job.job_id or name_job(), default_duration_s) for job in self.submit),
            tuple(self.finish), tuple(self.cancel),
            tuple(Background(b.node_id, b.cpu_pct, b.mem_pct) for b in self.telemetry),
            tuple(self.down), tuple(self.up),
        )  # fmt: skip


class EpisodeIn(Body):
    """``POST /episode``: start a new, empty live episode at time 0."""

    seed: int = Field(0, ge=0, le=2**63 - 1)


class DecisionOut(BaseModel):
    """A decision the agent took."""

    time_s: float
    job_id: str
    node_id: str | None = Field(description="Where the job starts; null: deferred (it stays queued).")
    latency_ms: float = Field(description="The agent's decision time, ms.")

    @classmethod
    def of(cls, decision: Decision) -> DecisionOut:
        """From a :class:`serving.events.Decision`."""
        return cls(time_s=decision.time_s, job_id=decision.job_id, node_id=decision.node_id,
                   latency_ms=decision.latency_ms)  # fmt: skip


class JobOut(BaseModel):
    """A job as the service knows it."""

    job_id: str
    status: Literal["queued", "running", "completed", "cancelled", "failed", "rejected"]
    node_id: str | None
    submitted_s: float
    queued_s: float
    started_s: float | None
    ended_s: float | None

    @classmethod
    def of(cls, record: JobRecord) -> JobOut:
        """From a :class:`serving.events.JobRecord`."""
        return cls(**vars(record))


class BatchOut(BaseModel):
    """What a batch of events did."""

    time_s: float = Field(description="The instant it was applied at.")
    decisions: list[DecisionOut]
    changed: list[JobOut] = Field(description="Jobs whose status changed.")


class PlacementOut(BaseModel):
    """``POST /jobs``'s answer (the reference system's three fields first)."""

    status: Literal["SCHEDULED", "QUEUED", "REJECTED"]
    node_id: str | None
    scheduling_latency_ms: float = Field(description="Wall time from the request's arrival to its answer, ms.")
    job_id: str
    time_s: float
    decisions: list[DecisionOut] = Field(description="Every decision this submission led to, this job's included.")


class NodeOut(BaseModel):
    """A node: its size, and what the service's jobs use of it."""

    node_id: str
    arch: str
    instance: str
    up: bool
    cpu_cores: float
    mem_gb: float
    gpu_count: int
    free_cpu_cores: float
    free_mem_gb: float
    free_gpus: int
    running: list[str]
    background_cpu_pct: float
    background_mem_pct: float


class ReleaseOut(BaseModel):
    """A running job's expected end, from its declared run time."""

    job_id: str
    expected_end_s: float
    cpu_cores: float
    mem_gb: float
    gpu_count: int


class ForecastOut(BaseModel):
    """``GET /nodes/{node_id}/forecast``: what is known of the node's next hours (no future is read)."""

    node_id: str
    time_s: float
    background_cpu_pct: float = Field(description="The last measured value, held (a persistence forecast).")
    background_mem_pct: float
    releases: list[ReleaseOut] = Field(description="Running jobs by expected end (their declared run times).")


class MetricsOut(BaseModel):
    """``GET /metrics``."""

    agent: str
    scenario: str
    time_s: float
    jobs: dict[str, int] = Field(description="Jobs per status.")
    decisions: int
    placements: int
    deferrals: int
    invalid_actions: int = Field(description="Actions the agent chose that were not valid (taken as deferrals).")
    agent_latency_ms_p50: float | None
    agent_latency_ms_p99: float | None


class HealthOut(BaseModel):
    """``GET /healthz``."""

    status: Literal["ok"]
    agent: str
    scenario: str
    time_s: float
