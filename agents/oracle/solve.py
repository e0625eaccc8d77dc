"""``solve_oracle``: the achievable plan and the lower bound of one episode, with full hindsight."""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

from agents.oracle.bounds.capacity_free import capacity_free_bound, scale_bound
from agents.oracle.bounds.exact import bound_options
from agents.oracle.bounds.lagrangian import DEFAULT_LAGRANGIAN_ITERATIONS, check_iterations
from agents.oracle.milp.limits import (
    DEFAULT_NODE_LIMIT,
    NODE_LIMIT,
    OPTIMAL,
    TIME_LIMIT,
    SolveLimits,
)
from agents.oracle.milp.program import ProgramResult, solve_program
from agents.oracle.model.instance import OracleInstance
from agents.oracle.plans.arrival import DETERMINISTIC_TIME_LIMIT as ARRIVAL_WORK_LIMIT
from agents.oracle.plans.candidates import Candidate, cheapest, plan_batches
from agents.oracle.sizing.budget import budget_bytes, check_memory
from agents.oracle.sizing.size import OracleSizeEstimate, estimate_oracle_memory
from digital_twin import HindsightView
from digital_twin.objective import ObjectiveBreakdown

REPLAYED_ROUNDS = 2
"""Under contention, plan programs whose runs last as long as the previous plan's replay measured (the default)."""
PROVEN_RTOL = 1e-6
"""Plan and bound within this relative distance count as a proven optimum."""
DECOMPOSE, REFUSE = "decompose", "refuse"
"""What :func:`solve_oracle` does with an episode whose programs exceed the memory budget."""


@dataclass(frozen=True)
class OracleResult:
    """What the oracle found for one episode (all money in USD, times in seconds).

    Attributes:
        plan: ``job_id -> (node_index, start_s)`` for every job the plan starts, ``None`` for
            the others (rejected by TTL or at the horizon, unplaceable, or never submitted).
        plan_objective_usd: The plan's objective: what the twin charges when it replays the
            plan (:func:`agents.oracle.plans.replay.replay_plan`). Without cpu contention this is the
            program value of the chosen solution, but for energy and carbon (the programs charge
            those from below, the replay exactly); under contention runs last longer than the
            nominal plan's durations (and less than the worst-case plan's reservations), and the
            replay says what that costs.
        lower_bound_usd: No policy of the twin can do better on this episode.
        status: ``"proven-optimal"`` (plan meets the bound), ``"gap"`` (both programs solved
            to optimality, but the relaxation is below the plan), ``"work-limit"`` (a solve
            stopped at its node limit), ``"time-limit"`` (a solve stopped at the wall-time cap)
            or ``"solver-failed"`` (HiGHS failed otherwise: the greedy plan and a trivial bound
            stand in); ``"decomposed"`` for an episode too large for the programs, solved by
            a capacity-free bound tightened by a Lagrangian relaxation of node capacity
            (:mod:`agents.oracle.bounds.capacity_free`) and the arrival plan
            (:mod:`agents.oracle.plans.arrival`, when its model is small enough) or a
            hindsight greedy plan (:mod:`agents.oracle.plans.hindsight_greedy`). Plan
            and bound are achievable and valid in every case, and the same on every machine
            except after a ``"time-limit"`` (:mod:`agents.oracle.milp.limits`).
        solve_time_s: Wall time of the whole call (both programs): reported, never a limit
            unless a wall-time cap was asked for.
        gap: ``(plan - bound) / |plan|`` (0 when both are 0).
        proven_optimal: ``plan_objective_usd`` and ``lower_bound_usd`` agree within
            :data:`PROVEN_RTOL` relative.
        plan_breakdown: The plan's objective by term.
        plan_program: HiGHS outcome of the plan program the chosen plan comes from (``None``
            for the arrival plan and when decomposed).
        bound_program: HiGHS outcome of the exact relaxation (``None`` when not computed: no
            bound asked, decomposed, or the capacity-free bound already proved the plan).
        plan_source: ``"arrival"`` (:mod:`agents.oracle.plans.arrival`), ``"milp"`` or
            ``"greedy"`` (the fallback, when better or HiGHS had none), with
            ``" (worst-case runs)"`` when it comes from the worst-case plan program and
            ``" (replayed runs, round k)"`` from one whose runs last as a replay measured;
            ``"arrival"`` or ``"hindsight greedy"`` when decomposed.
        plan_repairs: How the plan is followed when a planned node is busy at the planned start
            (only under contention): ``True`` = start the job on the cheapest node that can take
            it, ``False`` = wait for the planned node (:func:`agents.oracle.plans.replay.planned_node`).
        plan_first_runs: ``job_id -> (node_index, start_s, evicted_at_s)`` for each preemptible
            job the plan runs twice: a first run that the spot interruption at
            ``evicted_at_s`` evicts, re-queueing the job with a fresh TTL, before its run in
            ``plan`` (:mod:`agents.oracle.plans.rerun`). Empty for most plans.
        memory_estimate: The size estimate checked against the memory budget before solving
            (above the budget when decomposed).
    """

    plan: dict[str, tuple[int, float] | None]
    plan_objective_usd: float
    lower_bound_usd: float
    status: str
    solve_time_s: float
    gap: float
    proven_optimal: bool
    plan_breakdown: ObjectiveBreakdown
    plan_program: ProgramResult | None
    bound_program: ProgramResult | None
    plan_source: str
    plan_repairs: bool
    memory_estimate: OracleSizeEstimate
    plan_first_runs: dict[str, tuple[int, float, float]] = dataclasses.field(default_factory=dict)


