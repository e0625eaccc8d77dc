"""Background telemetry: other tenants' utilisation of each node, on a regular tick grid.

The twin reads background load from a :class:`Telemetry`; the trace readers in
:mod:`digital_twin.traces` produce one from real data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from digital_twin.errors import SpecError, positive_number
from digital_twin.tick_grid import check_tick_s, count_ticks

CPU = 0  # index of cpu % in the last axis of ``background_pct``
MEM = 1  # index of mem % in the last axis of ``background_pct``


@dataclass(frozen=True, eq=False)
class Telemetry:
    """Per-node background utilisation on a regular grid.

    Tick ``k`` covers simulated time ``[k * tick_s, (k + 1) * tick_s)``; the twin samples the
    SLA at each tick time ``k * tick_s`` of the episode's grid (:mod:`digital_twin.tick_grid`)
    and a node's background during tick ``k`` is ``background_pct[k, node]``.

    Attributes:
        background_pct: ``(n_ticks, n_nodes, 2)`` float64, cpu % and mem % in [0, 100].
            Stored read-only.
        tick_s: Tick length in seconds (a finite number > 0; checked first, before the array).
        source: Free-text description (file and mapping) for reports.
    """

    background_pct: np.ndarray  # (n_ticks, n_nodes, 2)
    tick_s: float
    source: str = "array"

    def __post_init__(self) -> None:
        try:
            check_tick_s(self.tick_s)
        except SpecError as exc:
            raise SpecError(f"telemetry ({self.source}): {exc}") from None
        array = np.array(self.background_pct, dtype=np.float64)  # a private copy
        if array.ndim != 3 or array.shape[2] != 2 or array.shape[0] == 0 or array.shape[1] == 0:
            raise SpecError(
                f"telemetry ({self.source}): background_pct must have shape (n_ticks, n_nodes, 2) "
                f"with n_ticks, n_nodes >= 1, got {array.shape}"
            )
        if not np.isfinite(array).all():
            tick, node, _ = np.argwhere(~np.isfinite(array))[0]
            raise SpecError(f"telemetry ({self.source}): non-finite value at tick {tick}, node {node}")
        if array.min() < 0.0 or array.max() > 100.0:
            tick, node, _ = np.argwhere((array < 0) | (array > 100))[0]
            raise SpecError(
                f"telemetry ({self.source}): value {array[tick, node]} at tick {tick}, node {node} "
                "is outside [0, 100] %"
            )
        array.setflags(write=False)
        object.__setattr__(self, "background_pct", array)

    @property
    def n_ticks(self) -> int:
        """Number of ticks in the series."""
        return int(self.background_pct.shape[0])

    @property
    def n_nodes(self) -> int:
        """Number of nodes (columns) in the series."""
        return int(self.background_pct.shape[1])

    @property
    def span_s(self) -> float:
        """Simulated seconds covered, ``n_ticks * tick_s``."""
        return self.n_ticks * self.tick_s

    @classmethod
    def constant(cls, n_nodes: int, cpu_pct: float, mem_pct: float, span_s: float, tick_s: float) -> Telemetry:
        """A flat background (handy for toy instances and tests) of the ticks that start before ``span_s``.

        ``count_ticks(span_s, tick_s)`` ticks (:func:`~digital_twin.tick_grid.count_ticks`), so a
        span equal to an episode's horizon covers it exactly.

        Raises:
            SpecError: ``tick_s`` or ``span_s`` is not a finite number > 0.
        """
        source = f"constant cpu={cpu_pct}% mem={mem_pct}%"
        try:
            check_tick_s(tick_s)
            positive_number(span_s, "span_s")
        except SpecError as exc:
            raise SpecError(f"telemetry ({source}): {exc}") from None
        n_ticks = count_ticks(span_s, tick_s)
        array = np.empty((n_ticks, n_nodes, 2))
        array[..., CPU] = cpu_pct
        array[..., MEM] = mem_pct
        return cls(array, tick_s, source=source)

