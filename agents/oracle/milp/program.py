"""The mixed-integer program over a set of options, built with scipy.sparse and solved by HiGHS.

Variables (all in ``[0, 1]``):

* ``P[o]`` binary, *step* variables: ``P[o] = sum of x[o']`` over the options ``o'`` of ``o``'s
  (job, node) group up to ``o``, where ``x[o] = P[o] - P[o - 1]`` says "the job takes option
  ``o``". A contiguous range ``a..b`` of a group is ``P[b] - P[a - 1]``: two non-zeros whatever
  its length (the options covering a time or a tick always form such a range, see
  :mod:`agents.oracle.milp.options`). Rows: ``P[o - 1] <= P[o]`` in a group, and the last ``P`` of a
  job's groups sum to at most 1 (no option = never started: ``Options.unserved_usd``, the
  rejection penalty and what else :mod:`agents.oracle.model.terms` counts for an unserved job).
  First runs that an interruption evicts (``Options.evicted``) are not in that sum: per
  evict-and-rerun family, the last ``P`` of its first-run groups sum to that of its rerun
  groups (:mod:`agents.oracle.plans.rerun`).
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
  of their load (:func:`agents.oracle.milp.rows.slowdown_rows`).

Capacity (cpu millicores, MiB, GPUs) is checked at each usage start of a node, dropping rows
whose covering set is contained in the next row's (only maximal sets matter) and rows that
cannot bind.

Memory: the matrix is collected as int32 row and column indices, assembled column-wise (the
layout HiGHS takes, so ``milp`` uses it without a copy) and the pieces are released before
HiGHS runs; :mod:`agents.oracle.sizing.size` estimates the peak.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from agents.oracle.milp.builder import Builder
from agents.oracle.milp.limits import SolveLimits
from agents.oracle.milp.options import Options
from agents.oracle.milp.rows import active_rows, capacity_rows, sla_rows, slowdown_rows, step_objective, structure_rows
from agents.oracle.milp.workflow_rows import workflow_rows
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


def solve_program(
    inst: OracleInstance, options: Options, limits: SolveLimits, mip_rel_gap: float, verbose: bool = False, *,
    relaxation: bool = False,
) -> ProgramResult:
    """Build the program over ``options`` and solve it with HiGHS within ``limits``.

    Args:
        inst: The episode.
        options: The options to choose from (at most one per job).
        limits: The solve's node limit (and wall-time cap, if any).
        mip_rel_gap: HiGHS relative gap at which it stops.
        verbose: Print HiGHS's log.
        relaxation: The options are the lower bound's (:mod:`agents.oracle.bounds.exact`), not a
            plan's: no row that only a plan must keep (:mod:`agents.oracle.milp.workflow_rows`).
    """
    started = time.perf_counter()
    constant = float(options.unserved_usd.sum())
    if options.n == 0:
        nothing = np.full(inst.n_jobs, -1, dtype=np.int64)
        return ProgramResult(nothing, constant, constant, "optimal", time.perf_counter() - started, 0, 0, 0, 0,
                             nothing.copy())
    bld = Builder(options.n)
    c_base = step_objective(options)
    lc_jobs = np.unique(options.job[inst.job_lc[options.job]])
    v_col = np.full(inst.n_jobs, -1)
    v_col[lc_jobs] = bld.new_vars(np.full(len(lc_jobs), inst.charges.sla(1.0)), integral=False)
    structure_rows(bld, options)
    group_node = options.group_node
    for i in range(inst.n_nodes):
        groups = np.flatnonzero(group_node == i)
        if len(groups) == 0:
            continue
        capacity_rows(bld, inst, options, i, groups)
        sla_rows(bld, inst, options, i, groups, v_col)
        if inst.active_nodes:
            active_rows(bld, inst, options, i, groups, c_base)
        else:
            slowdown_rows(bld, inst, options, i, groups)
    constant += workflow_rows(bld, inst, options, plan_ttl=not relaxation)
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
