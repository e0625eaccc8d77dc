"""Reader for the Azure Public Dataset V2 (2019) VM aggregate: sums over all VMs per 300 s.

File (DataCenter-Traces-Datasets ``azure_v2/vm_cpu_readings_month_aggregated_cpu_mem.csv``):
header ``timestamp,cpu_usage,assigned_mem``; ``timestamp`` in seconds from the trace start,
regular 300 s steps; ``cpu_usage`` is the **sum** over VMs of cpu usage weighted by core count
(roughly "percent x cores", 5.19e6..7.81e6) and ``assigned_mem`` the **sum** of assigned memory
(probably GB, 1.91e6..2.19e6). These are not percentages, so they are normalised:

* ``capacity=(cpu, mem)`` given: ``pct = value / capacity x 100`` (the fleet's total capacity in
  the file's units); a value above its capacity is an error.
* otherwise (default): ``pct = value / max(column) x peak_pct``, the whole file's maximum
  mapping to ``peak_pct`` (default 90 % for both, so background alone reaches the default
  90 % SLA threshold only at the busiest tick). This keeps the shape of the load, not its
  absolute level.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.traces._checks import require_finite, require_increasing, require_range
from digital_twin.traces._io import FLOAT, check_file, read_csv
from digital_twin.traces.resample import DEFAULT_MAX_GAP_S, GridOptions, Samples, resample_window
from digital_twin.traces.series import TraceSeries

AZURE_COLUMNS = ("timestamp", "cpu_usage", "assigned_mem")
"""Required columns: time (s), cpu sum, assigned-memory sum."""
DEFAULT_PEAK_PCT = (90.0, 90.0)
"""Default normalisation: the file's maximum cpu and memory map to these percentages."""
AZURE_ID = "azure-vm-sum"
"""Machine id of the series read by :func:`read_azure_vm_aggregate`."""


def read_azure_vm_aggregate(
    path: str | Path,
    *,
    capacity: tuple[float, float] | None = None,
    peak_pct: tuple[float, float] = DEFAULT_PEAK_PCT,
    tick_s: float = 300.0,
    start_s: float | None = None,
    end_s: float | None = None,
    max_gap_s: float = DEFAULT_MAX_GAP_S,
    on_long_gap: str = "error",
) -> TraceSeries:
    """Read the Azure 2019 VM aggregate and normalise its sums to percent.

    Args:
        path: CSV with header ``timestamp,cpu_usage,assigned_mem`` (extra columns ignored).
        capacity: ``(cpu, mem)`` totals in the file's units meaning 100 %, or ``None`` to scale
            by the file's maxima (see the module docstring).
        peak_pct: ``(cpu, mem)`` percent that each column's maximum maps to when ``capacity``
            is ``None``.
        tick_s: Grid tick, seconds (the file's step is 300 s; other ticks resample it).
        start_s: Trace time (s) of tick 0; default: first timestamp floored to ``tick_s``.
        end_s: Trace time (s) where the grid ends (exclusive); default: the last timestamp.
        max_gap_s: Longest gap (s) filled silently.
        on_long_gap: ``"error"`` or ``"fill"``.

    Returns:
        A single-machine :class:`TraceSeries` (``machine_ids == ("azure-vm-sum",)``).

    Raises:
        TraceError: Unreadable/malformed file; an empty, non-numeric or negative value; a value
            above ``capacity``; unsorted or duplicate timestamps; a column that is all zero.
        SpecError: Invalid ``capacity``, ``peak_pct`` or grid option.
    """
    grid = GridOptions(tick_s, start_s, end_s, max_gap_s, on_long_gap)
    _check_pair("capacity", capacity, upper=math.inf)
    _check_pair("peak_pct", peak_pct, upper=100.0)
    path = check_file(path)
    frame, where = read_csv(path, dtypes=dict.fromkeys(AZURE_COLUMNS, FLOAT))
    time_s = require_finite(frame, "timestamp", where)
    records = frame.index.to_numpy(np.int64)
    require_increasing(time_s, records, where, "timestamp")
    columns = []
    for i, name in enumerate(AZURE_COLUMNS[1:]):
        values = require_finite(frame, name, where)
        if capacity is None:
            require_range(frame, name, values, where, 0.0, math.inf)
            peak = values.max()
            if peak <= 0:
                raise TraceError(f"{path}: column {name!r} is zero everywhere; cannot normalise")
            columns.append(values / peak * peak_pct[i])
        else:
            require_range(frame, name, values, where, 0.0, capacity[i])
            columns.append(values / capacity[i] * 100.0)
    rule = (
        f"capacity cpu={capacity[0]:g}, mem={capacity[1]:g}"
        if capacity is not None
        else f"max -> cpu {peak_pct[0]:g} %, mem {peak_pct[1]:g} %"
    )
    samples = Samples(
        time_s,
        np.zeros(len(frame), dtype=np.int64),
        np.clip(np.column_stack(columns), 0.0, 100.0),
        records,
        (AZURE_ID,),
    )
    return resample_window(samples, grid, where, f"{path} (azure2019 VM aggregate, {rule}, tick {tick_s:g} s)")


def _check_pair(name: str, pair: tuple[float, float] | None, upper: float) -> None:
    if pair is None:
        return
    try:
        ok = len(pair) == 2 and all(0 < float(x) <= upper and math.isfinite(x) for x in pair)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise SpecError(f"{name} must be two finite numbers in (0, {upper:g}], got {short_repr(pair)}")
