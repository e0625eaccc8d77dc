"""Labelled decision states, what behaviour cloning and DAgger fit a policy to (no torch here).

:class:`Labels` come from the one-step placement env (:func:`training.learning.bc.collect_labels`),
from DAgger's expert (:mod:`training.learning.imitation`) or from a planted dataset
(:mod:`training.learning.planted_dataset`); :func:`training.learning.bc.fit_policy` fits any of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Labels:
    """``n`` decision states and their labelled actions.

    Attributes:
        observations: Observation dict, each value ``(n, ...)`` float32.
        actions: ``(n,)`` int64, the labelled action of each state.
        masks: ``(n, N + 1)`` bool action masks.
    """

    observations: dict[str, np.ndarray]
    actions: np.ndarray  # (n,)
    masks: np.ndarray  # (n, N + 1)


def stack_labels(observations: list[dict[str, np.ndarray]], actions: list[int]) -> Labels:
    """Labels from per-state observation dicts and actions (the masks are the observations' ``action_mask``)."""
    stacked = {key: np.stack([o[key] for o in observations]) for key in observations[0]}
    return Labels(stacked, np.array(actions, dtype=np.int64), stacked["action_mask"].astype(bool))
