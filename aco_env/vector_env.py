"""A batched env: B twins stepped per call into preallocated ``(B, ...)`` buffers (a Gymnasium ``VectorEnv``).

:class:`BatchedClusterEnv` plays B episodes of :class:`~aco_env.ClusterSchedulingEnv` side by
side, in this process, and is what a trainer or an imitation loop steps instead of B envs in a
``SyncVectorEnv``: each env's encoder writes its observation into its rows of the batch's
buffers, and only what changed since its last step (the nodes the twin changed, the current job,
the clock, the mask; the history window when the tick changes), so a step of the batch costs the
twins' decisions plus a few writes per env, and nothing is concatenated or merged at each step.
``info`` is the vector-friendly one (``EnvConfig(info="final")``): empty but at an episode's end,
where env ``b``'s ``episode_metrics`` are given with the mask ``_episode_metrics``, as Gymnasium's
vector envs merge infos.

Episodes are those of B single envs: ``reset(seed=s)`` resets env ``b`` with seed ``s + b`` (and
``options``), its later episodes continue its own generator, and each env's episode, observations
and rewards are its single env's. Autoreset is Gymnasium's: ``next-step`` (the default:
the step after an episode's end resets that env, ignoring its action, with reward 0),
``same-step`` (the final observation and info in ``info["final_obs"]`` / ``info["final_info"]``,
the new episode's first observation in the batch: what Stable-Baselines3's ``VecEnv`` does) or
``disabled`` (an env whose episode ended stays at its end until ``reset``: a step gives its final
observation again, reward 0: a batch of one episode per env, e.g. an imitation round's).

Envs may play different scenarios (a task distribution: env ``b`` the ``b``-th, cycling), on
fleets of any sizes. The batch's fleet size N is the largest; an env of fewer nodes is padded to
it (:mod:`aco_env.padding`: zero rows, invalid in its mask, its defer at N):
:meth:`BatchedClusterEnv.env_action` and :meth:`~BatchedClusterEnv.env_observation` give an env's
own action and observation, what an agent made for its env reads. ``reset_options`` gives each
env's options at its resets (e.g. a start hour per episode seed:
``training.learning.random_start_hour``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

import scenarios
from aco_env.env import ClusterSchedulingEnv
from aco_env.padding import own_action, own_observation, padded_action, write_padded_mask
from aco_env.types import FINAL_INFO, EnvConfig
from digital_twin.scenario import Scenario

ResetOptions = Callable[[int, int | None], dict[str, Any] | None]
"""``(env index, seed or None) -> options``: the options of an env's reset (``None``: none)."""


