"""The interface of a GPU-sharing placement policy, and the GPU choices policies share.

A policy sees a :class:`~digital_twin.gpu_sharing.ClusterState` and one pod's
:class:`~digital_twin.gpu_sharing.cluster.Request` and returns a :class:`Placement` (a node and
the GPU slots it takes) or ``None`` when no node can host the pod. It never changes the state:
the caller allocates and then calls :meth:`SharingPolicy.placed`. Ties between equally scored
candidates follow the policy's tie rule (:data:`TIE_RULES`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import NamedTuple

import numpy as np

from digital_twin.errors import SpecError
from digital_twin.gpu_sharing import MILLI, ClusterState
from digital_twin.gpu_sharing.cluster import Request

TIE_TOLERANCE = 1e-9
"""Scores this close to the best count as ties."""

TIE_RULES: tuple[str, ...] = ("random", "node-order")
"""How ties between equally scored candidates are broken: ``random``, uniformly with the policy's
seeded generator (the stock Kubernetes scheduler draws among its best nodes), or ``node-order``,
the candidate on the lowest node index (a fixed node order: it reproduces the numbers FGD's
artifact publishes, docs/fragmentation.md). ``random``, the policy, draws its node either way."""


class Placement(NamedTuple):
    """A node index and the GPU slots (``num_gpu`` distinct indices, empty without GPUs)."""

    node: int
    gpus: tuple[int, ...]


class SharingPolicy(ABC):
    """Chooses where each pod goes; subclasses implement :meth:`choose`."""

    name: str = ""

    def __init__(self, seed: int | np.random.Generator = 0, ties: str = "random") -> None:
        if ties not in TIE_RULES:
            raise SpecError(f"unknown tie rule {ties!r}; known: {', '.join(TIE_RULES)}")
        self.rng = np.random.default_rng(seed)
        self.ties = ties

    def place(self, state: ClusterState, request: Request) -> Placement | None:
        """Where ``request`` goes, or ``None`` when no node has room for it."""
        nodes = np.flatnonzero(state.feasible(request))
        if nodes.size == 0:
            return None
        return self.choose(state, request, nodes)

    @abstractmethod
    def choose(self, state: ClusterState, request: Request, nodes: np.ndarray) -> Placement:
        """Pick among ``nodes`` ((k,) int, k >= 1), each of which can host ``request``."""

    def placed(self, placement: Placement, request: Request) -> None:  # noqa: B027  # an optional hook
        """Called after the caller allocated ``request`` at ``placement`` (a no-op by default)."""

    def best(self, scores: np.ndarray, nodes: np.ndarray, maximize: bool = False) -> int:
        """One of ``nodes`` whose score is best (ties by :meth:`tie_break`)."""
        signed = -scores if maximize else scores
        return self.tie_break(nodes[signed <= signed.min() + TIE_TOLERANCE])

    def tie_break(self, tied: np.ndarray) -> int:
        """One of ``tied`` ((k,) int in ascending node order, k >= 1) by the policy's tie rule.

        ``node-order`` takes the first; ``random`` draws uniformly (no draw when k == 1).
        """
        if tied.size == 1 or self.ties == "node-order":
            return int(tied[0])
        return int(self.rng.choice(tied))


def tightest_gpus(state: ClusterState, node: int, request: Request) -> tuple[int, ...]:
    """The GPU slots ``request`` takes on ``node`` when packed tightly.

    A shared-GPU pod goes to the GPU with the least free milli-GPUs that still fits it (lowest
    slot on ties); whole GPUs are the lowest fully free slots; a CPU-only pod takes none.
    """
    if request.num_gpu == 0:
        return ()
    free = state.gpu_free[node]
    if request.per_gpu_milli < MILLI:
        fitting = np.where(free >= request.per_gpu_milli, free, MILLI + 1)
        return (int(np.argmin(fitting)),)
    return tuple(int(i) for i in np.flatnonzero(free >= MILLI)[: request.num_gpu])


def random_gpus(state: ClusterState, node: int, request: Request, rng: np.random.Generator) -> tuple[int, ...]:
    """``num_gpu`` GPU slots of ``node`` that fit ``request``, drawn uniformly at random."""
    if request.num_gpu == 0:
        return ()
    fitting = np.flatnonzero(state.gpu_free[node] >= request.per_gpu_milli)
    return tuple(sorted(int(i) for i in rng.choice(fitting, size=request.num_gpu, replace=False)))
