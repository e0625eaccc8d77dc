"""Shared plumbing of the job sources: parameter checks, row-located errors, selection.

Every reader in this package turns a malformed file into a :class:`TraceError` whose message
starts with ``"<file>:<line>: "`` (1-based line number in the file, the header being line 1;
headerless formats such as the Azure ``vmtable`` start at line 1) or
``"<file>: column '<name>': "``, so a user can open the file at the right place (files are
opened and read by :mod:`digital_twin.workloads._csv`). Bad *parameters* (a negative ``limit``,
an empty ``time_window``) raise :class:`SpecError`.

Selection is the same for every source (see :func:`select_positions` and :func:`shift`):

1. rows are filtered by the source's own rules (phases, unknown run times, ...);
2. ``time_window=(t0, t1)`` keeps the rows whose arrival in the *source's own time axis*
   (seconds, before any shift) is in ``[t0, t1)``;
3. rows are sorted by arrival (stable: ties keep file order);
4. ``limit`` keeps the first ``limit`` of them;
5. arrivals are shifted so the first kept job arrives at ``start_s`` (default 0).

Rows a source drops by a documented rule (a task that never ran, a censored VM when asked to
drop those, ...) are never dropped silently: :func:`report_rule` logs one ``WARNING`` record per
rule and file read on the source's logger (under ``digital_twin.workloads``), carrying a
:class:`~digital_twin.traces.TraceCleaning` with the count as ``record.cleaning``, as the
telemetry readers do.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.jobs import JobSpec, validate_workload
from digital_twin.traces._io import TraceCleaning, log_cleaning
from digital_twin.workloads._csv import HEADER_LINES

T = TypeVar("T")
TimeWindow = tuple[float, float]
"""``(start, end)`` in seconds of a source's own time axis; selects ``start <= t < end``."""

MAX_EXACT_INT = 2.0**53
"""Integers at or above this are not exact in float64 (and far beyond any real size)."""


def check_selection(limit: int | None, time_window: TimeWindow | None, start_s: float) -> None:
    """Raise :class:`SpecError` for a bad ``limit``, ``time_window`` or ``start_s``.

    Args:
        limit: ``None`` or an integer >= 0.
        time_window: ``None`` or ``(start, end)`` with finite ``start < end``.
        start_s: Finite arrival of the first kept job, >= 0.
    """
    if limit is not None:
        check_int("limit", limit, 0)
    if time_window is not None:
        try:
            t0, t1 = (float(t) for t in time_window)
        except (TypeError, ValueError):
            msg = f"time_window must be a (start, end) pair, got {short_repr(time_window)}"
            raise SpecError(msg) from None
        if not (math.isfinite(t0) and math.isfinite(t1) and t0 < t1):
            raise SpecError(f"time_window must have finite start < end, got {short_repr(time_window)}")
    if not (isinstance(start_s, int | float) and math.isfinite(start_s) and start_s >= 0):
        raise SpecError(f"start_s must be a finite number >= 0, got {short_repr(start_s)}")


def check_positive(name: str, value: float, *, allow_zero: bool = False) -> None:
    """Raise :class:`SpecError` unless ``value`` is a finite number > 0 (or >= 0)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise SpecError(f"{name} must be a finite number {bound}, got {short_repr(value)}")


def check_int(name: str, value: object, low: int, high: int | None = None) -> None:
    """Raise :class:`SpecError` unless ``value`` is an ``int`` (not bool) in ``[low, high]``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (high is not None and value > high):
        bound = f"in {low}..{high}" if high is not None else f">= {low}"
        raise SpecError(f"{name} must be an integer {bound}, got {short_repr(value)}")


