"""The reference's per-node LSTM forecaster.

Per node, as the reference (``docs/reference.md``, "Per-node predictor"): an LSTM
(input 1, hidden 32, one layer) and a linear head on the last step read a window of the last
10 z-scored samples (std floored at 1e-6) and predict the next one. Each fit is a fresh model:
Adam (lr 0.01), MSE, 50 full-batch epochs on every window of the stored history (the last 500
samples). A node is refit when 10 samples arrived since its last fit (the first fit needs more
than 10 samples). The error estimate is the in-sample MAE of the last fit, in percentage points.

All nodes share the sample count, so they are refit at the same ticks and trained together:
one optimiser over every node's weights and one backward pass over the sum of the per-node
mean losses. Each node's weights get only their own loss's gradient and Adam is element-wise,
so this equals N independent trainings. The forward pass stays one fused
``nn.LSTM`` call per node over all its windows: a single weight-batched LSTM with a leading
node axis was measured 3-8x slower on CPU (unfused gate arithmetic dominates), and one LSTM
shared by all nodes would no longer be the reference's per-node model.

Online (:meth:`LstmPredictor.forecast_rows`), at tick k: every fit at a tick <= k is taken from
the cache or made from the ticks it needs (all <= k), and the current fit's block of forecasts
is computed as one batch of the same size as in :meth:`LstmPredictor.forecast`, the ticks after
k standing in as copies of tick k. Row k reads only ticks <= k, and a batch row's result does
not depend on the other rows' values, only on the batch's size (which changes the last bits):
so the online rows equal the whole trace's bit for bit.

Torch is imported here only, when a forecast is first computed. Each node's initial weights at
each fit come from its own ``torch.Generator`` seeded from (seed, tick, node), so a node's
forecasts do not depend on the rest of the fleet and the global torch RNG is never touched;
fits run on one thread for bit-reproducible results.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from agents.predictor.base import HISTORY_CAP, ArrayCache, Forecast, Predictor
from agents.predictor.cache import cache_key


class LstmPredictor(Predictor):
    """The reference LSTM (see the module docstring); all settings default to the reference's.

    Args:
        lookback: Window length (samples).
        hidden: LSTM hidden size.
        epochs: Full-batch epochs per fit.
        lr: Adam learning rate.
        refit_every: Refit after this many new samples.
        std_floor: Floor of the z-score standard deviation.
        history_cap: Samples kept per node.
    """

    name = "lstm"

    def __init__(
        self,
        lookback: int = 10,
        hidden: int = 32,
        epochs: int = 50,
        lr: float = 0.01,
        refit_every: int = 10,
        std_floor: float = 1e-6,
        history_cap: int = HISTORY_CAP,
    ) -> None:
        if lookback < 1 or hidden < 1 or epochs < 0 or refit_every < 1 or history_cap <= lookback:
            raise ValueError("need lookback, hidden, refit_every >= 1, epochs >= 0, history_cap > lookback")
        self.lookback, self.hidden, self.epochs, self.lr = lookback, hidden, epochs, float(lr)
        self.refit_every, self.std_floor, self.history_cap = (
            refit_every,
            float(std_floor),
            history_cap,
        )

    def params(self) -> dict[str, float | int | str]:
        """Every constructor setting."""
        return {
            "lookback": self.lookback,
            "hidden": self.hidden,
            "epochs": self.epochs,
            "lr": self.lr,
            "refit_every": self.refit_every,
            "std_floor": self.std_floor,
            "history_cap": self.history_cap,
        }

    def forecast(self, series: np.ndarray, seed: int) -> Forecast:
        """Walk the trace: refit at each refit tick, then forecast every tick until the next one.

        All nodes share the sample count, so they are refit at the same ticks: ``t = lookback,
        lookback + refit_every, ...`` (t + 1 samples seen).
        """
        import torch  # lazily: importing agents must stay torch-free

        n_ticks, n_nodes = series.shape
        predicted = np.zeros((n_ticks, n_nodes))
        mae = np.full((n_ticks, n_nodes), np.nan)
        ready = np.zeros((n_ticks, n_nodes), dtype=bool)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # bit-reproducible reductions, and a fair share of a busy machine
        try:
            fit_ticks = list(range(self.lookback, n_ticks, self.refit_every))
            for k, t in enumerate(fit_ticks):
                history = series[max(0, t + 1 - self.history_cap) : t + 1]  # (n, N), n > lookback
                model = self.fit(history, seed=(int(seed), t))
                end = fit_ticks[k + 1] if k + 1 < len(fit_ticks) else n_ticks
                predicted[t:end] = self.predict_range(model, series, t, end)
                mae[t:end] = model["mae_pct"]
                ready[t:end] = True
        finally:
            torch.set_num_threads(threads)
        return Forecast(predicted, mae, ready)

    def forecast_rows(
        self, seen: np.ndarray, before: Forecast, n_ticks: int, seed: int, cache: ArrayCache | None
    ) -> Forecast:
        """The rows after ``before`` up to tick k, from ``seen`` only (module docstring).

        Fits come from ``cache`` when it has them (keyed by the history fitted on, the seed and
        the tick), else are made and stored there.
        """
        import torch

        start, k = len(before), seen.shape[0] - 1
        predicted = np.zeros((k + 1 - start, seen.shape[1]))
        mae = np.full(predicted.shape, np.nan)
        ready = np.zeros(predicted.shape, dtype=bool)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # as in forecast(): the same reductions, so the same bits
        try:
            fit_ticks = list(range(self.lookback, n_ticks, self.refit_every))
            for t, end in zip(fit_ticks, [*fit_ticks[1:], n_ticks], strict=True):
                if t > k or end <= start:
                    continue  # this fit's block of rows is not asked for
                model = self._cached_fit(seen[max(0, t + 1 - self.history_cap) : t + 1], seed, t, cache)
                stand_ins = np.repeat(seen[-1:], max(0, end - k - 1), axis=0)  # ticks k+1..end-1
                block = self.predict_range(model, np.concatenate([seen, stand_ins]), t, end)  # (end - t, N)
                first, last = max(t, start), min(end, k + 1)  # the block's rows that are asked for
                predicted[first - start : last - start] = block[first - t : last - t]
                mae[first - start : last - start] = model["mae_pct"]
                ready[first - start : last - start] = True
        finally:
            torch.set_num_threads(threads)
        return Forecast(predicted, mae, ready)

    def _cached_fit(self, history: np.ndarray, seed: int, tick: int, cache: ArrayCache | None) -> dict[str, Any]:
        """:meth:`fit` of ``history`` with seed ``(seed, tick)``, through ``cache`` (as arrays on disk)."""
        if cache is None:
            return self.fit(history, seed=(int(seed), tick))
        return cache.arrays(
            cache_key(self, history, seed, kind="fit", tick=tick),
            lambda: fit_arrays(self.fit(history, seed=(int(seed), tick))),
            lambda arrays: fit_from_arrays(arrays, self.hidden),
        )

    # ------------------------------------------------------------------ fit and predict
    def fit(self, history: np.ndarray, seed: int | tuple[int, ...] = 0) -> dict[str, Any]:
        """Fit a fresh model per node on ``history`` ``(n, N)`` cpu % (n > lookback).

        Node i's initial weights come from its own generator seeded by ``(*seed, i)`` (via
        ``numpy.random.SeedSequence``), so a node's model does not depend on the other nodes.
        ``forecast`` passes ``(seed, tick)``.

        Returns:
            ``{"models": [(lstm, head)] * N, "mean": (N,), "std": (N,), "mae_pct": (N,)}``.
        """
        import torch

        n_nodes = history.shape[1]
        mean = history.mean(axis=0)
        std = np.maximum(history.std(axis=0), self.std_floor)
        z = torch.as_tensor((history - mean) / std, dtype=torch.float32)  # (n, N)
        x = z[:-1].unfold(0, self.lookback, 1).unsqueeze(-1)  # (B, N, L, 1), B = n - L windows
        y = z[self.lookback :]  # (B, N)
        seeds = np.atleast_1d(np.asarray(seed, dtype=np.int64)).tolist()
        models = [new_model(self.hidden, node_generator(seeds, i)) for i in range(n_nodes)]
        optimiser = torch.optim.Adam([p for m in models for p in m.parameters()], lr=self.lr)
        for _ in range(self.epochs):
            optimiser.zero_grad()
            loss = sum(((forward(model, x[:, i]) - y[:, i]) ** 2).mean() for i, model in enumerate(models))
            loss.backward()
            optimiser.step()
        with torch.no_grad():
            residual = np.array([(forward(m, x[:, i]) - y[:, i]).abs().mean().item() for i, m in enumerate(models)])
        return {"models": models, "mean": mean, "std": std, "mae_pct": residual * std}

    def predict_range(self, model: dict[str, Any], series: np.ndarray, start: int, end: int) -> np.ndarray:
        """``(end - start, N)`` forecasts at ticks start..end-1, each from its last L samples."""
        import torch

        windows = np.lib.stride_tricks.sliding_window_view(
            series[start - self.lookback + 1 : end], self.lookback, axis=0
        )  # (end - start, N, L)
        z = (windows - model["mean"][None, :, None]) / model["std"][None, :, None]
        x = torch.as_tensor(z, dtype=torch.float32).unsqueeze(-1)  # (B, N, L, 1)
        with torch.no_grad():
            out = np.stack(
                [forward(m, x[:, i]).double().numpy() for i, m in enumerate(model["models"])],
                axis=1,
            )
        forecasts: np.ndarray = np.clip(out * model["std"] + model["mean"], 0.0, 100.0)
        return forecasts


def node_generator(seed: list[int], node: int) -> Any:
    """A ``torch.Generator`` seeded from ``(*seed, node)``: one stream per node and fit."""
    import torch

    state = np.random.SeedSequence([*seed, node]).generate_state(2, dtype=np.uint32)
    return torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))


def new_model(hidden: int, generator: Any) -> Any:
    """A fresh ``(nn.LSTM(1, hidden), nn.Linear(hidden, 1))`` pair, initialised as PyTorch does.

    PyTorch draws every LSTM weight and bias, and the Linear's weight and bias (fan-in
    ``hidden``), from ``U(-1/sqrt(hidden), 1/sqrt(hidden))``; we draw them in that order from
    ``generator``.
    """
    import torch

    model = empty_model(hidden)
    bound = 1.0 / math.sqrt(hidden)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.uniform_(-bound, bound, generator=generator)
    return model


def empty_model(hidden: int) -> Any:
    """An uninitialised ``ModuleList([nn.LSTM(1, hidden), nn.Linear(hidden, 1)])``.

    Built on the meta device, so the global RNG is not consumed.
    """
    import torch

    lstm = torch.nn.LSTM(1, hidden, num_layers=1, batch_first=True, device="meta").to_empty(device="cpu")
    head = torch.nn.Linear(hidden, 1, device="meta").to_empty(device="cpu")
    return torch.nn.ModuleList([lstm, head])


def fit_arrays(fit: dict[str, Any]) -> dict[str, np.ndarray]:
    """A :meth:`LstmPredictor.fit` result as arrays, to store it.

    ``mean``, ``std``, ``mae_pct``: ``(N,)``; per parameter name, ``param.<name>``:
    ``(N, *shape)`` float32, node i's in row i.
    """
    arrays = {name: np.asarray(fit[name]) for name in ("mean", "std", "mae_pct")}
    per_node = [dict(model.named_parameters()) for model in fit["models"]]
    for name in per_node[0]:
        arrays[f"param.{name}"] = np.stack([params[name].detach().numpy() for params in per_node])
    return arrays


def fit_from_arrays(arrays: dict[str, np.ndarray], hidden: int) -> dict[str, Any]:
    """The fit that :func:`fit_arrays` stored: the same parameters, so the same forecasts."""
    import torch

    models = []
    for i in range(arrays["mean"].shape[0]):
        model = empty_model(hidden)
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                parameter.copy_(torch.from_numpy(np.array(arrays[f"param.{name}"][i])))
        models.append(model)
    return {"models": models, "mean": arrays["mean"], "std": arrays["std"], "mae_pct": arrays["mae_pct"]}


def forward(model: Any, x: Any) -> Any:
    """``x (B, L, 1)`` z-scored windows -> ``(B,)`` next-value forecasts of one node's model."""
    lstm, head = model
    out, _ = lstm(x)
    return head(out[:, -1]).squeeze(-1)
