"""An actor-critic RLModule for RLlib's PPO (new API stack) that never picks an invalid action.

The env's observation is a ``Dict`` whose ``action_mask`` entry marks the valid actions
(``(N + 1,)``, 1 = valid; defer, the last, is always valid). :class:`MaskedActorCritic`:

* flattens every other entry (``nodes``, ``history``, ``job``, ``queue``, ``queue_mask``,
  ``clock``, in the space's key order) into one vector and passes it through
  ``symlog(x) = sign(x) log(1 + |x|)`` (counts and durations reach 1000; the rest lies in
  [0, 1] or [-24, 24]), as :mod:`agents.set_policy` does;
* scores the actions with one MLP (the policy) and the state with another (the value; PPO
  needs :class:`~ray.rllib.core.rl_module.apis.ValueFunctionAPI`);
* sets the logit of every invalid action to :data:`MASKED_LOGIT` in every forward pass
  (exploration, inference and training), so the categorical distribution gives it probability
  0 (``exp(-1e9)`` underflows), its log-probability stays finite (no ``inf - inf`` in PPO's ratio
  or KL), and argmax never picks it.

``model_config``: ``{"hidden": [64, 64]}`` (the hidden layer sizes of both MLPs).
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from torch import nn

MASK_KEY = "action_mask"
"""The observation entry with the valid actions (not an input of the networks)."""
MASKED_LOGIT = -1e9
"""The logit of an invalid action: probability 0 after softmax, yet finite in log-probabilities."""
DEFAULT_HIDDEN = (64, 64)
"""Hidden layer sizes of the policy and value MLPs when ``model_config`` gives none."""


def symlog(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) * log(1 + |x|)``: the identity near 0, logarithmic for large counts."""
    return torch.sign(x) * torch.log1p(torch.abs(x))


def mlp(sizes: list[int]) -> nn.Sequential:
    """Linear layers of ``sizes`` with tanh between them (none after the last)."""
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(pairwise(sizes)):
        layers.append(nn.Linear(n_in, n_out))
        if i < len(sizes) - 2:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


def feature_keys(observation_space: spaces.Dict) -> tuple[str, ...]:
    """The observation entries the networks read: all but the action mask, in the space's order."""
    return tuple(key for key in observation_space.spaces if key != MASK_KEY)


class MaskedActorCritic(TorchRLModule, ValueFunctionAPI):
    """Policy and value MLPs over the flattened observation; invalid actions get :data:`MASKED_LOGIT`.

    Built by RLlib from an ``RLModuleSpec(module_class=MaskedActorCritic, model_config=...)``,
    or directly: ``MaskedActorCritic(observation_space=env.observation_space,
    action_space=env.action_space, model_config={"hidden": [64, 64]})``.
    """

    def setup(self) -> None:
        """Build the two MLPs for the observation and action spaces."""
        if not isinstance(self.observation_space, spaces.Dict) or MASK_KEY not in self.observation_space.spaces:
            raise ValueError(f"MaskedActorCritic needs a Dict observation space with {MASK_KEY!r}")
        if not isinstance(self.action_space, spaces.Discrete):
            raise ValueError(f"MaskedActorCritic needs a Discrete action space, got {self.action_space}")
        self._keys = feature_keys(self.observation_space)
        n_inputs = sum(math.prod(self.observation_space[key].shape or ()) for key in self._keys)
        options = self.model_config if isinstance(self.model_config, dict) else {}
        hidden = [int(size) for size in options.get("hidden", DEFAULT_HIDDEN)]
        self._pi = mlp([n_inputs, *hidden, int(self.action_space.n)])
        self._vf = mlp([n_inputs, *hidden, 1])

    def _features(self, observation: dict[str, torch.Tensor]) -> torch.Tensor:
        """``(B, F)``: the feature entries, each flattened per row, concatenated, symlog'd."""
        flat = [observation[key].reshape(observation[key].shape[0], -1).float() for key in self._keys]
        return symlog(torch.cat(flat, dim=-1))

    def masked_logits(self, observation: dict[str, torch.Tensor], features: torch.Tensor | None = None) -> torch.Tensor:
        """``(B, N + 1)``: the policy's logits with every invalid action's set to :data:`MASKED_LOGIT`."""
        logits = self._pi(self._features(observation) if features is None else features)
        valid = observation[MASK_KEY] > 0.5
        return logits.masked_fill(~valid, MASKED_LOGIT)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Exploration and inference: the masked logits (RLlib samples, or takes the argmax, from them)."""
        del kwargs
        return {Columns.ACTION_DIST_INPUTS: self.masked_logits(batch[Columns.OBS])}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Training: the masked logits, and the features as embeddings (the value reuses them)."""
        del kwargs
        features = self._features(batch[Columns.OBS])
        return {
            Columns.ACTION_DIST_INPUTS: self.masked_logits(batch[Columns.OBS], features),
            Columns.EMBEDDINGS: features,
        }

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        """``(B,)``: the value of each observation (from ``embeddings`` when the train pass made them)."""
        features = self._features(batch[Columns.OBS]) if embeddings is None else embeddings
        return self._vf(features).squeeze(-1)


def greedy_actions(module: MaskedActorCritic, observations: dict[str, np.ndarray]) -> np.ndarray:
    """``(B,)`` int64: the argmax of the masked logits for a batch of observations (``(B, ...)`` each)."""
    with torch.no_grad():
        batch = {key: torch.as_tensor(np.asarray(value)) for key, value in observations.items()}
        return module.masked_logits(batch).argmax(dim=-1).numpy()


__all__ = ["DEFAULT_HIDDEN", "MASKED_LOGIT", "MASK_KEY", "MaskedActorCritic", "feature_keys", "greedy_actions"]
