"""The lower-bound relaxation: options that cover every start any policy of the twin can make.

Why the optimum (or HiGHS's dual bound) of the program built on these options is <= the
objective of *every* policy of the twin (all of it follows from mapping any episode to a
feasible solution of the program whose program objective is no larger):

1. **Which run is kept.** A job's episode is mapped to its *last* start ``s`` on node ``i``,
   unless the job never started, or it is preemptible and its last run was evicted (it then
   ends rejected): both are mapped to "no option", charged exactly the rejection penalty the
   twin charges (and a wait no longer than the episode's, item 3). Earlier (evicted) runs of
   preemptible jobs are dropped: dropping their cost, penalties and resource usage only
   lowers the objective and loosens every constraint.
   The kept run is never crossed by an interruption for a preemptible job (it would have been
   evicted), so options whose every start crosses one are omitted.
2. **Where it can start.** Decisions happen only at event times. Events are among the static
   ones (ticks, arrivals, interruptions, recoveries), the TTL expiries that may reject a job
   (first ones ``a_j + TTL`` and re-queue ones ``t_int + TTL``) and completions ``s + d_j`` of
   runs (those of evicted runs too: a superset of the twin's, which drops them).
   :func:`decision_time_superset` computes a superset of all of them by a sweep in time
   over a grid of cells (``tick_s / divisor`` wide): each possible start ``t`` of job ``j``
   (``t`` in ``j``'s window) adds ``t + d_j``; a grid cell holding more than
   ``max_points_per_cell`` points becomes *fuzzy* (any time in it possible), and a fuzzy part
   ``[l, h)`` of a window adds ``[l + d_j, h + d_j]``. Under cpu contention a run lasts between
   ``d_j`` and ``D_j`` (``longest_run_s``: ``d_j`` over the slowest rate of its candidate
   nodes), so a start ``t`` marks the cells of ``[t + d_j, t + D_j]`` fuzzy instead (and a fuzzy
   part adds ``[l + d_j, h + D_j]``). By induction over time every decision time is a point or
   lies in a fuzzy cell. The start window of a job is ``[a_j, min(a_j + TTL,
   H))``; for a preemptible job it is the union with ``[t, t + TTL)`` over the interruptions
   ``t`` of candidate nodes at which a run started in the windows could be running (``s < t <
   s + D_j``; each eviction re-queues it; :func:`start_windows`). Every run of the job starts in these windows.
   Starts on down nodes are impossible and excluded.
3. **What an option charges.** A point option charges exactly what the twin charges for that
   start (but see the two exceptions below). A cell option ``[lo, hi)`` (fuzzy cells split at
   grid points, deadlines, ``t_int - d_j`` and ``a_j + TTL``) charges the least any of its
   starts pays: the smaller of the charge at ``lo`` and the infimum over ``(lo, hi)``. In the
   infimum a counted event (eviction, deadline) is dropped if any interior start avoids it,
   and the charges that move continuously with the start (compute cost, wait, lost utility)
   are summed exactly: piecewise linear in ``s`` between known kinks, their sum's infimum is its
   least value at the cell's ends and kinks (:func:`_cells`). QoS is per node and exact (a last
   run on a spot node means the job was placed on a spot node). Exceptions: for a preemptible
   job that may be evicted, the deadline penalty is charged only when its arrival is already
   past the deadline (an earlier run may have started in time, and the penalty may be read as
   "first start late"), and the wait is that of the last queue spell alone, at its least: the
   spell began at the arrival or at an eviction, an interruption of a candidate node, so it
   lasted at least ``s`` minus the latest such time ``<= s``
   (:func:`terms.relax_for_earlier_runs`; 0 right after each, kinks of the cells); the
   earlier spells are dropped (their waits are >= 0). A last run of a preemptible job that
   starts after its first TTL window proves an earlier run was evicted on a spot node, so its
   option adds the least cost and first-spell wait that run can have had (it started no later
   than the last possible decision time in the first window; the first spell ended before
   the last one began, so both waits add up) and, for a latency-critical job, the QoS penalty
   (:func:`_charge_earlier_runs`). A job mapped to "no option" waited, in its last spell,
   from an enqueue ``e`` (its arrival, or an eviction for a job that may be evicted) until
   ``min(e + TTL, H)``: it is charged the least of these over the possible ``e``
   (:func:`terms.unserved_counts`).
4. **Resources and activity.** An option reserves only its *core* ``[hi, e(lo))`` (``e`` = run
   end), which every start in the cell occupies: the cores of the kept runs are subsets of the
   actual runs, so they fit wherever the actual runs fit, and a node is active (``active-nodes``)
   at least on the union of the cores. Capacity checked at every core start is exact for cores.
5. **SLA.** An option counts on the ticks ``T`` with ``hi <= T < e(lo)`` (``lo < T`` for
   points), at which every start of it surely runs; the load it sees is the sum of such sure
   loads, a subset of the true load. Any violation the program is forced to charge therefore
   happened in the episode; the program may miss violations, which only lowers its value.
   Lost utility and the ``completion``-rule deadline are judged at the kept (last) run's end
   and charged at its nominal end ``min(lo + d, H)``: both only grow with the end. Exception: a
   non-preemptible run that its node's next interruption may reach within ``longest_run_s``
   may fail, and a failed job is never late, so no miss is charged. An unserved
   latency-critical job loses 1. ``unfairness`` is not a sum over jobs and is charged 0 (it is
   >= 0; :mod:`agents.oracle.model.terms`).
6. **Contention** only lengthens runs (a rate is at most 1): every term above is charged for
   the nominal run ``[s, s + d_j)``, which the actual run contains, and each such term (cost,
   eviction, usage, SLA ticks) only grows with the run, so it is still a lower bound. On top,
   the program charges the least slowdown of the runs that surely complete (the options'
   ``stretchable``: even at the slowest rate, before the horizon and the node's next
   interruption): such a run pays for its whole stretched length, and on the time its core
   surely holds the node the load is at least the cores' load, so its rate is at most what
   that load gives (:func:`agents.oracle.milp.rows.slowdown_rows`).
7. **Energy and carbon** (when weighed). Each option counts the least kWh and kg CO2eq its
   run adds to the node over a time the run surely covers: a point's nominal run ``[s, e(s))``,
   a cell's core ``[hi, e(lo))`` (every start of the cell runs then, so the charge is at most
   any of theirs). At every instant the charges of the runs on a node sum to at most what the
   twin attributes to it, whatever set of runs it holds: host watts ``w x cpu``, ``w`` the
   least slope of the node's curve over the utilisations our jobs can add there, scaled so that
   runs that can share the node never sum past its headroom ``cores - background`` (the curve
   is flat beyond), and exactly ``busy - idle`` watts per GPU (:mod:`agents.oracle.model.energy`
   argues both); emissions are that power times the region's known intensity, integrated
   exactly. Contention only lengthens a run, which only adds energy; a run cut by an
   interruption is charged up to the cut (``e(s) <= t_next``). Earlier evicted runs: dropped
   (item 1: their energy is >= 0), except that a last run past the first TTL window adds the
   least energy of the run it proves (:func:`_charge_earlier_runs`). So the charges sum to at
   most the episode's counts and the bound stays valid. A point's charge is exact for a linear
   curve on a node our jobs cannot saturate, and below the twin's count on a concave curve.
8. **Placement rules and interference** (:mod:`digital_twin.placement`). The node-side rules
   (node selector and affinity, ``NoSchedule`` taints) cut each job's candidates exactly as they
   cut the twin's. Per-node caps that hold at every moment (``max_per_domain`` and own-group
   anti-affinity on single-node domains, :mod:`agents.oracle.model.rule_caps`) are capacity rows:
   the cores they count are parts of the twin's runs, which keep the caps. The other
   anti-affinity and spread rules are left out: they only take schedules away, so the
   program's optimum over a superset of the twin's schedules is below the twin's. Preferences
   (>= 0) are charged 0. Co-location interference only divides rates (by ``1 + s``, ``s`` the
   slowdowns present), so like contention it only lengthens runs: every term is still charged
   for the nominal run, ``longest_run_s`` (``D_j``) takes ``d_j (1 + s_j)`` over the slowest
   rate (``s_j`` all of the job's slowdowns, so decision times, start windows and "may fail"
   still cover every run), and a run counts as surely completing only by the worst-case end of
   ``d_j (1 + s_j)`` nominal seconds. ``tests/agents/oracle/test_oracle_rules.py`` checks the
   bound against the exhaustive optimum on random tiny instances with rules and interference.
9. **Workflows** (:mod:`digital_twin.sim.tables.workflow_events`). A task is released at the later of its
   arrival and its last parent's completion, and its queue TTL and its wait and latency run
   from its release. Its start windows are ``[r, H)``, ``r`` the earliest release
   (:attr:`~agents.oracle.model.instance.OracleInstance.earliest_start_s`: a parent completes no
   earlier than its own earliest release plus its nominal duration), since the release can be
   as late as the horizon. Its options count a wait of 0 and the latency of the run alone
   (:func:`release.release_floor_s`: the release is some time at or before the start), and no
   earlier run is proven from the first TTL window (:func:`_charge_earlier_runs` skips it). A
   completion may release a child, whose TTL expiry then follows ``TTL`` later: the sweep adds
   those times after every possible completion of a job with children
   (:func:`agents.oracle.bounds.decision_times.children_expiry_delays_s`), so decision times still
   lie in the superset. A task held back at the horizon or rejected upstream counts what its
   "no option" charges, with a wait of 0 (``>= 0``). The rows of
   :mod:`agents.oracle.milp.workflow_rows` hold for the mapped episode: a task that ran had all its
   parents completed (their kept runs may complete: no sure failure, ``lo + d <= H``), its kept
   run's latest start ``hi`` is after each parent's actual end, which is after the least end
   ``e(lo)`` of the parent's kept run (contention only lengthens it), and a workflow ends no
   earlier than each task's least end, or at the horizon when a task does not complete; it is
   late when a task's least end is past the deadline or a task does not complete (a deadline
   before the horizon). The plan's TTL rows are not added (the TTL runs from the *last*
   parent's completion). ``tests/agents/oracle/test_oracle_workflows.py`` checks the bound
   against the exhaustive optimum on random tiny DAGs.
10. **Solver.** The bound reported is HiGHS's dual bound (``mip_dual_bound``), never a primal
   value, plus the constant rejection terms; a time-limited solve still gives a valid bound.

Everything whose validity could not be argued this way was relaxed away (no TTL coupling
between runs, no ordering of the FIFO queue, no "fits somewhere" condition).
"""

