"""Rewards per task: each training env's return is its episode objective over its task's first-fit objective."""

from __future__ import annotations

import math

import numpy as np
import pytest

import scenarios
from aco_env import ClusterSchedulingEnv
from agents import make_agent
from tests.train_helpers import TINY
from training.evaluation.protocol import TRAINING
from training.evaluation.rollout import play_episode
from training.learning.config import TrainConfig
from training.learning.reward_scales import REFERENCE_EPISODES, task_reward_scales
from training.learning.training_envs import make_vec_env


def test_task_reward_scales__each_task_divided_by_its_reference_objective() -> None:
    """A task's scale is reward_scale over first-fit's mean objective on the first training seeds (seed 0)."""
    tasks = (scenarios.load("fleet5-synthetic"), scenarios.load("toy3"))
    scales = task_reward_scales(tasks, "first-fit", reward_scale=2.0, seed=0, episodes=3)
    for task, scale in zip(tasks, scales, strict=True):
        env = ClusterSchedulingEnv(task)
        agent = make_agent("first-fit", env)
        mean = float(np.mean([play_episode(env, agent, TRAINING.start + k).metrics["objective_usd"] for k in range(3)]))
        assert scale.scenario == task.name
        assert scale.reference_usd == pytest.approx(mean, rel=1e-12)
        assert scale.scale == pytest.approx(2.0 / mean, rel=1e-12)
    assert scales[0].scale != scales[1].scale  # two cost levels, two scales


def test_task_reward_scales__no_reference_keeps_the_fixed_scale() -> None:
    """Without a reference agent every task keeps reward_scale (and no episode is played)."""
    [scale] = task_reward_scales((scenarios.load("toy3"),), "", reward_scale=10.0, seed=0)
    assert scale.scale == 10.0 and math.isnan(scale.reference_usd)
    assert REFERENCE_EPISODES >= 1


def test_training_envs__return_is_minus_the_objective_times_the_task_scale() -> None:
    """Env r plays task r mod T with that task's scale: its first episode's return is -objective x scale."""
    tasks = (scenarios.load("fleet5-synthetic"), scenarios.load("fleet5-synthetic-varied"))
    scales = [0.5, 3.0]
    venv = make_vec_env(TrainConfig(**dict(TINY, n_envs=2)), tasks, seed=0, reward_scales=scales)
    try:
        agents = [make_agent("first-fit", env) for env in venv.batched.envs]  # type: ignore[attr-defined]
        observations = venv.reset()
        returns, objectives = np.zeros(2), [None, None]
        while any(objective is None for objective in objectives):
            # first-fit reads its env's cluster view (the observation's row is only its shape)
            actions = np.array(
                [int(agent.predict({k: v[r] for k, v in observations.items()})[0]) for r, agent in enumerate(agents)]
            )
            observations, rewards, dones, infos = venv.step(actions)
            for rank in range(2):
                if objectives[rank] is None:
                    returns[rank] += rewards[rank]
                    if dones[rank]:
                        objectives[rank] = infos[rank]["episode_metrics"]["objective_usd"]
        for rank, scale in enumerate(scales):
            assert returns[rank] == pytest.approx(-objectives[rank] * scale, rel=1e-6)
    finally:
        venv.close()


def test_make_vec_env__one_scale_per_task_is_required() -> None:
    """A list of scales that does not match the tasks is refused, naming both counts."""
    with pytest.raises(ValueError, match="1 reward scales for 2 tasks"):
        make_vec_env(TrainConfig(**TINY), (scenarios.load("toy3"), scenarios.load("toy3")), reward_scales=[1.0])
