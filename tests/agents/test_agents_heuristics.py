"""The heuristic agents on hand-made states of the default 5-node fleet."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import gymnasium as gym
import numpy as np
import pytest

import aco_env  # noqa: F401  (registers the env ids)
from aco_env import ClusterView
from aco_env.registration import FLEET5_ID
from agents import make_agent
from agents.heuristics import HEURISTICS
from digital_twin import JobSpec

# Fleet5: cpu-01 (32 c, 128 GB, $0.48), arm-02 (16 c, 64 GB, $0.12), api-03 (8 c, 32 GB, $0.18),
# gpu-04 (16 c, 128 GB, 4 GPUs, $3.20), gpu-05 (16 c, 128 GB, 4 GPUs, $1.10).
CPU_JOB = JobSpec("j", 0.0, 600.0, "batch", 4.0, 8.0)


@pytest.fixture(scope="module")
def env() -> gym.Env:
    env = gym.make(FLEET5_ID)
    env.reset(seed=0)
    return env


def make_view(
    env: gym.Env,
    job: JobSpec = CPU_JOB,
    valid: Sequence[int] = (0, 1, 2, 3, 4),
    free_cpu: Sequence[float] = (32, 16, 8, 16, 16),
    free_mem: Sequence[float] = (128, 64, 32, 128, 128),
    free_gpus: Sequence[float] = (0, 0, 0, 4, 4),
) -> ClusterView:
    """The env's current view with the job, the free resources and the valid nodes replaced."""
    mask = np.zeros(6, dtype=bool)
    mask[list(valid)] = True
    mask[-1] = True
    return dataclasses.replace(
        env.unwrapped.cluster_view(),
        job=job,
        free_cpu_cores=np.array(free_cpu, dtype=float),
        free_mem_gb=np.array(free_mem, dtype=float),
        free_gpus=np.array(free_gpus, dtype=float),
        action_mask=mask,
    )


def test_first_fit__picks_the_lowest_valid_index(env: gym.Env) -> None:
    """first-fit takes the first valid node in fleet order."""
    agent = make_agent("first-fit", env)
    assert agent.act(make_view(env, valid=(2, 3))) == 2


def test_best_fit__picks_the_least_cpu_left_then_the_least_mem_left(env: gym.Env) -> None:
    """best-fit minimises free cpu after placing, breaks ties by free mem, then by index."""
    agent = make_agent("best-fit", env)
    assert agent.act(make_view(env)) == 2  # 8 - 4 = 4 cores left is the tightest
    tie = make_view(env, free_cpu=(32, 8, 8, 16, 8), free_mem=(128, 64, 32, 128, 32))
    assert agent.act(tie) == 2  # cpu tie (1, 2, 4): least mem left, then lowest index
    assert agent.act(make_view(env, free_cpu=(8, 8, 8, 8, 8), free_mem=(9,) * 5)) == 0


def test_worst_fit__picks_the_most_cpu_left_then_the_most_mem_left(env: gym.Env) -> None:
    """worst-fit maximises free cpu after placing, then free mem, then the lowest index."""
    agent = make_agent("worst-fit", env)
    assert agent.act(make_view(env)) == 0
    tie = make_view(env, free_cpu=(16, 16, 8, 16, 16), free_mem=(64, 64, 32, 128, 128))
    assert agent.act(tie) == 3


def test_cheapest__picks_the_lowest_price_per_hour(env: gym.Env) -> None:
    """cheapest takes the valid node with the lowest $/h (arm-02, else api-03, ...)."""
    agent = make_agent("cheapest", env)
    assert agent.act(make_view(env)) == 1
    assert agent.act(make_view(env, valid=(0, 2, 3, 4))) == 2
    assert agent.act(make_view(env, valid=(3, 4))) == 4


def test_cheapest_share__picks_the_lowest_price_of_the_charged_share(env: gym.Env) -> None:
    """cheapest-share ranks by $/h x the job's share: cores for a cpu job, GPUs for a GPU job."""
    agent = make_agent("cheapest-share", env)
    # 4 cores: cpu-01 0.48 x 4/32 = 0.06, arm-02 0.03, api-03 0.09, gpu-04 0.8, gpu-05 0.275 $/h.
    assert agent.act(make_view(env)) == 1
    assert agent.act(make_view(env, valid=(0, 2, 3, 4))) == 0  # cheapest takes api-03 ($0.18/h) here
    gpu_job = dataclasses.replace(CPU_JOB, gpu_count=1)  # one of 4 GPUs: gpu-04 0.8, gpu-05 0.275 $/h
    assert agent.act(make_view(env, job=gpu_job, valid=(3, 4))) == 4


