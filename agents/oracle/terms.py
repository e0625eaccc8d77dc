"""The objective's penalty terms as the oracle charges them: the one place that knows each term.

The twin counts every term of :data:`~digital_twin.objective.PENALTIES` where its rule is met
(:mod:`digital_twin.event_handlers`). The oracle's programs must charge a plan exactly what the
twin will count, and charge the relaxation no more than any episode counts
(:mod:`agents.oracle.bound` argues why). A term is charged in one or more of three places:

* **per option**, decided by the run an option stands for (QoS, eviction, deadline, waiting):
  a count per term in each row of ``Options.counts`` (``(n, T)``, ``T = len(PENALTIES)``, table
  order); exact for a point start (:func:`point_counts`), at the cell's first start or the
  infimum over the rest of it for a cell (:func:`cell_counts`), and only what no earlier run can
  have avoided for a job whose earlier run may have been evicted (:func:`relax_for_earlier_runs`,
  :func:`add_earlier_spot_run`);
* **per job not served**, the program's "no option" choice (rejection, waiting until the job
  left the queue): :func:`unserved_counts`;
* **by the program** (the SLA: a variable per latency-critical job and rows over node loads,
  :mod:`agents.oracle.program`), whose count a plan reports through :func:`plan_counts`.

USD amounts are always summed in table order (:func:`penalty_usd`), as the twin sums them.
"""

from __future__ import annotations

import numpy as np

from agents.oracle.instance import OracleInstance
from digital_twin.objective import PENALTIES, PENALTY_INDEX

N_TERMS = len(PENALTIES)
_SLA, _QOS, _EVICTION, _DEADLINE, _REJECTION, _WAIT = (
    PENALTY_INDEX[name] for name in ("sla", "qos", "eviction", "deadline", "rejection", "wait")
)


def point_counts(inst: OracleInstance, job: int, node: int, starts: np.ndarray, t_next: np.ndarray) -> np.ndarray:
    """``(n, T)`` counts of starting ``job`` on ``node`` at each of ``starts``, exactly as the twin counts.

    Args:
        inst: The episode.
        job: The job.
        node: The node it starts on.
        starts: ``(n,)`` start times, seconds (the job's first and only start).
        t_next: ``(n,)`` the node's first interruption after each start (``inf``: none).
    """
    counts = _option_counts(inst, job, node, len(starts))
    counts[:, _EVICTION] = (~inst.job_preemptible[job]) & (t_next < starts + inst.duration_s[job])
    counts[:, _DEADLINE] = starts > inst.deadline_s[job]
    counts[:, _WAIT] = (starts - inst.arrival_s[job]) / 3600.0
    return counts


def cell_counts(
    inst: OracleInstance, job: int, node: int, lo: np.ndarray, t_next: np.ndarray, *, infimum: bool
) -> np.ndarray:
    """``(n, T)`` counts of a start in each cell ``[lo, hi)``: at ``lo``, or their infimum over ``(lo, hi)``.

    A count is dropped from the infimum when any start inside the cell avoids it (each term is
    bounded separately). No interruption and no deadline lies strictly inside a cell.

    Args:
        inst: The episode.
        job: The job.
        node: The node.
        lo: ``(n,)`` first start of each cell, seconds.
        t_next: ``(n,)`` the node's first interruption after ``lo`` (``inf``: none).
        infimum: False for the counts of the start at ``lo``, True for the infimum over the open cell.
    """
    counts = _option_counts(inst, job, node, len(lo))
    reach = lo + inst.duration_s[job]
    fails = ~inst.job_preemptible[job]
    counts[:, _EVICTION] = fails & ((t_next <= reach) if infimum else (t_next < reach))
    deadline = inst.deadline_s[job]
    counts[:, _DEADLINE] = (lo >= deadline) if infimum else (lo > deadline)
    counts[:, _WAIT] = (lo - inst.arrival_s[job]) / 3600.0  # the wait rises with the start
    return counts


def relax_for_earlier_runs(inst: OracleInstance, job: int, counts: np.ndarray) -> None:
    """Keep, for a job whose earlier run may have been evicted, only what every run counts (in place).

    The option stands for the job's *last* run; the terms judged at the first start are then
    known only by their bound over all first starts: late only when the arrival is already past
    the deadline, and no wait.
    """
    counts[:, _DEADLINE] = inst.arrival_s[job] > inst.deadline_s[job]
    counts[:, _WAIT] = 0.0


def add_earlier_spot_run(inst: OracleInstance, job: int, counts: np.ndarray, later: np.ndarray) -> None:
    """Count what a surely evicted earlier run on a spot node adds to the options ``later`` (in place).

    A latency-critical job's earlier run on a spot node counted the QoS violation, whatever
    node the last run uses (:func:`agents.oracle.bound._charge_earlier_runs` proves the run).
    """
    if inst.job_lc[job]:
        counts[later, _QOS] = 1.0


def unserved_counts(inst: OracleInstance, may_have_started: np.ndarray | None = None) -> np.ndarray:
    """``(J, T)`` counts of leaving each job unserved: the program's "no option" choice.

    Every submitted job that is not served counts a rejection (TTL, unplaceable, or still queued
    at the horizon) and, never started, its wait until it left the queue: ``min(a + TTL, H) - a``
    for a job that fits some node, 0 for one rejected on arrival. Jobs arriving at or after the
    horizon never exist and count nothing.

    Args:
        inst: The episode.
        may_have_started: ``(J,)`` bool, jobs whose "no option" may stand for an episode in which
            they started and were then evicted (the relaxation); ``None``: no job (the plan).
    """
    counts = np.zeros((inst.n_jobs, N_TERMS))
    counts[:, _REJECTION] = inst.submitted
    never_started = np.array([inst.placeable(j) for j in range(inst.n_jobs)], dtype=bool)
    if may_have_started is not None:
        never_started &= ~may_have_started  # a started job's wait ended at its first start: bound by 0
    a = inst.arrival_s[never_started]
    left = np.full(len(a), inst.horizon_s) if inst.ttl_s is None else np.minimum(a + inst.ttl_s, inst.horizon_s)
    counts[never_started, _WAIT] = (left - a) / 3600.0
    return counts


def penalty_usd(inst: OracleInstance, counts: np.ndarray) -> np.ndarray:
    """``(n,)`` USD of each row of ``(n, T)`` counts, summed in table order."""
    weights = inst.weights.per_term()
    total = np.zeros(len(counts))
    for t in range(N_TERMS):
        total = total + weights[t] * counts[:, t]
    return total


def plan_counts(option_counts: np.ndarray, unserved: np.ndarray, sla_violations: int) -> list[int | float]:
    """The counts, in table order, of a plan: its options', its unserved jobs' and the SLA's.

    Args:
        option_counts: ``(P, T)`` counts of the options the plan picked.
        unserved: ``(U, T)`` :func:`unserved_counts` rows of the jobs it leaves unserved.
        sla_violations: Latency-critical jobs whose node went over the SLA threshold.
    """
    totals = option_counts.sum(axis=0) + unserved.sum(axis=0)
    totals[_SLA] += sla_violations
    return [round(v) if term.integral else float(v) for term, v in zip(PENALTIES, totals, strict=True)]


def _option_counts(inst: OracleInstance, job: int, node: int, n: int) -> np.ndarray:
    """``(n, T)`` zeros, with the term every option of (job, node) counts alike: QoS on a spot node."""
    counts = np.zeros((n, N_TERMS))
    counts[:, _QOS] = bool(inst.job_lc[job] and inst.node_spot[node])
    return counts
