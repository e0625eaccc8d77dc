"""The predictor interface: per-node forecasts of background cpu % over a whole replayed trace.

A predictor turns a background cpu series ``(T, N)`` (percent, one column per node, oldest
first) into a :class:`Predictions` table: row ``t`` is what the reference's per-node predictor
would report at tick ``t`` having seen ticks ``0..t`` only (never the future). Because the
table depends only on the trace, it is computed once and cached (:mod:`agents.predictor.cache`).
An agent cannot read a whole trace, only the ticks so far: it grows the same table a tick at a
time (:meth:`Predictor.forecast_rows`, :mod:`agents.predictor.online`).

Template method: subclasses implement :meth:`Predictor.forecast` (the raw next-tick forecast
and the model's error); :meth:`Predictor.predict_trace` adds the reference's shared rules,
all in percent units (decision 3 in ``docs/reference.md``, "Decisions"):

* a node's stored history is its last ``HISTORY_CAP = 500`` samples;
* cold start (fewer than 10 samples, or no model yet): predicted = mean of the stored history,
  confidence 0.1, spike probability 0;
* spike probability = ``clip((pred - m10) / max(m10, 1e-3), 0, 1)`` with ``m10`` the mean of
  the last 10 samples, plus 0.2 (capped at 1) when the burst factor ``max / mean`` of the
  stored history exceeds 1.5;
* confidence = ``clip(0.5 * sample_score + 0.5 * mae_score, 0.1, 1)`` with ``sample_score =
  min(1, (n - 10) / 490)`` (0 for n <= 10 stored samples) and ``mae_score = max(0, 1 - mae /
  20)``, mae in percentage points.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol, TypeVar

import numpy as np

_T = TypeVar("_T")

HISTORY_CAP = 500
"""Samples kept per node (FIFO), as the reference's ``WorkloadProfile.max_samples``."""
MIN_SAMPLES = 10
"""Fewer stored samples than this is a cold start."""
COLD_CONFIDENCE = 0.1
SPIKE_WINDOW = 10
SPIKE_MEAN_FLOOR = 1e-3
BURST_FACTOR_LIMIT = 1.5
BURST_BONUS = 0.2
MAE_CEILING_PCT = 20.0
SAMPLE_SCORE_SPAN = 490.0


@dataclass(frozen=True, eq=False)
class Forecast:
    """A predictor's raw output over a trace (before the shared rules).

    Attributes:
        predicted_pct: ``(T, N)`` forecast of the next tick's cpu % made at tick t (any value
            where ``ready`` is False).
        mae_pct: ``(T, N)`` the model's error estimate at tick t, in percentage points.
        ready: ``(T, N)`` bool, a model exists at tick t (False = cold start).
    """

    predicted_pct: np.ndarray
    mae_pct: np.ndarray
    ready: np.ndarray

    def __len__(self) -> int:
        """T, the number of ticks (rows)."""
        return int(self.predicted_pct.shape[0])

    def rows(self, start: int, stop: int | None = None) -> Forecast:
        """Rows ``start..stop - 1`` (views)."""
        return Forecast(self.predicted_pct[start:stop], self.mae_pct[start:stop], self.ready[start:stop])


@dataclass(frozen=True, eq=False)
class Predictions:
    """What the predictor reports at every tick of a trace, for every node.

    Attributes:
        predicted_pct: ``(T, N)`` predicted cpu % of the next tick, in [0, 100].
        spike_probability: ``(T, N)`` in [0, 1].
        confidence: ``(T, N)`` in [0.1, 1].
    """

    predicted_pct: np.ndarray
    spike_probability: np.ndarray
    confidence: np.ndarray

    @property
    def n_ticks(self) -> int:
        """T."""
        return int(self.predicted_pct.shape[0])

    def at(self, tick: int) -> tuple[np.ndarray, np.ndarray]:
        """``(spike_probability, confidence)`` at ``tick``, each ``(N,)`` (read-only views).

        Raises:
            IndexError: ``tick`` is outside ``[0, T)``.
        """
        if not 0 <= tick < self.n_ticks:
            raise IndexError(f"tick {tick} is outside the predicted range [0, {self.n_ticks})")
        return self.spike_probability[tick], self.confidence[tick]


class ArrayCache(Protocol):
    """Where a predictor keeps what is expensive to recompute, by key, as named arrays.

    :class:`agents.predictor.cache.PredictionCache` is the one the agents use.
    """

    def arrays(
        self,
        key: str,
        compute: Callable[[], dict[str, np.ndarray]],
        build: Callable[[dict[str, np.ndarray]], _T],
    ) -> _T:
        """The value of ``key``: built from its stored arrays, else from ``compute()``'s (then stored)."""
        ...


