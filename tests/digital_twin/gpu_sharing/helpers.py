"""Small hand-built GPU-sharing clusters and pod lists, and an independent brute-force ``F_n(M)``."""

from __future__ import annotations

import numpy as np

from digital_twin.gpu_sharing import ClusterState, GpuCluster, PodTable, TaskTypes

MODELS = ("A", "B")


def cluster(gpus: list[int], cpu: list[int] | None = None, models: list[int] | None = None) -> GpuCluster:
    """Nodes with ``gpus[i]`` GPUs, ``cpu[i]`` milli-cores (default 32000), 64 GiB, model index
    ``models[i]`` (default 0 with GPUs, 2 = none without)."""
    n = len(gpus)
    return GpuCluster(
        node_ids=tuple(f"n{i}" for i in range(n)),
        cpu_milli=np.array(cpu or [32000] * n),
        mem_mib=np.full(n, 65536),
        gpu_count=np.array(gpus),
        model_index=np.array(models or [0 if g else len(MODELS) for g in gpus]),
        models=MODELS,
    )


def pods(rows: list[tuple[int, int, int, int]], specs: list[str] | None = None) -> PodTable:
    """Pods from ``(cpu_milli, mem_mib, num_gpu, gpu_milli)`` rows."""
    arr = np.array(rows, dtype=np.int64).reshape(-1, 4)
    return PodTable(
        names=tuple(f"p{i}" for i in range(len(rows))),
        cpu_milli=arr[:, 0],
        mem_mib=arr[:, 1],
        num_gpu=arr[:, 2],
        gpu_milli=arr[:, 3],
        gpu_spec=tuple(specs or [""] * len(rows)),
    )


SMALL_CLUSTER = cluster([0, 1, 2, 2, 4, 8], cpu=[16000, 8000, 16000, 24000, 32000, 64000], models=[2, 1, 0, 1, 0, 0])
"""Six nodes: CPU-only, 1 x B, 2 x A, 2 x B, 4 x A, 8 x A."""
MIXED_PODS = pods(
    [
        (2000, 512, 1, 250),
        (4000, 1024, 1, 500),
        (1000, 256, 1, 1000),
        (6000, 2048, 2, 1000),
        (8000, 4096, 0, 0),
        (3000, 512, 4, 1000),
        (500, 128, 1, 700),
        (12000, 8192, 8, 1000),
    ],
    specs=["", "A", "", "B", "", "", "A|B", ""],
)
"""Shared, whole, multi-GPU and CPU-only pods, some bound to GPU models."""


def brute_node_frag(cpu_free: int, gpu_free: list[int], model: int, types: TaskTypes) -> float:
    """``F_n(M)`` by the paper's case list, one GPU and one task type at a time (no numpy)."""
    unallocated = sum(gpu_free)
    total = 0.0
    for t in range(len(types.prob)):
        cpu, k, milli = int(types.cpu_milli[t]), int(types.num_gpu[t]), int(types.gpu_milli[t])
        if k == 0:
            frag = unallocated
        else:
            fitting = [g for g in gpu_free if g >= milli]
            runs = bool(types.allowed[t][model]) and len(fitting) >= k and cpu_free >= cpu
            frag = sum(g for g in gpu_free if g < milli) if runs else unallocated
        total += float(types.prob[t]) * frag
    return total


def random_state(state: ClusterState, rng: np.random.Generator) -> None:
    """Take random milli-GPU and CPU amounts from every node (free amounts stay >= 0)."""
    for n in range(state.cluster.num_nodes):
        g = int(state.cluster.gpu_count[n])
        state.gpu_free[n, :g] = rng.choice([0, 100, 250, 500, 750, 1000, 1000], size=g)
        state.cpu_free[n] = int(rng.integers(0, state.cluster.cpu_milli[n] + 1))
    if state.workload is not None:
        from digital_twin.gpu_sharing import node_fragmentation

        state.node_frag = node_fragmentation(state.cpu_free, state.gpu_free, state.cluster.model_index, state.workload)