from __future__ import annotations

import math

import numpy as np

from agents.oracle.bounds.decision_times import decision_time_superset, grid_bounds, start_windows
from agents.oracle.milp.options import (
    Options,
    block,
    crosses,
    filter_options,
    point_terms,
    recounted,
    run_end,
    symmetry_allowed,
    unserved,
)
from agents.oracle.model import release, terms
from agents.oracle.model.instance import OracleInstance
from agents.oracle.model.intervals import Interval, intersect, runs, split, subtract


def bound_options(inst: OracleInstance, divisor: int = 5, max_points_per_cell: int = 3) -> Options:
    """Every option of the relaxation (symmetric duplicates removed).

    Args:
        inst: The episode.
        divisor: Grid cells are ``tick_s / divisor`` seconds wide (ticks are grid points).
        max_points_per_cell: A grid cell with more possible decision times becomes fuzzy.
    """
    bounds = grid_bounds(inst, divisor)
    windows, evictable = zip(*(start_windows(inst, j) for j in range(inst.n_jobs)), strict=True)
    points, fuzzy = decision_time_superset(inst, windows, bounds, max_points_per_cell)
    fuzzy_runs = runs(bounds, fuzzy)
    blocks = []
    for j in range(inst.n_jobs):
        if not windows[j]:
            continue
        in_windows = np.zeros(len(points), dtype=bool)
        for lo, hi in windows[j]:
            in_windows |= (points >= lo) & (points < hi)
        decisions = (points[in_windows], intersect(windows[j], fuzzy_runs))  # when the job can be placed
        for i in inst.candidates[j]:
            allowed = subtract(windows[j], list(inst.down_windows_s[i]))
            group = _group(inst, j, i, allowed, points, intersect(allowed, fuzzy_runs), bounds, evictable[j])
            if group is not None:
                _charge_earlier_runs(inst, j, group, *decisions)
                blocks.append(group)
    options = Options.concatenate(blocks, *unserved(inst, may_have_started=np.array(evictable, dtype=bool)))
    return filter_options(options, symmetry_allowed(inst, options.job, options.node))


