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

from digital_twin.energy.carbon_intensity import J_PER_KWH
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.features.energy_constants import EnergyConstants
from digital_twin.sim.state import RUNNING, TwinState


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


def node_power(s: TwinState, c: TwinConstants, e: EnergyConstants, i: int, k: int) -> tuple[float, float]:
    """Node ``i``'s ``(power, attributed power)`` now, W, under telemetry tick ``k``.

    Up: ``curve(u) + gpus x idle + busy x (busy - idle)``, attributed ``curve(u) -
    curve(u_background) + busy x (busy - idle)``; down: ``(0, 0)``.
    """
    if not s.up[i]:
        return 0.0, 0.0
    capacity = c.cpu_m[i]
    background = c.background_cpu_m[k][i]
    points, watts, steps = e.curve_u[i], e.curve_w[i], e.curve_steps[i]
    base = curve_watts(points, watts, background / capacity, steps)
    used = capacity - s.free_cpu_m[i]
    busy = c.gpus[i] - s.free_gpus[i]
    if not used and not busy:  # none of our jobs runs on it
        return base + e.gpu_idle_node_w[i], 0.0
    host = curve_watts(points, watts, (background + used) / capacity, steps) if used else base
    ours_gpu = busy * e.gpu_delta_w[i]  # (a GPU job may round to 0 millicores: its GPUs still count)
    return host + e.gpu_idle_node_w[i] + ours_gpu, host - base + ours_gpu


def refresh_node(s: TwinState, c: TwinConstants, e: EnergyConstants, i: int, k: int) -> None:
    """Recompute node ``i``'s power and attributed power (:func:`node_power`) and its region's sums.

    Lists are written only where a value changed (each write of a float allocates).
    """
    power, attributed = node_power(s, c, e, i, k)
    r = e.region_of[i]
    old = s.node_power_w[i]
    if power != old:
        s.region_power_w[r] += power - old
        s.node_power_w[i] = power
    old = s.node_attributed_w[i]
    if attributed != old:
        s.region_attributed_w[r] += attributed - old
        s.node_attributed_w[i] = attributed
    if not s.status_counts[RUNNING]:  # nothing of ours runs: no float residue in the sums
        for region in range(e.n_regions):
            if s.region_attributed_w[region] != 0.0:
                s.region_attributed_w[region] = 0.0


def refresh_all(s: TwinState, c: TwinConstants, e: EnergyConstants, k: int) -> None:
    """Every node's power under tick ``k`` (a tick changes every node's background).

    With one region its sums are recomputed from the nodes' (no residue carried); with several,
    node by node (:func:`refresh_node`).
    """
    if e.n_regions != 1:
        for i in range(c.n_nodes):
            refresh_node(s, c, e, i, k)
        return
    total_power = total_attributed = 0.0
    node_power_w, node_attributed_w = s.node_power_w, s.node_attributed_w
    for i in range(c.n_nodes):
        power, attributed = node_power(s, c, e, i, k)
        if power != node_power_w[i]:
            node_power_w[i] = power
        if attributed != node_attributed_w[i]:
            node_attributed_w[i] = attributed
        total_power += power
        total_attributed += attributed
    s.region_power_w[0] = total_power
    s.region_attributed_w[0] = total_attributed


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
    (:meth:`~digital_twin.sim.state.TwinState.penalty_counts`).
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
