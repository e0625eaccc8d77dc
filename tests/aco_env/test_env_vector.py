"""Vector envs: the vector-friendly info, and the batched env's episodes (those of B single envs)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import aco_env  # noqa: F401  (registers the ids)
from aco_env import ClusterSchedulingEnv
from aco_env.registration import FLEET5_ID
from aco_env.types import COMMITTED_COST, UNSHAPED
from aco_env.vector_env import BatchedClusterEnv


def _play(env: ClusterSchedulingEnv, seed: int, rng: np.random.Generator) -> list[tuple]:
    """One episode of random valid actions: every step's observation, reward, flags and info."""
    obs, info = env.reset(seed=seed)
    steps: list[tuple] = [(obs, info)]
    while True:
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        steps.append((obs, reward, terminated, truncated, info))
        if terminated or truncated:
            return steps


@pytest.mark.parametrize("name", ["fleet5-synthetic", "fleet20-workflows"])
def test_info_final__changes_nothing_but_info(name: str) -> None:
    """info="final": the same observations, rewards and flags; info empty but the final step's metrics."""
    full = _play(ClusterSchedulingEnv(name), 3, np.random.default_rng(3))
    final = _play(ClusterSchedulingEnv(name, info="final"), 3, np.random.default_rng(3))
    assert len(full) == len(final)
    for a, b in zip(full, final, strict=True):
        assert all(np.array_equal(a[0][key], b[0][key]) for key in a[0])
        assert a[1:-1] == b[1:-1]
    assert [step[-1] for step in final[:-1]] == [{}] * (len(final) - 1)
    assert final[-1][-1] == {"episode_metrics": full[-1][-1]["episode_metrics"]}


def test_info_final__sync_vector_env_merges_only_the_metrics() -> None:
    """A SyncVectorEnv of envs with info="final" gives episode_metrics, masked, at episodes' ends only."""
    venv = gym.vector.SyncVectorEnv([lambda: gym.make(FLEET5_ID, info="final")] * 3)
    obs, info = venv.reset(seed=0)
    assert info == {}
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(200):
        actions = [int(rng.choice(np.flatnonzero(mask))) for mask in obs["action_mask"]]
        obs, _, terminated, truncated, info = venv.step(actions)
        done = terminated | truncated
        assert set(info) <= {"episode_metrics", "_episode_metrics"}
        if done.any():
            assert np.array_equal(info["_episode_metrics"], done)
            ended += int(done.sum())
    assert ended > 3


def _info_of(info: dict, b: int) -> dict:
    """Env ``b``'s info in a vector env's merged ``info`` (only ``episode_metrics`` is ever there)."""
    if not info or not info["_episode_metrics"][b]:
        return {}
    metrics = info["episode_metrics"]
    return {"episode_metrics": {key: metrics[key][b] for key in metrics if not key.startswith("_")}}