def _group(
    inst: OracleInstance,
    job: int,
    node: int,
    allowed: list[Interval],
    points: np.ndarray,
    fuzzy: list[Interval],
    bounds: np.ndarray,
    evictable: bool,
) -> dict[str, np.ndarray] | None:
    """The options of (job, node): point starts and cells, ordered by start."""
    inside = np.zeros(len(points), dtype=bool)
    for start, end in allowed:
        inside |= (points >= start) & (points < end)
    pts = points[inside]
    d = inst.duration_s[job]
    first_end = math.inf if inst.ttl_s is None else inst.arrival_s[job] + inst.ttl_s
    cuts = np.concatenate((bounds, [t - d for t in inst.interruptions_s[node]], [inst.deadline_s[job], first_end]))
    lo, hi = split(fuzzy, cuts)
    if inst.job_preemptible[job]:
        pts = pts[~crosses(inst, job, node, pts)]
        keep = ~crosses(inst, job, node, lo)
        lo, hi = lo[keep], hi[keep]
    found = (_points(inst, job, node, pts, evictable), _cells(inst, job, node, lo, hi, evictable))
    parts = [p for p in found if p is not None]
    if not parts:
        return None
    merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    order = np.argsort(merged["start_lo_s"], kind="stable")
    return {k: v[order] for k, v in merged.items()}


