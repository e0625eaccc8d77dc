"""The ``fleet`` section of a scenario: one of ``preset``, ``nodes``, ``generate``, ``alibaba_gpu_csv``.

:func:`fleet_loader` validates the section now and returns a picklable loader (a frozen
dataclass, see :mod:`digital_twin.scenario.loader`) that gives the nodes on first use. Inline
and generated fleets are built now, after their node count is checked against
``limits.max_nodes``; a node list is read on first use, at most ``max_nodes`` rows of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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
from digital_twin.limits import Limits
from digital_twin.scenario.paths import resolve_path
from digital_twin.scenario.schema import ScenarioError, Section, check_limit, checked
from digital_twin.scenario.sources import sample_per_group

FLEET_PRESETS: dict[str, Callable[[], tuple[NodeSpec, ...]]] = {"default-5": default_fleet}
"""``fleet.preset`` -> a function returning the nodes."""


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

    def __call__(self) -> tuple[NodeSpec, ...]:
        """Read the node list (at most ``max_nodes`` rows), then filter and sample it."""
        nodes = fleet_from_alibaba_gpu_csv(self.path, limit=self.max_nodes + 1)
        if len(nodes) > self.max_nodes:
            raise SpecError(
                f"{self.path}: the node list has more than limits.max_nodes = {self.max_nodes:,} rows; "
                f"{Limits.how_to_raise('max_nodes')}"
            )
        if self.gpu_only:
            nodes = tuple(n for n in nodes if n.gpu_count > 0)
        if self.per_model is not None:
            keep = sample_per_group([n.gpu_model or "cpu" for n in nodes], self.per_model, self.seed)
            nodes = tuple(nodes[i] for i in keep)
        return nodes


def fleet_loader(section: Section, data_files: list[Path], limits: Limits) -> FleetLoader:
    """The loader of the ``fleet`` section (exactly one of preset, nodes, generate, alibaba_gpu_csv)."""
    kinds = [k for k in ("preset", "nodes", "generate", "alibaba_gpu_csv") if section.has(k)]
    if len(kinds) != 1:
        raise ScenarioError(f"{section.file}: fleet: give exactly one of preset, nodes, generate, alibaba_gpu_csv")
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
    csv_section = section.section("alibaba_gpu_csv")
    path = resolve_path(csv_section, "path", data_files)
    per_model = csv_section.get("per_model", int, None)
    seed = csv_section.get("seed", int, 0)
    gpu_only = csv_section.get("gpu_only", bool, True)
    csv_section.finish()
    section.finish()
    return AlibabaGpuFleet(path, per_model, seed, gpu_only, limits.max_nodes)


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
