"""The mixed-integer program over a set of options, built with scipy.sparse and solved by HiGHS.

Variables (all in ``[0, 1]``):

* ``P[o]`` binary, *step* variables: ``P[o] = sum of x[o']`` over the options ``o'`` of ``o``'s
  (job, node) group up to ``o``, where ``x[o] = P[o] - P[o - 1]`` says "the job takes option
  ``o``". A contiguous range ``a..b`` of a group is ``P[b] - P[a - 1]``: two non-zeros whatever
  its length (the options covering a time or a tick always form such a range, see
  :mod:`agents.oracle.options`). Rows: ``P[o - 1] <= P[o]`` in a group, and the last ``P`` of a
  job's groups sum to at most 1 (no option = never started: ``Options.unserved_usd``, the
  rejection penalty and what else :mod:`agents.oracle.terms` counts for an unserved job).
  First runs that an interruption evicts (``Options.evicted``) are not in that sum: per
  evict-and-rerun family, the last ``P`` of its first-run groups sum to that of its rerun
  groups (:mod:`agents.oracle.rerun`).
* ``v[j]`` continuous: latency-critical job ``j`` violated the SLA (weight
  ``sla_violation_usd``).
* ``z[i, k]`` binary: node ``i`` is over the SLA threshold at tick ``k``:
  ``load(i, k) - M z <= allowed(i, k)`` with ``M = max load - allowed``; then
  ``x-range(j, i, k) + z[i, k] - v[j] <= 1``. A job whose own cpu exceeds ``allowed`` gets
  ``x-range - v[j] <= 0`` directly.
* ``y[i, m]`` continuous (``active-nodes``): node ``i`` is active on elementary interval ``m``
  (between consecutive usage breakpoints), weight ``price * length``; ``y >= x-range`` of each
  job covering ``m``. Intervals covered by a single job's options are charged on its ``P``
  directly.
* ``u[i, m]`` continuous (``prorated``, under cpu contention): the least slowdown of the
  stretchable runs on node ``i`` over interval ``m``, above three tangents of a convex function
  of their load (:func:`_slowdown_rows`).

Capacity (cpu millicores, MiB, GPUs) is checked at each usage start of a node, dropping rows
whose covering set is contained in the next row's (only maximal sets matter) and rows that
cannot bind.

Memory: the matrix is collected as int32 row and column indices, assembled column-wise (the
layout HiGHS takes, so ``milp`` uses it without a copy) and the pieces are released before
HiGHS runs; :mod:`agents.oracle.size` estimates the peak.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array, csc_array

from agents.oracle.milp.limits import SolveLimits
from agents.oracle.milp.options import Options
from agents.oracle.model.instance import OracleInstance


@dataclass(frozen=True)
class ProgramResult:
    """Outcome of one solve.

    Attributes:
        chosen: ``(J,)`` option index per job (``-1`` = not started), or ``None`` when HiGHS
            returned no solution.
        first_runs: ``(J,)`` the evicted first run of each job the solution runs twice
            (``-1`` = none), ``None`` without a solution.
        objective_usd: Program value of that solution (``None`` without one).
        dual_bound_usd: A proven lower bound on the program's optimum.
        status: ``"optimal"``, ``"node-limit"`` (stopped by the work limit), ``"time-limit"``
            (stopped by the wall-time cap) or another HiGHS outcome (:meth:`SolveLimits.status_of`).
        solve_time_s: Wall time to build and solve.
        n_variables, n_constraints, n_nonzeros: Size of the program.
        search_nodes: Branch-and-bound nodes HiGHS explored (the work the node limit bounds;
            1 = solved at the root, 0 = no search).
    """

    chosen: np.ndarray | None
    objective_usd: float | None
    dual_bound_usd: float
    status: str
    solve_time_s: float
    n_variables: int
    n_constraints: int
    n_nonzeros: int
    search_nodes: int = 0
    first_runs: np.ndarray | None = None


class _Builder:
    """Accumulates variables, objective and sparse rows."""

    def __init__(self, n_base: int) -> None:
        self.n_vars = n_base
        self.c: list[np.ndarray] = []
        self.integral: list[np.ndarray] = []
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.ub: list[np.ndarray] = []
        self.n_rows = 0

    def new_vars(self, cost: np.ndarray, integral: bool) -> np.ndarray:
        first = self.n_vars
        self.n_vars += len(cost)
        self.c.append(np.asarray(cost, dtype=np.float64))
        self.integral.append(np.full(len(cost), int(integral)))
        return np.arange(first, self.n_vars)

    def new_rows(self, ub: np.ndarray) -> np.ndarray:
        first = self.n_rows
        self.n_rows += len(ub)
        self.ub.append(np.asarray(ub, dtype=np.float64))
        return np.arange(first, self.n_rows)

    def add(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray | float) -> None:
        self.rows.append(np.asarray(rows, dtype=np.int32))  # indices < 2**31: far above any memory budget
        self.cols.append(np.asarray(cols, dtype=np.int32))
        self.vals.append(np.broadcast_to(np.asarray(vals, dtype=np.float64), (len(rows),)))

    def matrix(self) -> csc_array:
        """The ``(n_rows, n_vars)`` constraint matrix; empties the pieces as it goes (less peak memory)."""
        parts = []
        for pieces in (self.vals, self.rows, self.cols):
            parts.append(np.concatenate(pieces))
            pieces.clear()
        vals, rows, cols = parts
        return coo_array((vals, (rows, cols)), shape=(self.n_rows, self.n_vars)).tocsc()

    def add_range(self, rows: np.ndarray, first_of_group: np.ndarray, a: np.ndarray, b: np.ndarray,
                  weight: np.ndarray | float) -> None:
        """Add ``weight * (P[first + b] - P[first + a - 1])`` (the options ``a..b``) to rows."""
        weight = np.broadcast_to(np.asarray(weight, dtype=np.float64), (len(rows),))
        self.add(rows, first_of_group + b, weight)
        has = a > 0
        self.add(rows[has], first_of_group[has] + a[has] - 1, -weight[has])


def _covering(
    options: Options, groups: np.ndarray, queries: np.ndarray, kind: str, among: np.ndarray | None = None
) -> tuple[np.ndarray, ...]:
    """For each group and query, the range ``a..b`` of its options covering the query.

    ``kind``: ``"time"`` (``use_start <= q < use_end``), ``"tick"`` (``tick_lo <= q <
    tick_hi``) or ``"span"`` (``use_start <= q[m]`` and ``use_end >= q[m + 1]``; queries are
    breakpoints and the result indexes intervals ``m``). With ``among`` (``(n,)`` bool) only
    those options count: a group's covering options then form one range per maximal run of
    ``among`` in the group, and a query may have several ranges in a group.

    Returns:
        ``(query_index, group, a, b)`` for the non-empty ranges (``a``, ``b`` from the group's
        first option).
    """
    out: list[list[np.ndarray]] = [[], [], [], []]
    offsets = options.group_offsets
    for g in groups:
        for lo, hi in _runs(among, offsets[g], offsets[g + 1]):
            if kind == "tick":
                a = np.searchsorted(options.tick_hi[lo:hi], queries, side="right")
                b = np.searchsorted(options.tick_lo[lo:hi], queries, side="right") - 1
            elif kind == "time":
                a = np.searchsorted(options.use_end_s[lo:hi], queries, side="right")
                b = np.searchsorted(options.use_start_s[lo:hi], queries, side="right") - 1
            else:
                a = np.searchsorted(options.use_end_s[lo:hi], queries[1:], side="left")
                b = np.searchsorted(options.use_start_s[lo:hi], queries[:-1], side="right") - 1
            q = np.flatnonzero(a <= b)
            shift = lo - offsets[g]
            for bucket, values in zip(out, (q, np.full(len(q), g), a[q] + shift, b[q] + shift), strict=True):
                bucket.append(values)
    if not out[0]:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(4))
    return tuple(np.concatenate(bucket).astype(np.int64) for bucket in out)


def _runs(among: np.ndarray | None, lo: int, hi: int) -> list[tuple[int, int]]:
    """The maximal runs ``[start, stop)`` of True in ``among[lo:hi]`` (all of ``[lo, hi)`` without ``among``)."""
    if among is None:
        return [(lo, hi)]
    edges = np.flatnonzero(np.diff(np.concatenate(([False], among[lo:hi], [False])).astype(np.int8)))
    return [(lo + int(a), lo + int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def _capacity_rows(bld: _Builder, inst: OracleInstance, options: Options, node: int, groups: np.ndarray) -> None:
    """Capacity of ``node`` at each maximal set of simultaneously usable options."""
    sel = options.node == node
    nonempty = sel & (options.use_start_s < options.use_end_s)
    taus = np.unique(options.use_start_s[nonempty])
    if len(taus) == 0:
        return
    ends = np.sort(options.use_end_s[nonempty])
    after = np.searchsorted(ends, taus, side="right")
    ends_between = np.diff(np.append(after, len(ends)))
    taus = taus[(ends_between > 0) | (np.arange(len(taus)) == len(taus) - 1)]
    q, g, a, b = _covering(options, groups, taus, "time")
    first = options.group_offsets[g]
    job = options.group_job[g]
    resources = (
        (inst.job_cpu_m, inst.node_cpu_m),
        (inst.job_mem_mib, inst.node_mem_mib),
        (inst.job_gpus, inst.node_gpus),
    )
    for demand, capacity in resources:
        need = demand[job].astype(np.float64)
        load = np.bincount(q, weights=need, minlength=len(taus))
        binding = np.flatnonzero(load > capacity[node])
        if len(binding) == 0:
            continue
        row_of = np.full(len(taus), -1)
        row_of[binding] = bld.new_rows(np.full(len(binding), float(capacity[node])))
        keep = (row_of[q] >= 0) & (need > 0)
        bld.add_range(row_of[q[keep]], first[keep], a[keep], b[keep], need[keep])


def _sla_rows(
    bld: _Builder, inst: OracleInstance, options: Options, node: int, groups: np.ndarray, v_col: np.ndarray
) -> None:
    """SLA: z per over-threshold-capable tick, and the rows charging ``v`` of exposed LC jobs."""
    allowed = inst.sla_allowed_cpu_m[:, node].astype(np.float64)
    q, g, a, b = _covering(options, groups, np.arange(len(allowed)), "tick")
    job = options.group_job[g]
    first = options.group_offsets[g]
    cpu = inst.job_cpu_m[job].astype(np.float64)
    lc = inst.job_lc[job]
    max_load = np.bincount(q, weights=cpu, minlength=len(allowed))
    over = max_load > allowed
    direct = lc & (cpu > allowed[q])
    if direct.any():
        rows = bld.new_rows(np.zeros(int(direct.sum())))
        bld.add_range(rows, first[direct], a[direct], b[direct], 1.0)
        bld.add(rows, v_col[job[direct]], -1.0)
    shared = lc & over[q] & ~direct
    ticks = np.unique(q[shared])
    if len(ticks) == 0:
        return
    z = bld.new_vars(np.zeros(len(ticks)), integral=True)
    z_of = np.full(len(allowed), -1)
    z_of[ticks] = z
    load_rows = bld.new_rows(allowed[ticks])
    row_of = np.full(len(allowed), -1)
    row_of[ticks] = load_rows
    in_row = row_of[q] >= 0
    bld.add_range(row_of[q[in_row]], first[in_row], a[in_row], b[in_row], cpu[in_row])
    bld.add(load_rows, z, -(max_load[ticks] - allowed[ticks]))
    rows = bld.new_rows(np.ones(int(shared.sum())))
    bld.add_range(rows, first[shared], a[shared], b[shared], 1.0)
    bld.add(rows, z_of[q[shared]], 1.0)
    bld.add(rows, v_col[job[shared]], -1.0)


def _active_rows(
    bld: _Builder, inst: OracleInstance, options: Options, node: int, groups: np.ndarray, c_base: np.ndarray
) -> None:
    """``active-nodes`` cost of ``node``: direct on ``P`` where one job covers, else via ``y``."""
    sel = (options.node == node) & (options.use_start_s < options.use_end_s)
    breaks = np.unique(np.concatenate((options.use_start_s[sel], options.use_end_s[sel])))
    if len(breaks) < 2:
        return
    m, g, a, b = _covering(options, groups, breaks, "span")
    first = options.group_offsets[g]
    price = float(inst.node_price_per_s[node]) * np.diff(breaks)
    count = np.bincount(m, minlength=len(price))
    single = count[m] == 1
    np.add.at(c_base, first[single] + b[single], price[m[single]])
    has = single & (a > 0)
    np.add.at(c_base, first[has] + a[has] - 1, -price[m[has]])
    shared_intervals = np.flatnonzero(count > 1)
    if len(shared_intervals) == 0:
        return
    y = bld.new_vars(price[shared_intervals], integral=False)
    y_of = np.full(len(price), -1)
    y_of[shared_intervals] = y
    multi = ~single
    rows = bld.new_rows(np.zeros(int(multi.sum())))
    bld.add_range(rows, first[multi], a[multi], b[multi], 1.0)
    bld.add(rows, y_of[m[multi]], -1.0)


SLOWDOWN_CELL_S = 60.0
"""Width of the intervals on which the slowdown charge is taken (coarser only lowers the charge)."""


def _slowdown_rows(bld: _Builder, inst: OracleInstance, options: Options, node: int, groups: np.ndarray) -> None:
    """The least compute cost that cpu contention adds on ``node`` to the stretchable runs.

    Under processor sharing a run's rate is ``C / max(C, b + R)`` (``C`` the node's
    millicores, ``b`` the background's, ``R`` ours). A stretchable run
    (:attr:`Options.stretchable`) completes, so it pays its USD per second ``w`` for its
    nominal duration plus its stretch, the integral of ``1 - rate`` over its whole run, at least
    over the time the option surely holds the node. There the cpu of the stretchable runs,
    ``R_s``, is at most the node's actual load, and their USD per second is at least ``k x R_s``
    (``k`` the least ``w / cpu`` among them: ``price / C`` on a cpu node), so on an interval of
    length ``L`` their stretch costs at least ``k x L x h(R_s)`` with ``h(R) = R x max(0, 1 - C
    / (b + R))``, increasing and convex in ``R``. A variable ``u >= 0`` per interval (``h /
    C``, charged ``k x C x L``) stands above three tangents of ``h`` (at ``C - b``, where
    contention begins, at the largest load the interval can have, and half-way), so the charge
    is a lower bound of the stretch in every episode whose runs the options describe, and nearly
    ``h`` at every load. The intervals are :data:`SLOWDOWN_CELL_S` wide (split at ticks, where
    ``b`` changes), and a run counts on those it covers whole. Intervals where the load cannot
    exceed ``C - b`` get nothing.
    """
    among = options.stretchable & (options.node == node) & (options.use_start_s < options.use_end_s)
    if not among.any():
        return
    grid = np.arange(0.0, inst.horizon_s, SLOWDOWN_CELL_S)
    breaks = np.unique(np.concatenate((grid, inst.tick_times_s, [inst.horizon_s])))
    breaks = breaks[(breaks >= options.use_start_s[among].min()) & (breaks <= options.use_end_s[among].max())]
    m, g, a, b = _covering(options, groups, breaks, "span", among)
    if len(m) == 0:
        return
    capacity = float(inst.node_cpu_m[node])
    cpu = inst.job_cpu_m[options.group_job[g]].astype(np.float64)
    runs = options.job[among & (inst.job_cpu_m[options.job] > 0)]
    usd_per_m = float((inst.rate_per_s[runs, node] / inst.job_cpu_m[runs]).min(initial=np.inf))
    if not np.isfinite(usd_per_m):
        return
    tick = np.maximum(np.searchsorted(inst.tick_times_s, breaks[:-1], side="right") - 1, 0)
    background = capacity / inst.slowest_rate[tick, node] - capacity  # (M,) millicores
    onset = capacity - background  # load at which contention begins
    top = np.minimum(np.bincount(m, weights=cpu, minlength=len(tick)), capacity)
    contended = np.flatnonzero((top > onset) & (background > 0))
    if len(contended) == 0:
        return
    u = bld.new_vars(usd_per_m * capacity * np.diff(breaks)[contended], integral=False)
    u_of = np.full(len(tick), -1)
    u_of[contended] = u
    keep = u_of[m] >= 0
    m, first, a, b, cpu = m[keep], options.group_offsets[g[keep]], a[keep], b[keep], cpu[keep]
    bg, r0, r1 = background[contended], onset[contended], top[contended]
    for at in (r0, (r0 + r1) / 2, r1):
        h = at * (1.0 - capacity / (bg + at))
        slope = 1.0 - capacity * bg / (bg + at) ** 2
        rows = bld.new_rows((slope * at - h) / capacity)  # slope x R / C - u <= (slope x at - h(at)) / C
        row_of = np.full(len(tick), -1)
        row_of[contended] = rows
        bld.add_range(row_of[m], first, a, b, (slope / capacity)[np.searchsorted(contended, m)] * cpu)
        bld.add(rows, u, -1.0)


def _step_objective(options: Options) -> np.ndarray:
    """Objective on ``P`` of the option constants minus the cost of leaving their job unserved."""
    w = options.coef_usd - np.where(options.evicted, 0.0, options.unserved_usd[options.job])
    c = w.copy()
    last = options.group_offsets[1:] - 1
    not_last = np.ones(options.n, dtype=bool)
    not_last[last] = False
    c[not_last] -= w[np.flatnonzero(not_last) + 1]
    return c


def _structure_rows(bld: _Builder, options: Options) -> None:
    """Monotone steps within groups; at most one option per job."""
    offsets = options.group_offsets
    not_last = np.ones(options.n, dtype=bool)
    not_last[offsets[1:] - 1] = False
    o = np.flatnonzero(not_last)
    rows = bld.new_rows(np.zeros(len(o)))
    bld.add(rows, o, 1.0)
    bld.add(rows, o + 1, -1.0)
    serving = ~options.evicted[offsets[:-1]]  # (G,) groups whose option serves the job
    jobs, job_row = np.unique(options.group_job[serving], return_inverse=True)
    rows = bld.new_rows(np.ones(len(jobs)))
    bld.add(rows[job_row], offsets[1:][serving] - 1, 1.0)
    family = options.family[offsets[:-1]]  # (G,)
    in_family = np.flatnonzero(family >= 0)
    if len(in_family) == 0:
        return
    families, family_row = np.unique(family[in_family], return_inverse=True)
    sign = np.where(options.evicted[offsets[in_family]], 1.0, -1.0)  # first runs - reruns
    rows = bld.new_rows(np.zeros(2 * len(families)))  # == 0, as two rows <= 0
    bld.add(rows[family_row], offsets[in_family + 1] - 1, sign)
    bld.add(rows[len(families) + family_row], offsets[in_family + 1] - 1, -sign)


def solve_program(
    inst: OracleInstance, options: Options, limits: SolveLimits, mip_rel_gap: float, verbose: bool = False
) -> ProgramResult:
    """Build the program over ``options`` and solve it with HiGHS within ``limits``.

    Args:
        inst: The episode.
        options: The options to choose from (at most one per job).
        limits: The solve's node limit (and wall-time cap, if any).
        mip_rel_gap: HiGHS relative gap at which it stops.
        verbose: Print HiGHS's log.
    """
    started = time.perf_counter()
    constant = float(options.unserved_usd.sum())
    if options.n == 0:
        nothing = np.full(inst.n_jobs, -1, dtype=np.int64)
        return ProgramResult(nothing, constant, constant, "optimal", time.perf_counter() - started, 0, 0, 0, 0,
                             nothing.copy())
    bld = _Builder(options.n)
    c_base = _step_objective(options)
    lc_jobs = np.unique(options.job[inst.job_lc[options.job]])
    v_col = np.full(inst.n_jobs, -1)
    v_col[lc_jobs] = bld.new_vars(np.full(len(lc_jobs), inst.weights.sla_violation_usd), integral=False)
    _structure_rows(bld, options)
    group_node = options.group_node
    for i in range(inst.n_nodes):
        groups = np.flatnonzero(group_node == i)
        if len(groups) == 0:
            continue
        _capacity_rows(bld, inst, options, i, groups)
        _sla_rows(bld, inst, options, i, groups, v_col)
        if inst.active_nodes:
            _active_rows(bld, inst, options, i, groups, c_base)
        else:
            _slowdown_rows(bld, inst, options, i, groups)
    c = np.concatenate([c_base, *bld.c])
    integrality = np.concatenate([np.ones(options.n, dtype=int), *bld.integral])
    matrix = bld.matrix()
    ub = np.concatenate(bld.ub)
    n_vars, n_rows = bld.n_vars, bld.n_rows
    del bld
    res = milp(
        c,
        integrality=integrality,
        bounds=Bounds(0.0, 1.0),
        constraints=LinearConstraint(matrix, -np.inf, ub),
        options={**limits.highs_options(), "mip_rel_gap": float(mip_rel_gap), "disp": verbose},
    )
    chosen: np.ndarray | None = None
    first_runs: np.ndarray | None = None
    objective: float | None = None
    if res.x is not None:
        chosen, first_runs = _chosen(inst, options, res.x[: options.n])
        objective = constant + float(res.fun)
    dual = getattr(res, "mip_dual_bound", None)
    if dual is None or not np.isfinite(dual):
        dual = _trivial_bound(inst, options) - constant
    return ProgramResult(
        chosen,
        objective,
        constant + float(dual),
        limits.status_of(res.status, str(res.message)),
        time.perf_counter() - started,
        n_vars,
        n_rows,
        matrix.nnz,
        int(getattr(res, "mip_node_count", None) or 0),
        first_runs,
    )


def _chosen(inst: OracleInstance, options: Options, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(J,)`` option per job and ``(J,)`` evicted first run per job (``-1``: none) from the step variables."""
    p = np.rint(steps)
    prev = np.concatenate(([0.0], p[:-1]))
    prev[options.group_offsets[:-1]] = 0.0
    taken = np.flatnonzero(p - prev > 0.5)
    chosen = np.full(inst.n_jobs, -1, dtype=np.int64)
    first_runs = np.full(inst.n_jobs, -1, dtype=np.int64)
    runs, firsts = taken[~options.evicted[taken]], taken[options.evicted[taken]]
    chosen[options.job[runs]] = runs
    first_runs[options.job[firsts]] = firsts
    return chosen, first_runs


def _trivial_bound(inst: OracleInstance, options: Options) -> float:
    """A bound needing no solve: each job at its cheapest option constant (SLA/activity >= 0)."""
    best = np.zeros(inst.n_jobs)
    serving = ~options.evicted  # a first run adds to its rerun's cost: dropping it keeps a bound
    np.minimum.at(best, options.job[serving], (options.coef_usd - options.unserved_usd[options.job])[serving])
    return float(options.unserved_usd.sum()) + float(best.sum())
