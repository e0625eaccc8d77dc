"""The training envs of a run: one monitored env per rank, seeded in the protocol's training range.

:func:`make_vec_env` builds ``config.n_envs`` of them (in this process, one batched env; or in
workers) from one scenario or several (a task distribution, :func:`training_scenarios`: env
``rank`` plays the ``rank``-th, cycling); :func:`make_env_fn` is one worker env's picklable factory.
Every env's ``info`` is the vector-friendly one (``EnvConfig(info="final")``: the episode's
metrics at its end, all training reads).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import gymnasium as gym
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import SubprocVecEnv, VecEnv

import scenarios
from aco_env.registration import CLUSTER_SCHEDULING_ID
from aco_env.types import FINAL_INFO
from aco_env.vector_env import BatchedClusterEnv
from digital_twin.scenario import Scenario
from training.evaluation.protocol import TRAINING, first_seed, wrapped_offset
from training.learning.batched_vec_env import BatchedVecEnv
from training.learning.config import TrainConfig
from training.learning.interrupt import ignore_stop_signals
from training.learning.random_start_hour import RandomStartHour, StartHours


def training_scenarios(config: TrainConfig, scenario: Scenario) -> tuple[Scenario, ...]:
    """The scenarios trained on: ``scenario`` (``config.scenario``, loaded), then ``config.train_scenarios``."""
    return (scenario, *(scenarios.load(name) for name in config.train_scenarios))


def make_env_fn(
    config: TrainConfig,
    scenario: Scenario,
    rank: int,
    seed: int,
    in_worker: bool = False,
    reward_scale: float | None = None,
) -> Callable[[], gym.Env]:
    """A picklable factory of one monitored training env (the "module:id" form imports aco_env).

    Args:
        config: The run's config.
        scenario: The env's scenario, loaded (a SubprocVecEnv worker gets a pickled copy, with
            the data already read).
        rank: The env's index; its first episode has seed ``seed + rank``.
        seed: The first env's seed, in the protocol's training range (:func:`training_env_seed`).
        in_worker: The factory runs in a SubprocVecEnv worker, which then ignores Ctrl-C and SIGTERM.
        reward_scale: The env's reward scale (its task's: :mod:`training.learning.reward_scales`);
            ``config.reward_scale`` when ``None``.
    """
    scale = config.reward_scale if reward_scale is None else reward_scale

    def make() -> gym.Env:
        if in_worker:
            ignore_stop_signals()
        env = gym.make(
            f"aco_env:{CLUSTER_SCHEDULING_ID}",
            scenario=scenario,
            reward_scale=scale,
            deferral=config.deferral,
            reward_shaping=config.reward_shaping,
            info=FINAL_INFO,
        )
        if config.random_start_hour:
            env = RandomStartHour(env)
        env.reset(seed=seed + rank)
        return Monitor(env)

    return make


def training_env_seed(config: TrainConfig, resumed_steps: int = 0) -> int:
    """The first training env's seed: ``config.seed + resumed_steps``, folded into the training range.

    Env ``rank`` starts at this seed ``+ rank``; every one of them stays in the protocol's
    training range (:data:`training.evaluation.protocol.TRAINING`), so no training episode starts
    on a validation or test seed, however far a resumed run has come.

    >>> training_env_seed(TrainConfig(seed=3, n_envs=4)), training_env_seed(TrainConfig(seed=3, n_envs=4), 5_000)
    (3, 6)
    """
    offset = wrapped_offset(TRAINING, config.seed + resumed_steps, config.n_envs)
    return first_seed(TRAINING, config.n_envs, offset)


def make_vec_env(
    config: TrainConfig,
    scenario: Scenario | Sequence[Scenario],
    seed: int | None = None,
    reward_scales: Sequence[float] | None = None,
) -> VecEnv:
    """``config.n_envs`` envs seeded ``seed + rank`` (:func:`training_env_seed` by default).

    ``scenario`` is one scenario or several (:func:`training_scenarios`): env ``rank`` plays
    the ``rank``-th, cycling, with the reward scale of the same index in ``reward_scales``
    (``config.reward_scale`` for all when ``None``). In this process (one
    :class:`~aco_env.vector_env.BatchedClusterEnv`, the same episodes as ``config.n_envs`` single
    envs) unless ``config.vec_env`` is ``subprocess`` and there are several (SubprocVecEnv,
    spawned workers that ignore Ctrl-C: the trainer stops them).
    """
    tasks = [scenario] if isinstance(scenario, Scenario) else list(scenario)
    scales = [config.reward_scale] * len(tasks) if reward_scales is None else list(reward_scales)
    if len(scales) != len(tasks):
        raise ValueError(f"{len(scales)} reward scales for {len(tasks)} tasks")
    seed = training_env_seed(config) if seed is None else seed
    venv: VecEnv
    if config.n_envs > 1 and config.vec_env == "subprocess":
        factories = [
            make_env_fn(config, tasks[rank % len(tasks)], rank, seed, True, scales[rank % len(tasks)])
            for rank in range(config.n_envs)
        ]
        venv = SubprocVecEnv(factories, start_method="spawn")
    else:
        hours = [StartHours() for _ in range(config.n_envs)]
        batched = BatchedClusterEnv(
            tasks, config.n_envs, reward_scales=scales, deferral=config.deferral, reward_shaping=config.reward_shaping,
            autoreset_mode=AutoresetMode.SAME_STEP,
            reset_options=(lambda b, episode_seed: {"start_hour": hours[b](episode_seed)})
            if config.random_start_hour else None,
        )  # fmt: skip
        venv = BatchedVecEnv(batched)
    venv.seed(seed)
    return venv