def _random_valid(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.array([int(rng.choice(np.flatnonzero(mask))) for mask in masks])


@pytest.mark.parametrize(
    "tasks",
    [
        ["fleet5-synthetic"],
        ["fleet5-synthetic", "fleet5-utility", "fleet5-synthetic-varied"],
        ["toy3", "fleet5-synthetic"],  # fleets of two sizes: the 3-node envs padded to 5
    ],
)
@pytest.mark.parametrize("shaping", [UNSHAPED, COMMITTED_COST])
def test_batched_env__plays_the_episodes_of_b_single_envs(tasks: list[str], shaping: str) -> None:
    """reset(seed=s): env b plays what a single env of its scenario reset with s + b plays, autoresets included.

    A padded env's own observation (``env_observation``) is its single env's, and its batch actions
    (defer at N) are its own (``env_action``); its padded rows stay zero and invalid. Rewards are
    the single envs', shaped or not.
    """
    b_envs = 5
    venv = BatchedClusterEnv(tasks, b_envs, reward_shaping=shaping)
    singles = [ClusterSchedulingEnv(tasks[b % len(tasks)], info="final", reward_shaping=shaping) for b in range(b_envs)]
    obs, _ = venv.reset(seed=20)
    single_obs = [env.reset(seed=20 + b)[0] for b, env in enumerate(singles)]
    rng = np.random.default_rng(1)
    autoreset = [False] * b_envs
    episodes = 0
    for _ in range(300):
        for b, env in enumerate(singles):
            own = venv.env_observation(b, obs)
            assert all(np.array_equal(own[key], single_obs[b][key]) for key in obs)
            assert not obs["nodes"][b, env.n_nodes :].any() and not obs["history"][b, env.n_nodes :].any()
            assert not obs["action_mask"][b, env.n_nodes : venv.n_nodes].any() and obs["action_mask"][b, -1] == 1.0
        assert venv.observation_space.contains(obs)
        actions = _random_valid(obs["action_mask"], rng)
        obs, rewards, terminated, truncated, info = venv.step(actions)
        for b, env in enumerate(singles):
            if autoreset[b]:
                single_obs[b], _ = env.reset()
                expected = (0.0, False, False, {})
            else:
                single_obs[b], *step = env.step(venv.env_action(b, int(actions[b])))
                expected = tuple(step)
            assert (rewards[b], terminated[b], truncated[b]) == expected[:3]
            assert expected[3] == _info_of(info, b)
            autoreset[b] = expected[1] or expected[2]
            episodes += int(autoreset[b])
    assert episodes >= b_envs


def test_batched_env__same_step_autoreset_gives_the_final_observation_in_info() -> None:
    """same-step mode: at an episode's end the batch holds the next episode's first observation, info the last."""
    venv = BatchedClusterEnv("fleet5-synthetic", 3, autoreset_mode=AutoresetMode.SAME_STEP)
    singles = [ClusterSchedulingEnv("fleet5-synthetic", info="final") for _ in range(3)]
    obs, _ = venv.reset(seed=4)
    single_obs = [env.reset(seed=4 + b)[0] for b, env in enumerate(singles)]
    rng = np.random.default_rng(4)
    ended = 0
    for _ in range(150):
        actions = _random_valid(obs["action_mask"], rng)
        obs, rewards, terminated, truncated, info = venv.step(actions)
        for b, env in enumerate(singles):
            single_obs[b], reward, done, cut, single_info = env.step(int(actions[b]))
            assert (rewards[b], terminated[b], truncated[b]) == (reward, done, cut)
            if done or cut:
                final = info["final_obs"][b]
                assert all(np.array_equal(final[key], single_obs[b][key]) for key in final)
                assert info["final_info"]["_episode_metrics"][b] and "episode_metrics" in single_info
                single_obs[b], _ = env.reset()
                ended += 1
            assert all(np.array_equal(obs[key][b], single_obs[b][key]) for key in obs)
    assert ended >= 2


def test_batched_env__a_padded_node_is_an_invalid_action_never_a_defer() -> None:
    """In a 3-node env padded to 5, actions 3 and 4 are invalid (the penalty, nothing changes); 5 defers."""
    venv = BatchedClusterEnv(["toy3", "fleet5-synthetic"], 2)
    single = ClusterSchedulingEnv("toy3", info="final")
    obs, _ = venv.reset(seed=7)
    single.reset(seed=7)
    assert (venv.n_nodes, single.n_nodes) == (5, 3)
    assert [venv.env_action(0, a) for a in range(6)] == [0, 1, 2, 4, 4, 3]
    assert [venv.batch_action(0, a) for a in range(4)] == [0, 1, 2, 5]
    for action in (3, 4, 5):  # two invalid steps, then a deferral: the single env's, step for step
        before = {key: values[0].copy() for key, values in obs.items()}
        obs, rewards, *_ = venv.step(np.array([action, 5]))
        single_obs, reward, *_ = single.step(venv.env_action(0, action))
        assert rewards[0] == reward
        own = venv.env_observation(0, obs)
        assert all(np.array_equal(own[key], single_obs[key]) for key in own)
        if action < 5:
            assert reward < 0 and all(np.array_equal(obs[key][0], before[key]) for key in obs)


def test_batched_env__refuses_bad_actions() -> None:
    """Actions must be one per env."""
    venv = BatchedClusterEnv("fleet5-synthetic", 2)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        venv.step(np.zeros(3, dtype=np.int64))


def test_batched_env__is_the_ids_vector_entry_point() -> None:
    """gym.make_vec(id, vectorization_mode="vector_entry_point") builds the batched env of the id's scenario."""
    venv = gym.make_vec(FLEET5_ID, num_envs=4, vectorization_mode="vector_entry_point")
    assert isinstance(venv, BatchedClusterEnv) and venv.num_envs == 4
    obs, _ = venv.reset(seed=1)
    single, _ = gym.make(FLEET5_ID).reset(seed=2)
    assert all(np.array_equal(obs[key][1], single[key]) for key in single)


def test_batched_env__disabled_autoreset_keeps_an_ended_episode_at_its_end() -> None:
    """disabled: once an env's episode ended, its steps give its final observation again, reward 0."""
    venv = BatchedClusterEnv("fleet5-synthetic", 2, autoreset_mode=AutoresetMode.DISABLED)
    obs, _ = venv.reset(seed=9)
    rng = np.random.default_rng(9)
    ended: dict[int, dict[str, np.ndarray]] = {}
    for _ in range(400):
        obs, rewards, terminated, truncated, _ = venv.step(_random_valid(obs["action_mask"], rng))
        for b in range(2):
            if b in ended:
                assert rewards[b] == 0.0 and (terminated[b] or truncated[b])
                assert all(np.array_equal(obs[key][b], ended[b][key]) for key in obs)
            elif terminated[b] or truncated[b]:
                ended[b] = {key: obs[key][b].copy() for key in obs}
        if len(ended) == 2:
            break
    assert len(ended) == 2
