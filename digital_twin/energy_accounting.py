"""Energy and carbon, exactly: each node's power is constant between events, so energy is a sum.

The model (what a node draws, what our jobs are charged, which grid each node is on) is
:mod:`digital_twin.energy.model`'s; this module is the twin's side of it, on its hot path. A
node's power depends on its background cpu (the current telemetry tick), our jobs' cpu and GPUs
on it, and whether it is up; so it changes only at a telemetry tick (every node), a start or a
release (one node), an interruption or a recovery (one node). Each of those handlers calls
:func:`refresh_node` (or :func:`refresh_all`), which keeps the node's power and attributed power
and their per-region sums; the event loop calls :func:`accrue` as the clock advances from ``t0``
to ``t1``, adding power x (t1 - t0) joules and, per region, power x the exact integral of its
carbon intensity over ``[t0, t1]`` (a constant series: intensity x (t1 - t0)). No time stepping:
between two calls nothing the power depends on changes.

Units: watts, joules, grams, gCO2eq/kWh; the objective's counts are kWh and kg
(:data:`~digital_twin.objective.PENALTIES`: ``energy``, ``carbon``).
"""

from __future__ import annotations

import math
from bisect import bisect_right

from digital_twin.constants import TwinConstants
from digital_twin.energy.carbon_intensity import J_PER_KWH
from digital_twin.energy_constants import EnergyConstants
from digital_twin.state import RUNNING, TwinState


def curve_watts(points: list[float], watts: list[float], u: float, steps: int = 0) -> float:
    """The curve's watts at utilisation ``u`` (clipped to [0, 1]), linear between its points.

    ``steps``: n when the points are ``k / n`` (the segment is then ``floor(u n)``), else 0.
    """
    if u <= 0.0:
        return watts[0]
    if u >= 1.0:
        return watts[-1]
    if steps:
        k = int(u * steps)
        if k >= steps:
            k = steps - 1
    else:
        k = bisect_right(points, u) - 1
    u0 = points[k]
    w0 = watts[k]
    return w0 + (watts[k + 1] - w0) * (u - u0) / (points[k + 1] - u0)


def refresh_node(s: TwinState, c: TwinConstants, e: EnergyConstants, i: int, k: int) -> None:
    """Recompute node ``i``'s power and attributed power now (telemetry tick ``k``), and its region's sums.

    Up: ``curve(u) + gpus x idle + busy x (busy - idle)``, attributed ``curve(u) -
    curve(u_background) + busy x (busy - idle)``; down: 0 and 0. ``curve(u_background)`` is the
    node's ``node_base_w``, set at each tick (:func:`refresh_all`) and recovery.
    """
    if s.up[i]:
        capacity = c.cpu_m[i]
        used = capacity - s.free_cpu_m[i]
        base = s.node_base_w[i]
        busy = c.gpus[i] - s.free_gpus[i]
        if used or busy:
            host = base
            if used:  # (a GPU job may round to 0 millicores)
                u = (c.background_cpu_m[k][i] + used) / capacity
                host = curve_watts(e.curve_u[i], e.curve_w[i], u, e.curve_steps[i])
            ours_gpu = busy * e.gpu_delta_w[i]
            attributed = host - base + ours_gpu
            power = host + e.gpu_idle_node_w[i] + ours_gpu
        else:  # none of our jobs runs on it
            attributed = 0.0
            power = base + e.gpu_idle_node_w[i]
    else:
        power = attributed = 0.0
    r = e.region_of[i]
    s.region_power_w[r] += power - s.node_power_w[i]
    s.region_attributed_w[r] += attributed - s.node_attributed_w[i]
    s.node_power_w[i] = power
    s.node_attributed_w[i] = attributed
    if not s.status_counts[RUNNING]:  # nothing of ours runs: no float residue in the sums
        for region in range(e.n_regions):
            s.region_attributed_w[region] = 0.0


def refresh_base(s: TwinState, c: TwinConstants, e: EnergyConstants, i: int, k: int) -> None:
    """Set node ``i``'s ``node_base_w`` (its host's power on tick ``k``'s background alone); :func:`refresh_node`."""
    s.node_base_w[i] = curve_watts(e.curve_u[i], e.curve_w[i], c.background_cpu_m[k][i] / c.cpu_m[i], e.curve_steps[i])
    refresh_node(s, c, e, i, k)


def refresh_all(s: TwinState, c: TwinConstants, e: EnergyConstants, k: int) -> None:
    """:func:`refresh_base` for every node (a telemetry tick changes every node's background)."""
    for i in range(c.n_nodes):
        refresh_base(s, c, e, i, k)


def carbon_integral(e: EnergyConstants, r: int, t0: float, t1: float) -> float:
    """The integral of region ``r``'s intensity over ``[t0, t1]``, (g/kWh) s, exact (the series wraps)."""
    constant = e.carbon_constant[r]
    if constant >= 0.0:
        return constant * (t1 - t0)
    return _cumulative(e, r, t1) - _cumulative(e, r, t0)


def _cumulative(e: EnergyConstants, r: int, t: float) -> float:
    """The integral of region ``r``'s intensity from its series' start to ``t``, (g/kWh) s."""
    values, before, tick_s = e.carbon_values[r], e.carbon_before[r], e.carbon_tick_s[r]
    n = len(values)
    period = n * tick_s
    x = t - e.carbon_start_s[r]
    periods = math.floor(x / period)
    into = x - periods * period
    k = min(int(into // tick_s), n - 1)
    return periods * (before[n - 1] + values[n - 1] * tick_s) + before[k] + values[k] * (into - k * tick_s)


def accrue(s: TwinState, e: EnergyConstants, t0: float, t1: float) -> None:
    """Add the energy and emissions of ``[t0, t1]`` at the nodes' current power (nothing changes in between).

    Updates the node energy and emissions and our jobs' (attributed) ones; the objective's
    ``energy`` (kWh) and ``carbon`` (kg) counts are read from the latter
    (:meth:`~digital_twin.state.TwinState.penalty_counts`).
    """
    dt = t1 - t0
    region_power, region_attributed, constant = s.region_power_w, s.region_attributed_w, e.carbon_constant
    for r in range(e.n_regions):
        power = region_power[r]
        if power == 0.0:
            continue
        attributed = region_attributed[r]
        intensity_s = constant[r] * dt if constant[r] >= 0.0 else carbon_integral(e, r, t0, t1)
        s.node_energy_j += power * dt
        s.node_carbon_g += power * intensity_s / J_PER_KWH
        if attributed != 0.0:
            s.attributed_energy_j += attributed * dt
            s.attributed_carbon_g += attributed * intensity_s / J_PER_KWH
