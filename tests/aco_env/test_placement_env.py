"""The one-step placement env: exact known-optimal labels and regret."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import aco_env
from aco_env import EnvConfig
from aco_env.hindsight import scenario_of
from aco_env.placement import TIE_USD, PlacementEnv, apply, cheapest_fit, first_fit, rollout_objective
from aco_env.registration import FLEET5_ID, PLACEMENT_ID
from aco_env.render import RGB_SHAPE
from agents import make_agent
from digital_twin import NEW_FIT, DigitalTwin
from tests.paths import DATA

TIE_SEEDS = (20, 31, 80, 198, 201, 210)
"""Seeds whose decision state had actions tied for optimal (regret ~1e-15 before ties were exact)."""


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
        twin = DigitalTwin(scenario_of(env).make_spec(rng))
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
    env = gym.make(PLACEMENT_ID)
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


def test_placement_labels__ties_have_exactly_zero_regret_and_no_regret_is_negative() -> None:
    """Over 256 seeds: optimal actions have regret 0.0, all others more than TIE_USD, none below 0.

    On the default scenario and on its schema-1 form without contention (where ties are common:
    contention makes most outcomes differ).
    """
    ties = 0
    for scenario in ("fleet5-synthetic", str(DATA / "fleet5-synthetic-v1.yaml")):
        env = PlacementEnv(scenario)
        for seed in range(256):
            obs, info = env.reset(seed=seed)
            regret, optimal = info["regret_usd"], info["optimal_actions"]
            valid = np.flatnonzero(obs["action_mask"])
            assert all(regret[a] == 0.0 and not np.signbit(regret[a]) for a in optimal), seed
            assert all(regret[a] > TIE_USD for a in valid if a not in optimal), seed
            ties += len(optimal) > 1
    assert ties >= 3  # the property is exercised on real ties


@pytest.mark.parametrize("seed", TIE_SEEDS)
def test_placement_step__every_tied_optimal_action_earns_exactly_zero(seed: int) -> None:
    """Each optimal action's reward is +0.0 (never a -1e-15 rounding residue, never -0.0)."""
    env = gym.make(PLACEMENT_ID)
    _, info = env.reset(seed=seed)
    for action in info["optimal_actions"]:
        env.reset(seed=seed)
        _, reward, _, _, step_info = env.step(action)
        assert reward == 0.0 and not np.signbit(reward)
        assert step_info["episode_metrics"]["regret_usd"] == 0.0 and step_info["episode_metrics"]["optimal"] == 1.0


@pytest.mark.parametrize("render_mode", [None, "ansi", "rgb_array"])
def test_placement_env__takes_render_mode_like_the_other_ids(render_mode: str | None) -> None:
    """gym.make(..., render_mode=...) works; ansi gives the node table, rgb_array an image."""
    env = gym.make(PLACEMENT_ID, render_mode=render_mode)
    env.reset(seed=0)
    if render_mode is None:
        with pytest.warns(UserWarning, match="without a render_mode"):
            assert env.render() is None
        return
    frame = env.render()
    if render_mode == "ansi":
        assert isinstance(frame, str) and "node-gpu-05" in frame
    else:
        assert frame.shape == RGB_SHAPE and frame.dtype == np.uint8


def test_placement_env__rejects_an_unknown_render_mode() -> None:
    """An unsupported render_mode fails at construction, naming the supported ones."""
    with pytest.raises(ValueError, match="render_mode must be one of"):
        PlacementEnv(render_mode="human")


def test_placement_env__is_built_like_the_episode_env() -> None:
    """(scenario, config, render_mode, **config_overrides); the policies are keyword-only."""
    env = PlacementEnv("toy3", EnvConfig(queue_window=2), None, history_ticks=3, max_warmup_decisions=0)
    assert env.config == EnvConfig(queue_window=2, history_ticks=3) and env.max_warmup_decisions == 0
    episode_env = aco_env.ClusterSchedulingEnv("toy3", EnvConfig(queue_window=2, history_ticks=3))
    assert env.observation_space == episode_env.observation_space
    with pytest.raises(TypeError):
        PlacementEnv("toy3", None, None, 3)  # type: ignore[misc]  # max_warmup_decisions is keyword-only


def test_placement_labels__do_not_depend_on_the_deferral_rule() -> None:
    """The labels are the state's: the same whichever deferral rule the config names."""
    for seed in range(8):
        _, plain = PlacementEnv().reset(seed=seed)
        _, new_fit = PlacementEnv(deferral=NEW_FIT).reset(seed=seed)
        np.testing.assert_array_equal(plain["q_values_usd"], new_fit["q_values_usd"])


@pytest.mark.parametrize(("agent_name", "policy"), [("first-fit", first_fit), ("cheapest", cheapest_fit)])
def test_heuristic_agents__play_the_episodes_of_the_placement_envs_twin_policies(
    agent_name: str, policy: object
) -> None:
    """first-fit and cheapest agents and the twin policies share one rule: the same episodes."""
    env = gym.make(FLEET5_ID)
    agent = make_agent(agent_name, env)
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        agent.reset(seed=seed)
        placements = 0
        while True:
            action, _ = agent.predict(obs)
            placements += int(action) < env.unwrapped.n_nodes
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        rng = np.random.default_rng(seed)  # the env's generator for reset(seed)
        twin = DigitalTwin(scenario_of(env).make_spec(rng))
        twin.reset(rng)
        assert rollout_objective(twin, policy) == info["episode_metrics"]["objective_usd"] and placements > 10
