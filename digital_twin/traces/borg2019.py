"""Readers for Google Borg cluster-trace 2019 utilisation.

* :func:`read_borg_instance_usage`: per-instance rows (``instance_usage`` table, or the
  Kaggle sample that joins it with instance events) with a ``time`` column and an
  ``average_usage`` column holding a dict-like string ``{'cpus': 0.021, 'memory': 0.014}``
  (fractions of one machine, normalised by Google to the largest machine; memory may be
  ``None``). Resampled **by time** onto the grid (the reference system buckets by row count,
  which distorts time wherever the row rate changes).
* :func:`read_borg_cell_mean`: a cell-wide mean, one row per tick, cpu/memory fractions in
  [0, 1] and no timestamp.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.traces._checks import require_finite, require_range
from digital_twin.traces._io import (
    FLOAT,
    TEXT,
    TraceCleaning,
    Where,
    check_file,
    log_cleaning,
    read_csv,
)
from digital_twin.traces.generic import check_column_names, read_rows_per_tick
from digital_twin.traces.resample import DEFAULT_MAX_GAP_S, GridOptions, Samples, resample_window
from digital_twin.traces.series import TraceSeries

SENTINEL_TIME = 9e18
"""Times at or above this (Java ``Long.MAX_VALUE``, "after the trace end") are dropped."""
AUTO_NS_ABOVE = 5.4e12
"""``time_unit="auto"`` reads times as nanoseconds when the largest valid time exceeds this
(62 days in microseconds, twice the 31-day trace), else as microseconds (Google's documented
unit). A short nanosecond sample (< 1.5 h) is therefore misread: pass ``time_unit="ns"``."""
REFERENCE_P75_TARGET_PCT = (40.0, 50.0)
"""The reference system's scaling: cpu P75 -> 40 %, memory P75 -> 50 %."""
INSTANCES_MEAN_ID = "borg-instances-mean"
"""Machine id of the series read by :func:`read_borg_instance_usage`."""
_TIME_UNITS = {"us": 1e-6, "ns": 1e-9}
logger = logging.getLogger(__name__)
_ABSENT = ("None", "nan", "NaN")
_NUMBER = r"([^,}\s]+)"
_CPUS = r"""['"]cpus['"]\s*:\s*""" + _NUMBER
_MEMORY = r"""['"]memory['"]\s*:\s*""" + _NUMBER


