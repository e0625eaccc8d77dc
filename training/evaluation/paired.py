"""Paired comparisons: each agent against a reference agent, seed by seed.

Agents of one evaluation play the same seeds, so each seed gives a difference
``agent - reference`` of the same episode; the spread between episodes (some are simply harder)
cancels out, and the comparison is far tighter than two separate means with their intervals.
For each agent this module gives the mean of the per-seed differences of ``objective_usd``
(USD; negative: the agent costs less than the reference) with a 95 % interval, and the count of
seeds it wins (strictly lower objective), ties (equal within :data:`TIE_TOLERANCE_USD`) and loses.

The interval is Student's t interval of the mean of the paired differences
(:func:`training.evaluation.stats.ci95_half_width`), not a bootstrap: it is the interval every
other summary of the project reports (so the two read alike), it is exact arithmetic (no
resampling seed, the same bits on every machine and backend), and with the >= 100 episodes a
published table plays (:data:`training.evaluation.protocol.HEADLINE_EPISODES`) the mean of the
differences is close to normal; a bootstrap would give nearly the same width at more cost.

>>> result = paired_difference("a", [1.0, 2.0, 3.0], "ref", [2.0, 2.0, 4.0], seeds=(0, 1, 2))
>>> result.mean_difference, result.wins, result.ties, result.losses
(-0.6666666666666666, 2, 1, 0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from training.evaluation.stats import ci95_half_width

PAIRED_METRIC = "objective_usd"
"""The metric agents are compared on (USD, lower is better)."""
TIE_TOLERANCE_USD = 1e-9
"""Two objectives closer than this (USD) are a tie: float noise, not a difference."""


class UnpairedError(ValueError):
    """Two agents' episodes are not on the same seeds, so they cannot be compared seed by seed."""


@dataclass(frozen=True)
class PairedDifference:
    """One agent against the reference on the same seeds.

    Attributes:
        agent: The agent's name.
        reference: The reference agent's name.
        metric: The metric compared (:data:`PAIRED_METRIC`).
        episodes: N, the seeds both played.
        mean_difference: Mean over seeds of ``agent - reference`` (USD; < 0: the agent is better).
        ci95: Half-width of the 95 % t interval of that mean; ``None`` for N < 2; 0 when every
            difference is the same.
        wins: Seeds where the agent's value is strictly lower (by more than the tolerance).
        ties: Seeds where the two are equal within :data:`TIE_TOLERANCE_USD`.
        losses: Seeds where the agent's value is strictly higher.
    """

    agent: str
    reference: str
    metric: str
    episodes: int
    mean_difference: float
    ci95: float | None
    wins: int
    ties: int
    losses: int

    def to_json(self) -> dict[str, Any]:
        """Its results.json entry (``agent`` and ``reference`` are the keys around it)."""
        return {
            "episodes": self.episodes,
            "mean_difference": self.mean_difference,
            "ci95": self.ci95,
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
        }


def paired_difference(
    agent: str,
    values: Sequence[float],
    reference: str,
    reference_values: Sequence[float],
    seeds: Sequence[int],
    reference_seeds: Sequence[int] | None = None,
    metric: str = PAIRED_METRIC,
) -> PairedDifference:
    """``agent`` against ``reference`` from their per-seed values, in seed order.

    Args:
        agent: The agent's name.
        values: ``(N,)`` its value per seed (USD).
        reference: The reference agent's name.
        reference_values: ``(N,)`` the reference's value per seed (USD).
        seeds: ``(N,)`` the seeds of ``values``.
        reference_seeds: The seeds of ``reference_values``; ``None`` = the same as ``seeds``.
        metric: The metric's name (recorded, not read).

    Raises:
        UnpairedError: The seeds differ (in value or order), the lengths differ, or there are none.
    """
    reference_seeds = seeds if reference_seeds is None else reference_seeds
    if list(seeds) != list(reference_seeds):
        raise UnpairedError(
            f"{agent} played seeds {_describe(seeds)} and {reference} played {_describe(reference_seeds)}: "
            "a paired comparison needs both on the same seeds, in the same order"
        )
    if not len(values) == len(reference_values) == len(seeds) or not seeds:
        raise UnpairedError(
            f"{agent} has {len(values)} value(s), {reference} {len(reference_values)}, for {len(seeds)} seed(s): "
            "a paired comparison needs one value each per seed, and at least one seed"
        )
    differences = np.asarray(values, dtype=float) - np.asarray(reference_values, dtype=float)
    ties = int(np.sum(np.abs(differences) <= TIE_TOLERANCE_USD))
    wins = int(np.sum(differences < -TIE_TOLERANCE_USD))
    return PairedDifference(
        agent=agent,
        reference=reference,
        metric=metric,
        episodes=len(seeds),
        mean_difference=float(differences.mean()),
        ci95=ci95_half_width(differences),
        wins=wins,
        ties=ties,
        losses=len(seeds) - wins - ties,
    )


def paired_differences(
    rows: Mapping[str, Sequence[Mapping[str, Any]]], reference: str | None = None, metric: str = PAIRED_METRIC
) -> dict[str, PairedDifference]:
    """Every agent against ``reference`` (the first agent by default), from their results.json rows.

    Args:
        rows: Agent name -> its per-episode rows (each with ``seed`` and ``metric``), in the
            order the agents were given.
        reference: The reference agent; ``None`` = the first of ``rows``.
        metric: The metric compared.

    Returns:
        Agent name -> its comparison, for every agent but the reference (in the order of
        ``rows``); ``{}`` when there are no agents, or when some row lacks ``metric`` (the
        placement env has no objective).

    Raises:
        UnpairedError: ``reference`` is not one of the agents, or an agent played other seeds.
    """
    if not rows:
        return {}
    reference = next(iter(rows)) if reference is None else reference
    if reference not in rows:
        raise UnpairedError(f"the reference agent {reference!r} was not evaluated; the agents are {', '.join(rows)}")
    if any(row.get(metric) is None for agent_rows in rows.values() for row in agent_rows):
        return {}
    base = rows[reference]
    base_seeds = [int(row["seed"]) for row in base]
    base_values = [float(row[metric]) for row in base]
    return {
        agent: paired_difference(
            agent,
            [float(row[metric]) for row in agent_rows],
            reference,
            base_values,
            [int(row["seed"]) for row in agent_rows],
            base_seeds,
            metric,
        )
        for agent, agent_rows in rows.items()
        if agent != reference
    }


def _describe(seeds: Sequence[int]) -> str:
    """``seeds`` in a short form: ``a..b`` when consecutive, else the first few."""
    values = list(seeds)
    if not values:
        return "none"
    if values == list(range(values[0], values[0] + len(values))):
        return f"{values[0]}..{values[-1]}" if len(values) > 1 else str(values[0])
    shown = ", ".join(map(str, values[:5]))
    return f"[{shown}{', ...' if len(values) > 5 else ''}] ({len(values)})"