def check_fraction(name: str, value: object) -> None:
    """Raise :class:`SpecError` unless ``value`` is a number in ``[0, 1]``."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0.0 <= value <= 1.0:
        raise SpecError(f"{name} must be a number in [0, 1], got {short_repr(value)}")


def coerce(cls: type[T], value: T | Mapping[str, Any], name: str) -> T:
    """``value`` itself, or ``cls(**value)`` for a mapping (as read from a scenario file)."""
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        try:
            return cls(**value)
        except TypeError as exc:
            raise SpecError(f"{name}: {exc}") from None
    raise SpecError(f"{name} must be a {cls.__name__} or a mapping, got {type(value).__name__}")


def require_columns(frame: pd.DataFrame, path: Path, columns: Sequence[str], what: str) -> None:
    """Raise :class:`TraceError` naming the missing columns (and a delimiter hint)."""
    missing = [c for c in columns if c not in frame.columns]
    if not missing:
        return
    found = list(frame.columns)
    hint = ""
    if len(found) == 1:
        for sep, name in ((";", "';'"), ("\t", "tab"), ("|", "'|'")):
            if sep in found[0]:
                hint = f"; the header is one column containing {name}: use commas between columns"
                break
    raise TraceError(
        f"{path}: missing column(s) {missing} in the header (line 1) of the {what}; found {found}; "
        f"expected {','.join(columns)}{hint}"
    )


def line_of(frame: pd.DataFrame, position: int) -> int:
    """1-based file line of the data row at ``position`` (0-based) in ``frame``.

    ``frame.attrs["header_lines"]`` (set by :func:`~digital_twin.workloads._csv.read_csv_strings`:
    1 with a header, 0 without) says how many lines come before the first data row; a frame
    without it has a header.
    """
    header_lines = int(frame.attrs.get("header_lines", HEADER_LINES))
    return int(frame.index[position]) + header_lines + 1


def require_values(frame: pd.DataFrame, path: Path, column: str) -> None:
    """Raise :class:`TraceError` at the first empty cell of ``column``."""
    missing = frame[column].isna().to_numpy()
    if missing.any():
        line = line_of(frame, int(np.argmax(missing)))
        raise TraceError(f"{path}:{line}: column {column!r} is empty (a value is required)")


def fail_at(frame: pd.DataFrame, path: Path, bad: np.ndarray, problem: str) -> None:
    """Raise ``"<file>:<line>: <problem>"`` for the first True of ``bad``, if any."""
    if bad.any():
        raise TraceError(f"{path}:{line_of(frame, int(np.argmax(bad)))}: {problem}")


def numeric_column(
    frame: pd.DataFrame,
    path: Path,
    column: str,
    *,
    required: bool = True,
    integer: bool = False,
    min_value: float | None = None,
) -> np.ndarray:
    """Convert one string column to float64, with row-located errors.

    Args:
        frame: From :func:`~digital_twin.workloads._csv.read_csv_strings`.
        path: The file (for messages).
        column: Column name.
        required: An empty cell is an error when True, ``NaN`` in the result otherwise.
        integer: Values must be whole numbers.
        min_value: Values must be ``>= min_value``.

    Returns:
        ``(n_rows,)`` float64 array (``NaN`` for empty cells when not required).

    Raises:
        TraceError: ``"<file>:<line>: column '<column>' ..."`` for the first bad cell.
    """
    raw = frame[column]
    if required:
        require_values(frame, path, column)
    missing = raw.isna().to_numpy()
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    checks = [(~missing & ~np.isfinite(values), "is not a finite number")]
    if integer:
        checks.append((~missing & (values != np.floor(values)), "is not an integer"))
        checks.append((~missing & (np.abs(values) >= MAX_EXACT_INT), "is too large"))
    if min_value is not None:
        below = "is negative" if min_value == 0 else f"is below the minimum {min_value:g}"
        checks.append((~missing & (values < min_value), below))
    for bad, problem in checks:
        if bad.any():
            pos = int(np.argmax(bad))
            raise TraceError(
                f"{path}:{line_of(frame, pos)}: column {column!r}: {short_repr(raw.iloc[pos])} {problem}"
            )
    return values


def unique_names(frame: pd.DataFrame, path: Path, column: str, what: str) -> np.ndarray:
    """``(n_rows,)`` object array of ``column``'s stripped values, each present and unique.

    Raises:
        TraceError: A value is missing, or repeated (naming both lines and ``what``, e.g. ``vmid``).
    """
    require_values(frame, path, column)
    names = frame[column].str.strip().to_numpy(dtype=object)
    duplicate = first_duplicate(names.tolist())
    if duplicate:
        first, second = duplicate
        raise TraceError(
            f"{path}:{line_of(frame, second)}: duplicate {what} {short_repr(names[second])} "
            f"(first on line {line_of(frame, first)})"
        )
    return names


def first_duplicate(names: Sequence[str]) -> tuple[int, int] | None:
    """Positions ``(first, second)`` of the first repeated name, or ``None``."""
    seen: dict[str, int] = {}
    for pos, name in enumerate(names):
        if name in seen:
            return seen[name], pos
        seen[name] = pos
    return None


def select_positions(
    arrival: np.ndarray,
    keep: np.ndarray,
    *,
    time_window: TimeWindow | None,
    limit: int | None,
    every: int = 1,
) -> np.ndarray:
    """Positions of the selected rows, sorted by arrival (stable).

    Args:
        arrival: ``(n,)`` arrival in the source's own time axis, seconds.
        keep: ``(n,)`` bool, rows that pass the source's own filters.
        time_window: Keep ``t0 <= arrival < t1`` (``None`` = all).
        limit: Keep at most this many, earliest first (``None`` = all).
        every: Keep every ``every``-th row of the sorted selection (before ``limit``).
    """
    mask = keep.copy()
    if time_window is not None:
        t0, t1 = float(time_window[0]), float(time_window[1])
        mask &= (arrival >= t0) & (arrival < t1)
    positions = np.flatnonzero(mask)
    positions = positions[np.argsort(arrival[positions], kind="stable")]
    positions = positions[::every]
    if limit is not None:
        positions = positions[:limit]
    return positions


def shift(arrival: np.ndarray, start_s: float, scale: float = 1.0) -> np.ndarray:
    """Arrivals relative to the first one, divided by ``scale``, plus ``start_s``.

    ``arrival`` must be sorted; an empty array is returned unchanged.
    """
    if arrival.size == 0:
        return arrival.astype(np.float64)
    return start_s + (arrival - arrival[0]) / scale


def finish(jobs: Iterable[JobSpec], path: Path | str) -> tuple[JobSpec, ...]:
    """:func:`validate_workload`, with its errors turned into a :class:`TraceError` on ``path``."""
    try:
        return validate_workload(jobs)
    except SpecError as exc:
        raise TraceError(f"{path}: {exc}") from None


def report_rule(logger: logging.Logger, path: Path, rule: str, count: int, message: str) -> None:
    """Log one documented cleaning rule of a job source, when it concerned any row (the load report).

    Args:
        logger: The source module's logger (``logging.getLogger(__name__)``).
        path: The file read.
        rule: The rule's name (:attr:`~digital_twin.traces.TraceCleaning.rule`).
        count: How many rows it concerned; nothing is logged for 0.
        message: What happened, in words, after ``"<file>: "``.
    """
    if count:
        log_cleaning(logger, TraceCleaning(str(path), rule, int(count)), f"{path}: {message}")
