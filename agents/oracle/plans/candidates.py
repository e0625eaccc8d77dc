"""The plans the oracle chooses from, in batches, each scored by its replay in the twin.

:func:`plan_batches` yields them in order of cost to find: the arrival plan
(:mod:`agents.oracle.plans.arrival`) first; then, when the episode fits the memory budget, the
plan program's MILP and greedy plans (nominal runs, then, under cpu contention, worst-case runs
and runs as long as the previous plan's replay measured); when it does not, the hindsight greedy
plan (:mod:`agents.oracle.plans.hindsight_greedy`). The caller stops as soon as a batch's best
replay meets its bound, so the dearer programs are built only where they may help.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from agents.oracle.milp.limits import NODE_LIMIT, OPTIMAL, SolveLimits
from agents.oracle.milp.options import Options
from agents.oracle.milp.program import ProgramResult, solve_program
from agents.oracle.model.instance import OracleInstance
from agents.oracle.model.stretch import WORST_CASE, RunLengths, replayed_lengths
from agents.oracle.plans.arrival import DETERMINISTIC_TIME_LIMIT, solve_arrival_plan
from agents.oracle.plans.evaluate import advance_starts, greedy_plan
from agents.oracle.plans.hindsight_greedy import hindsight_greedy_plan
from agents.oracle.plans.options import plan_options
from agents.oracle.plans.replay import Plan, replay_plan, replayed_runs
from digital_twin import HindsightView
from digital_twin.objective import ObjectiveBreakdown

ARRIVAL, HINDSIGHT_GREEDY = "arrival", "hindsight greedy"
"""``Candidate.source`` of the arrival plan and of the plan at scale."""
_CP_SAT_STATUS = {"OPTIMAL": OPTIMAL, "FEASIBLE": NODE_LIMIT}
"""CP-SAT's outcomes as solve statuses: a feasible plan stopped by the work limit is a work limit."""


@dataclass(frozen=True)
class Candidate:
    """A plan the oracle may return: where it comes from and what its replay costs.

    Attributes:
        source: ``"arrival"``, ``"milp"``, ``"greedy"`` (the plan program's fallback) with the
            run lengths' label, or ``"hindsight greedy"``.
        plan: ``job_id -> (node, start_s)`` or ``None`` (left to the replay).
        repair: The replay's rule at a busy planned node (:func:`agents.oracle.plans.replay.planned_node`).
        breakdown: The replay's objective by term.
        program: The plan program it comes from (``None`` for the arrival plan and the plan at scale).
        solve_status: The status of the solve that produced it (``"optimal"``, ``"node-limit"``
            for a solve stopped by its work limit, or a failure); ``"optimal"`` for the
            hindsight greedy plan, which solves nothing.
        first_runs: ``job_id -> (node, start_s, evicted_at_s)`` of planned evicted first runs.
    """

    source: str
    plan: dict[str, tuple[int, float] | None]
    repair: bool
    breakdown: ObjectiveBreakdown
    program: ProgramResult | None
    solve_status: str = OPTIMAL
    first_runs: dict[str, tuple[int, float, float]] = dataclasses.field(default_factory=dict)

    @property
    def total_usd(self) -> float:
        """The replay's objective, USD."""
        return self.breakdown.total_usd


def plan_batches(
    inst: OracleInstance,
    hindsight: HindsightView,
    limits: SolveLimits,
    mip_rel_gap: float,
    replayed_rounds: int,
    *,
    programs: bool,
    arrival_work: float = DETERMINISTIC_TIME_LIMIT,
) -> Iterator[list[Candidate]]:
    """The candidate plans, a batch per solve, cheapest to find first (see the module docstring).

    Args:
        inst: The episode.
        hindsight: Its hindsight view (plans are replayed in a twin on it).
        limits: Each HiGHS solve's limits.
        mip_rel_gap: HiGHS's relative gap for stopping.
        replayed_rounds: Under contention, plan programs from replayed run lengths.
        programs: Whether the plan program fits the memory budget (else the plan at scale).
        arrival_work: CP-SAT's work limit of the arrival plan (deterministic time units).
    """
    contended = bool((inst.slowest_rate < 1.0).any())
    if not inst.active_nodes:  # under active-nodes the arrival program's value is not the twin's cost
        arrival = solve_arrival_plan(inst, hindsight, deterministic_time=arrival_work)
        if arrival.plan is not None:
            status = _CP_SAT_STATUS.get(arrival.status, "failed")
            yield _replayed(ARRIVAL, arrival.plan, hindsight, None, status, {}, both_ways=False)  # never busy
    if not programs:
        greedy = dict(hindsight_greedy_plan(hindsight, inst))
        yield _replayed(HINDSIGHT_GREEDY, greedy, hindsight, None, OPTIMAL, {}, both_ways=True)
        return
    previous = program_candidates(inst, hindsight, None, limits, mip_rel_gap, contended)
    yield previous
    if not contended:
        return
    yield program_candidates(inst, hindsight, WORST_CASE, limits, mip_rel_gap, contended)
    for round_ in range(1, replayed_rounds + 1):
        milp = [candidate for candidate in previous if candidate.source.startswith("milp")]
        if not milp:
            return
        measured = min(milp, key=lambda candidate: candidate.total_usd)
        runs = replayed_runs(hindsight, measured.plan, measured.repair, measured.first_runs)
        lengths = replayed_lengths(inst, runs, f"replayed runs, round {round_}")
        previous = program_candidates(inst, hindsight, lengths, limits, mip_rel_gap, contended)
        yield previous


def cheapest(best: Candidate | None, batch: Iterable[Candidate]) -> Candidate:
    """The cheapest replay of ``best`` and ``batch``; a later one only when strictly cheaper (not by float noise)."""
    for candidate in batch:
        if best is None or candidate.total_usd < best.total_usd - 1e-9 * max(1.0, abs(best.total_usd)):
            best = candidate
    assert best is not None  # every batch holds at least one plan
    return best


def _replayed(
    source: str,
    plan: Plan,
    hindsight: HindsightView,
    program: ProgramResult | None,
    status: str,
    first_runs: dict[str, tuple[int, float, float]],
    *,
    both_ways: bool,
) -> list[Candidate]:
    """``plan`` replayed waiting for busy planned nodes, and (when ``both_ways``) repairing."""
    return [
        Candidate(source, dict(plan), repair, replay_plan(hindsight, plan, repair, first_runs), program, status,
                  first_runs)
        for repair in ((False, True) if both_ways else (False,))
    ]


def program_candidates(
    inst: OracleInstance,
    hindsight: HindsightView,
    runs: RunLengths | None,
    limits: SolveLimits,
    mip_rel_gap: float,
    contended: bool,
) -> list[Candidate]:
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
        candidates += _replayed(source + suffix, plan, hindsight, program, program.status, firsts, both_ways=contended)
    return candidates


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
