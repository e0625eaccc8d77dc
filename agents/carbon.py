"""Carbon-aware heuristics: place where a job adds the least emissions, and wait for a cleaner hour.

Both read only the :class:`aco_env.ClusterView`: the nodes' power curves and each grid's carbon
intensity up to now (``view.energy``, :func:`~digital_twin.energy.model.known_energy_model`).

* ``least-carbon``: the valid node where the job adds the least emissions per second now, its
  marginal power there (:func:`marginal_watts`) times its grid's intensity now; among the nodes
  within :data:`EMISSIONS_TOLERANCE` of that least rate, the cheapest (so that a few percent of
  emissions from the shape of a power curve do not buy a node ten times the price; across grids
  the rates differ several-fold and the grid decides). A latency-critical job goes to a spot
  node only when no on-demand node is valid (a QoS violation otherwise; the reference's router
  keeps such jobs off spot too).
* ``carbon-shift``: ``least-carbon``'s node, unless the job may wait and the forecast says a
  cleaner hour comes before it must start: then it defers ("let's wait awhile").

``carbon-shift``'s forecast is the same hour yesterday (seasonal persistence), from the known
past of each grid (a day before the episode is known); its window is the time the job may still
wait: until its TTL runs out, its deadline (a latency-critical job never waits), or the horizon
less its declared duration, at most :data:`MAX_SHIFT_S`. It defers when the cleanest forecast
hour of the window, on any node the job could run on, beats now's intensity of the chosen node
by more than :data:`SHIFT_MARGIN`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from aco_env import ClusterView
from agents.base import register_agent
from agents.view_agent import ViewAgent
from digital_twin import JobSpec, NodeSpec
from digital_twin.energy.model import NodePower

EMISSIONS_TOLERANCE = 0.10
"""``least-carbon`` treats emission rates within this fraction of the least as equal, and takes the cheapest."""
MAX_SHIFT_S = 12 * 3600.0
"""The longest a job is held back for a cleaner hour (the forecast is the same hour yesterday)."""
SHIFT_MARGIN = 0.15
"""Defer only when the forecast intensity is at least this fraction below now's."""
_DAY_S = 86_400.0


def marginal_watts(view: ClusterView, node: int, job: JobSpec) -> float:
    """The power ``job`` would add to ``node`` now, W: its host curve's rise plus busy-minus-idle per GPU.

    The node's demand is the background now plus our jobs' requests (capped at its cores), as
    the twin charges (:mod:`digital_twin.energy.model`).
    """
    power = view.energy.nodes[node].curve
    cores = view.fleet[node].cpu_cores
    used = cores - float(view.free_cpu_cores[node]) + cores * float(view.background_cpu_pct[node]) / 100.0
    rise = power.watts_at((used + job.cpu_cores) / cores) - power.watts_at(used / cores)
    gpu = view.energy.nodes[node].gpu
    return rise + (job.gpu_count * (gpu.busy_w - gpu.idle_w) if gpu is not None else 0.0)


def intensity_now(view: ClusterView, node: int) -> float:
    """The carbon intensity of ``node``'s grid now, g/kWh."""
    return view.energy.carbon[view.energy.nodes[node].region].at(view.time_s)


@dataclass(frozen=True)
class _FleetPower:
    """The per-node constants of :func:`emission_rates` for one energy model and fleet.

    Attributes:
        nodes: The energy model's nodes they were read from (a view's model is rebuilt as the
            carbon series becomes known, its nodes are kept).
        fleet: The fleet they were read from.
        cores: ``(N,)`` float64 cpu cores.
        gpu_rise_w: ``(N,)`` float64 busy-minus-idle watts per GPU (0 for nodes without GPUs).
        curve_of: ``(N,)`` index into ``curves`` (nodes with equal curves share one).
        curves: ``(points_u, watts)`` of each distinct power curve.
        region_of: ``(N,)`` index into ``regions``.
        regions: The region names, in first-use order.
    """

    nodes: tuple[NodePower, ...]
    fleet: tuple[NodeSpec, ...]
    cores: np.ndarray
    gpu_rise_w: np.ndarray
    curve_of: np.ndarray
    curves: tuple[tuple[np.ndarray, np.ndarray], ...]
    region_of: np.ndarray
    regions: tuple[str, ...]


_FLEET_POWER: dict[int, _FleetPower] = {}
"""``id(nodes)`` -> the constants (checked by identity on use; the cache is cleared past 16 entries)."""


