"""Capacity fill (FGD's Monte-Carlo workload inflation, Weng et al., ATC'23 section 6.1).

Pods are drawn from a pod list uniformly WITH replacement and submitted one by one to an empty
cluster; none ever finishes; a pod no node can host fails and is dropped. Submission stops once
the arrived (requested) GPU demand reaches ``max_load`` times the cluster's GPU capacity. At
every whole percent of arrived load (0, 1, ..., 100 * max_load) the run records the GPU
allocation ratio (allocated / capacity) and the fragmentation rate (FGD's fragmentation over
unallocated GPU), both as the state after the pod that made the arrived load reach it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agents.gpu_sharing import make_policy
from digital_twin.errors import SpecError
from digital_twin.gpu_sharing import ClusterState, GpuCluster, PodTable, TaskTypes, fragmentation_rate

DEFAULT_MAX_LOAD = 1.3
"""Arrived GPU demand at which a fill stops, as a share of capacity (the artifact's 130 %)."""


@dataclass(frozen=True)
class FillCurve:
    """One fill: values at arrived load ``0, 1, ..., round(100 * max_load)`` percent of capacity.

    Attributes:
        policy: Policy name.
        seed: The run's seed.
        load_pct: (L,) int arrived GPU demand, % of capacity.
        allocation: (L,) float GPU allocation ratio in [0, 1].
        frag_rate: (L,) float fragmentation rate in [0, 1] (NaN when nothing is unallocated).
        submitted: Pods submitted.
        failed: Pods no node could host.
    """

    policy: str
    seed: int
    load_pct: np.ndarray
    allocation: np.ndarray
    frag_rate: np.ndarray
    submitted: int
    failed: int


def check_fillable(cluster: GpuCluster, pods: PodTable) -> None:
    """Reject what would make a fill meaningless.

    Raises:
        SpecError: No pods, no GPU in the cluster, no pod asking for GPU, or a pod asking more
            GPUs (or more CPU or memory) than any node has (the first such pod is named).
    """
    if len(pods) == 0:
        raise SpecError("capacity fill: the pod list is empty")
    if cluster.capacity_milli == 0:
        raise SpecError("capacity fill: the cluster has no GPU")
    if not (pods.gpu_demand_milli() > 0).any():
        raise SpecError("capacity fill: no pod in the list asks for a GPU")
    too_big = (
        (pods.num_gpu > cluster.gpu_count.max())
        | (pods.cpu_milli > cluster.cpu_milli.max())
        | (pods.mem_mib > cluster.mem_mib.max())
    )
    if too_big.any():
        i = int(np.flatnonzero(too_big)[0])
        raise SpecError(
            f"capacity fill: pod {pods.names[i]!r} asks {pods.num_gpu[i]} GPU(s), {pods.cpu_milli[i]} milli-CPU, "
            f"{pods.mem_mib[i]} MiB: more than any node has ({cluster.gpu_count.max()} GPUs, "
            f"{cluster.cpu_milli.max()} milli-CPU, {cluster.mem_mib.max()} MiB)"
        )


def run_fill(
    cluster: GpuCluster,
    pods: PodTable,
    workload: TaskTypes,
    policy_name: str,
    seed: int,
    max_load: float = DEFAULT_MAX_LOAD,
    ties: str = "random",
) -> FillCurve:
    """One capacity fill of ``cluster`` with ``pods`` under ``policy_name``; see the module doc.

    ``ties`` is the policy's tie rule (:data:`agents.gpu_sharing.TIE_RULES`).

    The pod draws use ``seed``'s first child generator and the policy its second, so every
    policy sees the same pod sequence for a seed.

    Raises:
        SpecError: As :func:`check_fillable`, an unknown policy or tie rule, or ``max_load`` not in (0, 10].
    """
    check_fillable(cluster, pods)
    if not 0.0 < max_load <= 10.0:
        raise SpecError(f"capacity fill: max_load must be in (0, 10], got {max_load!r}")
    draw_rng, policy_rng = np.random.default_rng(seed).spawn(2)
    policy = make_policy(policy_name, policy_rng, ties)
    state = ClusterState(cluster, workload)
    requests = pods.requests(cluster.models)
    demand = pods.gpu_demand_milli()
    capacity = cluster.capacity_milli
    levels = np.arange(round(100 * max_load) + 1)
    allocation = np.full(levels.size, np.nan)
    frag = np.full(levels.size, np.nan)
    arrived = submitted = failed = next_level = 0
    while next_level < levels.size:
        while next_level < levels.size and arrived * 100 >= levels[next_level] * capacity:
            allocation[next_level] = state.allocated_milli / capacity
            frag[next_level] = fragmentation_rate(state)
            next_level += 1
        if next_level == levels.size:
            break
        i = int(draw_rng.integers(len(pods)))
        arrived += int(demand[i])
        submitted += 1
        placement = policy.place(state, requests[i])
        if placement is None:
            failed += 1
            continue
        state.allocate(placement.node, placement.gpus, requests[i])
        policy.placed(placement, requests[i])
    return FillCurve(policy_name, seed, levels, allocation, frag, submitted, failed)
