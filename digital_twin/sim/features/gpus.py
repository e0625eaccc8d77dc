"""The GPU tallies: allocated, fragmented and free GPUs, now and integrated from 0 (every episode has them).

The measure (FGD's fragmentation on whole GPUs) and the job mix it is taken against are
:mod:`digital_twin.sim.tables.gpu_fragmentation`'s; this feature keeps its sums exact as the
twin runs: a start or an end changes one node's free GPUs and millicores, an outage or a
recovery whether its GPUs count at all, and the clock integrates the present.
"""

from __future__ import annotations

from collections.abc import Sequence

from digital_twin.sim.constants import TwinConstants
from digital_twin.sim.core import CoreState, Feature
from digital_twin.sim.tables.gpu_fragmentation import GpuJobMix, fragmented_job_gpus


class GpuTally(Feature):
    """What the GPU metrics integrate, now and from 0 to now.

    Attributes:
        allocated: GPUs allocated to running jobs now.
        allocated_s: Its time integral, GPU-seconds.
        jobs: ``J``, the jobs of the target workload.
        fragmented: Fragmented job-GPUs now (the nodes' ``F_n(M) * J`` summed).
        fragmented_s: The time integral of ``fragmented / J``, GPU-seconds.
        free_up: Free GPUs of up nodes now.
        free_up_s: Its time integral, GPU-seconds.
        node_fragmented: ``(N,)`` each node's part of ``fragmented``.
        node_free_up: ``(N,)`` each node's part of ``free_up``.
    """

    def __init__(
        self, allocated: int, allocated_s: float, jobs: int, fragmented: int, fragmented_s: float, free_up: int,
        free_up_s: float, node_fragmented: list[int], node_free_up: list[int],
    ) -> None:  # fmt: skip
        self.allocated = allocated
        self.allocated_s = allocated_s
        self.jobs = jobs
        self.fragmented = fragmented
        self.fragmented_s = fragmented_s
        self.free_up = free_up
        self.free_up_s = free_up_s
        self.node_fragmented = node_fragmented
        self.node_free_up = node_free_up

    @classmethod
    def initial(cls, mix: GpuJobMix, n_jobs: int, gpus: Sequence[int], cpu_m: Sequence[int]) -> GpuTally:
        """Every node up and empty at time 0."""
        fragmented = [fragmented_job_gpus(mix[i], n_jobs, gpus[i], cpu_m[i]) for i in range(len(gpus))]
        return cls(0, 0.0, n_jobs, sum(fragmented), 0.0, sum(gpus), 0.0, fragmented, list(gpus))

    @classmethod
    def of(cls, c: TwinConstants) -> GpuTally:
        """The tally of an episode at time 0."""
        return cls.initial(c.gpu_job_mix, c.n_jobs, c.gpus, c.cpu_m)

    def copy(self) -> GpuTally:
        """An independent copy."""
        return GpuTally(self.allocated, self.allocated_s, self.jobs, self.fragmented, self.fragmented_s, self.free_up,
                        self.free_up_s, self.node_fragmented.copy(), self.node_free_up.copy())  # fmt: skip

    def __reduce__(self) -> tuple[type[GpuTally], tuple[object, ...]]:
        """Pickle by its fields (compiled, the class has no default pickling)."""
        return GpuTally, (self.allocated, self.allocated_s, self.jobs, self.fragmented, self.fragmented_s,
                          self.free_up, self.free_up_s, self.node_fragmented, self.node_free_up)  # fmt: skip

    def accrue(self, dt: float) -> None:
        """Integrate the present over ``dt`` seconds."""
        self.allocated_s += self.allocated * dt
        if self.fragmented:
            self.fragmented_s += self.fragmented / self.jobs * dt
        self.free_up_s += self.free_up * dt

    def refresh(self, mix: GpuJobMix, i: int, free_gpus: int, free_cpu_m: int, up: bool) -> None:
        """Node ``i``'s parts after a change of its free GPUs or millicores or of its being up."""
        free = free_gpus if up else 0
        fragmented = fragmented_job_gpus(mix[i], self.jobs, free, free_cpu_m)
        self.fragmented += fragmented - self.node_fragmented[i]
        self.node_fragmented[i] = fragmented
        self.free_up += free - self.node_free_up[i]
        self.node_free_up[i] = free

    def refresh_node(self, s: CoreState, c: TwinConstants, i: int) -> None:
        """Node ``i``'s parts from the state now (nothing for a node without GPUs)."""
        if c.gpus[i]:
            nodes = s.nodes
            self.refresh(c.gpu_job_mix, i, nodes.free_gpus[i], nodes.free_cpu_m[i], nodes.up[i])

    # ------------------------------------------------------------------ hooks
    def on_start(self, s: CoreState, c: TwinConstants, j: int, i: int) -> None:
        """The job's GPUs are allocated: node ``i``'s free GPUs and millicores changed."""
        self.allocated += c.req_gpus[j]
        self.refresh_node(s, c, i)

    def on_end(self, s: CoreState, c: TwinConstants, j: int, i: int) -> None:
        """The job's GPUs are free again."""
        self.allocated -= c.req_gpus[j]
        self.refresh_node(s, c, i)

    def on_node(self, s: CoreState, c: TwinConstants, i: int) -> None:
        """Down: nothing free, nothing fragmented; up again: all free."""
        self.refresh_node(s, c, i)

    def advance(self, s: CoreState, c: TwinConstants, t0: float, t1: float) -> None:
        """Integrate the present over ``[t0, t1]``."""
        self.accrue(t1 - t0)
