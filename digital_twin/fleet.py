"""Compute nodes and fleets: frozen :class:`NodeSpec` and the ways to build a fleet.

A fleet is a ``tuple[NodeSpec, ...]``; its order is the order of the env's actions.

Sources:
    * :func:`default_fleet`: the reference system's 5-node fleet (``docs/reference.md``, "The 5-node fleet").
    * :func:`fleet_from_dicts`: an inline list (as in a scenario file).
    * :func:`generate_fleet`: N nodes drawn from node types, seeded.
    * :func:`fleet_from_alibaba_gpu_csv`: the Alibaba GPU 2023 node-list format
      (``sn,cpu_milli,memory_mib,gpu,model``).
    * :func:`digital_twin.fleet_spot_gpu2026.fleet_from_spot_gpu_2026_csv`: the Alibaba spot-GPU 2026
      node table (its own module).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from digital_twin._from_mapping import from_mapping
from digital_twin._node_csv import read_node_csv
from digital_twin.errors import SpecError, TraceError, short_repr

ARCHES = ("x86_64", "arm64", "gpu-node")
MAX_AMOUNT = 1e12
"""Largest ``cpu_cores``, ``mem_gb`` and ``gpu_count`` of a node or job. The twin counts cpu in
millicores and memory in MiB as 64-bit integers, and compares them as floats; a trillion cores
or GB is far above any machine and keeps both exact (below 2**53). Larger values are refused:
they would overflow (1e+297 GB cast to int64 MiB gives -2**63)."""
INSTANCE_TYPES = ("on-demand", "spot")


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One compute node. Immutable; the twin keeps what changes (allocations, up/down) apart.

    Attributes:
        node_id: Unique name, e.g. ``"node-gpu-04"``.
        arch: One of ``"x86_64"``, ``"arm64"``, ``"gpu-node"``.
        instance: ``"on-demand"`` or ``"spot"``.
        cpu_cores: Allocatable CPU cores (> 0, at most :data:`MAX_AMOUNT`; fractional allowed, resolution 1
            millicore).
        mem_gb: Allocatable memory in GB (> 0, at most :data:`MAX_AMOUNT`; resolution 1 MiB).
        price_per_hour_usd: Price of the whole node in $/h (>= 0).
        gpu_count: Number of GPUs (>= 0, at most :data:`MAX_AMOUNT`).
        gpu_model: GPU model name (e.g. ``"A100"``); ``None`` iff ``gpu_count == 0``.
        gpu_vram_gb: VRAM of each GPU in GB (0 when there are no GPUs).
        interruption_prob_per_hour: For spot nodes, P(at least one interruption in an hour),
            in [0, 1). The twin draws a Poisson process of rate ``-ln(1 - p)`` per hour.
            Must be 0 for on-demand nodes.
    """

    node_id: str
    arch: str
    instance: str
    cpu_cores: float
    mem_gb: float
    price_per_hour_usd: float
    gpu_count: int = 0
    gpu_model: str | None = None
    gpu_vram_gb: float = 0.0
    interruption_prob_per_hour: float = 0.0

    def __post_init__(self) -> None:
        where = f"node {short_repr(self.node_id)}"
        if not isinstance(self.node_id, str) or not self.node_id:
            raise SpecError(f"node_id must be a non-empty string, got {short_repr(self.node_id)}")
        if self.arch not in ARCHES:
            raise SpecError(f"{where}: arch {short_repr(self.arch)} is not one of {ARCHES}")
        if self.instance not in INSTANCE_TYPES:
            raise SpecError(f"{where}: instance {short_repr(self.instance)} is not one of {INSTANCE_TYPES}")
        _require_positive(where, "cpu_cores", self.cpu_cores)
        _require_positive(where, "mem_gb", self.mem_gb)
        _require_finite_nonnegative(where, "price_per_hour_usd", self.price_per_hour_usd)
        _require_finite_nonnegative(where, "gpu_vram_gb", self.gpu_vram_gb)
        if not isinstance(self.gpu_count, int | np.integer) or self.gpu_count < 0:
            raise SpecError(f"{where}: gpu_count must be a non-negative integer, got {short_repr(self.gpu_count)}")
        check_at_most_max_amount(where, "gpu_count", self.gpu_count)
        if (self.gpu_count > 0) != (self.gpu_model is not None):
            raise SpecError(f"{where}: gpu_model must be given exactly when gpu_count > 0")
        if self.gpu_model is not None and (not isinstance(self.gpu_model, str) or not self.gpu_model):
            raise SpecError(f"{where}: gpu_model must be a non-empty string, got {short_repr(self.gpu_model)}")
        p = self.interruption_prob_per_hour
        if not (isinstance(p, int | float) and 0.0 <= p < 1.0):
            raise SpecError(f"{where}: interruption_prob_per_hour must be in [0, 1), got {short_repr(p)}")
        if self.instance == "on-demand" and p != 0.0:
            raise SpecError(f"{where}: an on-demand node cannot have interruption_prob_per_hour > 0")

    @property
    def is_spot(self) -> bool:
        """True for spot instances (which may be interrupted)."""
        return self.instance == "spot"

    @property
    def interruption_rate_per_s(self) -> float:
        """Poisson rate of spot interruptions in 1/s, ``-ln(1 - p) / 3600``."""
        return -math.log1p(-self.interruption_prob_per_hour) / 3600.0