def _fleet_power(nodes: tuple[NodePower, ...], fleet: tuple[NodeSpec, ...]) -> _FleetPower:
    """The constants of an energy model's ``nodes`` over ``fleet``, built once per pair."""
    cached = _FLEET_POWER.get(id(nodes))
    if cached is not None and cached.nodes is nodes and cached.fleet is fleet:
        return cached
    curve_keys: dict[tuple[bytes, bytes], int] = {}
    curves: list[tuple[np.ndarray, np.ndarray]] = []
    regions: dict[str, int] = {}
    curve_of, region_of, rise = [], [], []
    for node in nodes:
        key = (node.curve.points_u.tobytes(), node.curve.watts.tobytes())
        if key not in curve_keys:
            curve_keys[key] = len(curves)
            curves.append((node.curve.points_u, node.curve.watts))
        curve_of.append(curve_keys[key])
        region_of.append(regions.setdefault(node.region, len(regions)))
        rise.append(node.gpu.busy_w - node.gpu.idle_w if node.gpu is not None else 0.0)
    built = _FleetPower(
        nodes, fleet, np.array([n.cpu_cores for n in fleet], dtype=np.float64), np.array(rise, dtype=np.float64),
        np.array(curve_of, dtype=np.intp), tuple(curves), np.array(region_of, dtype=np.intp), tuple(regions),
    )
    if len(_FLEET_POWER) >= 16:
        _FLEET_POWER.clear()
    _FLEET_POWER[id(nodes)] = built
    return built


def emission_rates(view: ClusterView, nodes: np.ndarray, job: JobSpec) -> np.ndarray:
    """``(len(nodes),)`` float64 W x g/kWh: ``marginal_watts(view, i, job) * intensity_now(view, i)`` for each ``i``.

    The same floating-point operations as the scalar functions, done on arrays: each value is
    equal to the scalar one bit for bit. ``nodes`` is an integer array of node indices (may be empty).
    """
    nodes = np.asarray(nodes, dtype=np.intp)
    power = _fleet_power(view.energy.nodes, view.fleet)
    cores = power.cores[nodes]
    free = np.asarray(view.free_cpu_cores, dtype=np.float64)[nodes]
    background = np.asarray(view.background_cpu_pct, dtype=np.float64)[nodes]
    used = cores - free + cores * background / 100.0
    before, after = used / cores, (used + job.cpu_cores) / cores
    rise = np.empty(len(nodes), dtype=np.float64)
    curve_of = power.curve_of[nodes]
    for k, (points_u, watts) in enumerate(power.curves):
        on = curve_of == k
        if on.any():
            rise[on] = np.interp(np.clip(after[on], 0.0, 1.0), points_u, watts) - np.interp(
                np.clip(before[on], 0.0, 1.0), points_u, watts
            )
    rise = rise + job.gpu_count * power.gpu_rise_w[nodes]
    intensity = np.array([view.energy.carbon[r].at(view.time_s) for r in power.regions], dtype=np.float64)
    return rise * intensity[power.region_of[nodes]]


class LeastCarbonAgent(ViewAgent):
    """The valid node of least marginal emissions rate now (module docstring); ties to the cheaper node."""

    name = "least-carbon"

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        job = view.job
        assert job is not None
        nodes = [int(i) for i in valid]
        if job.workload == "latency-critical":
            nodes = [i for i in nodes if not self.fleet[i].is_spot] or nodes
        rates = dict(zip(nodes, emission_rates(view, np.array(nodes, dtype=np.intp), job).tolist(), strict=True))
        least = min(rates.values())
        near = [i for i in nodes if rates[i] <= least * (1.0 + EMISSIONS_TOLERANCE)]
        return min(near, key=lambda i: (self.fleet[i].price_per_hour_usd, rates[i], i))


class CarbonShiftAgent(LeastCarbonAgent):
    """``least-carbon``, deferring a job that may wait when a cleaner hour is forecast (module docstring)."""

    name = "carbon-shift"

    def __init__(self, env: gym.Env[Any, Any], margin: float = SHIFT_MARGIN, max_shift_s: float = MAX_SHIFT_S) -> None:
        super().__init__(env)
        self.margin = margin
        self.max_shift_s = max_shift_s

    def _choose(self, view: ClusterView, valid: np.ndarray) -> int | None:
        node = super()._choose(view, valid)
        assert node is not None and view.job is not None
        window = self._slack_s(view, view.job)
        if window <= 0.0:
            return node
        now = intensity_now(view, node)
        regions = {view.energy.nodes[i].region for i in range(len(view.fleet)) if view.up[i]}
        best = min(self._forecast_min(view, region, window) for region in regions)
        return None if best < (1.0 - self.margin) * now else node

    def _slack_s(self, view: ClusterView, job: JobSpec) -> float:
        """How long ``job`` may still wait, seconds (0: place it now)."""
        if job.workload == "latency-critical":
            return 0.0
        settings = view.settings
        limits = [self.max_shift_s, settings.horizon_s - view.time_s - job.duration_s]
        if settings.queue_ttl_s is not None:
            limits.append(job.arrival_s + settings.queue_ttl_s - view.time_s - 60.0)  # a minute before its TTL
        if job.deadline_s is not None:
            limits.append(job.deadline_s - view.time_s)
        return max(0.0, min(limits))

    @staticmethod
    def _forecast_min(view: ClusterView, region: str, window_s: float) -> float:
        """The least intensity forecast over ``(now, now + window]``: the same hours yesterday."""
        series = view.energy.carbon[region]
        hours = np.arange(view.time_s + 3600.0, view.time_s + window_s + 1.0, 3600.0)
        if hours.size == 0:
            return float("inf")
        return float(np.min(series.at(hours - _DAY_S)))


for _cls in (LeastCarbonAgent, CarbonShiftAgent):
    register_agent(_cls.name, _cls)
