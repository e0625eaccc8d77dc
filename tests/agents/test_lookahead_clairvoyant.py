"""The clairvoyant lookahead: exact about the true future, deterministic, valid, and registered as hindsight."""

from __future__ import annotations

import numpy as np
import pytest

from aco_env import ClusterSchedulingEnv
from aco_env import hindsight as hindsight_module
from agents import is_hindsight_agent, make_agent
from agents.base import registered_agent
from agents.lookahead_clairvoyant import ClairvoyantLookaheadAgent
from agents.rollouts import cheapest_charge
from tests.paths import ROOT

SCENARIOS = ("toy3", "fleet5-synthetic", str(ROOT / "tests/data/fleet5-contention.yaml"))


def _play(
    env: ClusterSchedulingEnv, agent: ClairvoyantLookaheadAgent, seed: int, agent_seed: int
) -> tuple[list[int], float]:
    obs, _ = env.reset(seed=seed)
    agent.reset(agent_seed)
    actions, done, info = [], False, {}
    while not done:
        action = int(agent.predict(obs)[0])
        assert env.action_masks()[action]
        actions.append(action)
        obs, _, terminated, truncated, info = env.step(action)
        assert not info["invalid_action"]
        done = terminated or truncated
    return actions, float(info["episode_metrics"]["objective_usd"])


def _follow_the_rollout_rule(env: ClusterSchedulingEnv, action: int) -> float:
    """Take ``action``, then play to the end by the rollout rule (read off the known twin); the final objective."""
    _, _, terminated, truncated, info = env.step(action)
    done = terminated or truncated
    while not done:
        node = cheapest_charge(env.known_twin())
        _, _, terminated, truncated, info = env.step(env.n_nodes if node is None else node)
        assert not info["invalid_action"]
        done = terminated or truncated
    return float(info["episode_metrics"]["objective_usd"])


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_clairvoyant__its_rollout_objective_is_the_true_final_objective(scenario: str) -> None:
    """After its action, the episode played by the rollout rule ends at the objective it rolled out, bit for bit."""
    env = ClusterSchedulingEnv(scenario)
    agent = ClairvoyantLookaheadAgent(env)
    checked = 0
    for seed in range(3):
        for stop in (0, 2, 11):  # random play to a decision (defers included), the agent's action, the rule
            obs, _ = env.reset(seed=seed)
            play, ended = np.random.default_rng(seed), False
            for _ in range(stop):
                valid = np.flatnonzero(obs["action_mask"])
                obs, _, terminated, truncated, _ = env.step(int(valid[int(play.integers(len(valid)))]))
                ended = terminated or truncated
                if ended:
                    break
            if ended:
                continue
            checked += 1
            totals = agent.rollout_totals()
            action = int(agent.predict(obs)[0])
            chosen = None if action == env.n_nodes else action
            assert totals[chosen] == min(totals.values())
            assert _follow_the_rollout_rule(env, action) == totals[chosen]
    assert checked >= 6


def test_clairvoyant__deterministic_and_valid_whatever_its_seed() -> None:
    """The same episode gives the same actions under any agent seed (nothing is sampled); every action is valid."""
    env = ClusterSchedulingEnv("fleet5-synthetic")
    agent = make_agent("lookahead-clairvoyant", env)
    assert isinstance(agent, ClairvoyantLookaheadAgent)
    first = _play(env, agent, seed=7, agent_seed=0)
    assert _play(env, agent, seed=7, agent_seed=123) == first
    assert _play(env, agent, seed=8, agent_seed=0) != first


def test_clairvoyant__is_a_hindsight_agent_and_reads_the_future_through_hindsight_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Registered as hindsight (as the oracle, unlike the online lookahead); without aco_env.hindsight, no plan."""
    assert registered_agent("lookahead-clairvoyant").hindsight and is_hindsight_agent("lookahead-clairvoyant")
    assert is_hindsight_agent("oracle") and not is_hindsight_agent("lookahead") and not is_hindsight_agent("sb3:x")
    env = ClusterSchedulingEnv("toy3")
    agent = ClairvoyantLookaheadAgent(env)
    obs, _ = env.reset(seed=0)

    def no_hindsight(*args: object) -> None:
        raise AssertionError("hindsight read")

    monkeypatch.setattr(hindsight_module, "_twin_env", no_hindsight)  # every accessor of aco_env.hindsight
    with pytest.raises(AssertionError, match="hindsight"):
        agent.predict(obs)