def solve_oracle(
    hindsight: HindsightView,
    time_limit_s: float | None = None,
    bound_grid_divisor: int = 5,
    *,
    node_limit: int | None = DEFAULT_NODE_LIMIT,
    mip_rel_gap: float = 1e-7,
    compute_bound: bool = True,
    max_points_per_cell: int = 3,
    memory_budget_bytes: float | None = None,
    too_large: str = DECOMPOSE,
    lagrangian_iterations: int = DEFAULT_LAGRANGIAN_ITERATIONS,
    replayed_rounds: int = REPLAYED_ROUNDS, arrival_work: float = ARRIVAL_WORK_LIMIT,
) -> OracleResult:  # fmt: skip
    """The cheapest plan found and the best bound of one episode, stopping at the first proven plan.

    Bounds and plans come in order of cost (:mod:`agents.oracle.plans.candidates`): the
    capacity-free bound, the arrival plan, the plan programs; the exact relaxation is solved
    once the capacity-free bound has failed to prove the best plan so far.

    The programs' peak memory is estimated first (:func:`agents.oracle.sizing.size.estimate_oracle_memory`);
    an episode above the memory budget is never built: it is decomposed (a bound and a plan
    in ``O(jobs x nodes)`` memory, :func:`agents.oracle.bounds.capacity_free.scale_bound` and
    :mod:`agents.oracle.plans.hindsight_greedy`) or refused (``too_large``).

    Args:
        hindsight: The episode's future (``hindsight_of(env)`` after ``reset``).
        time_limit_s: Wall-time cap of *each* HiGHS solve, seconds (``None``: none, the default;
            a capped solve may give other numbers on another machine).
        bound_grid_divisor: The relaxation's grid is ``tick_s / bound_grid_divisor`` wide.
        mip_rel_gap: HiGHS's relative gap for stopping (below :data:`PROVEN_RTOL`).
        compute_bound: False skips the relaxation (the bound is then ``-inf``).
        max_points_per_cell: Exact possible decision times kept per grid cell before the
            relaxation treats the cell as a continuum.
        node_limit: Branch-and-bound nodes of each HiGHS solve (``None``: no limit): the
            deterministic limit.
        memory_budget_bytes: Refuse above this estimated peak; ``None`` = the
            ``ACO_ENV_ORACLE_MEMORY_GB`` environment variable if set, else 4 GB
            (:mod:`agents.oracle.sizing.budget`); ``math.inf`` = no limit.
        too_large: ``"decompose"`` (the default) or ``"refuse"`` an episode above the budget.
        lagrangian_iterations: Subgradient steps of the Lagrangian bound of a decomposed episode
            (:mod:`agents.oracle.bounds.lagrangian`; 0 = the capacity-free bound alone): its work limit.
        replayed_rounds: Under cpu contention, plan programs whose runs last as long as the
            previous plan's replay measured (0 = none: faster, and the plan may be dearer).
        arrival_work: CP-SAT's work limit of the arrival plan (:mod:`agents.oracle.plans.arrival`).

    Raises:
        OracleTooLargeError: The estimated peak memory is above a budget ``too_large`` refuses.
        ValueError: A bad limit or budget.
    """
    started = time.perf_counter()
    limits = SolveLimits(node_limit, time_limit_s)
    budget = _checked_budget(memory_budget_bytes, too_large, lagrangian_iterations, replayed_rounds)
    estimate = estimate_oracle_memory(hindsight, math.inf if time_limit_s is None else time_limit_s,
                                      bound_grid_divisor, max_points_per_cell, compute_bound=compute_bound)
    decompose = too_large == DECOMPOSE and estimate.peak_bytes > budget
    if not decompose:
        check_memory(estimate, budget)
    inst = OracleInstance.from_hindsight(hindsight)
    lower = capacity_free_bound(inst) if compute_bound else -math.inf  # no solve: O(jobs x nodes)
    bound_program = None
    best: Candidate | None = None
    for batch in plan_batches(inst, hindsight, limits, mip_rel_gap, replayed_rounds, programs=not decompose,
                              arrival_work=arrival_work):  # fmt: skip
        best = cheapest(best, batch)
        if _gap(best.total_usd, lower)[1]:
            break  # proven: no later plan can be cheaper, and no other bound is needed
        if compute_bound and not decompose and bound_program is None:  # the exact relaxation, once
            relaxation = bound_options(inst, bound_grid_divisor, max_points_per_cell)
            bound_program = solve_program(inst, relaxation, limits, mip_rel_gap, relaxation=True)
            lower = max(lower, bound_program.dual_bound_usd)
            if _gap(best.total_usd, lower)[1]:
                break
    assert best is not None  # the first batch holds a plan
    if compute_bound and decompose and not _gap(best.total_usd, lower)[1]:
        lower = max(lower, scale_bound(inst, best.total_usd, lagrangian_iterations))
    plan_value = best.total_usd
    gap, proven = _gap(plan_value, lower)
    if proven:
        status = "proven-optimal"
    elif decompose:
        status = "decomposed"
    else:
        status = _unproven_status(best.solve_status, bound_program)
    return OracleResult(
        plan=best.plan,
        plan_objective_usd=plan_value,
        lower_bound_usd=lower,
        status=status,
        solve_time_s=time.perf_counter() - started,
        gap=gap,
        proven_optimal=proven,
        plan_breakdown=best.breakdown,
        plan_program=best.program,
        bound_program=bound_program,
        plan_source=best.source,
        plan_repairs=best.repair,
        memory_estimate=estimate,
        plan_first_runs=best.first_runs,
    )


