"""The env on the workflow scenarios: the checkers pass, and random play keeps every release rule."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import aco_env  # noqa: F401  (registers the ids)
from aco_env.observation import JOB_FEATURES
from aco_env.registration import CLUSTER_SCHEDULING_ID
from tests.digital_twin.workflows.referee import check_episode
from tests.helpers import replayed_with_log
from tests.optional_extras import sb3_check_env

SCENARIOS = ("fleet5-workflows", "fleet20-workflows")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_workflow_scenario__passes_gymnasium_and_sb3_checkers(scenario: str) -> None:
    env = gym.make(CLUSTER_SCHEDULING_ID, scenario=scenario)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env.unwrapped)


@pytest.mark.parametrize("seed", range(3))
def test_random_play_through_the_env__keeps_the_release_rules(seed: int) -> None:
    """Random valid actions (defer included): the referee finds every rule kept, and tasks show as tasks."""
    env = gym.make(CLUSTER_SCHEDULING_ID, scenario="fleet5-workflows")
    rng = np.random.default_rng(seed)
    observation, _ = env.reset(seed=seed)
    tasks_seen = 0
    done = False
    while not done:
        tasks_seen += int(observation["job"][JOB_FEATURES.index("task")] == 1.0)
        action = int(rng.choice(np.flatnonzero(observation["action_mask"])))
        observation, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    hours, late = check_episode(replayed_with_log(env))
    assert tasks_seen > 0
    assert info["episode_metrics"]["workflow_hours"] == pytest.approx(hours, rel=1e-12)
    assert info["episode_metrics"]["late_workflows"] == late
