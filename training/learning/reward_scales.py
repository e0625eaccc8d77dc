"""Rewards on one scale for every task: each task's rewards divided by a reference agent's episode objective.

A scenario's objective is in USD, and its level is the scenario's: about 4 USD an episode on the
default fleet, 14-40 on 24-hour VM traces, over 100 on the 20-node workflows. PPO's value head
fits returns with a small learning rate and clipped gradients, so returns of tens or hundreds
are targets it cannot reach in a run (its explained variance stays at 0 and the value loss, in
the thousands, drowns the policy's gradient through the shared embedding), and in a mix of
tasks the dearest one decides every update. Dividing each task's rewards by what a simple,
fixed policy pays there puts every task's returns near -1, whatever its cost level:

    reward_t = -(objective accrued at step t, USD) * reward_scale / reference_usd(task)

``reference_usd(task)`` is the mean episode objective of the reference agent (``first-fit`` by
default: deterministic, cheap, and it plays every fleet) on a few of the task's training seeds,
computed when training starts. It depends only on the task, the agent and the seeds, so a
resumed run computes the same scales again. The learning curve and every evaluation still
report USD.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from digital_twin.scenario import Scenario
from training.evaluation.evaluator import evaluate
from training.evaluation.protocol import TRAINING, first_seed

REFERENCE_EPISODES = 8
"""Training-range episodes per task whose mean objective sets the task's scale."""
SMALLEST_REFERENCE_USD = 1e-6
"""A reference objective below this (a task the reference plays for free) leaves the task's rewards unscaled."""

logger = logging.getLogger("training")


@dataclass(frozen=True)
class TaskScale:
    """One task's reward scale.

    Attributes:
        scenario: The task's scenario name.
        reference_usd: The reference agent's mean episode objective on the reference seeds (USD).
        scale: What the task's USD rewards are multiplied by: ``reward_scale / reference_usd``
            (``reward_scale`` alone when ``reference_usd`` is below :data:`SMALLEST_REFERENCE_USD`).
    """

    scenario: str
    reference_usd: float
    scale: float


def task_reward_scales(
    tasks: Sequence[Scenario], reference: str, reward_scale: float, seed: int, episodes: int = REFERENCE_EPISODES
) -> tuple[TaskScale, ...]:
    """Each task's reward scale, in the order of ``tasks``; plain ``reward_scale`` for all when ``reference`` is empty.

    Args:
        tasks: The scenarios trained on.
        reference: A registered agent (``first-fit``) whose mean objective normalises each task,
            or ``""`` for no normalisation.
        reward_scale: The run's fixed factor on top.
        seed: The run's seed: the reference plays the training seeds from ``TRAINING.start + seed``.
        episodes: Reference episodes per task.
    """
    if not reference:
        return tuple(TaskScale(task.name, math.nan, reward_scale) for task in tasks)
    first = first_seed(TRAINING, episodes, offset=seed % (TRAINING.stop - TRAINING.start - episodes + 1))
    scales = []
    for task in tasks:
        played = evaluate(task, [reference], episodes, seed=first, progress=False)
        usd = float(played.summary(reference).mean["objective_usd"])
        scale = reward_scale / usd if usd >= SMALLEST_REFERENCE_USD else reward_scale
        scales.append(TaskScale(task.name, usd, scale))
        logger.debug("rewards of %s: x %.4g (%s's mean objective %.4g USD)", task.name, scale, reference, usd)
    return tuple(scales)
