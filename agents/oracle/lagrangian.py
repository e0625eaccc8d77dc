"""A tighter bound at scale: node capacity relaxed into the objective with Lagrange multipliers.

:func:`agents.oracle.scale.capacity_free_bound` lets every job take its cheapest fate on its
own, so where capacity binds (many jobs want the few cheap nodes at the same time) it is weak.
This module puts node capacity back, aggregated over time cells, and moves it into the
objective with multipliers (Lagrangian relaxation); :func:`lagrangian_bound` maximises the
resulting dual function by projected subgradient ascent and reports the best value seen.

**Why every value reported is <= the objective of every policy of the twin.**

1. **The fates and their charges** are exactly those of
   :func:`~agents.oracle.scale.capacity_free_bound`, whose docstring argues each one: a job is
   mapped, from any episode, to one fate whose charge is at most what the episode counts for
   it (cost, penalties and waiting, summed over jobs; ``sla`` and ``unfairness`` are >= 0 and
   charged 0). The fates: *unserved*; for a job that cannot be evicted, a *run* on a candidate
   node ``i`` started at some ``s`` in ``[a, S)``, ``S = min(a + TTL, H)``, charged its
   nominal cost, its wait, QoS and the ``first-start`` deadline miss; for a non-preemptible job
   on a node with an interruption in ``(a, S + d)``, a *failure* there, charged the eviction
   penalty (and QoS, deadline); for a job that may be evicted, its cheapest QoS charge.
   What is new is the *usage* each fate is said to make: a run uses the job's requests
   ``u_jc`` (millicores, MiB, GPUs) on ``i`` over its **nominal core** ``[s, min(s + d, H))``;
   every other fate (unserved, failed, evictable) uses nothing.
2. **Cores fit.** Map an episode to fates as in step 1; a job mapped to a run started once,
   at ``s`` on ``i``. Its actual run ``[s, s')`` contains the nominal core: cpu contention only
   slows a run, so ``s' >= min(s + d, H)`` unless an interruption cut it, and a cut run is
   mapped to a run only when that leaves the core inside it (a preemptible job that cannot be
   evicted has no interruption within reach of any run; a non-preemptible run cut at ``t <
   min(s + d, H)`` is mapped to its failure, which exists since ``t`` lies in ``(a, S + d)``;
   one cut at ``t >= s + d``, a stretched run, is mapped to its run, having paid at least its
   nominal cost). While it runs the job holds its requests on
   ``i`` (the twin allocates them at the start and releases them at the end). The twin never
   lets a node's allocation pass its capacity (its fit test, in whole millicores, MiB and
   GPUs), so at every instant ``t`` the cores holding ``t`` on ``i`` use at most
   ``cap_ic``. The node is up over the whole core: a start needs an up node, an interruption
   at ``s`` comes before any decision at ``s``, and one inside the core would have cut the run;
   so the cores avoid the node's down windows. Integrating over a time cell ``k``:
   ``sum_j u_jc |core_j on i, inside k| <= cap_ic x up_ik``, with ``up_ik`` the time ``i``
   is up in ``k``. Summing these over the nodes of a **group** ``G`` (any set of nodes; here
   nodes of equal size, price, spot-ness and candidate jobs, so that a job's run charges the
   same on each) gives the aggregated constraint ``use_Gkc <= avail_Gkc`` that every episode's
   fates satisfy.
3. **Weak duality.** So the relaxed problem *P*: "each job picks one fate, minimising the sum
   of charges, subject to ``use_Gkc <= avail_Gkc`` for all ``G, k, c``" has an optimum at most
   the objective of every policy. For any ``lam >= 0``::

       L(lam) = sum_j min over j's fates [charge + sum_Gkc lam_Gkc use_Gkc(fate)] - sum_Gkc lam_Gkc avail_Gkc

   is at most ``sum_j [charge + lam . use](f_j) - lam . avail = charge(f) + lam . (use(f) -
   avail) <= charge(f)`` for the fates ``f`` of any feasible choice, in particular of any
   episode. ``L`` needs no optimality of ``lam``: every iterate is a valid bound.
4. **The minimum over a continuous start is exact.** For a run on group ``G`` the bracket is
   ``r (e - s) + w (s - a) + qos + deadline + sum_c u_jc (Lam_Gc(e) - Lam_Gc(s))`` with ``e =
   min(s + d, H)`` and ``Lam_Gc`` the integral of the (cell-wise constant) multiplier density:
   continuous and piecewise linear in ``s``, with kinks only where ``s`` or ``s + d`` crosses
   a cell boundary and at ``s = H - d``. Its infimum over ``[a, S)`` is therefore its least
   value at ``a``, ``S`` (a limit: the bound takes the infimum) and the kinks inside, which
   are all evaluated: no approximation.
5. **Floating point.** Charges and usages are computed in float64 as in the capacity-free
   bound; the reported value is never below the capacity-free bound (the scale path takes the
   larger of the two), and ``L(0)`` equals it up to rounding.

The multipliers live on a grid of cells (one per telemetry tick, widened when the episode has
more possible starts than the work budget, :data:`MAX_POINTS`); memory is ``O(groups x cells)``
for them and ``O(points)`` for the starts, each point a (job, start) pair. A group holds every
node whose runs charge alike, so a fleet generated from a few node types has a few groups;
with one node per group this is the per-node relaxation. For groups of nodes whose fates are
interchangeable the aggregated and per-node dual optima are equal (a job's convex combination
of fates can be spread evenly over a group's nodes); they differ only through the nodes'
different down windows.

**The ascent** (projected subgradient, Polyak's step towards a moving level): ``lam`` is
scaled per row to ``mu = lam x nominal_Gkc`` (the group's whole capacity over the cell, so each
row's subgradient ``(use - avail) / nominal`` is a fraction of it). From ``mu = 0``, where
``L`` is the capacity-free bound, each step moves along the subgradient of the minimising fates,
deflected by the previous direction where the two disagree (Camerini, Fratta and Maffioli),
with Polyak's length ``(level - L) / |d|^2`` and projects onto ``mu >= 0``. The level sits
``delta`` above the best value so far and never above ``target_usd`` (the hindsight greedy
plan's objective: the dual optimum is below it); ``delta`` doubles after a step that reaches
the level and shrinks by 10 % after one that does not (the variable target value method of
Nedic and Bertsekas). A fixed number of steps (work, not time): deterministic.

Example:
    >>> import numpy as np
    >>> from agents.oracle.instance import OracleInstance
    >>> from agents.oracle.scale import capacity_free_bound
    >>> from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, Telemetry, TwinSpec
    >>> fleet = (NodeSpec("cheap", "x86_64", "on-demand", 2, 8, 0.36),
    ...          NodeSpec("dear", "x86_64", "on-demand", 2, 8, 3.6))
    >>> jobs = tuple(JobSpec(f"j{k}", 0.0, 3600.0, "batch", 2, 2) for k in range(2))
    >>> spec = TwinSpec(fleet, jobs, Telemetry.constant(2, 10, 10, 7200, 300), EpisodeSettings(7200, queue_ttl_s=600.0))
    >>> twin = DigitalTwin(spec)
    >>> twin.reset(np.random.default_rng(0))
    >>> inst = OracleInstance.from_hindsight(twin.hindsight())
    >>> round(capacity_free_bound(inst), 4)  # both jobs on the cheap node at once
    0.72
    >>> round(lagrangian_bound(inst, target_usd=3.96, iterations=200).bound_usd, 4)  # one is rejected (1 USD)
    1.36
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from agents.oracle.bound import grid_bounds_for
from agents.oracle.fates import job_fates
from agents.oracle.instance import OracleInstance

CELLS_PER_TICK = 1
"""Cells per telemetry tick before any widening (one cell per tick)."""
MAX_POINTS = 2_000_000
"""Largest number of (job, start) points: cells widen until the starts to evaluate fit."""
CHUNK_VALUES = 4_000_000
"""Group x point values computed at once (memory per temporary array: 8 bytes each)."""
FIRST_LEVEL = 0.2
"""The first level sits this fraction of the way from ``L(0)`` to the target."""
LEVEL_UP, LEVEL_DOWN, MIN_LEVEL = 2.0, 0.9, 1e-6
"""The level's distance above the best value: times 2 after a step that reaches it, times 0.9
after one that does not, never below 1e-6 x the best value (USD)."""
DEFLECTION = 1.5
"""Camerini-Fratta-Maffioli deflection: each direction adds this much of the previous one
where the new subgradient turns back against it (fewer zigzags)."""
_RESOURCES = 3  # millicores, MiB, GPUs


@dataclass(frozen=True)
class LagrangianBound:
    """What :func:`lagrangian_bound` found.

    Attributes:
        bound_usd: The best ``L`` over the iterates (a lower bound on every policy's objective).
        initial_usd: ``L(0)``: the capacity-free bound, up to rounding.
        iterations: Subgradient steps taken (at most the number asked; fewer when the
            subgradient vanishes or ``L`` reaches the target).
        best_iteration: The step after which ``bound_usd`` was reached (0: at ``L(0)``).
        cell_s: Width of the time cells of the capacity rows, seconds (the last may be shorter).
        n_groups: Node groups, each with its own capacity rows.
    """

    bound_usd: float
    initial_usd: float
    iterations: int
    best_iteration: int
    cell_s: float
    n_groups: int


@dataclass(frozen=True, eq=False)
class _Relaxation:
    """The fates of one episode with their usages, independent of the multipliers.

    ``J'`` counts the jobs with run fates ("served" below), ``P`` their candidate starts,
    ``G`` the node groups, ``K`` the time cells.
    """

    constant_usd: float  # sum of the charges of jobs without a run fate
    fixed_usd: np.ndarray  # (J',) a served job's cheapest fate that uses nothing (unserved, failed)
    job_of_point: np.ndarray  # (P,) index into the served jobs; points sorted by job, then start
    ptr: np.ndarray  # (J' + 1,) points of served job q: ptr[q] .. ptr[q + 1]
    start_s: np.ndarray  # (P,) the start s
    end_s: np.ndarray  # (P,) the nominal end min(s + d, H)
    base_usd: np.ndarray  # (P,) wait w (s - a)
    k_start: np.ndarray  # (P,) cell of s (clipped to the last cell)
    off_start: np.ndarray  # (P,) s - the start of that cell
    k_end: np.ndarray  # (P,) cell of the end
    off_end: np.ndarray  # (P,) end - the start of that cell
    usage: np.ndarray  # (C, J') requests of each served job: millicores, MiB, GPUs
    usage_p: np.ndarray  # (C, P) the same per point
    dur_s: np.ndarray  # (P,) end - start
    rate: np.ndarray  # (J', G) USD per second of a run on the group (0 off-candidate)
    extra_usd: np.ndarray  # (J', G) QoS and deadline of a run on the group
    candidate: np.ndarray  # (J', G) bool, the job may run on the group
    bounds_s: np.ndarray  # (K + 1,) cell boundaries 0 .. H
    nominal: np.ndarray  # (G, C, K) group capacity x cell width (1 where the resource is absent)
    avail_ratio: np.ndarray  # (G, C, K) up capacity / nominal (0 where the resource is absent)
    row: np.ndarray  # (G, C, K) bool, a capacity row with capacity (the others stay at 0)


def lagrangian_bound(inst: OracleInstance, target_usd: float, iterations: int) -> LagrangianBound:
    """Maximise the Lagrangian dual of node capacity from 0 (see the module docstring).

    Args:
        inst: The episode.
        target_usd: An objective some policy reaches on this episode (e.g. the hindsight greedy
            plan's): no level is aimed above it. Any value keeps the bound valid.
        iterations: Subgradient steps (>= 0; 0 returns ``L(0)``).
    """
    rel = _relaxation(inst)
    mu = np.zeros_like(rel.nominal)
    value, g = _evaluate(rel, mu)
    initial, best, best_at, taken = value, value, 0, 0
    delta = FIRST_LEVEL * (target_usd - value)
    direction = np.zeros_like(mu)
    for step in range(1, iterations + 1):
        g = np.where(rel.row & ((mu > 0.0) | (g > 0.0)), g, 0.0)  # a row at 0 pushed down stays at 0
        previous = float(np.sum(direction * direction))
        deflect = max(0.0, -DEFLECTION * float(np.sum(g * direction)) / previous) if previous > 0.0 else 0.0
        direction = g + deflect * direction
        direction = np.where(rel.row & ((mu > 0.0) | (direction > 0.0)), direction, 0.0)
        norm2 = float(np.sum(direction * direction))
        level = min(best + delta, target_usd)
        if norm2 == 0.0 or not level > value:  # optimal multipliers, or the target is reached
            break
        mu = np.maximum(mu + ((level - value) / norm2) * direction, 0.0)
        taken = step
        value, g = _evaluate(rel, mu)
        delta = delta * LEVEL_UP if value >= level else max(delta * LEVEL_DOWN, MIN_LEVEL * max(abs(best), 1.0))
        if value > best:
            best, best_at = value, step
    cell_s = float(rel.bounds_s[1] - rel.bounds_s[0]) if len(rel.bounds_s) > 1 else inst.horizon_s
    return LagrangianBound(best, initial, taken, best_at, cell_s, rel.rate.shape[1])


def _evaluate(rel: _Relaxation, mu: np.ndarray) -> tuple[float, np.ndarray]:
    """``(L(mu), g)``: the dual value and a supergradient ``(use - avail) / nominal``, ``(G, C, K)``.

    Each served job's bracket is minimised over its groups and points; rows whose multipliers
    are all 0 add nothing and are skipped.
    """
    n_groups, n_res, n_cells = mu.shape
    lam = mu / rel.nominal  # USD per unit-second
    cum = np.zeros((n_groups, n_res, n_cells + 1))
    cum[:, :, 1:] = np.cumsum(lam * np.diff(rel.bounds_s), axis=2)
    priced = np.asarray(mu.any(axis=2), dtype=bool)  # (G, C) rows with a price
    n_served, n_points = len(rel.fixed_usd), len(rel.start_s)
    best = np.full(n_served, math.inf)
    best_group = np.zeros(n_served, dtype=np.int64)
    at_best = np.zeros(n_points)  # each point's value on its job's best group so far (without QoS, deadline)
    chunk = max(1, CHUNK_VALUES // max(1, n_points))
    columns = np.arange(n_points)
    for g0 in range(0, n_groups, chunk):
        groups = range(g0, min(g0 + chunk, n_groups))
        values = rel.rate[rel.job_of_point, g0 : groups.stop].T * rel.dur_s + rel.base_usd  # (chunk, P)
        for row, g in enumerate(groups):
            for c in np.flatnonzero(priced[g]):
                values[row] += rel.usage_p[c] * (_integral(cum[g, c], lam[g, c], rel.k_end, rel.off_end)
                                                 - _integral(cum[g, c], lam[g, c], rel.k_start, rel.off_start))
        if n_served == 0:
            break
        per_job = np.minimum.reduceat(values, rel.ptr[:-1], axis=1)  # (chunk, J')
        per_job = np.where(rel.candidate[:, g0 : groups.stop].T, per_job + rel.extra_usd[:, g0 : groups.stop].T,
                           math.inf)
        at = per_job.argmin(axis=0)
        lowest = per_job[at, np.arange(n_served)]
        better = lowest < best
        if better.any():
            best = np.where(better, lowest, best)
            best_group = np.where(better, at + g0, best_group)
            at_best = np.where(better[rel.job_of_point], values[at[rel.job_of_point], columns], at_best)
    runs = best < rel.fixed_usd
    value = rel.constant_usd + float(np.sum(np.minimum(best, rel.fixed_usd))) - float(np.sum(mu * rel.avail_ratio))
    use = _usage(rel, runs, best_group, at_best)
    return value, use / rel.nominal - rel.avail_ratio


def _integral(cum: np.ndarray, lam: np.ndarray, cell: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """``(P,)`` one row's multiplier density integrated from 0 to times given as (cell, offset in it)."""
    return cum[cell] + lam[cell] * offset


def _usage(rel: _Relaxation, runs: np.ndarray, group: np.ndarray, at_best: np.ndarray) -> np.ndarray:
    """``(G, C, K)`` resource-seconds used in each cell by the minimising runs of the jobs in ``runs``.

    A job's minimising run is on its best group, at the first of its points reaching the least
    value there (``at_best``: each point's value on its job's best group).
    """
    n_groups, n_res, n_cells = rel.nominal.shape
    size = n_groups * n_res * n_cells
    use = np.zeros(size)
    if not runs.any():
        return use.reshape(n_groups, n_res, n_cells)
    lowest = np.minimum.reduceat(at_best, rel.ptr[:-1])
    index = np.where(at_best <= lowest[rel.job_of_point], np.arange(len(at_best)), len(at_best))
    chosen = np.minimum.reduceat(index, rel.ptr[:-1])[runs]  # one point per running job
    job = rel.job_of_point[chosen]
    g = group[job]
    s, e = rel.start_s[chosen], rel.end_s[chosen]
    ks, ke = rel.k_start[chosen], rel.k_end[chosen]
    same = ks == ke
    head = np.where(same, e - s, rel.bounds_s[ks + 1] - s)  # the start cell's part
    tail = np.where(same, 0.0, e - rel.bounds_s[ke])  # the end cell's part
    middle = ke > ks + 1  # whole cells ks + 1 .. ke - 1, as a difference of per-second rates
    widths = np.diff(rel.bounds_s)
    for c in range(n_res):
        u = rel.usage[c, job]
        flat = (g * n_res + c) * n_cells
        use += np.bincount(flat + ks, u * head, size) + np.bincount(flat + ke, u * tail, size)
        rate = np.bincount(flat[middle] + ks[middle] + 1, u[middle], size + 1)
        rate -= np.bincount(flat[middle] + ke[middle], u[middle], size + 1)
        use += (np.cumsum(rate[:size]).reshape(-1, n_cells) * widths).reshape(-1)
    return use.reshape(n_groups, n_res, n_cells)


def _relaxation(inst: OracleInstance) -> _Relaxation:
    """The fates of ``inst``, their charges, usages and candidate starts (see the module docstring)."""
    w = inst.weights
    h = inst.horizon_s
    wait_per_s = w.wait_usd_per_job_hour / 3600.0
    constant, runs = job_fates(inst)
    served: list[int] = []
    fixed: list[float] = []
    latest: list[float] = []
    for fates in runs:
        failing = math.inf
        if fates.may_fail.any():
            failing = float(np.min(w.eviction_usd + fates.qos_usd[fates.may_fail])) + fates.late_usd
        served.append(fates.job)
        fixed.append(min(fates.unserved_usd, failing))
        latest.append(fates.latest_s)
    js = np.array(served, dtype=np.int64)
    s_max_arr = np.array(latest, dtype=np.float64)
    bounds = _cell_bounds(inst, js, s_max_arr)
    points = _starts(inst, js, s_max_arr, bounds)
    groups, rep = _groups(inst, js)
    return _assemble(inst, js, np.array(fixed), constant, points, bounds, groups, rep, wait_per_s, h)



def _cell_bounds(inst: OracleInstance, js: np.ndarray, s_max: np.ndarray) -> np.ndarray:
    """``(K + 1,)`` cell boundaries: ``tick_s / CELLS_PER_TICK`` wide, doubled from a tick until the points fit.

    The points (:data:`MAX_POINTS`) are estimated as two per cell boundary in each job's window.
    """
    spans = s_max - inst.arrival_s[js]
    widths = [inst.tick_s / CELLS_PER_TICK] + [inst.tick_s * 2.0**m for m in range(1 if CELLS_PER_TICK == 1 else 0, 20)]
    for width in widths:
        if width >= inst.horizon_s or float(np.sum(2.0 * spans / width + 5.0)) <= MAX_POINTS:
            break
    if width < inst.tick_s:
        return grid_bounds_for(inst.horizon_s, inst.tick_s, round(inst.tick_s / width))
    edges = np.arange(0.0, inst.horizon_s, width, dtype=np.float64)
    return np.concatenate((edges, [inst.horizon_s]))


def _starts(inst: OracleInstance, js: np.ndarray, s_max: np.ndarray, bounds: np.ndarray) -> list[np.ndarray]:
    """Per served job, its sorted candidate starts: ``a``, ``S``, ``H - d`` and the kinks inside ``(a, S)``."""
    h = inst.horizon_s
    out = []
    for q, j in enumerate(js):
        a, d, s = float(inst.arrival_s[j]), float(inst.duration_s[j]), float(s_max[q])
        inner = bounds[(bounds > a) & (bounds < s)]
        shifted = bounds[(bounds > a + d) & (bounds < s + d)] - d
        shifted = shifted[(shifted > a) & (shifted < s)]
        out.append(np.unique(np.concatenate(([a, min(max(h - d, a), s), s], inner, shifted))))
    return out


def _groups(inst: OracleInstance, js: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(group of each node (N,), a representative node of each group (G,))``.

    Nodes share a group when a run charges the same on each: equal capacity, price and
    spot-ness, and the same served jobs among their candidates (groups in order of first node).
    """
    n = inst.n_nodes
    member = np.zeros((n, len(js)), dtype=bool)
    for q, j in enumerate(js):
        member[list(inst.candidates[j]), q] = True
    signature = np.packbits(member, axis=1)
    keys: dict[tuple[object, ...], int] = {}
    group = np.empty(n, dtype=np.int64)
    rep: list[int] = []
    for i in range(n):
        key = (int(inst.node_cpu_m[i]), int(inst.node_mem_mib[i]), int(inst.node_gpus[i]),
               float(inst.node_price_per_s[i]), bool(inst.node_spot[i]), signature[i].tobytes())
        if key not in keys:
            keys[key] = len(rep)
            rep.append(i)
        group[i] = keys[key]
    return group, np.array(rep, dtype=np.int64)


def _assemble(
    inst: OracleInstance,
    js: np.ndarray,
    fixed: np.ndarray,
    constant: float,
    points: list[np.ndarray],
    bounds: np.ndarray,
    group: np.ndarray,
    rep: np.ndarray,
    wait_per_s: float,
    h: float,
) -> _Relaxation:
    """Pack the served jobs' points, charges and the groups' capacity rows into a :class:`_Relaxation`."""
    counts = np.array([len(p) for p in points], dtype=np.int64)
    ptr = np.concatenate(([0], np.cumsum(counts)))
    job_of_point = np.repeat(np.arange(len(js), dtype=np.int64), counts)
    start = np.concatenate(points) if points else np.zeros(0)
    end = np.minimum(start + inst.duration_s[js][job_of_point], h)
    n_cells = len(bounds) - 1

    def cell(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = np.clip(np.searchsorted(bounds, t, side="right") - 1, 0, n_cells - 1)
        return k, t - bounds[k]

    usage = np.stack([inst.job_cpu_m[js], inst.job_mem_mib[js], inst.job_gpus[js]]).astype(np.float64)
    k_start, off_start = cell(start)
    k_end, off_end = cell(end)
    if inst.active_nodes:
        rate = inst.node_price_per_s[None, rep] * (inst.job_cpu_m[js][:, None] / inst.node_cpu_m[None, rep])
    else:
        rate = inst.rate_per_s[np.ix_(js, rep)]
    candidate = np.zeros((len(js), len(rep)), dtype=bool)
    for q, j in enumerate(js):
        candidate[q, np.unique(group[list(inst.candidates[j])])] = True
    rate = np.where(candidate, rate, 0.0)
    w = inst.weights
    qos = np.where(inst.job_lc[js][:, None] & inst.node_spot[None, rep], w.qos_violation_usd, 0.0)
    late = (~inst.deadline_at_completion) & (inst.arrival_s[js] > inst.deadline_s[js])
    extra = qos + np.where(late, w.deadline_miss_usd, 0.0)[:, None]
    nominal, avail = _capacity(inst, group, len(rep), bounds)
    row = nominal > 0.0
    return _Relaxation(
        constant_usd=constant,
        fixed_usd=fixed,
        job_of_point=job_of_point,
        ptr=ptr,
        start_s=start,
        end_s=end,
        base_usd=wait_per_s * (start - inst.arrival_s[js][job_of_point]),
        k_start=k_start,
        off_start=off_start,
        k_end=k_end,
        off_end=off_end,
        usage=usage,
        usage_p=usage[:, job_of_point],
        dur_s=end - start,
        rate=rate,
        extra_usd=extra,
        candidate=candidate,
        bounds_s=bounds,
        nominal=np.where(row, nominal, 1.0),
        avail_ratio=np.where(row, avail / np.where(row, nominal, 1.0), 0.0),
        row=row,
    )


def _capacity(
    inst: OracleInstance, group: np.ndarray, n_groups: int, bounds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(nominal, avail)``, each ``(G, C, K)``: the group's capacity x cell width, and x the time each node is up."""
    widths = np.diff(bounds)
    up = np.tile(widths, (inst.n_nodes, 1))  # (N, K) seconds each node is up in each cell
    for i, windows in enumerate(inst.down_windows_s):
        for lo, hi in windows:
            up[i] -= np.clip(np.minimum(bounds[1:], hi) - np.maximum(bounds[:-1], lo), 0.0, None)
    caps = np.stack([inst.node_cpu_m, inst.node_mem_mib, inst.node_gpus], axis=1).astype(np.float64)  # (N, C)
    nominal = np.zeros((n_groups, _RESOURCES, len(widths)))
    avail = np.zeros_like(nominal)
    for c in range(_RESOURCES):
        np.add.at(nominal[:, c], group, caps[:, c, None] * widths[None, :])
        np.add.at(avail[:, c], group, caps[:, c, None] * np.maximum(up, 0.0))
    return nominal, avail
