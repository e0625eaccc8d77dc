"""The deferral rules: a job deferred until it fits somewhere new is asked again exactly then,
and an agent whose defers depend only on where the job fits plays the identical episode with
fewer decisions under that rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aco_env import ClusterSchedulingEnv, EnvConfig
from agents import agent_deferral, make_agent
from digital_twin import NEW_FIT, NEXT_EVENT, DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, Telemetry, TwinSpec
from tests.helpers import assert_twin_invariants
from tests.strategies import twin_specs


def play_subset_policy(twin: DigitalTwin, accepted: frozenset[int], until: str, seed: int) -> tuple[list, int]:
    """Place on the first node of ``accepted`` the job fits on, else defer with ``until``.

    Such a policy's defer depends only on the mask (and fewer options never make it place),
    which is what the new-fit rule assumes. Returns the event log without defers and the
    number of decisions asked.
    """
    twin.reset(np.random.default_rng(seed))
    decisions = 0
    while not twin.done:
        assert_twin_invariants(twin)
        decisions += 1
        choice = next((i for i, ok in enumerate(twin.feasible_mask()) if ok and i in accepted), None)
        if choice is None:
            twin.defer(until)
        else:
            twin.place(choice)
    assert_twin_invariants(twin)
    return [event for event in twin.event_log if event[1] != "defer"], decisions


@pytest.mark.heavy  # seconds of CPU: the rest layer (make test), not make test-fast
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=twin_specs(), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_twin_defer__new_fit_gives_the_same_episode_as_next_event_for_a_mask_only_policy(
    spec: TwinSpec, seed: int, data: st.DataObject
) -> None:
    """Every event, the objective and the job counts match; new-fit never asks more often."""
    accepted = frozenset(data.draw(st.sets(st.integers(0, spec.n_nodes - 1))))
    runs = {}
    for until in (NEXT_EVENT, NEW_FIT):
        twin = DigitalTwin(spec, record_events=True)
        log, decisions = play_subset_policy(twin, accepted, until, seed)
        runs[until] = (log, twin.objective(), twin.job_counts(), decisions)
    assert runs[NEW_FIT][:3] == runs[NEXT_EVENT][:3]
    assert runs[NEW_FIT][3] <= runs[NEXT_EVENT][3]


@settings(max_examples=40, deadline=None)
@given(spec=twin_specs(), seed=st.integers(0, 2**32 - 1), split=st.integers(0, 15))
def test_twin_defer__snapshot_restore_keeps_new_fit_deferrals(spec: TwinSpec, seed: int, split: int) -> None:
    """Restoring a snapshot taken between new-fit defers replays the same end state."""
    accepted = frozenset(range(0, spec.n_nodes, 2))

    def step(twin: DigitalTwin) -> None:
        choice = next((i for i, ok in enumerate(twin.feasible_mask()) if ok and i in accepted), None)
        twin.defer(NEW_FIT) if choice is None else twin.place(choice)

    twin = DigitalTwin(spec, record_events=True)
    play_subset_policy(twin, accepted, NEW_FIT, seed)
    expected = (twin.event_log, twin.objective())
    twin.reset(np.random.default_rng(seed))
    for _ in range(split):
        if twin.done:
            break
        step(twin)
    snapshot = twin.snapshot()
    for _ in range(2):
        twin.restore(snapshot)
        while not twin.done:
            step(twin)
        assert (twin.event_log, twin.objective()) == expected


def two_node_spec() -> TwinSpec:
    """A 4-core spot node and a 2-core on-demand node; ticks every 100 s over 2,000 s.

    ``big`` (2 cores, 1,000 s) fills the on-demand node at t = 0; ``lc`` (2 cores) arrives at
    t = 10 and fits only on the spot node until ``big`` completes at t = 1,000.
    """
    fleet = (
        NodeSpec("spot", "x86_64", "spot", 4, 16, 0.1, interruption_prob_per_hour=0.0),
        NodeSpec("od", "x86_64", "on-demand", 2, 16, 0.4),
    )
    jobs = (
        JobSpec("big", 0.0, 1000.0, "batch", 2, 4),
        JobSpec("lc", 10.0, 100.0, "latency-critical", 2, 4),
    )
    return TwinSpec(fleet, jobs, Telemetry.constant(2, 10, 10, 2000, 100), EpisodeSettings(2000, queue_ttl_s=None))


@pytest.mark.parametrize(("until", "asked_at"), [
    (NEXT_EVENT, [10.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0, 800.0, 900.0, 1000.0]),
    (NEW_FIT, [10.0, 1000.0]),
])
def test_twin_defer__a_deferred_job_is_asked_again_as_its_rule_says(until: str, asked_at: list[float]) -> None:
    """Next-event asks at every tick; new-fit waits until the on-demand node frees, then asks."""
    twin = DigitalTwin(two_node_spec())
    twin.reset(np.random.default_rng(0))
    twin.place(1)  # big on the on-demand node
    times = []
    while not twin.done:
        assert twin.current_job is not None and twin.current_job.job_id == "lc"
        times.append(twin.time_s)
        if twin.can_place(1):
            twin.place(1)
        else:
            twin.defer(until)
    assert times == asked_at
    assert twin.job_status(1) == "completed"


def test_twin_defer__an_unknown_rule_is_refused_and_changes_nothing() -> None:
    """defer(until='later') raises ValueError naming the rules; the same job is still current."""
    twin = DigitalTwin(two_node_spec())
    twin.reset(np.random.default_rng(0))
    with pytest.raises(ValueError, match="next-event"):
        twin.defer("later")
    assert twin.current_job is not None and twin.current_job.job_id == "big"


@pytest.mark.parametrize("name", ["aco", "aco-reference", "aco-ema"])
@pytest.mark.parametrize(("scenario", "seeds"), [("fleet5-synthetic", range(3)), ("toy3", [0])])
def test_aco__declares_new_fit_and_plays_the_same_episode_with_fewer_decisions(
    name: str, scenario: str, seeds: range
) -> None:
    """Same actions at the same times and the same objective under both rules; fewer decisions."""
    assert agent_deferral(name) == NEW_FIT
    for seed in seeds:
        played = {}
        for deferral in (NEXT_EVENT, NEW_FIT):
            env = ClusterSchedulingEnv(scenario, config=EnvConfig(deferral=deferral))
            agent = make_agent(name, env)
            obs, _ = env.reset(seed=seed)
            agent.reset(seed)
            placements = []
            while True:
                action, _ = agent.predict(obs)
                if int(action) < env.n_nodes:
                    placements.append((env.unwrapped.cluster_view().time_s, env.cluster_view().job.job_id, int(action)))
                obs, _, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    break
            played[deferral] = (placements, info["episode_metrics"])
        assert played[NEW_FIT][0] == played[NEXT_EVENT][0]
        metrics_new, metrics_next = played[NEW_FIT][1], played[NEXT_EVENT][1]
        assert metrics_new["objective_usd"] == metrics_next["objective_usd"]
        assert metrics_new["decisions"] <= metrics_next["decisions"]


def test_agent_deferral__learned_models_and_heuristics_use_next_event() -> None:
    """Agents that do not declare a rule are asked after every event."""
    assert agent_deferral("first-fit") == NEXT_EVENT
    assert agent_deferral("oracle") == NEXT_EVENT


def test_env_config__an_unknown_deferral_is_refused() -> None:
    """EnvConfig(deferral='sometimes') raises ValueError naming the rules."""
    with pytest.raises(ValueError, match="new-fit"):
        EnvConfig(deferral="sometimes")
