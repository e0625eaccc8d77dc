"""Reader for hourly EIA-930 generation mix and carbon intensity files, as packaged by HPE SustainDC.

Format (one file per balancing authority, e.g. ``CISO_NG_&_avgCI.csv``): a header
``timestamp,WND,SUN,WAT,OIL,NG,COL,NUC,OTH,avg_CI``; ``timestamp`` in UTC
(``2022-01-01 00:00:00+00:00``), one row per hour; the 8 sources' net generation in MWh
(integers or floats); ``avg_CI`` in gCO2eq/kWh, which SustainDC computed from the mix as
``sum(gen_i * EF_i) / sum(gen_i)`` with the factors of :data:`EIA_EMISSION_FACTORS`.

Cleaning (each rule is logged once per read at ``WARNING`` level, through
:func:`~digital_twin.traces._io.log_cleaning`, with a
:class:`~digital_twin.traces.TraceCleaning` on the record):

* ``"empty-row"``: a row whose 9 values are all empty. Its intensity is filled by linear
  interpolation in time between the nearest valid hours (an empty first or last hour holds the
  nearest valid value), and flagged in :attr:`CarbonIntensity.filled`.
* ``"implausible-generation"``: a row whose total generation is below ``1 - max_drop`` (10 %)
  of the file's median total: a partial report whose intensity is meaningless (the published
  PJM file has hours at 0.3 % of its median and a false 43 g/kWh). Treated as missing and
  filled the same way.
* ``"frozen-rows"``: runs of consecutive rows with all 9 values identical (stale upstream
  reports). Reported, and kept as they are.

Everything else is an error naming the file, line and column: a row with some values but not
all, a negative or infinite value, an intensity above 2000 g/kWh, times that are not one hour
apart (a gap, a duplicate, unsorted), every row missing.

Timing: by default a row's timestamp is taken as the **start** of its hour (``hour_label:
start``); ``hour_label: end`` takes it as the hour's end, EIA-930's own convention (the row
labelled ``t`` covers ``[t - 1 h, t)``), which shifts the series one hour later. Neither the
packaged files nor SustainDC's code say which they use, and the files cannot settle it: the
solar-weighted mean label hour sits +0.60 h (ERCO) and +0.57 h (BPAT) after the areas' solar
noon, as hour-end labels would, but -0.43 h (PJM) before it, as hour-start labels would, and
+0.08 h (CISO), with an uncertainty of the areas' solar longitudes (a degree is 4 minutes). The
default stays ``start`` so that existing scenarios keep their numbers; a study that needs the
hour right should set ``end`` (EIA's documented convention) and say so.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd

from digital_twin.energy._checks import require_plausible_intensity, require_regular, utc_seconds
from digital_twin.energy.carbon_intensity import CarbonIntensity
from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.traces._checks import require_range
from digital_twin.traces._io import FLOAT, TEXT, TraceCleaning, Where, check_file, log_cleaning, read_csv

EIA_SOURCES = ("WND", "SUN", "WAT", "OIL", "NG", "COL", "NUC", "OTH")
"""The generation columns: wind, solar, hydro, oil, natural gas, coal, nuclear, other (MWh per hour)."""
EIA_EMISSION_FACTORS = MappingProxyType(
    {"WND": 11.0, "SUN": 41.0, "WAT": 24.0, "OIL": 650.0, "NG": 490.0, "COL": 820.0, "NUC": 12.0, "OTH": 230.0}
)
"""gCO2eq per kWh generated, per source: the factors that reproduce SustainDC's ``avg_CI`` column
exactly (a least-squares fit; all but oil are the IPCC AR5 lifecycle medians)."""
DEFAULT_MAX_DROP = 0.9
"""A row whose total generation is more than this fraction below the median total is implausible."""
HOUR_S = 3600.0
HOUR_LABELS = ("start", "end")
"""What a row's timestamp labels: the start of its hour (the default) or its end (EIA-930's convention)."""
_VALUES = (*EIA_SOURCES, "avg_CI")
logger = logging.getLogger(__name__)


def read_eia_carbon_csv(
    path: str | Path,
    *,
    start: str | None = None,
    hours: int | None = None,
    emission_factors: Mapping[str, float] | None = None,
    max_drop: float = DEFAULT_MAX_DROP,
    hour_label: str = "start",
) -> CarbonIntensity:
    """Read an hourly EIA-930 file (SustainDC's format) into an hourly :class:`CarbonIntensity`.

    Args:
        path: The CSV file (quote its ``&`` in a shell).
        start: The hour that becomes time 0 of the series, in ISO 8601 (``"2022-06-01 00:00"``;
            no offset means UTC); it must be one of the file's hours. The hours before it follow the
            file's last hour, so the series still holds the whole file and wraps around as
            every :class:`CarbonIntensity` does. ``None``: the file's first hour.
        hours: Keep only this many hours from ``start`` (a window that runs past the file's
            last hour continues from its first); ``None``: all of them.
        emission_factors: ``None`` reads the ``avg_CI`` column. A mapping with a factor
            (gCO2eq/kWh, >= 0) for each of :data:`EIA_SOURCES` recomputes the intensity from the
            mix instead, ``sum(gen_i * factor_i) / sum(gen_i)``; :data:`EIA_EMISSION_FACTORS`
            gives back ``avg_CI``.
        max_drop: The implausible-generation threshold (see the module), in (0, 1).
        hour_label: ``"start"``: a row's timestamp starts its hour; ``"end"``: it ends it (the
            hour from ``start`` is then the row labelled an hour later). See the module.

    Returns:
        An hourly series with ``start_s = 0`` (seconds from ``start``) and ``filled`` marking
        the hours filled by cleaning.

    Raises:
        TraceError: A malformed file (see the module; the message names file, line, column).
        SpecError: A bad ``start``, ``hours``, ``emission_factors``, ``max_drop`` or ``hour_label``.

    Example:
        >>> ci = read_eia_carbon_csv("CISO_NG_&_avgCI.csv", start="2022-06-01 00:00", hours=168)  # doctest: +SKIP
        >>> ci.n_ticks, ci.tick_s  # doctest: +SKIP
        (168, 3600.0)
    """
    factors = _check_options(emission_factors, max_drop)
    if hour_label not in HOUR_LABELS:
        raise SpecError(f"hour_label must be one of {HOUR_LABELS}, got {short_repr(hour_label)}")
    path = check_file(path)
    frame, where = read_csv(path, dtypes={"timestamp": TEXT, **dict.fromkeys(_VALUES, FLOAT)})
    records = frame.index.to_numpy(np.int64)
    times = utc_seconds(frame, "timestamp", where)
    require_regular(times, records, where, "timestamp", HOUR_S)
    values = np.column_stack([frame[c].to_numpy(np.float64, na_value=np.nan) for c in _VALUES])  # (n, 9)
    empty = np.isnan(values).all(axis=1)
    _check_values(frame, values, empty, where)
    total = values[:, : len(EIA_SOURCES)].sum(axis=1)
    if empty.all() or not np.median(total[~empty]) > 0:
        raise TraceError(f"{path}: no row reports any generation (every row empty or all zero)")
    implausible = ~empty & (total < (1.0 - max_drop) * np.median(total[~empty]))
    _report_cleaning(path, frame, values, empty, implausible, max_drop)
    missing = empty | implausible  # never all: at least half the non-empty rows reach the median
    if factors is None:
        intensity = values[:, -1].copy()
    else:
        with np.errstate(invalid="ignore", divide="ignore"):  # missing rows, replaced below
            intensity = values[:, : len(EIA_SOURCES)] @ factors / total
    intensity[missing] = np.interp(times[missing], times[~missing], intensity[~missing])
    first = _start_index(start, frame["timestamp"], times)
    if hour_label == "end":  # the hour that starts at `start` is the row labelled an hour later
        first = (first + 1) % len(times)
    order = np.roll(np.arange(len(times)), -first)[: _window(hours, len(times))]
    basis = "avg_CI" if factors is None else "recomputed from the mix"
    labels = ", hour-end labels" if hour_label == "end" else ""
    name = f"{path} (EIA-930 {basis}, from {frame['timestamp'].iloc[first]} as 0 s, {order.size} h{labels})"
    return CarbonIntensity(intensity[order], HOUR_S, 0.0, name, missing[order])


def _check_options(emission_factors: Mapping[str, float] | None, max_drop: float) -> np.ndarray | None:
    """The factors as an ``(8,)`` array in :data:`EIA_SOURCES` order (or ``None``), after the checks."""
    if isinstance(max_drop, bool) or not isinstance(max_drop, int | float) or not 0.0 < max_drop < 1.0:
        raise SpecError(f"max_drop must be a number in (0, 1), got {short_repr(max_drop)}")
    if emission_factors is None:
        return None
    if not isinstance(emission_factors, Mapping) or set(emission_factors) != set(EIA_SOURCES):
        keys = sorted(emission_factors) if isinstance(emission_factors, Mapping) else short_repr(emission_factors)
        raise SpecError(f"emission_factors must map exactly {list(EIA_SOURCES)} to g/kWh, got keys {keys}")
    factors = np.array([emission_factors[s] for s in EIA_SOURCES], dtype=np.float64)
    if not (np.isfinite(factors).all() and (factors >= 0).all()):
        raise SpecError(f"emission_factors must be finite g/kWh >= 0, got {dict(emission_factors)}")
    return factors


def _check_values(frame: pd.DataFrame, values: np.ndarray, empty: np.ndarray, where: Where) -> None:
    """Refuse partly empty rows, infinite or negative values and implausible intensities."""
    partial = np.argwhere(np.isnan(values) & ~empty[:, None])
    if partial.size:
        row, col = (int(x) for x in partial[0])
        raise TraceError(
            f"{where.path}: {where(int(frame.index[row]))}, column {_VALUES[col]!r}: missing value (a row holds "
            f"all {len(_VALUES)} values, or none for an hour without data)"
        )
    infinite = np.argwhere(np.isinf(values))
    if infinite.size:
        row, col = (int(x) for x in infinite[0])
        raise TraceError(f"{where.path}: {where(int(frame.index[row]))}, column {_VALUES[col]!r}: infinite value")
    for col, column in enumerate(EIA_SOURCES):
        require_range(frame, column, values[:, col], where, 0.0, np.inf, " (net generation, MWh, must be >= 0)")
    require_plausible_intensity(frame, "avg_CI", values[:, -1], where)


def _report_cleaning(
    path: Path, frame: pd.DataFrame, values: np.ndarray, empty: np.ndarray, implausible: np.ndarray, max_drop: float
) -> None:
    """Log the three cleaning rules (see the module), each only when it applies."""
    stamps = frame["timestamp"].to_numpy()
    if (n := int(empty.sum())) > 0:
        log_cleaning(
            logger,
            TraceCleaning(str(path), "empty-row", n),
            f"{path}: {n} of {len(stamps)} hours have no values ({_times(stamps, empty)}); their intensity was "
            "filled by linear interpolation in time",
        )
    if (n := int(implausible.sum())) > 0:
        log_cleaning(
            logger,
            TraceCleaning(str(path), "implausible-generation", n),
            f"{path}: {n} hours report under {1 - max_drop:.0%} of the median total generation "
            f"({_times(stamps, implausible)}): partial data, treated as missing and filled by interpolation",
        )
    same = np.zeros(len(values), dtype=bool)
    same[1:] = (values[1:] == values[:-1]).all(axis=1)  # NaN rows never compare equal
    frozen = same.copy()
    frozen[:-1] |= same[1:]  # the first row of each run too
    if (n := int(frozen.sum())) > 0:
        runs = int((frozen & ~same).sum())
        log_cleaning(
            logger,
            TraceCleaning(str(path), "frozen-rows", n),
            f"{path}: {runs} run(s) of identical consecutive rows, {n} rows ({_times(stamps, frozen & ~same)}): "
            "probably stale reports; kept as they are",
        )


def _times(stamps: np.ndarray, mask: np.ndarray, shown: int = 3) -> str:
    """The first few timestamps where ``mask`` holds, for a message."""
    picked = [str(t) for t in stamps[mask][:shown]]
    return ", ".join(picked) + (", ..." if int(mask.sum()) > shown else "")


def _start_index(start: str | None, stamps: pd.Series, times: np.ndarray) -> int:
    """The row of the hour ``start`` names (0 for ``None``)."""
    if start is None:
        return 0
    try:
        wanted = pd.Timestamp(pd.to_datetime(start, format="ISO8601")) if isinstance(start, str) else pd.NaT
    except (ValueError, TypeError):
        wanted = pd.NaT
    if wanted is pd.NaT:
        raise SpecError(f"start {short_repr(start)} is not a time (write e.g. '2022-06-01 00:00')")
    wanted = wanted.tz_localize("UTC") if wanted.tzinfo is None else wanted.tz_convert("UTC")
    seconds = (wanted - pd.Timestamp("1970-01-01", tz="UTC")).total_seconds()
    index = float((seconds - times[0]) / HOUR_S)
    if not (0 <= index < len(times) and index == round(index)):
        raise SpecError(
            f"start {short_repr(start)} is not an hour of the file, which runs from {stamps.iloc[0]} to "
            f"{stamps.iloc[-1]} (UTC)"
        )
    return round(index)


def _window(hours: int | None, n_rows: int) -> int:
    """How many hours to keep (``n_rows`` for ``None``)."""
    if hours is None:
        return n_rows
    if isinstance(hours, bool) or not isinstance(hours, int | np.integer) or not 1 <= hours <= n_rows:
        raise SpecError(f"hours must be a whole number in [1, {n_rows}] (the file's hours), got {short_repr(hours)}")
    return int(hours)
