"""Sorted disjoint half-open time intervals ``[lo, hi)`` as lists of pairs: the bound's windows and cells."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

Interval = tuple[float, float]


def merge(intervals: list[Interval]) -> list[Interval]:
    """The union of ``intervals`` (any order, empty ones dropped) as sorted disjoint intervals."""
    out: list[Interval] = []
    for lo, hi in sorted(i for i in intervals if i[0] < i[1]):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """The times in both ``a`` and ``b``."""
    return merge([(max(x0, y0), min(x1, y1)) for x0, x1 in a for y0, y1 in b if max(x0, y0) < min(x1, y1)])


def subtract(a: list[Interval], removed: list[Interval]) -> list[Interval]:
    """The times of ``a`` outside every interval of ``removed``."""
    out = list(a)
    for r0, r1 in removed:
        out = [piece for lo, hi in out for piece in ((lo, min(hi, r0)), (max(lo, r1), hi)) if piece[0] < piece[1]]
    return merge(out)


def runs(bounds: np.ndarray, fuzzy: np.ndarray) -> list[Interval]:
    """The maximal runs of grid cells marked in ``fuzzy`` (``(G,)`` bool; cells ``bounds[g]..bounds[g + 1]``)."""
    return merge([(float(bounds[g]), float(bounds[g + 1])) for g in np.flatnonzero(fuzzy)])


def split(intervals: list[Interval], cuts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cut each interval at the cut points inside it; returns the pieces' ``(lo, hi)`` arrays."""
    cuts = np.unique(cuts[np.isfinite(cuts)])
    los: list[float] = []
    his: list[float] = []
    for lo, hi in intervals:
        edges = [lo, *cuts[(cuts > lo) & (cuts < hi)].tolist(), hi]
        los.extend(edges[:-1])
        his.extend(edges[1:])
    return np.array(los, dtype=np.float64), np.array(his, dtype=np.float64)


def crossed_within(times: Sequence[float], lo: float, hi: float) -> bool:
    """Whether some time of ``times`` (sorted, e.g. a node's interruptions) lies in ``(lo, hi)``.

    >>> crossed_within([10.0, 20.0], 10.0, 20.0), crossed_within([10.0, 20.0], 5.0, 11.0)
    (False, True)
    """
    k = bisect.bisect_right(times, lo)
    return k < len(times) and times[k] < hi
