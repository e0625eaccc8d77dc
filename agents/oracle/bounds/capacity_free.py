"""The bound at scale: each job's cheapest fate, for episodes whose programs would not fit in memory.

At 500 nodes and 5,000 jobs the plan program would have billions of variables
(:mod:`agents.oracle.sizing.size`). :func:`~agents.oracle.solve_oracle` then bounds the episode
here and plans it with :mod:`agents.oracle.plans.hindsight_greedy`, in memory
``O(jobs x nodes)`` for the instance and ``O(jobs + nodes)`` beyond it.

:func:`capacity_free_bound` is the relaxation with every coupling between jobs dropped (node
capacity, the SLA's node loads, the FIFO queue), so each job independently takes its cheapest
fate (:mod:`agents.oracle.bounds.fates`), charged through :class:`agents.charges.Charges`. Why it
is below the objective of every policy of the twin, job by job (the objective is the cost plus
the penalty terms, each summed over jobs, except ``unfairness`` and ``sla``, which are >= 0 and
charged 0 here):

1. A job that is never started (or, if preemptible, may have been evicted on its last run)
   counts at least what :func:`agents.oracle.model.terms.unserved_counts` charges it (the
   relaxation's "no option", argued in :mod:`agents.oracle.bounds.exact`).
2. A job that is not evictable (its windows hold no interruption that can reach a run,
   :func:`agents.oracle.bounds.decision_times.start_windows`) starts once, at some ``s`` in
   ``[a, S)``, ``S = min(a + TTL, H)``, on a candidate node ``i``. Its run lasts at least its
   nominal duration ``d`` (contention only slows it), so it costs at least ``r x (min(s + d, H)
   - s)`` with ``r`` the job's prorated USD/s on ``i`` (``active-nodes``: the node's price times
   the job's cpu share; at any time the cpu shares of the jobs on a node sum to at most 1, so
   these charges sum to at most the node's active cost; :func:`agents.oracle.model.terms.run_usd_per_s`).
   It waits ``s - a``. Cost plus wait is piecewise linear in ``s`` with one kink at ``H - d``,
   so its infimum over ``[a, S)`` is its least value at ``a``, the kink and ``S``. A
   non-preemptible run on a node with an interruption in ``[a, S + d)`` may instead fail at it:
   then it pays at least the eviction penalty, so the node's charge is the smaller of the two.
   A latency-critical job on a spot node counts the QoS penalty (exact); under the
   ``first-start`` deadline rule a job that arrives after its deadline counts the miss however
   it is served. Where the episode weighs energy or carbon, the run also adds at least the
   energy and emissions :mod:`agents.oracle.model.energy` charges over its nominal interval (a
   share no set of co-running jobs exceeds, so the charges of all jobs sum validly); with it
   the charge is no longer linear in ``s`` between the three points but still piecewise linear,
   with kinks where ``s`` or ``s + d`` crosses a change of the node's charge rate, and its
   least value is taken over those too (:func:`_least_run_with_energy_usd`). Every other term
   is >= 0 and charged 0.
3. An evictable job (a preemptible one whose run an interruption can reach) may run several
   times, but from its arrival to its end or the horizon it is always queued or running, and
   every queue spell's wait counts: it is charged the least of completing (its last run's
   nominal cost and QoS penalty), running at the horizon (the cheaper of waiting and its
   cheapest run, per second since its arrival) and being unserved
   (:func:`agents.oracle.bounds.fates.evictable_charge_usd`).
4. A workflow task with parents is released at its last parent's completion, which may be
   as late as the horizon: its window is ``[r, H)`` (``r`` its earliest release,
   :attr:`~agents.oracle.model.instance.OracleInstance.earliest_start_s`) and its wait counts 0
   (:func:`agents.oracle.model.release.release_floor_s`). Each workflow submitted before the
   horizon ends (its last task completes) no earlier than ``E = min(H, max over its tasks of
   r + d)``, or counts until ``H`` when it fails: it counts at least ``weight x (E -
   submitted)`` hours, and is surely late when its deadline is before ``H`` and ``E`` (:func:`_workflow_floor_usd`).

Each job's charge is the least of its fates, and the bound their sum: no HiGHS solve, so it is
deterministic and needs no limit. It is weak where capacity binds, so the bound reported
(:func:`scale_bound`) is the larger of it and a Lagrangian relaxation of node capacity
(:mod:`agents.oracle.bounds.lagrangian`: the same fates, with capacity priced back in over time
cells), after a fixed number of subgradient steps.
"""

from __future__ import annotations

import numpy as np

