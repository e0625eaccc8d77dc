"""The job mix of the synthetic generator: job classes and a distribution of CPU sizes.

:class:`JobClass` is one kind of job (type, request, priority, weight in the mix);
:data:`API_SIMULATION_MIX` is the reference system's mix. :class:`CpuSizeDistribution` redraws the
cores of CPU-only jobs (e.g. :data:`AZURE_JOB_SIZES`).
"""

from __future__ import annotations

from dataclasses import dataclass

from digital_twin.errors import SpecError, short_repr
from digital_twin.jobs import BATCH, LATENCY_CRITICAL, STREAM, WORKLOAD_TYPES
from digital_twin.workloads._common import check_int, check_positive


@dataclass(frozen=True, slots=True)
class JobClass:
    """One kind of job in a mix.

    Attributes:
        workload: ``"latency-critical"``, ``"batch"`` or ``"stream"``.
        cpu_cores: CPU request in cores (> 0).
        mem_gb: Memory request in GB (> 0).
        gpu_count: Whole GPUs (>= 0; any model).
        priority: 1..100.
        weight: Relative frequency in the mix (> 0).
    """

    workload: str
    cpu_cores: float
    mem_gb: float
    gpu_count: int = 0
    priority: int = 50
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.workload not in WORKLOAD_TYPES:
            raise SpecError(f"JobClass: workload {short_repr(self.workload)} is not one of {WORKLOAD_TYPES}")
        check_positive("JobClass.cpu_cores", self.cpu_cores)
        check_positive("JobClass.mem_gb", self.mem_gb)
        check_positive("JobClass.weight", self.weight)
        check_int("JobClass.gpu_count", self.gpu_count, 0)
        check_int("JobClass.priority", self.priority, 1, 100)


API_SIMULATION_MIX: tuple[JobClass, ...] = (
    JobClass(BATCH, 4, 8, 0, 30),
    JobClass(BATCH, 8, 16, 0, 50),
    JobClass(BATCH, 2, 4, 0, 20),
    JobClass(LATENCY_CRITICAL, 2, 4, 0, 90),
    JobClass(LATENCY_CRITICAL, 1, 2, 0, 95),
    JobClass(STREAM, 2, 8, 0, 60),
    JobClass(BATCH, 4, 16, 1, 40),
    JobClass(STREAM, 1, 2, 0, 70),
)
"""The reference NodeAgent's API simulation mix as (type, cpu, mem GB, GPUs, priority), uniform."""


@dataclass(frozen=True, slots=True)
class CpuSizeDistribution:
    """A discrete distribution of CPU requests, with memory proportional to cores.

    Attributes:
        sizes: Core counts (each > 0).
        weights: Relative frequencies, one per size (each >= 0, sum > 0).
        mem_gb_per_core: Memory in GB per core (> 0).
    """

    sizes: tuple[float, ...]
    weights: tuple[float, ...]
    mem_gb_per_core: float = 2.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", tuple(self.sizes))
        object.__setattr__(self, "weights", tuple(self.weights))
        if not self.sizes or len(self.sizes) != len(self.weights):
            raise SpecError("CpuSizeDistribution: need as many weights as sizes (>= 1)")
        for i, size in enumerate(self.sizes):
            check_positive(f"CpuSizeDistribution.sizes[{i}]", size)
        for i, weight in enumerate(self.weights):
            check_positive(f"CpuSizeDistribution.weights[{i}]", weight, allow_zero=True)
        if sum(self.weights) <= 0:
            raise SpecError("CpuSizeDistribution: weights must not all be 0")
        check_positive("CpuSizeDistribution.mem_gb_per_core", self.mem_gb_per_core)


AZURE_JOB_SIZES = CpuSizeDistribution(
    sizes=(1, 2, 4, 8, 16, 32), weights=(0.18, 0.45, 0.08, 0.24, 0.03, 0.02), mem_gb_per_core=2.0
)
"""The reference benchmarks' job sizes (AzureTracesForPacking2020 weights), 2 GB per core."""
