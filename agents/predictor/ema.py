"""Exponential moving average: the predictor the reference's paper recommends (alpha 0.5)."""

from __future__ import annotations

import numpy as np

from agents.predictor.base import ArrayCache, Forecast, Predictor, one_step_mae


class EmaPredictor(Predictor):
    """Predicts ``x[t + 1] = ema[t] = alpha x[t] + (1 - alpha) ema[t - 1]``, ``ema[0] = x[0]``.

    The error estimate is its own one-step MAE over the stored history.

    Args:
        alpha: Smoothing factor in (0, 1]; 1 is persistence.

    Example:
        >>> import numpy as np
        >>> series = np.array([[10.0], [30.0], [30.0]])
        >>> EmaPredictor(alpha=0.5).forecast(series, seed=0).predicted_pct[:, 0].tolist()
        [10.0, 20.0, 25.0]
    """

    name = "ema"

    def __init__(self, alpha: float = 0.5) -> None:
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        self.alpha = float(alpha)

    def params(self) -> dict[str, float | int | str]:
        """``{"alpha": alpha}``."""
        return {"alpha": self.alpha}

    def forecast(self, series: np.ndarray, seed: int) -> Forecast:
        """See the class docstring (``seed`` is unused: the EMA is deterministic)."""
        del seed
        predicted = np.empty_like(series)
        self._smooth(series, predicted, start=0)
        return Forecast(predicted, one_step_mae(series, predicted), np.ones(series.shape, dtype=bool))

    def forecast_rows(
        self, seen: np.ndarray, before: Forecast, n_ticks: int, seed: int, cache: ArrayCache | None
    ) -> Forecast:
        """The recurrence continued from ``before``'s rows: Python work for the new rows only."""
        del n_ticks, seed, cache
        start = len(before)
        predicted = np.empty_like(seen)
        predicted[:start] = before.predicted_pct
        self._smooth(seen, predicted, start)
        return Forecast(predicted, one_step_mae(seen, predicted), np.ones(seen.shape, dtype=bool)).rows(start)

    def _smooth(self, series: np.ndarray, predicted: np.ndarray, start: int) -> None:
        """Fill ``predicted[start:]`` (rows before ``start`` already hold the EMA)."""
        a = self.alpha
        if start == 0:
            predicted[0] = series[0]
            start = 1
        for t in range(start, series.shape[0]):  # a loop over ticks only; nodes are vectorised
            predicted[t] = a * series[t] + (1.0 - a) * predicted[t - 1]