def is_finite(value: float) -> bool:
    """Whether ``value`` is finite as a float (an integer beyond the float range is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _require_positive(where: str, name: str, value: float) -> None:
    if not isinstance(value, int | float | np.number) or not is_finite(value) or value <= 0:
        raise SpecError(f"{where}: {name} must be a positive finite number, got {short_repr(value)}")
    check_at_most_max_amount(where, name, value)


def check_at_most_max_amount(where: str, name: str, value: float) -> None:
    """Raise :class:`SpecError` when a cpu, memory or GPU amount is above :data:`MAX_AMOUNT`."""
    if value > MAX_AMOUNT:
        raise SpecError(
            f"{where}: {name} is {value:g}, above {MAX_AMOUNT:g} (the twin counts millicores and MiB in "
            "64-bit integers)"
        )


def _require_finite_nonnegative(where: str, name: str, value: float) -> None:
    if not isinstance(value, int | float | np.number) or not is_finite(value) or value < 0:
        raise SpecError(f"{where}: {name} must be a finite number >= 0, got {short_repr(value)}")


def validate_fleet(nodes: Sequence[NodeSpec]) -> tuple[NodeSpec, ...]:
    """Return ``nodes`` as a tuple after checking it is non-empty with unique node ids."""
    fleet = tuple(nodes)
    if not fleet:
        raise SpecError("a fleet needs at least one node")
    seen: set[str] = set()
    for node in fleet:
        if node.node_id in seen:
            raise SpecError(f"duplicate node_id {short_repr(node.node_id)} in fleet")
        seen.add(node.node_id)
    return fleet


def default_fleet() -> tuple[NodeSpec, ...]:
    """The reference system's 5-node fleet, exactly as in ``docs/reference.md``, "The 5-node fleet".

    >>> [n.node_id for n in default_fleet()]
    ['node-cpu-01', 'node-arm-02', 'node-api-03', 'node-gpu-04', 'node-gpu-05']
    >>> sum(n.cpu_cores for n in default_fleet())
    88
    """
    return (
        NodeSpec("node-cpu-01", "x86_64", "on-demand", 32, 128, 0.48),
        NodeSpec("node-arm-02", "arm64", "spot", 16, 64, 0.12, interruption_prob_per_hour=0.15),
        NodeSpec("node-api-03", "x86_64", "on-demand", 8, 32, 0.18),
        NodeSpec("node-gpu-04", "gpu-node", "on-demand", 16, 128, 3.20, 4, "A100", 80.0),
        NodeSpec(
            "node-gpu-05", "gpu-node", "spot", 16, 128, 1.10, 4, "A100", 80.0,
            interruption_prob_per_hour=0.20,
        ),
    )


def node_from_dict(data: Mapping[str, Any], where: str = "node") -> NodeSpec:
    """Build a :class:`NodeSpec` from a mapping with exactly the NodeSpec field names.

    Args:
        data: Field name -> value. Unknown keys are an error, not ignored.
        where: Prefix for error messages (e.g. ``"scenario.yaml: fleet[2]"``).

    Raises:
        SpecError: ``"<where>: ..."``: not a mapping, an unknown or missing key, a bad value.
    """
    return from_mapping(NodeSpec, data, where, "node")


def fleet_from_dicts(items: Iterable[Mapping[str, Any]], where: str = "fleet") -> tuple[NodeSpec, ...]:
    """Build a fleet from an inline list of node mappings (see :func:`node_from_dict`).

    Raises:
        SpecError: A bad item (naming ``where[index]``), or a repeated ``node_id`` (naming both).
    """
    nodes = [node_from_dict(d, f"{where}[{i}]") for i, d in enumerate(items)]
    first: dict[str, int] = {}
    for index, node in enumerate(nodes):
        if node.node_id in first:
            other = f"{where}[{first[node.node_id]}]"
            raise SpecError(f"{where}[{index}]: duplicate node_id {short_repr(node.node_id)} (also {other})")
        first[node.node_id] = index
    return validate_fleet(nodes)


def generate_fleet(
    node_types: Mapping[str, NodeSpec],
    counts: Mapping[str, int],
    rng: np.random.Generator,
    price_jitter: float = 0.0,
) -> tuple[NodeSpec, ...]:
    """Generate a fleet of ``sum(counts)`` nodes from node-type templates, seeded.

    Args:
        node_types: Type name -> template spec (its ``node_id`` is ignored).
        counts: Type name -> number of nodes of that type.
        rng: The only source of randomness (shuffles the order, jitters prices).
        price_jitter: Relative price noise: each node's price is the template's times
            ``U(1 - price_jitter, 1 + price_jitter)``. 0 keeps the template prices.

    Returns:
        Nodes named ``"<type>-<k>"`` (k from 0 per type) in a seeded random order.
    """
    if not 0.0 <= price_jitter < 1.0:
        raise SpecError(f"price_jitter must be in [0, 1), got {price_jitter}")
    nodes: list[NodeSpec] = []
    for type_name, count in counts.items():
        if type_name not in node_types:
            raise SpecError(f"unknown node type {short_repr(type_name)}; known: {sorted(node_types)}")
        if count < 0:
            raise SpecError(f"node type {short_repr(type_name)}: count must be >= 0, got {count}")
        template = node_types[type_name]
        for k in range(count):
            factor = 1.0 + price_jitter * (2.0 * rng.random() - 1.0) if price_jitter else 1.0
            nodes.append(
                replace(
                    template,
                    node_id=f"{type_name}-{k}",
                    price_per_hour_usd=round(template.price_per_hour_usd * factor, 6),
                )
            )
    order = rng.permutation(len(nodes))
    return validate_fleet([nodes[i] for i in order])


# Alibaba GPU 2023 prices and VRAM per GPU model, as used by the reference's T4.1 benchmark
# (``docs/reference.md``, "Benchmarks"): $/GPU-hour, instance type, VRAM GB. G2/G3 VRAM are estimates.
ALIBABA_GPU_MODELS: dict[str, tuple[float, str, float]] = {
    "V100M32": (3.20, "on-demand", 32.0),
    "V100M16": (2.00, "on-demand", 16.0),
    "A10": (1.00, "on-demand", 24.0),
    "T4": (0.75, "on-demand", 16.0),
    "P100": (0.60, "spot", 16.0),
    "G2": (0.45, "spot", 32.0),
    "G3": (0.55, "spot", 48.0),
}
ALIBABA_SPOT_INTERRUPTION_PROB = 0.15
# CPU-only nodes of the node list: the reference gives no price; we use the default fleet's
# x86 on-demand $/core-hour (0.48 / 32 = 0.015).
ALIBABA_CPU_PRICE_PER_CORE_HOUR = 0.015

_ALIBABA_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")


def fleet_from_alibaba_gpu_csv(path: str | Path, limit: int | None = None) -> tuple[NodeSpec, ...]:
    """Read a fleet from an Alibaba GPU 2023 node list (``sn,cpu_milli,memory_mib,gpu,model``).

    Units: ``cpu_milli / 1000`` cores, ``memory_mib / 1024`` GB. GPU nodes are priced per GPU
    from :data:`ALIBABA_GPU_MODELS` (P100, G2, G3 are spot with interruption p = 0.15/h, as in
    the reference's T4.1); CPU-only nodes (empty ``model``) are x86_64 on-demand at
    :data:`ALIBABA_CPU_PRICE_PER_CORE_HOUR`.

    Args:
        path: The CSV file (header required).
        limit: Keep only the first ``limit`` rows.

    Raises:
        TraceError: Missing file or columns, not UTF-8 text, a non-numeric or non-positive
            value, an unknown GPU model or a repeated ``sn``; the message names the file and row.
    """
    nodes = read_node_csv(Path(path), "node list", _ALIBABA_NODE_COLUMNS, "sn", _alibaba_node, limit)
    return validate_fleet(nodes)


def _alibaba_node(row: Mapping[str, str], where: str) -> NodeSpec:
    try:
        cpu_milli = float(row["cpu_milli"])
        memory_mib = float(row["memory_mib"])
        gpu = int(row["gpu"])
    except (TypeError, ValueError):
        values = short_repr(dict(row))
        raise TraceError(f"{where}: cpu_milli, memory_mib and gpu must be numbers, got {values}") from None
    model = (row["model"] or "").strip() or None
    try:
        if gpu == 0:
            cores = cpu_milli / 1000.0
            return NodeSpec(
                row["sn"], "x86_64", "on-demand", cores, memory_mib / 1024.0,
                round(cores * ALIBABA_CPU_PRICE_PER_CORE_HOUR, 6),
            )
        if model not in ALIBABA_GPU_MODELS:
            raise TraceError(f"{where}: unknown GPU model {short_repr(model)}; known: {sorted(ALIBABA_GPU_MODELS)}")
        per_gpu, instance, vram = ALIBABA_GPU_MODELS[model]
        return NodeSpec(
            row["sn"], "gpu-node", instance, cpu_milli / 1000.0, memory_mib / 1024.0,
            round(per_gpu * gpu, 6), gpu, model, vram,
            ALIBABA_SPOT_INTERRUPTION_PROB if instance == "spot" else 0.0,
        )
    except SpecError as exc:
        raise TraceError(f"{where}: {exc}") from None
