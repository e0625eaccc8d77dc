"""Predictors (LSTM, EMA, persistence): shared rules, causality, learning, and the cache."""

from __future__ import annotations

import numpy as np
import pytest

from agents.predictor import (
    EmaPredictor,
    LstmPredictor,
    OnlinePredictions,
    PersistencePredictor,
    PredictionCache,
    Predictor,
    SeriesSoFar,
    cache_key,
    default_directory,
)
from agents.predictor.base import Forecast

RNG = np.random.default_rng(0)
NOISY = np.clip(40 + 15 * np.sin(np.arange(60) / 4.0)[:, None] + RNG.normal(0, 3, (60, 3)), 0, 100)


def sine(n_ticks: int, period: float = 20.0, noise: float = 1.0, seed: int = 0) -> np.ndarray:
    """``(n_ticks, 1)`` cpu % = 50 + 30 sin(2 pi t / period) + N(0, noise)."""
    t = np.arange(n_ticks)
    rng = np.random.default_rng(seed)
    return (50 + 30 * np.sin(2 * np.pi * t / period) + rng.normal(0, noise, n_ticks))[:, None]


class CountingPredictor(PersistencePredictor):
    """Persistence that counts its computations (to tell cache hits from misses)."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def forecast(self, series: np.ndarray, seed: int) -> Forecast:
        self.calls += 1
        return super().forecast(series, seed)


@pytest.mark.training
def test_lstm__learns_a_sine_wave_better_than_persistence() -> None:
    """One-step MAE of the LSTM on a noisy sine (period 20 ticks) is well below persistence's."""
    series = sine(140)
    lstm = LstmPredictor().predict_trace(series, seed=0).predicted_pct
    persistence = PersistencePredictor().predict_trace(series).predicted_pct
    lstm_mae = np.abs(lstm[80:-1] - series[81:]).mean()
    persistence_mae = np.abs(persistence[80:-1] - series[81:]).mean()
    assert lstm_mae < 0.5 * persistence_mae, (lstm_mae, persistence_mae)


@pytest.mark.parametrize(
    "predictor",
    [PersistencePredictor(), EmaPredictor(), pytest.param(LstmPredictor(epochs=5), marks=pytest.mark.training)],
    ids=lambda p: p.name,
)
def test_predictor__rows_depend_only_on_past_ticks(predictor: Predictor) -> None:
    """Changing ticks after t leaves every row <= t unchanged (no look-ahead)."""
    changed = NOISY.copy()
    changed[35:] = 100.0 - changed[35:]
    before, after = predictor.predict_trace(NOISY, seed=1), predictor.predict_trace(changed, seed=1)
    for name in ("predicted_pct", "spike_probability", "confidence"):
        np.testing.assert_array_equal(getattr(before, name)[:35], getattr(after, name)[:35])
    assert not np.array_equal(before.predicted_pct[35:], after.predicted_pct[35:])  # the change is seen


@pytest.mark.parametrize(
    "predictor",
    [PersistencePredictor(), EmaPredictor(), pytest.param(LstmPredictor(epochs=5), marks=pytest.mark.training)],
    ids=lambda p: p.name,
)
def test_predictor__cold_start_reports_the_mean_with_low_confidence(predictor: Predictor) -> None:
    """Under 10 samples (and before the LSTM's first fit at 11): mean, confidence 0.1, spike 0."""
    table = predictor.predict_trace(NOISY, seed=0)
    cold = 10 if isinstance(predictor, LstmPredictor) else 9
    running_mean = np.cumsum(NOISY, axis=0) / np.arange(1, 61)[:, None]
    np.testing.assert_allclose(table.predicted_pct[:cold], running_mean[:cold])
    assert (table.confidence[:cold] == 0.1).all() and (table.spike_probability[:cold] == 0).all()
    assert (table.confidence[cold:] >= 0.1).all() and (table.confidence[cold:] <= 1).all()


