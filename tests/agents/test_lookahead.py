"""The online reference: ``known_spec`` and ``known_twin`` hold the past alone; the lookahead plans from them."""

from __future__ import annotations

import numpy as np
import pytest

from aco_env import ClusterSchedulingEnv
from aco_env import hindsight as hindsight_module
from aco_env.hindsight import hindsight_of
from agents import make_agent
from agents.lookahead import LookaheadAgent, sample_future
from agents.rollouts import action_objectives, take
from digital_twin import DigitalTwin
from tests.paths import ROOT


def _decisions(env: ClusterSchedulingEnv, seed: int, stops: int) -> list[tuple[str, int]]:
    """Play random valid actions; at ``stops`` decisions check a twin on ``known_spec`` replays to the same state."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    log: list[tuple[str, int]] = []
    checked = 0
    done = False
    while not done:
        view = env.cluster_view()
        assert view.job is not None
        if rng.random() < 0.3:
            _check_known_spec(env, log)
            checked += 1
        valid = np.flatnonzero(obs["action_mask"])
        action = int(valid[int(rng.integers(len(valid)))])
        log.append((view.job.job_id, action))
        obs, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    assert checked >= stops
    return log


def _check_known_spec(env: ClusterSchedulingEnv, log: list[tuple[str, int]]) -> None:
    view = env.cluster_view()
    known = env.known_spec()
    real = hindsight_of(env)
    # Nothing of the future: no later arrival, no later interruption, the background held after now.
    assert all(job.arrival_s <= view.time_s for job in known.jobs)
    assert len(known.jobs) == sum(job.arrival_s <= view.time_s for job in real.spec.jobs)
    assert known.fixed_interruptions_s is not None
    for times, real_times in zip(known.fixed_interruptions_s, real.interruptions_s, strict=True):
        assert times == tuple(t for t in real_times if t <= view.time_s)
    background = known.telemetry.background_pct
    assert np.array_equal(background[: view.tick_index + 1], real.spec.telemetry.background_pct[: view.tick_index + 1])
    assert (background[view.tick_index + 1 :] == background[view.tick_index]).all()
    # The past replays to the present.
    twin = DigitalTwin(known)
    twin.reset(np.random.default_rng(0))
    for job_id, action in log:
        job = twin.current_job
        assert job is not None and job.job_id == job_id
        if action == env.n_nodes:
            twin.defer(env.config.deferral)
        else:
            twin.place(action)
    assert twin.current_job is not None and view.job is not None
    assert twin.current_job.job_id == view.job.job_id and twin.time_s == view.time_s
    assert twin.objective_usd() == pytest.approx(env.episode_metrics()["objective_usd"], abs=1e-12)
    assert twin.feasible_mask() == view.action_mask[:-1].tolist()
    # The known twin stands there too, without the replay, and knows no more than the known spec.
    present = env.known_twin()
    assert tuple(present.spec.jobs) == tuple(known.jobs) and present.hindsight().interruptions_s == tuple(
        known.fixed_interruptions_s
    )
    assert present.objective_dict() == twin.objective_dict()
    past_mix = "gpu_fragmentation_rate"  # weighed by the spec's whole job mix: the known twin's past, the episode's
    assert {k: v for k, v in present.metrics().items() if k != past_mix} == {
        k: v for k, v in twin.metrics().items() if k != past_mix
    }
    assert present.current_job == twin.current_job and present.feasible_mask() == twin.feasible_mask()


@pytest.mark.parametrize("scenario", ["fleet5-synthetic", "toy3"])
def test_known_spec__holds_the_past_only_and_replays_to_the_present(scenario: str) -> None:
    env = ClusterSchedulingEnv(scenario)
    for seed in (0, 1):
        _decisions(env, seed, stops=1)


def test_sample_future__adds_only_later_arrivals_and_interruptions() -> None:
    env = ClusterSchedulingEnv("fleet5-synthetic")
    env.reset(seed=3)
    for _ in range(20):
        env.step(env.n_nodes)
    view, known = env.cluster_view(), env.known_spec()
    sampled = sample_future(known, view.time_s, np.random.default_rng(0))
    assert tuple(sampled.jobs)[: len(known.jobs)] == tuple(known.jobs)
    later = tuple(sampled.jobs)[len(known.jobs) :]
    assert later and all(view.time_s < job.arrival_s < sampled.settings.horizon_s for job in later)
    assert sampled.fixed_interruptions_s is not None and known.fixed_interruptions_s is not None
    for times, past in zip(sampled.fixed_interruptions_s, known.fixed_interruptions_s, strict=True):
        assert times[: len(past)] == past and all(t > view.time_s for t in times[len(past) :])
    again = sample_future(known, view.time_s, np.random.default_rng(0))  # seeded: the same future
    assert tuple(again.jobs) == tuple(sampled.jobs) and again.fixed_interruptions_s == sampled.fixed_interruptions_s
    until = view.time_s + 1800.0  # a windowed rollout's future: arrivals in its window only
    windowed = tuple(sample_future(known, view.time_s, np.random.default_rng(0), until).jobs)[len(known.jobs) :]
    assert windowed and all(view.time_s < job.arrival_s < until for job in windowed)


def _play(env: ClusterSchedulingEnv, agent: LookaheadAgent, seed: int) -> tuple[list[int], float]:
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    actions, done, info = [], False, {}
    while not done:
        action = int(agent.predict(obs)[0])
        actions.append(action)
        obs, _, terminated, truncated, info = env.step(action)
        assert not info["invalid_action"]
        done = terminated or truncated
    return actions, float(info["episode_metrics"]["objective_usd"])


def test_lookahead__plays_valid_repeatable_episodes_without_hindsight(monkeypatch: pytest.MonkeyPatch) -> None:
    env = ClusterSchedulingEnv("toy3")

    def no_hindsight(*args: object) -> None:
        raise AssertionError("the lookahead agent read the future")

    monkeypatch.setattr(hindsight_module, "_twin_env", no_hindsight)  # every accessor of the future
    agent = make_agent("lookahead", env, samples=2)
    assert isinstance(agent, LookaheadAgent)
    first = _play(env, agent, seed=5)
    assert _play(env, agent, seed=5) == first


def test_lookahead__checks_its_options() -> None:
    with pytest.raises(ValueError, match="samples"):
        LookaheadAgent(ClusterSchedulingEnv("toy3"), samples=0)


def test_lookahead__plans_from_states_other_policies_reached() -> None:
    """It continues the env's present, so steps someone else took are part of its past."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    agent = LookaheadAgent(env, samples=1)
    obs, _ = env.reset(seed=2)
    agent.reset(2)
    for _ in range(12):
        obs, *_ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))  # first fit, not the agent
    assert len(env.decisions()) == 12
    assert env.action_masks()[int(agent.predict(obs)[0])]


