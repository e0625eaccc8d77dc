"""The background cpu per tick and node, as the event loop reads it: one tick's row at a time.

The telemetry's ``(T, N)`` table of a whole-cluster fleet over a long episode is large (150 daily
ticks of 4,278 nodes are 640,000 values; as Python floats, 20 MB), but the simulator reads one
tick at a time (the current one, at a start, an end, a tick). :class:`BackgroundRows` keeps the
table as an array and hands out the row of a tick as a list (what the compiled loop indexes
fastest), made when first asked and kept while that tick is the one asked for; small tables
keep every row as a list. The values are the array's, exactly.
"""

from __future__ import annotations

import numpy as np

SMALL_TABLE = 1 << 16
"""Tables of at most this many values keep every row as a list."""


class BackgroundRows:
    """``(T, N)`` per-tick values, read a row (a tick) at a time; nothing changes them.

    Args:
        values: ``(T, N)`` float64, a view of the telemetry (not copied).
        scale: ``(N,)`` float64 each value is multiplied by, or ``None``; then divided by ``divisor``
            (``values * scale / divisor``, element by element: a row is that of the whole table).
        divisor: See ``scale``.
    """

    def __init__(self, values: np.ndarray, scale: np.ndarray | None = None, divisor: float = 1.0) -> None:
        self._values = values
        self._scale = scale
        self._divisor = divisor
        self._all: list[list[float]] = self._rows(values).tolist() if values.size <= SMALL_TABLE else []
        self._k = -1
        self._row: list[float] = []

    def _rows(self, values: np.ndarray) -> np.ndarray:
        """``values`` (some rows of the table) scaled."""
        if self._scale is None:
            return values
        return values * self._scale / self._divisor

    @property
    def n_ticks(self) -> int:
        """``T``."""
        return int(self._values.shape[0])

    def table(self) -> np.ndarray:
        """``(T, N)`` every tick's values, float64 (a new array; the rows :meth:`row` gives, all at once)."""
        return np.array(self._rows(self._values), dtype=np.float64)

    def row(self, k: int) -> list[float]:
        """``(N,)`` tick ``k``'s values (a list shared by every reader: do not change it)."""
        if k == self._k:
            return self._row
        row = self._all[k] if self._all else self._rows(self._values[k]).tolist()
        self._k, self._row = k, row
        return row