def test_predictor__spike_probability_follows_the_reference_formula() -> None:
    """clip((pred - m10) / m10, 0, 1), + 0.2 when max / mean of the history > 1.5."""
    series = np.full((30, 2), 20.0)
    series[-1, 0] = 29.0  # pred 29 vs last-10 mean 20.9: (29 - 20.9) / 20.9
    series[:, 1] = 10.0
    series[5, 1] = 40.0  # burst factor 40 / 11 > 1.5; the last value equals the last-10 mean
    table = PersistencePredictor().predict_trace(series)
    assert table.spike_probability[-1, 0] == pytest.approx((29 - 20.9) / 20.9)
    assert table.spike_probability[-1, 1] == pytest.approx(0.2)


def test_predictor__confidence_combines_sample_count_and_error() -> None:
    """0.5 min(1, (n - 10) / 490) + 0.5 max(0, 1 - mae / 20), clipped to [0.1, 1]."""
    flat = PersistencePredictor().predict_trace(np.full((600, 1), 30.0))
    assert flat.confidence[59, 0] == pytest.approx(0.5 * 50 / 490 + 0.5)
    assert flat.confidence[599, 0] == pytest.approx(1.0)
    alternating = np.tile([[10.0], [30.0]], (30, 1))  # one-step error 20: mae score 0
    table = PersistencePredictor().predict_trace(alternating)
    assert table.confidence[59, 0] == pytest.approx(max(0.1, 0.5 * 50 / 490))


@pytest.mark.training
def test_lstm__is_reproducible_and_leaves_the_global_torch_rng_alone() -> None:
    """Same seed, same table; a different seed changes it; torch's global RNG state is untouched."""
    import torch

    state = torch.random.get_rng_state()
    predictor = LstmPredictor(epochs=10)
    first = predictor.predict_trace(NOISY[:30], seed=3).predicted_pct
    np.testing.assert_array_equal(first, predictor.predict_trace(NOISY[:30], seed=3).predicted_pct)
    assert not np.array_equal(first, predictor.predict_trace(NOISY[:30], seed=4).predicted_pct)
    assert torch.equal(state, torch.random.get_rng_state())


def test_cache__second_lookup_is_a_memory_hit_and_a_fresh_cache_reuses_the_file(
    tmp_path: object,
) -> None:
    """A miss computes and writes <key>.npz; a repeat hits memory; a new cache loads the file."""
    predictor = CountingPredictor()
    cache = PredictionCache(tmp_path)
    first = cache.get(predictor, NOISY, seed=0)
    assert cache.get(predictor, NOISY, seed=0) is first
    assert (cache.stats.misses, cache.stats.memory_hits, predictor.calls) == (1, 1, 1)
    assert cache.path_of(cache_key(predictor, NOISY, 0)).exists()
    fresh = PredictionCache(tmp_path)
    loaded = fresh.get(predictor, NOISY, seed=0)
    assert (fresh.stats.disk_hits, fresh.stats.misses, predictor.calls) == (1, 0, 1)
    np.testing.assert_array_equal(loaded.confidence, first.confidence)


def test_cache__key_changes_with_series_params_and_seed() -> None:
    """The key covers the series bytes, the predictor's name and params, and the seed."""
    base = cache_key(EmaPredictor(0.5), NOISY, 0)
    changed = NOISY.copy()
    changed[0, 0] += 1e-9
    others = {
        cache_key(EmaPredictor(0.5), changed, 0),
        cache_key(EmaPredictor(0.3), NOISY, 0),
        cache_key(EmaPredictor(0.5), NOISY, 1),
        cache_key(PersistencePredictor(), NOISY, 0),
    }
    assert base not in others and len(others) == 4
    assert cache_key(EmaPredictor(0.5), NOISY.copy(), 0) == base  # content, not identity


def test_cache__an_unreadable_file_is_recomputed(tmp_path: object) -> None:
    """A corrupt cache file counts as a miss and is overwritten."""
    predictor = CountingPredictor()
    path = PredictionCache(tmp_path).path_of(cache_key(predictor, NOISY, 0))
    path.write_bytes(b"not an npz")
    cache = PredictionCache(tmp_path)
    cache.get(predictor, NOISY, seed=0)
    assert cache.stats.misses == 1 and predictor.calls == 1
    fresh = PredictionCache(tmp_path)
    fresh.get(predictor, NOISY, seed=0)
    assert fresh.stats.disk_hits == 1  # the file was rewritten


