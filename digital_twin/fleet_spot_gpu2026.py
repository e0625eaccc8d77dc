"""Fleets from the node table of Alibaba's spot-GPU trace v2026 (``node_info_df.csv``, ASPLOS'26 "GFS").

The table has one row per node and four columns, in file order
``gpu_model,gpu_capacity_num,cpu_num,node_name`` (any order is read): the GPU model, GPUs on
the node, vCPUs on the node and an integer node id. The whole table has 4,278 nodes and 10,412
GPUs of the six models of :data:`SPOT_GPU_2026_MODELS`. It has no memory column, no price, no
CPU architecture and no spot flag; each is an assumption, a named constant below:

* memory: ``cpu_num x`` :data:`MEM_GB_PER_VCPU`;
* price: ``gpu_capacity_num x`` the model's :attr:`GpuModel.price_per_gpu_hour_usd`;
* VRAM per GPU: the model's :attr:`GpuModel.vram_gb`;
* arch :data:`ARCH` and instance :data:`INSTANCE` for every node (no interruptions).

A node's ``node_id`` is its ``node_name`` as written (e.g. ``"17"``); the fleet keeps file order.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from digital_twin._node_csv import read_node_csv
from digital_twin.errors import SpecError, TraceError, short_repr
from digital_twin.fleet import NodeSpec, validate_fleet

NODE_COLUMNS = ("gpu_model", "gpu_capacity_num", "cpu_num", "node_name")
"""The columns of ``node_info_df.csv``, in file order."""

MEM_GB_PER_VCPU = 4.0
"""Memory of a node per vCPU, in GB (GiB; the twin's ``mem_gb``). The table has no memory column.
4 GiB per core is the median memory per CPU core of the 1,213 GPU nodes of Alibaba's earlier
GPU cluster trace (v2023, the openb node list that :func:`digital_twin.fleet.fleet_from_alibaba_gpu_csv`
reads; their mean is 4.6): the same operator's GPU machines. A 128-vCPU node has 512 GB, a
192-vCPU node 768 GB."""

ARCH = "gpu-node"
"""Every node has GPUs, so every node is a ``gpu-node`` (the table names no CPU architecture)."""

INSTANCE = "on-demand"
"""Every node is on-demand, with no interruption rate. In the GFS trace "spot" is a class of
*jobs* (low-priority jobs that borrow GPUs idle in the high-priority quota and are preempted by
the scheduler), not of nodes: the table has no spot flag, and no cloud provider reclaims these
machines. Preemption of spot jobs is a scheduling decision, not a node event of the twin."""


@dataclass(frozen=True, slots=True)
class GpuModel:
    """What the twin assumes about one GPU model of the table.

    Attributes:
        price_per_gpu_hour_usd: On-demand price of one GPU for an hour, in USD (> 0).
        vram_gb: Memory of one GPU in GB (> 0).
        source: Where the numbers come from, in words (public price lists, or why assumed).
    """

    price_per_gpu_hour_usd: float
    vram_gb: float
    source: str


SPOT_GPU_2026_MODELS: Mapping[str, GpuModel] = MappingProxyType({
    "A10": GpuModel(
        1.00, 24.0,
        "the Alibaba GPU 2023 A10 price of digital_twin.fleet.ALIBABA_GPU_MODELS (about the public on-demand "
        "price of a one-A10 cloud instance, e.g. AWS g5.xlarge at $1.006/h); NVIDIA A10 datasheet: 24 GB",
    ),
    "A100-SXM4-80GB": GpuModel(
        5.12, 80.0,
        "AWS EC2 on-demand price list, p4de.24xlarge (8x A100 80 GB) at $40.97/h, divided by 8; 80 GB by name",
    ),
    "A800-SXM4-80GB": GpuModel(
        5.12, 80.0,
        "the A800 is the A100 80 GB with NVLink cut to 400 GB/s (NVIDIA's China-market variant) and has no "
        "public cloud list price outside China: priced as the A100 80 GB; 80 GB by name",
    ),
    "H800": GpuModel(
        12.29, 80.0,
        "the H800 is NVIDIA's China-market H100 (80 GB, reduced interconnect): priced as the H100 on the AWS "
        "EC2 on-demand price list, p5.48xlarge (8x H100 80 GB) at $98.32/h, divided by 8",
    ),
    "GPU-series-1": GpuModel(
        1.86, 48.0,
        "an undisclosed model (mostly one GPU per 192-vCPU node): assumed a 48 GB inference card (L20/L40S "
        "class), priced as AWS EC2 g6e.xlarge (1x L40S 48 GB) on-demand at $1.861/h",
    ),
    "GPU-series-2": GpuModel(
        5.12, 80.0,
        "an undisclosed model on 8-GPU 192-vCPU nodes, the shape of the H800 nodes: assumed an 80 GB "
        "training card priced as the A100 80 GB (the lower of the two known 80 GB prices)",
    ),
})
"""``gpu_model`` value -> :class:`GpuModel`; a model not in it is an error."""


def fleet_from_spot_gpu_2026_csv(path: str | Path, limit: int | None = None) -> tuple[NodeSpec, ...]:
    """Read a fleet from a spot-GPU 2026 node table (``gpu_model,gpu_capacity_num,cpu_num,node_name``).

    Args:
        path: The CSV file (header required; extra columns are ignored).
        limit: Keep only the first ``limit`` rows (``None``: all).

    Returns:
        One ``gpu-node`` on-demand :class:`NodeSpec` per row, in file order: ``cpu_num`` cores,
        ``cpu_num x MEM_GB_PER_VCPU`` GB, ``gpu_capacity_num`` GPUs of the row's model.

    Raises:
        TraceError: Missing file or column, not UTF-8, a ragged row, a count that is not a
            positive integer, an empty ``node_name`` or one seen before, an unknown ``gpu_model``,
            or no rows; the message names the file and line (header = line 1).
    """
    return validate_fleet(read_node_csv(Path(path), "node table", NODE_COLUMNS, "node_name", _node, limit))


def _positive_int(row: Mapping[str, str], column: str, where: str) -> int:
    """The column's integer > 0, small enough to be a float (a count beyond that is refused here, by name)."""
    text = (row[column] or "").strip()
    try:
        value = int(text)
    except ValueError:
        raise TraceError(f"{where}: column {column!r} must be an integer, got {short_repr(text)}") from None
    if value <= 0:
        raise TraceError(f"{where}: column {column!r} must be > 0, got {short_repr(value)}")
    if value > sys.float_info.max:
        raise TraceError(f"{where}: column {column!r} is too large to be a count ({len(text):,} digits)")
    return value


def _node(row: Mapping[str, str], where: str) -> NodeSpec:
    name = (row["node_name"] or "").strip()
    if not name:
        raise TraceError(f"{where}: column 'node_name' is empty")
    model = (row["gpu_model"] or "").strip()
    if model not in SPOT_GPU_2026_MODELS:
        raise TraceError(f"{where}: unknown gpu_model {short_repr(model)}; known: {sorted(SPOT_GPU_2026_MODELS)}")
    gpus = _positive_int(row, "gpu_capacity_num", where)
    vcpus = _positive_int(row, "cpu_num", where)
    spec = SPOT_GPU_2026_MODELS[model]
    try:
        return NodeSpec(
            name, ARCH, INSTANCE, float(vcpus), vcpus * MEM_GB_PER_VCPU,
            round(spec.price_per_gpu_hour_usd * gpus, 6), gpus, model, spec.vram_gb,
        )
    except SpecError as exc:  # e.g. a count above MAX_AMOUNT
        raise TraceError(f"{where}: {exc}") from None