def _charge_earlier_runs(
    inst: OracleInstance,
    job: int,
    group: dict[str, np.ndarray],
    points: np.ndarray,
    fuzzy: list[Interval],
) -> None:
    """Add what surely evicted earlier runs cost to options that start after the first window.

    A last run starting at ``s >= a + TTL`` means earlier runs were evicted at interruptions of
    spot nodes. Each started at a decision time in the job's windows (``points`` and
    ``fuzzy``, the decision-time superset there), so under the pro-rated model:

    * the *first* run, started at some ``s1`` in ``[a, a + TTL)`` and evicted at ``t > s1`` on
      node ``k``, cost at least ``rate[k] * (t - s1)`` with ``s1`` at most the latest decision
      time before ``min(a + TTL, t)`` (:func:`latest_decision`), and its wait was ``s1 - a``:
      their sum is linear in ``s1``, least at ``s1 = a`` or at that latest time;
    * the *last evicted* run was evicted at some ``t`` with ``t <= s < t + TTL`` (the job was
      re-queued then) and started before ``t``: at least ``rate[k] * (t - s')`` with ``s'`` the
      latest decision time in the windows before ``t``.

    Either run also added at least the energy and emissions of running on ``k`` from that
    latest time to ``t`` (it ran over all of it; :func:`terms.run_energy_counts`, under either
    cost model). The two may be one run, so the larger of the two least charges is added
    (each the minimum over the possible nodes and times), with the first run's wait when that
    one is larger. A latency-critical job's earlier run on a spot node also counted the QoS
    violation (:func:`terms.add_earlier_spot_run`).
    """
    if inst.ttl_s is None or inst.has_parents[job]:  # a task's first window starts at its release, unknown here
        return
    a, longest = float(inst.arrival_s[job]), float(inst.longest_run_s[job])
    first_end = a + inst.ttl_s
    later = group["start_lo_s"] >= first_end
    evictions = [(k, t) for k in inst.candidates[job] for t in inst.interruptions_s[k] if t > a]
    if not later.any() or not evictions:
        return
    rate = {k: 0.0 if inst.active_nodes else float(inst.rate_per_s[job, k]) for k, _ in evictions}
    charges = inst.charges
    first = (0.0, 0.0, 0.0, 0.0, 0.0)  # (USD, wait s, cost USD, kWh, kg); 0 if no eviction is reachable
    candidates = []
    for k, t in evictions:
        latest = latest_decision(points, fuzzy, a, min(first_end, t)) if t < first_end + longest else None
        if latest is not None:
            kwh, kg, energy = _ran(inst, job, k, latest, t)
            candidates += [(rate[k] * (t - s1) + charges.wait(s1 - a) + energy, s1 - a, rate[k] * (t - s1), kwh, kg)
                           for s1 in (a, latest)]
    if candidates:
        first = min(candidates)
    last = np.zeros((4, len(later)))  # the last evicted run's least (USD, cost USD, kWh, kg) per option
    last[0] = np.inf
    lo, hi = group["start_lo_s"], group["start_hi_s"]
    for k, t in evictions:
        latest = latest_decision(points, fuzzy, a, t)
        if latest is None:
            continue
        kwh, kg, energy = _ran(inst, job, k, latest, t)
        # the start set [lo, hi) (a point: lo == hi) holds an s with t <= s < t + TTL
        possible = later & (lo < t + inst.ttl_s) & np.where(lo == hi, t <= lo, t < hi)
        cheaper = possible & (rate[k] * (t - latest) + energy < last[0])
        last[:, cheaper] = np.array([[rate[k] * (t - latest) + energy], [rate[k] * (t - latest)], [kwh], [kg]])
    last[:, ~np.isfinite(last[0])] = 0.0  # no such t: charge the first run only
    use_first = first[0] >= last[0]
    wait_s = np.where(later & use_first, first[1], 0.0)
    cost, kwh_all, kg_all = (np.where(use_first, first[q], last[r]) for q, r in ((2, 1), (3, 2), (4, 3)))
    counts = group["counts"].copy()
    terms.add_earlier_spot_run(inst, job, counts, later)
    terms.add_first_run_wait(counts, later, wait_s[later])
    terms.add_earlier_energy(counts, later, kwh_all[later], kg_all[later])
    group["cost_usd"] = group["cost_usd"] + cost * later
    penalties = terms.penalty_usd(inst, counts)
    group["coef_usd"] = penalties if inst.active_nodes else penalties + group["cost_usd"]
    group["counts"] = counts


