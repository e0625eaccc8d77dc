"""A tighter bound at scale: node capacity relaxed into the objective with Lagrange multipliers.

:func:`agents.oracle.bounds.capacity_free.capacity_free_bound` lets every job take its cheapest fate on its
own, so where capacity binds (many jobs want the few cheap nodes at the same time) it is weak.
This module puts node capacity back, aggregated over time cells, and moves it into the
objective with multipliers (Lagrangian relaxation); :func:`lagrangian_bound` maximises the
resulting dual function by projected subgradient ascent and reports the best value seen.

**Why every value reported is <= the objective of every policy of the twin.**

1. **The fates and their charges** are exactly those of
   :func:`~agents.oracle.bounds.capacity_free.capacity_free_bound`, whose docstring argues each one: a job is
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
more possible starts than the work budget,
:data:`~agents.oracle.bounds.lagrangian_problem.MAX_POINTS`); memory is ``O(groups x cells)``
for them and ``O(points)`` for the starts, each point a (job, start) pair
(:mod:`agents.oracle.bounds.lagrangian_problem` builds both). A group holds every
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
    >>> from agents.oracle.model.instance import OracleInstance
    >>> from agents.oracle.bounds.capacity_free import capacity_free_bound
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

from agents.oracle.bounds.lagrangian_problem import RelaxedProblem, relaxed_problem
from agents.oracle.model.instance import OracleInstance

DEFAULT_LAGRANGIAN_ITERATIONS = 500
"""Subgradient steps of the Lagrangian bound at scale (:func:`lagrangian_bound`): its work
limit. About 5-15 s at 500 nodes and 5,000 jobs where capacity binds; none where it does not."""

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


def check_iterations(iterations: int) -> int:
    """``iterations`` if it is an integer >= 0 (the Lagrangian bound's steps), else raise ``ValueError``.

    >>> check_iterations(0)
    0
    """
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 0:
        raise ValueError(f"lagrangian_iterations must be an integer >= 0, got {iterations!r}")
    return iterations


def lagrangian_bound(inst: OracleInstance, target_usd: float, iterations: int) -> LagrangianBound:
    """Maximise the Lagrangian dual of node capacity from 0 (see the module docstring).

    Args:
        inst: The episode.
        target_usd: An objective some policy reaches on this episode (e.g. the hindsight greedy
            plan's): no level is aimed above it. Any value keeps the bound valid.
        iterations: Subgradient steps (>= 0; 0 returns ``L(0)``).
    """
    rel = relaxed_problem(inst)
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


def _evaluate(rel: RelaxedProblem, mu: np.ndarray) -> tuple[float, np.ndarray]:
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


def _usage(rel: RelaxedProblem, runs: np.ndarray, group: np.ndarray, at_best: np.ndarray) -> np.ndarray:
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
