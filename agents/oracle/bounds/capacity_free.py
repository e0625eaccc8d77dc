"""The oracle at scale: a lower bound and a plan for episodes whose programs would not fit in memory.

At 500 nodes and 5,000 jobs the plan program would have billions of variables
(:mod:`agents.oracle.size`). :func:`solve_oracle` then takes this path, whose memory is
``O(jobs x nodes)`` for the instance and ``O(jobs + nodes)`` beyond it:

* **Bound** (:func:`capacity_free_bound`): the relaxation with every coupling between jobs
  dropped (node capacity, the SLA's node loads, the FIFO queue), so each job independently
  takes its cheapest fate. Why it is below the objective of every policy of the twin, job by
  job (the objective is the cost plus the penalty terms, each summed over jobs, except
  ``unfairness`` and ``sla``, which are >= 0 and charged 0 here):

  1. A job that is never started (or, if preemptible, may have been evicted on its last run)
     counts at least what :func:`agents.oracle.terms.unserved_counts` charges it (the
     relaxation's "no option", argued in :mod:`agents.oracle.bound`).
  2. A job that is not evictable (its windows hold no interruption that can reach a run,
     :func:`agents.oracle.bound.start_windows`) starts once, at some ``s`` in ``[a, S)``,
     ``S = min(a + TTL, H)``, on a candidate node ``i``. Its run lasts at least its nominal
     duration ``d`` (contention only slows it), so it costs at least ``r x (min(s + d, H) - s)``
     with ``r`` the job's prorated USD/s on ``i`` (``active-nodes``: the node's price times the
     job's cpu share; at any time the cpu shares of the jobs on a node sum to at most 1, so
     these charges sum to at most the node's active cost). It waits ``s - a``. Cost plus wait
     is piecewise linear in ``s`` with one kink at ``H - d``, so its infimum over ``[a, S)`` is
     its least value at ``a``, the kink and ``S``. A non-preemptible run on a node with an
     interruption in ``[a, S + d)`` may instead fail at it: then it pays at least the eviction
     penalty, so the node's charge is the smaller of the two. A latency-critical job on a spot
     node counts the QoS penalty (exact); under the ``first-start`` deadline rule a job that
     arrives after its deadline counts the miss however it is served. Every other term is >= 0
     and charged 0.
  3. An evictable job's last run may start as late as the horizon, after re-queues whose waits
     are not tracked here: it is charged only the QoS penalty of its cheapest node.

  Each job's charge is the least of its fates, and the bound their sum: no HiGHS solve, so it
  is deterministic and needs no limit. It is weak where capacity binds, so the bound reported
  (:func:`scale_bound`) is the larger of it and a Lagrangian relaxation of node capacity
  (:mod:`agents.oracle.lagrangian`: the same fates, with capacity priced back in over time
  cells), after a fixed number of subgradient steps.
* **Plan** (:func:`hindsight_greedy_plan`): the twin played by a greedy rule that knows the
  episode (each decision takes the node of least hindsight charge: prorated cost of the nominal
  run, QoS, the eviction penalty where an interruption will cut the run, and the SLA penalties
  the start would cause over the run's ticks given the future background), recorded as
  ``job -> (node, first start)`` and replayed like every oracle plan
  (:func:`agents.oracle.replay.replay_plan`), so its objective is what the twin charges.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from agents.oracle.bounds.fates import job_fates
from agents.oracle.bounds.lagrangian import lagrangian_bound
from agents.oracle.model.instance import OracleInstance
from agents.oracle.model.intervals import crossed_within
from agents.oracle.plans.replay import Plan
from digital_twin import WORKLOAD_TYPES, DigitalTwin, HindsightView

_LATENCY_CRITICAL = WORKLOAD_TYPES.index("latency-critical")


def scale_bound(inst: OracleInstance, target_usd: float, iterations: int) -> float:
    """The bound at scale: the larger of :func:`capacity_free_bound` and the Lagrangian bound.

    Args:
        inst: The episode.
        target_usd: An objective a policy reaches (the hindsight greedy plan's): the ascent aims
            no higher.
        iterations: Subgradient steps of :func:`agents.oracle.lagrangian.lagrangian_bound`.
    """
    return max(capacity_free_bound(inst), lagrangian_bound(inst, target_usd, iterations).bound_usd)


def capacity_free_bound(inst: OracleInstance) -> float:
    """A lower bound on every policy's objective, with no coupling between jobs (see the module docstring).

    Cost: ``O(sum over jobs of candidate nodes x log interruptions)``; memory ``O(J + N)``
    beyond the instance.
    """
    w = inst.weights
    wait_per_s = w.wait_usd_per_job_hour / 3600.0
    h = inst.horizon_s
    if inst.active_nodes:
        rates = inst.node_price_per_s[None, :] * (inst.job_cpu_m[:, None] / inst.node_cpu_m[None, :])
    else:
        rates = inst.rate_per_s
    total, runs = job_fates(inst)
    for fates in runs:
        j = fates.job
        a, d, latest = float(inst.arrival_s[j]), float(inst.duration_s[j]), fates.latest_s
        starts = np.array([a, min(max(h - d, a), latest), latest])
        run_and_wait = rates[j, fates.nodes][:, None] * (np.minimum(starts + d, h) - starts)[None, :] + wait_per_s * (
            starts - a
        )[None, :]
        served = run_and_wait.min(axis=1)
        served = np.where(fates.may_fail, np.minimum(served, w.eviction_usd), served)
        served = served + fates.qos_usd + fates.late_usd
        total += min(fates.unserved_usd, float(served.min()))
    return total


def _sla_victims(twin: DigitalTwin, inst: OracleInstance, job: int, nodes: np.ndarray) -> np.ndarray:
    """``(len(nodes),)`` latency-critical jobs that starting ``job`` on each node now would put over the SLA.

    This job (if latency-critical) and those running there, where the node's allocation with
    the job passes the SLA threshold at a tick of the job's nominal run.
    """
    now = twin.time_s
    first = int(np.searchsorted(inst.tick_times_s, now, side="right")) - 1
    last = int(np.searchsorted(inst.tick_times_s, min(now + float(inst.duration_s[job]), inst.horizon_s), side="left"))
    allowed = inst.sla_allowed_cpu_m[max(first, 0) : max(last, first + 1), nodes].min(axis=0)
    free_cpu_m = np.rint(twin.node_free()[0][nodes] * 1000.0)
    allocated = inst.node_cpu_m[nodes] - free_cpu_m + inst.job_cpu_m[job]
    running_lc = twin.running_by_type()[nodes, _LATENCY_CRITICAL]
    return np.where(allocated > allowed, running_lc + int(inst.job_lc[job]), 0)



def hindsight_greedy_plan(view: HindsightView, inst: OracleInstance) -> Plan:
    """Play the episode greedily with hindsight and record each job's first start (see the module docstring).

    Each decision places the current job on the fitting node of least charge: the prorated
    cost of its nominal run (``active-nodes``: the node's price times the cpu share), plus the
    QoS penalty for a latency-critical job on spot, plus the eviction penalty where the
    node's next interruption falls within the run of a non-preemptible job, plus, where the
    node's allocation with the job would pass the SLA threshold at a tick of the run (the
    background known with hindsight), the SLA penalty of the job (if latency-critical) and of
    each latency-critical job running there. It never defers a job that fits somewhere; jobs
    that never start are left out of the plan (unserved).
    """
    spec = dataclasses.replace(view.spec, fixed_interruptions_s=view.interruptions_s)
    w = inst.weights
    index_of = {job_id: j for j, job_id in enumerate(inst.job_ids)}
    plan: dict[str, tuple[int, float] | None] = dict.fromkeys(inst.job_ids)
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))  # the interruptions are fixed: nothing is drawn
    while not twin.done:
        job = twin.current_job
        assert job is not None  # a decision is asked until the episode is done
        fits = np.flatnonzero(twin.feasible_mask())
        if len(fits) == 0:
            twin.defer()
            continue
        j, now = index_of[job.job_id], twin.time_s
        d = float(inst.duration_s[j])
        if inst.active_nodes:
            rate = inst.node_price_per_s[fits] * inst.job_cpu_m[j] / inst.node_cpu_m[fits]
        else:
            rate = inst.rate_per_s[j, fits]
        charge = rate * (min(now + d, inst.horizon_s) - now)
        if inst.job_lc[j]:
            charge = charge + np.where(inst.node_spot[fits], w.qos_violation_usd, 0.0)
        if not inst.job_preemptible[j]:
            cut = np.array([crossed_within(inst.interruptions_s[i], now, now + float(inst.longest_run_s[j]))
                            for i in fits])
            charge = charge + np.where(cut, w.eviction_usd, 0.0)
        charge = charge + w.sla_violation_usd * _sla_victims(twin, inst, j, fits)
        node = int(fits[int(np.argmin(charge))])
        if plan[job.job_id] is None:
            plan[job.job_id] = (node, now)
        twin.place(node)
    return plan
