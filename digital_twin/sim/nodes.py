"""The nodes' part of the twin's state: free resources, up or down, the jobs running on each.

One :class:`NodeState` per twin state, changed only by the event handlers
(:mod:`digital_twin.sim.event_handlers`). Resources are whole units (millicores, MiB, GPUs), so
allocation and release are exact; every list is indexed by node.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from digital_twin.sim.constants import TwinConstants


@dataclass(slots=True, eq=False)
class NodeState:
    """Per node (``N`` nodes): what is free, whether it is up, and what runs there.

    Invariant: a node's free resources are its capacity less the requests of the jobs in
    ``node_jobs``.
    """

    free_cpu_m: list[int]
    """``(N,)`` free allocatable millicores."""
    free_mem_mib: list[int]
    """``(N,)`` free allocatable MiB."""
    free_gpus: list[int]
    """``(N,)`` free GPUs."""
    up: list[bool]
    """``(N,)`` whether the node is up (a spot node is down while an outage lasts)."""
    node_jobs: list[list[int]]
    """``(N,)`` the jobs running on the node, in start order."""
    running_counts: list[int]
    """``(3 * N,)`` running jobs per workload type and node, flat: index ``type * N + node``
    (types in ``WORKLOAD_TYPES`` order)."""

    @classmethod
    def initial(cls, c: TwinConstants) -> NodeState:
        """Every node up and empty."""
        n = c.n_nodes
        return cls(
            free_cpu_m=list(c.cpu_m),
            free_mem_mib=list(c.mem_mib),
            free_gpus=list(c.gpus),
            up=[True] * n,
            node_jobs=[[] for _ in range(n)],
            running_counts=[0] * (3 * n),
        )

    def copy(self) -> NodeState:
        """An independent copy, O(nodes + running jobs)."""
        return NodeState(
            free_cpu_m=self.free_cpu_m.copy(),
            free_mem_mib=self.free_mem_mib.copy(),
            free_gpus=self.free_gpus.copy(),
            up=self.up.copy(),
            node_jobs=[jobs.copy() for jobs in self.node_jobs],
            running_counts=self.running_counts.copy(),
        )

    def __reduce__(self) -> tuple[type[NodeState], tuple[object, ...]]:
        """Pickle field by field (compiled, the class has no default pickling)."""
        return NodeState, tuple(getattr(self, field.name) for field in fields(NodeState))