class Predictor(ABC):
    """A per-node forecaster of background cpu %.

    Subclasses set :attr:`name`, return every setting that changes predictions from
    :meth:`params` (it keys the cache) and implement :meth:`forecast`.
    """

    name: ClassVar[str] = "predictor"

    @abstractmethod
    def params(self) -> dict[str, float | int | str]:
        """Every setting that changes the predictions (JSON-serialisable; keys the cache)."""

    @abstractmethod
    def forecast(self, series: np.ndarray, seed: int) -> Forecast:
        """The raw forecast over ``series`` ``(T, N)``; row t may only use rows ``0..t``."""

    def forecast_rows(
        self, seen: np.ndarray, before: Forecast, n_ticks: int, seed: int, cache: ArrayCache | None
    ) -> Forecast:
        """Rows ``len(before)..k`` of the raw forecast of a trace of ``n_ticks`` ticks that begins with ``seen``.

        For online use (:class:`~agents.predictor.online.OnlinePredictions`): at tick ``k`` only
        ``seen`` (``(k + 1, N)``, ticks ``0..k``) is known, yet the rows must equal bit for bit
        those of :meth:`forecast` over the whole ``(n_ticks, N)`` series, whatever follows.
        ``before`` holds the rows already computed (``0..len(before) - 1``), ``cache`` may keep
        expensive intermediate results (the LSTM's fits).

        This default forecasts ``seen`` as a trace of its own: exact for predictors whose row t
        does not depend on the trace's length (persistence); O(k) work per call.
        """
        del n_ticks, cache
        return self.forecast(seen, seed).rows(len(before))

    def predict_trace(self, series: np.ndarray, seed: int = 0) -> Predictions:
        """The predictions at every tick of ``series`` (``(T, N)`` cpu %, T >= 1, N >= 1).

        Raises:
            ValueError: ``series`` is not a non-empty 2-D finite array.
        """
        series = np.asarray(series, dtype=np.float64)
        if series.ndim != 2 or series.shape[0] == 0 or series.shape[1] == 0 or not np.isfinite(series).all():
            raise ValueError(f"series must be a finite (T, N) array with T, N >= 1, got shape {series.shape}")
        return finalize(series, self.forecast(series, seed))


def stored_counts(n_ticks: int) -> np.ndarray:
    """``(T, 1)`` number of stored samples at each tick: ``min(t + 1, HISTORY_CAP)``."""
    return np.minimum(np.arange(1, n_ticks + 1), HISTORY_CAP)[:, None]


def trailing_mean(series: np.ndarray, window: int) -> np.ndarray:
    """``(T, N)``: the mean of rows ``max(0, t - window + 1) .. t`` for each t."""
    cumulative = np.cumsum(series, axis=0)
    shifted = np.zeros_like(cumulative)
    shifted[window:] = cumulative[:-window]
    counts = np.minimum(np.arange(1, series.shape[0] + 1), window)[:, None]
    mean: np.ndarray = (cumulative - shifted) / counts
    return mean


def trailing_max(series: np.ndarray, window: int) -> np.ndarray:
    """``(T, N)``: the max of rows ``max(0, t - window + 1) .. t`` for each t."""
    out = np.maximum.accumulate(series, axis=0)
    if series.shape[0] > window:
        windows = np.lib.stride_tricks.sliding_window_view(series, window, axis=0)  # (T-w+1, N, w)
        out[window - 1 :] = windows.max(axis=-1)
    return out


def finalize(series: np.ndarray, forecast: Forecast) -> Predictions:
    """Apply the shared cold-start, spike and confidence rules (module docstring)."""
    n = stored_counts(series.shape[0]).astype(float)
    stored_mean = trailing_mean(series, HISTORY_CAP)
    warm = forecast.ready & (n >= MIN_SAMPLES)
    predicted = np.where(warm, np.clip(forecast.predicted_pct, 0.0, 100.0), stored_mean)

    recent = trailing_mean(series, SPIKE_WINDOW)
    spike = np.clip((predicted - recent) / np.maximum(recent, SPIKE_MEAN_FLOOR), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        burst = np.where(stored_mean > 0, trailing_max(series, HISTORY_CAP) / stored_mean, 1.0)
    spike = np.minimum(1.0, spike + np.where(burst > BURST_FACTOR_LIMIT, BURST_BONUS, 0.0))

    sample_score = np.where(n > MIN_SAMPLES, np.minimum(1.0, (n - MIN_SAMPLES) / SAMPLE_SCORE_SPAN), 0.0)
    mae_score = np.maximum(0.0, 1.0 - np.nan_to_num(forecast.mae_pct, nan=np.inf) / MAE_CEILING_PCT)
    confidence = np.clip(0.5 * sample_score + 0.5 * mae_score, COLD_CONFIDENCE, 1.0)

    spike = np.where(warm, spike, 0.0)
    confidence = np.where(warm, confidence, COLD_CONFIDENCE)
    for array in (predicted, spike, confidence):
        array.setflags(write=False)
    return Predictions(predicted, spike, confidence)


def one_step_mae(series: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """``(T, N)``: mean ``|predicted[s - 1] - series[s]|`` over the pairs inside the stored history.

    At tick t the stored history is the last ``min(t + 1, HISTORY_CAP)`` samples, holding
    ``min(t, HISTORY_CAP - 1)`` one-step pairs; row 0 (no pair yet) is NaN. The in-sample
    error estimate of the model-free predictors (EMA, persistence).
    """
    errors = np.full(series.shape, np.nan)
    if series.shape[0] > 1:
        errors[1:] = trailing_mean(np.abs(predicted[:-1] - series[1:]), HISTORY_CAP - 1)
    return errors
