"""The plan at scale: the twin played greedily with hindsight, for episodes whose programs would not fit.

:func:`hindsight_greedy_plan` plays the twin by a greedy rule that knows the episode (each
decision takes the node of least hindsight charge: prorated cost of the nominal run, QoS, the
eviction penalty where an interruption will cut the run, and the SLA penalties the start would
cause over the run's ticks given the future background), recorded as ``job -> (node, first
start)`` and replayed like every oracle plan (:func:`agents.oracle.plans.replay.replay_plan`),
so its objective is what the twin charges. Its memory is ``O(jobs x nodes)`` for the instance.
"""

from __future__ import annotations

import numpy as np

from agents.oracle.model import terms
from agents.oracle.model.instance import OracleInstance
from agents.oracle.model.intervals import crossed_within
from agents.oracle.plans.replay import Plan
from digital_twin import WORKLOAD_TYPES, DigitalTwin, HindsightView

_LATENCY_CRITICAL = WORKLOAD_TYPES.index("latency-critical")


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
    spec = view.replayable_spec()
    charges = inst.charges
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
        charge = terms.run_usd_per_s(inst, np.array([j]), fits)[0] * (min(now + d, inst.horizon_s) - now)
        if inst.job_lc[j]:
            charge = charge + charges.qos(inst.node_spot[fits])
        if not inst.job_preemptible[j]:
            cut = np.array([crossed_within(inst.interruptions_s[i], now, now + float(inst.longest_run_s[j]))
                            for i in fits])
            charge = charge + charges.eviction(cut)
        charge = charge + charges.sla(_sla_victims(twin, inst, j, fits))
        node = int(fits[int(np.argmin(charge))])
        if plan[job.job_id] is None:
            plan[job.job_id] = (node, now)
        twin.place(node)
    return plan
