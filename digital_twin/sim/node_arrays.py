"""The node state as numpy arrays, kept up to date node by node: what observations and views read.

The simulator keeps its node state in Python lists (:class:`~digital_twin.sim.nodes.NodeState`:
what its event loop reads fastest, one node at a time). Readers that want whole columns (an
env's observation, an agent's view, the fit of the current job as a mask) read
:class:`NodeArrays` instead: preallocated arrays that :meth:`NodeArrays.update` brings up to date
for the nodes the events changed since (the handlers mark them), so a read costs the nodes that
changed, not the fleet. ``changed_at`` says which rows changed at which update, so a reader that
keeps its own table (the observation encoder) updates only those rows too.
"""

from __future__ import annotations

import numpy as np

from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.nodes import NodeState

FREE_CPU_M, FREE_MEM_MIB, FREE_GPUS, UP, RUNNING = 0, 1, 2, 3, 4
"""Rows of :attr:`NodeArrays.values`; the running counts are the last three (``WORKLOAD_TYPES`` order)."""
N_COLUMNS = 7
_FEW = 4  # up to this many changed nodes are written row by row; more in one vectorised assignment
VECTOR_FIT_NODES = 256
"""From this many nodes on, :meth:`NodeArrays.fit` computes a fit with a few array operations
rather than converting the twin's list (about equal cost there)."""


class NodeArrays:
    """``(7, N)`` float64 node state (``N`` nodes) and when each node last changed; the arrays are read-only.

    Attributes:
        values: ``(7, N)``, a row per quantity (each contiguous): free millicores, free MiB,
            free GPUs, up (1.0 or 0.0), and running latency-critical, batch and stream jobs
            (whole numbers, exact in float64).
        changed_at: ``(N,)`` int64, the update at which each node last changed (all nodes at the
            first update, and whenever the state followed is replaced: a reset or a restore).
        updates: Updates that changed something, so far (``changed_at > k`` marks the nodes
            changed since update ``k``).
        last: The nodes the latest update changed (every node after a whole read: ``None``).
        cpu_m: ``(N,)`` float64 each node's allocatable millicores (never changes).
    """

    def __init__(self, c: TwinConstants) -> None:
        n = c.n_nodes
        self._values = np.zeros((N_COLUMNS, n))
        self._changed_at = np.zeros(n, dtype=np.int64)
        self.values = self._values.view()
        self.changed_at = self._changed_at.view()
        self.values.flags.writeable = self.changed_at.flags.writeable = False
        self._cells = self._values.reshape(-1).data.cast("B").cast("d")  # scalar writes without numpy's per-call cost
        self._stamps = self._changed_at.data.cast("B").cast("q")
        self.cells = self._cells.toreadonly()
        """``values`` flat (``7 * N``: quantity ``q`` of node ``i`` at ``q * N + i``), as a read-only memoryview:
        a few scalars are read faster than through numpy."""
        self.updates = 0
        self.last: list[int] | None = None
        self.cpu_m = np.array(c.cpu_m, dtype=np.float64)
        self.cpu_m.flags.writeable = False
        self._n = n
        self._nodes: NodeState | None = None  # the state followed (a new one is read whole)
        self._candidates: dict[int, np.ndarray] = {}  # id of a candidate mask list of the constants -> (N,) bool
        self._scratch = np.zeros(n, dtype=bool)  # fit's intermediate comparisons
        self._constants = c

    def update(self, nodes: NodeState) -> None:
        """Bring the arrays up to date with ``nodes``: only the nodes changed since, unless it is a new state."""
        if nodes is not self._nodes:
            self._nodes = nodes
            nodes.take_touched()
            self.updates += 1
            self.last = None
            n, values = self._n, self._values
            values[FREE_CPU_M] = nodes.free_cpu_m
            values[FREE_MEM_MIB] = nodes.free_mem_mib
            values[FREE_GPUS] = nodes.free_gpus
            values[UP] = nodes.up
            values[RUNNING:] = np.reshape(nodes.running_counts, (3, n))
            self._changed_at[:] = self.updates
            return
        touched = nodes.take_touched()
        if not touched:
            return
        self.updates += 1
        self.last = touched
        if len(touched) <= _FEW:
            cells, n, running = self._cells, self._n, nodes.running_counts
            for i in touched:
                cells[i] = float(nodes.free_cpu_m[i])
                cells[n + i] = float(nodes.free_mem_mib[i])
                cells[2 * n + i] = float(nodes.free_gpus[i])
                cells[3 * n + i] = 1.0 if nodes.up[i] else 0.0
                cells[4 * n + i] = float(running[i])
                cells[5 * n + i] = float(running[n + i])
                cells[6 * n + i] = float(running[2 * n + i])
                self._stamps[i] = self.updates
        else:
            self._values[:, touched] = np.array([_row(nodes, i, self._n) for i in touched]).T
            self._changed_at[touched] = self.updates

    def fit(self, j: int, mask: list[bool]) -> np.ndarray:
        """``(N,)`` bool, a fresh array: where job ``j`` fits now, as the twin's fit ``mask`` (a list) says.

        With many nodes and no required placement rule on ``j``, computed from the arrays (the
        same nodes: static candidates, up, enough free cpu, memory and GPUs); otherwise ``mask``
        converted.
        """
        c = self._constants
        rules = c.rules
        if self._n < VECTOR_FIT_NODES or (rules is not None and rules.required[j]):
            return np.array(mask, dtype=bool)
        key = id(c.candidate_mask[j])
        candidates = self._candidates.get(key)
        if candidates is None:
            candidates = self._candidates[key] = np.array(c.candidate_mask[j], dtype=bool)
        v, scratch = self.values, self._scratch
        fits = np.greater_equal(v[FREE_CPU_M], c.req_cpu_m[j])
        fits &= np.greater_equal(v[FREE_MEM_MIB], c.req_mem_mib[j], out=scratch)
        fits &= np.greater_equal(v[FREE_GPUS], c.req_gpus[j], out=scratch)
        fits &= np.not_equal(v[UP], 0.0, out=scratch)
        fits &= candidates
        return fits


def _row(nodes: NodeState, i: int, n: int) -> tuple[float, ...]:
    """Node ``i``'s column of :attr:`NodeArrays.values`."""
    running = nodes.running_counts
    return (
        float(nodes.free_cpu_m[i]), float(nodes.free_mem_mib[i]), float(nodes.free_gpus[i]),
        1.0 if nodes.up[i] else 0.0, float(running[i]), float(running[n + i]), float(running[2 * n + i]),
    )  # fmt: skip
