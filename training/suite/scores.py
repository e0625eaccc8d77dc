"""Normalised scores and their aggregates across tasks, as rliable computes them.

A task's normalised score puts the weak baseline's mean objective over the task's test seeds at 0
and the reference's mean at 1 (the objective is minimised, so higher scores are better):

    score(episode) = (baseline_mean - objective(episode)) / (baseline_mean - reference_mean)

The constants are the task's (as Atari's human-normalised and D4RL's normalised returns use fixed
per-task constants), so scores are comparable across papers and a score above 1 means beating the
reference (possible where the reference is an oracle's plan rather than a proven optimum). The
oracle's lower bound, normalised the same way, is the most any policy could score.

Aggregates over a group of tasks follow rliable (Agarwal et al., "Deep RL at the Edge of the
Statistical Precipice", NeurIPS 2021) on the ``(episodes, tasks)`` matrix of an agent's scores: the
interquartile mean (IQM: the 25 % trimmed mean of every episode's score), the median and mean of
the task means, and the optimality gap (the mean shortfall of every score below 1), computed by
``rliable.metrics``, each with a 95 % stratified-bootstrap percentile interval (episodes resampled
with replacement within each task), and the performance profile (the share of an agent's episode
scores above each threshold tau, with its interval). Tasks may have different numbers of test
episodes (aco-suite v2: 100, or 20 where an episode is dear); then every episode weighs ``1 /
(tasks x its task's episodes)``, so each task weighs the same, as in rliable's rectangle: the
IQM is the weighted 25 % trimmed mean (:func:`weighted_iqm`), the optimality gap and the profile
weighted means; on a rectangle each equals rliable's. Episodes stand in for rliable's runs: for a
trained agent the intervals cover episode-to-episode variation of one model, not the variation
between training runs.

The bootstrap is :func:`stratified_resamples` and :func:`percentile_interval`, not ``rliable.library``'s:
rliable 1.2.0's ``library`` module needs ``arch < 8``, whose releases do not import under pandas 3, and it draws its
resamples from numpy's global generator even when given a ``random_state`` (so its intervals change
from run to run). The one here is the same stratified percentile bootstrap with its own seeded
generator: the intervals are a function of the scores alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from rliable import metrics

BOOTSTRAP_REPS = 2000
"""Bootstrap replications of every interval."""
BOOTSTRAP_SEED = 0
"""Seed of the bootstrap's generator: the intervals are a function of the scores alone."""
AGGREGATES: dict[str, Callable[[np.ndarray], float]] = {
    "IQM": metrics.aggregate_iqm,
    "median": metrics.aggregate_median,
    "mean": metrics.aggregate_mean,
    "optimality gap": metrics.aggregate_optimality_gap,
}
"""The aggregate metrics, by the names tables and results files use (rliable's functions)."""
PROFILE_TAUS = np.linspace(-1.0, 1.5, 26)
"""Thresholds of the performance profiles: normalised scores from -1 (as far below the baseline as
the reference is above it) to 1.5."""


def normalised(objectives: np.ndarray, baseline_mean: float, reference_mean: float) -> np.ndarray:
    """Objectives (USD, minimised) -> normalised scores (baseline 0, reference 1; higher is better).

    Args:
        objectives: Any shape, USD.
        baseline_mean: The weak baseline's mean objective on the task's test seeds.
        reference_mean: The reference's mean objective there; below ``baseline_mean``.

    Raises:
        ValueError: The reference is not below the baseline (no scale to normalise by).

    >>> normalised(np.array([10.0, 6.0, 2.0]), 10.0, 2.0).tolist()
    [0.0, 0.5, 1.0]
    """
    span = baseline_mean - reference_mean
    if not span > 0.0:
        raise ValueError(f"the reference ({reference_mean:.4f}) must be below the baseline ({baseline_mean:.4f})")
    return (baseline_mean - np.asarray(objectives, dtype=float)) / span


@dataclass(frozen=True)
class Interval:
    """A point estimate and its 95 % bootstrap interval."""

    point: float
    low: float
    high: float

    def overlaps(self, other: Interval) -> bool:
        """Whether the two intervals share a value."""
        return self.low <= other.high and other.low <= self.high

    def __str__(self) -> str:
        return f"{self.point:.3f} [{self.low:.3f}, {self.high:.3f}]"


@dataclass(frozen=True)
class Aggregate:
    """One agent's aggregates over a group of tasks.

    Attributes:
        intervals: :data:`AGGREGATES`' names -> estimate with interval.
        profile: ``(len(PROFILE_TAUS),)`` share of episode scores above each tau.
        profile_low: Its interval's lower ends.
        profile_high: Its interval's upper ends.
    """

    intervals: Mapping[str, Interval]
    profile: np.ndarray
    profile_low: np.ndarray
    profile_high: np.ndarray


