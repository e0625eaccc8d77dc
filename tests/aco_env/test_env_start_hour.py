"""``reset(options={"start_hour": h})``: the clock's hour of day changes, nothing else does."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aco_env import ClusterSchedulingEnv, PlacementEnv
from aco_env.observation import CLOCK_FEATURES

HOUR = [CLOCK_FEATURES.index("hour_sin"), CLOCK_FEATURES.index("hour_cos")]
OTHER_CLOCK = [i for i in range(len(CLOCK_FEATURES)) if i not in HOUR]


def _play(env: ClusterSchedulingEnv, seed: int, options: dict | None) -> list:
    """(observation, reward, times) of every step of a first-fit episode."""
    observation, info = env.reset(seed=seed, options=options)
    steps = [(observation, 0.0, info["sim_time_s"])]
    while True:
        action = int(np.flatnonzero(observation["action_mask"])[0])
        observation, reward, terminated, truncated, info = env.step(action)
        steps.append((observation, reward, info["sim_time_s"]))
        if terminated or truncated:
            return steps


def test_start_hour__moves_the_hour_features_and_nothing_else() -> None:
    env = ClusterSchedulingEnv("fleet5-synthetic")
    plain, shifted = _play(env, 3, None), _play(env, 3, {"start_hour": 18.5})
    assert len(plain) == len(shifted)
    for (obs, reward, now), (obs_h, reward_h, now_h) in zip(plain, shifted, strict=True):
        assert reward == reward_h and now == now_h
        for key in obs:
            if key != "clock":
                np.testing.assert_array_equal(obs[key], obs_h[key], err_msg=key)
        np.testing.assert_array_equal(obs["clock"][OTHER_CLOCK], obs_h["clock"][OTHER_CLOCK])
        angle = 2 * math.pi * ((18.5 * 3600 + now_h) % 86_400) / 86_400
        np.testing.assert_allclose(obs_h["clock"][HOUR], [math.sin(angle), math.cos(angle)], atol=1e-6)


def test_start_hour__lasts_one_episode() -> None:
    env = ClusterSchedulingEnv("fleet5-synthetic")
    first, _ = env.reset(seed=1)
    env.reset(seed=1, options={"start_hour": 2.0})
    again, _ = env.reset(seed=1)
    np.testing.assert_array_equal(first["clock"], again["clock"])


@pytest.mark.parametrize("env_class", [ClusterSchedulingEnv, PlacementEnv])
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"start_hr": 3}, "unknown key(s) ['start_hr']"),
        ({"start_hour": float("nan")}, "start_hour must be a finite number of hours, got nan"),
        ({"start_hour": "6"}, "start_hour must be a finite number of hours, got '6'"),
        ({"start_hour": True}, "start_hour must be a finite number of hours, got True"),
    ],
)
def test_start_hour__bad_options_are_refused_by_name(env_class: type, options: dict, message: str) -> None:
    env = env_class("toy3")
    with pytest.raises(ValueError, match="reset options: ") as raised:
        env.reset(seed=0, options=options)
    assert message in str(raised.value)


def test_placement_env__start_hour_sets_its_clock() -> None:
    env = PlacementEnv("fleet5-synthetic")
    observation, _ = env.reset(seed=0, options={"start_hour": 0.0})
    plain, _ = env.reset(seed=0)
    assert not np.array_equal(observation["clock"][HOUR], plain["clock"][HOUR])
    for key in observation:
        if key != "clock":
            np.testing.assert_array_equal(observation[key], plain[key], err_msg=key)
