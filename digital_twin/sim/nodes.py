"""The nodes' part of the twin's state: free resources, up or down, the jobs running on each.

One :class:`NodeState` per twin state, changed only by the event handlers
(:mod:`digital_twin.sim.event_handlers`). Resources are whole units (millicores, MiB, GPUs), so
allocation and release are exact; every list is indexed by node. The handlers mark each node they
change (:meth:`NodeState.touch`), so that readers keeping arrays of the node state
(:class:`~digital_twin.sim.node_arrays.NodeArrays`) update only those nodes.
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
    touched: list[int]
    """The nodes changed since a reader last took them (:meth:`take_touched`), each once."""
    is_touched: list[bool]
    """``(N,)`` whether the node is in ``touched``."""

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
            touched=[],
            is_touched=[False] * n,
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
            touched=self.touched.copy(),
            is_touched=self.is_touched.copy(),
        )

    def touch(self, i: int) -> None:
        """Node ``i`` changed (its free resources, running jobs or being up)."""
        if not self.is_touched[i]:
            self.is_touched[i] = True
            self.touched.append(i)

    def take_touched(self) -> list[int]:
        """The nodes changed since the last call (in the order first changed), forgotten here."""
        touched = self.touched
        if touched:
            self.touched = []
            is_touched = self.is_touched
            for i in touched:
                is_touched[i] = False
        return touched

    def __reduce__(self) -> tuple[type[NodeState], tuple[object, ...]]:
        """Pickle field by field (compiled, the class has no default pickling)."""
        return NodeState, tuple(getattr(self, field.name) for field in fields(NodeState))
