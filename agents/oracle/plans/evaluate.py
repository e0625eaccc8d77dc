"""A chosen set of plan options: its exact objective, the greedy fallback, and earlier equal starts.

:func:`evaluate_plan` recomputes the objective of a chosen set of options exactly as the twin
accounts it (SLA from the loads at ticks, active-node cost from the union of runs), but energy
and carbon, which the options count from below (:mod:`agents.oracle.model.energy`: exact for a
linear power curve on a node our jobs cannot saturate);
:func:`greedy_plan` is the fallback plan when HiGHS has none, and :func:`advance_starts` moves
each planned start to the earliest one on the same node that changes nothing else.
"""

from __future__ import annotations

import numpy as np

from agents.oracle.milp.options import Options
from agents.oracle.model import terms
from agents.oracle.model.instance import OracleInstance
from digital_twin.objective import ObjectiveBreakdown


def evaluate_plan(
    inst: OracleInstance, options: Options, chosen: np.ndarray, first_runs: np.ndarray | None = None
) -> ObjectiveBreakdown:
    """The objective the twin will account for the plan that starts each job at its option.

    Args:
        inst: The episode.
        options: Point options (as from :func:`agents.oracle.plans.options.plan_options`).
        chosen: ``(J,)`` option index per job, ``-1`` = never started.
        first_runs: ``(J,)`` the evicted first run of each job run twice (an ``evicted``
            option of its rerun's family), ``-1`` = none; ``None`` = no job.
    """
    picked = chosen[chosen >= 0]
    if first_runs is not None:
        picked = np.concatenate((picked, first_runs[first_runs >= 0]))
    loads = np.zeros(inst.sla_allowed_cpu_m.shape, dtype=np.int64)  # (K, N)
    for o in picked:
        loads[options.tick_lo[o] : options.tick_hi[o], options.node[o]] += inst.job_cpu_m[options.job[o]]
    over = loads > inst.sla_allowed_cpu_m
    sla = sum(
        1
        for o in picked
        if inst.job_lc[options.job[o]] and over[options.tick_lo[o] : options.tick_hi[o], options.node[o]].any()
    )
    if inst.active_nodes:
        cost = sum(
            float(inst.node_price_per_s[i]) * _union_length(options, picked[options.node[picked] == i])
            for i in range(inst.n_nodes)
        )
    else:
        cost = float(options.cost_usd[picked].sum())
    counts = terms.plan_counts(options.counts[picked], options.unserved_counts[chosen < 0], sla)
    return ObjectiveBreakdown.of(cost, inst.weights, counts)


def _union_length(options: Options, picked: np.ndarray) -> float:
    """Total length of the union of the usage intervals of ``picked`` options."""
    spans = sorted(zip(options.use_start_s[picked].tolist(), options.use_end_s[picked].tolist(), strict=True))
    total, cur_lo, cur_hi = 0.0, None, None
    for lo, hi in spans:
        if cur_hi is None or lo > cur_hi:
            if cur_hi is not None:
                total += cur_hi - cur_lo
            cur_lo, cur_hi = lo, hi
        else:
            cur_hi = max(cur_hi, hi)
    if cur_hi is not None:
        total += cur_hi - cur_lo
    return total


def greedy_plan(inst: OracleInstance, options: Options) -> np.ndarray:
    """A feasible plan: jobs in arrival order take their cheapest option that fits, if < leaving them unserved.

    Used as a fallback incumbent (``scipy.optimize.milp`` accepts no warm start). SLA effects
    are ignored when choosing (they are accounted by :func:`evaluate_plan`).

    Returns:
        ``(J,)`` chosen option per job (``-1`` = rejected).
    """
    chosen = np.full(inst.n_jobs, -1, dtype=np.int64)
    demand = np.stack([inst.job_cpu_m, inst.job_mem_mib, inst.job_gpus], axis=1)  # (J, 3)
    capacity = np.stack([inst.node_cpu_m, inst.node_mem_mib, inst.node_gpus], axis=1)  # (N, 3)
    taken: list[list[int]] = [[] for _ in range(inst.n_nodes)]
    for j in np.argsort(inst.arrival_s, kind="stable"):
        mine = np.flatnonzero((options.job == j) & (options.family < 0))  # one run per job
        for o in mine[np.argsort(options.coef_usd[mine], kind="stable")]:
            if options.coef_usd[o] >= options.unserved_usd[j]:
                break
            i = int(options.node[o])
            if _fits(options, taken[i], int(o), demand, capacity[i]):
                chosen[j] = o
                taken[i].append(int(o))
                break
    return chosen


