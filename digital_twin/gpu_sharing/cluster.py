"""Nodes with GPUs shared at milli-GPU granularity, and their free resources.

:class:`GpuCluster` is fixed (what each node has); :class:`ClusterState` changes (what is still
free) and only :meth:`ClusterState.allocate` changes it. GPU slots are padded to the largest
node's GPU count: a padded slot has 0 free milli-GPUs forever, so no request ever fits it and it
adds nothing to any sum.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from digital_twin.errors import SpecError
from digital_twin.fleet import fleet_from_alibaba_gpu_csv
from digital_twin.gpu_sharing.fragmentation import TaskTypes, node_fragmentation

MILLI = 1000
"""Milli-GPUs in one GPU."""


class Request(NamedTuple):
    """One pod's demand, bound to a cluster's GPU models.

    Attributes:
        cpu_milli: CPU in milli-cores (>= 0).
        mem_mib: Memory in MiB (>= 0).
        num_gpu: GPUs (0 for a CPU-only pod).
        per_gpu_milli: Milli-GPUs taken on each of its ``num_gpu`` GPUs (0 when ``num_gpu == 0``;
            below 1000 only for a shared-GPU pod, ``num_gpu == 1``).
        allowed: (num_models + 1,) bool: GPU models it may run on; the last entry is the
            CPU-only node "model" (true iff the pod has no GPU-model constraint).
    """

    cpu_milli: int
    mem_mib: int
    num_gpu: int
    per_gpu_milli: int
    allowed: np.ndarray


@dataclass(frozen=True, eq=False)
class GpuCluster:
    """What each of ``N`` nodes has.

    Attributes:
        node_ids: (N,) names.
        cpu_milli: (N,) int64 CPU capacity in milli-cores (> 0).
        mem_mib: (N,) int64 memory in MiB (> 0).
        gpu_count: (N,) int64 GPUs (>= 0).
        model_index: (N,) int64 index into ``models``; ``len(models)`` for a node without GPUs.
        models: The GPU model names, sorted.
    """

    node_ids: tuple[str, ...]
    cpu_milli: np.ndarray
    mem_mib: np.ndarray
    gpu_count: np.ndarray
    model_index: np.ndarray
    models: tuple[str, ...]
    max_gpus: int = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.node_ids)
        if n == 0:
            raise SpecError("GpuCluster: no nodes")
        for name in ("cpu_milli", "mem_mib", "gpu_count", "model_index"):
            value = np.asarray(getattr(self, name), dtype=np.int64)
            if value.shape != (n,):
                raise SpecError(f"GpuCluster: {name} has shape {value.shape}, expected ({n},)")
            value.flags.writeable = False
            object.__setattr__(self, name, value)
        if (self.cpu_milli <= 0).any() or (self.mem_mib <= 0).any() or (self.gpu_count < 0).any():
            bad = int(np.flatnonzero((self.cpu_milli <= 0) | (self.mem_mib <= 0) | (self.gpu_count < 0))[0])
            raise SpecError(
                f"GpuCluster: node {self.node_ids[bad]!r} has a non-positive CPU or memory or negative GPUs"
            )
        no_gpu = self.model_index == len(self.models)
        if ((self.gpu_count == 0) != no_gpu).any() or (self.model_index < 0).any():
            raise SpecError("GpuCluster: a node has GPUs without a model, or a model without GPUs")
        object.__setattr__(self, "max_gpus", max(int(self.gpu_count.max()), 1))

    @classmethod
    def from_node_csv(cls, path: str | Path) -> GpuCluster:
        """Read an Alibaba GPU 2023 node list (``sn,cpu_milli,memory_mib,gpu,model``).

        Raises:
            TraceError: As :func:`~digital_twin.fleet.fleet_from_alibaba_gpu_csv` (file and row named).
        """
        fleet = fleet_from_alibaba_gpu_csv(path)
        models = tuple(sorted({n.gpu_model for n in fleet if n.gpu_model is not None}))
        index = {m: i for i, m in enumerate(models)}
        return cls(
            node_ids=tuple(n.node_id for n in fleet),
            cpu_milli=np.array([round(n.cpu_cores * 1000) for n in fleet]),
            mem_mib=np.array([round(n.mem_gb * 1024) for n in fleet]),
            gpu_count=np.array([n.gpu_count for n in fleet]),
            model_index=np.array([index.get(n.gpu_model, len(models)) if n.gpu_model else len(models) for n in fleet]),
            models=models,
        )

    @property
    def num_nodes(self) -> int:
        """``N``."""
        return len(self.node_ids)

    @property
    def capacity_milli(self) -> int:
        """All GPUs of the cluster, in milli-GPUs."""
        return int(self.gpu_count.sum()) * MILLI


class ClusterState:
    """Free resources of a :class:`GpuCluster`, and (with a target workload) each node's ``F_n(M)``.

    Attributes:
        cluster: The nodes.
        cpu_free: (N,) int64 free milli-cores.
        mem_free: (N,) int64 free MiB.
        gpu_free: (N, max_gpus) int64 free milli-GPUs per GPU slot (1000 on an idle GPU, 0 on a
            padded slot beyond the node's ``gpu_count``).
        workload: The target workload ``M`` of :attr:`node_frag`, or ``None``.
        node_frag: (N,) float64 ``F_n(M)`` in milli-GPUs, kept current by :meth:`allocate`
            (zeros without a workload).
    """

    def __init__(self, cluster: GpuCluster, workload: TaskTypes | None = None) -> None:
        self.cluster = cluster
        self.cpu_free = cluster.cpu_milli.copy()
        self.mem_free = cluster.mem_mib.copy()
        slots = np.arange(cluster.max_gpus)[None, :] < cluster.gpu_count[:, None]
        self.gpu_free = np.where(slots, MILLI, 0).astype(np.int64)
        self.workload = workload
        self.node_frag = np.zeros(cluster.num_nodes)
        if workload is not None and workload.allowed.shape[1] != len(cluster.models) + 1:
            raise SpecError(
                f"ClusterState: the workload knows {workload.allowed.shape[1] - 1} GPU models, the cluster "
                f"{len(cluster.models)} ({', '.join(cluster.models)}); "
                "build it with target_workload(pods, cluster.models)"
            )
        if workload is not None:
            self.node_frag = node_fragmentation(self.cpu_free, self.gpu_free, cluster.model_index, workload)

    def copy(self) -> ClusterState:
        """An independent copy (same cluster and workload)."""
        other = object.__new__(ClusterState)
        other.cluster, other.workload = self.cluster, self.workload
        other.cpu_free, other.mem_free = self.cpu_free.copy(), self.mem_free.copy()
        other.gpu_free, other.node_frag = self.gpu_free.copy(), self.node_frag.copy()
        return other

    def allocate(self, node: int, gpus: tuple[int, ...], request: Request) -> None:
        """Take ``request`` on ``node``, ``per_gpu_milli`` from each GPU slot in ``gpus``.

        Raises:
            SpecError: ``gpus`` is not ``num_gpu`` distinct slots, or the node lacks CPU,
                memory or milli-GPUs on one of them (nothing is changed then).
        """
        where = f"node {self.cluster.node_ids[node]!r}"
        if len(set(gpus)) != request.num_gpu or len(gpus) != request.num_gpu:
            raise SpecError(f"{where}: {request.num_gpu} GPU(s) requested, got slots {gpus}")
        if not request.allowed[self.cluster.model_index[node]] and request.num_gpu > 0:
            raise SpecError(f"{where}: GPU model not allowed for the request")
        slots = list(gpus)
        if (
            self.cpu_free[node] < request.cpu_milli
            or self.mem_free[node] < request.mem_mib
            or (self.gpu_free[node, slots] < request.per_gpu_milli).any()
        ):
            raise SpecError(f"{where}: not enough free CPU, memory or GPU for {request[:4]}")
        self.cpu_free[node] -= request.cpu_milli
        self.mem_free[node] -= request.mem_mib
        self.gpu_free[node, slots] -= request.per_gpu_milli
        if self.workload is not None:
            self.node_frag[node] = node_fragmentation(
                self.cpu_free[node : node + 1],
                self.gpu_free[node : node + 1],
                self.cluster.model_index[node : node + 1],
                self.workload,
            )[0]

    def feasible(self, request: Request) -> np.ndarray:
        """(N,) bool: nodes with enough free CPU, memory and GPUs of an allowed model for ``request``."""
        ok = (self.cpu_free >= request.cpu_milli) & (self.mem_free >= request.mem_mib)
        if request.num_gpu == 0:
            return ok
        fits = (self.gpu_free >= request.per_gpu_milli).sum(axis=1) >= request.num_gpu
        return ok & fits & request.allowed[self.cluster.model_index]

    @property
    def allocated_milli(self) -> int:
        """Milli-GPUs taken so far."""
        return self.cluster.capacity_milli - int(self.gpu_free.sum())


def fragmentation_rate(state: ClusterState) -> float:
    """The cluster's fragmentation over its unallocated milli-GPUs, in [0, 1].

    NaN when nothing is unallocated (or the cluster has no GPUs).

    Raises:
        ValueError: The state has no target workload.
    """
    if state.workload is None:
        raise ValueError("fragmentation_rate: the cluster state has no target workload")
    unallocated = int(state.gpu_free.sum())
    return float(state.node_frag.sum()) / unallocated if unallocated > 0 else float("nan")
