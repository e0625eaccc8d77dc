"""The one-step placement env: exact known-optimal labels and regret."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import aco_env  # noqa: F401  (registers the ids)
from aco_env import EnvConfig
from aco_env.placement import PlacementEnv, apply, cheapest_fit, rollout_objective
from digital_twin import DigitalTwin


@pytest.mark.parametrize("seed", range(6))
def test_placement_labels__optimal_actions_have_zero_regret_and_match_rollouts(seed: int) -> None:
    """Q-values are finite exactly for valid actions, min regret is 0, and a Q recomputes exactly."""
    env = PlacementEnv("fleet5-synthetic")
    obs, info = env.reset(seed=seed)
    q, regret, mask = info["q_values_usd"], info["regret_usd"], obs["action_mask"].astype(bool)
    np.testing.assert_array_equal(np.isfinite(q), mask)
    assert info["optimal_actions"] and all(regret[a] == 0.0 for a in info["optimal_actions"])
    assert (regret[mask] >= 0).all()
    # Recompute one action's Q independently: rebuild the same episode and replay warm-up + action.
    action = int(np.flatnonzero(mask)[-1])
    twin = _rebuild(env, seed)
    apply(twin, None if action == env.n_nodes else action)
    assert rollout_objective(twin, cheapest_fit) == pytest.approx(q[action], abs=1e-12)


def _rebuild(env: PlacementEnv, seed: int) -> DigitalTwin:
    """The decision state of ``env.reset(seed)``, rebuilt from the same generator sequence."""
    probe = PlacementEnv("fleet5-synthetic")
    probe.reset(seed=seed)
    rng = np.random.default_rng(seed)
    while True:
        twin = DigitalTwin(env.scenario.make_spec(rng))
        twin.reset(rng)
        warmup = int(rng.integers(0, env.max_warmup_decisions + 1))
        played = 0
        while played < warmup and not twin.done:
            apply(twin, cheapest_fit(twin))
            played += 1
        if not twin.done:
            return twin


def test_placement_step__reward_is_minus_regret_and_the_episode_ends() -> None:
    """Each action earns -regret; the episode terminates after one step with the metrics."""
    env = gym.make("aco_env/Placement-v0")
    obs, info = env.reset(seed=11)
    for action in np.flatnonzero(obs["action_mask"]):
        env.reset(seed=11)
        _, reward, terminated, truncated, step_info = env.step(int(action))
        assert reward == pytest.approx(-info["regret_usd"][action])
        assert terminated and not truncated
        assert step_info["episode_metrics"]["optimal"] == float(int(action) in info["optimal_actions"])


def test_placement_step__invalid_action_is_penalised() -> None:
    """An action outside the mask earns the invalid-action penalty and counts as not optimal."""
    env = PlacementEnv("fleet5-synthetic", config=EnvConfig(queue_window=2))
    for seed in range(50):
        obs, _ = env.reset(seed=seed)
        invalid = [i for i, ok in enumerate(obs["action_mask"]) if not ok]
        if invalid:
            break
    else:
        pytest.fail("no state with an invalid action in 50 seeds")
    _, reward, terminated, _, info = env.step(invalid[0])
    assert reward == pytest.approx(-env.config.invalid_action_penalty_usd) and terminated
    assert info["invalid_action"] and info["episode_metrics"]["optimal"] == 0.0
