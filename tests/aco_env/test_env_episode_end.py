"""How episodes end: no step limit, the invalid-action safety net, and metrics on every final step."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import aco_env
from aco_env import EnvConfig
from aco_env.hindsight import scenario_of
from aco_env.registration import CLUSTER_SCHEDULING_ID, FLEET5_ID
from training.evaluation.rollout import play_episode

# About 160 jobs over an hour with no queue TTL and a 60 s telemetry tick: an agent that always
# defers is asked about every queued job at every event, some 17,000 decisions in all.
MANY_DECISIONS_YAML = """\
schema_version: 1
name: many-decisions
horizon_s: 3600
queue_ttl_s: null
fleet: {preset: default-5}
telemetry: {reader: constant, cpu_pct: 10, mem_pct: 10, tick_s: 60}
workload:
  source: synthetic
  resample: fixed
  options: {base_rate_per_s: 0.05, diurnal_amplitude: 0.0}
"""


class ConstantAgent:
    """An agent that always picks the same action, valid or not."""

    def __init__(self, action: int) -> None:
        self.action = action

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset."""
        del seed

    def predict(
        self, observation: dict, state: object = None, episode_start: object = None, deterministic: bool = True
    ) -> tuple[np.ndarray, None]:
        """The fixed action."""
        del observation, state, episode_start, deterministic
        return np.array(self.action), None


@pytest.fixture
def many_decisions(tmp_path: Path) -> str:
    """A scenario file on which always deferring takes more than 10,000 decisions."""
    path = tmp_path / "many-decisions.yaml"
    path.write_text(MANY_DECISIONS_YAML)
    return str(path)


def _invalid_action(env: gym.Env, obs: dict) -> int:
    """A node the current job does not fit on, else an index outside the action space."""
    invalid = np.flatnonzero(~obs["action_mask"].astype(bool))
    return int(invalid[0]) if invalid.size else env.action_space.n + 5


def test_registry__puts_no_step_limit_on_the_episodes() -> None:
    """No registered id wraps the env in a TimeLimit: the horizon ends every episode."""
    for env_id in (i for i in gym.registry if i.startswith("aco_env/")):
        assert gym.spec(env_id).max_episode_steps is None, env_id


def test_long_episode__runs_past_10000_decisions_to_its_horizon(many_decisions: str) -> None:
    """Through gym.make, an always-defer episode of >10,000 steps ends at the horizon with its metrics."""
    env = gym.make(CLUSTER_SCHEDULING_ID, scenario=many_decisions)
    env.reset(seed=0)
    defer = env.action_space.n - 1
    steps, total = 0, 0.0
    while True:
        _, reward, terminated, truncated, info = env.step(defer)
        steps, total = steps + 1, total + reward
        if terminated or truncated:
            break
    metrics = info["episode_metrics"]
    assert steps > 10_000 and truncated and not terminated
    assert metrics["decisions"] == steps and metrics["invalid_actions"] == 0
    assert metrics["sim_time_s"] == scenario_of(env).settings.horizon_s
    assert total == pytest.approx(-metrics["objective_usd"], rel=1e-9, abs=1e-9)


def test_invalid_streak__an_agent_that_always_errs_is_truncated_with_metrics() -> None:
    """Invalid actions forever end the episode, truncated, after the documented default streak."""
    env = gym.make(FLEET5_ID)
    obs, _ = env.reset(seed=0)
    steps = 0
    while True:
        obs, reward, terminated, truncated, info = env.step(_invalid_action(env, obs))
        steps += 1
        assert info["invalid_action"] and reward == pytest.approx(-EnvConfig().invalid_action_penalty_usd)
        if terminated or truncated:
            break
    assert truncated and not terminated and steps == EnvConfig().max_invalid_streak == 1000
    assert info["episode_metrics"]["invalid_actions"] == steps
    assert info["episode_metrics"]["invalid_action_rate"] == 1.0


def test_invalid_streak__a_valid_action_starts_the_count_again() -> None:
    """Only invalid actions in a row count: a valid one in between resets the streak."""
    env = gym.make(FLEET5_ID, max_invalid_streak=3)
    obs, _ = env.reset(seed=0)
    defer = env.action_space.n - 1
    flags = []
    for action in ("bad", "bad", defer, "bad", "bad", "bad"):
        obs, _, terminated, truncated, info = env.step(_invalid_action(env, obs) if action == "bad" else action)
        flags.append((terminated, truncated, "episode_metrics" in info))
    assert flags == [(False, False, False)] * 5 + [(False, True, True)]


@pytest.mark.parametrize("ending", ["truncated", "terminated"])
def test_step_after_the_end__raises_reset_needed(ending: str) -> None:
    """After the step that ends an episode (truncated or terminated), step() raises ResetNeeded; reset() plays again.

    A loop that watches only ``terminated`` stops with an error on a truncated episode instead of running forever.
    """
    truncating = ending == "truncated"
    env = gym.make(FLEET5_ID, max_invalid_streak=2) if truncating else gym.make(CLUSTER_SCHEDULING_ID, scenario="toy3")
    obs, _ = env.reset(seed=0)
    defer = env.action_space.n - 1
    flags = (False, False)
    steps = 0
    while not any(flags):
        action = _invalid_action(env, obs) if truncating else defer
        obs, _, *flags, _ = env.step(action)
        steps += 1
        assert steps < 100_000, "the episode did not end"
    assert flags == ([False, True] if truncating else [True, False])
    for _ in range(2):
        with pytest.raises(gym.error.ResetNeeded, match="episode is over"):
            env.step(defer)
    obs, _ = env.reset(seed=1)
    env.step(defer)  # a new episode plays


def test_strict_mode__has_no_streak_to_cut() -> None:
    """In raise mode every invalid action raises; the env never counts a streak."""
    env = gym.make(FLEET5_ID, invalid_action="raise", max_invalid_streak=1)
    env.reset(seed=0)
    for _ in range(3):
        with pytest.raises(aco_env.InvalidActionError):
            env.step(99)


@pytest.mark.parametrize("ending", ["terminated", "horizon", "invalid streak"])
def test_play_episode__takes_the_metrics_from_the_final_step(ending: str, many_decisions: str) -> None:
    """play_episode returns the env's own episode metrics however the episode ends."""
    scenario = {"terminated": "toy3", "horizon": many_decisions, "invalid streak": "fleet5-synthetic"}[ending]
    env = gym.make(CLUSTER_SCHEDULING_ID, scenario=scenario, max_invalid_streak=50)
    defer = env.action_space.n - 1
    result = play_episode(env, ConstantAgent(99 if ending == "invalid streak" else defer), seed=0)
    assert set(result.metrics) == set(aco_env.EPISODE_METRICS)
    assert result.metrics["decisions"] == len(result.decision_latency_ms)
    assert result.metrics["invalid_actions"] == (50 if ending == "invalid streak" else 0)
