"""When a job entered the queue: its release (arrival, or a workflow task's last parent's completion) and its requeues.

A job's wait counts per queue spell, from its release or from the eviction that requeued it,
and a latency-critical job's latency runs from its release (:mod:`digital_twin.sim.event_handlers`).
The programs charge those from the latest time a spell can have begun before a start
(:mod:`agents.oracle.model.terms`), so they never count more than the twin.
"""

from __future__ import annotations

import numpy as np

from agents.oracle.model.instance import OracleInstance


def release_floor_s(inst: OracleInstance, job: int, starts: np.ndarray) -> np.ndarray:
    """``(n,)`` the latest time ``job`` can have been released for a start at each of ``starts`` (seconds).

    The job's wait and latency run from its release. An independent job or a workflow's
    root is released at its arrival. A task with parents is released at the later of its
    arrival and its last parent's completion, which an option does not fix: the latest it can
    be is the start itself, so its options count a wait of 0 and the latency of the run
    alone, never more than the twin counts (exact for a start at the release; a plan's value
    is its replay's in any case).
    """
    starts = np.asarray(starts, dtype=np.float64)
    if inst.has_parents[job]:
        return starts.copy()
    return np.full(len(starts), float(inst.arrival_s[job]))


def requeue_times_s(inst: OracleInstance, job: int) -> np.ndarray:
    """``(m,)`` sorted times at which ``job`` may be requeued: interruptions of its candidate nodes in ``(a, H)``.

    Empty for a job that is not preemptible (an eviction fails it).
    """
    if not inst.job_preemptible[job]:
        return np.zeros(0)
    a, h = float(inst.arrival_s[job]), inst.horizon_s
    times = {t for i in inst.candidates[job] for t in inst.interruptions_s[i] if a < t < h}
    return np.array(sorted(times), dtype=np.float64)


def last_enqueue_s(inst: OracleInstance, job: int, starts: np.ndarray) -> np.ndarray:
    """``(n,)`` the latest time ``<= starts`` the job can have entered the queue: its arrival or a requeue (seconds).

    Every queue spell ending at a start ``s`` began at the arrival or at an eviction
    (:func:`requeue_times_s`) no later than ``s``, so ``s - last_enqueue_s`` is at most its wait.
    """
    if inst.has_parents[job]:
        return release_floor_s(inst, job, starts)
    times = np.concatenate(([float(inst.arrival_s[job])], requeue_times_s(inst, job)))
    return times[np.searchsorted(times, starts, side="right") - 1]
