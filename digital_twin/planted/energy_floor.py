"""The least energy and carbon a job's run can be charged per nominal second: the certificate's energy share.

The twin charges our jobs, per node, the host power they add over the background,
``curve(u) - curve(u_bg)`` with ``u = min(1, (bg + A) / C)`` (``A`` our allocated cores, ``C``
the node's), plus ``busy - idle`` watts per GPU they hold (:mod:`digital_twin.energy.model`);
energy is that power over time, carbon that power times the region's intensity. The
``energy`` and ``carbon`` weights turn both into USD at ``v(t) = (e + c x I(t) / 1000) /
3.6e6`` USD per joule (``e`` USD/kWh, ``c`` USD/kg, ``I`` gCO2eq/kWh).

**The floor.** On node ``i`` let ``m`` be the least slope (W per unit utilisation) of the
curve's segments that meet ``[u_lo, 1]`` (``u_lo`` the least background over the episode), so
``curve(u) - curve(u_bg) >= m x (u - u_bg) = m x min(A, C - bg) / C``; let ``s = m / C x
v_min`` (USD per core-second; ``v_min`` at the region's least intensity over the horizon) and
``g = (busy - idle) x v_min`` (USD per GPU-second). Sharing that host bound among the running
jobs by their cores, job ``j`` (``r`` cores, ``k`` GPUs, compute rate ``q`` USD/s on the node)
pays, per second of nominal work, at least ``q + s x r x h + g x k`` where

* ``h = 1`` when the node can never be over-subscribed (``bg_max`` plus every core that may
  run there is at most ``C``), since then ``min(A, C - bg) = A``;
* ``h = 1`` under processor sharing when ``q x (C - bg_max) >= s_max x r x bg_max`` (``s_max``
  at the greatest intensity): over-subscribed (demand ``x = bg + A > C``), the job progresses
  at ``C / x`` and pays, per nominal second, ``q x / C + s r (C - bg) x / (C (x - bg))``, a
  convex function of ``x`` equal to ``q + s r`` at ``x = C`` whose slope there is ``>= 0``
  exactly under that condition: over-subscribing never lowers a nominal second's price;
* else ``h = (C - bg_max) / C`` (``A <= C``, so ``min(A, C - bg) >= A (C - bg) / C``): valid
  under any physics (contention only lengthens runs, and a longer run pays more).

A run that completes does ``d`` nominal seconds of work, so it pays at least ``d`` times that.
The floor is *exact* for a run that never over-subscribes its node, on a curve with one slope
over ``[u_lo, 1]``, under a constant intensity, with ``h = 1``: :func:`inexact_reason` says
which of these a planted schedule misses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from digital_twin.energy.carbon_intensity import J_PER_KWH, CarbonIntensity
from digital_twin.energy.model import EnergyModel
from digital_twin.energy.power_curves import PowerCurve
from digital_twin.episode_settings import EpisodeSettings
from digital_twin.fleet import NodeSpec
from digital_twin.sim.constants import TwinConstants
from digital_twin.spec import TwinSpec

_G_PER_KG = 1000.0


@dataclass(frozen=True)
class EnergyFloor:
    """Per node, the energy-and-carbon USD the floor charges, and what decides ``h``.

    Attributes:
        usd_per_core_s: ``(N,)`` ``s``: least USD per core-second of added host power.
        usd_per_core_s_max: ``(N,)`` ``s_max``: the same at the region's greatest intensity.
        usd_per_gpu_s: ``(N,)`` ``g``: least USD per busy GPU-second.
        cores: ``(N,)`` ``C``, cores.
        background_max: ``(N,)`` ``bg_max``, the most background cores over the episode.
        never_full: ``(N,)`` bool: the background peak plus every core that may run there fits.
        contention: Whether processor sharing slows over-subscribed nodes.
        one_slope: ``(N,)`` bool: the curve has one slope over ``[u_lo, 1]``.
        constant_intensity: ``(N,)`` bool: the region's intensity is constant over the horizon.
    """

    usd_per_core_s: np.ndarray
    usd_per_core_s_max: np.ndarray
    usd_per_gpu_s: np.ndarray
    cores: np.ndarray
    background_max: np.ndarray
    never_full: np.ndarray
    contention: bool
    one_slope: np.ndarray
    constant_intensity: np.ndarray

    @property
    def charged(self) -> bool:
        """Whether any node is charged at all (an energy or carbon weight, and a positive slope)."""
        return bool(self.usd_per_core_s.any() or self.usd_per_gpu_s.any() or self.usd_per_core_s_max.any())

    def share(self, rate_usd_s: np.ndarray, cores: float, nodes: np.ndarray) -> np.ndarray:
        """``(k,)`` ``h`` of a job of ``cores`` cores on ``nodes`` (``(k,)``), at compute rates ``rate_usd_s``."""
        room = self.cores[nodes] - self.background_max[nodes]
        busy = self.background_max[nodes]
        priced_out = rate_usd_s * room >= self.usd_per_core_s_max[nodes] * cores * busy
        whole = self.never_full[nodes] | (self.contention & priced_out & (room > 0))
        return np.where(whole, 1.0, np.maximum(room, 0.0) / self.cores[nodes])

    def usd_per_wall_s(self, cores: float, gpus: int, nodes: np.ndarray) -> np.ndarray:
        """``(k,)`` least energy-and-carbon USD per second a job of ``cores`` and ``gpus`` runs on ``nodes``.

        Per second of its run, not of its work: ``h = (C - bg_max) / C`` whatever the physics (an
        over-subscribed node adds no more power, however slowly the job progresses).
        """
        room = np.maximum(self.cores[nodes] - self.background_max[nodes], 0.0) / self.cores[nodes]
        return self.usd_per_core_s[nodes] * cores * room + self.usd_per_gpu_s[nodes] * gpus

    def usd_per_s(self, rate_usd_s: np.ndarray, cores: float, gpus: int, nodes: np.ndarray) -> np.ndarray:
        """``(k,)`` least energy-and-carbon USD per nominal second of a job on ``nodes``."""
        host = self.usd_per_core_s[nodes] * cores * self.share(rate_usd_s, cores, nodes)
        return host + self.usd_per_gpu_s[nodes] * gpus


def energy_floor(spec: TwinSpec, c: TwinConstants) -> EnergyFloor:
    """The floor of ``spec``'s nodes (``c``: its constants, whose background and candidates it read)."""
    n = c.n_nodes
    cores = np.asarray(c.cpu_m, dtype=np.float64) / 1000.0
    background = c.background_cpu_m.table() / 1000.0  # (T, N) cores
    rates = node_rates(spec, cores, background)
    may_run = np.zeros(n)
    for j, nodes in enumerate(c.candidates):
        may_run[list(nodes)] += c.req_cpu_m[j] / 1000.0
    bg_hi = background.max(axis=0)
    return EnergyFloor(
        usd_per_core_s=rates.usd_per_core_s,
        usd_per_core_s_max=rates.usd_per_core_s_max,
        usd_per_gpu_s=rates.usd_per_gpu_s,
        cores=cores,
        background_max=bg_hi,
        never_full=bg_hi + np.minimum(may_run, cores) <= cores,
        contention=spec.settings.contention,
        one_slope=rates.one_slope,
        constant_intensity=rates.constant_intensity,
    )


