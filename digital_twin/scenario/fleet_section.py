"""The ``fleet`` section of a scenario: one of :data:`FLEET_KINDS`.

``alibaba_gpu_csv`` reads an Alibaba GPU 2023 node list, ``alibaba_spot_gpu_2026_csv`` the
Alibaba spot-GPU 2026 node table (:mod:`digital_twin.fleet_spot_gpu2026`); both take ``path``,
and optionally ``per_model`` (at most that many nodes of each GPU model, sampled with ``seed``);
``alibaba_gpu_csv`` also ``gpu_only`` (default true: drop CPU-only nodes) and ``on_demand_only``
(default false: make the reader's spot nodes on-demand, :attr:`AlibabaGpuFleet.on_demand_only`).

:func:`fleet_loader` validates the section now and returns a picklable loader (a frozen
dataclass, see :mod:`digital_twin.scenario.loader`) that gives the nodes on first use. Inline
and generated fleets are built now, after their node count is checked against
``limits.max_nodes``; a node list is read on first use, at most ``max_nodes`` rows of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Protocol

import numpy as np

from digital_twin.errors import SpecError, short_repr
from digital_twin.fleet import (
    NodeSpec,
    default_fleet,
    fleet_from_alibaba_gpu_csv,
    fleet_from_dicts,
    generate_fleet,
    node_from_dict,
)
from digital_twin.fleet_spot_gpu2026 import fleet_from_spot_gpu_2026_csv
from digital_twin.limits import Limits
from digital_twin.scenario.paths import resolve_path
from digital_twin.scenario.schema import ScenarioError, Section, check_limit, checked
from digital_twin.scenario.sources import sample_per_group

FLEET_PRESETS: dict[str, Callable[[], tuple[NodeSpec, ...]]] = {"default-5": default_fleet}
"""``fleet.preset`` -> a function returning the nodes."""
FLEET_KINDS = ("preset", "nodes", "generate", "alibaba_gpu_csv", "alibaba_spot_gpu_2026_csv")
"""The keys of which a ``fleet`` section gives exactly one."""


class FleetLoader(Protocol):
    """Where a scenario's nodes come from: called once, on first use."""

    def __call__(self) -> tuple[NodeSpec, ...]:
        """The nodes, in action order.

        Raises:
            SpecError: The nodes are invalid, or more than the limits allow (the scenario adds the file).
        """
        ...


@dataclass(frozen=True)
class PresetFleet:
    """``fleet.preset``: a named fleet of :data:`FLEET_PRESETS`."""

    name: str

    def __call__(self) -> tuple[NodeSpec, ...]:
        """The preset's nodes."""
        return FLEET_PRESETS[self.name]()


@dataclass(frozen=True)
class FixedFleet:
    """``fleet.nodes`` or ``fleet.generate``: nodes built (and checked) at parse time."""

    nodes: tuple[NodeSpec, ...]

    def __call__(self) -> tuple[NodeSpec, ...]:
        """The nodes."""
        return self.nodes


@dataclass(frozen=True)
class AlibabaGpuFleet:
    """``fleet.alibaba_gpu_csv``: nodes read from an Alibaba GPU 2023 node list on first use."""

    path: Path
    per_model: int | None
    seed: int
    gpu_only: bool
    max_nodes: int
    on_demand_only: bool = False
    """Make every node on-demand (no interruptions; prices kept): the trace flags no spot node, and
    the reader's spot models (:data:`digital_twin.fleet.ALIBABA_GPU_MODELS`) are the reference's
    assumption for its 32-node benchmark."""

    def __call__(self) -> tuple[NodeSpec, ...]:
        """Read the node list (at most ``max_nodes`` rows), then filter, sample and (optionally) make it on-demand."""
        nodes = _read_at_most(fleet_from_alibaba_gpu_csv, self.path, self.max_nodes)
        if self.gpu_only:
            nodes = tuple(n for n in nodes if n.gpu_count > 0)
        if self.on_demand_only:
            nodes = tuple(replace(n, instance="on-demand", interruption_prob_per_hour=0.0) for n in nodes)
        return _per_model(nodes, self.per_model, self.seed)


