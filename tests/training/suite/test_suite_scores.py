"""Normalised scores and their aggregates: checked against direct computations, and reproducible."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from training.suite.scores import (
    AGGREGATES,
    PROFILE_TAUS,
    _batched_ragged_statistics,
    _batched_statistics,
    _ragged_statistics,
    _statistics,
    aggregate,
    normalised,
    score_matrix,
    stratified_bootstrap,
    stratified_resamples,
)


def test_normalised__puts_the_baseline_at_0_and_the_reference_at_1_and_refuses_no_scale() -> None:
    assert normalised(np.array([8.0, 2.0, 5.0, 0.0]), 8.0, 2.0).tolist() == [0.0, 1.0, 0.5, 4.0 / 3.0]
    with pytest.raises(ValueError, match="must be below the baseline"):
        normalised(np.array([1.0]), 2.0, 2.0)


def test_aggregate__points_are_the_direct_statistics_and_intervals_hold_them() -> None:
    rng = np.random.default_rng(7)
    matrix = rng.normal(0.6, 0.3, size=(20, 5))
    result = aggregate({"agent": matrix})["agent"]
    flat, task_means = matrix.ravel(), matrix.mean(axis=0)
    direct = {  # rliable's definitions: IQM and the gap over every episode, median and mean of the task means
        "IQM": stats.trim_mean(flat, 0.25),
        "median": np.median(task_means),
        "mean": task_means.mean(),
        "optimality gap": np.mean(np.maximum(1.0 - flat, 0.0)),
    }
    assert set(result.intervals) == set(AGGREGATES)
    for name, value in direct.items():
        interval = result.intervals[name]
        assert interval.point == pytest.approx(value)
        assert interval.low <= interval.point <= interval.high
    np.testing.assert_allclose(result.profile, [(flat > tau).mean() for tau in PROFILE_TAUS])
    assert np.all(result.profile_low <= result.profile) and np.all(result.profile <= result.profile_high)


def test_aggregate__the_same_scores_give_the_same_intervals_and_agents_do_not_affect_each_other() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(10, 4)), rng.normal(size=(10, 4))
    alone = aggregate({"a": a})["a"]
    together = aggregate({"b": b, "a": a})["a"]
    assert alone.intervals == together.intervals
    np.testing.assert_array_equal(alone.profile_low, together.profile_low)


def test_stratified_bootstrap__resamples_within_tasks_and_covers_the_mean_like_its_standard_error() -> None:
    """Task means never mix: a statistic of one column sees only that column's values; the
    interval of a mean over 400 normal episodes is close to +-1.96 standard errors."""
    matrix = np.column_stack([np.zeros(50), np.ones(50)])
    low, high = stratified_bootstrap(matrix, lambda m: m.mean(axis=0), reps=200)
    assert low.tolist() == [0.0, 1.0] and high.tolist() == [0.0, 1.0]
    rng = np.random.default_rng(0)
    wide = rng.normal(size=(400, 1))
    low, high = stratified_bootstrap(wide, lambda m: np.array([m.mean()]))
    half_width = 1.96 * wide.std(ddof=1) / np.sqrt(400)
    assert (high[0] - low[0]) / 2 == pytest.approx(half_width, rel=0.15)


def test_score_matrix__a_rectangle_when_tasks_have_as_many_episodes_else_the_columns() -> None:
    """Equal episode counts give rliable's (episodes, tasks) matrix; unequal ones each task's column."""
    assert score_matrix({"x": np.arange(3.0), "y": np.ones(3)}, ["y", "x"]).tolist() == [[1, 0], [1, 1], [1, 2]]
    columns = score_matrix({"x": np.arange(3.0), "y": np.ones(2)}, ["x", "y"])
    assert isinstance(columns, list) and [c.tolist() for c in columns] == [[0.0, 1.0, 2.0], [1.0, 1.0]]


def test_ragged_aggregates__equal_rliable_s_on_a_rectangle_and_weigh_every_task_alike() -> None:
    """On a rectangle the weighted statistics are rliable's; repeating a task's episodes changes nothing."""
    rng = np.random.default_rng(3)
    matrix = rng.normal(0.5, 0.4, size=(20, 4))
    rectangle = aggregate({"a": matrix})["a"]
    columns = aggregate({"a": [matrix[:, k] for k in range(4)]})["a"]
    for name in AGGREGATES:
        assert columns.intervals[name].point == pytest.approx(rectangle.intervals[name].point, abs=1e-12)
    np.testing.assert_allclose(columns.profile, rectangle.profile, atol=1e-12)
    repeated = [np.tile(matrix[:, 0], 5), *(matrix[:, k] for k in range(1, 4))]  # task 0 with 100 episodes
    stretched = aggregate({"a": repeated})["a"]
    for name in AGGREGATES:
        assert stretched.intervals[name].point == pytest.approx(rectangle.intervals[name].point, abs=1e-12)


@pytest.mark.parametrize("ragged", [False, True])
def test_batched_statistics__equal_each_resample_evaluated_alone_to_the_bit(ragged: bool) -> None:
    """aggregate() evaluates every resample at once; rliable's functions on each resample in turn (the
    weighted IQM for tasks of unequal length) give the same bits, ties and scales included."""
    rng = np.random.default_rng(11)
    for trial in range(12):
        tasks = int(rng.integers(1, 6))
        scale = rng.choice([1e-3, 1.0, 1e3])
        if ragged:
            columns = [np.round(rng.normal(size=int(rng.integers(1, 25))) * scale, trial % 3) for _ in range(tasks)]
            resampled = stratified_resamples(columns, reps=200, seed=trial)
            alone = [_ragged_statistics([column[k] for column in resampled]) for k in range(200)]
            batched = _batched_ragged_statistics(resampled)  # type: ignore[arg-type]
        else:
            matrix = np.round(rng.normal(0.5, 1.0, size=(int(rng.integers(1, 30)), tasks)) * scale, trial % 3)
            resampled = stratified_resamples(matrix, reps=200, seed=trial)
            alone = [_statistics(resample) for resample in resampled]
            batched = _batched_statistics(resampled)  # type: ignore[arg-type]
        assert np.array_equal(batched, np.array(alone)), trial
