"""The arrival plan (agents.oracle.plans.arrival): exact where it serves every job, optimal on planted episodes.

* Its program's value is what the twin charges: on random small instances (interruptions,
  TTLs, latency-critical jobs, cpu contention on and off) a plan that serves every job replays
  at the program's value, recomputed here by playing it in the twin, and no run is slowed or
  violates the SLA there; every arrival plan replays at or above the exhaustive optimum.
* On planted episodes it finds the planted optimum, and ``solve_oracle`` proves it against the
  capacity-free bound (plan = bound = the certificate) without building the big programs.
* The no-slowdown room is the largest allocation the twin's contention rule runs at full speed.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from agents.oracle import solve_oracle
from agents.oracle.model.instance import OracleInstance
from agents.oracle.plans.arrival import (
    _room_without_slowdown_m,
    arrival_options,
    arrival_options_upper_bound,
    solve_arrival_plan,
)
from agents.oracle.plans.replay import replay_plan
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, Telemetry, TwinSpec
from digital_twin.episode_settings import PROCESSOR_SHARING
from digital_twin.planted import PlantedEpisode
from digital_twin.sim.tables.contention import progress_rate
from tests.agents.oracle.test_oracle_random import brute_force_optimum, small_specs
from tests.digital_twin.planted.test_planted import planted_episodes

TOL = 1e-7


def _solved(spec: TwinSpec) -> tuple[OracleInstance, DigitalTwin, dict[str, tuple[int, float] | None] | None]:
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    view = twin.hindsight()
    inst = OracleInstance.from_hindsight(view)
    return inst, twin, solve_arrival_plan(inst, view).plan


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs(exact_grid=False), st.booleans())
def test_arrival_plan__replays_at_its_value_and_never_below_the_optimum(spec: TwinSpec, contended: bool) -> None:
    """A plan serving every job costs in the twin what its options say; any plan is >= the exhaustive optimum."""
    spec = spec.with_settings(cost_model="prorated", interference=PROCESSOR_SHARING if contended else "none")
    inst, twin, plan = _solved(spec)
    assert plan is not None  # leaving every job unserved is always feasible
    view = twin.hindsight()
    replayed = replay_plan(view, plan, False)
    options = arrival_options(inst)
    if all(plan[job_id] is not None for j, job_id in enumerate(inst.job_ids) if inst.placeable(j)):
        chosen = [
            int(np.flatnonzero((options.job == j) & (options.node == plan[job_id][0]))[0])  # type: ignore[index]
            for j, job_id in enumerate(inst.job_ids)
            if inst.placeable(j)
        ]
        value = float(options.coef_usd[chosen].sum()) + float(
            options.unserved_usd[[j for j in range(inst.n_jobs) if not inst.placeable(j)]].sum()
        )
        unfair = replayed["unfairness_usd"]
        assert replayed.total_usd - unfair == pytest.approx(value, rel=1e-9, abs=1e-9)
        assert replayed["sla_violations"] == 0
        event("every job served")
    optimum = brute_force_optimum(spec, replayed.total_usd)
    assume(optimum is not None)
    assert optimum is not None
    assert replayed.total_usd >= optimum - TOL


@pytest.mark.parametrize(
    "episode",
    [
        *planted_episodes(5, range(0, 6)),
        *planted_episodes(10, range(40, 42), fill=0.8),
        *planted_episodes(5, range(100, 104), preemptible_share=1.0, interruptions_per_spot_node=2),
    ],
    ids=lambda e: f"{len(e.spec.fleet)}n-{len(e.spec.jobs)}j",
)
def test_oracle__proves_the_planted_optimum_with_the_arrival_plan(episode: PlantedEpisode) -> None:
    """Plan = bound = the planted optimum, the plan from the arrival program, no plan or bound program built."""
    twin = DigitalTwin(episode.spec)
    twin.reset(np.random.default_rng(0))
    result = solve_oracle(twin.hindsight())
    assert result.proven_optimal and result.plan_source == "arrival"
    assert result.plan_program is None and result.bound_program is None
    assert result.plan_objective_usd == pytest.approx(episode.optimum_usd, rel=1e-9)
    assert result.lower_bound_usd == pytest.approx(episode.optimum_usd, rel=1e-9)
    assert result.lower_bound_usd <= episode.optimum_usd * (1.0 + 1e-12)  # a bound: never above the optimum


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_specs(exact_grid=False))
def test_arrival_options_upper_bound__never_below_the_options_built(spec: TwinSpec) -> None:
    """The count that decides "too large" without building anything bounds the options from above."""
    inst = _solved(spec)[0]
    assert arrival_options_upper_bound(inst) >= arrival_options(inst).n


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 6), st.integers(1, 3), st.integers(0, 2**16))
def test_arrival_options_upper_bound__holds_on_fleets_of_interchangeable_nodes(
    twins: int, others: int, seed: int
) -> None:
    """Identical nodes form a class whose options the symmetry rule cuts; the bound still holds."""
    rng = np.random.default_rng(seed)
    fleet = (
        *(NodeSpec(f"same{i}", "x86_64", "on-demand", 4, 16, 0.4) for i in range(twins)),
        *(
            NodeSpec(f"other{i}", "x86_64", "spot", 2 + 2 * i, 8, 0.1 + 0.1 * i, interruption_prob_per_hour=0.9)
            for i in range(others)
        ),
    )
    jobs = tuple(
        JobSpec(f"j{k}", float(rng.uniform(0, 3000)), float(rng.uniform(60, 1800)), "batch", int(rng.integers(1, 5)), 2)
        for k in range(20)
    )
    spec = TwinSpec(fleet, jobs, Telemetry(np.full((7, len(fleet), 2), 20.0), 600.0), EpisodeSettings(3600.0))
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(seed))
    inst = OracleInstance.from_hindsight(twin.hindsight())
    assert inst.node_classes
    assert arrival_options(inst).n <= arrival_options_upper_bound(inst)


def test_arrival_plan__the_same_plan_every_time() -> None:
    """One worker and a work limit: the solve is deterministic."""
    episode = planted_episodes(10, range(40, 41), fill=0.8)[0]
    plans = [_solved(episode.spec)[2] for _ in range(2)]
    assert plans[0] == plans[1]


@given(st.integers(1, 64_000), st.floats(0.0, 100.0))
def test_room_without_slowdown__the_largest_allocation_at_full_speed(capacity_m: int, background_pct: float) -> None:
    background_m = background_pct * capacity_m / 100.0  # the twin's product
    room = _room_without_slowdown_m(capacity_m, background_m)
    assert 0 <= room <= capacity_m
    assert progress_rate(background_m, room, capacity_m) == 1.0
    if room < capacity_m:
        assert progress_rate(background_m, room + 1, capacity_m) < 1.0


def test_solve_oracle__arrival_work_is_the_arrival_plan_s_work_limit() -> None:
    """The option reaches CP-SAT: with almost no work it finds no arrival plan and the greedy plan at
    scale is taken (the episode decomposed, so that no plan program is built); a limit that is not
    a number > 0 is refused."""
    episode = planted_episodes(10, range(40, 41), fill=0.8)[0]
    twin = DigitalTwin(episode.spec)
    twin.reset(np.random.default_rng(0))
    at_scale = {"memory_budget_bytes": 1.0, "lagrangian_iterations": 0}
    full = solve_oracle(twin.hindsight(), **at_scale)
    cut = solve_oracle(twin.hindsight(), arrival_work=1e-9, **at_scale)
    assert full.plan_source == "arrival" and full.plan_objective_usd == pytest.approx(episode.optimum_usd)
    assert cut.plan_source == "hindsight greedy" and cut.plan_objective_usd >= full.plan_objective_usd - 1e-9
    with pytest.raises(ValueError, match="deterministic_time must be > 0"):
        solve_oracle(twin.hindsight(), arrival_work=0.0, **at_scale)
