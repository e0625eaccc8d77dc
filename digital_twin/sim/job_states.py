"""The jobs' part of the twin's state: each job's status, its latest start and queue spell, its flags.

One :class:`JobStates` per twin state; every list is indexed by job (an index into
``spec.jobs``). Status codes are :data:`FUTURE` ... :data:`REJECTED` (names in
:data:`STATUS_NAMES`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final

# Job status codes (index into STATUS_NAMES); Final: the compiled core reads them as constants.
FUTURE: Final = 0
PENDING: Final = 1
RUNNING: Final = 2
COMPLETED: Final = 3
FAILED: Final = 4
REJECTED: Final = 5
STATUS_NAMES = ("future", "pending", "running", "completed", "failed", "rejected")
TERMINAL = (COMPLETED, FAILED, REJECTED)


@dataclass(slots=True, eq=False)
class JobStates:
    """Per job (``M`` jobs): status, where and when it last started, its queue spell, what was counted.

    Invariant: ``status_counts[k]`` is the number of jobs with ``status == k`` (change a status
    through :meth:`set_status`).
    """

    status: list[int]
    """``(M,)`` status code."""
    status_counts: list[int]
    """``(6,)`` number of jobs in each status."""
    node_of: list[int]
    """``(M,)`` the node of the job's latest start (-1: never started); meaningful while it runs."""
    start_s: list[float]
    """``(M,)`` when the job's latest run began its work, seconds (-1.0: never started); its start,
    unless a feature delays the work (the run then completes ``duration`` after this)."""
    first_start_s: list[float]
    """``(M,)`` time of the first start, seconds (-1.0: never started); the first-start deadline is judged there."""
    submitted_s: list[float]
    """``(M,)`` when the job was submitted to the scheduler: its arrival, or (a workflow's task)
    its release by its last parent; -1.0 before. Its latency is counted from here."""
    enqueued_s: list[float]
    """``(M,)`` time the job last entered the queue, seconds (-1.0: never)."""
    generation: list[int]
    """``(M,)`` increases whenever one pending or running spell of the job ends, so that events
    scheduled for an earlier spell (completion, TTL expiry) are recognised as stale."""
    sla_hit: list[bool]
    """``(M,)`` whether the job's SLA violation was counted (once per job)."""
    qos_hit: list[bool]
    """``(M,)`` whether the job's QoS violation was counted (once per job; deadlines need no flag:
    they are judged at the first start, or at the end of the last run, only)."""

    @classmethod
    def initial(cls, m: int) -> JobStates:
        """``m`` jobs, all in the future."""
        return cls(
            status=[FUTURE] * m,
            status_counts=[m, 0, 0, 0, 0, 0],
            node_of=[-1] * m,
            start_s=[-1.0] * m,
            first_start_s=[-1.0] * m,
            submitted_s=[-1.0] * m,
            enqueued_s=[-1.0] * m,
            generation=[0] * m,
            sla_hit=[False] * m,
            qos_hit=[False] * m,
        )

    def copy(self) -> JobStates:
        """An independent copy, O(jobs)."""
        return JobStates(
            status=self.status.copy(),
            status_counts=self.status_counts.copy(),
            node_of=self.node_of.copy(),
            start_s=self.start_s.copy(),
            first_start_s=self.first_start_s.copy(),
            submitted_s=self.submitted_s.copy(),
            enqueued_s=self.enqueued_s.copy(),
            generation=self.generation.copy(),
            sla_hit=self.sla_hit.copy(),
            qos_hit=self.qos_hit.copy(),
        )

    def __reduce__(self) -> tuple[type[JobStates], tuple[object, ...]]:
        """Pickle field by field (compiled, the class has no default pickling)."""
        return JobStates, tuple(getattr(self, field.name) for field in fields(JobStates))

    def continued(self, arrived: int, later: int) -> JobStates:
        """A copy keeping the first ``arrived`` jobs, then ``later`` jobs in the future (a continued episode).

        ``status_counts`` is the caller's to set (held-back tasks among the arrived stay future).
        """
        return JobStates(
            status=self.status[:arrived] + [FUTURE] * later,
            status_counts=self.status_counts.copy(),
            node_of=self.node_of[:arrived] + [-1] * later,
            start_s=self.start_s[:arrived] + [-1.0] * later,
            first_start_s=self.first_start_s[:arrived] + [-1.0] * later,
            submitted_s=self.submitted_s[:arrived] + [-1.0] * later,
            enqueued_s=self.enqueued_s[:arrived] + [-1.0] * later,
            generation=self.generation[:arrived] + [0] * later,
            sla_hit=self.sla_hit[:arrived] + [False] * later,
            qos_hit=self.qos_hit[:arrived] + [False] * later,
        )

    def set_status(self, j: int, status: int) -> None:
        """Give job ``j`` the status code ``status``, keeping ``status_counts`` in step."""
        counts = self.status_counts
        counts[self.status[j]] -= 1
        counts[status] += 1
        self.status[j] = status
