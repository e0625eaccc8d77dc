"""Each job's fates in the bounds at scale, the part the two bounds share.

:func:`agents.oracle.bounds.capacity_free.capacity_free_bound` lets every job take its cheapest fate;
:mod:`agents.oracle.bounds.lagrangian` prices node capacity back in over the same fates. Both
classify the jobs the same way (:mod:`agents.oracle.bounds.capacity_free` argues each charge):

* a job that cannot run (unplaceable, or never submitted) is *unserved*;
* an *evictable* job (its windows hold an interruption that can reach a run) is charged the
  least of its three endings (:func:`evictable_charge_usd`);
* any other job *may run*, once, starting in its single window ``[a, S)``
  (:class:`RunFates`), or stay unserved.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agents.oracle.bounds.decision_times import start_windows
from agents.oracle.model import terms
from agents.oracle.model.instance import OracleInstance
from agents.oracle.model.intervals import crossed_within


@dataclass(frozen=True, eq=False)
class RunFates:
    """A job that may run once: the charges of its fates that do not depend on the start.

    Attributes:
        job: The job's index.
        nodes: ``(c,)`` int64, its candidate nodes.
        qos_usd: ``(c,)`` the QoS penalty of a run on each (a latency-critical job on a spot node).
        latest_s: ``S``, the end of its single start window ``[a, S)``.
        late_usd: The ``first-start`` deadline miss it counts however it is served (arrival
            past the deadline), else 0.
        may_fail: ``(c,)`` bool, a run there may reach an interruption and fail (a
            non-preemptible job with an interruption of the node in ``[a, S + d)``).
        unserved_usd: What leaving it unserved is charged.
    """

    job: int
    nodes: np.ndarray
    qos_usd: np.ndarray
    latest_s: float
    late_usd: float
    may_fail: np.ndarray
    unserved_usd: float


def job_fates(inst: OracleInstance) -> tuple[float, list[RunFates]]:
    """``(constant_usd, runs)``: the summed charges of the jobs that cannot run once, and the others."""
    charges = inst.charges
    windows = [start_windows(inst, j) for j in range(inst.n_jobs)]
    evictable = np.array([may_be_evicted for _, may_be_evicted in windows], dtype=bool)
    unserved = terms.penalty_usd(inst, terms.unserved_counts(inst, may_have_started=evictable))
    constant = 0.0
    runs: list[RunFates] = []
    for j in range(inst.n_jobs):
        nodes = np.asarray(inst.candidates[j], dtype=np.int64)
        if not windows[j][0] or len(nodes) == 0:
            constant += float(unserved[j])
            continue
        qos = charges.qos(inst.node_spot[nodes] & bool(inst.job_lc[j]))
        if evictable[j]:
            constant += min(float(unserved[j]), evictable_charge_usd(inst, j, nodes, qos))
            continue
        a, d = float(inst.arrival_s[j]), float(inst.duration_s[j])
        latest = windows[j][0][0][1]  # S: the single window [a, S) of a job that is not evictable
        late = charges.deadline(float(not inst.deadline_at_completion and a > inst.deadline_s[j]))
        may_fail = np.zeros(len(nodes), dtype=bool)
        if not inst.job_preemptible[j]:
            may_fail = np.array([crossed_within(inst.interruptions_s[i], a, latest + d) for i in nodes], dtype=bool)
        runs.append(RunFates(j, nodes, qos, latest, late, may_fail, float(unserved[j])))
    return constant, runs


def evictable_charge_usd(inst: OracleInstance, job: int, nodes: np.ndarray, qos_usd: np.ndarray) -> float:
    """The least an evictable (preemptible) job that is not left unserved can cost, USD.

    From its arrival ``a`` until it completes, is rejected or the horizon ``H`` comes, a job is
    always queued or running: an arrival queues it, a start runs it, and an eviction requeues
    a preemptible job at once. Every queue spell's wait counts (``w`` USD/s), and a run on node
    ``i`` costs at least ``r_i`` USD/s of wall time (:func:`agents.oracle.model.terms.run_usd_per_s`;
    under contention a run only lasts longer). So a job that is not rejected

    * completes: its last run, on some ``i``, lasts at least its nominal ``d``: at least
      ``r_i x d`` plus the QoS penalty of ``i`` (only when ``a + d <= H``); or
    * runs at the horizon: at least ``min(w, min_i r_i) x (H - a)``, plus the least QoS penalty
      (a workflow task with parents is queued from its release, which may be as late as ``H``:
      only the QoS penalty).

    Its evicted runs and earlier waits cost ``>= 0``. Being rejected is the caller's
    unserved charge; the bound takes the least of the three.

    Args:
        inst: The episode.
        job: The job's index.
        nodes: ``(c,)`` its candidate nodes.
        qos_usd: ``(c,)`` the QoS penalty of a run on each.
    """
    rates = terms.run_usd_per_s(inst, np.array([job]), nodes)[0]
    a, d, h = float(inst.arrival_s[job]), float(inst.duration_s[job]), inst.horizon_s
    per_second = min(float(inst.charges.wait(1.0)), float(rates.min()))
    queued_from = h if inst.has_parents[job] else a  # a task with parents may be released at the horizon
    at_horizon = per_second * (h - queued_from) + float(qos_usd.min())
    completes = float((rates * d + qos_usd).min()) if a + d <= h else np.inf
    return min(completes, at_horizon)
