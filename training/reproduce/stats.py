"""Summaries over seeds: means with 95 % confidence intervals, paired savings, paired t-tests.

Every number of the reproduction is a per-seed value; a :func:`summarize` turns the per-seed
values into ``{"mean", "ci95", "n", "values"}``. The interval is the Student-t interval of the
mean over seeds, ``mean +- t(0.975, n - 1) * sd / sqrt(n)``; ``ci95`` is its half-width (``None``
for fewer than two seeds, 0 when every seed gives the same value).

Example:
    >>> summary = summarize([1.0, 2.0, 3.0])
    >>> summary["mean"], round(summary["ci95"], 3)
    (2.0, 2.484)
    >>> summarize([0.25, 0.25])["ci95"]
    0.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats


def ci95_half_width(values: Sequence[float]) -> float | None:
    """Half-width of the 95 % Student-t interval of the mean (``None`` for n < 2)."""
    array = np.asarray(values, dtype=float)
    if array.size < 2:
        return None
    spread = float(array.std(ddof=1))
    if spread == 0.0:
        return 0.0
    return float(stats.t.ppf(0.975, array.size - 1) * spread / math.sqrt(array.size))


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