def _ran(inst: OracleInstance, job: int, node: int, since_s: float, until_s: float) -> tuple[float, float, float]:
    """``(kWh, kg, USD)``: the least energy and emissions of ``job`` running on ``node`` over ``[since_s, until_s)``."""
    kwh, kg = terms.run_energy_counts(inst, job, node, np.array([since_s]), np.array([until_s]))
    return float(kwh[0]), float(kg[0]), float(terms.energy_usd(inst, kwh, kg)[0])


def latest_decision(points: np.ndarray, fuzzy_runs: list[Interval], lo: float, hi: float) -> float | None:
    """The supremum of the possible decision times in ``[lo, hi)`` (``None``: there are none).

    ``points`` (sorted) and ``fuzzy_runs`` are the decision-time superset
    (:func:`decision_time_superset`); a fuzzy run's supremum in the range is ``min(its end, hi)``.
    """
    best = -math.inf
    k = int(np.searchsorted(points, hi, side="left")) - 1
    if k >= 0 and points[k] >= lo:
        best = float(points[k])
    for run_lo, run_hi in fuzzy_runs:
        if run_lo < hi and run_hi > lo:
            best = max(best, min(run_hi, hi))
    return None if best == -math.inf else best


def _points(
    inst: OracleInstance, job: int, node: int, starts: np.ndarray, evictable: bool
) -> dict[str, np.ndarray] | None:
    """Point options: exact terms, except those judged at the first start of jobs that may be evicted."""
    if len(starts) == 0:
        return None
    exact = point_terms(inst, job, node, starts)
    if not evictable:
        return exact
    counts = exact["counts"].copy()
    terms.relax_for_earlier_runs(inst, job, counts, starts)
    return recounted(inst, job, node, exact, counts)


