"""Persistence: the next tick's cpu % is the current one."""

from __future__ import annotations

import numpy as np

from agents.predictor.base import Forecast, Predictor, one_step_mae


class PersistencePredictor(Predictor):
    """Predicts ``x[t + 1] = x[t]``; error estimate: its own one-step MAE over the history.

    Example:
        >>> import numpy as np
        >>> table = PersistencePredictor().predict_trace(np.full((12, 2), 40.0))
        >>> float(table.predicted_pct[11, 0]), float(table.spike_probability[11, 0])
        (40.0, 0.0)
    """

    name = "persistence"

    def params(self) -> dict[str, float | int | str]:
        """No settings."""
        return {}

    def forecast(self, series: np.ndarray, seed: int) -> Forecast:
        """See the class docstring (``seed`` is unused: persistence is deterministic)."""
        del seed
        predicted = series.copy()
        return Forecast(predicted, one_step_mae(series, predicted), np.ones(series.shape, dtype=bool))