@dataclass(frozen=True)
class NodeRates:
    """Per node, ``(N,)`` each: ``s``, ``s_max``, ``g`` (USD per core- or GPU-second) and the exactness flags."""

    usd_per_core_s: np.ndarray
    usd_per_core_s_max: np.ndarray
    usd_per_gpu_s: np.ndarray
    one_slope: np.ndarray
    constant_intensity: np.ndarray


def node_rates(spec: TwinSpec | _Posed, cores: np.ndarray, background: np.ndarray) -> NodeRates:
    """The floor's per-node rates of ``spec``'s nodes, ``cores`` ``(N,)`` with ``background`` ``(T, N)`` cores."""
    weights = spec.settings.weights
    model = spec.energy_model
    n = len(cores)
    bg_lo = background.min(axis=0)
    slope, v_min, v_max, gpu_w = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    one_slope, constant = np.ones(n, dtype=bool), np.ones(n, dtype=bool)
    for i, power in enumerate(model.nodes):
        slope[i], one_slope[i] = _least_slope(power.curve, min(bg_lo[i] / cores[i], 1.0))
        lo, hi = _intensity_range(model.carbon[power.region], float(spec.settings.horizon_s))
        v_min[i] = (weights.energy_usd_per_kwh + weights.carbon_usd_per_kg * lo / _G_PER_KG) / J_PER_KWH
        v_max[i] = (weights.energy_usd_per_kwh + weights.carbon_usd_per_kg * hi / _G_PER_KG) / J_PER_KWH
        constant[i] = lo == hi
        if power.gpu is not None and spec.fleet[i].gpu_count:
            gpu_w[i] = power.gpu.busy_w - power.gpu.idle_w
    return NodeRates(slope / cores * v_min, slope / cores * v_max, gpu_w * v_min, one_slope, constant)