def score_matrix(per_task: Mapping[str, np.ndarray], tasks: Sequence[str]) -> np.ndarray | list[np.ndarray]:
    """One agent's per-task episode scores, in ``tasks`` order.

    rliable's ``(episodes, tasks)`` matrix when every task has as many episodes, else the list of
    each task's ``(episodes_t,)`` scores.
    """
    columns = [np.asarray(per_task[task], dtype=float) for task in tasks]
    if len({len(column) for column in columns}) == 1:
        return np.stack(columns, axis=1)
    return columns


def aggregate(scores: Mapping[str, np.ndarray | list[np.ndarray]]) -> dict[str, Aggregate]:
    """Every agent's aggregates and performance profile.

    Args:
        scores: Agent -> ``(episodes, tasks)`` normalised scores, or the list of each task's
            scores (:func:`score_matrix`; the same tasks, in the same order).

    Returns:
        Agent -> its :class:`Aggregate`, with intervals from a bootstrap seeded by
        :data:`BOOTSTRAP_SEED` (each agent's own generator: adding an agent changes no other's).
    """
    result = {}
    for agent, matrix in scores.items():
        rectangle = isinstance(matrix, np.ndarray)
        points = _statistics(matrix) if rectangle else _ragged_statistics(matrix)  # type: ignore[arg-type]
        resamples = stratified_resamples(matrix)
        replications = _batched_statistics(resamples) if rectangle else _batched_ragged_statistics(resamples)  # type: ignore[arg-type]
        low, high = percentile_interval(replications)
        count = len(AGGREGATES)
        intervals = {
            name: Interval(float(points[k]), float(low[k]), float(high[k])) for k, name in enumerate(AGGREGATES)
        }
        result[agent] = Aggregate(intervals, points[count:], low[count:], high[count:])
    return result


def _statistics(matrix: np.ndarray) -> np.ndarray:
    """The aggregates (in :data:`AGGREGATES` order), then the profile at every tau, of one matrix."""
    aggregates = [function(matrix) for function in AGGREGATES.values()]
    profile = [np.mean(matrix > tau) for tau in PROFILE_TAUS]
    return np.array([*aggregates, *profile], dtype=float)


def _ragged_statistics(columns: list[np.ndarray]) -> np.ndarray:
    """:func:`_statistics` of tasks with different numbers of episodes, each task weighing the same."""
    scores = np.concatenate(columns)
    weights = np.concatenate([np.full(len(c), 1.0 / (len(columns) * len(c))) for c in columns])
    means = np.array([c.mean() for c in columns])
    aggregates = [
        weighted_iqm(scores, weights),
        float(np.median(means)),
        float(means.mean()),
        float(np.sum(weights * np.maximum(1.0 - scores, 0.0))),
    ]
    profile = [float(np.sum(weights * (scores > tau))) for tau in PROFILE_TAUS]
    return np.array([*aggregates, *profile], dtype=float)


def weighted_iqm(scores: np.ndarray, weights: np.ndarray) -> float:
    """The weighted 25 % trimmed mean: the mean of the middle half of the weight, sorted by score.

    Each score holds an interval of the cumulative weight (total 1); the part of it inside [0.25,
    0.75] counts. With equal weights and a count divisible by 4 it is scipy's ``trim_mean(x,
    0.25)``, which rliable's IQM is.

    >>> round(weighted_iqm(np.array([0.0, 1.0, 2.0, 3.0]), np.full(4, 0.25)), 6)
    1.5
    """
    order = np.argsort(scores, kind="stable")
    x, w = scores[order], weights[order] / weights.sum()
    upper = np.cumsum(w)
    lower = upper - w
    inside = np.clip(np.minimum(upper, 0.75) - np.maximum(lower, 0.25), 0.0, None)
    return float(np.sum(x * inside) / np.sum(inside))


