"""The env's configuration and its documented ``info`` keys (no behaviour here)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypedDict

from digital_twin import DEFERRALS, NEXT_EVENT

PENALTY = "penalty"
"""Invalid action policy: reward ``-invalid_action_penalty_usd * reward_scale``, the job stays."""
RAISE = "raise"
"""Invalid action policy (strict): raise :class:`InvalidActionError`; the env is unchanged."""
INVALID_ACTION_POLICIES = (PENALTY, RAISE)
FULL_INFO = "full"
"""``info`` policy: every step's ``info`` has the keys of :class:`StepInfo` (the objective so far by term, ...)."""
FINAL_INFO = "final"
"""``info`` policy for vector envs and training: ``info`` is empty but on an episode's final step, where it
is ``{"episode_metrics": ...}`` (all a vector env's merge and a trainer read; rewards and observations unchanged)."""
INFO_POLICIES = (FULL_INFO, FINAL_INFO)

UNSHAPED = "none"
"""Rewards are minus the objective accrued since the last decision, times the reward scale."""
COMMITTED_COST = "committed-cost"
"""Potential-based shaping by the committed cost: each reward also moves by the change in minus what the running
jobs are expected to cost (:class:`aco_env.committed_cost.CommittedCost`), 0 once the episode is over."""
REWARD_SHAPINGS = (UNSHAPED, COMMITTED_COST)


class InvalidActionError(ValueError):
    """Raised in strict mode for an action outside the mask; the env's state is unchanged."""


@dataclass(frozen=True, slots=True)
class EnvConfig:
    """How the MDP is posed on top of a scenario (not which cluster or workload: that is the scenario).

    Attributes:
        queue_window: K, the number of queued jobs after the current one shown in ``obs["queue"]``.
        history_ticks: W, the background-cpu history window per node in ``obs["history"]``.
        reward_scale: Rewards are ``-(objective accrued, USD) * reward_scale``.
        invalid_action: ``"penalty"`` (default) or ``"raise"`` (strict).
        invalid_action_penalty_usd: Reward penalty (before scaling) for an invalid action in
            penalty mode. It is not part of the objective.
        max_invalid_streak: In penalty mode, the episode is truncated after this many invalid
            actions in a row (an agent stuck on them would otherwise never end it; every valid
            action moves the episode on). By chance, a uniformly random agent with only defer
            valid gets there with probability ``(N / (N + 1)) ** 1000``: below 1e-4 up to 100 nodes.
        deferral: When a deferred job is asked again (:mod:`digital_twin.sim.deferral`):
            ``"next-event"`` (default) after the next event, or ``"new-fit"`` only once it fits
            on a node it did not fit on when deferred (fewer decisions; exact for agents whose
            defers depend only on where the job fits, such as ACO).
        info: What ``reset`` and ``step`` return as ``info``: ``"full"`` (default, every key of
            :class:`StepInfo` at every step) or ``"final"`` (``{}`` but on an episode's final step,
            ``{"episode_metrics": ...}``): what a vector env merges at every step and a trainer
            reads, without building and merging the objective's breakdown at each step.
        reward_shaping: ``"none"`` (default) or ``"committed-cost"``: a placement's reward then
            carries at once what its run is expected to cost, its job's rate times its duration
            (and on a spot node the eviction penalty times the chance of a failure before it
            ends), which the unshaped reward spreads over the steps the job runs through. Each
            reward adds ``(committed before - committed after) * reward_scale``, the committed
            cost being :class:`~aco_env.committed_cost.CommittedCost`'s and 0 after the last step,
            so an episode's return is still minus its objective times the scale (a potential's
            differences sum to its first value, 0 with nothing running) and every policy's
            expected return is unchanged. The potential reads the twin's state (the true work
            left), as the reward itself does; the observation is the same.
    """

    queue_window: int = 4
    history_ticks: int = 6
    reward_scale: float = 1.0
    invalid_action: str = PENALTY
    invalid_action_penalty_usd: float = 0.1
    max_invalid_streak: int = 1000
    deferral: str = NEXT_EVENT
    info: str = FULL_INFO
    reward_shaping: str = UNSHAPED

    def __post_init__(self) -> None:
        if self.queue_window < 0 or self.history_ticks < 1:
            raise ValueError("queue_window must be >= 0 and history_ticks >= 1")
        if not (math.isfinite(self.reward_scale) and self.reward_scale > 0):
            raise ValueError(f"reward_scale must be a positive finite number, got {self.reward_scale}")
        if self.invalid_action not in INVALID_ACTION_POLICIES:
            raise ValueError(f"invalid_action must be one of {INVALID_ACTION_POLICIES}, got {self.invalid_action!r}")
        if not (math.isfinite(self.invalid_action_penalty_usd) and self.invalid_action_penalty_usd >= 0):
            raise ValueError("invalid_action_penalty_usd must be a finite number >= 0")
        if self.max_invalid_streak < 1:
            raise ValueError(f"max_invalid_streak must be an integer >= 1, got {self.max_invalid_streak!r}")
        if self.deferral not in DEFERRALS:
            raise ValueError(f"deferral must be one of {DEFERRALS}, got {self.deferral!r}")
        if self.info not in INFO_POLICIES:
            raise ValueError(f"info must be one of {INFO_POLICIES}, got {self.info!r}")
        if self.reward_shaping not in REWARD_SHAPINGS:
            raise ValueError(f"reward_shaping must be one of {REWARD_SHAPINGS}, got {self.reward_shaping!r}")


class StepInfo(TypedDict, total=False):
    """The documented ``info`` keys of :meth:`ClusterSchedulingEnv.step` (and ``reset``), under ``info="full"``.

    Under ``info="final"`` only ``episode_metrics`` is given, on the final step.

    Keys:
        objective: The objective so far by term (USD and counts), plus ``objective_usd``.
        sim_time_s: Simulated time after the step.
        invalid_action: True when the action was outside the mask (penalty mode).
        episode_metrics: Only on the final step: see :data:`aco_env.metrics.EPISODE_METRICS`.
    """

    objective: dict[str, float]
    sim_time_s: float
    invalid_action: bool
    episode_metrics: dict[str, float]
