"""The ``energy`` section of a scenario: each node's power curve and the grid each node draws from.

::

    energy:
      accounting: true                 # false: no energy or carbon accounting (settings.energy_accounting)
      power:                           # per node id, or `default` for the rest
        default: {curve: ibm-x3550-x5675, cores: 12}   # a SPECpower curve (digital_twin.energy.SPECPOWER_CURVES),
                                                       # scaled by the node's cores / `cores` (omit `cores`: as is)
        node-gpu-01: {idle_w: 150, peak_w: 450}        # a straight line
        node-arm-01: {points_u: [0, 0.5, 1], watts: [40, 90, 120]}   # any piecewise-linear curve
      gpu_idle_fraction: 0.15          # idle GPU watts = this x the model's board power (busy = board power)
      regions:                         # name -> its grid's carbon intensity (gCO2eq/kWh); first = default
        pjm: {reader: eia-930, path: ${ACO_ENV_TRACES}/carbon-intensity-eia-2022/PJM_NG_&_avgCI.csv,
              start: "2022-06-01 00:00", hours: 168}   # start/hours: the window (time 0 = start);
                                                       # hour_label: start (default) | end (EIA's)
        ciso: {reader: csv, path: data/ciso.csv}       # generic: time_s|timestamp, g_per_kwh
        flat: {g_per_kwh: 400}
      node_regions: {node-cpu-01: ciso}                # the others are in the first region

Without the section every node has :func:`~digital_twin.energy.model.default_node_power`, in one
region at :data:`~digital_twin.energy.model.DEFAULT_G_PER_KWH`. :func:`energy_loader` validates
the section now (keys, types, curve names, region names) and returns a picklable loader called
with the fleet on first use, which checks the node ids and reads the carbon files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from digital_twin.energy import (
    SPECPOWER_CURVES,
    CarbonIntensity,
    PowerCurve,
    gpu_power,
    read_carbon_csv,
    read_eia_carbon_csv,
)
from digital_twin.energy.eia930 import HOUR_LABELS
from digital_twin.energy.gpu_power import GPU_IDLE_FRACTION
from digital_twin.energy.model import (
    DEFAULT_CURVE,
    DEFAULT_CURVE_CORES,
    DEFAULT_G_PER_KWH,
    DEFAULT_REGION,
    EnergyModel,
    NodePower,
    per_core_curve,
)
from digital_twin.errors import SpecError, TraceError
from digital_twin.fleet import NodeSpec
from digital_twin.scenario.paths import resolve_path
from digital_twin.scenario.schema import ScenarioError, Section, checked

CARBON_READERS = ("eia-930", "csv")
DEFAULT_POWER = "default"


@dataclass(frozen=True)
class CarbonSource:
    """One region's ``carbon`` entry: a constant, or a file read on first use."""

    reader: str | None  # None: constant
    path: Path | None
    g_per_kwh: float
    start: str | None
    hours: int | None
    hour_label: str = "start"

    def read(self, name: str) -> CarbonIntensity:
        """The region's series (a file read now)."""
        if self.reader is None:
            return CarbonIntensity.constant(self.g_per_kwh, name)
        assert self.path is not None
        if self.reader == "eia-930":
            return read_eia_carbon_csv(self.path, start=self.start, hours=self.hours, hour_label=self.hour_label)
        return read_carbon_csv(self.path, name=name)


@dataclass(frozen=True)
class EnergyLoader:
    """The validated ``energy`` section; called with the fleet on first use (:meth:`__call__`)."""

    file: Path | str
    curves: Mapping[str, PowerCurve | tuple[PowerCurve, float]]  # node id or "default" -> curve (, its cores)
    gpu_idle_fraction: float
    regions: Mapping[str, CarbonSource]
    node_regions: Mapping[str, str]

    def __call__(self, fleet: tuple[NodeSpec, ...]) -> EnergyModel:
        """The fleet's energy model.

        Raises:
            ScenarioError: A node id in ``power`` or ``node_regions`` that is not in the fleet,
                or a carbon file that cannot be read (naming the file and key).
        """
        ids = {node.node_id for node in fleet}
        for key, names in (("power", set(self.curves) - {DEFAULT_POWER}), ("node_regions", set(self.node_regions))):
            unknown = sorted(names - ids)
            if unknown:
                raise ScenarioError(f"{self.file}: energy.{key}: no node {unknown[0]!r} in the fleet")
        nodes = tuple(self._node_power(node) for node in fleet)
        carbon = {}
        for name, source in self.regions.items():
            try:
                carbon[name] = source.read(name)
            except (SpecError, TraceError, OSError) as exc:
                raise ScenarioError(f"{self.file}: energy.regions.{name}: {exc}") from None
        return EnergyModel(nodes, carbon)

    def _node_power(self, node: NodeSpec) -> NodePower:
        region = self.node_regions.get(node.node_id, next(iter(self.regions)))
        entry = self.curves.get(node.node_id, self.curves.get(DEFAULT_POWER))
        if entry is None:
            curve = per_core_curve(SPECPOWER_CURVES[DEFAULT_CURVE], DEFAULT_CURVE_CORES, node.cpu_cores)
        elif isinstance(entry, tuple):
            curve = per_core_curve(*entry, node.cpu_cores)
        else:
            curve = entry
        gpu = gpu_power(node.gpu_model, self.gpu_idle_fraction) if node.gpu_model is not None else None
        return NodePower(curve, gpu, region)


