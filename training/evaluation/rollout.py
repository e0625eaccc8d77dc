"""Playing whole episodes with an agent: the loop shared by the CLI, evaluation and benchmarks."""

from __future__ import annotations

import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from agents import Agent


@dataclass(frozen=True)
class EpisodeResult:
    """One episode of one agent.

    Attributes:
        seed: The env seed.
        total_reward: Sum of rewards (= -objective * reward_scale without invalid actions).
        metrics: ``info["episode_metrics"]`` of the final step.
        decision_latency_ms: ``(steps,)`` wall time of each ``agent.predict`` call, in ms.
    """

    seed: int
    total_reward: float
    metrics: dict[str, float]
    decision_latency_ms: np.ndarray  # (steps,)


def play_episode(env: gym.Env, agent: Agent, seed: int, deterministic: bool = True) -> EpisodeResult:
    """Reset ``env`` with ``seed``, reset the agent, and play until the episode ends.

    ``deterministic=False`` lets stochastic policies (learned agents) sample their actions;
    their sampling is seeded by ``agent.reset(seed)``.
    """
    observation, _ = env.reset(seed=seed)
    agent.reset(seed)
    latencies: list[float] = []
    total = 0.0
    episode_start = np.ones(1, dtype=bool)
    while True:
        started = time.perf_counter()
        action, _ = agent.predict(observation, episode_start=episode_start, deterministic=deterministic)
        latencies.append((time.perf_counter() - started) * 1e3)
        episode_start = np.zeros(1, dtype=bool)
        observation, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        if terminated or truncated:  # however it ends, the env puts the metrics on the final step
            return EpisodeResult(seed, total, info["episode_metrics"], np.array(latencies))
