"""The Gymnasium contract for every registered id, rewards, determinism, invalid actions, rendering."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import aco_env
import scenarios
from aco_env import ClusterSchedulingEnv, EnvConfig, InvalidActionError
from aco_env.hindsight import hindsight_of
from aco_env.registration import CLUSTER_SCHEDULING_ID, ENV_IDS, FLEET5_ID, PLACEMENT_ID
from aco_env.render import RGB_SHAPE
from digital_twin.objective import USD_KEYS
from tests.optional_extras import sb3_check_env
from tests.toy3 import TOY3_ACTIONS

ACO_ENV_IDS = sorted(env_id for env_id in gym.registry if env_id.startswith("aco_env/"))


def _skip_without_data(env_id: str) -> None:
    scenario = gym.spec(env_id).kwargs.get("scenario")
    if scenario is None:
        return
    try:
        missing = scenarios.load(scenario).missing_data()
    except ValueError as exc:  # e.g. ACO_ENV_TRACES unset
        pytest.skip(f"{env_id}: {exc}")
    if missing:
        pytest.skip(f"{env_id}: data not present ({missing[0]})")


def play(env: gym.Env, seed: int, policy_seed: int = 0) -> tuple[float, dict, int]:
    """Random valid actions to the end; returns (return, final info, steps)."""
    rng = np.random.default_rng(policy_seed)
    env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        mask = env.unwrapped.action_masks()
        _, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        total += reward
        steps += 1
        if terminated or truncated:
            return total, info, steps


@pytest.mark.parametrize(
    "env_id", [pytest.param(i, marks=pytest.mark.heavy) if "500" in i else i for i in ACO_ENV_IDS]  # 500 nodes: seconds
)
def test_registered_env__passes_gymnasium_and_sb3_checkers(env_id: str) -> None:
    """Gymnasium's and SB3's check_env accept every registered id (data-backed ones when present)."""
    _skip_without_data(env_id)
    env = gym.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env.unwrapped)


def test_registry__covers_the_issue_ids() -> None:
    """The default, the scenario-parameterised and the one-step ids exist."""
    assert {FLEET5_ID, CLUSTER_SCHEDULING_ID, PLACEMENT_ID} <= set(ACO_ENV_IDS)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("scale", [1.0, 25.0])
def test_return__equals_minus_the_episode_objective(seed: int, scale: float) -> None:
    """The sum of rewards is exactly -objective * reward_scale (no invalid actions taken)."""
    env = gym.make(FLEET5_ID, reward_scale=scale)
    total, info, _ = play(env, seed)
    metrics = info["episode_metrics"]
    assert total == pytest.approx(-metrics["objective_usd"] * scale, rel=1e-9, abs=1e-9)
    assert metrics["objective_usd"] == pytest.approx(sum(metrics[key] for key in USD_KEYS))
    assert set(metrics) == set(aco_env.EPISODE_METRICS)


@pytest.mark.smoke
def test_toy3_through_the_env__return_is_the_hand_computed_objective() -> None:
    """The toy's scripted decisions through the env give return -(0.435 + 1.5)."""
    env = gym.make(CLUSTER_SCHEDULING_ID, scenario="toy3")
    env.reset(seed=0)
    total = 0.0
    for action in TOY3_ACTIONS:
        _, reward, terminated, truncated, _ = env.step(3 if action is None else action)
        total += reward
    assert terminated and not truncated
    assert total == pytest.approx(-1.935, abs=1e-12)


def test_same_seed_and_actions__give_identical_trajectories() -> None:
    """Two runs with the same seed and action stream match observation for observation."""
    runs = []
    for _ in range(2):
        env = gym.make(FLEET5_ID)
        obs, _ = env.reset(seed=7)
        rng = np.random.default_rng(3)
        trajectory = [obs]
        while True:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            obs, reward, terminated, truncated, _ = env.step(action)
            trajectory.append((obs, reward))
            if terminated or truncated:
                break
        runs.append(trajectory)
    assert len(runs[0]) == len(runs[1])
    for a, b in zip(runs[0][1:], runs[1][1:], strict=True):
        assert a[1] == b[1]
        for key in a[0]:
            np.testing.assert_array_equal(a[0][key], b[0][key])