def advance_starts(
    inst: OracleInstance, options: Options, chosen: np.ndarray, first_runs: np.ndarray | None = None
) -> np.ndarray:
    """Move each planned job to its earliest start on the same node that changes nothing else.

    HiGHS breaks ties between equally good start times arbitrarily; a job should not wait for
    nothing. A move is kept only if the job fits at every time and the exact objective does
    not increase, so the plan's objective is unchanged (up to float rounding). A rerun moves
    within its family; first runs (``first_runs``, as in :func:`evaluate_plan`) stay. A
    workflow task never moves before its parents' planned ends.

    Returns:
        ``(J,)`` the new chosen option per job.
    """
    chosen = chosen.copy()
    demand = np.stack([inst.job_cpu_m, inst.job_mem_mib, inst.job_gpus], axis=1)  # (J, 3)
    capacity = np.stack([inst.node_cpu_m, inst.node_mem_mib, inst.node_gpus], axis=1)  # (N, 3)
    value = evaluate_plan(inst, options, chosen, first_runs).total_usd
    fixed = np.zeros(0, dtype=np.int64) if first_runs is None else first_runs[first_runs >= 0]
    for j in np.argsort(inst.arrival_s, kind="stable"):
        o = int(chosen[j])
        if o < 0:
            continue
        same = np.flatnonzero(
            (options.job == j) & (options.node == options.node[o]) & (options.family == options.family[o])
            & ~options.evicted
        )
        no_worse = options.coef_usd[same] <= options.coef_usd[o]
        released = options.start_lo_s[same] >= _parents_planned_end_s(inst, options, chosen, j)
        earlier = same[(options.start_lo_s[same] < options.start_lo_s[o]) & no_worse & released]
        taken = np.concatenate((chosen[chosen >= 0], fixed))
        others = [int(p) for p in taken if p != o and options.node[p] == options.node[o]]
        for candidate in earlier[np.argsort(options.start_lo_s[earlier], kind="stable")]:
            if not _fits(options, others, int(candidate), demand, capacity[options.node[o]]):
                continue
            chosen[j] = candidate
            moved = evaluate_plan(inst, options, chosen, first_runs).total_usd
            if moved <= value + 1e-15 * max(1.0, abs(value)):
                value = moved
                break
            chosen[j] = o
    return chosen


def _parents_planned_end_s(inst: OracleInstance, options: Options, chosen: np.ndarray, job: int) -> float:
    """When ``job``'s parents end as planned (``-inf`` for a job without parents): its earliest start."""
    if inst.dag is None or not inst.has_parents[job]:
        return -np.inf
    ends = [float(options.use_end_s[chosen[p]]) if chosen[p] >= 0 else np.inf for p in inst.dag.parents[job]]
    return max(ends)


def _fits(options: Options, taken: list[int], o: int, demand: np.ndarray, capacity: np.ndarray) -> bool:
    """Whether option ``o`` fits next to the ``taken`` options of its node at every time."""
    lo, hi = options.use_start_s[o], options.use_end_s[o]
    others = np.array(taken, dtype=np.int64)
    starts = options.use_start_s[others]
    times = np.concatenate(([lo], starts[(starts > lo) & (starts < hi)]))
    for t in times:
        running = others[(options.use_start_s[others] <= t) & (t < options.use_end_s[others])]
        used = demand[options.job[running]].sum(axis=0) + demand[options.job[o]]
        if (used > capacity).any():
            return False
    return True
