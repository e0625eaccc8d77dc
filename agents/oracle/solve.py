"""``solve_oracle``: the achievable plan and the lower bound of one episode, with full hindsight."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from agents.oracle.bounds.capacity_free import scale_bound
from agents.oracle.bounds.exact import bound_options
from agents.oracle.bounds.lagrangian import DEFAULT_LAGRANGIAN_ITERATIONS, check_iterations
from agents.oracle.milp.limits import (
    DEFAULT_NODE_LIMIT,
    NODE_LIMIT,
    OPTIMAL,
    TIME_LIMIT,
    SolveLimits,
)
from agents.oracle.milp.options import Options
from agents.oracle.milp.program import ProgramResult, solve_program
from agents.oracle.model.instance import OracleInstance
from agents.oracle.model.stretch import WORST_CASE, RunLengths, replayed_lengths
from agents.oracle.plans.evaluate import advance_starts, greedy_plan
from agents.oracle.plans.hindsight_greedy import hindsight_greedy_plan
from agents.oracle.plans.options import plan_options
from agents.oracle.plans.replay import replay_plan, replayed_runs
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
            program value of the chosen solution; under contention runs last longer than the
            nominal plan's durations (and less than the worst-case plan's reservations), and the
            replay says what that costs.
        lower_bound_usd: No policy of the twin can do better on this episode.
        status: ``"proven-optimal"`` (plan meets the bound), ``"gap"`` (both programs solved
            to optimality, but the relaxation is below the plan), ``"work-limit"`` (a solve
            stopped at its node limit), ``"time-limit"`` (a solve stopped at the wall-time cap)
            or ``"solver-failed"`` (HiGHS failed otherwise: the greedy plan and a trivial bound
            stand in); ``"decomposed"`` for an episode too large for the programs, solved by
            a capacity-free bound tightened by a Lagrangian relaxation of node capacity
            (:mod:`agents.oracle.bounds.capacity_free`) and a hindsight greedy plan
            (:mod:`agents.oracle.plans.hindsight_greedy`). Plan
            and bound are achievable and valid in every case, and the same on every machine
            except after a ``"time-limit"`` (:mod:`agents.oracle.milp.limits`).
        solve_time_s: Wall time of the whole call (both programs): reported, never a limit
            unless a wall-time cap was asked for.
        gap: ``(plan - bound) / |plan|`` (0 when both are 0).
        proven_optimal: ``plan_objective_usd`` and ``lower_bound_usd`` agree within
            :data:`PROVEN_RTOL` relative.
        plan_breakdown: The plan's objective by term.
        plan_program: HiGHS outcome of the plan program the chosen plan comes from (``None``
            when decomposed).
        bound_program: HiGHS outcome of the relaxation (``None`` when not computed or decomposed).
        plan_source: ``"milp"`` or ``"greedy"`` (the fallback, when better or HiGHS had none),
            with ``" (worst-case runs)"`` when it comes from the worst-case plan program and
            ``" (replayed runs, round k)"`` from one whose runs last as a replay measured;
            ``"hindsight greedy"`` when decomposed.
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
    replayed_rounds: int = REPLAYED_ROUNDS,
) -> OracleResult:
    """Solve the plan program and the relaxation of one episode.

    The programs' peak memory is estimated first (:func:`agents.oracle.sizing.size.estimate_oracle_memory`);
    an episode above the memory budget is never built: it is decomposed (a bound and a plan
    in ``O(jobs x nodes)`` memory, :func:`agents.oracle.bounds.capacity_free.scale_bound` and
    :mod:`agents.oracle.plans.hindsight_greedy`) or refused (``too_large``).

    Args:
        hindsight: The episode's future (``env.unwrapped.hindsight()`` after ``reset``).
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

    Raises:
        OracleTooLargeError: The estimated peak memory is above the budget and ``too_large``
            is ``"refuse"`` (nothing was built).
        ValueError: A bad limit or budget.
    """
    started = time.perf_counter()
    limits = SolveLimits(node_limit, time_limit_s)
    if memory_budget_bytes is not None and not memory_budget_bytes > 0:
        raise ValueError(f"memory_budget_bytes must be > 0 (inf = no limit), got {memory_budget_bytes!r}")
    budget = budget_bytes() if memory_budget_bytes is None else float(memory_budget_bytes)
    if too_large not in (DECOMPOSE, REFUSE):
        raise ValueError(f"too_large must be {DECOMPOSE!r} or {REFUSE!r}, got {too_large!r}")
    check_iterations(lagrangian_iterations)
    if not (isinstance(replayed_rounds, int) and replayed_rounds >= 0):
        raise ValueError(f"replayed_rounds must be an integer >= 0, got {replayed_rounds!r}")
    estimate = estimate_oracle_memory(hindsight, math.inf if time_limit_s is None else time_limit_s,
                                      bound_grid_divisor, max_points_per_cell, compute_bound=compute_bound)
    decompose = too_large == DECOMPOSE and estimate.peak_bytes > budget
    if not decompose:
        check_memory(estimate, budget)
    inst = OracleInstance.from_hindsight(hindsight)
    bound_program = None
    lower = -math.inf
    if decompose:  # the programs would not fit: no program is built
        best = _decomposed_plan(inst, hindsight)
        if compute_bound:  # the plan's objective is the ascent's target
            lower = scale_bound(inst, best.breakdown.total_usd, lagrangian_iterations)
    else:
        best = _cheapest(_plan_candidates(inst, hindsight, limits, mip_rel_gap, replayed_rounds))
        if compute_bound:
            bound_program = solve_program(inst, bound_options(inst, bound_grid_divisor, max_points_per_cell),
                                          limits, mip_rel_gap)
            lower = bound_program.dual_bound_usd
    plan_value = best.breakdown.total_usd
    gap, proven = _gap(plan_value, lower)
    if proven:
        status = "proven-optimal"
    elif best.program is None:
        status = "decomposed"
    else:
        status = _unproven_status(best.program, bound_program)
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


def _decomposed_plan(inst: OracleInstance, hindsight: HindsightView) -> _Candidate:
    """The plan at scale (:mod:`agents.oracle.plans.hindsight_greedy`), replayed waiting and repairing; the cheaper."""
    plan = hindsight_greedy_plan(hindsight, inst)
    replays = [(replay_plan(hindsight, plan, repair), repair) for repair in (False, True)]
    breakdown, repair = min(replays, key=lambda replay: replay[0].total_usd)
    return _Candidate("hindsight greedy", dict(plan), repair, breakdown, None)


def _cheapest(candidates: Iterator[_Candidate]) -> _Candidate:
    """The cheapest replay; a later candidate only when strictly cheaper (not by float noise)."""
    best: _Candidate | None = None
    for candidate in candidates:
        if best is None or candidate.breakdown.total_usd < best.breakdown.total_usd - 1e-9 * max(
            1.0, abs(best.breakdown.total_usd)
        ):
            best = candidate
    assert best is not None  # the greedy plan always exists
    return best


@dataclass(frozen=True)
class _Candidate:
    """A plan the oracle may return: where it comes from and what its replay costs."""

    source: str
    plan: dict[str, tuple[int, float] | None]
    repair: bool
    breakdown: ObjectiveBreakdown
    program: ProgramResult | None  # None: the plan at scale, no program built
    first_runs: dict[str, tuple[int, float, float]] = dataclasses.field(default_factory=dict)


def _plan_candidates(
    inst: OracleInstance, hindsight: HindsightView, limits: SolveLimits, mip_rel_gap: float, replayed_rounds: int
) -> Iterator[_Candidate]:
    """The plans to choose from, in order of preference: the MILP's, then the greedy fallback.

    Under cpu contention runs last longer than the nominal plan assumes, and its planned
    starts may find a node still busy (its jobs then wait off-plan, up to their TTL). So both
    again from programs whose runs last longer (:mod:`agents.oracle.model.stretch`): until their
    worst-case end (the twin replays every planned start, but the runs are reserved long), and
    ``replayed_rounds`` times as long as the replay of the previous MILP plan measured them
    (from the nominal one; a measured plan packs about as its replay runs, and its own replay
    checks the guess). Each plan is scored by its replay in the twin, under contention both
    waiting for a busy planned node and repairing (:mod:`agents.oracle.plans.replay`); one option set
    is alive at a time.
    """
    contended = bool((inst.slowest_rate < 1.0).any())
    previous = _program_candidates(inst, hindsight, None, limits, mip_rel_gap, contended)
    yield from previous
    if not contended:
        return
    yield from _program_candidates(inst, hindsight, WORST_CASE, limits, mip_rel_gap, contended)
    for round_ in range(1, replayed_rounds + 1):
        milp = [candidate for candidate in previous if candidate.source.startswith("milp")]
        if not milp:
            return
        measured = min(milp, key=lambda candidate: candidate.breakdown.total_usd)
        runs = replayed_runs(hindsight, measured.plan, measured.repair, measured.first_runs)
        lengths = replayed_lengths(inst, runs, f"replayed runs, round {round_}")
        previous = _program_candidates(inst, hindsight, lengths, limits, mip_rel_gap, contended)
        yield from previous


def _program_candidates(
    inst: OracleInstance,
    hindsight: HindsightView,
    runs: RunLengths | None,
    limits: SolveLimits,
    mip_rel_gap: float,
    contended: bool,
) -> list[_Candidate]:
    """The plan program with runs as long as ``runs`` says (``None``: nominal): its MILP and greedy plans, replayed."""
    options = plan_options(inst, runs=runs)
    program = solve_program(inst, options, limits, mip_rel_gap)
    plans: list[tuple[str, np.ndarray, np.ndarray | None]] = []
    if program.chosen is not None:
        chosen = advance_starts(inst, options, program.chosen, program.first_runs)
        plans.append(("milp", chosen, program.first_runs))
    plans.append(("greedy", greedy_plan(inst, options), None))
    suffix = "" if runs is None else f" ({runs.label})"
    candidates = []
    for source, chosen, first_runs in plans:
        plan = _plan_dict(inst, options, chosen)
        firsts = _first_runs_dict(inst, options, first_runs)
        for repair in (False, True) if contended else (False,):
            replay = replay_plan(hindsight, plan, repair, firsts)
            candidates.append(_Candidate(source + suffix, plan, repair, replay, program, firsts))
    return candidates


def _unproven_status(plan: ProgramResult, bound: ProgramResult | None) -> str:
    """``OracleResult.status`` of an episode whose plan does not meet its bound.

    ``"time-limit"`` if a solve hit the wall-time cap, else ``"work-limit"`` if one hit its node
    limit, else ``"solver-failed"`` if HiGHS failed otherwise (the greedy plan and the trivial
    bound stand in), else ``"gap"`` (both solved: the relaxation is below the plan).
    """
    statuses = {plan.status} if bound is None else {plan.status, bound.status}
    if TIME_LIMIT in statuses:
        return "time-limit"
    if NODE_LIMIT in statuses:
        return "work-limit"
    return "gap" if statuses == {OPTIMAL} else "solver-failed"


def _first_runs_dict(
    inst: OracleInstance, options: Options, first_runs: np.ndarray | None
) -> dict[str, tuple[int, float, float]]:
    """``job_id -> (node, start_s, evicted_at_s)`` for the jobs with an evicted first run."""
    if first_runs is None:
        return {}
    return {
        inst.job_ids[j]: (int(options.node[o]), float(options.start_lo_s[o]), float(options.use_end_s[o]))
        for j, o in enumerate(first_runs.tolist())
        if o >= 0
    }


def _plan_dict(inst: OracleInstance, options: Options, chosen: np.ndarray) -> dict[str, tuple[int, float] | None]:
    """``job_id -> (node, start_s)`` or ``None``, for every job of the episode."""
    out: dict[str, tuple[int, float] | None] = {}
    for j, job_id in enumerate(inst.job_ids):
        o = int(chosen[j])
        out[job_id] = None if o < 0 else (int(options.node[o]), float(options.start_lo_s[o]))
    return out
