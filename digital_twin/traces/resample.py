"""Resampling timestamped samples onto a regular grid: tick means and the gap policy.

:func:`bin_samples` is used by every reader whose file has a time column (through
:func:`resample_window`, which first picks the grid's window from the reader's
:class:`GridOptions`):

* **Grid.** Tick ``k`` covers trace time ``[start_s + k * tick_s, start_s + (k + 1) * tick_s)``.
* **Value of a tick.** The mean of the valid samples whose timestamp falls in the tick, per
  machine and per channel (cpu, mem). A missing sample (NaN: an error code, an empty memory
  field) counts for neither the sum nor the count of its channel.
* **Gap policy.** A *gap* is a run of consecutive ticks without a valid sample (per machine and
  channel); its length is ``run_ticks * tick_s``. A gap is filled by *sample-and-hold*: each
  empty tick takes the value of the last observed tick before it (what a monitoring system
  shows; it uses no future data). Ticks before the first observed tick take the first observed
  value. Gaps longer than ``max_gap_s`` are handled by ``on_long_gap``: ``"error"`` (default)
  raises a :class:`~digital_twin.errors.TraceError` naming the file, the machine, the gap's time
  span and the line of the last sample before it; ``"fill"`` fills them the same way and logs
  one ``WARNING`` record counting them (``record.cleaning``: a
  :class:`~digital_twin.traces.TraceCleaning`). Filled ticks are flagged in
  :attr:`TraceSeries.filled`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.tick_grid import check_tick_s, count_ticks
from digital_twin.traces._io import TraceCleaning, Where, log_cleaning
from digital_twin.traces.series import CHANNELS, MAX_GRID_CELLS, TraceSeries

DEFAULT_MAX_GAP_S = 3600.0
"""Longest gap (s) that :func:`bin_samples` fills silently (sample-and-hold)."""
ON_LONG_GAP = ("error", "fill")
logger = logging.getLogger(__name__)


def check_grid_args(tick_s: float, max_gap_s: float, on_long_gap: str) -> None:
    """Validate the resampling options shared by the readers.

    Raises:
        SpecError: ``tick_s`` not a finite number > 0, ``max_gap_s < 0`` or an unknown ``on_long_gap``.
    """
    check_tick_s(tick_s)
    if not (isinstance(max_gap_s, int | float) and max_gap_s >= 0):
        raise SpecError(f"max_gap_s must be a number >= 0, got {short_repr(max_gap_s)}")
    if on_long_gap not in ON_LONG_GAP:
        raise SpecError(f"on_long_gap must be one of {ON_LONG_GAP}, got {short_repr(on_long_gap)}")


@dataclass(frozen=True)
class GridOptions:
    """The resampling options of a timestamped reader, as it was called with them.

    Checked on construction (:func:`check_grid_args`), so a reader builds it before reading
    its file; the window (``start_s``, ``end_s``) is checked later, by :func:`grid_window`.

    Attributes:
        tick_s: Grid tick, seconds (> 0).
        start_s: Trace time (s) of tick 0, or ``None`` for :func:`default_grid`'s start.
        end_s: Trace time (s) where the grid ends (exclusive, rounded up to a whole tick), or
            ``None`` for :func:`default_grid`'s end.
        max_gap_s: Longest gap (s) filled without complaint (>= 0).
        on_long_gap: ``"error"`` or ``"fill"`` (:data:`ON_LONG_GAP`).

    Raises:
        SpecError: As :func:`check_grid_args`.
    """

    tick_s: float
    start_s: float | None
    end_s: float | None
    max_gap_s: float
    on_long_gap: str

    def __post_init__(self) -> None:
        check_grid_args(self.tick_s, self.max_gap_s, self.on_long_gap)


@dataclass(frozen=True)
class Samples:
    """Timestamped samples of one or more machines, ready for :func:`bin_samples`.

    Attributes:
        time_s: ``(n,)`` float64 trace time of each sample, seconds.
        machine: ``(n,)`` int64 index into ``machine_ids``.
        values_pct: ``(n, 2)`` float64 cpu %/mem % in [0, 100]; NaN = missing in that channel.
        records: ``(n,)`` int64 record index of each sample in the file (for messages).
        machine_ids: Names of the machines.
    """

    time_s: np.ndarray  # (n,)
    machine: np.ndarray  # (n,)
    values_pct: np.ndarray  # (n, 2)
    records: np.ndarray  # (n,)
    machine_ids: tuple[str, ...]


def default_grid(samples: Samples, tick_s: float) -> tuple[float, int]:
    """The grid covering the time span common to every machine, aligned to ``tick_s``.

    Starts at the latest first-sample time (floored to a multiple of ``tick_s``) and ends with
    the tick holding the earliest last-sample time.

    Returns:
        ``(start_s, n_ticks)``; ``n_ticks`` is 0 when the machines' spans do not overlap.
    """
    n = len(samples.machine_ids)
    first = np.full(n, np.inf)
    last = np.full(n, -np.inf)
    np.minimum.at(first, samples.machine, samples.time_s)
    np.maximum.at(last, samples.machine, samples.time_s)
    start_s = math.floor(first.max() / tick_s) * tick_s
    n_ticks = math.floor((last.min() - start_s) / tick_s) + 1
    return float(start_s), max(n_ticks, 0)


def check_unique_times(samples: Samples, where: Where, column: str) -> None:
    """Reject a duplicate ``(machine, time)`` pair (rows may otherwise come in any order).

    Raises:
        TraceError: Naming both lines, the column and the machine.
    """
    order = np.lexsort((samples.time_s, samples.machine))
    machine, time_s = samples.machine[order], samples.time_s[order]
    dup = np.flatnonzero((np.diff(machine) == 0) & (np.diff(time_s) == 0))
    if dup.size:
        a, b = sorted(int(samples.records[order[i]]) for i in (dup[0], dup[0] + 1))
        raise TraceError(
            f"{where.path}: {where(b)}, column {column!r}: duplicate timestamp "
            f"(t={time_s[dup[0]]:g} s) for machine {samples.machine_ids[machine[dup[0]]]!r} "
            f"(also on {where(a)})"
        )


def grid_window(
    samples: Samples, tick_s: float, start_s: float | None, end_s: float | None
) -> tuple[float, int]:
    """``(start_s, n_ticks)`` of the grid: the given window, or :func:`default_grid`'s.

    Raises:
        SpecError: A given window is not finite or ends before it starts.
    """
    default_start, default_n = default_grid(samples, tick_s)
    start = default_start if start_s is None else float(start_s)
    end = default_start + default_n * tick_s if end_s is None else float(end_s)
    if (start_s is not None or end_s is not None) and not (
        math.isfinite(start) and math.isfinite(end) and end > start
    ):
        raise SpecError(f"need finite start_s < end_s, got start_s={start}, end_s={end}")
    return start, count_ticks(end - start, tick_s)


def bin_samples(
    samples: Samples,
    *,
    tick_s: float,
    start_s: float,
    n_ticks: int,
    max_gap_s: float,
    on_long_gap: str,
    where: Callable[[int], str],
    source: str,
) -> TraceSeries:
    """Resample timestamped samples onto a grid (see the module docstring for the rules).

    Args:
        samples: The samples; any order (they are binned, not scanned).
        tick_s: Tick length, seconds.
        start_s: Trace time of tick 0, seconds.
        n_ticks: Number of ticks (>= 1).
        max_gap_s: Longest gap filled without complaint, seconds.
        on_long_gap: ``"error"`` or ``"fill"``.
        where: Record index -> ``"line N"``, for messages.
        source: Description starting with the file path, for messages and the result.

    Raises:
        TraceError: ``n_ticks < 1``; a grid larger than
            :data:`~digital_twin.traces.series.MAX_GRID_CELLS`; a
            machine/channel without any valid sample on the grid;
            a gap longer than ``max_gap_s`` with ``on_long_gap="error"``.
    """
    n_mach = len(samples.machine_ids)
    if n_ticks < 1:
        raise TraceError(f"{source}: the selected machines have no common time span to resample")
    if n_ticks * n_mach > MAX_GRID_CELLS:
        raise TraceError(
            f"{source}: the grid would have {n_ticks:,} ticks x {n_mach} machine(s) "
            f"(t={start_s:g} s to t={start_s + n_ticks * tick_s:g} s); check the time unit and "
            "tick_s, or pass a start_s/end_s window"
        )
    offset = (samples.time_s - start_s) / tick_s  # in ticks; compared before the cast (1e308 s has no int64 tick)
    inside = (offset >= 0) & (offset < n_ticks)
    tick = np.where(inside, np.floor(offset), -1).astype(np.int64)  # -1: outside the grid
    # One bin per (tick, machine, channel); NaN samples count in neither sum nor count.
    flat = (tick[inside] * n_mach + samples.machine[inside])[:, None] * 2 + np.arange(2)
    vals = samples.values_pct[inside]
    ok = ~np.isnan(vals)
    size = n_ticks * n_mach * 2
    sums = np.bincount(flat[ok], weights=vals[ok], minlength=size).reshape(n_ticks, n_mach, 2)
    counts = np.bincount(flat[ok], minlength=size).reshape(n_ticks, n_mach, 2)
    observed = counts > 0
    empty = np.flatnonzero(~observed.any(axis=0).ravel())
    if empty.size:
        m, c = divmod(int(empty[0]), 2)
        raise TraceError(
            f"{source}: machine {samples.machine_ids[m]!r} has no valid {CHANNELS[c]} sample "
            f"between t={start_s:g} s and t={start_s + n_ticks * tick_s:g} s"
        )
    means = np.where(observed, sums / np.maximum(counts, 1), np.nan)
    values, gap_ticks = _hold(means, observed)
    long_gap = ~observed & (gap_ticks * tick_s > max_gap_s)
    if long_gap.any():
        if on_long_gap == "error":
            raise TraceError(
                _long_gap_message(
                    samples, long_gap, tick, inside, where, start_s, tick_s, max_gap_s, source
                )
            )
        before = np.zeros_like(long_gap)
        before[1:] = long_gap[:-1]
        runs = int((long_gap & ~before).sum())  # count each run of long-gap ticks once
        log_cleaning(
            logger,
            TraceCleaning(source, "long-gap", runs),
            f"{source}: filled {runs} gap(s) longer than max_gap_s={max_gap_s:g} s "
            f"({int(long_gap.sum())} machine-channel ticks) by sample-and-hold (on_long_gap='fill')"
        )
    filled = ~observed
    return TraceSeries(
        values, tick_s, samples.machine_ids, source, start_s, filled if filled.any() else None
    )


def resample_window(samples: Samples, grid: GridOptions, where: Callable[[int], str], source: str) -> TraceSeries:
    """:func:`bin_samples` on the window of :func:`grid_window`: what every timestamped reader ends with.

    Args:
        samples: The samples; any order.
        grid: The reader's options (``grid.tick_s`` is used as a ``float``).
        where: Record index -> ``"line N"``, for messages.
        source: Description starting with the file path, for messages and the result.

    Returns:
        The series on the grid of ``grid.tick_s`` ticks over the window (given, or common to
        every machine).

    Raises:
        SpecError: As :func:`grid_window` (a given window not finite or empty).
        TraceError: As :func:`bin_samples`.
    """
    tick_s = float(grid.tick_s)
    start_s, n_ticks = grid_window(samples, tick_s, grid.start_s, grid.end_s)
    return bin_samples(
        samples,
        tick_s=tick_s,
        start_s=start_s,
        n_ticks=n_ticks,
        max_gap_s=grid.max_gap_s,
        on_long_gap=grid.on_long_gap,
        where=where,
        source=source,
    )


def _hold(means: np.ndarray, observed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sample-and-hold fill along axis 0, and each empty tick's gap length in ticks.

    Returns:
        ``(values, gap_ticks)``: ``values`` has no NaN (leading empties take the first observed
        value); ``gap_ticks`` is, for an empty tick, the length of its run of empty ticks.
    """
    n = means.shape[0]
    ticks = np.arange(n).reshape(-1, 1, 1)
    last = np.maximum.accumulate(np.where(observed, ticks, -1), axis=0)
    reversed_next = np.minimum.accumulate(np.where(observed, ticks, n)[::-1], axis=0)
    nxt = reversed_next[::-1]
    first_obs = observed.argmax(axis=0)  # every column has one (checked by the caller)
    source_tick = np.where(last >= 0, last, first_obs[None])
    values = np.take_along_axis(means, source_tick, axis=0)
    return values, nxt - last - 1


