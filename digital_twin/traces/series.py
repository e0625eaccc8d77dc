"""`TraceSeries`: machines' cpu %/mem % on a regular tick grid.

Every reader in :mod:`digital_twin.traces` returns a :class:`TraceSeries`;
:mod:`digital_twin.traces.mapping` turns one into a :class:`~digital_twin.telemetry.Telemetry`.
How timestamped samples are put on the grid (tick means, gap policy) is documented in
:mod:`digital_twin.traces.resample`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.tick_grid import check_tick_s

CHANNELS = ("cpu", "mem")
MAX_GRID_CELLS = 20_000_000
"""Largest ``n_ticks x n_machines`` grid a reader or :meth:`TraceSeries.resample` builds (a
bigger one usually means a wrong time unit or tick, e.g. nanoseconds read as seconds)."""


@dataclass(frozen=True, eq=False)
class TraceSeries:
    """Machines' cpu % and mem % on a regular grid, as read from one trace file.

    Tick ``k`` covers trace time ``[start_s + k * tick_s, start_s + (k + 1) * tick_s)``.

    Attributes:
        values_pct: ``(n_ticks, n_machines, 2)`` float64: cpu % (index 0) and mem % (index 1),
            finite, in [0, 100]. Stored read-only.
        tick_s: Tick length in seconds (> 0).
        machine_ids: ``n_machines`` names, e.g. ``("m_1933",)`` or ``("datacenter-mean",)``.
        source: What was read: starts with the file path, then the reader and its options.
        start_s: Trace time of tick 0 in seconds (informational; ``0.0`` for row-per-tick files).
        filled: ``(n_ticks, n_machines, 2)`` bool, True where the value was not observed but
            filled by the gap policy; ``None`` means every value was observed. Read-only.
    """

    values_pct: np.ndarray  # (n_ticks, n_machines, 2)
    tick_s: float
    machine_ids: tuple[str, ...]
    source: str
    start_s: float = 0.0
    filled: np.ndarray | None = None  # (n_ticks, n_machines, 2) bool

    def __post_init__(self) -> None:
        values = np.array(self.values_pct, dtype=np.float64)
        if values.ndim != 3 or values.shape[2] != 2 or 0 in values.shape:
            raise SpecError(
                f"trace series ({self.source}): values_pct must have shape (n_ticks, n_machines, 2)"
                f" with n_ticks, n_machines >= 1, got {values.shape}"
            )
        if not np.isfinite(values).all() or values.min() < 0.0 or values.max() > 100.0:
            tick, machine, channel = np.argwhere(~((values >= 0) & (values <= 100)))[0]
            raise SpecError(
                f"trace series ({self.source}): {CHANNELS[channel]} value "
                f"{values[tick, machine, channel]} at tick {tick}, machine {machine} is not a "
                "finite % in [0, 100]"
            )
        try:
            check_tick_s(self.tick_s)
        except SpecError as exc:
            raise SpecError(f"trace series ({self.source}): {exc}") from None
        ids = tuple(str(m) for m in self.machine_ids)
        if len(ids) != values.shape[1]:
            raise SpecError(
                f"trace series ({self.source}): {len(ids)} machine_ids for "
                f"{values.shape[1]} machines"
            )
        values.setflags(write=False)
        object.__setattr__(self, "values_pct", values)
        object.__setattr__(self, "machine_ids", ids)
        if self.filled is not None:
            filled = np.array(self.filled, dtype=bool)
            if filled.shape != values.shape:
                raise SpecError(
                    f"trace series ({self.source}): filled has shape {filled.shape}, "
                    f"expected {values.shape}"
                )
            filled.setflags(write=False)
            object.__setattr__(self, "filled", filled)

    @property
    def n_ticks(self) -> int:
        """Number of ticks."""
        return int(self.values_pct.shape[0])

    @property
    def n_machines(self) -> int:
        """Number of machines (columns)."""
        return int(self.values_pct.shape[1])

    @property
    def span_s(self) -> float:
        """Trace seconds covered, ``n_ticks * tick_s``."""
        return self.n_ticks * self.tick_s

    def select(self, machines: Sequence[str]) -> TraceSeries:
        """The series restricted to (and reordered as) ``machines``; repeats are allowed.

        Raises:
            TraceError: A machine id is not in the series.
        """
        if isinstance(machines, str):
            raise SpecError(f"machines must be a list of ids, not the string {short_repr(machines)}")
        index = {m: i for i, m in enumerate(self.machine_ids)}
        unknown = [m for m in machines if m not in index]
        if unknown or not machines:
            raise TraceError(
                f"{self.source}: machine(s) {unknown or '(none given)'} not in the trace; it has "
                f"{_preview(self.machine_ids)}"
            )
        cols = [index[m] for m in machines]
        filled = None if self.filled is None else self.filled[:, cols]
        return TraceSeries(
            self.values_pct[:, cols],
            self.tick_s,
            tuple(machines),
            self.source,
            self.start_s,
            filled,
        )

    def resample(self, tick_s: float) -> TraceSeries:
        """The series on a coarser or finer grid whose tick is a whole multiple or divisor.

        Coarser (``tick_s = n * self.tick_s``): the mean of each block of ``n`` ticks (the last,
        partial block averages what it has); a coarse tick is flagged filled only when all of
        its fine ticks were. Finer (``self.tick_s = n * tick_s``): each value is held for ``n``
        ticks.

        Raises:
            SpecError: ``tick_s`` is not a positive whole multiple or divisor of ``self.tick_s``,
                or the finer grid would exceed :data:`MAX_GRID_CELLS`.
        """
        try:
            check_tick_s(tick_s)
        except SpecError as exc:
            raise SpecError(f"{self.source}: resample {exc}") from None
        up, down = tick_s / self.tick_s, self.tick_s / tick_s
        if _is_whole(up):
            n = round(up)
            starts = np.arange(0, self.n_ticks, n)
            counts = np.diff(np.append(starts, self.n_ticks))[:, None, None]
            values = np.add.reduceat(self.values_pct, starts, axis=0) / counts
            filled = None
            if self.filled is not None:
                filled = np.logical_and.reduceat(self.filled, starts, axis=0)
        elif _is_whole(down):
            n = round(down)
            if self.n_ticks * n * self.n_machines > MAX_GRID_CELLS:
                raise SpecError(
                    f"{self.source}: resampling to {tick_s:g} s ticks would make "
                    f"{self.n_ticks * n:,} ticks x {self.n_machines} machine(s), above "
                    f"{MAX_GRID_CELLS:,} cells; use a coarser tick_s"
                )
            values = np.repeat(self.values_pct, n, axis=0)
            filled = None if self.filled is None else np.repeat(self.filled, n, axis=0)
        else:
            raise SpecError(
                f"{self.source}: cannot resample from {self.tick_s:g} s to {tick_s:g} s ticks "
                "(needs a whole multiple or divisor)"
            )
        return TraceSeries(
            np.clip(values, 0.0, 100.0),
            float(tick_s),
            self.machine_ids,
            self.source,
            self.start_s,
            filled,
        )


def _is_whole(x: float) -> bool:
    return x >= 1 and abs(x - round(x)) < 1e-9


def _preview(ids: Sequence[str], n: int = 8) -> str:
    shown = ", ".join(ids[:n])
    return f"{len(ids)} machines ({shown}{', ...' if len(ids) > n else ''})"
