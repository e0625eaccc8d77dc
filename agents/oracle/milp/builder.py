"""The sparse program under construction: variables, objective and rows, and the option ranges rows cover.

A row adds a contiguous range ``a..b`` of a (job, node) group's options through the group's step
variables (two non-zeros whatever its length, :mod:`agents.oracle.milp.program`); :func:`covering`
finds, per group and query time or tick, the range of options covering it.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_array, csc_array

from agents.oracle.milp.options import Options


class Builder:
    """Accumulates variables, objective and sparse rows.

    Columns ``0 .. n_base - 1`` are the options' step variables, whose objective the caller keeps;
    :meth:`new_vars` appends the others.
    """

    def __init__(self, n_base: int) -> None:
        self.n_vars = n_base
        self.c: list[np.ndarray] = []
        self.integral: list[np.ndarray] = []
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.ub: list[np.ndarray] = []
        self.n_rows = 0

    def new_vars(self, cost: np.ndarray, integral: bool) -> np.ndarray:
        """``(n,)`` column indices of ``n = len(cost)`` new variables in ``[0, 1]`` with objective ``cost``."""
        first = self.n_vars
        self.n_vars += len(cost)
        self.c.append(np.asarray(cost, dtype=np.float64))
        self.integral.append(np.full(len(cost), int(integral)))
        return np.arange(first, self.n_vars)

    def new_rows(self, ub: np.ndarray) -> np.ndarray:
        """``(n,)`` indices of ``n = len(ub)`` new rows ``... <= ub``."""
        first = self.n_rows
        self.n_rows += len(ub)
        self.ub.append(np.asarray(ub, dtype=np.float64))
        return np.arange(first, self.n_rows)

    def add(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray | float) -> None:
        """Add the non-zeros ``vals`` (one value, or one per entry) at ``(rows[k], cols[k])``."""
        self.rows.append(np.asarray(rows, dtype=np.int32))  # indices < 2**31: far above any memory budget
        self.cols.append(np.asarray(cols, dtype=np.int32))
        self.vals.append(np.broadcast_to(np.asarray(vals, dtype=np.float64), (len(rows),)))

    def matrix(self) -> csc_array:
        """The ``(n_rows, n_vars)`` constraint matrix; empties the pieces as it goes (less peak memory)."""
        parts = []
        for pieces in (self.vals, self.rows, self.cols):
            parts.append(np.concatenate(pieces))
            pieces.clear()
        vals, rows, cols = parts
        return coo_array((vals, (rows, cols)), shape=(self.n_rows, self.n_vars)).tocsc()

    def add_range(self, rows: np.ndarray, first_of_group: np.ndarray, a: np.ndarray, b: np.ndarray,
                  weight: np.ndarray | float) -> None:
        """Add ``weight * (P[first + b] - P[first + a - 1])`` (the options ``a..b``) to rows."""
        weight = np.broadcast_to(np.asarray(weight, dtype=np.float64), (len(rows),))
        self.add(rows, first_of_group + b, weight)
        has = a > 0
        self.add(rows[has], first_of_group[has] + a[has] - 1, -weight[has])


def covering(
    options: Options, groups: np.ndarray, queries: np.ndarray, kind: str, among: np.ndarray | None = None
) -> tuple[np.ndarray, ...]:
    """For each group and query, the range ``a..b`` of its options covering the query.

    ``kind``: ``"time"`` (``use_start <= q < use_end``), ``"tick"`` (``tick_lo <= q <
    tick_hi``) or ``"span"`` (``use_start <= q[m]`` and ``use_end >= q[m + 1]``; queries are
    breakpoints and the result indexes intervals ``m``). With ``among`` (``(n,)`` bool) only
    those options count: a group's covering options then form one range per maximal run of
    ``among`` in the group, and a query may have several ranges in a group.

    Returns:
        ``(query_index, group, a, b)`` for the non-empty ranges (``a``, ``b`` from the group's
        first option).
    """
    out: list[list[np.ndarray]] = [[], [], [], []]
    offsets = options.group_offsets
    for g in groups:
        for lo, hi in _runs(among, offsets[g], offsets[g + 1]):
            if kind == "tick":
                a = np.searchsorted(options.tick_hi[lo:hi], queries, side="right")
                b = np.searchsorted(options.tick_lo[lo:hi], queries, side="right") - 1
            elif kind == "time":
                a = np.searchsorted(options.use_end_s[lo:hi], queries, side="right")
                b = np.searchsorted(options.use_start_s[lo:hi], queries, side="right") - 1
            else:
                a = np.searchsorted(options.use_end_s[lo:hi], queries[1:], side="left")
                b = np.searchsorted(options.use_start_s[lo:hi], queries[:-1], side="right") - 1
            q = np.flatnonzero(a <= b)
            shift = lo - offsets[g]
            for bucket, values in zip(out, (q, np.full(len(q), g), a[q] + shift, b[q] + shift), strict=True):
                bucket.append(values)
    if not out[0]:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(4))
    return tuple(np.concatenate(bucket).astype(np.int64) for bucket in out)


def _runs(among: np.ndarray | None, lo: int, hi: int) -> list[tuple[int, int]]:
    """The maximal runs ``[start, stop)`` of True in ``among[lo:hi]`` (all of ``[lo, hi)`` without ``among``)."""
    if among is None:
        return [(lo, hi)]
    edges = np.flatnonzero(np.diff(np.concatenate(([False], among[lo:hi], [False])).astype(np.int8)))
    return [(lo + int(a), lo + int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]