def read_borg_instance_usage(
    path: str | Path,
    *,
    tick_s: float = 300.0,
    time_unit: str = "auto",
    time_column: str = "time",
    usage_column: str = "average_usage",
    p75_target_pct: tuple[float, float] | None = None,
    start_s: float | None = None,
    end_s: float | None = None,
    max_gap_s: float = DEFAULT_MAX_GAP_S,
    on_long_gap: str = "error",
) -> TraceSeries:
    """Read Borg 2019 per-instance usage rows into one mean series on a regular grid.

    Each tick is the mean ``cpus`` and ``memory`` over the rows whose time falls in it,
    times 100 (a percent of one machine); empty ticks follow the gap policy of
    :mod:`digital_twin.traces.resample`. Rows may come in any order and share timestamps
    (several instances report at once).

    Cleaning (one log record each, with counts; see :func:`~digital_twin.traces._io.log_cleaning`): rows
    with a sentinel time (``< 0`` or ``>= 9e18``) are dropped; an empty ``average_usage`` drops
    the row; ``'memory': None`` (or ``'cpus': None``) drops that channel of the row. Errors: an
    empty or non-numeric time, an ``average_usage`` without a ``cpus`` key, and a fraction
    outside [0, 1].

    Args:
        path: CSV file with a header (other columns are ignored).
        tick_s: Grid tick, seconds.
        time_unit: ``"us"`` (Google's documented unit), ``"ns"`` (the reference system's
            reading of the Kaggle sample) or ``"auto"`` (see :data:`AUTO_NS_ABOVE`).
        time_column: Name of the time column.
        usage_column: Name of the dict-string usage column.
        p75_target_pct: ``None`` keeps ``fraction x 100``. ``(cpu, mem)`` rescales each channel
            so its 75th percentile over the ticks equals the target and clips to [0, 100] (the
            reference uses :data:`REFERENCE_P75_TARGET_PCT`).
        start_s: Trace time (s) of tick 0; default: first valid time floored to ``tick_s``.
        end_s: Trace time (s) where the grid ends (exclusive); default: the last valid time.
        max_gap_s: Longest gap (s) filled silently.
        on_long_gap: ``"error"`` or ``"fill"``.

    Returns:
        A single-machine :class:`TraceSeries` (``machine_ids == ("borg-instances-mean",)``).

    Raises:
        TraceError: The file cannot be read or breaks the rules above.
        SpecError: An invalid option.
    """
    grid = GridOptions(tick_s, start_s, end_s, max_gap_s, on_long_gap)
    if time_unit not in (*_TIME_UNITS, "auto"):
        raise SpecError(f"time_unit must be 'us', 'ns' or 'auto', got {short_repr(time_unit)}")
    _check_targets(p75_target_pct)
    check_column_names({"time_column": time_column, "usage_column": usage_column})
    path = check_file(path)
    frame, where = read_csv(path, dtypes={time_column: FLOAT, usage_column: TEXT})
    time = require_finite(frame, time_column, where)
    sentinel = (time < 0) | (time >= SENTINEL_TIME)
    no_usage = frame[usage_column].isna().to_numpy()
    _warn_dropped(path, len(frame), sentinel, no_usage & ~sentinel, time_column, usage_column)
    keep = ~sentinel & ~no_usage
    if not keep.any():
        raise TraceError(f"{path}: no row with a valid {time_column!r} and {usage_column!r}")
    frame, time = frame[keep], time[keep]
    fractions = parse_usage(frame, usage_column, where)
    if time_unit == "auto":
        time_unit = "ns" if time.max() > AUTO_NS_ABOVE else "us"
    samples = Samples(
        time * _TIME_UNITS[time_unit],
        np.zeros(len(frame), dtype=np.int64),
        fractions * 100.0,
        frame.index.to_numpy(np.int64),
        (INSTANCES_MEAN_ID,),
    )
    source = f"{path} (borg2019 instance usage, time in {time_unit}, tick {tick_s:g} s)"
    series = resample_window(samples, grid, where, source)
    return series if p75_target_pct is None else scale_to_p75(series, p75_target_pct)


def read_borg_cell_mean(
    path: str | Path, *, cpu_column: str = "cpu", mem_column: str = "memory", tick_s: float = 300.0
) -> TraceSeries:
    """Read a Borg cell-mean series: one row per tick, cpu and memory as fractions in [0, 1].

    Args:
        path: CSV (with header) or Parquet file.
        cpu_column: Name of the cpu fraction column.
        mem_column: Name of the memory fraction column.
        tick_s: Seconds per row.

    Returns:
        A single-machine :class:`TraceSeries` in percent (fraction x 100).

    Raises:
        TraceError: As :func:`~digital_twin.traces.read_generic` (missing column, NaN, value
            outside [0, 1], ...), naming the file, line and column.
    """
    check_column_names({"cpu_column": cpu_column, "mem_column": mem_column})
    return read_rows_per_tick(
        path,
        columns=(cpu_column, mem_column),
        units="fraction",
        tick_s=tick_s,
        label="borg2019 cell mean",
    )