class BatchedClusterEnv(VectorEnv):
    """B :class:`~aco_env.ClusterSchedulingEnv` s stepped together into ``(B, ...)`` buffers.

    Args:
        scenario: A scenario (name, path or object), or several: env ``b`` plays ``scenario[b % len]``.
        num_envs: B.
        config: The envs' config (``info`` is always ``"final"``).
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` (default), ``SAME_STEP`` or ``DISABLED``.
        copy: Return copies of the buffers (default); ``False`` returns the buffers themselves,
            which the next step overwrites.
        reset_options: Each env's reset options (:data:`ResetOptions`); ``None``: none.
        reward_scales: One reward scale per scenario (cycled as the scenarios are), in place of
            the config's ``reward_scale`` (a task distribution whose tasks' rewards are put on one
            scale: ``training.learning.reward_scales``); ``None``: the config's for all.
        **config_overrides: :class:`EnvConfig` fields that replace the config's.

    Attributes:
        envs: The B envs (each its own twin, encoder and generator): agents that read an env
            (``cluster_view``) are given ``envs[b]``.
        n_nodes: N, the batch's fleet size (its largest fleet's; the others are padded to it).
    """

    metadata: dict[str, Any] = {  # noqa: RUF012  (VectorEnv declares it an instance attribute)
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }

    def __init__(
        self,
        scenario: str | Path | Scenario | Sequence[str | Path | Scenario],
        num_envs: int,
        config: EnvConfig | None = None,
        autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        reset_options: ResetOptions | None = None,
        reward_scales: Sequence[float] | None = None,
        **config_overrides: Any,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if autoreset_mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED):
            raise ValueError(f"autoreset_mode must be next-step, same-step or disabled, got {autoreset_mode}")
        base = dataclasses.replace(config or EnvConfig(), **config_overrides, info=FINAL_INFO)
        # Each scenario is loaded once: its envs share its data and everything derived from it.
        named = [scenario] if isinstance(scenario, str | Path | Scenario) else scenario
        tasks = [scenarios.load(task) for task in named]
        if reward_scales is not None and len(reward_scales) != len(tasks):
            raise ValueError(f"{len(reward_scales)} reward scales for {len(tasks)} scenarios")
        configs = [
            base if reward_scales is None else dataclasses.replace(base, reward_scale=scale)
            for scale in (reward_scales or [base.reward_scale])
        ]
        self.envs = [
            ClusterSchedulingEnv(tasks[b % len(tasks)], config=configs[b % len(tasks) % len(configs)])
            for b in range(num_envs)
        ]
        largest = max(self.envs, key=lambda env: env.n_nodes)
        self.num_envs = num_envs
        self.config = base
        self.copy = copy
        self.autoreset_mode = autoreset_mode
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode}
        # Every row of a node box has the same bounds, so the largest fleet's space holds a padded one.
        self.single_observation_space = largest.observation_space
        self.single_action_space = largest.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.n_nodes = largest.n_nodes
        self._reset_options = reset_options
        assert isinstance(self.single_observation_space, gym.spaces.Dict)
        self._buffers = {
            key: np.zeros((num_envs, *(space.shape or ())), dtype=np.float32)
            for key, space in self.single_observation_space.spaces.items()
        }
        # A padded env's encoder writes its own mask (its defer at n), copied into the batch's row (defer at N).
        self._own_masks: list[np.ndarray | None] = [None] * num_envs
        for b, env in enumerate(self.envs):
            rows = {key: buffer[b] for key, buffer in self._buffers.items()}
            if env.n_nodes < self.n_nodes:
                rows["nodes"], rows["history"] = rows["nodes"][: env.n_nodes], rows["history"][: env.n_nodes]
                rows["action_mask"] = self._own_masks[b] = np.zeros(env.n_nodes + 1, dtype=np.float32)
            env._encoder.bind(rows)
        self._rewards = np.zeros(num_envs, dtype=np.float64)
        self._terminations = np.zeros(num_envs, dtype=bool)
        self._truncations = np.zeros(num_envs, dtype=bool)
        self._autoreset_envs = np.zeros(num_envs, dtype=bool)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset every env: env ``b`` with seed ``seed + b`` (or ``seed[b]``), and ``options`` or its own."""
        seeds: list[int | None]
        if isinstance(seed, int):
            seeds = [seed + b for b in range(self.num_envs)]
        else:
            seeds = [None] * self.num_envs if seed is None else list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"{len(seeds)} seeds for {self.num_envs} envs")
        infos: dict[str, Any] = {}
        for b, env_seed in enumerate(seeds):
            info = self._reset_env(b, env_seed, options)
            if info:
                infos = self._add_info(infos, info, b)
        self._rewards[:] = 0.0
        self._terminations[:] = False
        self._truncations[:] = False
        self._autoreset_envs[:] = False
        return self._observations(), infos

    def step(
        self, actions: np.ndarray | Sequence[int]
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env with its action (an env that ended at the last step is reset instead, in next-step mode)."""
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), got {actions.shape}")
        infos: dict[str, Any] = {}
        same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        rewards, terminations, truncations = self._rewards, self._terminations, self._truncations
        for b, env in enumerate(self.envs):
            if self._autoreset_envs[b]:  # next-step mode: this step starts its next episode
                info = self._reset_env(b, None, None)
                rewards[b], terminations[b], truncations[b] = 0.0, False, False
            else:
                rewards[b], terminations[b], truncations[b], info = env._advance(self.env_action(b, actions.item(b)))
                self._encode(b)
                if same_step and (terminations[b] or truncations[b]):
                    final = {key: buffer[b].copy() for key, buffer in self._buffers.items()}
                    infos = self._add_info(infos, {"final_obs": final, "final_info": info}, b)
                    info = self._reset_env(b, None, None)
            if info:
                infos = self._add_info(infos, info, b)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            np.logical_or(terminations, truncations, out=self._autoreset_envs)
        return self._observations(), rewards.copy(), terminations.copy(), truncations.copy(), infos

    def env_action(self, b: int, action: int) -> int:
        """Batch action ``action`` as env ``b``'s own (:func:`aco_env.padding.own_action`)."""
        return own_action(action, self.envs[b].n_nodes, self.n_nodes)

    def batch_action(self, b: int, action: int) -> int:
        """Env ``b``'s own action as the batch's (:func:`aco_env.padding.padded_action`)."""
        return padded_action(action, self.envs[b].n_nodes, self.n_nodes)

    def env_observation(self, b: int, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Env ``b``'s own observation from row ``b`` of a batch observation (views, but a padded env's mask)."""
        return own_observation({key: values[b] for key, values in observation.items()}, self.envs[b].n_nodes)

    def action_masks(self) -> np.ndarray:
        """``(B, N + 1)`` bool: each env's valid actions now (sb3-contrib's MaskablePPO reads this)."""
        return self._buffers["action_mask"] > 0.0

    def close_extras(self, **kwargs: Any) -> None:
        """Nothing to release (no process, no file)."""

    def _reset_env(self, b: int, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        """Reset env ``b`` (its observation written into its rows), with its options; its info."""
        if options is None and self._reset_options is not None:
            options = self._reset_options(b, seed)
        info = self.envs[b]._new_episode(seed, options)
        self._encode(b)
        return info

    def _encode(self, b: int) -> None:
        """Write env ``b``'s observation into its rows (a padded env's own mask copied into its padded row)."""
        env = self.envs[b]
        env._encoder.encode_into(env._require_twin())
        own = self._own_masks[b]
        if own is not None:
            write_padded_mask(own, self._buffers["action_mask"][b])

    def _observations(self) -> dict[str, np.ndarray]:
        if self.copy:
            return {key: buffer.copy() for key, buffer in self._buffers.items()}
        return self._buffers
