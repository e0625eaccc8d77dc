"""Readers for the Alibaba cluster-trace-v2018 ``machine_usage`` table and its 300 s mean.

Two formats:

* :func:`read_alibaba_machine_usage`: the raw per-machine table (``machine_usage.csv``), no
  header, 9 columns ``machine_id, time_stamp, cpu_util_percent, mem_util_percent, mem_gps,
  mkpi, net_in, net_out, disk_io_percent``; irregular sampling (10 s .. hours), rows grouped per
  machine and not globally sorted, error codes ``-1``/``101``.
* :func:`read_alibaba_dc_mean`: the data-centre mean per 300 s (DataCenter-Traces-Datasets,
  Zenodo 10.5281/zenodo.14564847), header ``cpu_util_percent,mem_util_percent,net_in,net_out,
  disk_io_percent``, no timestamp: row ``i`` is tick ``i``.

Only ``cpu_util_percent`` and ``mem_util_percent`` are used; the other columns are read (so a
malformed row is caught) but not checked.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.traces._checks import refuse_fractions, require_finite, require_range
from digital_twin.traces._io import (
    FLOAT,
    TEXT,
    TraceCleaning,
    Where,
    check_file,
    log_cleaning,
    read_csv,
)
from digital_twin.traces.resample import (
    DEFAULT_MAX_GAP_S,
    GridOptions,
    Samples,
    check_grid_args,
    check_unique_times,
    resample_window,
)
from digital_twin.traces.series import TraceSeries

MACHINE_USAGE_COLUMNS = (
    "machine_id",
    "time_stamp",
    "cpu_util_percent",
    "mem_util_percent",
    "mem_gps",
    "mkpi",
    "net_in",
    "net_out",
    "disk_io_percent",
)
"""The 9 columns of the raw ``machine_usage`` table, in file order (from Alibaba's schema)."""
ERROR_CODES = (-1.0, 101.0)
"""Values the Alibaba schema documents as abnormal; treated as missing in cpu/mem."""
DC_MEAN_ID = "datacenter-mean"
"""Machine id of the single series read by :func:`read_alibaba_dc_mean`."""
_PCT = ("cpu_util_percent", "mem_util_percent")
_FRACTIONS_FIX = (
    "Alibaba 2018 files hold percentages: convert the file, or read it with the generic reader "
    "and units='fraction'"
)
logger = logging.getLogger(__name__)


def read_alibaba_machine_usage(
    path: str | Path,
    *,
    machines: Sequence[str] | None = None,
    tick_s: float = 300.0,
    start_s: float | None = None,
    end_s: float | None = None,
    max_gap_s: float = DEFAULT_MAX_GAP_S,
    on_long_gap: str = "error",
) -> TraceSeries:
    """Read raw Alibaba 2018 ``machine_usage`` rows and resample them onto a regular grid.

    Rows may come in any order (the real file is grouped per machine, each machine sorted, but
    not globally sorted). Each tick is the mean of a machine's samples in it; empty ticks are
    filled by sample-and-hold, and gaps longer than ``max_gap_s`` raise unless
    ``on_long_gap="fill"`` (rules: :mod:`digital_twin.traces.resample`).

    Units: a file whose every cpu and mem value lies in [0, 1] is refused as a likely file of
    fractions (no real machine runs under 1 % of both throughout).

    Cleaning: a cpu or mem value equal to an Alibaba error code (``-1`` or ``101``) is treated
    as missing in that channel (the row's other channel is kept), with one log record
    (:func:`~digital_twin.traces._io.log_cleaning`) counting them. Any other value outside
    [0, 100], an empty or non-numeric cpu/mem/time field, a negative time, or a duplicate
    ``(machine_id, time_stamp)`` pair is an error.

    Args:
        path: The CSV file (optionally ``.gz``/``.bz2``/``.xz``). No header row.
        machines: Machine ids to keep, in output order; ``None`` = every machine, in order of
            first appearance.
        tick_s: Grid tick, seconds.
        start_s: Trace time (s) of tick 0. Default: the latest first sample over the selected
            machines, floored to a multiple of ``tick_s`` (the span all machines cover).
        end_s: Trace time (s) where the grid ends (exclusive; rounded up to a whole tick).
            Default: the tick holding the earliest last sample over the selected machines.
        max_gap_s: Longest run of empty ticks (s) filled silently.
        on_long_gap: ``"error"`` or ``"fill"`` (fill with a warning).

    Returns:
        A :class:`TraceSeries` with one column per selected machine.

    Raises:
        TraceError: Unreadable or malformed file (message names file, line, column), unknown
            machine, or a gap longer than ``max_gap_s`` with ``on_long_gap="error"``.
        SpecError: Invalid ``tick_s``, ``max_gap_s``, ``on_long_gap`` or window.

    Example:
        >>> series = read_alibaba_machine_usage(  # doctest: +SKIP
        ...     "machine_usage.csv", machines=["m_1933", "m_1934"], on_long_gap="fill")
        >>> series.values_pct.shape  # doctest: +SKIP
        (2303, 2, 2)
    """
    grid = GridOptions(tick_s, start_s, end_s, max_gap_s, on_long_gap)
    path = check_file(path)
    dtypes = {"machine_id": TEXT, "time_stamp": FLOAT, **dict.fromkeys(_PCT, FLOAT)}
    frame, where = read_csv(path, dtypes=dtypes, names=MACHINE_USAGE_COLUMNS)
    ids = frame["machine_id"]
    if ids.isna().any():
        record = int(frame.index[np.flatnonzero(ids.isna().to_numpy())[0]])
        raise TraceError(f"{path}: {where(record)}, column 'machine_id': missing value")
    frame = _select_machines(path, frame, machines)
    machine_ids = tuple(machines) if machines is not None else tuple(pd.unique(frame["machine_id"]))
    time_s = require_finite(frame, "time_stamp", where)
    require_range(frame, "time_stamp", time_s, where, 0.0, math.inf)
    values = np.column_stack([_clean_pct(frame, name, where) for name in _PCT])
    refuse_fractions(path, values, _PCT, _FRACTIONS_FIX)
    _report_codes(path, frame, values)
    machine = pd.Categorical(frame["machine_id"], categories=list(machine_ids)).codes
    samples = Samples(
        time_s, machine.astype(np.int64), values, frame.index.to_numpy(np.int64), machine_ids
    )
    check_unique_times(samples, where, "time_stamp")
    source = f"{path} (alibaba2018 machine_usage, tick {tick_s:g} s, {len(machine_ids)} machine(s))"
    return resample_window(samples, grid, where, source)


def read_alibaba_dc_mean(path: str | Path, *, tick_s: float = 300.0) -> TraceSeries:
    """Read the Alibaba 2018 data-centre mean file (one row per 300 s window, no timestamp).

    Row ``i`` (line ``i + 2``) becomes tick ``i``. The published 8-day file has 2,243 rows
    instead of 8 x 288 = 2,304: about 62 empty windows of day 2 were dropped upstream without a
    marker, so after day 2 begins ``i * tick_s`` is not the exact trace time. It is read as the
    ordered series it is (as the reference system does); nothing is inserted.

    Args:
        path: The CSV file, with a header naming at least ``cpu_util_percent`` and
            ``mem_util_percent`` (other columns are ignored).
        tick_s: Seconds per row.

    Returns:
        A single-machine :class:`TraceSeries` (``machine_ids == ("datacenter-mean",)``).

    Raises:
        TraceError: Missing/empty file, no header, missing column, wrong delimiter, and any
            empty, non-numeric or out-of-[0, 100] value (naming file, line and column); every
            value in [0, 1] (a file of fractions, not percentages).
    """
    check_grid_args(tick_s, 0.0, "error")
    path = check_file(path)
    frame, where = read_csv(path, dtypes=dict.fromkeys(_PCT, FLOAT))
    values = []
    for name in _PCT:
        column = require_finite(frame, name, where)
        require_range(frame, name, column, where, 0.0, 100.0)
        values.append(column)
    refuse_fractions(path, np.column_stack(values), _PCT, _FRACTIONS_FIX)
    return TraceSeries(
        np.column_stack(values)[:, None, :],
        float(tick_s),
        (DC_MEAN_ID,),
        f"{path} (alibaba2018 data-centre mean, {len(frame)} rows of {tick_s:g} s)",
    )


def _select_machines(
    path: Path, frame: pd.DataFrame, machines: Sequence[str] | None
) -> pd.DataFrame:
    if machines is None:
        return frame
    if isinstance(machines, str) or not machines:
        raise SpecError(f"machines must be a non-empty list of ids, got {short_repr(machines)}")
    if len(set(machines)) != len(machines):
        raise SpecError(f"machines lists an id twice: {list(machines)}")
    present = set(pd.unique(frame["machine_id"]))
    missing = [m for m in machines if m not in present]
    if missing:
        shown = sorted(present)[:8]
        raise TraceError(
            f"{path}: machine(s) {missing} not in column 'machine_id'; the file has "
            f"{len(present)} machines, e.g. {shown}"
        )
    return frame[frame["machine_id"].isin(machines)]


def _clean_pct(frame: pd.DataFrame, name: str, where: Where) -> np.ndarray:
    """The column with error codes set to NaN, after checking everything else is a valid %."""
    values = require_finite(frame, name, where).copy()
    values[np.isin(values, ERROR_CODES)] = np.nan
    require_range(frame, name, values, where, 0.0, 100.0)
    return values


def _report_codes(path: Path, frame: pd.DataFrame, values: np.ndarray) -> None:
    missing = np.isnan(values)
    if missing.any():
        cpu, mem = (int(n) for n in missing.sum(axis=0))
        rows = int(missing.any(axis=1).sum())
        log_cleaning(
            logger,
            TraceCleaning(str(path), "error-code", rows),
            f"{path}: {rows} of {len(frame)} rows hold the error code -1 or 101 "
            f"(cpu_util_percent: {cpu}, mem_util_percent: {mem}); those values were dropped as "
            "missing",
        )
