"""Playing whole episodes with an agent: the loop shared by the CLI, evaluation and benchmarks."""

from __future__ import annotations

import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from aco_env.actions import as_action_index
from aco_env.hindsight import planted_action_of
from agents import Agent
from training.evaluation.agreement import PlantedScore, planted_tracker


@dataclass(frozen=True)
class EpisodeResult:
    """One episode of one agent.

    Attributes:
        seed: The env seed.
        total_reward: Sum of rewards (= -objective * reward_scale without invalid actions).
        metrics: ``info["episode_metrics"]`` of the final step.
        decision_latency_ms: ``(steps,)`` wall time of each ``agent.predict`` call, in ms.
        planted: On a planted scenario, the episode against its planted schedule (optimum,
            per-step agreement: :mod:`training.evaluation.agreement`); else ``None``.
    """

    seed: int
    total_reward: float
    metrics: dict[str, float]
    decision_latency_ms: np.ndarray  # (steps,)
    planted: PlantedScore | None = None


def play_episode(env: gym.Env, agent: Agent, seed: int, deterministic: bool = True) -> EpisodeResult:
    """Reset ``env`` with ``seed``, reset the agent, and play until the episode ends.

    ``deterministic=False`` lets stochastic policies (learned agents) sample their actions;
    their sampling is seeded by ``agent.reset(seed)``. On a planted scenario each action is also
    compared with the planted action of its decision (read from the env after the agent
    decided; the agent never sees it).
    """
    observation, _ = env.reset(seed=seed)
    agent.reset(seed)
    tracker = planted_tracker(env)
    n_actions = int(env.action_space.n)  # type: ignore[attr-defined]  # Discrete(N + 1)
    latencies: list[float] = []
    total = 0.0
    episode_start = np.ones(1, dtype=bool)
    while True:
        started = time.perf_counter()
        action, _ = agent.predict(observation, episode_start=episode_start, deterministic=deterministic)
        latencies.append((time.perf_counter() - started) * 1e3)
        episode_start = np.zeros(1, dtype=bool)
        planted = planted_action_of(env) if tracker is not None else None  # type: ignore[attr-defined]
        observation, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        if tracker is not None and planted is not None:
            tracker.record(as_action_index(action, n_actions), planted, valid=not info["invalid_action"])
        if terminated or truncated:  # however it ends, the env puts the metrics on the final step
            score = tracker.score() if tracker is not None else None
            return EpisodeResult(seed, total, info["episode_metrics"], np.array(latencies), score)
