"""CPU contention (processor sharing): known answers, and invariants re-derived from the event log.

The invariant test rebuilds every node's progress rate from the event log alone (background at
each tick, our allocated cpu from starts and stops, ``rate = min(1, cores / demand)``) and
integrates it over each run: a completed run must have done exactly its nominal work. It runs
on >= 200 random episodes (random fleets, jobs, backgrounds, interruptions and policies).
"""

from __future__ import annotations

from collections.abc import Collection

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scenarios
from aco_env.registration import FLEET5_ID
from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, Telemetry, TwinSpec
from digital_twin.episode_settings import PROCESSOR_SHARING
from digital_twin.sim.tables.contention import progress_rate
from tests.helpers import drawn_background, first_fit, run_twin, seeded_random_policy
from tests.work_replay import Run, rebuilt_runs

ONE_NODE = (NodeSpec("n0", "x86_64", "on-demand", 4, 16, 0.36),)


def _one_node(jobs: tuple[JobSpec, ...], cpu_pct: float | np.ndarray, horizon_s: float = 7200.0) -> DigitalTwin:
    n_ticks = int(horizon_s // 600)
    background = np.zeros((n_ticks, 1, 2))
    background[:, 0, 0] = cpu_pct
    spec = TwinSpec(
        ONE_NODE,
        jobs,
        Telemetry(background, 600.0),
        EpisodeSettings(horizon_s, interference=PROCESSOR_SHARING),
    )
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(0))
    return twin


def _run_first_fit(twin: DigitalTwin) -> None:
    while not twin.done:
        mask = twin.feasible_mask()
        if any(mask):
            twin.place(mask.index(True))
        else:
            twin.defer()


def _completion(twin: DigitalTwin, job_id: str) -> float:
    return next(t for t, event, job, _ in twin.event_log if event == "completion" and job == job_id)


def test_contention__a_full_node_on_half_background_runs_at_two_thirds() -> None:
    """4 cores, 50 % background (2 cores) + a 4-core job: demand 6, rate 4/6: 600 s of work take (and cost) 900 s."""
    twin = _one_node((JobSpec("j", 0, 600, "batch", 4, 1),), 50.0)
    _run_first_fit(twin)
    assert _completion(twin, "j") == pytest.approx(900.0, rel=1e-12)
    assert twin.objective().cost_usd == pytest.approx(0.36 / 3600 * 900, rel=1e-12)


def test_contention__no_slowdown_while_demand_fits_the_cores() -> None:
    """A 2-core job beside 50 % background: demand 4 = cores, full speed; without interference, identical."""
    twin = _one_node((JobSpec("j", 0, 600, "batch", 2, 1),), 50.0)
    _run_first_fit(twin)
    assert _completion(twin, "j") == 600.0


def test_contention__rates_change_at_ticks_and_work_is_conserved() -> None:
    """Background 50 % then 0 % from the tick at 600 s: 400 s of work by 600 s (rate 2/3), the rest at full speed."""
    background = np.array([50.0] + [0.0] * 11)
    twin = _one_node((JobSpec("j", 0, 1000, "batch", 4, 1),), background)
    _run_first_fit(twin)
    assert _completion(twin, "j") == pytest.approx(600.0 + 600.0, rel=1e-12)


def test_contention__a_completion_speeds_up_the_others() -> None:
    """Two 2-core jobs on 50 % background: demand 6, rate 2/3; the 200 s job ends at 300 s, then full speed."""
    jobs = (JobSpec("short", 0, 200, "batch", 2, 1), JobSpec("long", 0, 600, "batch", 2, 1))
    twin = _one_node(jobs, 50.0)
    _run_first_fit(twin)
    assert _completion(twin, "short") == pytest.approx(300.0, rel=1e-12)
    # long: 200 s of work by 300 s, 400 s left at rate 1 (demand 2 + 2 = 4)
    assert _completion(twin, "long") == pytest.approx(700.0, rel=1e-12)


def test_contention__interference_none_is_the_nominal_twin() -> None:
    """The same episode without interference completes after the nominal duration."""
    spec = TwinSpec(
        ONE_NODE,
        (JobSpec("j", 0, 600, "batch", 4, 1),),
        Telemetry.constant(1, 50, 10, 7200, 600),
        EpisodeSettings(7200.0),
    )
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(0))
    _run_first_fit(twin)
    assert _completion(twin, "j") == 600.0