@dataclass(frozen=True)
class AlibabaSpotGpu2026Fleet:
    """``fleet.alibaba_spot_gpu_2026_csv``: nodes read from the spot-GPU 2026 node table on first use.

    Memory, prices, VRAM and instance type are the assumptions of :mod:`digital_twin.fleet_spot_gpu2026`.
    """

    path: Path
    per_model: int | None
    seed: int
    max_nodes: int

    def __call__(self) -> tuple[NodeSpec, ...]:
        """Read the node table (at most ``max_nodes`` rows), then sample it."""
        nodes = _read_at_most(fleet_from_spot_gpu_2026_csv, self.path, self.max_nodes)
        return _per_model(nodes, self.per_model, self.seed)


def _read_at_most(
    read: Callable[[Path, int], tuple[NodeSpec, ...]], path: Path, max_nodes: int
) -> tuple[NodeSpec, ...]:
    """``read(path, max_nodes + 1)``, refused when the file has more than ``max_nodes`` rows."""
    nodes = read(path, max_nodes + 1)
    if len(nodes) > max_nodes:
        raise SpecError(
            f"{path}: the node list has more than limits.max_nodes = {max_nodes:,} rows; "
            f"{Limits.how_to_raise('max_nodes')}"
        )
    return nodes


def _per_model(nodes: tuple[NodeSpec, ...], per_model: int | None, seed: int) -> tuple[NodeSpec, ...]:
    """At most ``per_model`` nodes of each GPU model (CPU-only nodes are one group), seeded; all when ``None``."""
    if per_model is None:
        return nodes
    keep = sample_per_group([n.gpu_model or "cpu" for n in nodes], per_model, seed)
    return tuple(nodes[i] for i in keep)


def fleet_loader(section: Section, data_files: list[Path], limits: Limits) -> FleetLoader:
    """The loader of the ``fleet`` section (exactly one of :data:`FLEET_KINDS`)."""
    kinds = [k for k in FLEET_KINDS if section.has(k)]
    if len(kinds) != 1:
        raise ScenarioError(f"{section.file}: fleet: give exactly one of {', '.join(FLEET_KINDS)}")
    kind = kinds[0]
    if kind == "preset":
        name = section.get("preset", str)
        if name not in FLEET_PRESETS:
            raise section.error("preset", f"unknown preset {short_repr(name)}; known: {sorted(FLEET_PRESETS)}")
        section.finish()
        return PresetFleet(name)
    if kind == "nodes":
        items = section.get("nodes", list)
        check_limit(section, "nodes", limits, "max_nodes", len(items), f"the list has {len(items):,} nodes, which")
        fleet = checked(section, None, lambda: fleet_from_dicts(items, section.path("nodes")))
        section.finish()
        return FixedFleet(fleet)
    if kind == "generate":
        fleet = _generated_fleet(section.section("generate"), limits)
        section.finish()
        return FixedFleet(fleet)
    csv_section = section.section(kind)
    path = resolve_path(csv_section, "path", data_files)
    per_model = csv_section.get("per_model", int, None)
    seed = csv_section.get("seed", int, 0)
    loader: FleetLoader
    if kind == "alibaba_gpu_csv":
        gpu_only = csv_section.get("gpu_only", bool, True)
        on_demand_only = csv_section.get("on_demand_only", bool, False)
        loader = AlibabaGpuFleet(path, per_model, seed, gpu_only, limits.max_nodes, on_demand_only)
    else:
        loader = AlibabaSpotGpu2026Fleet(path, per_model, seed, limits.max_nodes)
    csv_section.finish()
    section.finish()
    return loader


def _generated_fleet(gen: Section, limits: Limits) -> tuple[NodeSpec, ...]:
    types = gen.section("types")
    templates = {}
    for name in list(types.data):
        template = {"node_id": name, **types.get(name, dict)}
        templates[name] = checked(gen, None, partial(node_from_dict, template, types.path(name)))
    types.finish()
    counts = gen.get("counts", dict)
    for name, n in counts.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise gen.error("counts", f"the count of {short_repr(name)} must be an integer >= 0, got {short_repr(n)}")
    total = sum(counts.values())
    check_limit(gen, "counts", limits, "max_nodes", total, f"the counts add up to {total:,} nodes, which")
    seed = gen.get("seed", int, 0)
    jitter = gen.get("price_jitter", float, 0.0)
    gen.finish()
    return checked(gen, "counts", lambda: generate_fleet(templates, counts, np.random.default_rng(seed), jitter))