from agents.oracle.bounds.fates import job_fates
from agents.oracle.bounds.lagrangian import lagrangian_bound
from agents.oracle.model import release, terms
from agents.oracle.model.instance import OracleInstance


def scale_bound(inst: OracleInstance, target_usd: float, iterations: int) -> float:
    """The bound at scale: the larger of :func:`capacity_free_bound` and the Lagrangian bound.

    Args:
        inst: The episode.
        target_usd: An objective a policy reaches (the hindsight greedy plan's): the ascent aims
            no higher.
        iterations: Subgradient steps of :func:`agents.oracle.bounds.lagrangian.lagrangian_bound`.
    """
    return max(capacity_free_bound(inst), lagrangian_bound(inst, target_usd, iterations).bound_usd)


def capacity_free_bound(inst: OracleInstance) -> float:
    """A lower bound on every policy's objective, with no coupling between jobs (see the module docstring).

    Cost: ``O(sum over jobs of candidate nodes x log interruptions)``; memory ``O(J + N)``
    beyond the instance.
    """
    charges = inst.charges
    h = inst.horizon_s
    rates = terms.run_usd_per_s(inst, np.arange(inst.n_jobs), np.arange(inst.n_nodes))
    kinks = [] if inst.energy is None else [inst.energy.kinks_s(i) for i in range(inst.n_nodes)]  # once per node
    total, runs = job_fates(inst)
    for fates in runs:
        j = fates.job
        a, d, latest = float(inst.arrival_s[j]), float(inst.duration_s[j]), fates.latest_s
        starts = np.array([a, min(max(h - d, a), latest), latest])
        if inst.energy is None:
            run = rates[j, fates.nodes][:, None] * (np.minimum(starts + d, h) - starts)[None, :]
            waits = charges.wait(starts - release.release_floor_s(inst, j, starts))
            served = (run + waits[None, :]).min(axis=1)
        else:
            served = np.array(
                [_least_run_with_energy_usd(inst, j, i, rates[j, i], starts, kinks[i]) for i in fates.nodes]
            )
        served = np.where(fates.may_fail, np.minimum(served, charges.eviction(1.0)), served)
        served = served + fates.qos_usd + fates.late_usd
        total += min(fates.unserved_usd, float(served.min()))
    return total + _workflow_floor_usd(inst)


def _workflow_floor_usd(inst: OracleInstance) -> float:
    """The least the ``workflow`` and ``workflow_deadline`` terms count, from the critical paths (item 4), USD."""
    dag = inst.dag
    if dag is None:
        return 0.0
    ends = np.minimum(inst.earliest_start_s + inst.duration_s, inst.horizon_s)
    total = 0.0
    for w in np.flatnonzero(dag.counted):
        end = float(ends[list(dag.tasks[w])].max())
        hours = float(dag.weight[w]) * (end - float(dag.submitted_s[w])) / 3600.0
        total += float(inst.charges.usd("workflow", hours))
        if dag.deadline_s[w] < inst.horizon_s and end > dag.deadline_s[w]:
            total += float(inst.charges.usd("workflow_deadline", 1.0))
    return total


def _least_run_with_energy_usd(
    inst: OracleInstance, job: int, node: int, rate: float, starts: np.ndarray, kinks: np.ndarray
) -> float:
    """The least cost, wait and energy of ``job`` starting on ``node`` in ``[a, S]``, USD.

    ``starts`` is ``[a, the kink H - d, S]``, ``kinks`` the node's
    (:meth:`agents.oracle.model.energy.RunEnergy.kinks_s`). Cost, wait and the run's least energy and emissions
    over its nominal ``[s, min(s + d, H))`` (:func:`agents.oracle.model.terms.run_energy_counts`)
    are continuous in ``s`` and linear between the kinks of the node's charge rate, those
    kinks minus ``d``, and ``H - d``: the least over ``[a, S]`` is at one of them that lies in
    it, or at ``a`` or ``S``; so this is the infimum over the start window, with the energy charged.
    """
    a, latest = float(starts[0]), float(starts[-1])
    d, h = float(inst.duration_s[job]), inst.horizon_s
    shifted = np.concatenate((kinks, kinks - d))
    s = np.unique(np.concatenate((starts, shifted[(shifted > a) & (shifted < latest)])))
    end = np.minimum(s + d, h)
    kwh, kg = terms.run_energy_counts(inst, job, node, s, end)
    wait = inst.charges.wait(s - release.release_floor_s(inst, job, s))
    usd = rate * (end - s) + wait + terms.energy_usd(inst, kwh, kg)
    return float(usd.min())