def energy_loader(section: Section | None, data_files: list[Path]) -> tuple[EnergyLoader | None, bool]:
    """The section's loader (``None`` without a section: the fleet's default model) and ``accounting``."""
    if section is None:
        return None, True
    accounting = section.get("accounting", bool, True)
    power = section.section("power", required=False)
    curves = {} if power is None else {key: _curve(power.section(key)) for key in power.rest()}
    fraction = section.get("gpu_idle_fraction", float, GPU_IDLE_FRACTION)
    if not 0.0 <= fraction <= 1.0:
        raise section.error("gpu_idle_fraction", f"must be in [0, 1], got {fraction:g}")
    regions_section = section.section("regions", required=False)
    regions = (
        {DEFAULT_REGION: CarbonSource(None, None, DEFAULT_G_PER_KWH, None, None)}
        if regions_section is None
        else {name: _carbon(regions_section.section(name), data_files) for name in regions_section.rest()}
    )
    if not regions:
        raise section.error("regions", "must name at least one region")
    node_regions = section.get("node_regions", dict, {})
    for node_id, region in node_regions.items():
        if region not in regions:
            raise section.error("node_regions", f"node {node_id!r}: no region {region!r} (regions: {sorted(regions)})")
    section.finish()
    node_region_names = {str(k): str(v) for k, v in node_regions.items()}
    return EnergyLoader(section.file, curves, fraction, regions, node_region_names), accounting


def _curve(entry: Section) -> PowerCurve | tuple[PowerCurve, float]:
    """One ``power`` entry: a named curve (scaled per core when ``cores`` is given), a line, or points."""
    if entry.has("curve"):
        name = entry.get("curve", str)
        if name not in SPECPOWER_CURVES:
            raise entry.error("curve", f"unknown curve {name!r}; the bundled ones: {sorted(SPECPOWER_CURVES)}")
        cores = entry.get("cores", float, None, nullable=True)
        entry.finish()
        if cores is None:
            return SPECPOWER_CURVES[name]
        if not cores > 0:
            raise entry.error("cores", f"must be > 0, got {cores:g}")
        return SPECPOWER_CURVES[name], float(cores)
    if entry.has("idle_w"):
        idle, peak = entry.get("idle_w", float), entry.get("peak_w", float, required=True)
        entry.finish()
        return checked(entry, "idle_w", lambda: PowerCurve.linear(idle, peak, entry.where))
    points, watts = _numbers(entry, "points_u"), _numbers(entry, "watts")
    entry.finish()
    return checked(entry, "points_u", lambda: PowerCurve(points, watts, entry.where))


def _numbers(entry: Section, key: str) -> np.ndarray:
    """The list under ``key`` as float64, every item a number."""
    values = entry.get(key, list, required=True)
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int | float)]
    if bad:
        raise entry.error(key, f"must be a list of numbers, got {bad[0]!r} in it")
    return np.array(values, dtype=np.float64)


def _carbon(entry: Section, data_files: list[Path]) -> CarbonSource:
    """One region's carbon source: ``{g_per_kwh: x}`` or ``{reader: eia-930|csv, path: ..}``."""
    if entry.has("g_per_kwh"):
        value = entry.get("g_per_kwh", float)
        entry.finish()
        checked(entry, "g_per_kwh", lambda: CarbonIntensity.constant(value))
        return CarbonSource(None, None, value, None, None)
    reader = entry.get("reader", str, required=True)
    if reader not in CARBON_READERS:
        raise entry.error("reader", f"must be one of {CARBON_READERS} (or give g_per_kwh), got {reader!r}")
    path = resolve_path(entry, "path", data_files)
    start = entry.get("start", str, None, nullable=True) if reader == "eia-930" else None
    hours = entry.get("hours", int, None, nullable=True) if reader == "eia-930" else None
    hour_label = entry.get("hour_label", str, "start") if reader == "eia-930" else "start"
    if hour_label not in HOUR_LABELS:
        raise entry.error("hour_label", f"must be one of {HOUR_LABELS}, got {hour_label!r}")
    entry.finish()
    return CarbonSource(reader, path, 0.0, start, hours, hour_label)
