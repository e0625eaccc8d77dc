"""The event handlers' part for workflows: rejecting held-back tasks, and the horizon's charge of them.

The rules are :mod:`digital_twin.sim.features.workflow_events`'; these apply them to the twin's state.
"""

from __future__ import annotations

from digital_twin.objective import PENALTY_INDEX
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.event_log import log_event
from digital_twin.sim.features.workflow_events import close_open_workflows, held_at_horizon, task_failed
from digital_twin.sim.state import REJECTED, TwinState

_REJECTION, _UTILITY = PENALTY_INDEX["rejection"], PENALTY_INDEX["utility"]


def fail_descendants(s: TwinState, c: TwinConstants, j: int) -> None:
    """Task ``j`` failed or was rejected: its descendants not yet submitted are rejected with it."""
    assert c.dag is not None
    for d in task_failed(c.dag, s.status, s.workflow_end_s, s.counts, j, c.horizon_s, s.next_arrival):
        reject_upstream(s, c, d)


def reject_upstream(s: TwinState, c: TwinConstants, j: int) -> None:
    """Held-back task ``j`` is rejected with its failed ancestor: a rejection (0 s of wait), an LC task's utility."""
    s.set_status(j, REJECTED)
    s.counts[_REJECTION] += 1
    if c.is_lc[j]:
        s.counts[_UTILITY] += 1.0
    log_event(s, c, "rejected-upstream", j, -1)


def charge_held_tasks(s: TwinState, c: TwinConstants) -> None:
    """At the horizon: the tasks still held back are unserved, and the open workflows count until it."""
    dag = c.dag
    assert dag is not None
    for j in held_at_horizon(dag, s.status, s.parents_left, c.arrival_s, c.horizon_s):
        s.counts[_REJECTION] += 1
        if c.is_lc[j]:
            s.counts[_UTILITY] += 1.0
        log_event(s, c, "unserved-at-horizon", j, -1)
    close_open_workflows(dag, s.workflow_end_s, s.counts, c.horizon_s)
