"""Energy and carbon, exactly: each node's power is constant between events, so energy is a sum.

The model (what a node draws, what our jobs are charged, which grid each node is on) is
:mod:`digital_twin.energy.model`'s; this module is the twin's side of it, on its hot path. A
node's power depends on its background cpu (the current telemetry tick), our jobs' cpu and GPUs
on it, and whether it is up; so it changes only at a telemetry tick (every node), a start or a
release (one node), an interruption or a recovery (one node). The feature's hooks
(:class:`EnergyState`) then call :func:`refresh_node` (or :func:`refresh_all`), which keeps the
node's power and attributed power and their per-region sums; as the clock advances from ``t0``
to ``t1`` :func:`accrue` adds power x (t1 - t0) joules and, per region, power x the exact
integral of its carbon intensity over ``[t0, t1]`` (a constant series: intensity x (t1 - t0)). No time stepping:
between two calls nothing the power depends on changes.

Units: watts, joules, grams, gCO2eq/kWh; the objective's counts are kWh and kg
(:data:`~digital_twin.objective.PENALTIES`: ``energy``, ``carbon``).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import Final

from digital_twin.energy.carbon_intensity import J_PER_KWH
from digital_twin.objective import PENALTY_INDEX
from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.core import CoreState, Feature
from digital_twin.sim.job_states import RUNNING
from digital_twin.sim.tables.energy_constants import EnergyConstants

_ENERGY: Final = PENALTY_INDEX["energy"]
_CARBON: Final = PENALTY_INDEX["carbon"]


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


class EnergyState(Feature):
    """The nodes' power now and their energy and emissions so far (``N`` nodes, ``R`` regions).

    Attributes:
        node_power_w: ``(N,)`` each node's power now, W.
        node_attributed_w: ``(N,)`` the part of it our jobs add (the marginal power over the background's), W.
        region_power_w: ``(R,)`` per region of the energy model, its nodes' power now, W.
        region_attributed_w: ``(R,)`` per region, its nodes' attributed power now, W.
        node_energy_j: The nodes' energy up to now, J.
        node_carbon_g: The nodes' emissions up to now, gCO2eq.
        attributed_energy_j: Our jobs' (attributed) energy up to now, J (the ``energy`` count is it in kWh).
        attributed_carbon_g: Our jobs' emissions up to now, gCO2eq (the ``carbon`` count is it in kg).
    """

    def __init__(
        self, node_power_w: list[float], node_attributed_w: list[float],
        region_power_w: list[float], region_attributed_w: list[float], node_energy_j: float, node_carbon_g: float,
        attributed_energy_j: float, attributed_carbon_g: float,
    ) -> None:  # fmt: skip
        self.node_power_w = node_power_w
        self.node_attributed_w = node_attributed_w
        self.region_power_w = region_power_w
        self.region_attributed_w = region_attributed_w
        self.node_energy_j = node_energy_j
        self.node_carbon_g = node_carbon_g
        self.attributed_energy_j = attributed_energy_j
        self.attributed_carbon_g = attributed_carbon_g

    @classmethod
    def of(cls, c: TwinConstants) -> EnergyState | None:
        """Nothing drawn yet at time 0; ``None`` without energy accounting."""
        e = c.energy
        if e is None:
            return None
        n, regions = c.n_nodes, e.n_regions
        return cls([0.0] * n, [0.0] * n, [0.0] * regions, [0.0] * regions, 0.0, 0.0, 0.0, 0.0)

    def copy(self) -> EnergyState:
        """An independent copy."""
        return EnergyState(
            self.node_power_w.copy(), self.node_attributed_w.copy(), self.region_power_w.copy(),
            self.region_attributed_w.copy(), self.node_energy_j, self.node_carbon_g, self.attributed_energy_j,
            self.attributed_carbon_g,
        )  # fmt: skip

    def __reduce__(self) -> tuple[type[EnergyState], tuple[object, ...]]:
        """Pickle by its fields (compiled, the class has no default pickling)."""
        return EnergyState, (
            self.node_power_w, self.node_attributed_w, self.region_power_w, self.region_attributed_w,
            self.node_energy_j, self.node_carbon_g, self.attributed_energy_j, self.attributed_carbon_g,
        )  # fmt: skip

    # ------------------------------------------------------------------ hooks
    def on_start(self, s: CoreState, c: TwinConstants, j: int, i: int) -> None:
        """Node ``i`` runs one more job."""
        refresh_node(self, s, c, i, s.current_tick(c))

    def on_end(self, s: CoreState, c: TwinConstants, j: int, i: int) -> None:
        """Node ``i`` runs one job fewer."""
        refresh_node(self, s, c, i, s.current_tick(c))

    def on_node(self, s: CoreState, c: TwinConstants, i: int) -> None:
        """Down, node ``i`` draws nothing; up again, its idle power."""
        refresh_node(self, s, c, i, s.current_tick(c))

    def on_tick(self, s: CoreState, c: TwinConstants, k: int) -> None:
        """Every node's background changes."""
        refresh_all(self, s, c, k)

    def advance(self, s: CoreState, c: TwinConstants, t0: float, t1: float) -> None:
        """Energy and emissions of ``[t0, t1]``."""
        e = c.energy
        assert e is not None
        accrue(self, e, t0, t1)

    def count(self, counts: list[float]) -> None:
        """The ``energy`` (kWh) and ``carbon`` (kg) counts: our jobs' so far."""
        counts[_ENERGY] = self.attributed_energy_j / J_PER_KWH
        counts[_CARBON] = self.attributed_carbon_g / 1000.0


def node_power(s: CoreState, c: TwinConstants, e: EnergyConstants, i: int, k: int) -> tuple[float, float]:
    """Node ``i``'s ``(power, attributed power)`` now, W, under telemetry tick ``k``.

    Up: ``curve(u) + gpus x idle + busy x (busy - idle)``, attributed ``curve(u) -
    curve(u_background) + busy x (busy - idle)``; down: ``(0, 0)``.
    """
    nodes = s.nodes
    if not nodes.up[i]:
        return 0.0, 0.0
    capacity = c.cpu_m[i]
    background = c.background_cpu_m.row(k)[i]
    points, watts, steps = e.curve_u[i], e.curve_w[i], e.curve_steps[i]
    base = curve_watts(points, watts, background / capacity, steps)
    used = capacity - nodes.free_cpu_m[i]
    busy = c.gpus[i] - nodes.free_gpus[i]
    if not used and not busy:  # none of our jobs runs on it
        return base + e.gpu_idle_node_w[i], 0.0
    host = curve_watts(points, watts, (background + used) / capacity, steps) if used else base
    ours_gpu = busy * e.gpu_delta_w[i]  # (a GPU job may round to 0 millicores: its GPUs still count)
    return host + e.gpu_idle_node_w[i] + ours_gpu, host - base + ours_gpu


def refresh_node(f: EnergyState, s: CoreState, c: TwinConstants, i: int, k: int) -> None:
    """Recompute node ``i``'s power and attributed power (:func:`node_power`) and its region's sums.

    Lists are written only where a value changed (each write of a float allocates).
    """
    e = c.energy
    assert e is not None
    power, attributed = node_power(s, c, e, i, k)
    r = e.region_of[i]
    old = f.node_power_w[i]
    if power != old:
        f.region_power_w[r] += power - old
        f.node_power_w[i] = power
    old = f.node_attributed_w[i]
    if attributed != old:
        f.region_attributed_w[r] += attributed - old
        f.node_attributed_w[i] = attributed
    if not s.jobs.status_counts[RUNNING]:  # nothing of ours runs: no float residue in the sums
        for region in range(e.n_regions):
            if f.region_attributed_w[region] != 0.0:
                f.region_attributed_w[region] = 0.0


def refresh_all(f: EnergyState, s: CoreState, c: TwinConstants, k: int) -> None:
    """Every node's power under tick ``k`` (a tick changes every node's background).

    With one region its sums are recomputed from the nodes' (no residue carried); with several,
    node by node (:func:`refresh_node`).
    """
    e = c.energy
    assert e is not None
    if e.n_regions != 1:
        for i in range(c.n_nodes):
            refresh_node(f, s, c, i, k)
        return
    total_power = total_attributed = 0.0
    node_power_w, node_attributed_w = f.node_power_w, f.node_attributed_w
    for i in range(c.n_nodes):
        power, attributed = node_power(s, c, e, i, k)
        if power != node_power_w[i]:
            node_power_w[i] = power
        if attributed != node_attributed_w[i]:
            node_attributed_w[i] = attributed
        total_power += power
        total_attributed += attributed
    f.region_power_w[0] = total_power
    f.region_attributed_w[0] = total_attributed


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


def accrue(f: EnergyState, e: EnergyConstants, t0: float, t1: float) -> None:
    """Add the energy and emissions of ``[t0, t1]`` at the nodes' current power (nothing changes in between).

    Updates the node energy and emissions and our jobs' (attributed) ones; the objective's
    ``energy`` (kWh) and ``carbon`` (kg) counts are read from the latter (:meth:`EnergyState.count`).
    """
    dt = t1 - t0
    region_power, region_attributed, constant = f.region_power_w, f.region_attributed_w, e.carbon_constant
    for r in range(e.n_regions):
        power = region_power[r]
        if power == 0.0:
            continue
        attributed = region_attributed[r]
        intensity_s = constant[r] * dt if constant[r] >= 0.0 else carbon_integral(e, r, t0, t1)
        f.node_energy_j += power * dt
        f.node_carbon_g += power * intensity_s / J_PER_KWH
        if attributed != 0.0:
            f.attributed_energy_j += attributed * dt
            f.attributed_carbon_g += attributed * intensity_s / J_PER_KWH
