"""Reward functions: strategy objects injected into the env (a new reward is a new class)."""

from __future__ import annotations

import abc


class RewardFn(abc.ABC):
    """Maps the episode objective (USD) before and after a step to a reward."""

    @abc.abstractmethod
    def __call__(self, before_usd: float, after_usd: float) -> float:
        """The reward for a step that moved the objective from ``before_usd`` to ``after_usd``."""


class ObjectiveDeltaReward(RewardFn):
    """``-(after.total - before.total) * scale``: an episode's return is minus its objective x scale.

    Args:
        scale: Multiplies every reward (> 0), e.g. to bring returns near 1 for learning.
    """

    def __init__(self, scale: float = 1.0) -> None:
        if not scale > 0:
            raise ValueError(f"reward scale must be > 0, got {scale}")
        self.scale = scale

    def __call__(self, before_usd: float, after_usd: float) -> float:
        """``-(after_usd - before_usd) * scale``."""
        return -(after_usd - before_usd) * self.scale
