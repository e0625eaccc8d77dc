"""The plan program's options: starts at guaranteed decision points, and evict-and-rerun families.

A job ``j`` may start at ``S_j = {a_j}`` plus every *static event* time ``t`` with
``a_j < t < min(a_j + TTL, H)``: telemetry ticks, other arrivals, interruptions and
recoveries. The twin handles an event at each of these times in every episode, and asks every
pending job that fits somewhere, so a job planned there on a node with room is asked and can
be placed. A TTL expiry is not among them: it is an event only when it rejects a job still
queued (the expiry of a job that started is dropped unseen). Starts on a down node
are excluded; so are preemptible runs that would cross an interruption (a restriction, still
achievable). Because usage only rises at starts, capacity checked at each start time is exact.
A preemptible job may also be planned to run twice: evicted by a known spot interruption,
then rerun past its first TTL (:mod:`agents.oracle.plans.rerun`).
"""

from __future__ import annotations

import numpy as np

from agents.oracle.milp.options import (
    Options,
    crosses,
    filter_options,
    point_terms,
    symmetry_allowed,
    unserved,
)
from agents.oracle.model.instance import OracleInstance
from agents.oracle.model.stretch import RunLengths
from agents.oracle.plans import rerun


def plan_starts(inst: OracleInstance, job: int, parent_ends_s: tuple[np.ndarray, ...] | None = None) -> np.ndarray:
    """``S_j``: arrival plus the static events inside the job's queue window (sorted).

    A workflow task with parents (``parent_ends_s``: per parent, the ends of its completing
    options, seconds) is released by its last parent's completion, at the earliest ``r`` =
    the latest of the parents' earliest ends: it starts at ``r``, at the static events in
    ``(r, r + TTL)`` and, between two of those, at the earliest parent end there (a plan's
    restriction that keeps a join of many parents as small as a root; the program's TTL rows
    keep each start within the TTL of every parent's planned end).
    """
    a = float(inst.arrival_s[job])
    end = inst.horizon_s if inst.ttl_s is None else min(a + inst.ttl_s, inst.horizon_s)
    events = inst.static_events_s
    if parent_ends_s is None:
        return np.concatenate(([a], events[(events > a) & (events < end)]))
    released = max(a, *(float(ends.min()) for ends in parent_ends_s))
    end = inst.horizon_s if inst.ttl_s is None else min(released + inst.ttl_s, inst.horizon_s)
    static = events[(events > released) & (events < end)]
    ends = np.unique(np.concatenate(parent_ends_s))
    ends = ends[(ends > released) & (ends < end)]
    gap = np.searchsorted(static, ends, side="left")  # ends in the same gap between static events
    first_in_gap = ends[np.concatenate(([True], gap[1:] != gap[:-1]))] if len(ends) else ends
    return np.unique(np.concatenate(([released], static, first_in_gap)))


def plan_options(inst: OracleInstance, *, runs: RunLengths | None = None) -> Options:
    """Every option of the plan program (symmetric duplicates removed).

    By default runs last their nominal duration (exact without contention). With ``runs`` each
    run is reserved and charged as long as it says (:mod:`agents.oracle.model.stretch`): until its
    worst-case end under cpu contention (:data:`~agents.oracle.model.stretch.WORST_CASE`, so the twin
    replays every planned start), or as long as a replay measured. Workflow tasks are built
    after their parents, whose planned ends are among their starts.
    """
    blocks = []
    families = 0
    ends: dict[int, np.ndarray] = {}  # each job's planned ends before the horizon
    parents = ((),) * inst.n_jobs if inst.dag is None else inst.dag.parents
    for j in range(inst.n_jobs) if inst.dag is None else inst.dag.parents_first():
        if not inst.placeable(j):
            continue
        parent_ends = None
        if parents[j]:
            if any(p not in ends for p in parents[j]):
                continue  # a parent that never completes: the task is rejected upstream
            parent_ends = tuple(ends[p] for p in parents[j])
        starts = plan_starts(inst, j, parent_ends)
        mine = []
        for i in inst.candidates[j]:
            ok = np.array([not inst.is_down(i, float(s)) for s in starts], dtype=bool)
            if inst.job_preemptible[j]:
                ok &= ~crosses(inst, j, i, starts, runs=runs)
            if ok.any():
                mine.append(point_terms(inst, j, i, starts[ok], runs=runs))
        if rerun.eligible(inst, j):
            more, n_families = rerun.rerun_blocks(inst, j, starts, families, runs=runs)
            mine.extend(more)
            families += n_families
        blocks.extend(mine)
        if inst.dag is not None:  # the ends a child may start at
            done = [b["use_end_s"][b["use_end_s"] < inst.horizon_s] for b in mine if not b["evicted"].any()]
            if done and sum(len(e) for e in done):
                ends[j] = np.unique(np.concatenate(done))
    options = Options.concatenate(blocks, *unserved(inst))
    return filter_options(options, symmetry_allowed(inst, options.job, options.node, options.family < 0))
