"""Scenarios and envs pickle with the standard library, and an unpickled env plays the same episode.

What ``multiprocessing`` with the spawn method (``AsyncVectorEnv(context="spawn")``, SB3's
``SubprocVecEnv``) needs: every object crosses the process boundary by ``pickle``.
"""

from __future__ import annotations

import os
import pickle

import gymnasium as gym
import numpy as np
import pytest

import aco_env  # noqa: F401  (registers the ids)
import scenarios
from aco_env.registration import FLEET5_ID
from digital_twin.scenario import Scenario, load_scenario

REAL = "fleet5-alibaba2018"


def roundtrip(value: object) -> object:
    return pickle.loads(pickle.dumps(value))


def assert_same_spec(one: Scenario, other: Scenario, seed: int) -> None:
    """Both scenarios give the same episode inputs for ``seed``."""
    a, b = one.make_spec(np.random.default_rng(seed)), other.make_spec(np.random.default_rng(seed))
    assert a.fleet == b.fleet and a.jobs == b.jobs and a.settings == b.settings
    np.testing.assert_array_equal(a.telemetry.background_pct, b.telemetry.background_pct)


@pytest.mark.parametrize(  # the largest fleets take seconds of CPU to load: the rest layer
    "name", [pytest.param(n, marks=pytest.mark.heavy) if "500" in n or "4278" in n else n for n in scenarios.names()]
)
def test_scenario__pickles_before_and_after_loading_its_data(name: str) -> None:
    """A bundled scenario round-trips unloaded (still lazy) and loaded (with its cached data)."""
    scenario = scenarios.load(name)
    unloaded = roundtrip(scenario)
    assert isinstance(unloaded, Scenario) and unloaded.missing_data() == scenario.missing_data()
    if scenario.missing_data():
        pytest.skip(f"data not present: {scenario.missing_data()[0]}")
    assert "telemetry" not in vars(unloaded)  # nothing was read to pickle it
    assert_same_spec(scenario, unloaded, seed=3)
    loaded = roundtrip(scenario)
    assert "telemetry" in vars(loaded)
    assert_same_spec(scenario, loaded, seed=3)


def test_scenario__real_data_scenario_pickles_and_reports_missing_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real-trace scenario pickles; without the data it still reports it as missing, not raises."""
    if os.environ.get("ACO_ENV_TRACES"):
        scenario = scenarios.load(REAL)
        if not scenario.missing_data():
            assert_same_spec(scenario, roundtrip(scenario), seed=0)
    monkeypatch.delenv("ACO_ENV_TRACES", raising=False)
    absent = roundtrip(load_scenario(scenarios.path_of(REAL)))
    assert absent.missing_data()


def _play(env: gym.Env, seed: int, steps: int) -> tuple[list, list[float], float]:
    """Observations, rewards and final objective of ``steps`` steps with seeded valid actions."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    observations, rewards = [obs], []
    for _ in range(steps):
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        obs, reward, terminated, truncated, info = env.step(action)
        observations.append(obs)
        rewards.append(float(reward))
        if terminated or truncated:
            break
    return observations, rewards, info["objective"]["objective_usd"]


def _assert_same_play(one: tuple, other: tuple) -> None:
    assert len(one[0]) == len(other[0])
    for a, b in zip(one[0], other[0], strict=True):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    assert one[1] == other[1] and one[2] == other[2]


@pytest.mark.parametrize("when", ["fresh", "mid-episode"])
def test_env__unpickled_copy_plays_the_identical_episode(when: str) -> None:
    """pickle.dumps(env.unwrapped) works, and the copy gives the same observations, rewards, objective."""
    env = gym.make(FLEET5_ID).unwrapped
    if when == "mid-episode":
        _play(env, seed=5, steps=7)
    copy = roundtrip(env)
    _assert_same_play(_play(env, seed=11, steps=60), _play(copy, seed=11, steps=60))


def _make_env() -> gym.Env:
    return gym.make(FLEET5_ID)


@pytest.mark.subprocess
def test_async_vector_env__spawn_context_steps() -> None:
    """AsyncVectorEnv with the spawn start method (everything pickled) resets and steps 2 envs."""
    envs = gym.vector.AsyncVectorEnv([_make_env, _make_env], context="spawn")
    try:
        obs, _ = envs.reset(seed=[0, 1])
        for _ in range(5):
            actions = np.array([int(np.flatnonzero(mask)[0]) for mask in obs["action_mask"]])
            obs, rewards, _, _, _ = envs.step(actions)
        assert rewards.shape == (2,) and np.isfinite(rewards).all()
    finally:
        envs.close()
