"""Predictions during an episode, from the telemetry seen so far: never from the future.

An online agent at tick k knows ticks ``0..k`` of the background load and nothing after. A
predictor's table over a whole trace (:meth:`~agents.predictor.base.Predictor.predict_trace`)
has in row t what the predictor reports at tick t having seen ticks ``0..t`` only, but
computing it reads the whole trace. :class:`OnlinePredictions` grows the table a tick at a
time instead: at tick k it computes the rows up to k from ticks ``0..k``
(:meth:`~agents.predictor.base.Predictor.forecast_rows`), equal bit for bit to the whole
table's, so an agent decides exactly as it would from the whole table.

Cost, per new tick: the shared rules over the ticks so far (vectorised, O(k N)) and the
predictor's new rows (EMA and persistence: O(k N) numpy; LSTM: one forward pass of the current
fit's block, and at each refit tick one fit, 50 epochs, unless the cache has it: fits are
cached in memory and on disk, keyed by the history they were fitted on, so they are made once
per trace for every episode and run).

Example:
    >>> import numpy as np
    >>> from agents.predictor import EmaPredictor
    >>> series = np.linspace(20.0, 60.0, 30)[:, None]  # (T, N): 30 ticks, 1 node
    >>> online = OnlinePredictions(EmaPredictor(), n_ticks=30)
    >>> spike, confidence = online.at(SeriesSoFar(series[:12]))
    >>> whole = EmaPredictor().predict_trace(series)
    >>> bool(spike[0] == whole.spike_probability[11, 0] and confidence[0] == whole.confidence[11, 0])
    True
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from agents.predictor.base import Forecast, Predictor, finalize
from agents.predictor.cache import PredictionCache


class TicksSoFar(Protocol):
    """The background cpu seen so far (:class:`aco_env.TelemetrySoFar` is one)."""

    @property
    def tick_index(self) -> int:
        """The current tick, k."""
        ...

    def cpu_pct(self) -> np.ndarray:
        """``(k + 1, N)`` background cpu % of ticks ``0..k``."""
        ...


class SeriesSoFar:
    """A :class:`TicksSoFar` over a given series (for tests and offline use).

    Args:
        seen: ``(k + 1, N)`` background cpu % of ticks ``0..k``.
    """

    def __init__(self, seen: np.ndarray) -> None:
        self._seen = np.array(seen, dtype=np.float64)
        self.tick_index = self._seen.shape[0] - 1

    def cpu_pct(self) -> np.ndarray:
        """A copy of the series."""
        return self._seen.copy()


class OnlinePredictions:
    """A predictor's report at each tick of one episode, computed from the ticks seen so far.

    The report at tick k is row k of ``predictor.predict_trace(series[:n_ticks], seed)`` for
    the episode's whole series, bit for bit, computed from ticks ``0..k`` only.

    Args:
        predictor: The forecaster.
        n_ticks: T, the ticks the episode can reach (its table's length): ``view.grid.n_ticks``
            of :class:`aco_env.ClusterView`. Ticks from T on get row T - 1's report.
        seed: The predictor's seed.
        cache: Where the predictor keeps what is expensive to recompute (the LSTM's fits);
            ``None`` = recompute.
    """

    def __init__(self, predictor: Predictor, n_ticks: int, seed: int = 0, cache: PredictionCache | None = None) -> None:
        if n_ticks < 1:
            raise ValueError(f"n_ticks must be >= 1, got {n_ticks}")
        self.predictor = predictor
        self.n_ticks = n_ticks
        self.seed = seed
        self.cache = cache
        self._seen = np.zeros((0, 0))  # (rows, N): the ticks the rows were computed from
        self._forecast: Forecast | None = None  # the raw forecast's rows 0..rows-1
        self._report: tuple[np.ndarray, np.ndarray] | None = None  # at tick rows - 1

    def at(self, so_far: TicksSoFar) -> tuple[np.ndarray, np.ndarray]:
        """``(spike_probability, confidence)`` at the current tick, each ``(N,)`` (read-only).

        Reads ``so_far`` only when the tick changes, so one object serves one episode (agents
        make a new one at each reset). A tick before the last one asked, or earlier ticks that
        differ from those seen before, start the table over.
        """
        k = min(so_far.tick_index, self.n_ticks - 1)
        if self._report is not None and k == len(self._seen) - 1:
            return self._report
        seen = so_far.cpu_pct()[: k + 1]
        rows = len(self._seen)
        kept = self._forecast
        if kept is None or rows > k or not np.array_equal(seen[:rows], self._seen):
            n = seen.shape[1]  # another episode or trace: nothing computed so far applies
            kept = Forecast(np.zeros((0, n)), np.zeros((0, n)), np.zeros((0, n), dtype=bool))
        new = self.predictor.forecast_rows(seen, kept, self.n_ticks, self.seed, self.cache)
        self._forecast = Forecast(
            np.concatenate([kept.predicted_pct, new.predicted_pct]),
            np.concatenate([kept.mae_pct, new.mae_pct]),
            np.concatenate([kept.ready, new.ready]),
        )
        self._seen = seen
        table = finalize(seen, self._forecast)
        self._report = (table.spike_probability[k], table.confidence[k])
        return self._report
