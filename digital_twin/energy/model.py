"""An episode's energy model: each node's power and the carbon intensity of the grid it draws from.

:class:`EnergyModel` is part of a :class:`~digital_twin.TwinSpec` (``spec.energy``; ``None``
means :func:`default_energy_model` of the fleet, so every episode reports kWh and kg CO2eq).
The twin turns it into the per-node lists its event loop reads
(:mod:`digital_twin.sim.features.energy_accounting`).

A node draws (watts, while it is up; 0 while a spot node is down)::

    P = curve(u) + gpus x gpu.idle_w + busy_gpus x (gpu.busy_w - gpu.idle_w)
    u = min(1, (background cpu + our jobs' requested cpu) / cores)

The background is the telemetry's cpu at the current tick; the node's demand is capped at its
cores, as the contention model caps it (:mod:`digital_twin.sim.tables.contention`), so an oversubscribed
node draws its full-load power. The background never uses GPUs (the traces have no GPU column).

**Attribution.** Our jobs are charged the power they add to the node, the *marginal* power
over what the background alone draws: ``curve(u) - curve(u_background) + busy_gpus x (busy_w -
idle_w)``. The node's idle power and the background's share are the data centre's, whoever
places jobs. Under a concave curve the same job adds less power to a loaded node than to an
idle one, so consolidation pays in energy and trades against contention (a loaded node runs
our jobs slower, and a saturated one adds no power at all but runs them slowest).

**Carbon.** Each node belongs to a region whose grid has a carbon-intensity series
(:class:`~digital_twin.energy.CarbonIntensity`, gCO2eq/kWh, a step function); a region's
emissions are the integral of its nodes' power times the intensity, exact between events. The
objective charges our jobs' (attributed) emissions; the nodes' whole emissions are reported.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from digital_twin.energy.carbon_intensity import CarbonIntensity
from digital_twin.energy.gpu_power import GpuPower, gpu_power
from digital_twin.energy.power_curves import PowerCurve, specpower_curve
from digital_twin.errors import SpecError, short_repr
from digital_twin.fleet import NodeSpec

DEFAULT_REGION = "default"
DEFAULT_CURVE = "ibm-x3550-x5675"
"""The SPECpower curve every node's host gets by default (:data:`~digital_twin.energy.SPECPOWER_CURVES`):
the most recent server of the table (2 x 6-core Westmere, 2011), 58.4 W idle, 222 W at full load."""
DEFAULT_CURVE_CORES = 12
"""Cores of :data:`DEFAULT_CURVE`'s server: a node of ``n`` cores draws ``n / 12`` times its curve
(an assumption: power grows with cores at that server's watts per core; a 32-core node then
draws 156 W idle and 592 W at full load, in the range of a current 2-socket server). No ARM
server is in the SPECpower table, so ARM nodes get the same watts per core (an upper estimate)."""
DEFAULT_G_PER_KWH = 400.0
"""Grid carbon intensity of the default region, gCO2eq/kWh: a round figure near the 2022 US grid
average (the four EIA-930 areas of the bundled data range from 55 to 363 on average). A scenario
sets its own."""


@dataclass(frozen=True)
class NodePower:
    """One node's power model.

    Attributes:
        curve: Wall power of the host (W) against cpu utilisation.
        gpu: Power of each of its GPUs (``None``: it has none).
        region: The region whose carbon intensity its energy has (a key of the model's ``carbon``).
    """

    curve: PowerCurve
    gpu: GpuPower | None = None
    region: str = DEFAULT_REGION


@dataclass(frozen=True, eq=False)
class EnergyModel:
    """Per node, its power; per region, its grid's carbon intensity.

    Attributes:
        nodes: One :class:`NodePower` per fleet node, in fleet order.
        carbon: Region name -> its carbon intensity (every node's region must be here); a copy
            of the mapping given, in its order.

    Raises:
        SpecError: A node's region without a carbon series, or a wrong type.
    """

    nodes: tuple[NodePower, ...]
    carbon: Mapping[str, CarbonIntensity] = field(
        default_factory=lambda: {DEFAULT_REGION: CarbonIntensity.constant(DEFAULT_G_PER_KWH)}
    )

    def __post_init__(self) -> None:
        nodes = tuple(self.nodes)
        if not all(isinstance(node, NodePower) for node in nodes):
            raise SpecError("energy model: nodes must be NodePower values")
        carbon = dict(self.carbon)
        for name, series in carbon.items():
            if not isinstance(series, CarbonIntensity):
                raise SpecError(f"energy model: region {short_repr(name)}: carbon must be a CarbonIntensity")
        for k, node in enumerate(nodes):
            if node.region not in carbon:
                raise SpecError(
                    f"energy model: node {k} is in region {short_repr(node.region)}, which has no carbon "
                    f"intensity (regions: {sorted(carbon)})"
                )
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "carbon", carbon)

    @property
    def regions(self) -> tuple[str, ...]:
        """The region names, in the model's order (the order of the twin's per-region tallies)."""
        return tuple(self.carbon)

    def check_fleet(self, fleet: Sequence[NodeSpec]) -> None:
        """Raise :class:`SpecError` unless the model has one node per fleet node and GPUs where they are."""
        if len(self.nodes) != len(fleet):
            raise SpecError(f"energy model has {len(self.nodes)} nodes but the fleet has {len(fleet)}")
        for node, power in zip(fleet, self.nodes, strict=True):
            if node.gpu_count > 0 and power.gpu is None:
                raise SpecError(f"energy model: node {short_repr(node.node_id)} has GPUs but no GPU power")


def per_core_curve(curve: PowerCurve, curve_cores: float, node_cores: float) -> PowerCurve:
    """``curve`` (a server of ``curve_cores`` cores) scaled to a node of ``node_cores``: watts x node / curve cores."""
    factor = node_cores / curve_cores
    return PowerCurve(curve.points_u, curve.watts * factor, f"{curve.name} x {factor:g}")


def default_node_power(node: NodeSpec, region: str = DEFAULT_REGION) -> NodePower:
    """:data:`DEFAULT_CURVE` scaled to the node's cores, and its GPU model's power (:func:`gpu_power`).

    The GPU power of a model without a board-power figure is the default one
    (:func:`~digital_twin.energy.uses_default_gpu_power`).
    """
    curve = per_core_curve(specpower_curve(DEFAULT_CURVE), DEFAULT_CURVE_CORES, node.cpu_cores)
    gpu = gpu_power(node.gpu_model) if node.gpu_count > 0 and node.gpu_model is not None else None
    return NodePower(curve, gpu, region)


def default_energy_model(fleet: Sequence[NodeSpec]) -> EnergyModel:
    """Every node :func:`default_node_power`, in one region at :data:`DEFAULT_G_PER_KWH`."""
    return EnergyModel(tuple(default_node_power(node) for node in fleet))


KNOWN_HISTORY_S = 86_400.0
"""How much of each grid's past before time 0 an online agent knows (grids publish their
intensity hourly; a day of it lets a forecaster use the same hour yesterday)."""


def known_energy_model(model: EnergyModel, now_s: float, horizon_s: float) -> EnergyModel:
    """``model`` as known at ``now_s``: each region's carbon intensity up to now, then held (persistence).

    What an online agent may know (the grid's future intensity is hindsight): every series
    becomes the values it had at the ticks up to the one holding ``now_s``, that tick's value
    after it, over ``[-KNOWN_HISTORY_S, max(now_s, horizon_s)]``. Constant series, and the
    nodes, are kept as they are (the model itself when nothing changes).
    """
    carbon = {name: _known_series(series, now_s, horizon_s) for name, series in model.carbon.items()}
    if all(carbon[name] is model.carbon[name] for name in carbon):
        return model
    return EnergyModel(model.nodes, carbon)


def _known_series(series: CarbonIntensity, now_s: float, horizon_s: float) -> CarbonIntensity:
    if series.n_ticks == 1:
        return series
    first = math.floor((-KNOWN_HISTORY_S - series.start_s) / series.tick_s)  # the (unwrapped) tick holding it
    now = math.floor((now_s - series.start_s) / series.tick_s)
    last = math.floor((max(now_s, horizon_s) - series.start_s) / series.tick_s)
    starts = series.start_s + np.arange(first, last + 1) * series.tick_s
    values = np.array(series.at(starts), dtype=np.float64)
    values[now - first + 1 :] = values[now - first]
    return CarbonIntensity(values, series.tick_s, float(starts[0]), f"{series.name}, known to {now_s:g} s")


def energy_past_difference(old: EnergyModel, new: EnergyModel, now_s: float) -> str | None:
    """What differs between two models over ``[0, now_s]`` (``None``: they agree up to now).

    The nodes' power must be the same; each region's carbon intensity the same at time 0 and at
    every tick start of either series up to ``now_s`` (two step functions agree on an interval
    exactly when they agree at its start and at each of their steps in it).
    """
    if new is old:
        return None
    if len(old.nodes) != len(new.nodes):
        return f"the energy model has {len(new.nodes)} nodes, the twin's {len(old.nodes)}"
    for k, (a, b) in enumerate(zip(old.nodes, new.nodes, strict=True)):
        same_curve = a.curve is b.curve or (
            np.array_equal(a.curve.points_u, b.curve.points_u) and np.array_equal(a.curve.watts, b.curve.watts)
        )
        if not same_curve or a.gpu != b.gpu or a.region != b.region:
            return f"the energy model differs at node {k}"
    if old.regions != new.regions:
        return f"the energy model's regions differ ({new.regions}, the twin's {old.regions})"
    for name in old.regions:
        a_series, b_series = old.carbon[name], new.carbon[name]
        times = np.concatenate(([0.0], _steps(a_series, now_s), _steps(b_series, now_s)))
        if not np.array_equal(a_series.at(times), b_series.at(times)):
            return f"the carbon intensity of region {name!r} differs before now"
    return None


def _steps(series: CarbonIntensity, now_s: float) -> np.ndarray:
    """The series' tick starts in ``(0, now_s]``."""
    if series.n_ticks == 1 or now_s <= 0.0:
        return np.zeros(0)
    first = math.floor((0.0 - series.start_s) / series.tick_s) + 1
    last = math.floor((now_s - series.start_s) / series.tick_s)
    return series.start_s + np.arange(first, last + 1) * series.tick_s
