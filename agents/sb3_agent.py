"""Saved Stable-Baselines3 models as agents (``sb3:PATH`` or ``sb3:ALGO:PATH``).

Learned agents act through the action mask at evaluation: MaskablePPO gets the mask directly;
for PPO, A2C (argmax of the action probabilities) and DQN (argmax of the Q-values) invalid
actions are masked out before the argmax. (During training the unmasked algorithms learn from
the env's invalid-action penalty instead.) Torch is imported here, never by ``import agents``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from agents.base import AgentState

ALGO_CLASSES = {
    "maskable-ppo": ("sb3_contrib", "MaskablePPO"),
    "bc": ("sb3_contrib", "MaskablePPO"),
    "ppo": ("stable_baselines3", "PPO"),
    "a2c": ("stable_baselines3", "A2C"),
    "dqn": ("stable_baselines3", "DQN"),
}


def load_sb3_agent(spec: str, env: gym.Env, name: str | None = None) -> SB3Agent:
    """``spec`` is ``PATH`` (the algo is read from ``config.json`` beside it) or ``ALGO:PATH``."""
    algo, _, path_text = spec.partition(":") if spec.split(":", 1)[0] in ALGO_CLASSES else ("", "", spec)
    path = Path(path_text)
    if not algo:
        config = path.parent / "config.json"
        if not config.exists():
            raise ValueError(
                f"sb3:{spec}: no config.json beside the model; use sb3:ALGO:PATH with ALGO in {sorted(ALGO_CLASSES)}"
            )
        algo = json.loads(config.read_text())["algo"]
    if not path.exists():
        raise FileNotFoundError(f"sb3:{spec}: no model file at {path}")
    module, cls = ALGO_CLASSES[algo]
    import importlib

    model = getattr(importlib.import_module(module), cls).load(str(path), device="cpu")
    return SB3Agent(model, algo, env, name or f"sb3:{path}")


class SB3Agent:
    """A trained SB3 model behind the Agent protocol (deterministic, masked at inference)."""

    def __init__(self, model: Any, algo: str, env: gym.Env, name: str) -> None:
        self.model = model
        self.algo = algo
        self.env = env
        self.name = name

    def reset(self, seed: int | None = None) -> None:
        """Seed the action sampling of ``predict(..., deterministic=False)``.

        SB3 samples from torch's global generator, so that is what is seeded.
        """
        if seed is not None:
            import torch

            torch.manual_seed(seed)

    def predict(
        self,
        observation: dict[str, np.ndarray],
        state: AgentState = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, AgentState]:
        """The model's action among the valid ones."""
        del state, episode_start
        mask = np.asarray(observation["action_mask"], dtype=bool)
        if self.algo in ("maskable-ppo", "bc"):
            action, _ = self.model.predict(observation, action_masks=mask, deterministic=deterministic)
            return np.asarray(action, dtype=np.int64).reshape(()), None
        import torch

        obs_tensor, _ = self.model.policy.obs_to_tensor(observation)
        with torch.no_grad():
            if self.algo == "dqn":
                scores = self.model.q_net(obs_tensor)[0].cpu().numpy()
            else:
                scores = self.model.policy.get_distribution(obs_tensor).distribution.probs[0].cpu().numpy()
        scores = np.where(mask, scores, -np.inf)
        if not deterministic and self.algo != "dqn":
            import torch

            probabilities = torch.as_tensor(np.where(mask, scores, 0.0))
            return np.asarray(int(torch.multinomial(probabilities, 1)), dtype=np.int64).reshape(()), None
        return np.asarray(int(np.argmax(scores)), dtype=np.int64).reshape(()), None
