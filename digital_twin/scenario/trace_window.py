"""A window of a job trace drawn per episode: ``workload: {source: <file source>, window_s: W}``.

A trace file replayed as is gives every episode the same jobs, whatever the seed. With
``window_s`` the file is read once (every job, up to ``limits.max_jobs``), and each episode draws
an arrival time ``t0`` uniformly (from its own generator) among the trace's distinct arrival
times at least ``W`` before its last (all of them when the trace is shorter): the window
keeps the jobs arriving in ``[t0, t0 + W)``, shifted so that ``t0`` is time 0 (deadlines with
them), then the first ``job_budget`` of them. Windows start where the trace has jobs, so busy
periods are drawn more often than quiet ones, as a day of the real system would be; two seeds
share a window only when they draw the same arrival time. Traces with workflows are refused (a
window would cut a workflow apart).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from digital_twin.errors import SpecError
from digital_twin.jobs import JobSpec
from digital_twin.workload import Workload


@dataclass(frozen=True)
class WindowedJobs:
    """Per episode, the jobs of one window of a trace (``read``: a loader of the whole trace, called once)."""

    read: object  # a JobsLoader: (rng) -> Workload
    window_s: float
    job_budget: int | None
    _trace: dict[str, Workload] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.window_s, bool) or not (math.isfinite(self.window_s) and self.window_s > 0):
            raise SpecError(f"window_s must be a finite number > 0, got {self.window_s!r}")

    def trace(self) -> Workload:
        """The whole trace (read on first use)."""
        if "jobs" not in self._trace:
            jobs = self.read(np.random.default_rng(0))  # type: ignore[operator]
            if jobs.workflows:
                raise SpecError("window_s: the trace has workflows, which a window would cut apart")
            if not len(jobs):
                raise SpecError("window_s: the trace has no jobs")
            self._trace["jobs"] = jobs
        return self._trace["jobs"]

    def __call__(self, rng: np.random.Generator) -> Workload:
        """One episode's window: its start drawn from ``rng``, shifted to start at 0, cut to the budget."""
        jobs = self.trace()
        arrivals = np.array([job.arrival_s for job in jobs], dtype=np.float64)
        times = np.unique(arrivals)
        starts = times[times <= times[-1] - self.window_s]
        if not len(starts):  # a trace shorter than the window: any arrival may start it
            starts = times
        t0 = float(starts[int(rng.integers(len(starts)))])
        inside = (arrivals >= t0) & (arrivals < t0 + self.window_s)
        kept = [
            replace(
                job, arrival_s=job.arrival_s - t0, deadline_s=None if job.deadline_s is None else job.deadline_s - t0
            )
            for job, keep in zip(jobs, inside.tolist(), strict=True)
            if keep
        ]
        kept.sort(key=lambda job: job.arrival_s)
        if self.job_budget is not None:
            kept = kept[: self.job_budget]
        return Workload.of(kept)


def _shifted(job: JobSpec, t0: float) -> JobSpec:
    """``job`` with its arrival and deadline ``t0`` seconds earlier."""
    deadline = None if job.deadline_s is None else job.deadline_s - t0
    return replace(job, arrival_s=job.arrival_s - t0, deadline_s=deadline)