def test_cheapest_share__avoid_sla_ranks_the_nodes_it_keeps_under_the_threshold_first(env: gym.Env) -> None:
    """avoid_sla: arm-02 (the cheapest share) runs a latency-critical job at 80 % background, so 4 more cores
    (25 %) lift it over 90 %; the next cheapest share, cpu-01, is taken. Where every valid node would be
    lifted over, the price decides alone; with the option off, the price decides too."""
    agent = make_agent("cheapest-share[avoid_sla=true]", env)
    background = np.array([10.0, 80.0, 10.0, 10.0, 10.0])
    running = np.zeros((5, 3))
    running[:, 0] = 1  # a latency-critical job on every node
    view = dataclasses.replace(make_view(env), background_cpu_pct=background, running_by_type=running)
    assert agent.act(view) == 0
    assert make_agent("cheapest-share", env).act(view) == 1
    assert agent.act(dataclasses.replace(view, background_cpu_pct=np.full(5, 80.0))) == 1


def test_round_robin__cycles_through_valid_nodes_and_restarts_on_reset(env: gym.Env) -> None:
    """round-robin takes the next valid node after the last used, wraps, and reset restarts it."""
    agent = make_agent("round-robin", env)
    agent.reset(seed=0)
    picks = [agent.act(make_view(env)) for _ in range(6)]
    assert picks == [0, 1, 2, 3, 4, 0]
    assert agent.act(make_view(env, valid=(0, 3))) == 3  # skips invalid 1, 2
    assert agent.act(make_view(env, valid=(0, 3))) == 0  # wraps
    agent.reset(seed=0)
    assert agent.act(make_view(env, valid=(1, 2))) == 1


def test_tetris__picks_the_best_aligned_node(env: gym.Env) -> None:
    """tetris maximises sum(demand/capacity * free/capacity) over cpu, mem and GPUs."""
    agent = make_agent("tetris", env)
    # Scores: cpu-01 4/32*1 + 8/128*1 = 0.1875; arm-02 0.25 + 0.125 = 0.375; api-03 0.5 + 0.25
    # = 0.75; the GPU nodes 0.25 + 0.0625 = 0.3125.
    assert agent.act(make_view(env)) == 2
    # Half-full api-03: 0.5 * 0.5 + 0.25 * 0.5 = 0.375 ties arm-02; the lower index wins.
    assert (
        agent.act(make_view(env, free_cpu=(32, 16, 4, 16, 16), free_mem=(128, 64, 16, 128, 128)))
        == 1
    )
    gpu_job = JobSpec("g", 0.0, 600.0, "batch", 4.0, 8.0, gpu_count=2)
    assert agent.act(make_view(env, job=gpu_job, valid=(3, 4), free_gpus=(0, 0, 0, 2, 4))) == 4


def test_random__uniform_over_valid_nodes_and_reproducible(env: gym.Env) -> None:
    """random picks only valid nodes, each of them over many draws, the same for the same seed."""
    agent = make_agent("random", env)
    view = make_view(env, valid=(0, 2, 4))
    agent.reset(seed=7)
    first = [agent.act(view) for _ in range(300)]
    agent.reset(seed=7)
    assert [agent.act(view) for _ in range(300)] == first
    counts = np.bincount(first, minlength=5)
    assert counts[[1, 3]].sum() == 0 and (counts[[0, 2, 4]] > 60).all()


def test_random__may_defer_only_when_asked_to(env: gym.Env) -> None:
    """With include_defer=True random also draws defer (None); by default it never does."""
    view = make_view(env, valid=(1,))
    default = make_agent("random", env)
    default.reset(seed=0)
    assert {default.act(view) for _ in range(50)} == {1}
    with_defer = make_agent("random", env, include_defer=True)
    with_defer.reset(seed=0)
    assert {with_defer.act(view) for _ in range(50)} == {1, None}


@pytest.mark.parametrize("cls", HEURISTICS, ids=lambda c: c.name)
def test_heuristic__defers_when_no_node_is_valid(env: gym.Env, cls: type) -> None:
    """Every heuristic returns None (defer) when only the defer action is valid."""
    agent = make_agent(cls.name, env)
    agent.reset(seed=0)
    assert agent.act(make_view(env, valid=())) is None


def test_view_agent__batched_observation_gets_a_batched_action(env: gym.Env) -> None:
    """A (1, ...) observation (a one-env VecEnv) gets a (1,) action; a larger batch is refused."""
    agent = make_agent("first-fit", env)
    obs, _ = env.reset(seed=0)
    batched = {key: value[None] for key, value in obs.items()}
    action, state = agent.predict(batched)
    assert action.shape == (1,) and state is None
    with pytest.raises(ValueError, match="batch of 2"):
        agent.predict({key: np.stack([value, value]) for key, value in obs.items()})


def test_view_agent__refuses_an_env_without_a_cluster_view() -> None:
    """Agents need the documented public API; CartPole has none."""
    with pytest.raises(TypeError, match="cluster_view"):
        make_agent("first-fit", gym.make("CartPole-v1"))