def test_different_seeds__give_different_episodes() -> None:
    """The per-episode workload depends on the seed."""
    env = gym.make(FLEET5_ID)
    env.reset(seed=1)
    first = [j.job_id + str(j.arrival_s) for j in hindsight_of(env).jobs]
    env.reset(seed=2)
    assert first != [j.job_id + str(j.arrival_s) for j in hindsight_of(env).jobs]


def test_invalid_action__penalty_mode_keeps_the_job_and_state() -> None:
    """An invalid action costs exactly the documented penalty and changes nothing else."""
    env = gym.make(FLEET5_ID, reward_scale=2.0, invalid_action_penalty_usd=0.3)
    obs, _ = env.reset(seed=0)
    invalid = [i for i, ok in enumerate(obs["action_mask"]) if not ok] or [99]
    for action in (invalid[0], 99, -1, "x"):
        after, reward, terminated, truncated, info = env.step(action)
        assert reward == pytest.approx(-0.6)
        assert info["invalid_action"] and not terminated and not truncated
        for key in obs:
            np.testing.assert_array_equal(after[key], obs[key])
    assert env.unwrapped.episode_metrics()["invalid_actions"] == 4


@pytest.mark.smoke
def test_invalid_action__strict_mode_raises_and_changes_nothing() -> None:
    """In raise mode an invalid action raises InvalidActionError; the env continues as before."""
    env = ClusterSchedulingEnv("fleet5-synthetic", config=EnvConfig(invalid_action="raise"))
    obs, _ = env.reset(seed=0)
    before = env.cluster_view()
    bad = next((i for i, ok in enumerate(obs["action_mask"]) if not ok), 6)
    with pytest.raises(InvalidActionError, match="strict mode"):
        env.step(bad)
    after = env.cluster_view()
    assert after.time_s == before.time_s and after.job == before.job
    np.testing.assert_array_equal(after.free_cpu_cores, before.free_cpu_cores)
    env.step(int(np.flatnonzero(obs["action_mask"])[0]))  # a valid action still works


def test_observations__stay_inside_the_observation_space() -> None:
    """Every observation of a random episode is contained in the declared space."""
    env = gym.make(FLEET5_ID)
    obs, _ = env.reset(seed=5)
    rng = np.random.default_rng(0)
    while True:
        assert env.observation_space.contains(obs), {k: v for k, v in obs.items()}
        obs, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        if terminated or truncated:
            assert env.observation_space.contains(obs)
            break


def test_render__ansi_text_and_rgb_array_shape() -> None:
    """ansi gives a node table; rgb_array gives a (480, 800, 3) uint8 image."""
    text_env = gym.make(FLEET5_ID, render_mode="ansi")
    text_env.reset(seed=0)
    text = text_env.render()
    assert isinstance(text, str) and "node-gpu-05" in text and "objective so far" in text
    image_env = gym.make(FLEET5_ID, render_mode="rgb_array")
    image_env.reset(seed=0)
    image = image_env.render()
    assert image.shape == RGB_SHAPE and image.dtype == np.uint8 and image.std() > 0


@pytest.mark.subprocess
def test_import_aco_env__does_not_import_torch_or_sb3() -> None:
    """`import aco_env` (and gym.make of the default id) stays free of torch and SB3."""
    code = (
        "import sys, gymnasium as gym, aco_env; env = gym.make('aco_env/Fleet5-v6'); env.reset(seed=0); "
        "print([m for m in ('torch', 'stable_baselines3', 'sb3_contrib') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


def test_registry__is_the_registration_modules_ids() -> None:
    """Exactly the ids of aco_env.registration are registered, one version of each."""
    assert sorted(ENV_IDS) == ACO_ENV_IDS
    names = [env_id.rsplit("-v", 1)[0] for env_id in ENV_IDS]
    assert len(set(names)) == len(names)


OLD_IDS = [
    (f"{name}-v{old}", env_id)
    for env_id in ENV_IDS
    for name, version in [env_id.rsplit("-v", 1)]
    for old in range(int(version))
]


@pytest.mark.parametrize(("old_id", "new_id"), OLD_IDS)
def test_registry__an_older_version_fails_naming_the_current_id(old_id: str, new_id: str) -> None:
    """gym.make of an older version raises Gymnasium's DeprecatedEnv, whose message names the id to use."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # gymnasium also warns "out of date"
        with pytest.raises(gym.error.DeprecatedEnv, match=f"Please use `{new_id}` instead"):
            gym.make(old_id)
