"""Column checks shared by the trace readers (private).

Each failure is a :class:`~digital_twin.errors.TraceError` naming the file, the first bad line
and the column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from digital_twin.errors import TraceError
from digital_twin.traces._io import Where


def require_finite(frame: pd.DataFrame, column: str, where: Where) -> np.ndarray:
    """The column as float64, after checking it has no empty, NaN or infinite value.

    Raises:
        TraceError: Naming the file, the first bad line and the column.
    """
    values = frame[column].to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        record = int(frame.index[bad[0]])
        what = "missing value (empty or NaN)" if np.isnan(values[bad[0]]) else "infinite value"
        more = f" ({bad.size} such rows)" if bad.size > 1 else ""
        raise TraceError(f"{where.path}: {where(record)}, column {column!r}: {what}{more}")
    return values


def require_range(
    frame: pd.DataFrame, column: str, values: np.ndarray, where: Where, low: float, high: float
) -> None:
    """Check ``low <= values <= high`` (NaN is ignored here).

    Raises:
        TraceError: Naming the file, the first line out of range, the column and the value.
    """
    bad = np.flatnonzero((values < low) | (values > high))
    if bad.size:
        record = int(frame.index[bad[0]])
        more = f" ({bad.size} such rows)" if bad.size > 1 else ""
        raise TraceError(
            f"{where.path}: {where(record)}, column {column!r}: value {values[bad[0]]:g} is "
            f"outside [{low:g}, {high:g}]{more}"
        )


def require_increasing(times: np.ndarray, records: np.ndarray, where: Where, column: str) -> None:
    """Check that the timestamps of one series strictly increase.

    Raises:
        TraceError: For a duplicate timestamp (naming both lines) or a decrease (unsorted file).
    """
    steps = np.diff(times)
    bad = np.flatnonzero(steps <= 0)
    if bad.size:
        i = int(bad[0])
        before, after = where(int(records[i])), where(int(records[i + 1]))
        if steps[i] == 0:
            raise TraceError(
                f"{where.path}: {after}, column {column!r}: duplicate timestamp {times[i + 1]:g} "
                f"(also on {before})"
            )
        raise TraceError(
            f"{where.path}: {after}, column {column!r}: timestamp {times[i + 1]:g} is earlier "
            f"than {times[i]:g} on {before}; the file must be sorted by time"
        )
