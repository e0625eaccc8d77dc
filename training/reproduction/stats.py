"""Summaries over seeds: means with 95 % confidence intervals, paired savings, paired t-tests.

Every number of the reproduction is a per-seed value; a :func:`summarize` turns the per-seed
values into ``{"mean", "ci95", "n", "values"}``. ``ci95`` is the half-width of the Student-t
interval of the mean over seeds (:func:`training.evaluation.stats.ci95_half_width`: ``None`` for fewer
than two seeds, 0 when every seed gives the same value).

Example:
    >>> summary = summarize([1.0, 2.0, 3.0])
    >>> summary["mean"], round(summary["ci95"], 3)
    (2.0, 2.484)
    >>> summarize([0.25, 0.25])["ci95"]
    0.0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from training.evaluation.stats import ci95_half_width


def summarize(values: Sequence[float]) -> dict[str, Any]:
    """``{"mean", "ci95", "n", "values"}`` of per-seed values (mean ``None`` when empty)."""
    array = [float(v) for v in values]
    return {
        "mean": float(np.mean(array)) if array else None,
        "ci95": ci95_half_width(array),
        "n": len(array),
        "values": array,
    }


def relative_saving(baseline: float, value: float) -> float:
    """``(baseline - value) / baseline``: the fraction saved against ``baseline`` (0 if it is 0)."""
    return (baseline - value) / baseline if baseline != 0 else 0.0


def paired_savings(baseline: Sequence[float], values: Sequence[float]) -> dict[str, Any]:
    """:func:`summarize` of the per-seed savings ``(baseline - value) / baseline``."""
    if len(baseline) != len(values):
        raise ValueError(f"paired values need equal lengths, got {len(baseline)} and {len(values)}")
    return summarize([relative_saving(b, v) for b, v in zip(baseline, values, strict=True)])


def paired_t_test(before: Sequence[float], after: Sequence[float]) -> dict[str, float | None]:
    """Paired t-test of ``after - before`` over seeds: ``{"t", "p"}`` (``None`` when undefined).

    Undefined for fewer than two pairs or when every difference is equal (zero variance).
    """
    diff = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    if diff.size < 2 or float(diff.std(ddof=1)) == 0.0:
        return {"t": None, "p": None}
    result = stats.ttest_rel(after, before)
    return {"t": float(result.statistic), "p": float(result.pvalue)}
