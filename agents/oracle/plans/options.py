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


def plan_starts(inst: OracleInstance, job: int) -> np.ndarray:
    """``S_j``: arrival plus the static events inside the job's queue window (sorted)."""
    a = float(inst.arrival_s[job])
    end = inst.horizon_s if inst.ttl_s is None else min(a + inst.ttl_s, inst.horizon_s)
    events = inst.static_events_s
    inside = events[(events > a) & (events < end)]
    return np.concatenate(([a], inside))


def plan_options(inst: OracleInstance, *, runs: RunLengths | None = None) -> Options:
    """Every option of the plan program (symmetric duplicates removed).

    By default runs last their nominal duration (exact without contention). With ``runs`` each
    run is reserved and charged as long as it says (:mod:`agents.oracle.model.stretch`): until its
    worst-case end under cpu contention (:data:`~agents.oracle.model.stretch.WORST_CASE`, so the twin
    replays every planned start), or as long as a replay measured.
    """
    blocks = []
    families = 0
    for j in range(inst.n_jobs):
        if not inst.placeable(j):
            continue
        starts = plan_starts(inst, j)
        for i in inst.candidates[j]:
            ok = np.array([not inst.is_down(i, float(s)) for s in starts], dtype=bool)
            if inst.job_preemptible[j]:
                ok &= ~crosses(inst, j, i, starts, runs=runs)
            if ok.any():
                blocks.append(point_terms(inst, j, i, starts[ok], runs=runs))
        if rerun.eligible(inst, j):
            more, n_families = rerun.rerun_blocks(inst, j, starts, families, runs=runs)
            blocks.extend(more)
            families += n_families
    options = Options.concatenate(blocks, *unserved(inst))
    return filter_options(options, symmetry_allowed(inst, options.job, options.node, options.family < 0))
