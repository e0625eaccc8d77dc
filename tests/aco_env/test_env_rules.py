"""The env on the placement-rules scenario: the checkers pass, and random play through the mask never breaks a rule."""

from __future__ import annotations

import dataclasses
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import aco_env  # noqa: F401  (registers the ids)
from aco_env.registration import CLUSTER_SCHEDULING_ID
from digital_twin import DigitalTwin
from tests.digital_twin.placement.reference import judge_log
from tests.optional_extras import sb3_check_env

SCENARIO = "fleet30-rules"


def test_rules_scenario__passes_gymnasium_and_sb3_checkers() -> None:
    env = gym.make(CLUSTER_SCHEDULING_ID, scenario=SCENARIO)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env.unwrapped)


@pytest.mark.parametrize("seed", range(4))
def test_random_play_through_the_env__never_breaks_a_required_rule(seed: int) -> None:
    """Random valid actions (defer included); the episode, replayed in a recording twin, is judged from its log."""
    env = gym.make(CLUSTER_SCHEDULING_ID, scenario=SCENARIO)
    rng = np.random.default_rng(seed)
    observation, _ = env.reset(seed=seed)
    done = False
    while not done:
        action = int(rng.choice(np.flatnonzero(observation["action_mask"])))
        observation, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    played = env.unwrapped._require_twin()
    spec = dataclasses.replace(played.spec, fixed_interruptions_s=played._s.outages.interruptions_s)
    twin = DigitalTwin(spec, record_events=True)
    twin.reset(np.random.default_rng(0))
    for job_id, node in played.decisions():
        assert twin.current_job is not None and twin.current_job.job_id == job_id
        if node is None:
            twin.defer(env.unwrapped.config.deferral)
        else:
            twin.place(node)
    assert twin.objective() == played.objective()
    broken, weight, starts = judge_log(spec, twin.event_log)
    assert starts > 100 and broken == []
    assert info["episode_metrics"]["preference_violations"] == pytest.approx(weight, abs=1e-9)


def test_the_view_shows_what_each_placement_would_count_in_preferences() -> None:
    """At every decision, ``ClusterView.preference_weight[node]`` is the step's rise of the preferences count."""
    env = gym.make(CLUSTER_SCHEDULING_ID, scenario=SCENARIO)
    rng = np.random.default_rng(5)
    observation, _ = env.reset(seed=5)
    twin = env.unwrapped._require_twin()
    done, checked = False, 0
    while not done:
        view = env.unwrapped.cluster_view()
        valid = np.flatnonzero(observation["action_mask"][:-1])
        node = int(rng.choice(valid))
        before = twin.objective()["preference_violations"]
        observation, _, terminated, truncated, _ = env.step(node)
        assert twin.objective()["preference_violations"] - before == pytest.approx(view.preference_weight[node])
        checked += view.preference_weight[node] > 0
        done = terminated or truncated
    assert checked > 20