# ---------------------------------------------------------------------------- invariants
@st.composite
def contended_specs(draw: st.DrawFn) -> TwinSpec:
    """1-3 nodes, 2-8 jobs over an hour, random background per 300 s tick, random interruptions."""
    n_nodes = draw(st.integers(1, 3))
    fleet = tuple(
        NodeSpec(f"n{i}", "x86_64", "spot" if (spot := draw(st.booleans())) else "on-demand",
                 draw(st.sampled_from((2, 4, 8))), 16, 0.36, interruption_prob_per_hour=0.5 if spot else 0.0)
        for i in range(n_nodes)
    )
    horizon = 3600.0
    jobs = tuple(
        JobSpec(f"j{k}", float(draw(st.integers(0, 3000))), float(draw(st.integers(30, 2400))),
                draw(st.sampled_from(("latency-critical", "batch", "stream"))),
                draw(st.sampled_from((0.5, 1, 2, 4))), 2, preemptible=draw(st.booleans()))
        for k in range(draw(st.integers(2, 8)))
    )
    telemetry = drawn_background(draw, int(horizon // 300), n_nodes)
    return TwinSpec(
        fleet,
        sorted(jobs, key=lambda j: j.arrival_s),
        telemetry,
        EpisodeSettings(horizon, queue_ttl_s=draw(st.sampled_from((None, 600.0))), interference=PROCESSOR_SHARING),
    )


def _rebuilt_runs(twin: DigitalTwin) -> list[Run]:
    """From the event log: ``(job, work done, duration, completed)`` of every run, and checks on the rates.

    Rates are recomputed independently: a node's demand is its background at the latest tick
    (percent of its cores) plus the cores of the jobs started on it and not yet stopped.
    """
    spec = twin.spec
    cores = [n.cpu_cores * 1000 for n in spec.fleet]
    jobs = {job.job_id: job for job in spec.jobs}
    background = spec.telemetry.background_pct[:, :, 0]

    def rates(i: int, on_node: Collection[str], k: int) -> dict[str, float]:
        allocated = sum(round(jobs[j].cpu_cores * 1000) for j in on_node)
        assert allocated <= cores[i], "a node is over its cpu capacity"
        rate = progress_rate(background[k, i] * cores[i] / 100.0, allocated, cores[i])
        assert 0.5 <= rate <= 1.0
        return dict.fromkeys(on_node, rate)

    return rebuilt_runs(twin, rates)


def _event_times(twin: DigitalTwin) -> set[float]:
    """The times at which something happens: logged events (not starts), ticks, interruptions, TTL ends, the horizon.

    A queue spell's TTL end is an event even when the job left the queue before it; a node's
    completion event replaced by a rate change is not one.
    """
    spec, ttl = twin.spec, twin.spec.settings.queue_ttl_s
    times = {0.0, spec.settings.horizon_s, *(k * spec.telemetry.tick_s for k in range(spec.telemetry.n_ticks))}
    times.update(t for times_i in twin.hindsight().interruptions_s for t in times_i)
    for t, event, _, _ in twin.event_log:
        if event != "start":
            times.add(t)
        if ttl is not None and event in ("arrival", "evicted-requeued"):
            times.add(t + ttl)
    return times


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contended_specs(), st.integers(0, 3))
def test_contention__work_is_conserved_and_rates_stay_in_range(spec: TwinSpec, policy_seed: int) -> None:
    """Every completed run did exactly its nominal work; no run did more; rates in [0.5, 1]; capacities hold.

    And a decision is only asked when an event happened (a replaced completion event wakes nothing).
    """
    twin = DigitalTwin(spec, record_events=True)
    policy = first_fit if policy_seed == 0 else seeded_random_policy(policy_seed)
    decision_times = run_twin(twin, policy, seed=policy_seed)
    assert set(decision_times) <= _event_times(twin), "asked at a time when nothing happened"
    for job_id, done, duration, completed in _rebuilt_runs(twin):
        if completed:
            assert done == pytest.approx(duration, rel=1e-9, abs=1e-6), job_id
        else:
            assert done <= duration * (1 + 1e-9) + 1e-6, job_id


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_contention__env_return_is_minus_the_objective_and_seeds_repeat(seed: int) -> None:
    """On the default scenario (contention on): return = -objective, and one seed gives one episode."""
    def play() -> tuple[float, list[int], float]:
        env = gym.make(FLEET5_ID)
        observation, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        total, actions = 0.0, []
        while True:
            valid = np.flatnonzero(observation["action_mask"])
            action = int(valid[rng.integers(len(valid))])
            actions.append(action)
            observation, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            if terminated or truncated:
                return total, actions, info["episode_metrics"]["objective_usd"]

    first, second = play(), play()
    assert first == second
    assert first[0] == pytest.approx(-first[2], rel=1e-9, abs=1e-9)


def test_contention__bundled_scenarios_use_it() -> None:
    """Bundled scenarios run with processor sharing, except toy3 (the hand-worked schema-1 instance)."""
    for name in scenarios.names():
        expected = "none" if name == "toy3" else PROCESSOR_SHARING
        assert scenarios.load(name).settings.interference == expected, name