def stratified_bootstrap(
    matrix: np.ndarray | list[np.ndarray],
    statistic: Callable[..., np.ndarray],
    reps: int = BOOTSTRAP_REPS,
    seed: int = BOOTSTRAP_SEED,
    size: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of ``statistic`` under resampling the episodes of each task.

    Each replication draws, for every task independently, as many episodes as the task has, with
    replacement (:func:`stratified_resamples`), and evaluates ``statistic`` on the resample (a
    matrix, or a list of columns). :func:`aggregate` computes its statistics on every resample at
    once instead, on the same resamples, to the same bits.

    Args:
        matrix: ``(episodes, tasks)`` scores, or each task's ``(episodes_t,)`` scores.
        statistic: resample -> ``(k,)``.
        reps: Replications.
        seed: The generator's seed.
        size: The interval's coverage.

    Returns:
        ``(low, high)``, each ``(k,)``: the ``(1 - size) / 2`` and ``(1 + size) / 2`` quantiles.

    >>> low, high = stratified_bootstrap(np.ones((5, 2)), lambda m: np.array([m.mean()]))
    >>> float(low[0]), float(high[0])
    (1.0, 1.0)
    """
    resamples = stratified_resamples(matrix, reps, seed)
    if isinstance(resamples, np.ndarray):
        replications = np.array([statistic(resample) for resample in resamples])
    else:
        replications = np.array([statistic([column[k] for column in resamples]) for k in range(reps)])
    return percentile_interval(replications, size)


def stratified_resamples(
    matrix: np.ndarray | list[np.ndarray], reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED
) -> np.ndarray | list[np.ndarray]:
    """``reps`` resamples of each task's episodes, with replacement, from a generator seeded by ``seed``.

    Returns:
        ``(reps, episodes, tasks)`` for a matrix; for a list of columns, each task's ``(reps,
        episodes_t)`` resamples. The draws are made replication by replication (then task by
        task), so the resamples do not depend on how they are evaluated.
    """
    generator = np.random.default_rng(seed)
    if isinstance(matrix, np.ndarray):
        episodes, tasks = matrix.shape
        columns = np.arange(tasks)
        return np.stack([matrix[generator.integers(0, episodes, size=(episodes, tasks)), columns] for _ in range(reps)])
    draws = [[c[generator.integers(0, len(c), size=len(c))] for c in matrix] for _ in range(reps)]
    return [np.stack([draw[t] for draw in draws]) for t in range(len(matrix))]


def percentile_interval(replications: np.ndarray, size: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The ``(1 - size) / 2`` and ``(1 + size) / 2`` quantiles of ``(reps, k)`` replications, each ``(k,)``."""
    tail = (1.0 - size) / 2.0
    return np.quantile(replications, tail, axis=0), np.quantile(replications, 1.0 - tail, axis=0)


def _batched_statistics(resamples: np.ndarray) -> np.ndarray:
    """:func:`_statistics` of every ``(episodes, tasks)`` resample of ``(reps, episodes, tasks)``: ``(reps, k)``.

    Each row is computed as rliable computes it on one matrix (scipy's trim_mean partitions the
    flattened scores; the task means reduce over episodes), so every value equals
    :func:`_statistics`' to the bit (a test checks it).
    """
    reps, episodes, tasks = resamples.shape
    flat = resamples.reshape(reps, episodes * tasks)
    cut = int(0.25 * flat.shape[1])
    middle = np.partition(flat, (cut, flat.shape[1] - cut - 1), axis=1)[:, cut : flat.shape[1] - cut]
    task_means = resamples.mean(axis=1)
    aggregates = [
        middle.mean(axis=1),
        np.median(task_means, axis=1),
        task_means.mean(axis=1),
        1 - np.minimum(flat, 1).mean(axis=1),
    ]
    profile = [(flat > tau).mean(axis=1) for tau in PROFILE_TAUS]
    return np.stack([*aggregates, *profile], axis=1).astype(float)


def _batched_ragged_statistics(columns: list[np.ndarray]) -> np.ndarray:
    """:func:`_ragged_statistics` of every replication of each task's ``(reps, episodes_t)`` resamples.

    Returns ``(reps, k)``; every value equals :func:`_ragged_statistics`' to the bit (a test checks it).
    """
    scores = np.concatenate(columns, axis=1)
    weights = np.concatenate([np.full(c.shape[1], 1.0 / (len(columns) * c.shape[1])) for c in columns])
    means = np.stack([c.mean(axis=1) for c in columns], axis=1)
    order = np.argsort(scores, axis=1, kind="stable")
    x, w = np.take_along_axis(scores, order, axis=1), weights[order] / weights.sum()
    upper = np.cumsum(w, axis=1)
    inside = np.clip(np.minimum(upper, 0.75) - np.maximum(upper - w, 0.25), 0.0, None)
    aggregates = [
        np.sum(x * inside, axis=1) / np.sum(inside, axis=1),
        np.median(means, axis=1),
        means.mean(axis=1),
        np.sum(weights * np.maximum(1.0 - scores, 0.0), axis=1),
    ]
    profile = [np.sum(weights * (scores > tau), axis=1) for tau in PROFILE_TAUS]
    return np.stack([*aggregates, *profile], axis=1).astype(float)
