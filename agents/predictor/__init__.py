"""Per-node forecasters of background cpu %: over a whole trace, or online as the ticks arrive.

``PREDICTORS`` maps names to predictor classes: ``lstm`` (the reference's per-node LSTM;
imports torch lazily, on first use), ``ema`` (alpha 0.5) and ``persistence``. Agents use
:class:`OnlinePredictions` (from the ticks seen so far only); whole-trace tables
(:meth:`Predictor.predict_trace`, cached by :class:`PredictionCache`) are for offline studies.
"""

from agents.predictor.base import Forecast, Predictions, Predictor
from agents.predictor.cache import PredictionCache, cache_key, default_cache, default_directory
from agents.predictor.ema import EmaPredictor
from agents.predictor.lstm import LstmPredictor
from agents.predictor.online import OnlinePredictions, SeriesSoFar, TicksSoFar
from agents.predictor.persistence import PersistencePredictor

PREDICTORS: dict[str, type[Predictor]] = {
    LstmPredictor.name: LstmPredictor,
    EmaPredictor.name: EmaPredictor,
    PersistencePredictor.name: PersistencePredictor,
}

__all__ = [
    "PREDICTORS",
    "EmaPredictor",
    "Forecast",
    "LstmPredictor",
    "OnlinePredictions",
    "PersistencePredictor",
    "PredictionCache",
    "Predictions",
    "Predictor",
    "SeriesSoFar",
    "TicksSoFar",
    "cache_key",
    "default_cache",
    "default_directory",
]
