"""What workflows do at the twin's events: a task's release, a workflow's completion, failure and horizon.

The rules:

* **Release.** A task is submitted to the scheduler (it *arrives*: it enters the queue and is
  asked for) once its own ``arrival_s`` has come and every parent has completed; until then it
  stays ``future``, unseen. A completion releases, at its time, each child whose parents have
  now all completed (a child whose arrival is still ahead arrives then).
* **Failure.** When a task fails (evicted from a spot node, not preemptible) or is rejected
  (its queue TTL, or it fits no node), every descendant that has arrived (and so is held back)
  is rejected with it (``rejected-upstream``: a rejection, 0 s of wait, a latency-critical
  task's whole utility), and its workflow fails; a descendant arriving later is rejected
  upstream at its arrival (a task arrives no earlier than its parents, so nothing of the
  future is changed before it comes). Tasks of other branches go on.
* **Workflow terms.** A workflow is submitted when its first task arrives (``submitted_s``,
  the least ``arrival_s`` of its tasks). When its last task completes at ``t`` it counts
  ``weight x (t - submitted_s) / 3600`` weighted hours, and is late if ``t > deadline_s``. A
  workflow that fails counts its hours until the horizon (known then), and is late when its
  deadline is before the horizon; at the horizon, every submitted workflow still open counts
  the same, and its tasks still held back (arrived, parents unfinished) are unserved
  (rejections, like jobs still queued). A workflow submitted at or after the horizon counts
  nothing. So failing a workflow never costs less time than finishing it late.

Each function reads the tables (:class:`WorkflowTables`, ``TwinConstants.dag``) and changes the
state's lists it is given (``parents_left``, ``workflow_left``, ``workflow_end_s``, ``counts``);
the event handlers (:mod:`digital_twin.sim.event_handlers`, :mod:`digital_twin.sim.features.workflow_handlers`)
do the arrivals and rejections they return.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from digital_twin.objective import PENALTY_INDEX
from digital_twin.workflows import WorkflowGraph

_WORKFLOW: Final = PENALTY_INDEX["workflow"]
_LATE: Final = PENALTY_INDEX["workflow_deadline"]
_FUTURE: Final = 0  # digital_twin.sim.job_states' codes (the states are above the tables)
_FAILED: Final = 4
_REJECTED: Final = 5


@dataclass(frozen=True, slots=True, eq=False)
class WorkflowTables:
    """A workload's DAG as the event handlers read it (``M`` jobs, ``W`` workflows).

    Attributes:
        n_parents: ``(M,)`` parents per job (0 for roots and independent jobs).
        parents: ``(M,)`` parent job indices per job.
        children: ``(M,)`` child job indices per job.
        workflow_of: ``(M,)`` workflow index per job, -1 for an independent job.
        submitted_s: ``(W,)`` each workflow's submission: the least ``arrival_s`` of its tasks, seconds.
        n_tasks: ``(W,)`` tasks per workflow.
        weight: ``(W,)`` weight of its hours in the ``workflow`` term.
        deadline_s: ``(W,)`` the latest completion, seconds (``None``: no deadline).
    """

    n_parents: list[int]
    parents: list[tuple[int, ...]]
    children: list[tuple[int, ...]]
    workflow_of: list[int]
    submitted_s: list[float]
    n_tasks: list[int]
    weight: list[float]
    deadline_s: list[float | None]

    @classmethod
    def of(cls, graph: WorkflowGraph, arrival_s: list[float]) -> WorkflowTables:
        """The tables of ``graph`` for jobs arriving at ``arrival_s`` (``(M,)`` seconds)."""
        return cls(
            n_parents=[len(p) for p in graph.parents],
            parents=list(graph.parents),
            children=list(graph.children),
            workflow_of=list(graph.workflow_of),
            submitted_s=[min(arrival_s[j] for j in tasks) for tasks in graph.tasks],
            n_tasks=[len(tasks) for tasks in graph.tasks],
            weight=list(graph.weight),
            deadline_s=list(graph.deadline_s),
        )

    @property
    def n_workflows(self) -> int:
        """``W``."""
        return len(self.n_tasks)


def task_completed(
    dag: WorkflowTables, parents_left: list[int], workflow_left: list[int], end_s: list[float],
    counts: list[float], j: int, t: float,
) -> list[int]:
    """Task ``j`` completed at ``t``: count its workflow's end if it was the last; return the children released.

    The children returned have all their parents completed now (in child order); the caller
    submits those whose arrival has come.
    """
    w = dag.workflow_of[j]
    if w < 0:
        return []
    workflow_left[w] -= 1
    if workflow_left[w] == 0 and end_s[w] < 0.0:
        close(dag, end_s, counts, w, t)
    released = []
    for child in dag.children[j]:
        parents_left[child] -= 1
        if parents_left[child] == 0:
            released.append(child)
    return released


def task_failed(
    dag: WorkflowTables, status: list[int], end_s: list[float], counts: list[float], j: int, horizon_s: float,
    arrived: int,
) -> list[int]:
    """Task ``j`` failed or was rejected: its workflow fails; return its descendants arrived and held back.

    ``arrived``: the jobs ``< arrived`` have arrived. Returned in increasing job index, each
    once; the caller rejects them (``rejected-upstream``). A descendant not arrived yet has no
    arrived descendant (they arrive no earlier): it is left to its arrival (:func:`upstream_failed`).
    """
    w = dag.workflow_of[j]
    if w < 0:
        return []
    if end_s[w] < 0.0:
        close(dag, end_s, counts, w, horizon_s)
    doomed: list[int] = []
    seen = {j}
    stack = list(dag.children[j])
    while stack:
        d = stack.pop()
        if d in seen or d >= arrived:
            continue
        seen.add(d)
        if status[d] == _FUTURE:
            doomed.append(d)
        stack.extend(dag.children[d])
    doomed.sort()
    return doomed


def upstream_failed(dag: WorkflowTables, status: list[int], j: int) -> bool:
    """Whether a parent of task ``j`` failed or was rejected (``j`` is then rejected upstream when it arrives)."""
    return any(status[p] == _FAILED or status[p] == _REJECTED for p in dag.parents[j])


def close(dag: WorkflowTables, ends_s: list[float], counts: list[float], w: int, end_s: float) -> None:
    """Workflow ``w`` ends at ``end_s`` (its completion, or the horizon): record it, count its hours and lateness."""
    ends_s[w] = end_s
    counts[_WORKFLOW] += dag.weight[w] * (end_s - dag.submitted_s[w]) / 3600.0
    deadline = dag.deadline_s[w]
    if deadline is not None and end_s > deadline:
        counts[_LATE] += 1


def held_at_horizon(dag: WorkflowTables, status: list[int], parents_left: list[int], arrival_s: list[float],
                    horizon_s: float) -> list[int]:
    """The tasks arrived before the horizon but still held back (a parent unfinished), in job order."""
    return [
        j
        for j in range(len(dag.n_parents))
        if status[j] == _FUTURE and parents_left[j] > 0 and arrival_s[j] < horizon_s
    ]


def close_open_workflows(dag: WorkflowTables, end_s: list[float], counts: list[float], horizon_s: float) -> None:
    """At the horizon: every workflow submitted before it and still open counts its hours until it."""
    for w in range(dag.n_workflows):
        if end_s[w] < 0.0 and dag.submitted_s[w] < horizon_s:
            close(dag, end_s, counts, w, horizon_s)
