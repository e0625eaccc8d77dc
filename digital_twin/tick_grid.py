"""The telemetry tick grid of an episode: which ticks there are, and where they start.

Tick ``k`` starts at ``k * tick_s`` (that float product, for k = 0, 1, ...) and covers
``[k * tick_s, (k + 1) * tick_s)``. An episode of ``horizon_s`` has the ticks that start before
the horizon: ``n_ticks = count_ticks(horizon_s, tick_s)``, k = 0 .. n_ticks - 1. The twin fires
exactly those ticks (it samples the SLA at each), the telemetry must have a row for each, the
trace readers build that many rows, and the views tell agents ``n_ticks``.

Decimal ticks and horizons are not exact in binary floats: ``2.7 / 0.3`` is
``9.000000000000002`` and ``9 * 0.3`` is ``2.6999999999999997``, just below ``2.7``. A tick
start within a relative :data:`TICK_TOLERANCE` of the horizon is the horizon, not a tick
before it, so a 2.7 s horizon of 0.3 s ticks has 9 ticks, as written. Whole numbers of seconds
(the bundled scenarios' 300 s ticks and whole-hour horizons) are exact either way.

Example:
    >>> count_ticks(2.7, 0.3), count_ticks(14_400, 300), count_ticks(1000, 300)
    (9, 48, 4)
    >>> TickGrid(2.7, 0.3).times_s().tolist()[-2:]
    [2.1, 2.4]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from digital_twin.errors import SettingError, positive_number, short_repr

TICK_TOLERANCE = 1e-9
"""Relative distance to the horizon within which a tick start counts as at the horizon."""


def check_tick_s(tick_s: object) -> float:
    """``tick_s`` as a float, if it is a finite number > 0 (every time is divided by it).

    The one check of a tick length: telemetry, trace series, trace readers and scenario files
    all call it.

    Raises:
        SettingError: ``"tick_s must be a finite number > 0, got <value>"``.
    """
    return positive_number(tick_s, "tick_s")


def count_ticks(span_s: float, tick_s: float) -> int:
    """Ticks that start before ``span_s``: the k >= 0 with ``k * tick_s < span_s`` (see the module).

    Args:
        span_s: Seconds to cover (a horizon, or a trace window's length).
        tick_s: Tick length in seconds (> 0).

    Returns:
        0 when ``span_s <= 0``, else at least 1.

    Raises:
        SettingError: ``span_s / tick_s`` is not a finite number of ticks.
    """
    if span_s <= 0:
        return 0
    ratio = span_s / tick_s
    if not math.isfinite(ratio):
        raise SettingError("tick_s", f"gives {ratio} ticks over {span_s:g} s, got {short_repr(tick_s)}")
    nearest = round(ratio)
    if nearest >= 1 and abs(ratio - nearest) <= TICK_TOLERANCE * nearest:
        return nearest
    return max(1, math.ceil(ratio))


@dataclass(frozen=True, slots=True)
class TickGrid:
    """The ticks of an episode of ``horizon_s`` seconds with ticks of ``tick_s`` seconds.

    Attributes:
        horizon_s: The episode covers ``[0, horizon_s)`` (a finite number > 0).
        tick_s: Tick length in seconds (a finite number > 0).

    Raises:
        SettingError: Either is not a finite number > 0.
    """

    horizon_s: float
    tick_s: float

    def __post_init__(self) -> None:
        positive_number(self.horizon_s, "horizon_s")
        check_tick_s(self.tick_s)

    @property
    def n_ticks(self) -> int:
        """Ticks that start before the horizon (>= 1): :func:`count_ticks`."""
        return count_ticks(self.horizon_s, self.tick_s)

    def times_s(self) -> np.ndarray:
        """``(n_ticks,)`` float64 tick start times ``k * tick_s`` (the twin's own products)."""
        return np.arange(self.n_ticks, dtype=np.float64) * self.tick_s
