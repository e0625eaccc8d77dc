"""Column checks shared by the trace readers (private).

Each failure is a :class:`~digital_twin.errors.TraceError` naming the file, the first bad line
and the column.
"""

from __future__ import annotations

from pathlib import Path

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
    frame: pd.DataFrame,
    column: str,
    values: np.ndarray,
    where: Where,
    low: float,
    high: float,
    hint: str = "",
) -> None:
    """Check ``low <= values <= high`` (NaN is ignored here).

    Args:
        frame: The table read (its index gives the record of each value).
        column: The column's name (for the message).
        values: The column's values.
        where: Names a record's line.
        low: Smallest allowed value.
        high: Largest allowed value.
        hint: Appended to the message (e.g. which option fixes a unit mix-up).

    Raises:
        TraceError: Naming the file, the first line out of range, the column and the value.
    """
    bad = np.flatnonzero((values < low) | (values > high))
    if bad.size:
        record = int(frame.index[bad[0]])
        more = f" ({bad.size} such rows)" if bad.size > 1 else ""
        raise TraceError(
            f"{where.path}: {where(record)}, column {column!r}: value {values[bad[0]]:g} is "
            f"outside [{low:g}, {high:g}]{more}{hint}"
        )


def refuse_fractions(path: Path, values: np.ndarray, columns: tuple[str, str], fix: str) -> None:
    """Refuse percentages whose every value lies in [0, 1]: the file almost surely holds fractions.

    A unit slip would scale the background load down 100 times and every result with it,
    silently; no real cluster runs both cpu and memory under 1 % throughout, so this refuses
    rather than warns. An all-zero trace is not refused (it reads the same in both units).

    Args:
        path: The file (for the message).
        values: ``(n, 2)`` cpu and mem values as read (NaN = missing, ignored).
        columns: The two column names.
        fix: The sentence that says what to pass instead.

    Raises:
        TraceError: Naming the file, the columns and the fix.
    """
    finite = values[np.isfinite(values)]
    if finite.size and 0.0 < finite.max() <= 1.0:
        raise TraceError(
            f"{path}: every value of columns {columns[0]!r} and {columns[1]!r} lies in [0, 1] "
            f"(largest {finite.max():g}), but they are read as percent: the file looks like "
            f"fractions (0.4 = 40 %); {fix}"
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