def _checked_budget(
    memory_budget_bytes: float | None, too_large: str, lagrangian_iterations: int, replayed_rounds: int
) -> float:
    """The memory budget in bytes, once :func:`solve_oracle`'s other options are checked.

    Raises:
        ValueError: A budget that is not > 0, an unknown ``too_large``, or a bad iteration or round count.
    """
    if memory_budget_bytes is not None and not memory_budget_bytes > 0:
        raise ValueError(f"memory_budget_bytes must be > 0 (inf = no limit), got {memory_budget_bytes!r}")
    if too_large not in (DECOMPOSE, REFUSE):
        raise ValueError(f"too_large must be {DECOMPOSE!r} or {REFUSE!r}, got {too_large!r}")
    check_iterations(lagrangian_iterations)
    if not (isinstance(replayed_rounds, int) and replayed_rounds >= 0):
        raise ValueError(f"replayed_rounds must be an integer >= 0, got {replayed_rounds!r}")
    return budget_bytes() if memory_budget_bytes is None else float(memory_budget_bytes)


def _gap(plan_usd: float, bound_usd: float) -> tuple[float, bool]:
    """``(gap, proven)`` of a plan and a bound.

    ``gap`` is the plan's relative distance to the bound (0 when proven); ``proven``, whether
    the two agree within :data:`PROVEN_RTOL` (or 1e-12 USD).
    """
    scale = max(abs(plan_usd), 1e-12)
    proven = plan_usd - bound_usd <= PROVEN_RTOL * scale or plan_usd - bound_usd <= 1e-12
    if proven:
        return 0.0, True
    return (max(plan_usd - bound_usd, 0.0) / scale if math.isfinite(bound_usd) else math.inf), False


def _unproven_status(plan_status: str, bound: ProgramResult | None) -> str:
    """``OracleResult.status`` of an episode whose plan does not meet its bound.

    ``"time-limit"`` if a solve hit the wall-time cap, else ``"work-limit"`` if one hit its work
    limit, else ``"solver-failed"`` if a solver failed otherwise (the greedy plan and the trivial
    bound stand in), else ``"gap"`` (both solved: the relaxation is below the plan).
    """
    statuses = {plan_status} if bound is None else {plan_status, bound.status}
    if TIME_LIMIT in statuses:
        return "time-limit"
    if NODE_LIMIT in statuses:
        return "work-limit"
    return "gap" if statuses == {OPTIMAL} else "solver-failed"
