"""The arrival plan: every job starts when it arrives, on a node where its run is never slowed, or is left unserved.

A restriction of the plan program (:mod:`agents.oracle.plans.options`) that stays small at tens
of nodes and hundreds of jobs, so the oracle can plan exactly where the full program would not
fit. Job ``j`` (arrival ``a``, nominal duration ``d``) may take one option ``x[j, i]``: start on
candidate node ``i`` at ``a``, where ``i`` is up at ``a`` and no interruption of ``i`` falls in
``(a, a + d)`` (the run neither fails nor is evicted). Otherwise the job is left unserved
(the replay, :mod:`agents.oracle.plans.replay`, never starts it), charged what that counts.

Constraints, per node, at every time its usage can rise (a start) or its background change (a
tick), over the runs that hold the node then (``a <= t < min(a + d, H)``):

* **fit**: their cpu, memory and GPU requests are within the node's (a planned start fits);
* **no slowdown** (under ``processor-sharing``): their cpu plus the tick's background cpu is
  at most the node's cores (:func:`digital_twin.sim.tables.contention.progress_rate` stays 1), so every
  run lasts exactly its nominal duration;
* **no SLA violation**: at each tick a latency-critical run covers (``a < T < end``), the
  node's allocation is at most :attr:`~agents.oracle.model.instance.OracleInstance.sla_allowed_cpu_m`.

The objective is each option's terms at its start (:func:`agents.oracle.milp.options.point_terms`:
the pro-rated cost of the nominal run and the penalties it decides) plus the unserved charges.
So the program values exactly what the twin charges a plan that serves every job (but the
``unfairness`` term, ``>= 0``, and the ``energy`` and ``carbon`` terms, charged their lower
bound, :mod:`agents.oracle.model.energy`); the replay is the plan's objective in any case.

The program is a packing of runs into nodes over time, which CP-SAT (OR-Tools) solves far more
steadily than HiGHS: on ``planted50`` episodes the same model took HiGHS 11-271 s and CP-SAT
9-21 s (one worker each). CP-SAT runs on one worker with a limit on its
deterministic time (work, not wall time), so a solve gives the same plan on every machine.
The coefficients are integers of :data:`USD_SCALE` per USD (the replay, not the program's
value, is what the oracle reports).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from agents.oracle.milp.options import Options, filter_options, point_terms, symmetry_allowed, unserved
from agents.oracle.model.instance import OracleInstance
from agents.oracle.plans.replay import Plan
from digital_twin import HindsightView

USD_SCALE = 1e9
"""Program coefficients are whole nano-dollars."""
DETERMINISTIC_TIME_LIMIT = 120.0
"""CP-SAT's work limit per solve, in its deterministic time units (about seconds on this project's machines)."""
MAX_OPTIONS = 60_000
"""Episodes with more options than this are not planned this way (the program grows with options x overlaps)."""


@dataclass(frozen=True, eq=False)
class ArrivalPlan:
    """The outcome of one solve.

    Attributes:
        plan: ``job_id -> (node, arrival)`` for the jobs started at arrival, ``None`` for the
            others (left unserved); ``None`` when CP-SAT found no solution.
        status: CP-SAT's status name (``"OPTIMAL"``, ``"FEASIBLE"``, ``"UNKNOWN"``, ...), or
            ``"too-large"`` when the episode may have more than :data:`MAX_OPTIONS` options
            (:func:`arrival_options_upper_bound`; nothing built).
        options: The options the program chose from (0 when too large).
        work: CP-SAT's deterministic time spent (its work measure, about seconds; 0 when too large).
    """

    plan: Plan | None
    status: str
    options: int
    work: float = 0.0


def arrival_options(inst: OracleInstance) -> Options:
    """Each job at its arrival on every candidate node where its run completes uninterrupted (symmetry broken)."""
    blocks = []
    for j in range(inst.n_jobs):
        if not inst.placeable(j):
            continue
        a = np.array([float(inst.arrival_s[j])])
        blocks += [
            point_terms(inst, j, i, a)
            for i in inst.candidates[j]
            if not inst.is_down(i, float(a[0])) and inst.next_interruption_s(i, a)[0] >= a[0] + inst.duration_s[j]
        ]
    options = Options.concatenate(blocks, *unserved(inst))
    return filter_options(options, symmetry_allowed(inst, options.job, options.node))


def arrival_options_upper_bound(inst: OracleInstance) -> int:
    """An upper bound on ``arrival_options(inst).n`` in ``O(jobs x nodes)``, building nothing.

    Each placeable job on each candidate node, the interruption filter ignored, then the
    symmetry rule (:func:`agents.oracle.milp.options.symmetry_allowed`) on that superset: the
    ``r``-th job with candidates on a class of interchangeable nodes keeps at most ``r + 1`` of
    them. A job's rank among a superset of users is at least its rank among the real users, so
    the count only grows; plus one unserved option per job.
    """
    class_of = {i: c for c, members in enumerate(inst.node_classes) for i in members}
    users = [0] * len(inst.node_classes)
    total = inst.n_jobs
    for j in range(inst.n_jobs):
        if not inst.placeable(j):
            continue
        per_class: dict[int, int] = {}
        for i in inst.candidates[j]:
            if i in class_of:
                per_class[class_of[i]] = per_class.get(class_of[i], 0) + 1
            else:
                total += 1
        for c, on_class in per_class.items():
            users[c] += 1
            total += min(on_class, users[c])
    return total


def solve_arrival_plan(
    inst: OracleInstance,
    hindsight: HindsightView,
    deterministic_time: float = DETERMINISTIC_TIME_LIMIT,
) -> ArrivalPlan:
    """The cheapest arrival plan CP-SAT finds within ``deterministic_time`` (see the module docstring).

    Args:
        inst: The episode.
        hindsight: Its hindsight view (the background, for the no-slowdown rows).
        deterministic_time: CP-SAT's work limit (> 0).

    Raises:
        ValueError: ``deterministic_time`` is not a number > 0.
    """
    if not deterministic_time > 0:
        raise ValueError(f"deterministic_time must be > 0, got {deterministic_time!r}")
    if arrival_options_upper_bound(inst) > MAX_OPTIONS:
        return ArrivalPlan(None, "too-large", 0)
    options = arrival_options(inst)
    model = cp_model.CpModel()
    x = [model.new_bool_var(f"x{o}") for o in range(options.n)]
    for j in range(inst.n_jobs):
        mine = np.flatnonzero(options.job == j)
        if len(mine):
            model.add_at_most_one(x[o] for o in mine)
    background_m = np.asarray(hindsight.background_cpu_pct, dtype=np.float64)[: len(inst.tick_times_s)]
    background_m = background_m * inst.node_cpu_m.astype(np.float64) / 100.0  # the twin's product
    for i in range(inst.n_nodes):
        on_node = np.flatnonzero(options.node == i)
        if len(on_node):
            _node_rows(model, inst, options, on_node, x, background_m[:, i])
    gain = _nano_usd(options.coef_usd - options.unserved_usd[options.job])
    model.minimize(sum(int(g) * x[o] for o, g in enumerate(gain)))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = float(deterministic_time)
    status = solver.solve(model)
    name = solver.status_name(status)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return ArrivalPlan(None, name, options.n, solver.deterministic_time)
    plan: dict[str, tuple[int, float] | None] = dict.fromkeys(inst.job_ids)
    for o in range(options.n):
        if solver.boolean_value(x[o]):
            plan[inst.job_ids[int(options.job[o])]] = (int(options.node[o]), float(options.start_lo_s[o]))
    return ArrivalPlan(plan, name, options.n, solver.deterministic_time)


def _node_rows(
    model: cp_model.CpModel,
    inst: OracleInstance,
    options: Options,
    on_node: np.ndarray,
    x: list[cp_model.IntVar],
    background_m: np.ndarray,
) -> None:
    """The fit, no-slowdown and SLA rows of one node over its options ``on_node`` (see the module docstring).

    Fit is checked at each start (usage only rises there), no slowdown at each start and tick
    (the background changes at ticks), the SLA at each tick a latency-critical option covers,
    enforced only when one of them is taken (one indicator per tick).
    """
    i = int(options.node[on_node[0]])
    start, end = options.use_start_s[on_node], options.use_end_s[on_node]
    jobs = options.job[on_node]
    cpu = inst.job_cpu_m[jobs]
    lits = [x[int(o)] for o in on_node]
    requests = (
        (cpu, int(inst.node_cpu_m[i])),
        (inst.job_mem_mib[jobs], int(inst.node_mem_mib[i])),
        (inst.job_gpus[jobs], int(inst.node_gpus[i])),
    )
    ticks = inst.tick_times_s
    starts = np.unique(start)
    for t in starts:
        holding = np.flatnonzero((start <= t) & (t < end))
        for amounts, capacity in requests:
            _at_most(model, [lits[h] for h in holding], amounts[holding], capacity)
    if inst.slowest_rate[:, i].min() < 1.0:  # processor sharing may slow this node's runs
        for t in np.union1d(starts, ticks[(ticks >= start.min()) & (ticks < end.max())]):
            holding = np.flatnonzero((start <= t) & (t < end))
            k = int(np.searchsorted(ticks, t, side="right")) - 1
            room = _room_without_slowdown_m(int(inst.node_cpu_m[i]), float(background_m[k]))
            _at_most(model, [lits[h] for h in holding], cpu[holding], room)
    lc = inst.job_lc[jobs]
    for tick in np.flatnonzero(lc.any() & (ticks >= start.min()) & (ticks < end.max())).tolist():
        covering = np.flatnonzero((start < ticks[tick]) & (ticks[tick] < end))
        latency_critical = covering[lc[covering]]
        allowed = int(inst.sla_allowed_cpu_m[tick, i])
        if len(latency_critical) == 0 or int(cpu[covering].sum()) <= allowed:
            continue
        watched = model.new_bool_var(f"lc{i}_{tick}")  # a latency-critical run covers the tick
        for h in latency_critical:
            model.add_implication(lits[h], watched)
        model.add(sum(int(cpu[c]) * lits[c] for c in covering) <= allowed).only_enforce_if(watched)


def _at_most(model: cp_model.CpModel, lits: list[cp_model.IntVar], amounts: np.ndarray, capacity: int) -> None:
    """``sum(amounts x lits) <= capacity``, left out when it cannot bind."""
    if int(amounts.sum()) > capacity:
        model.add(sum(int(a) * lit for a, lit in zip(amounts, lits, strict=True)) <= capacity)


def _room_without_slowdown_m(capacity_m: int, background_m: float) -> int:
    """The most millicores our jobs may hold while ``background_m`` runs with no slowdown (``demand <= capacity``).

    The twin compares ``background_m + allocated <= capacity_m`` in floating point; this is the
    largest whole ``allocated`` that passes the same comparison (``-1`` when none does).
    """
    room = int(np.floor(capacity_m - background_m))
    while room >= 0 and background_m + room > capacity_m:
        room -= 1
    while background_m + (room + 1) <= capacity_m and room + 1 <= capacity_m:
        room += 1
    return room


def _nano_usd(usd: Iterable[float] | np.ndarray) -> np.ndarray:
    """USD as whole nano-dollars (int64)."""
    return np.rint(np.asarray(usd, dtype=np.float64) * USD_SCALE).astype(np.int64)
