"""The five baselines of FGD's evaluation (Weng et al., ATC'23, section 6.1), from their descriptions.

Scores use the node's free CPU (milli-cores) and its total free milli-GPUs, normalised by the
largest node's CPU and by ``1000 * max_gpus``. Except Random, each policy packs a shared-GPU pod
on the fullest GPU that fits it (:func:`~agents.gpu_sharing.base.tightest_gpus`).

* Random: a uniformly random feasible node, random fitting GPUs (whatever the tie rule).
* DotProduct (Tetris-style alignment): the node minimising the dot product of its free
  (CPU, GPU) vector and the pod's request vector.
* GPU-Clustering: pods of the same GPU request class are kept together (every shared-GPU pod
  is one class, ``k`` whole GPUs another, as in the artifact):
  nodes hosting only that request class, then nodes hosting it among others, then nodes
  without GPU pods, then nodes hosting only other classes; within a tier the node with the
  least free GPU. Every feasible node ties for a CPU-only pod.
* GPU-Packing: a shared-GPU pod prefers a partly used GPU (the fullest), then idle GPUs on a
  node already in use, then an idle node (the one with fewest GPUs); multi-GPU pods prefer in
  use nodes over idle ones the same way. Every feasible node ties for a CPU-only pod.
* Best-Fit: the node minimising ``0.5 (cpu_free - cpu) / cpu_max + 0.5 (gpu_free - gpu) / gpu_max``.
"""

from __future__ import annotations

import numpy as np

from agents.gpu_sharing.base import Placement, SharingPolicy, random_gpus, tightest_gpus
from digital_twin.gpu_sharing import MILLI, ClusterState
from digital_twin.gpu_sharing.cluster import Request


def _free_and_scale(state: ClusterState, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Free CPU and free milli-GPUs of ``nodes``, and the two normalisers."""
    cluster = state.cluster
    return (
        state.cpu_free[nodes].astype(np.float64),
        state.gpu_free[nodes].sum(axis=1).astype(np.float64),
        float(cluster.cpu_milli.max()),
        float(MILLI * cluster.max_gpus),
    )


def _request_class(request: Request) -> int:
    """GPU-Clustering's class of a GPU pod: 0 for a shared GPU, ``k`` for ``k`` whole GPUs."""
    return 0 if request.per_gpu_milli < MILLI else request.num_gpu


class RandomPolicy(SharingPolicy):
    """A uniformly random feasible node, random fitting GPUs."""

    name = "random"

    def choose(self, state: ClusterState, request: Request, nodes: np.ndarray) -> Placement:  # noqa: D102
        node = int(self.rng.choice(nodes))
        return Placement(node, random_gpus(state, node, request, self.rng))


class DotProductPolicy(SharingPolicy):
    """The node minimising free (CPU, GPU) . requested (CPU, GPU), both normalised."""

    name = "dotproduct"

    def choose(self, state: ClusterState, request: Request, nodes: np.ndarray) -> Placement:  # noqa: D102
        cpu, gpu, cpu_max, gpu_max = _free_and_scale(state, nodes)
        demand = request.num_gpu * request.per_gpu_milli
        scores = cpu / cpu_max * (request.cpu_milli / cpu_max) + gpu / gpu_max * (demand / gpu_max)
        node = self.best(scores, nodes)
        return Placement(node, tightest_gpus(state, node, request))


class BestFitPolicy(SharingPolicy):
    """The node with the least weighted free CPU and GPU left after placing."""

    name = "best-fit"

    def choose(self, state: ClusterState, request: Request, nodes: np.ndarray) -> Placement:  # noqa: D102
        cpu, gpu, cpu_max, gpu_max = _free_and_scale(state, nodes)
        demand = request.num_gpu * request.per_gpu_milli
        scores = 0.5 * (cpu - request.cpu_milli) / cpu_max + 0.5 * (gpu - demand) / gpu_max
        node = self.best(scores, nodes)
        return Placement(node, tightest_gpus(state, node, request))


class GpuPackingPolicy(SharingPolicy):
    """Partly used GPUs first, then idle GPUs on used nodes, then the smallest idle node."""

    name = "gpu-packing"

    def choose(self, state: ClusterState, request: Request, nodes: np.ndarray) -> Placement:  # noqa: D102
        if request.num_gpu == 0:
            return Placement(self.tie_break(nodes), ())
        free = state.gpu_free[nodes]
        gpus = state.cluster.gpu_count[nodes]
        idle_node = (free == MILLI).sum(axis=1) == gpus
        if request.per_gpu_milli < MILLI:
            tight = np.where(free >= request.per_gpu_milli, free, MILLI + 1).min(axis=1)
            on_used_gpu = tight < MILLI
        else:
            tight = np.full(nodes.size, MILLI)
            on_used_gpu = np.zeros(nodes.size, dtype=bool)
        scores = np.where(
            on_used_gpu, 3.0 - tight / MILLI, np.where(idle_node, 1.0 - gpus / (state.cluster.max_gpus + 1.0), 1.5)
        )
        node = self.best(scores, nodes, maximize=True)
        return Placement(node, tightest_gpus(state, node, request))


class GpuClusteringPolicy(SharingPolicy):
    """Pods with the same GPU request together (tiers in the module doc)."""

    name = "gpu-clustering"

    def __init__(self, seed: int | np.random.Generator = 0, ties: str = "random") -> None:
        super().__init__(seed, ties)
        self.hosts: dict[int, np.ndarray] = {}  # request class -> (N,) bool
        self.classes: np.ndarray | None = None  # (N,) int: request classes on each node

    def choose(self, state: ClusterState, request: Request, nodes: np.ndarray) -> Placement:  # noqa: D102
        if request.num_gpu == 0:
            return Placement(self.tie_break(nodes), ())
        if self.classes is None:
            self.classes = np.zeros(state.cluster.num_nodes, dtype=np.int64)
        key = _request_class(request)
        same = self.hosts[key][nodes] if key in self.hosts else np.zeros(nodes.size, dtype=bool)
        count = self.classes[nodes]
        tier = np.where(same, np.where(count == 1, 3, 2), np.where(count == 0, 1, 0))
        _, gpu, _, gpu_max = _free_and_scale(state, nodes)
        node = self.best(tier + 0.999 * (1.0 - gpu / gpu_max), nodes, maximize=True)
        return Placement(node, tightest_gpus(state, node, request))

    def placed(self, placement: Placement, request: Request) -> None:
        """Record that ``placement.node`` now hosts the request's class."""
        if request.num_gpu == 0 or self.classes is None:
            return
        hosts = self.hosts.setdefault(_request_class(request), np.zeros(self.classes.size, dtype=bool))
        if not hosts[placement.node]:
            hosts[placement.node] = True
            self.classes[placement.node] += 1
