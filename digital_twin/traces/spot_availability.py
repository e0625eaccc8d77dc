"""Spot availability traces (SkyPilot's ``spot-traces`` JSON): how many spot instances were up, per tick.

One file is one (zone, instance type) pair watched at a fixed tick::

    {"metadata": {"gap_seconds": 300}, "data": [0, 3, 16, 16, ...]}
    {"metadata": {"gap_seconds": 32}, "data": [0, 1, 1, ...], "prices": [0.918, ...]}

``data[k]`` holds during ``[k * gap, (k + 1) * gap)`` seconds from the trace's start (there are
no timestamps): the number of the ``instances`` watched that were up. Single-instance files
hold 0/1; files in a ``<N>-node`` folder hold 0..N. This reader's convention is the files':
**a value counts instances available** (``convention="available"``). The simulators built on
the same data use the opposite one (1 = preempted); such a file is read with
``convention="preempted"`` (0/1 only), never silently.

What the reader does with the data's known irregularities:

* the tick differs between files (30 to 600 s): each trace keeps its own ``gap_seconds``,
  which must be a positive finite number;
* files differ in length: each trace has its own :attr:`SpotTrace.span_s` (the replay refuses a
  trace shorter than the episode);
* the optional ``prices`` key (USD per instance-hour, one per tick) is read and checked (same
  length, finite, >= 0) but not used; any other key is refused, as is a ``metadata`` key
  other than ``gap_seconds``;
* ``<N>`` comes from the folder name ``<N>-node`` or the ``instances`` argument, never from the
  file name's suffix (a per-instance size); a value above ``N``, negative, fractional, a
  boolean or not a number is refused naming the file and the tick;
* a leading run of unavailable ticks (waiting for the first launch) is data like any other
  tick (a node replayed from there starts down); :attr:`SpotTrace.leading_down_ticks` says
  how long it is;
* identical files are found by :func:`identical_traces` (the replay warns, naming them).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from digital_twin._files import read_utf8
from digital_twin.errors import TraceError, short_repr
from digital_twin.traces._io import check_file

CONVENTIONS = ("available", "preempted")
"""``available``: a value counts instances up (the files' own); ``preempted``: 1 = preempted (0/1 only)."""
_KEYS = {"metadata", "data", "prices"}
_FOLDER = re.compile(r"^(\d+)-node$")


@dataclass(frozen=True, eq=False)
class SpotTrace:
    """One spot availability trace.

    Attributes:
        path: The file it was read from.
        gap_s: Tick length, seconds (> 0).
        counts: ``(n_ticks,)`` int64, read-only: instances up during tick ``k``, in ``0..instances``.
        instances: How many instances the trace watched (``N``; 1 for single-instance files).
        prices_usd_per_hour: ``(n_ticks,)`` float64 spot prices when the file has them, else ``None``.
    """

    path: Path
    gap_s: float
    counts: np.ndarray = field(repr=False)
    instances: int
    prices_usd_per_hour: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_ticks(self) -> int:
        """Number of ticks."""
        return len(self.counts)

    @property
    def span_s(self) -> float:
        """Seconds the trace covers: ``n_ticks * gap_s``."""
        return self.n_ticks * self.gap_s

    @property
    def leading_down_ticks(self) -> int:
        """Ticks before the first one with every instance up (0 when the trace starts fully up)."""
        full = np.flatnonzero(self.counts >= self.instances)
        return int(full[0]) if len(full) else self.n_ticks


def read_spot_trace(path: str | Path, instances: int | None = None, convention: str = "available") -> SpotTrace:
    """Read one availability trace file.

    Args:
        path: The JSON file.
        instances: ``N``, the instances the trace watched; ``None``: from a ``<N>-node`` folder
            in the path, else 1.
        convention: ``"available"`` (a value counts instances up) or ``"preempted"`` (1 = down).

    Raises:
        TraceError: Not a regular non-empty UTF-8 file, not JSON, a missing or unknown key, a
            bad ``gap_seconds``, an empty ``data``, a value that is not an integer in
            ``0..N`` (the message names the file and the tick), ``prices`` of another length
            or with a bad value, an unknown convention.
    """
    path = check_file(path)
    if convention not in CONVENTIONS:
        raise TraceError(f"{path}: unknown convention {short_repr(convention)}; known: {list(CONVENTIONS)}")
    document = _json_object(path)
    gap_s = _gap_seconds(path, document)
    n = _instances(path, instances)
    if convention == "preempted" and n != 1:
        raise TraceError(f"{path}: the 'preempted' convention is for single-instance traces (0/1), not {n} instances")
    counts = _counts(path, document["data"], n)
    if convention == "preempted":
        counts = 1 - counts
    counts.setflags(write=False)
    prices = _prices(path, document.get("prices"), len(counts))
    return SpotTrace(path, gap_s, counts, n, prices)


def identical_traces(traces: list[SpotTrace]) -> list[tuple[SpotTrace, SpotTrace]]:
    """Pairs of traces with the same tick and the same counts (one sample, not two)."""
    return [
        (a, b) for a, b in itertools.combinations(traces, 2)
        if a.path != b.path and a.gap_s == b.gap_s and np.array_equal(a.counts, b.counts)
    ]  # fmt: skip


def _json_object(path: Path) -> dict[str, Any]:
    text = read_utf8(path, "spot trace")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(f"{path}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg})") from None
    if not isinstance(document, dict):
        raise TraceError(f"{path}: expected a JSON object with 'metadata' and 'data', got {type(document).__name__}")
    unknown = sorted(set(document) - _KEYS)
    if unknown:
        raise TraceError(f"{path}: unknown key(s) {unknown}; a spot trace has {sorted(_KEYS)}")
    missing = sorted({"metadata", "data"} - set(document))
    if missing:
        raise TraceError(f"{path}: missing key(s) {missing}")
    return document


def _gap_seconds(path: Path, document: dict[str, Any]) -> float:
    metadata = document["metadata"]
    if not isinstance(metadata, dict) or "gap_seconds" not in metadata:
        raise TraceError(f"{path}: metadata must be an object with 'gap_seconds', got {short_repr(metadata)}")
    unknown = sorted(set(metadata) - {"gap_seconds"})
    if unknown:
        raise TraceError(f"{path}: unknown metadata key(s) {unknown}")
    gap = metadata["gap_seconds"]
    if isinstance(gap, bool) or not isinstance(gap, int | float) or not math.isfinite(gap) or gap <= 0:
        raise TraceError(f"{path}: metadata.gap_seconds must be a positive number of seconds, got {short_repr(gap)}")
    return float(gap)


def _instances(path: Path, instances: int | None) -> int:
    if instances is not None:
        if isinstance(instances, bool) or not isinstance(instances, int) or instances < 1:
            raise TraceError(f"{path}: instances must be an integer >= 1, got {short_repr(instances)}")
        return instances
    folders = [int(m.group(1)) for part in path.parts[:-1] if (m := _FOLDER.match(part))]
    return folders[-1] if folders else 1


def _counts(path: Path, data: object, instances: int) -> np.ndarray:
    if not isinstance(data, list) or not data:
        raise TraceError(f"{path}: data must be a non-empty list of counts, got {short_repr(data)}")
    bad = next(
        (k for k, v in enumerate(data) if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= instances),
        None,
    )
    if bad is not None:
        raise TraceError(
            f"{path}: tick {bad}: expected an integer count of instances up in 0..{instances}, "
            f"got {short_repr(data[bad])}"
        )
    return np.array(data, dtype=np.int64)


def _prices(path: Path, prices: object, n_ticks: int) -> np.ndarray | None:
    if prices is None:
        return None
    if not isinstance(prices, list) or len(prices) != n_ticks:
        shown = len(prices) if isinstance(prices, list) else short_repr(prices)
        raise TraceError(f"{path}: prices must be a list with one price per tick ({n_ticks}), got {shown}")
    bad = next(
        (k for k, v in enumerate(prices)
         if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0),
        None,
    )  # fmt: skip
    if bad is not None:
        raise TraceError(f"{path}: tick {bad}: a price must be a finite number >= 0, got {short_repr(prices[bad])}")
    return np.array(prices, dtype=np.float64)
