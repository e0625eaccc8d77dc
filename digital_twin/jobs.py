"""Jobs: frozen :class:`JobSpec` with validation.

A workload is a ``tuple[JobSpec, ...]`` sorted by ``arrival_s`` (ties keep their order).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from digital_twin._from_mapping import from_mapping
from digital_twin.errors import SpecError, short_repr
from digital_twin.fleet import ARCHES, MAX_AMOUNT, check_at_most_max_amount, is_finite

LATENCY_CRITICAL = "latency-critical"
BATCH = "batch"
STREAM = "stream"
WORKLOAD_TYPES = (LATENCY_CRITICAL, BATCH, STREAM)


def _plain_model_names(models: object) -> bool:
    """Whether ``models`` is a non-empty tuple of non-empty strings (a valid ``allowed_gpu_models``)."""
    return type(models) is tuple and len(models) > 0 and all(type(m) is str and m for m in models)


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One job as submitted. Immutable; the twin tracks its life (queued, running...) apart.

    Attributes:
        job_id: Unique name.
        arrival_s: Submission time in simulated seconds from the episode start (>= 0).
        duration_s: Run time once started, in seconds (> 0). An evicted job restarts from zero.
        workload: ``"latency-critical"``, ``"batch"`` or ``"stream"``.
        cpu_cores: CPU request in cores (> 0, at most :data:`~digital_twin.fleet.MAX_AMOUNT`; resolution 1
            millicore).
        mem_gb: Memory request in GB (> 0, at most ``MAX_AMOUNT``; resolution 1 MiB).
        gpu_count: Whole GPUs needed (>= 0, at most ``MAX_AMOUNT``).
        gpu_vram_gb: Minimum VRAM per GPU in GB (>= 0; only meaningful with GPUs).
        allowed_gpu_models: GPU models the job may run on; ``None`` = any.
        required_arch: Node arch the job needs (``"x86_64"``, ``"arm64"``, ``"gpu-node"``);
            ``None`` = any arch that fits. A job with GPUs can only run on nodes with GPUs.
        priority: 1 (lowest) .. 100 (highest).
        preemptible: When its spot node is interrupted, a preemptible job returns to the
            queue (progress lost); a non-preemptible one fails.
        deadline_s: Deadline in simulated seconds from the episode start: the latest first
            start, or under the episode's ``deadline_rule: completion`` the latest completion;
            missing it costs the deadline penalty. ``None`` = no deadline.
        declared_duration_s: The run time the submitter declared at submission, in seconds
            (> 0): what an online scheduler may know, while the twin runs ``duration_s`` (the
            true run time, hindsight for a trace). ``None`` = its source declared none; a
            scenario fills every job's (:mod:`digital_twin.declared_durations`). It may be
            below ``duration_s`` (an underestimate: the twin still runs the job to its end).
        workflow: The workflow this job is a task of (:mod:`digital_twin.workflows`); ``None``
            = an independent job.
        parents: Job ids of the tasks of the same workflow that must complete before this one
            is submitted to the scheduler (``()``: none). Needs ``workflow``.
    """

    job_id: str
    arrival_s: float
    duration_s: float
    workload: str
    cpu_cores: float
    mem_gb: float
    gpu_count: int = 0
    gpu_vram_gb: float = 0.0
    allowed_gpu_models: tuple[str, ...] | None = None
    required_arch: str | None = None
    priority: int = 50
    preemptible: bool = False
    deadline_s: float | None = None
    declared_duration_s: float | None = None
    workflow: str | None = None
    parents: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self._plainly_valid():
            self._validate()

    def _plainly_valid(self) -> bool:
        """A fast check that accepts the common case (plain ints and floats in range).

        Comparisons with NaN are False, so NaN falls through to :meth:`_validate`, which
        accepts or rejects every input with a precise message; this only saves time.
        """
        deadline, declared = self.deadline_s, self.declared_duration_s
        return (
            type(self.job_id) is str and self.job_id != ""
            and self.workload in WORKLOAD_TYPES
            and type(self.arrival_s) in _PLAIN_NUMBERS and 0.0 <= self.arrival_s < _INF
            and type(self.duration_s) in _PLAIN_NUMBERS and 0.0 < self.duration_s < _INF
            and type(self.cpu_cores) in _PLAIN_NUMBERS and 0.0 < self.cpu_cores <= MAX_AMOUNT
            and type(self.mem_gb) in _PLAIN_NUMBERS and 0.0 < self.mem_gb <= MAX_AMOUNT
            and type(self.gpu_vram_gb) in _PLAIN_NUMBERS and 0.0 <= self.gpu_vram_gb < _INF
            and type(self.gpu_count) is int and 0 <= self.gpu_count <= MAX_AMOUNT
            and type(self.priority) is int and 1 <= self.priority <= 100
            and type(self.preemptible) is bool
            and (self.required_arch is None or self.required_arch in ARCHES)
            and (self.allowed_gpu_models is None or _plain_model_names(self.allowed_gpu_models))
            and self.workflow is None and self.parents == ()
            and (deadline is None or (type(deadline) in _PLAIN_NUMBERS and 0.0 <= deadline < _INF))
            and (declared is None or (type(declared) in _PLAIN_NUMBERS and 0.0 < declared < _INF))
        )

    def _validate(self) -> None:
        """Check every field; raise :class:`SpecError` naming the job and the field."""
        where = f"job {short_repr(self.job_id)}"
        if not isinstance(self.job_id, str) or not self.job_id:
            raise SpecError(f"job_id must be a non-empty string, got {short_repr(self.job_id)}")
        if self.workload not in WORKLOAD_TYPES:
            raise SpecError(f"{where}: workload {short_repr(self.workload)} is not one of {WORKLOAD_TYPES}")
        _check_number(where, "arrival_s", self.arrival_s, allow_zero=True)
        _check_number(where, "duration_s", self.duration_s, allow_zero=False)
        _check_number(where, "cpu_cores", self.cpu_cores, allow_zero=False)
        _check_number(where, "mem_gb", self.mem_gb, allow_zero=False)
        check_at_most_max_amount(where, "cpu_cores", self.cpu_cores)
        check_at_most_max_amount(where, "mem_gb", self.mem_gb)
        _check_number(where, "gpu_vram_gb", self.gpu_vram_gb, allow_zero=True)
        if isinstance(self.gpu_count, bool) or not isinstance(self.gpu_count, int) or self.gpu_count < 0:
            raise SpecError(f"{where}: gpu_count must be an integer >= 0, got {short_repr(self.gpu_count)}")
        check_at_most_max_amount(where, "gpu_count", self.gpu_count)
        if isinstance(self.priority, bool) or not isinstance(self.priority, int) or not 1 <= self.priority <= 100:
            raise SpecError(f"{where}: priority must be an integer in 1..100, got {short_repr(self.priority)}")
        if not isinstance(self.preemptible, bool):
            raise SpecError(f"{where}: preemptible must be true or false, got {short_repr(self.preemptible)}")
        if self.required_arch is not None and self.required_arch not in ARCHES:
            raise SpecError(f"{where}: required_arch {short_repr(self.required_arch)} is not one of {ARCHES}")
        if self.allowed_gpu_models is not None:
            if isinstance(self.allowed_gpu_models, str) or not all(
                isinstance(m, str) and m for m in self.allowed_gpu_models
            ):
                raise SpecError(f"{where}: allowed_gpu_models must be a tuple of model names")
            if not self.allowed_gpu_models:
                raise SpecError(f"{where}: allowed_gpu_models is empty (use None for any model)")
        if self.deadline_s is not None:
            _check_number(where, "deadline_s", self.deadline_s, allow_zero=True)
        if self.declared_duration_s is not None:
            _check_number(where, "declared_duration_s", self.declared_duration_s, allow_zero=False)
        self._validate_workflow(where)

    def _validate_workflow(self, where: str) -> None:
        """Check ``workflow`` and ``parents`` (that the parents exist is the workload's check)."""
        if self.workflow is not None and (not isinstance(self.workflow, str) or not self.workflow):
            raise SpecError(f"{where}: workflow must be a non-empty string, got {short_repr(self.workflow)}")
        if not isinstance(self.parents, tuple) or not all(isinstance(p, str) and p for p in self.parents):
            raise SpecError(f"{where}: parents must be a tuple of job ids, got {short_repr(self.parents)}")
        if self.parents and self.workflow is None:
            raise SpecError(f"{where}: parents {short_repr(list(self.parents))} need a workflow")
        if self.job_id in self.parents:
            raise SpecError(f"{where}: a job cannot be its own parent")
        if len(set(self.parents)) < len(self.parents):
            raise SpecError(f"{where}: parents {short_repr(list(self.parents))} repeat a job id")

    @property
    def is_latency_critical(self) -> bool:
        """True for latency-critical jobs (subject to the SLA and QoS penalties)."""
        return self.workload == LATENCY_CRITICAL


