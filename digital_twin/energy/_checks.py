"""Checks shared by the carbon-intensity readers (private): timestamps, the tick grid, plausible values.

Each failure is a :class:`~digital_twin.errors.TraceError` naming the file, the first bad line
and the column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from digital_twin.errors import TraceError
from digital_twin.traces._checks import require_range
from digital_twin.traces._io import Where

MAX_PLAUSIBLE_G_PER_KWH = 2000.0
"""Largest carbon intensity (gCO2eq/kWh) accepted: above any grid's average (lignite plants emit
about 1,000-1,300). A larger value is likely another unit: g/MWh, kg/MWh or lb/MWh."""
KG_SUSPECT_G_PER_KWH = 2.0
"""A series whose every value lies in (0, this] is refused as likely kg/kWh (= t/MWh): no grid's
hourly average stays below 2 g/kWh (even wind, hydro and nuclear emit 10-25 over their life)."""
UNIT_HINT = (
    " (the unit is gCO2eq/kWh; a value this large looks like g/MWh (divide by 1000), kg/MWh (the same as "
    "g/kWh) or lb/MWh (multiply by 0.4536))"
)
"""Appended to the message of an intensity above :data:`MAX_PLAUSIBLE_G_PER_KWH`."""


def require_plausible_intensity(frame: pd.DataFrame, column: str, values: np.ndarray, where: Where) -> None:
    """Check intensities are in [0, :data:`MAX_PLAUSIBLE_G_PER_KWH`] and not all tiny (kg/kWh).

    NaN (a missing hour) is ignored.

    Raises:
        TraceError: Naming the file, the first bad line and the column, with a unit hint.
    """
    require_range(frame, column, values, where, 0.0, MAX_PLAUSIBLE_G_PER_KWH, UNIT_HINT)
    finite = values[np.isfinite(values)]
    if finite.size and 0.0 < finite.max() <= KG_SUSPECT_G_PER_KWH:
        raise TraceError(
            f"{where.path}: every value of column {column!r} is at most {finite.max():g}, but the unit is "
            "gCO2eq/kWh: the file looks like kg/kWh or t/MWh (multiply by 1000)"
        )


def utc_seconds(frame: pd.DataFrame, column: str, where: Where) -> np.ndarray:
    """The column's ISO 8601 timestamps as float64 seconds since 1970-01-01 00:00 UTC.

    A timestamp with an offset (``2022-01-01 00:00:00+00:00``, ``...T01:00-05:00``) is converted
    to UTC; one without is read as UTC.

    Raises:
        TraceError: An empty or unparsable timestamp, naming its line and text.
    """
    raw = frame[column]
    parsed = pd.to_datetime(raw, utc=True, format="ISO8601", errors="coerce")
    bad = np.flatnonzero(parsed.isna().to_numpy())
    if bad.size:
        record = int(frame.index[bad[0]])
        text = raw.iloc[bad[0]]
        empty = not isinstance(text, str) or not text.strip()
        what = "missing timestamp" if empty else f"{text[:40]!r} is not an ISO 8601 time"
        raise TraceError(f"{where.path}: {where(record)}, column {column!r}: {what}")
    epoch = pd.Timestamp("1970-01-01", tz="UTC")
    return np.asarray((parsed - epoch).dt.total_seconds(), dtype=np.float64)


def require_regular(
    times_s: np.ndarray, records: np.ndarray, where: Where, column: str, tick_s: float | None
) -> float:
    """Check that the times step by one tick exactly, and return the tick (s).

    Args:
        times_s: ``(n_rows,)`` times in file order, seconds.
        records: ``(n_rows,)`` record index of each time (for :class:`Where`).
        where: Names a record's line.
        column: The time column (for the message).
        tick_s: The expected step (s), or ``None`` to take the first step as the tick.

    Raises:
        TraceError: A single row with ``tick_s=None``, a duplicate or earlier time, or a step
            other than the tick (a gap, or an irregular grid), naming the line.
    """
    steps = np.diff(times_s)
    if tick_s is None:
        if not steps.size:
            raise TraceError(f"{where.path}: one row only: the tick cannot be inferred; pass tick_s")
        tick_s = float(steps[0])
    bad = np.flatnonzero((steps <= 0) | (np.abs(steps - tick_s) > 1e-6 * max(tick_s, 1.0)))
    if bad.size:
        i = int(bad[0])
        line, before = where(int(records[i + 1])), where(int(records[i]))
        if steps[i] == 0:
            problem = f"the same time as {before} (a duplicate)"
        elif steps[i] < 0:
            problem = f"earlier than {before}: the file must be sorted by time"
        else:
            problem = f"{steps[i]:g} s after {before}, expected one tick of {tick_s:g} s (a gap or an irregular grid)"
        raise TraceError(f"{where.path}: {line}, column {column!r}: {problem}")
    return float(tick_s)
