"""Stable-Baselines3's ``VecEnv`` over the batched env: B envs stepped together in this process.

:class:`BatchedVecEnv` adapts :class:`aco_env.vector_env.BatchedClusterEnv` (in same-step
autoreset, SB3's) to SB3's interface, as ``DummyVecEnv`` would present B single envs: an
episode's end gives the next episode's first observation, with the final one in
``info["terminal_observation"]`` and ``info["TimeLimit.truncated"]`` set as SB3 sets it;
``info`` is otherwise the vector-friendly one (``episode_metrics`` at an episode's end), with
``info["episode"]`` as SB3's ``Monitor`` gives it (the return summed in float64 and rounded to 6
decimals, the length, the seconds since the env was made), which SB3's logger reads.
``seed(s)`` seeds the next reset (env ``b`` with ``s + b``), as SB3's vector envs do; sb3-contrib's
``MaskablePPO`` reads the masks through ``env_method("action_masks")``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from aco_env.vector_env import BatchedClusterEnv


class BatchedVecEnv(VecEnv):
    """SB3's ``VecEnv`` of a :class:`BatchedClusterEnv` built with ``autoreset_mode=AutoresetMode.SAME_STEP``."""

    def __init__(self, batched: BatchedClusterEnv) -> None:
        if batched.autoreset_mode != AutoresetMode.SAME_STEP:
            raise ValueError("the batched env must reset in the same step (autoreset_mode=AutoresetMode.SAME_STEP)")
        self.batched = batched  # (VecEnv's __init__ reads the envs' render_mode through it)
        super().__init__(batched.num_envs, batched.single_observation_space, batched.single_action_space)
        self._actions: np.ndarray | None = None
        self._returns = np.zeros(batched.num_envs)  # the episodes' returns so far, float64 (as Monitor sums)
        self._lengths = np.zeros(batched.num_envs, dtype=np.int64)
        self._started = time.time()

    def reset(self) -> VecEnvObs:
        """Reset every env (with the seeds and options given since the last reset, then forgotten)."""
        seeds: list[int | None] = [None if seed is None else int(seed) for seed in self._seeds]
        options = self._options[0] if self._options and all(o == self._options[0] for o in self._options) else None
        observation, _ = self.batched.reset(seed=seeds, options=options or None)
        self._returns[:] = 0.0
        self._lengths[:] = 0
        self._reset_seeds()
        self._reset_options()
        return observation

    def step_async(self, actions: np.ndarray) -> None:
        """Keep ``actions`` for :meth:`step_wait`."""
        self._actions = np.asarray(actions).reshape(self.num_envs)

    def step_wait(self) -> VecEnvStepReturn:
        """Step every env: observations, rewards, dones and one ``info`` dict per env."""
        assert self._actions is not None, "step_async first"
        observation, rewards, terminated, truncated, info = self.batched.step(self._actions)
        dones = terminated | truncated
        self._returns += rewards
        self._lengths += 1
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        final = info.get("final_info", {})
        for b in np.flatnonzero(dones):
            metrics = final.get("episode_metrics", {})
            infos[b] = {
                "episode_metrics": {key: float(value[b]) for key, value in metrics.items() if not key.startswith("_")},
                "episode": {
                    "r": round(float(self._returns[b]), 6),
                    "l": int(self._lengths[b]),
                    "t": round(time.time() - self._started, 6),
                },
                "terminal_observation": info["final_obs"][b],
                "TimeLimit.truncated": bool(truncated[b] and not terminated[b]),
            }
            self._returns[b], self._lengths[b] = 0.0, 0
        return observation, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        """Nothing to release (no process)."""
        self.batched.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """``attr_name`` of each env of ``indices``."""
        return [getattr(self.batched.envs[b], attr_name) for b in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set ``attr_name`` of each env of ``indices``."""
        for b in self._indices(indices):
            setattr(self.batched.envs[b], attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """Call ``method_name`` of each env of ``indices`` (``action_masks`` read from the batch)."""
        chosen = self._indices(indices)
        if method_name == "action_masks" and not method_args and not method_kwargs:
            masks = self.batched.action_masks()
            return [masks[b] for b in chosen]
        return [getattr(self.batched.envs[b], method_name)(*method_args, **method_kwargs) for b in chosen]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        """No env is wrapped."""
        return [False for _ in self._indices(indices)]

    def _indices(self, indices: VecEnvIndices) -> Sequence[int]:
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, Iterable):
            return list(indices)
        return [int(indices)]
