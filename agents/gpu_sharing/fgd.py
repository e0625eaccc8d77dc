"""Fragmentation Gradient Descent (Weng et al., ATC'23, section 4).

FGD places a pod on the node AND the GPU(s) that minimise the growth of the node's
fragmentation ``Delta = F_n(M)(after) - F_n(M)(before)`` for the target workload ``M`` held by
the cluster state. Candidates per feasible node: a shared-GPU pod may take any GPU that fits it
(GPUs with equal free amounts give the same after-state, so one of each is tried); whole GPUs
are the lowest fully free slots (all fully free GPUs are alike); a CPU-only pod changes only
the node's CPU. Ties follow the policy's tie rule (candidates are in node, then GPU order).

Speed: ``F_n`` depends on a node's free CPU only through which task types' CPU requests fit,
and not on the order of its GPUs, so candidates are reduced to distinct after-states
``(model, CPU class, sorted free GPUs)`` before ``F`` is evaluated; the result is exact.

:class:`FgdBestFitTiesPolicy` (``fgd-bestfit-ties``, not in the paper) breaks ties in ``Delta`` by
best-fit's score before chance.
"""

from __future__ import annotations

import numpy as np

from agents.gpu_sharing.base import TIE_TOLERANCE, Placement, SharingPolicy, tightest_gpus
from digital_twin.errors import SpecError
from digital_twin.gpu_sharing import MILLI, ClusterState, node_fragmentation
from digital_twin.gpu_sharing.cluster import Request


def candidates(state: ClusterState, request: Request, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every distinct placement of ``request`` on ``nodes``.

    Returns:
        ``(node, gpu, after)``: (K,) node index, (K,) GPU slot (-1 for none or for whole GPUs,
        whose slots :func:`tightest_gpus` gives) and (K, G) free milli-GPUs after placing.
    """
    free = state.gpu_free[nodes]
    per = request.per_gpu_milli
    if request.num_gpu == 0 or per >= MILLI:
        after = free.copy()
        if request.num_gpu:
            ranks = np.cumsum(free >= MILLI, axis=1)
            after[(free >= MILLI) & (ranks <= request.num_gpu)] -= MILLI
        return nodes, np.full(nodes.size, -1), after
    slots = free.shape[1]
    repeated = (free[:, :, None] == free[:, None, :]) & np.tri(slots, k=-1, dtype=bool).T[None, :, :]
    first = ~repeated.any(axis=1)  # (k, G): no lower slot has the same free amount
    rows, gpus = np.nonzero((free >= per) & first)
    after = free[rows].copy()
    after[np.arange(rows.size), gpus] -= per
    return nodes[rows], gpus, after


class FgdPolicy(SharingPolicy):
    """The candidate (node, GPUs) with the smallest increase of ``F_n(M)`` (module doc)."""

    name = "fgd"
    best_fit_ties = False
    """Break ties in ``Delta`` by best-fit's score (least CPU and GPU left) before the tie rule."""
    kubernetes_score = False
    """Choose as the artifact's Kubernetes plugin does (:class:`FgdKubernetesScorePolicy`)."""

    def choose(self, state: ClusterState, request: Request, nodes: np.ndarray) -> Placement:  # noqa: D102
        workload = state.workload
        if workload is None:
            raise SpecError("fgd: the cluster state has no target workload (ClusterState(cluster, workload))")
        node_of, gpu_of, after = candidates(state, request, nodes)
        cpu_after = state.cpu_free[node_of] - request.cpu_milli
        model = state.cluster.model_index[node_of]
        cpu_class = np.searchsorted(np.unique(workload.cpu_milli), cpu_after, side="right")
        keys = np.column_stack([model, cpu_class, np.sort(after, axis=1)])
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        frag = node_fragmentation(cpu_after[first], after[first], model[first], workload)
        delta = frag[inverse.ravel()] - state.node_frag[node_of]
        if self.kubernetes_score:
            return self._kubernetes_choice(state, request, node_of, gpu_of, delta)
        tied = np.flatnonzero(delta <= delta.min() + TIE_TOLERANCE * max(1.0, abs(float(delta.min()))))
        if self.best_fit_ties and tied.size > 1:
            cluster = state.cluster
            left = 0.5 * cpu_after[tied] / cluster.cpu_milli.max() + 0.5 * after[tied].sum(axis=1) / (
                MILLI * cluster.max_gpus
            )
            tied = tied[left <= left.min() + TIE_TOLERANCE]
        pick = self.tie_break(tied)
        node = int(node_of[pick])
        gpus = (int(gpu_of[pick]),) if gpu_of[pick] >= 0 else tightest_gpus(state, node, request)
        return Placement(node, gpus)

    def _kubernetes_choice(
        self, state: ClusterState, request: Request, node_of: np.ndarray, gpu_of: np.ndarray, delta: np.ndarray
    ) -> Placement:
        """The artifact's rule: an integer score per candidate, a node among the best by the tie rule, its lowest GPU.

        Score ``int(100 sigmoid(-Delta / 1000))``; a node scores its best candidate; the GPU is
        the node's lowest slot of that score.
        """
        score = np.floor(100.0 / (1.0 + np.exp(delta / 1000.0))).astype(np.int64)
        best = score.max()
        nodes = np.unique(node_of[score == best])
        node = self.tie_break(nodes)
        mine = np.flatnonzero((node_of == node) & (score == best))
        slot = int(gpu_of[mine].min())
        gpus = (slot,) if slot >= 0 else tightest_gpus(state, node, request)
        return Placement(node, gpus)


class FgdKubernetesScorePolicy(FgdPolicy):
    """FGD scored as the artifact's Kubernetes plugin scores it (``fgd-k8s``; docs/fragmentation.md).

    The decrease of ``F_n(M)`` becomes an integer node score ``int(100 x sigmoid(-Delta / 1000))``
    (about 40 milli-GPUs per point near 0); a node scores its best GPU candidate; the node is
    one of the best-scoring ones by the tie rule (``random`` is Kubernetes' reservoir sampling,
    ``node-order`` reproduces the artifact's published numbers) and, on it, the lowest-numbered
    GPU of that score.
    """

    name = "fgd-k8s"
    kubernetes_score = True


class FgdBestFitTiesPolicy(FgdPolicy):
    """FGD whose equal-``Delta`` candidates go to the one best-fit prefers (then at random).

    Not in the paper: many candidates tie (every CPU-only node for a CPU-only pod, every node a
    shared-GPU pod leaves equally fragmented), and spreading them at random uses up CPU on GPU
    nodes (docs/fragmentation.md).
    """

    name = "fgd-bestfit-ties"
    best_fit_ties = True
