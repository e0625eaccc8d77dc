"""The workflows' state, and what the twin's events do to it: releases, failures, the horizon's charge.

The rules are :mod:`digital_twin.sim.tables.workflow_events`'; this feature applies them to
the episode as it runs.
"""

from __future__ import annotations

from typing import Final

from digital_twin.objective import PENALTY_INDEX
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.core import CoreState, Feature
from digital_twin.sim.event_log import log_event
from digital_twin.sim.job_states import REJECTED
from digital_twin.sim.tables.workflow_events import (
    WorkflowTables,
    close_open_workflows,
    held_at_horizon,
    task_completed,
    task_failed,
    upstream_failed,
)

_REJECTION: Final = PENALTY_INDEX["rejection"]
_UTILITY: Final = PENALTY_INDEX["utility"]


class WorkflowState(Feature):
    """What an episode with workflows keeps (``M`` jobs, ``W`` workflows).

    Attributes:
        parents_left: ``(M,)`` each task's parents not yet completed (a task is held back while
            it has any).
        workflow_left: ``(W,)`` each workflow's tasks not yet completed.
        workflow_end_s: ``(W,)`` when each workflow's time was counted up to: its last task's
            completion, or the horizon for one that failed or is unfinished (-1.0 while it is open).
    """

    def __init__(self, parents_left: list[int], workflow_left: list[int], workflow_end_s: list[float]) -> None:
        self.parents_left = parents_left
        self.workflow_left = workflow_left
        self.workflow_end_s = workflow_end_s

    @classmethod
    def of(cls, c: TwinConstants) -> WorkflowState | None:
        """Every workflow open at time 0; ``None`` when every job is independent."""
        dag = c.dag
        if dag is None:
            return None
        return cls(list(dag.n_parents), list(dag.n_tasks), [-1.0] * dag.n_workflows)

    def copy(self) -> WorkflowState:
        """An independent copy."""
        return WorkflowState(self.parents_left.copy(), self.workflow_left.copy(), self.workflow_end_s.copy())

    def __reduce__(self) -> tuple[type[WorkflowState], tuple[object, ...]]:
        """Pickle by its fields (compiled, the class has no default pickling)."""
        return WorkflowState, (self.parents_left, self.workflow_left, self.workflow_end_s)

    # ------------------------------------------------------------------ hooks
    def on_arrive(self, s: CoreState, c: TwinConstants, j: int) -> bool:
        """Task ``j`` is submitted if its parents completed, rejected if one failed, else held back."""
        if not self.parents_left[j]:
            return True
        if upstream_failed(_dag(c), s.jobs.status, j):
            reject_upstream(s, c, j)
        return False

    def on_complete(self, s: CoreState, c: TwinConstants, j: int) -> list[int]:
        """The children task ``j`` releases whose arrival has come (a later one arrives in its turn)."""
        released = task_completed(
            _dag(c), self.parents_left, self.workflow_left, self.workflow_end_s, s.counts, j, s.time_s
        )
        return [child for child in released if child < s.next_arrival]

    def on_fail(self, s: CoreState, c: TwinConstants, j: int) -> None:
        """Task ``j`` failed or was rejected: its descendants not yet submitted are rejected with it."""
        for d in task_failed(_dag(c), s.jobs.status, self.workflow_end_s, s.counts, j, c.horizon_s, s.next_arrival):
            reject_upstream(s, c, d)

    def at_horizon(self, s: CoreState, c: TwinConstants) -> None:
        """The tasks still held back are unserved, and the open workflows count until the horizon."""
        dag = _dag(c)
        for j in held_at_horizon(dag, s.jobs.status, self.parents_left, c.arrival_s, c.horizon_s):
            s.counts[_REJECTION] += 1
            if c.is_lc[j]:
                s.counts[_UTILITY] += 1.0
            log_event(s, c, "unserved-at-horizon", j, -1)
        close_open_workflows(dag, self.workflow_end_s, s.counts, c.horizon_s)


def reject_upstream(s: CoreState, c: TwinConstants, j: int) -> None:
    """Held-back task ``j`` is rejected with its failed ancestor: a rejection (0 s of wait), an LC task's utility."""
    s.jobs.set_status(j, REJECTED)
    s.counts[_REJECTION] += 1
    if c.is_lc[j]:
        s.counts[_UTILITY] += 1.0
    log_event(s, c, "rejected-upstream", j, -1)


def _dag(c: TwinConstants) -> WorkflowTables:
    """The episode's workflows (it has some: the feature is on)."""
    dag = c.dag
    assert dag is not None
    return dag
