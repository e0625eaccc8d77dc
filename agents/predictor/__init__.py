"""Per-node forecasters of background cpu %, computed once per trace and cached.

``PREDICTORS`` maps names to predictor classes: ``lstm`` (the reference's per-node LSTM;
imports torch lazily, on first use), ``ema`` (alpha 0.5) and ``persistence``.
"""

from agents.predictor.base import Forecast, Predictions, Predictor
from agents.predictor.cache import PredictionCache, cache_key, default_cache, default_directory
from agents.predictor.ema import EmaPredictor
from agents.predictor.lstm import LstmPredictor
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
    "PersistencePredictor",
    "PredictionCache",
    "Predictions",
    "Predictor",
    "cache_key",
    "default_cache",
    "default_directory",
]