def parse_usage(frame: pd.DataFrame, column: str, where: Where) -> np.ndarray:
    """Parse ``{'cpus': x, 'memory': y}`` strings into an ``(n, 2)`` array of fractions.

    ``None``/``nan`` values become NaN (missing, counted in a log record); the rest must be
    numbers in [0, 1].

    Raises:
        TraceError: A string without a ``cpus`` key, a non-numeric value, or a value outside
            [0, 1] (naming the file, line and column).
    """
    text = frame[column].astype(str)
    out = []
    for key, pattern in (("cpus", _CPUS), ("memory", _MEMORY)):
        raw = text.str.extract(pattern, expand=False)
        if key == "cpus" and raw.isna().any():
            bad = int(np.flatnonzero(raw.isna().to_numpy())[0])
            raise TraceError(
                f"{where.path}: {where(int(frame.index[bad]))}, column {column!r}: no 'cpus' "
                f"entry in {text.iloc[bad][:60]!r} (expected e.g. {{'cpus': 0.02, 'memory': 0.01}})"
            )
        absent = raw.isin(_ABSENT).to_numpy()
        values = pd.to_numeric(raw.where(~absent), errors="coerce")
        bad_text = np.flatnonzero(values.isna().to_numpy() & raw.notna().to_numpy() & ~absent)
        if bad_text.size:
            row = int(frame.index[bad_text[0]])
            raise TraceError(
                f"{where.path}: {where(row)}, column {column!r}: non-numeric {key!r} value "
                f"{raw.iloc[bad_text[0]]!r}"
            )
        array = values.to_numpy(dtype=np.float64, na_value=np.nan)
        require_range(frame, f"{column}[{key}]", array, where, 0.0, 1.0)  # also rejects inf
        out.append(array)
    fractions = np.column_stack(out)
    missing = np.isnan(fractions).sum(axis=0)
    if missing.any():
        rows = int(np.isnan(fractions).any(axis=1).sum())
        log_cleaning(
            logger,
            TraceCleaning(str(where.path), "missing-usage", rows),
            f"{where.path}: {rows} of {len(frame)} rows have no value for cpus "
            f"({int(missing[0])}) or memory ({int(missing[1])}) in {column!r}; those values were "
            "dropped as missing",
        )
    return fractions


def scale_to_p75(series: TraceSeries, target_pct: tuple[float, float]) -> TraceSeries:
    """Rescale each channel so its 75th percentile is ``target_pct``, clipped to [0, 100].

    Raises:
        TraceError: A channel's 75th percentile is 0 (nothing to scale).
    """
    _check_targets(target_pct)
    values = np.array(series.values_pct)
    p75 = np.percentile(values, 75, axis=0)  # (n_machines, 2)
    if (p75 <= 0).any():
        raise TraceError(f"{series.source}: cannot scale to a P75 target: a P75 is 0 %")
    values = np.clip(values * (np.asarray(target_pct) / p75), 0.0, 100.0)
    return TraceSeries(
        values,
        series.tick_s,
        series.machine_ids,
        f"{series.source}, scaled P75 -> cpu {target_pct[0]:g} %, mem {target_pct[1]:g} %",
        series.start_s,
        series.filled,
    )


def _check_targets(target_pct: tuple[float, float] | None) -> None:
    if target_pct is None:
        return
    if len(target_pct) != 2 or not all(0 < float(t) <= 100 for t in target_pct):
        raise SpecError(f"p75_target_pct must be (cpu %, mem %) in (0, 100], got {short_repr(target_pct)}")


def _warn_dropped(
    path: Path, n_rows: int, sentinel: np.ndarray, no_usage: np.ndarray, time: str, usage: str
) -> None:
    if sentinel.any():
        log_cleaning(
            logger,
            TraceCleaning(str(path), "sentinel-time", int(sentinel.sum())),
            f"{path}: dropped {int(sentinel.sum())} of {n_rows} rows with a sentinel {time!r} "
            f"(< 0 or >= {SENTINEL_TIME:g}, i.e. before or after the trace window)",
        )
    if no_usage.any():
        log_cleaning(
            logger,
            TraceCleaning(str(path), "empty-usage", int(no_usage.sum())),
            f"{path}: dropped {int(no_usage.sum())} of {n_rows} rows with an empty {usage!r}",
        )
