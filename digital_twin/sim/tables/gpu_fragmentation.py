"""GPU allocation and fragmentation through an episode: FGD's measure on whole GPUs, kept exact as the twin runs.

FGD's fragmentation (Weng et al., ATC'23; :mod:`digital_twin.gpu_sharing.fragmentation` has it
with shared GPUs) counts, for a task type ``m``, the unallocated GPU of a node that ``m`` cannot
use. The twin allocates whole GPUs, so a free GPU is wholly free, and the measure reduces to:
``F_n(m) = 0`` when ``m`` can run on node ``n`` now (enough free GPUs, its millicores free, and
``n`` among the nodes ``m`` can ever run on: arch, GPU model, VRAM, size, node-side rules), else
all of ``n``'s free GPUs (a type without GPUs can use none). The target workload ``M`` is the
episode's jobs, each a share ``1 / J``:

    F_n(M) = free_n * (J - usable_n) / J,   usable_n = the GPU jobs that can run on n now.

Values are kept in integer *job-GPUs* (``F_n(M) * J``), so sums over nodes are exact; memory is
left out, as in FGD. A down node has neither free nor fragmented GPUs. The twin integrates, from
0 to now, the allocated GPUs, the fragmented GPUs (job-GPUs over ``J``) and the free GPUs of up
nodes (:mod:`digital_twin.sim.features.gpus`); its metrics ``gpu_allocation_ratio`` and
``gpu_fragmentation_rate`` are the time averages (allocated over the fleet's GPUs; fragmented over free).
This module holds the tables and the measure, read when the constants are built.

``M`` is the whole spec's job mix (a measure for evaluation, never shown to an agent): a twin
continued into another spec (:mod:`digital_twin.sim.continuation`) weighs its free GPUs by the new
spec's mix from now on and keeps the integral of the old one up to now.
"""

from __future__ import annotations

from collections.abc import Sequence

GpuJobMix = tuple[tuple[tuple[int, int, int], ...], ...]
"""Per node, ``(gpus, millicores, jobs)`` of the GPU jobs that can ever run there, jobs of one
request counted together."""


def gpu_job_mix(
    shape: Sequence[int], candidates: Sequence[Sequence[int]], req_gpus: Sequence[int], req_cpu_m: Sequence[int],
    n_nodes: int,
) -> GpuJobMix:  # fmt: skip
    """Per node, the GPU jobs (by request) that can ever run there; jobs of one shape share candidates.

    Remembered for the last few job mixes (a trace's episodes have one: only durations change).
    """
    jobs_of_shape: dict[int, int] = {}
    first_of_shape: dict[int, int] = {}
    for j, s in enumerate(shape):
        jobs_of_shape[s] = jobs_of_shape.get(s, 0) + 1
        first_of_shape.setdefault(s, j)
    requests = tuple(
        (req_gpus[j], req_cpu_m[j], jobs_of_shape[s], tuple(candidates[j]))
        for s, j in first_of_shape.items()
        if req_gpus[j] > 0
    )  # fmt: skip
    key = (n_nodes, requests)
    mix = _MIXES.get(key)
    if mix is None:
        if len(_MIXES) >= 8:
            _MIXES.clear()
        mix = _MIXES[key] = _mix_of(requests, n_nodes)
    return mix


_MIXES: dict[tuple[int, tuple[tuple[int, int, int, tuple[int, ...]], ...]], GpuJobMix] = {}
"""The mixes of the last few ``(nodes, GPU requests with their counts and candidates)``: nothing changes them."""


def _mix_of(requests: tuple[tuple[int, int, int, tuple[int, ...]], ...], n_nodes: int) -> GpuJobMix:
    """:func:`gpu_job_mix` of ``(gpus, millicores, jobs, candidates)`` per GPU shape."""
    per_node: list[dict[tuple[int, int], int]] = [{} for _ in range(n_nodes)]
    for gpus, cpu_m, count, nodes in requests:
        request = (gpus, cpu_m)
        for i in nodes:
            per_node[i][request] = per_node[i].get(request, 0) + count
    shared: dict[tuple[tuple[int, int, int], ...], tuple[tuple[int, int, int], ...]] = {}  # equal mixes: one object
    mixes = (tuple((g, m, n) for (g, m), n in sorted(mix.items())) for mix in per_node)
    return tuple(shared.setdefault(mix, mix) for mix in mixes)


def fragmented_job_gpus(mix: tuple[tuple[int, int, int], ...], n_jobs: int, free_gpus: int, free_cpu_m: int) -> int:
    """``F_n(M) * J`` of one up node: its free GPUs times the jobs that cannot use them now."""
    if free_gpus == 0:
        return 0
    usable = 0
    for gpus, cpu_m, jobs in mix:
        if gpus <= free_gpus and cpu_m <= free_cpu_m:
            usable += jobs
    return free_gpus * (n_jobs - usable)
