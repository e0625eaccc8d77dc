"""Jobs written out one by one, e.g. the inline ``jobs:`` list of a scenario file.

Each job may give ``declared_duration_s`` (seconds, > 0): the run time its submitter declared,
beside the true ``duration_s`` the twin runs. A job without it declares none, and the scenario's
estimate model fills it (:mod:`digital_twin.declared_durations`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from digital_twin.errors import SpecError, short_repr
from digital_twin.jobs import JobSpec, job_from_dict, validate_workload
from digital_twin.workloads._common import check_positive


def jobs_from_dicts(
    items: Iterable[Mapping[str, Any]],
    where: str = "jobs",
    *,
    start_s: float | None = None,
) -> tuple[JobSpec, ...]:
    """Build a workload from mappings of :class:`~digital_twin.jobs.JobSpec` field names.

    Unlike the trace readers, arrivals are kept as written unless ``start_s`` is given
    (the author of an inline list chose them).

    Args:
        items: One mapping per job (``allowed_gpu_models`` may be a list; ``declared_duration_s``
            is optional). Unknown keys and missing required keys are errors.
        where: Prefix of error messages, e.g. ``"scenario.yaml: workload.jobs"``.
        start_s: ``None`` keeps the arrivals; a number (>= 0) shifts them so the earliest
            job arrives at ``start_s`` (deadlines move with them).

    Returns:
        The jobs sorted by arrival (ties keep list order).

    Raises:
        SpecError: A bad item; the message names ``where[index]`` (0-based) and the problem,
            or both indices of a duplicate ``job_id``.

    >>> jobs_from_dicts([{"job_id": "a", "arrival_s": 5, "duration_s": 60, "workload": "batch",
    ...                   "cpu_cores": 2, "mem_gb": 4}], start_s=0.0)[0].arrival_s
    0.0
    """
    if start_s is not None:
        try:
            check_positive("start_s", start_s, allow_zero=True)
        except SpecError as exc:
            raise SpecError(f"{where}: {exc}") from None
    if isinstance(items, Mapping | str | bytes):
        raise SpecError(f"{where}: expected a list of job mappings, got {type(items).__name__}")
    jobs: list[JobSpec] = []
    first_index: dict[str, int] = {}
    for index, item in enumerate(items):
        label = f"{where}[{index}]"
        if not isinstance(item, Mapping):
            raise SpecError(f"{label}: expected a mapping of job fields, got {type(item).__name__}")
        job = job_from_dict(item, label)
        if job.job_id in first_index:
            other = f"{where}[{first_index[job.job_id]}]"
            raise SpecError(f"{label}: duplicate job_id {short_repr(job.job_id)} (also {other})")
        first_index[job.job_id] = index
        jobs.append(job)
    if start_s is not None and jobs:
        jobs = _shifted(jobs, start_s)
    return validate_workload(jobs)


def _shifted(jobs: list[JobSpec], start_s: float) -> list[JobSpec]:
    offset = start_s - min(j.arrival_s for j in jobs)
    out = []
    for job in jobs:
        deadline = None if job.deadline_s is None else max(0.0, job.deadline_s + offset)
        out.append(replace(job, arrival_s=job.arrival_s + offset, deadline_s=deadline))
    return out