def _long_gap_message(
    samples: Samples,
    long_gap: np.ndarray,
    tick: np.ndarray,
    inside: np.ndarray,
    where: Callable[[int], str],
    start_s: float,
    tick_s: float,
    max_gap_s: float,
    source: str,
) -> str:
    """Describe the first long gap: machine, channel, time span, line of the sample before it."""
    gap_tick, m, c = (int(x) for x in np.argwhere(long_gap)[0])
    run_end = gap_tick
    while run_end + 1 < long_gap.shape[0] and long_gap[run_end + 1, m, c]:
        run_end += 1
    t0, t1 = start_s + gap_tick * tick_s, start_s + (run_end + 1) * tick_s
    mine = inside & (samples.machine == m) & ~np.isnan(samples.values_pct[:, c]) & (tick < gap_tick)
    if mine.any():
        last = int(np.flatnonzero(mine)[np.argmax(samples.time_s[mine])])
        after = f"after the sample on {where(int(samples.records[last]))}"
    else:
        after = "before the first sample"
    total = int(long_gap.sum())
    return (
        f"{source}: machine {samples.machine_ids[m]!r}, {CHANNELS[c]}: no sample from "
        f"t={t0:g} s to t={t1:g} s ({(t1 - t0) / 3600:.2f} h, {after}), longer than "
        f"max_gap_s={max_gap_s:g} s ({total} machine-channel ticks in long gaps). "
        "Pass a larger max_gap_s, on_long_gap='fill', or a start_s/end_s window without the gap"
    )