def _cells(
    inst: OracleInstance, job: int, node: int, lo: np.ndarray, hi: np.ndarray, evictable: bool
) -> dict[str, np.ndarray] | None:
    """Cell options: core usage and ticks, charged the least any start in the cell pays.

    That is the smaller of the charge at ``lo`` and the infimum over ``(lo, hi)``. Inside the
    cell the counted events are at their infimum (:func:`terms.cell_counts`) and the charges
    that move with the start (compute cost, wait, lost utility) are summed exactly: the sum is
    piecewise linear between the kinks of :func:`terms.ramp_kinks`, so its infimum is its least
    value at the cell's ends and the kinks inside. For a job that may be evicted the wait is
    the last queue spell's least, ``s - last_enqueue(s)`` (:func:`terms.relax_for_earlier_runs`):
    it drops to 0 at each requeue time (:func:`release.requeue_times_s`), kinks too, and is taken
    at each evaluated start itself, at most its limit from the left there. Energy and carbon
    are counted over the core ``[hi, e(lo))`` (:func:`terms.count_run_energy`), which every
    start of the cell runs over.
    """
    if len(lo) == 0:
        return None
    rate = inst.rate_per_s[job, node]
    t_next = inst.next_interruption_s(node, lo)  # no interruption inside a cell
    end_lo = run_end(inst, job, lo, t_next)

    def charge(at: np.ndarray | None, infimum: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        start = lo if at is None else at
        cost = rate * np.maximum(run_end(inst, job, start, t_next) - start, 0.0)
        counts = terms.cell_counts(inst, job, node, lo, t_next, infimum=infimum, at=at)
        if evictable:
            terms.relax_for_earlier_runs(inst, job, counts, start)
        penalties = terms.penalty_usd(inst, counts)
        return cost, counts, penalties if inst.active_nodes else penalties + cost

    cost, counts, total = charge(None, infimum=False)
    requeues = release.requeue_times_s(inst, job) if evictable else np.zeros(0)
    for kink in (lo, hi, *terms.ramp_kinks(inst, job), *requeues):
        cost_k, counts_k, total_k = charge(np.clip(kink, lo, hi), infimum=True)
        cheaper = total_k < total
        cost, total = np.where(cheaper, cost_k, cost), np.where(cheaper, total_k, total)
        counts = np.where(cheaper[:, None], counts_k, counts)
    terms.count_run_energy(inst, job, node, counts, hi, end_lo)  # over the core: every start runs then
    ticks = inst.tick_times_s
    return block(
        inst,
        job,
        node,
        lo=lo,
        hi=hi,
        use=(hi, end_lo),
        tick_range=(np.searchsorted(ticks, hi, side="left"), np.searchsorted(ticks, end_lo, side="left")),
        cost=cost,
        counts=counts,
    )
