"""The oracle under cpu contention: bound <= exhaustive optimum <= the plan's replayed objective.

The random small instances of :mod:`tests.agents.oracle.test_oracle_random` (backgrounds of 10-80 %, so a full
node is slowed) with processor sharing on: runs last longer than the programs' nominal
durations, completions fall between the tick-grid points, and the bound must still hold against
every decision sequence of the twin. The plan's objective is what the twin charges when it
replays the plan (:func:`agents.oracle.plans.replay.replay_plan`), also through the env's agent rule.
The worst-case plan program (runs reserved until their worst-case end) is replayed start for start.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

from agents.oracle import solve_oracle
from agents.oracle.milp.limits import SolveLimits
from agents.oracle.milp.program import solve_program
from agents.oracle.model.instance import OracleInstance
from agents.oracle.model.stretch import WORST_CASE, RunLengths, replayed_lengths, worst_case_ends
from agents.oracle.plans.evaluate import evaluate_plan, greedy_plan
from agents.oracle.plans.options import plan_options
from agents.oracle.plans.replay import FirstRuns, Plan, planned_node, replayed_runs
from agents.oracle.plans.replay import replay_plan as replay_plan_objective
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, Telemetry, TwinSpec
from digital_twin.episode_settings import PROCESSOR_SHARING
from tests.agents.oracle.test_oracle_random import (
    TOL,
    brute_force_optimum,
    cheapest,
    policy_objective,
    replay_plan,
    small_specs,
)
from tests.helpers import first_fit, seeded_random_policy


def _check(spec: TwinSpec) -> None:
    spec = spec.with_settings(interference=PROCESSOR_SHARING)
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    result = solve_oracle(twin.hindsight(), time_limit_s=20.0)
    replayed = replay_plan(spec, result)
    assert abs(replayed - result.plan_objective_usd) <= TOL, (replayed, result.plan_objective_usd)
    assert result.lower_bound_usd <= result.plan_objective_usd + TOL
    for policy in (first_fit, cheapest, seeded_random_policy(1), seeded_random_policy(2, defer_prob=0.5)):
        assert policy_objective(spec, policy) >= result.lower_bound_usd - TOL
    optimum = brute_force_optimum(spec, replayed)
    assume(optimum is not None)  # rare: a decision tree too big to enumerate
    assert optimum is not None
    assert result.lower_bound_usd <= optimum + TOL, (result.lower_bound_usd, optimum)
    assert result.plan_objective_usd >= optimum - TOL
    if result.proven_optimal:  # "proven" means the exhaustive optimum
        assert abs(result.plan_objective_usd - optimum) <= TOL + 1e-6 * abs(optimum), result.plan_objective_usd


@pytest.mark.heavy
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs(exact_grid=False))
def test_oracle_contention__bound_below_the_optimum_below_the_replayed_plan(spec: TwinSpec) -> None:
    """Random instances with interruptions and contention."""
    _check(spec)


@pytest.mark.heavy
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs(exact_grid=True))
def test_oracle_contention__on_the_tick_grid_too(spec: TwinSpec) -> None:
    """Arrivals and durations on the tick grid: contention moves completions off it."""
    _check(spec)


@pytest.mark.heavy  # seconds of CPU: the rest layer (make test), not make test-fast
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs(exact_grid=False, energy=True))
def test_oracle_contention__energy_and_carbon_charged_for_the_nominal_run_stay_below(spec: TwinSpec) -> None:
    """Energy and carbon weighed under contention: stretched runs add energy the nominal charge leaves out."""
    _check(spec)


def _starts(spec: TwinSpec, plan: Plan, first_runs: FirstRuns | None = None) -> dict[str, list[tuple[int, float]]]:
    """Replay ``plan`` by the oracle agent's rule (repairing); each job's starts ``(node, time_s)`` in order."""
    prices = [node.price_per_hour_usd for node in spec.fleet]
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    starts: dict[str, list[tuple[int, float]]] = {}
    while not twin.done:
        job = twin.current_job
        assert job is not None
        node = planned_node(plan, job.job_id, twin.time_s, twin.feasible_mask(), prices, first_runs)
        if node is None:
            twin.defer()
        else:
            starts.setdefault(job.job_id, []).append((node, twin.time_s))
            twin.place(node)
    return starts


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs(exact_grid=False))
def test_worst_case_plan__the_twin_replays_it_start_for_start(spec: TwinSpec) -> None:
    """Runs reserved until their worst-case end: every planned start happens as planned, and costs no more."""
    spec = spec.with_settings(interference=PROCESSOR_SHARING)
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    inst = OracleInstance.from_hindsight(twin.hindsight())
    options = plan_options(inst, runs=WORST_CASE)
    program = solve_program(inst, options, SolveLimits(), 1e-7)
    plans = [(greedy_plan(inst, options), None)]
    if program.chosen is not None:
        plans.append((program.chosen, program.first_runs))
    for chosen, first_runs in plans:
        planned = {inst.job_ids[j]: (int(options.node[o]), float(options.start_lo_s[o]))
                   for j, o in enumerate(chosen) if o >= 0}
        firsts = {} if first_runs is None else {
            inst.job_ids[j]: (int(options.node[o]), float(options.start_lo_s[o]), float(options.use_end_s[o]))
            for j, o in enumerate(first_runs) if o >= 0}
        expected = {job: [firsts[job][:2], start] if job in firsts else [start] for job, start in planned.items()}
        assert _starts(spec, dict(planned), firsts) == expected
        charged = evaluate_plan(inst, options, chosen, first_runs)
        replayed = replay_plan_objective(twin.hindsight(), dict(planned), first_runs=firsts)
        assert replayed.cost_usd <= charged.cost_usd + TOL, (replayed.cost_usd, charged.cost_usd)
        assert replayed["sla_violations"] <= charged["sla_violations"]


def test_worst_case_ends__exact_without_contention_and_never_before_the_twin() -> None:
    """A run alone on a node with a 100 % background tick then 0 %: half speed, then full speed."""
    node = NodeSpec("c0", "x86_64", "on-demand", 1, 8, 0.36)
    jobs = (JobSpec("j", 0.0, 450.0, "batch", 1, 1),)
    for interference, expected in ((PROCESSOR_SHARING, 300.0 + 300.0), ("none", 450.0)):
        background = np.zeros((3, 1, 2))
        background[0, 0, 0] = 100.0  # tick 0: rate 1/2 for 300 s (150 s of work), then 300 s at rate 1
        spec = TwinSpec((node,), jobs, Telemetry(background, 300.0), EpisodeSettings(900.0, interference=interference))
        twin = DigitalTwin(spec)
        twin.reset(np.random.default_rng(0))
        inst = OracleInstance.from_hindsight(twin.hindsight())
        end = float(worst_case_ends(inst, 0, np.array([0.0]), 450.0)[0])
        assert expected <= end <= expected * (1 + 1e-8)
        twin.place(0)
        while not twin.done:
            twin.defer()
        assert twin.objective().cost_usd == pytest.approx(0.0001 * expected, rel=1e-8)


def test_planned_node__waits_for_a_busy_planned_node_or_repairs_to_the_cheapest() -> None:
    """Due and free: the planned node; busy: wait (no prices) or the cheapest node that fits."""
    plan: dict[str, tuple[int, float] | None] = {"a": (0, 100.0), "b": None}
    prices = [0.1, 0.5, 0.3]
    busy = [False, True, True]
    assert planned_node(plan, "a", 50.0, [True] * 3, prices) is None  # not due yet
    assert planned_node(plan, "a", 100.0, [True] * 3, prices) == 0
    assert planned_node(plan, "a", 100.0, busy, None) is None  # waits for node 0
    assert planned_node(plan, "a", 100.0, busy, prices) == 2  # the cheapest of nodes 1 and 2
    assert planned_node(plan, "a", 100.0, [False] * 3, prices) is None  # fits nowhere: waits
    assert planned_node(plan, "b", 100.0, [True] * 3, prices) is None  # left unserved by the plan


def _half_loaded_node(gpus: int = 0) -> TwinSpec:
    """One node (4 cores, 0.36 USD/h) with a 50 % background, and one job that fills its cpu for 1,200 s."""
    gpu = {"gpu_count": 2, "gpu_model": "A100", "gpu_vram_gb": 40.0} if gpus else {}
    node = NodeSpec("n0", "gpu-node" if gpus else "x86_64", "on-demand", 4, 8, 0.36, **gpu)
    job = JobSpec("j", 0.0, 1200.0, "batch", 4, 1, gpu_count=gpus)
    background = np.zeros((12, 1, 2))
    background[:, 0, 0] = 50.0
    return TwinSpec(
        (node,),
        (job,),
        Telemetry(background, 600.0),
        EpisodeSettings(7200.0, queue_ttl_s=600.0, interference=PROCESSOR_SHARING),
    )


@pytest.mark.parametrize("gpus", [0, 1])
def test_oracle_contention__the_bound_charges_an_unavoidable_slowdown(gpus: int) -> None:
    """One job fills a node whose background is 50 %: rate 2/3, so 1,200 s of work take 1,800 s.

    Nothing avoids it (one node, a constant background, a 600 s TTL), so the twin charges the
    run 1,800 s. The relaxation charges the nominal 1,200 s plus the slowdown over the run's
    nominal interval at its load: ``h(C) = C x (1 - C / 1.5 C) = C / 3``, 400 s more. The bound
    lies between them, well above the nominal cost (on a cpu node and, charged by GPU share, on
    a GPU node).
    """
    twin = DigitalTwin(_half_loaded_node(gpus))
    twin.reset(np.random.default_rng(0))
    result = solve_oracle(twin.hindsight())
    usd_per_s = 0.0001 * (0.5 if gpus else 1.0)  # 0.36 USD/h, the whole node or half its GPUs
    assert result.plan_objective_usd == pytest.approx(usd_per_s * 1800.0, rel=1e-9)
    assert usd_per_s * 1500.0 <= result.lower_bound_usd <= usd_per_s * 1600.0 * (1 + 1e-9)


def test_replayed_lengths__measured_in_the_replay_and_spread_over_the_node() -> None:
    """The replay measures the run (1,800 s for 1,200 s of work); the plan built on it reserves that long.

    A job's own factor where it ran; the node's mean factor for the other jobs there; 1 on a
    node without completed runs. Factors of 1 give the nominal runs, bit for bit.
    """
    twin = DigitalTwin(_half_loaded_node())
    twin.reset(np.random.default_rng(0))
    view = twin.hindsight()
    runs = replayed_runs(view, {"j": (0, 0.0)})
    assert runs == {"j": (0, pytest.approx(1800.0, rel=1e-9))}
    inst = OracleInstance.from_hindsight(view)
    lengths = replayed_lengths(inst, runs, "measured")
    assert lengths.factors is not None and lengths.factors.tolist() == [[pytest.approx(1.5, rel=1e-9)]]
    measured = plan_options(inst, runs=lengths)
    assert measured.use_end_s.tolist() == pytest.approx((measured.start_lo_s + 1800.0).tolist(), rel=1e-9)
    assert not measured.stretchable.any()  # charged as measured: no slowdown charge on top

    three_jobs = cast(OracleInstance, SimpleNamespace(job_ids=("a", "b", "c"), n_jobs=3, n_nodes=2,
                                                      duration_s=np.array([100.0, 200.0, 300.0])))
    spread = replayed_lengths(three_jobs, {"a": (0, 150.0), "b": (0, 500.0)}, "measured")
    assert spread.factors is not None
    assert spread.factors.tolist() == [[1.5, 1.0], [2.5, 1.0], [2.0, 1.0]]

    nominal, ones = plan_options(inst), plan_options(inst, runs=RunLengths("ones", np.ones((1, 1))))
    assert ones.use_end_s.tolist() == nominal.use_end_s.tolist() and ones.coef_usd.tolist() == nominal.coef_usd.tolist()


def test_solve_oracle__replayed_rounds_can_be_turned_off_and_bad_values_are_refused() -> None:
    """``replayed_rounds=0`` keeps the nominal and worst-case plans only; a negative count is named in the error."""
    twin = DigitalTwin(_half_loaded_node())
    twin.reset(np.random.default_rng(0))
    view = twin.hindsight()
    quick = solve_oracle(view, replayed_rounds=0, compute_bound=False)
    assert "replayed" not in quick.plan_source
    assert quick.plan_objective_usd == pytest.approx(solve_oracle(view, compute_bound=False).plan_objective_usd)
    with pytest.raises(ValueError, match="replayed_rounds"):
        solve_oracle(view, replayed_rounds=-1)