_PLAIN_NUMBERS = (int, float)
_INF = math.inf


def _check_number(where: str, name: str, value: object, *, allow_zero: bool) -> None:
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and is_finite(value)
        and (value > 0 or (allow_zero and value == 0))
    ):
        return
    bound = ">= 0" if allow_zero else "> 0"
    raise SpecError(f"{where}: {name} must be a finite number {bound}, got {short_repr(value)}")


def job_from_dict(data: Mapping[str, Any], where: str = "job") -> JobSpec:
    """Build a :class:`JobSpec` from a mapping of its field names (unknown keys are errors).

    Raises:
        SpecError: ``"<where>: ..."``: not a mapping, an unknown or missing key, a bad value.
    """
    for key in ("allowed_gpu_models", "parents"):
        if isinstance(data, Mapping) and isinstance(data.get(key), list):
            data = {**data, key: tuple(data[key])}
    return from_mapping(JobSpec, data, where, "job")


def validate_workload(jobs: Iterable[JobSpec]) -> tuple[JobSpec, ...]:
    """Return the jobs sorted by arrival (stable), after checking job ids are unique."""
    workload = tuple(sorted(jobs, key=attrgetter("arrival_s")))
    check_unique_ids(job.job_id for job in workload)
    return workload


def check_unique_ids(job_ids: Iterable[str]) -> None:
    """Raise :class:`SpecError` naming the first job id that occurs twice."""
    seen: set[str] = set()
    for job_id in job_ids:
        if job_id in seen:
            raise SpecError(f"duplicate job_id {short_repr(job_id)} in workload")
        seen.add(job_id)
