"""Grid carbon intensity as a step function of time, with exact integrals, and a generic CSV reader.

* :class:`CarbonIntensity`: gCO2eq/kWh on a regular tick grid (hourly, or any tick), repeating
  with the period of the series; :meth:`~CarbonIntensity.at`,
  :meth:`~CarbonIntensity.g_per_kwh_integral` (exact over tick boundaries),
  :meth:`~CarbonIntensity.grams` (emissions of a constant power draw).
* :func:`read_carbon_csv`: a ``time_s,g_per_kwh`` or ``timestamp,g_per_kwh`` file.

The EIA-930 hourly files (SustainDC's copy) are read by
:func:`digital_twin.energy.eia930.read_eia_carbon_csv`.

Units: intensities in gCO2eq per kWh of electricity; times in seconds; power in watts.
1 kWh = 3.6e6 J, so a draw of ``P`` W for ``dt`` s at ``c`` g/kWh emits ``P * dt * c / 3.6e6`` g.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import overload

import numpy as np

from digital_twin.energy._checks import (
    MAX_PLAUSIBLE_G_PER_KWH,
    UNIT_HINT,
    require_plausible_intensity,
    require_regular,
    utc_seconds,
)
from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.tick_grid import check_tick_s
from digital_twin.traces._checks import require_finite
from digital_twin.traces._io import FLOAT, TEXT, check_delimiter, check_file, first_line, read_csv

J_PER_KWH = 3.6e6
"""Joules (watt-seconds) in one kWh."""


@dataclass(frozen=True, eq=False)
class CarbonIntensity:
    """Grid carbon intensity (gCO2eq/kWh) as a step function of time, repeating with its period.

    Tick ``k`` covers ``[start_s + k * tick_s, start_s + (k + 1) * tick_s)`` and holds
    ``g_per_kwh[k]``. Outside ``[start_s, start_s + period_s)`` the series **wraps around**: time
    ``t`` reads tick ``floor((t - start_s) / tick_s) mod n_ticks``, so a year-long series covers
    any horizon (year 2 repeats year 1) and a one-value series is a constant. Times before
    ``start_s`` wrap the same way.

    Attributes:
        g_per_kwh: ``(n_ticks,)`` float64, ``n_ticks >= 1``: intensity per tick, finite, in
            [0, :data:`MAX_PLAUSIBLE_G_PER_KWH`]. Stored read-only.
        tick_s: Tick length, seconds (> 0).
        start_s: Time (s, the caller's clock: scenario seconds) where tick 0 begins.
        name: What the series is: a file, a grid, a window (for messages and reports).
        filled: ``(n_ticks,)`` bool, True where the value was not observed but filled by a
            reader's cleaning rule; ``None`` means every value was observed. Read-only.

    Raises:
        SpecError: An empty or non-1-D series, a negative, non-finite or implausibly large
            value (naming its tick and suggesting the unit), a bad ``tick_s`` or ``start_s``.

    >>> ci = CarbonIntensity(np.array([100.0, 300.0]), tick_s=3600.0)
    >>> ci.at(1800.0), ci.at(5400.0), ci.at(9000.0)  # 9000 s wraps to 1800 s
    (100.0, 300.0, 100.0)
    >>> ci.g_per_kwh_integral(1800.0, 5400.0) / 3600.0  # half an hour at each value
    200.0
    """

    g_per_kwh: np.ndarray  # (n_ticks,) gCO2eq/kWh
    tick_s: float = 3600.0
    start_s: float = 0.0
    name: str = "carbon intensity"
    filled: np.ndarray | None = None  # (n_ticks,) bool
    _before_s: np.ndarray = field(init=False, repr=False)  # (n_ticks,) integral from start_s to each tick's start

    def __post_init__(self) -> None:
        where = f"carbon intensity {short_repr(self.name)}"
        values = np.array(self.g_per_kwh, dtype=np.float64)
        if values.ndim != 1 or values.size == 0:
            raise SpecError(f"{where}: g_per_kwh must be 1-D with at least one value, got shape {values.shape}")
        if (bad := np.flatnonzero(~(np.isfinite(values) & (values >= 0)))).size:
            raise SpecError(f"{where}: tick {bad[0]}: {values[bad[0]]:g} g/kWh is not a finite number >= 0")
        if (bad := np.flatnonzero(values > MAX_PLAUSIBLE_G_PER_KWH)).size:
            raise SpecError(
                f"{where}: tick {bad[0]}: {values[bad[0]]:g} is above {MAX_PLAUSIBLE_G_PER_KWH:g}{UNIT_HINT}"
            )
        try:
            tick_s = check_tick_s(self.tick_s)
        except SpecError as exc:
            raise SpecError(f"{where}: {exc}") from None
        start = self.start_s
        if isinstance(start, bool) or not isinstance(start, int | float) or not math.isfinite(start):
            raise SpecError(f"{where}: start_s must be a finite number of seconds, got {short_repr(start)}")
        values.setflags(write=False)
        before = np.concatenate(([0.0], np.cumsum(values)[:-1])) * tick_s
        before.setflags(write=False)
        object.__setattr__(self, "g_per_kwh", values)
        object.__setattr__(self, "tick_s", tick_s)
        object.__setattr__(self, "start_s", float(start))
        object.__setattr__(self, "_before_s", before)
        if self.filled is not None:
            filled = np.array(self.filled, dtype=bool)
            if filled.shape != values.shape:
                raise SpecError(f"{where}: filled has shape {filled.shape}, expected {values.shape}")
            filled.setflags(write=False)
            object.__setattr__(self, "filled", filled)

    @classmethod
    def constant(cls, g_per_kwh: float, name: str = "constant") -> CarbonIntensity:
        """The same intensity at every time (the fallback when no series is given).

        >>> CarbonIntensity.constant(400.0).at(1e9)
        400.0
        """
        return cls(np.array([g_per_kwh], dtype=np.float64), 3600.0, 0.0, name)

    @property
    def tick_integrals_s(self) -> np.ndarray:
        """``(n_ticks,)`` read-only: the integral from ``start_s`` to each tick's start, (g/kWh) s."""
        return self._before_s

    @property
    def n_ticks(self) -> int:
        """Number of ticks in one period."""
        return int(self.g_per_kwh.size)

    @property
    def period_s(self) -> float:
        """Seconds after which the series repeats, ``n_ticks * tick_s``."""
        return self.n_ticks * self.tick_s

    def _locate(self, t_s: float | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(periods, tick, seconds into the tick)`` of each time, after checking it is finite."""
        x = np.asarray(t_s, dtype=np.float64) - self.start_s
        if not np.isfinite(x).all():
            raise SpecError(
                f"carbon intensity {short_repr(self.name)}: times must be finite seconds, got {short_repr(t_s)}"
            )
        periods = np.floor(x / self.period_s)
        into = x - periods * self.period_s  # in [0, period_s] (period_s itself only by round-off)
        tick = np.minimum(np.floor(into / self.tick_s), self.n_ticks - 1).astype(np.int64)
        return periods, tick, into - tick * self.tick_s

    @overload
    def at(self, t_s: float) -> float: ...

    @overload
    def at(self, t_s: np.ndarray) -> np.ndarray: ...

    def at(self, t_s: float | np.ndarray) -> float | np.ndarray:
        """The intensity (g/kWh) in force at time ``t_s`` (s), vectorised over any array shape.

        Raises:
            SpecError: A time is NaN or infinite.
        """
        _, tick, _ = self._locate(t_s)
        values = self.g_per_kwh[tick]
        return float(values) if np.ndim(t_s) == 0 else values

    def _cumulative(self, t_s: float | np.ndarray) -> np.ndarray:
        """Integral of the intensity from ``start_s`` to ``t_s``, (g/kWh) * s (negative before ``start_s``)."""
        periods, tick, seconds = self._locate(t_s)
        whole = float(self.g_per_kwh.sum()) * self.tick_s
        return np.asarray(periods * whole + self._before_s[tick] + self.g_per_kwh[tick] * seconds)

    @overload
    def g_per_kwh_integral(self, t0_s: float, t1_s: float) -> float: ...

    @overload
    def g_per_kwh_integral(self, t0_s: np.ndarray, t1_s: np.ndarray | float) -> np.ndarray: ...

    @overload
    def g_per_kwh_integral(self, t0_s: float, t1_s: np.ndarray) -> np.ndarray: ...

    def g_per_kwh_integral(self, t0_s: np.ndarray | float, t1_s: np.ndarray | float) -> np.ndarray | float:
        """The integral of the intensity over ``[t0_s, t1_s]``, in (g/kWh) * s, exact.

        Computed from the cumulative sum of whole ticks plus the two partial ticks at the ends
        (and whole periods for long intervals), so no sampling error arises however the interval
        falls on the grid. Vectorised: ``t0_s`` and ``t1_s`` broadcast together.

        Raises:
            SpecError: A time is not finite, or ``t1_s < t0_s``.
        """
        t0, t1 = np.broadcast_arrays(np.asarray(t0_s, dtype=np.float64), np.asarray(t1_s, dtype=np.float64))
        if (bad := np.flatnonzero(t1 < t0)).size:
            raise SpecError(
                f"carbon intensity {short_repr(self.name)}: interval end {t1.flat[bad[0]]:g} s is before its "
                f"start {t0.flat[bad[0]]:g} s"
            )
        integral = self._cumulative(t1) - self._cumulative(t0)
        return float(integral) if integral.ndim == 0 else integral

    def mean_g_per_kwh(self, t0_s: float, t1_s: float) -> float:
        """The time-mean intensity over ``[t0_s, t1_s]`` (g/kWh); the value at ``t0_s`` when they are equal.

        >>> CarbonIntensity(np.array([100.0, 300.0])).mean_g_per_kwh(0.0, 4 * 3600.0)
        200.0
        """
        if t1_s == t0_s:
            return self.at(float(t0_s))
        return self.g_per_kwh_integral(float(t0_s), float(t1_s)) / (t1_s - t0_s)

    @overload
    def grams(self, t0_s: float, t1_s: float, watts: float) -> float: ...

    @overload
    def grams(self, t0_s: np.ndarray, t1_s: np.ndarray | float, watts: np.ndarray | float) -> np.ndarray: ...

    @overload
    def grams(self, t0_s: float, t1_s: np.ndarray, watts: np.ndarray | float) -> np.ndarray: ...

    @overload
    def grams(self, t0_s: float, t1_s: float, watts: np.ndarray) -> np.ndarray: ...

    def grams(
        self, t0_s: np.ndarray | float, t1_s: np.ndarray | float, watts: np.ndarray | float
    ) -> np.ndarray | float:
        """gCO2eq emitted by a constant draw of ``watts`` W over ``[t0_s, t1_s]``, vectorised.

        ``watts * integral / 3.6e6`` (W * s = J, and 3.6e6 J = 1 kWh).

        >>> CarbonIntensity.constant(400.0).grams(0.0, 3600.0, 1000.0)  # 1 kWh at 400 g/kWh
        400.0
        """
        grams = np.multiply(watts, self.g_per_kwh_integral(t0_s, t1_s)) / J_PER_KWH
        return float(grams) if np.ndim(grams) == 0 else np.asarray(grams, dtype=np.float64)


def read_carbon_csv(path: str | Path, *, tick_s: float | None = None, name: str | None = None) -> CarbonIntensity:
    """Read a carbon-intensity series from a CSV on a regular time grid.

    Format: a header naming ``g_per_kwh`` (gCO2eq/kWh) and exactly one time column, either

    * ``time_s``: seconds on the caller's clock; the series starts at the first row's time
      (``start_s``), or
    * ``timestamp``: ISO 8601 times (``2022-06-01 00:00``, ``2022-06-01T00:00:00+02:00``; no
      offset means UTC); the series starts at 0 s = the first row's time.

    Rows must be sorted and one tick apart (no gap, no duplicate); every value present, in
    [0, 2000] g/kWh, and not all at most 2 (kg/kWh?). Other columns are read but not used.

    Args:
        path: The CSV file (optionally ``.gz``/``.bz2``/``.xz``).
        tick_s: The grid step (s); ``None`` takes the first step (a one-row file needs it).
        name: The series' name; default: the path and the first time.

    Raises:
        TraceError: Naming the file, line and column: missing file or column, both or neither
            time column, an empty, non-numeric or implausible value, an irregular grid.
        SpecError: A bad ``tick_s``.
    """
    if tick_s is not None:
        check_tick_s(tick_s)
    path = check_file(path)
    header = {field.strip() for field in check_delimiter(path, first_line(path), 2)}
    time_columns = [c for c in ("time_s", "timestamp") if c in header]
    if len(time_columns) != 1:
        problem = "both 'time_s' and 'timestamp'" if time_columns else "no time column"
        raise TraceError(
            f"{path}: line 1 names {problem}; the format needs exactly one: 'time_s' (seconds) or "
            "'timestamp' (ISO 8601), beside 'g_per_kwh'"
        )
    (time_column,) = time_columns
    frame, where = read_csv(path, dtypes={time_column: FLOAT if time_column == "time_s" else TEXT, "g_per_kwh": FLOAT})
    values = require_finite(frame, "g_per_kwh", where)
    require_plausible_intensity(frame, "g_per_kwh", values, where)
    if time_column == "time_s":
        times = require_finite(frame, "time_s", where)
        start_s, label = float(times[0]), f"from {times[0]:g} s"
    else:
        times = utc_seconds(frame, "timestamp", where)
        start_s, label = 0.0, f"from {frame['timestamp'].iloc[0]} as 0 s"
    tick = require_regular(times, frame.index.to_numpy(np.int64), where, time_column, tick_s)
    return CarbonIntensity(values, tick, start_s, name or f"{path} ({label}, {values.size} ticks of {tick:g} s)")