def _replayed_totals(env: ClusterSchedulingEnv, samples: int, rng: np.random.Generator) -> dict[int | None, float]:
    """The per-action totals the slow way: a twin per sampled future, reset, given the episode's decisions."""
    view, known = env.cluster_view(), env.known_spec()
    actions: list[int | None] = [*np.flatnonzero(view.action_mask[:-1]).tolist(), None]
    totals = np.zeros(len(actions))
    for _ in range(samples):
        twin = DigitalTwin(sample_future(known, view.time_s, rng))
        twin.reset(np.random.default_rng(0))
        for _, node in env.decisions():
            take(twin, node, env.config.deferral)
        totals += action_objectives(twin, actions, env.config.deferral)
    return dict(zip(actions, totals.tolist(), strict=True))


@pytest.mark.parametrize("scenario", ["fleet5-synthetic", str(ROOT / "tests/data/fleet5-contention.yaml")])
def test_lookahead__continuing_the_present_gives_the_replays_totals(scenario: str) -> None:
    """At decisions along random play (defers included), its totals are those of replaying the past, bit for bit."""
    env = ClusterSchedulingEnv(scenario)
    agent = LookaheadAgent(env, samples=2)
    for seed in (0, 1):
        obs, _ = env.reset(seed=seed)
        agent.reset(seed)
        play = np.random.default_rng(seed)
        for step in range(40):
            if step % 8 == 3:
                assert agent.rollout_totals() == _replayed_totals(env, 2, np.random.default_rng(seed))
                agent.reset(seed)  # the same generator again: the same sampled futures
            valid = np.flatnonzero(obs["action_mask"])
            obs, _, terminated, truncated, _ = env.step(int(valid[int(play.integers(len(valid)))]))
            if terminated or truncated:
                break
