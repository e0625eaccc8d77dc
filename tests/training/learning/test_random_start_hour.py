"""Training at random hours of day: seeded, varied, and leaving the episodes otherwise unchanged."""

from __future__ import annotations

import numpy as np

from aco_env import ClusterSchedulingEnv
from aco_env.observation import CLOCK_FEATURES
from training.learning.random_start_hour import RandomStartHour, episode_start_hour

HOUR = [CLOCK_FEATURES.index("hour_sin"), CLOCK_FEATURES.index("hour_cos")]


def _first_clocks(env, seed: int, episodes: int) -> list[np.ndarray]:
    """The first observation's clock of ``episodes`` episodes: one seeded reset, then unseeded ones."""
    clocks = [env.reset(seed=seed)[0]["clock"]]
    clocks += [env.reset()[0]["clock"] for _ in range(episodes - 1)]
    return clocks


def test_episode_start_hour__is_seeded_and_spreads_over_the_day() -> None:
    hours = [episode_start_hour(seed) for seed in range(400)]
    assert hours == [episode_start_hour(seed) for seed in range(400)]
    assert all(0.0 <= hour < 24.0 for hour in hours)
    assert np.histogram(hours, bins=4, range=(0, 24))[0].min() > 70  # every quarter of the day is drawn


def test_wrapper__same_seed_same_hours_and_other_hours_each_episode() -> None:
    first = _first_clocks(RandomStartHour(ClusterSchedulingEnv("toy3")), 5, 6)
    again = _first_clocks(RandomStartHour(ClusterSchedulingEnv("toy3")), 5, 6)
    np.testing.assert_array_equal(np.stack(first), np.stack(again))
    assert len({tuple(clock[HOUR]) for clock in first}) == 6


def test_wrapper__changes_only_the_clock_hour() -> None:
    plain, _ = ClusterSchedulingEnv("fleet5-synthetic").reset(seed=2)
    wrapped, _ = RandomStartHour(ClusterSchedulingEnv("fleet5-synthetic")).reset(seed=2)
    for key in plain:
        if key != "clock":
            np.testing.assert_array_equal(plain[key], wrapped[key], err_msg=key)
    assert not np.array_equal(plain["clock"][HOUR], wrapped["clock"][HOUR])


def test_training_envs__randomise_the_hour_when_the_config_says_so() -> None:
    import scenarios
    from training.learning.config import TrainConfig
    from training.learning.training_envs import make_env_fn

    def wrappers(random_start_hour: bool) -> list[type]:
        env, found = make_env_fn(TrainConfig(random_start_hour=random_start_hour), scenarios.load("toy3"), 0, 0)(), []
        while hasattr(env, "env"):
            found.append(type(env))
            env = env.env
        return found

    assert RandomStartHour in wrappers(True)
    assert RandomStartHour not in wrappers(False)