@dataclass(frozen=True)
class _Posed:
    """What :func:`node_rates` reads of a spec, before the jobs exist (a planted episode being cut)."""

    fleet: tuple[NodeSpec, ...]
    settings: EpisodeSettings
    energy_model: EnergyModel


def fleet_rates(
    fleet: tuple[NodeSpec, ...], settings: EpisodeSettings, energy: EnergyModel, background_pct: np.ndarray
) -> NodeRates:
    """:func:`node_rates` of a fleet before any job exists (``background_pct`` ``(T, N)``, % of each node's cores)."""
    cores = np.array([node.cpu_cores for node in fleet], dtype=np.float64)
    return node_rates(_Posed(fleet, settings, energy), cores, background_pct / 100.0 * cores)


def inexact_reason(spec: TwinSpec, floor: EnergyFloor, job: int, node: int, cores: float) -> str | None:
    """Why the floor may be below what running ``job`` on ``node`` as planted costs (``None``: it is exact).

    A planted run never over-subscribes its node and starts at its arrival, so the floor is its
    energy-and-carbon cost when the curve has one slope over the node's range, the intensity is
    constant and ``h = 1``.
    """
    if not floor.charged:
        return None
    node_id = spec.fleet[node].node_id
    weights = spec.settings.weights
    if floor.usd_per_core_s[node] > 0 and not floor.one_slope[node]:
        return f"node {node_id!r}'s power curve is not linear from its least background to full load"
    if weights.carbon_usd_per_kg and not floor.constant_intensity[node]:
        return f"node {node_id!r}'s carbon intensity varies over the horizon"
    rate = np.array([spec.fleet[node].price_per_hour_usd / 3600.0 * _share(spec, job, node)])
    if floor.usd_per_core_s[node] > 0 and floor.share(rate, cores, np.array([node]))[0] < 1.0:
        return (
            f"node {node_id!r} may be over-subscribed, where a job's added power is below the floor "
            "(processor-sharing interference and a price per core above the energy's make it exact)"
        )
    del job
    return None


def _share(spec: TwinSpec, job: int, node: int) -> float:
    """Job ``job``'s share of ``node`` under the prorated cost model (GPU share for a GPU job)."""
    request, fleet_node = spec.jobs[job], spec.fleet[node]
    if request.gpu_count:
        return request.gpu_count / fleet_node.gpu_count
    return request.cpu_cores / fleet_node.cpu_cores


def _least_slope(curve: PowerCurve, u_lo: float) -> tuple[float, bool]:
    """The least slope of ``curve``'s segments meeting ``[u_lo, 1]`` and whether they all share it.

    W per unit utilisation, >= 0; ``u_lo >= 1`` (a saturated node): slope 0.
    """
    if u_lo >= 1.0:
        return 0.0, True
    points, watts = np.asarray(curve.points_u), np.asarray(curve.watts)
    slopes = np.diff(watts) / np.diff(points)
    meets = points[1:] > u_lo
    used = slopes[meets]
    least = float(max(used.min(), 0.0))
    return least, bool(np.allclose(used, used[0], rtol=1e-12, atol=0.0))


def _intensity_range(series: CarbonIntensity, horizon_s: float) -> tuple[float, float]:
    """The least and greatest intensity (g/kWh) ``series`` takes over ``[0, horizon_s)``."""
    if series.n_ticks == 1:
        value = float(series.g_per_kwh[0])
        return value, value
    first = int(np.floor((0.0 - series.start_s) / series.tick_s))
    last = int(np.ceil((horizon_s - series.start_s) / series.tick_s))
    count = min(last - first + 1, series.n_ticks + 1)
    times = np.maximum(series.start_s + (first + np.arange(count)) * series.tick_s, 0.0)
    values = np.asarray(series.at(times[times < horizon_s]), dtype=np.float64)
    return float(values.min()), float(values.max())