def test_cache__default_directory_honours_the_environment_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    """$ACO_ENV_CACHE/predictions, else ~/.cache/aco-env/predictions."""
    monkeypatch.setenv("ACO_ENV_CACHE", str(tmp_path))
    assert default_directory() == tmp_path / "predictions"
    monkeypatch.delenv("ACO_ENV_CACHE")
    assert default_directory().parts[-3:] == (".cache", "aco-env", "predictions")


@pytest.mark.training
def test_lstm__nodes_trained_together_match_a_node_trained_alone() -> None:
    """No cross-node leakage: node 0's forecasts are those of fitting it alone."""
    predictor = LstmPredictor(epochs=8)
    together = predictor.predict_trace(NOISY[:40, :2], seed=5).predicted_pct[:, 0]
    alone = predictor.predict_trace(NOISY[:40, :1], seed=5).predicted_pct[:, 0]
    np.testing.assert_allclose(together, alone, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "predictor",
    [PersistencePredictor(), EmaPredictor(), pytest.param(LstmPredictor(epochs=3), marks=pytest.mark.training)],
    ids=lambda p: p.name,
)
def test_online_predictions__equal_the_whole_trace_table_bit_for_bit(predictor: Predictor) -> None:
    """Fed one tick at a time (and skipping ticks), every report is the whole table's row."""
    whole = predictor.predict_trace(NOISY, seed=3)
    online = OnlinePredictions(predictor, n_ticks=60, seed=3, cache=PredictionCache(None))
    for k in [*range(25), *range(27, 60, 4), 59]:
        spike, confidence = online.at(SeriesSoFar(NOISY[: k + 1]))
        np.testing.assert_array_equal(spike, whole.spike_probability[k])
        np.testing.assert_array_equal(confidence, whole.confidence[k])


@pytest.mark.training
def test_online_predictions__never_read_past_the_current_tick() -> None:
    """Reports up to tick k are the same whatever the ticks after k hold."""
    changed = NOISY.copy()
    changed[31:] = 100.0 - changed[31:]
    reports = []
    for series in (NOISY, changed):
        online = OnlinePredictions(LstmPredictor(epochs=3), n_ticks=60, seed=1)
        reports.append([online.at(SeriesSoFar(series[: k + 1])) for k in range(31)])
    for (spike, confidence), (spike2, confidence2) in zip(*reports, strict=True):
        np.testing.assert_array_equal(spike, spike2)
        np.testing.assert_array_equal(confidence, confidence2)


def test_online_predictions__start_over_when_the_ticks_go_back_or_differ() -> None:
    """A new episode (an earlier tick) or another trace gets its own rows, not stale ones."""
    online = OnlinePredictions(EmaPredictor(), n_ticks=60)
    online.at(SeriesSoFar(NOISY[:40]))
    other = NOISY[:, ::-1].copy()
    for series, k in ((NOISY, 20), (other, 30)):
        spike, _ = online.at(SeriesSoFar(series[: k + 1]))
        np.testing.assert_array_equal(spike, EmaPredictor().predict_trace(series).spike_probability[k])


@pytest.mark.training
def test_online_lstm__fits_are_made_once_and_reused_from_disk(tmp_path: object) -> None:
    """A second episode and a second process (a fresh cache on the same folder) refit nothing."""
    predictor = LstmPredictor(epochs=3)
    whole = predictor.predict_trace(NOISY[:45], seed=0)
    for cache in (PredictionCache(tmp_path), PredictionCache(tmp_path)):
        for _episode in range(2):
            online = OnlinePredictions(predictor, n_ticks=45, cache=cache)
            for k in range(45):
                np.testing.assert_array_equal(online.at(SeriesSoFar(NOISY[: k + 1]))[1], whole.confidence[k])
        assert cache.stats.misses + cache.stats.disk_hits == 4  # fits at ticks 10, 20, 30, 40
    assert cache.stats.misses == 0
