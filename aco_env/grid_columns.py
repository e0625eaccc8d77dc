"""The observation's grid columns: what each node's electricity emits and costs, as known now.

Three columns of ``obs["nodes"]`` (:data:`GRID_FEATURES`), per node ``i`` in region ``r`` at
time ``t`` (seconds), from the episode's energy model
(:attr:`digital_twin.TwinSpec.energy_model`) and the objective's weights:

* ``carbon_now``: ``r``'s carbon intensity at ``t`` (g/kWh) / 1000, clipped at
  :data:`CARBON_CAP` (the value of the series' tick holding ``t``: published, so known).
* ``carbon_forecast_min``: the lowest intensity ``r`` had over ``[t - 24 h, t - 12 h]`` (the
  ticks meeting it) / 1000, clipped the same: yesterday's lowest over the coming 12 hours, the
  persistence forecast of how clean the grid gets if a job waits (at ``t >= 0`` that window is
  inside the day before time 0 an online agent knows,
  :data:`digital_twin.energy.model.KNOWN_HISTORY_S`).
* ``energy_cost_rel``: what an hour of the node's full dynamic power costs at ``t``, relative to
  the fleet's highest price per hour (``price_rel``'s scale), clipped at
  :data:`ENERGY_COST_CAP`: ``(curve(1) - curve(0) + gpus x (busy - idle)) / 1000 x
  (energy_usd_per_kwh + carbon_usd_per_kg x intensity / 1000) / max price``. The power our
  jobs are charged (the marginal power over the background's) is at most that, per node. 0 on
  every scenario that weighs neither energy nor carbon.

The columns read the series only at and before ``t``: what an online agent may know. They change
only when ``t``, ``t - 12 h`` or ``t - 24 h`` crosses a tick of some region's series, so
:meth:`GridColumns.at` recomputes them then and otherwise returns the held table (one
comparison on the env's hot path).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from digital_twin import NodeSpec
from digital_twin.energy.carbon_intensity import CarbonIntensity
from digital_twin.energy.model import EnergyModel
from digital_twin.objective import ObjectiveWeights

GRID_FEATURES: tuple[str, ...] = ("carbon_now", "carbon_forecast_min", "energy_cost_rel")
"""The grid columns of ``obs["nodes"]``, in order."""
CARBON_CAP = 2.0
"""Intensities are shown in kg/kWh, clipped here (2,000 g/kWh, above any grid's hourly average)."""
ENERGY_COST_CAP = 10.0
"""``energy_cost_rel`` is clipped here (an hour of energy at ten times the dearest node's price)."""
FORECAST_WINDOW_S = (86_400.0, 43_200.0)
"""``carbon_forecast_min`` looks at ``[t - 24 h, t - 12 h]``: how far back it starts and ends."""
_LOOKBACKS_S = (0.0, *FORECAST_WINDOW_S)  # the columns change when t minus one of these crosses a tick


class GridColumns:
    """The grid columns of one fleet under one energy model and objective, as a held ``(N, 3)`` table.

    Args:
        model: The nodes' power curves, GPUs and regions, and each region's intensity series.
        fleet: The nodes, in action order (their GPU counts and prices).
        weights: The objective's weights (``energy_usd_per_kwh``, ``carbon_usd_per_kg``).
    """

    def __init__(self, model: EnergyModel, fleet: Sequence[NodeSpec], weights: ObjectiveWeights) -> None:
        regions = model.regions
        self._series: list[CarbonIntensity] = [model.carbon[name] for name in regions]
        self._region_of = np.array([regions.index(node.region) for node in model.nodes], dtype=np.intp)
        dynamic_w = np.array(
            [
                power.curve.watts[-1] - power.curve.watts[0]
                + (node.gpu_count * (power.gpu.busy_w - power.gpu.idle_w) if power.gpu is not None else 0.0)
                for power, node in zip(model.nodes, fleet, strict=True)
            ]
        )
        max_price = max(node.price_per_hour_usd for node in fleet) or 1.0
        self._energy_usd_per_kwh = weights.energy_usd_per_kwh
        self._carbon_usd_per_kg = weights.carbon_usd_per_kg
        self._kw_rel = dynamic_w / 1000.0 / max_price  # (N,) kW per USD/h of the dearest node
        self._valid_from_s = math.inf  # the held table holds on [valid_from, valid_until)
        self._valid_until_s = -math.inf
        self._table = np.zeros((len(fleet), len(GRID_FEATURES)))
        self.varies = any(series.n_ticks > 1 for series in self._series)
        """Whether the columns can change over time (some region's intensity is not a constant)."""

    def at(self, t_s: float) -> np.ndarray:
        """``(N, 3)`` float64, the columns at time ``t_s`` (the held table: do not modify it)."""
        if not self._valid_from_s <= t_s < self._valid_until_s:
            self._refresh(t_s)
        return self._table

    def _refresh(self, t_s: float) -> None:
        now = np.array([series.at(t_s) for series in self._series]) / 1000.0  # (R,) kg/kWh
        since, until = (t_s - back for back in FORECAST_WINDOW_S)
        low = np.array([_lowest(series, since, until) for series in self._series])  # (R,) g/kWh
        region_now = now[self._region_of]
        usd_per_kwh = self._energy_usd_per_kwh + self._carbon_usd_per_kg * region_now
        self._table = np.stack(
            [
                np.minimum(region_now, CARBON_CAP),
                np.minimum(low[self._region_of] / 1000.0, CARBON_CAP),
                np.minimum(self._kw_rel * usd_per_kwh, ENERGY_COST_CAP),
            ],
            axis=1,
        )
        self._valid_from_s, self._valid_until_s = _unchanged_around(self._series, t_s)


def _lowest(series: CarbonIntensity, t0_s: float, t1_s: float) -> float:
    """The least g/kWh of the ticks of ``series`` meeting ``[t0_s, t1_s]``."""
    first = math.floor((t0_s - series.start_s) / series.tick_s)
    last = math.floor((t1_s - series.start_s) / series.tick_s)
    if series.n_ticks == 1 or last - first + 1 >= series.n_ticks:
        return float(series.g_per_kwh.min())
    return float(series.at(series.start_s + np.arange(first, last + 1) * series.tick_s).min())


def _unchanged_around(series: Sequence[CarbonIntensity], t_s: float) -> tuple[float, float]:
    """The interval around ``t_s`` on which no series' tick is crossed by ``t``, ``t - 12 h`` or ``t - 24 h``."""
    since, until = -math.inf, math.inf
    for one in series:
        if one.n_ticks == 1:
            continue
        for back in _LOOKBACKS_S:
            k = math.floor((t_s - back - one.start_s) / one.tick_s)
            since = max(since, one.start_s + k * one.tick_s + back)
            until = min(until, one.start_s + (k + 1) * one.tick_s + back)
    return since, until
