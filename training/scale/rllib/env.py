"""The env as RLlib builds it: a registered creator, and one distinct, reproducible seed per sub-env.

RLlib's env runners each hold a vector of ``num_envs_per_env_runner`` sub-envs built by the
creator registered under :data:`ENV_NAME` from the algorithm's ``env_config``, whose keys are:

* ``scenario``: a bundled scenario name, a YAML path, or a loaded
  :class:`~digital_twin.scenario.Scenario` (it pickles with its data: workers need no trace files);
* ``seed``: the run's seed;
* ``env``: keyword arguments of :class:`aco_env.EnvConfig` (e.g. ``{"reward_scale": 10.0}``).

Seeds. RLlib seeds env runner ``w`` with ``seed + w`` and a vector's sub-env ``i`` with that
plus ``i``, so runner 1's second sub-env and runner 2's first play the same episodes. Here
every sub-env's first episode is seeded instead with :func:`sub_env_seed` of the run's seed,
its env runner's index and its place in the runner's vector (numpy's ``SeedSequence``: distinct
streams, the same ones for the same seed), moved past the evaluation protocol's validation and
test seeds should it fall in them (:func:`training.evaluation.protocol.outside_held_out`); the
following episodes continue its generator.
:class:`ClusterSchedulingCallbacks` (RLlib callbacks) tells each sub-env its seed when its runner builds the
vector, and :class:`RunnerSeeded` (a wrapper) uses it at the first reset.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from ray.rllib.callbacks.callbacks import RLlibCallback

import scenarios
from aco_env import EPISODE_METRICS, ClusterSchedulingEnv, EnvConfig
from aco_env.metrics import scheduling_key
from training.evaluation.protocol import outside_held_out

ENV_NAME = "aco_env/ClusterScheduling-rllib"
"""The name the env creator is registered under with Ray (``tune.register_env``)."""


def sub_env_seed(seed: int, worker_index: int, vector_index: int) -> int:
    """The first-episode seed of sub-env ``vector_index`` of env runner ``worker_index`` in a run seeded ``seed``.

    >>> sub_env_seed(0, 1, 0) == sub_env_seed(0, 1, 0), sub_env_seed(0, 1, 0) != sub_env_seed(0, 2, 0)
    (True, True)
    """
    sequence = np.random.SeedSequence(seed, spawn_key=(worker_index, vector_index))
    return outside_held_out(int(sequence.generate_state(1)[0]))


class RunnerSeeded(gym.Wrapper[Any, Any, Any, Any]):
    """Seeds the wrapped env's first episode with :attr:`runner_seed`, whatever seed its caller gives.

    Later resets pass their seed through (RLlib gives none after the first), so the episodes
    continue the generator of the first one. With :attr:`runner_seed` unset (``None``), every
    seed passes through.

    Attributes:
        runner_seed: The seed of the first episode (set by :class:`ClusterSchedulingCallbacks`).
        seeded_with: The seed the first episode was reset with (``None`` before it).
    """

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self.runner_seed: int | None = None
        self.seeded_with: int | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset; the first reset uses :attr:`runner_seed` when it is set."""
        if self.seeded_with is None and self.runner_seed is not None:
            seed = self.runner_seed
        if self.seeded_with is None and seed is not None:
            self.seeded_with = seed
        return self.env.reset(seed=seed, options=options)

    def action_masks(self) -> np.ndarray:
        """The wrapped env's valid actions (``(N + 1,)`` bool)."""
        return np.asarray(self.env.unwrapped.action_masks())  # type: ignore[attr-defined]


def make_env(env_config: dict[str, Any]) -> gym.Env[Any, Any]:
    """The env creator registered as :data:`ENV_NAME`: one sub-env from an ``env_config`` (keys above).

    ``env_config`` may be RLlib's ``EnvContext`` (a dict with ``worker_index``) or a plain dict.
    """
    scenario = scenarios.load(env_config.get("scenario", scenarios.DEFAULT))
    env = ClusterSchedulingEnv(scenario, config=EnvConfig(**env_config.get("env", {})))
    return RunnerSeeded(env)


def register() -> None:
    """Register :func:`make_env` with Ray as :data:`ENV_NAME` (in the driver; Ray ships it to the workers)."""
    from ray import tune

    tune.register_env(ENV_NAME, make_env)


def runner_seeds(env_runner: Any) -> tuple[int, list[int | None]]:
    """``(worker index, [the first-episode seed of each sub-env])`` of an env runner (``None``: not reset yet).

    For ``algo.env_runner_group.foreach_env_runner(runner_seeds, local_env_runner=False)``.
    """
    return int(env_runner.worker_index), list(env_runner.env.unwrapped.get_attr("seeded_with"))


class ClusterSchedulingCallbacks(RLlibCallback):
    """RLlib callbacks: seed each sub-env (:func:`sub_env_seed`), one torch thread per env runner, episode metrics.

    Each finished episode's ``info["episode_metrics"]`` is logged as ``scheduling/<metric>``
    (the names :mod:`aco_env.metrics` gives them in SB3 training), averaged over the
    iteration's episodes, in the result's ``env_runners`` section.
    """

    def on_environment_created(
        self, *, env_runner: Any, env: gym.Env[Any, Any], env_context: Any, **kwargs: Any
    ) -> None:
        """Tell the sub-envs of ``env_runner``'s new vector env their first-episode seeds; one torch thread."""
        del kwargs
        import torch

        torch.set_num_threads(1)  # a small network: the runner's core is better spent on the envs
        seed = int(env_context.get("seed", 0))
        worker = int(env_runner.worker_index or 0)
        vector = env.unwrapped
        seeds = [sub_env_seed(seed, worker, index) for index in range(vector.num_envs)]  # type: ignore[attr-defined]
        vector.set_attr("runner_seed", seeds)  # type: ignore[attr-defined]

    def on_episode_end(self, *, episode: Any, metrics_logger: Any = None, **kwargs: Any) -> None:
        """Log the ended episode's metrics as ``scheduling/<metric>`` (means over the iteration)."""
        del kwargs
        metrics = episode.get_infos(-1).get("episode_metrics")
        if metrics_logger is None or metrics is None:
            return
        for name in EPISODE_METRICS:
            metrics_logger.log_value(scheduling_key(name), float(metrics[name]), reduce="mean", window=None)


__all__ = [
    "ENV_NAME",
    "ClusterSchedulingCallbacks",
    "RunnerSeeded",
    "make_env",
    "register",
    "runner_seeds",
    "sub_env_seed",
]
