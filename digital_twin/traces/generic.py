"""A reader for any CSV or Parquet utilisation trace, given a column mapping and units.

Two layouts, chosen by whether a ``time`` column is given:

* **Timestamped** (``time=...``): samples are resampled onto the tick grid by the rules of
  :mod:`digital_twin.traces.resample` (mean per tick, sample-and-hold gaps, long gaps raise unless
  ``on_long_gap="fill"``). Without a ``machine`` column the file is one series and must be
  sorted by time (a decrease or a duplicate timestamp is an error: it usually means
  concatenated or corrupted files). With a ``machine`` column rows may come in any order, but a
  duplicate ``(machine, time)`` pair is an error.
* **Row per tick** (no ``time``): row ``i`` of a machine is its tick ``i``; with a ``machine``
  column every machine must have the same number of rows.

Values must be finite and in [0, 100] (``units="percent"``) or [0, 1] (``units="fraction"``,
multiplied by 100); anything else is an error naming the file, line (CSV) or row (Parquet) and
column. Units are sanity-checked: a fraction above 1 is refused with a hint to pass
``units="percent"``, and a percent file whose every cpu and mem value lies in [0, 1] is refused
as a likely fraction file (pass ``units="fraction"``, or ``check_units=False`` if the load really
stays under 1 %), because a unit slip would silently scale all background load by 100.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from digital_twin.errors import SpecError, TraceError, one_line, short_repr
from digital_twin.traces._checks import (
    refuse_fractions,
    require_finite,
    require_increasing,
    require_range,
)
from digital_twin.traces._io import FLOAT, TEXT, Where, check_file, read_csv
from digital_twin.traces.resample import (
    DEFAULT_MAX_GAP_S,
    GridOptions,
    Samples,
    check_unique_times,
    resample_window,
)
from digital_twin.traces.series import TraceSeries

UNITS = {"percent": 100.0, "fraction": 1.0}
"""Value unit -> the value that means 100 %."""
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
"""Time unit -> seconds per unit."""
SINGLE_ID = "series"
"""Machine id of a series read without a ``machine`` column."""
_PARQUET_SUFFIXES = (".parquet", ".pq")


def read_generic(
    path: str | Path,
    *,
    cpu: str,
    mem: str,
    time: str | None = None,
    machine: str | None = None,
    units: str = "percent",
    time_unit: str = "s",
    tick_s: float = 300.0,
    start_s: float | None = None,
    end_s: float | None = None,
    max_gap_s: float = DEFAULT_MAX_GAP_S,
    on_long_gap: str = "error",
    file_format: str = "auto",
    check_units: bool = True,
) -> TraceSeries:
    """Read a utilisation trace from a CSV (with header) or Parquet file.

    Args:
        path: The file. CSV must be comma-separated with a header row (optionally compressed
            ``.gz``/``.bz2``/``.xz``).
        cpu: Name of the cpu utilisation column.
        mem: Name of the memory utilisation column.
        time: Name of the timestamp column (numbers in ``time_unit``), or ``None`` for one row
            per tick.
        machine: Name of the machine-id column, or ``None`` for a single series (id
            ``"series"``).
        units: ``"percent"`` (values in [0, 100]) or ``"fraction"`` (values in [0, 1]).
        time_unit: ``"s"``, ``"ms"``, ``"us"`` or ``"ns"``.
        tick_s: Grid tick in seconds (for row-per-tick files: the seconds each row stands for).
        start_s: Trace time (s) of tick 0 (timestamped files); default: the span all machines
            cover, aligned to ``tick_s``.
        end_s: Trace time (s) where the grid ends (exclusive); default: see ``start_s``.
        max_gap_s: Longest gap (s) filled silently (timestamped files).
        on_long_gap: ``"error"`` or ``"fill"`` (timestamped files).
        file_format: ``"csv"``, ``"parquet"`` or ``"auto"`` (by suffix: ``.parquet``/``.pq``).
        check_units: Refuse a ``units="percent"`` file whose every value lies in [0, 1] (see
            the module docstring); ``False`` reads it as is.

    Returns:
        A :class:`TraceSeries`, machines in order of first appearance.

    Raises:
        TraceError: The file cannot be read or breaks the rules above.
        SpecError: An invalid option (unit, format, tick, window).
    """
    grid = GridOptions(tick_s, start_s, end_s, max_gap_s, on_long_gap)
    scale = _lookup("units", units, UNITS)
    seconds = _lookup("time_unit", time_unit, TIME_UNITS)
    names = {"cpu": cpu, "mem": mem, "time": time, "machine": machine}
    check_column_names(names, optional=("time", "machine"))
    columns = [c for c in names.values() if c is not None]
    if len(set(columns)) != len(columns):
        raise SpecError(f"column mapping names a column twice: {names}")
    path = check_file(path)
    dtypes = {c: FLOAT for c in (time, cpu, mem) if c is not None}
    if machine is not None:
        dtypes[machine] = TEXT
    frame, where = _read_table(path, dtypes, file_format)
    values = np.column_stack([_pct_column(frame, column, where, scale) for column in (cpu, mem)])
    ids, codes = _machines(frame, machine, where)
    source = f"{path} (columns cpu={short_repr(cpu)}, mem={short_repr(mem)}, units={units}, tick {tick_s:g} s)"
    if time is None:
        series = _row_per_tick(frame, values, ids, codes, machine, float(tick_s), source)
    else:
        time_s = require_finite(frame, time, where) * seconds
        records = frame.index.to_numpy(np.int64)
        samples = Samples(time_s, codes, values, records, ids)
        if machine is None:
            require_increasing(time_s, records, where, time)
        else:
            check_unique_times(samples, where, time)
        series = resample_window(samples, grid, where, source)
    if check_units and units == "percent":  # after the checks of the file's structure
        fix = "pass units='fraction' (or check_units=False if the load really stays under 1 %)"
        refuse_fractions(path, values, (cpu, mem), fix)
    return series


def check_column_names(names: Mapping[str, object], optional: tuple[str, ...] = ()) -> None:
    """Raise :class:`SpecError` unless every column option is a non-empty string (``None`` for ``optional`` ones).

    Args:
        names: Option -> the column name given, e.g. ``{"cpu": "cpu_util", "time": None}``.
        optional: Options that may be ``None`` (no such column).
    """
    for option, column in names.items():
        if column is None and option in optional:
            continue
        if not isinstance(column, str) or not column:
            raise SpecError(f"{option} must name a column (a non-empty string), got {short_repr(column)}")


def _lookup(name: str, key: str, table: dict[str, float]) -> float:
    if key not in table:
        raise SpecError(f"{name} must be one of {tuple(table)}, got {short_repr(key)}")
    return table[key]


def _read_table(path: Path, dtypes: dict[str, str], file_format: str) -> tuple[pd.DataFrame, Where]:
    if file_format == "auto":
        suffixes = [s.lower() for s in path.suffixes]
        file_format = "parquet" if any(s in _PARQUET_SUFFIXES for s in suffixes) else "csv"
    if file_format == "csv":
        return read_csv(path, dtypes=dtypes)
    if file_format == "parquet":
        return read_parquet(path, dtypes)
    raise SpecError(f"file_format must be 'csv', 'parquet' or 'auto', got {short_repr(file_format)}")


def read_parquet(path: Path, dtypes: dict[str, str]) -> tuple[pd.DataFrame, Where]:
    """Read the required columns of a Parquet file; float columns are converted and checked.

    Raises:
        TraceError: Not a Parquet file, missing column, non-numeric value, or no rows.
    """
    where = Where(path, header_lines=0, kind="rows")
    try:
        import pyarrow.parquet as pq  # only Parquet needs pyarrow

        found = list(pq.read_schema(path).names)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise TraceError(f"{path}: cannot read as Parquet ({type(exc).__name__}: {one_line(str(exc))})") from exc
    missing = [c for c in dtypes if c not in found]
    if missing:
        raise TraceError(f"{path}: missing column(s) {missing}; found columns {found}")
    try:
        frame = pd.read_parquet(path, columns=list(dtypes))
    except Exception as exc:  # as above
        raise TraceError(f"{path}: cannot read as Parquet ({type(exc).__name__}: {one_line(str(exc))})") from exc
    if frame.empty:
        raise TraceError(f"{path}: no data rows")
    frame = frame.reset_index(drop=True)
    for column, kind in dtypes.items():
        if kind != FLOAT:
            continue
        raw = frame[column]
        numbers = pd.to_numeric(raw, errors="coerce")
        bad = np.flatnonzero(numbers.isna().to_numpy() & raw.notna().to_numpy())
        if bad.size:
            raise TraceError(
                f"{path}: {where(int(bad[0]))}, column {column!r}: non-numeric value "
                f"{str(raw.iloc[bad[0]])[:40]!r}"
            )
        frame[column] = numbers.astype(FLOAT)
    return frame, where


def _pct_column(frame: pd.DataFrame, column: str, where: Where, full_scale: float) -> np.ndarray:
    values = require_finite(frame, column, where)
    hint = ""
    if full_scale == UNITS["fraction"] and values.min() >= 0.0 and values.max() <= UNITS["percent"]:
        hint = ": the file looks like percent (40 = 40 %); read it with units='percent'"
    require_range(frame, column, values, where, 0.0, full_scale, hint)
    return values * (100.0 / full_scale)  # exact for percent (x 1.0)


def _machines(
    frame: pd.DataFrame, machine: str | None, where: Where
) -> tuple[tuple[str, ...], np.ndarray]:
    if machine is None:
        return (SINGLE_ID,), np.zeros(len(frame), dtype=np.int64)
    raw = frame[machine]
    if raw.isna().any():
        record = int(frame.index[np.flatnonzero(raw.isna().to_numpy())[0]])
        raise TraceError(f"{where.path}: {where(record)}, column {machine!r}: missing machine id")
    ids = tuple(str(m) for m in pd.unique(raw))
    codes = pd.Categorical(raw.astype(str), categories=list(ids)).codes.astype(np.int64)
    return ids, codes


def _row_per_tick(
    frame: pd.DataFrame,
    values: np.ndarray,
    ids: tuple[str, ...],
    codes: np.ndarray,
    machine: str | None,
    tick_s: float,
    source: str,
) -> TraceSeries:
    counts = np.bincount(codes, minlength=len(ids))
    if (counts != counts[0]).any():
        short = int(np.argmin(counts))
        raise TraceError(
            f"{source}: column {machine!r}: without a time column every machine needs the same "
            f"number of rows; {ids[short]!r} has {counts[short]}, {ids[0]!r} has {counts[0]}"
        )
    position = pd.Series(codes).groupby(codes).cumcount().to_numpy()
    grid = np.empty((int(counts[0]), len(ids), 2))
    grid[position, codes] = values
    return TraceSeries(grid, tick_s, ids, source)


def read_rows_per_tick(
    path: str | Path, *, columns: Sequence[str], units: str, tick_s: float, label: str
) -> TraceSeries:
    """A headed CSV/Parquet whose row ``i`` is tick ``i`` of one series (used by other readers).

    Args:
        path: The file.
        columns: The cpu and mem column names.
        units: ``"percent"`` or ``"fraction"``.
        tick_s: Seconds per row.
        label: Reader name for :attr:`TraceSeries.source`.
    """
    series = read_generic(path, cpu=columns[0], mem=columns[1], units=units, tick_s=tick_s)
    return TraceSeries(
        series.values_pct,
        series.tick_s,
        series.machine_ids,
        f"{Path(path)} ({label}, {series.n_ticks} rows of {tick_s:g} s)",
    )
