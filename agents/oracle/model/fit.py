"""Which nodes each job fits when empty, for all jobs at once, with nodes grouped by shape.

Whether a job fits an empty node depends only on the node's *shape*: arch, GPU count, VRAM and
model, and cpu millicores and MiB. Fleets are built from a few node types, so a fleet of
hundreds of nodes has a handful of shapes, and the fit test runs once per shape over the
columns of the workload (``(S, J)`` booleans) instead of once per (job, node) pair in Python.
:class:`~agents.oracle.model.instance.OracleInstance` reads its candidates from here, and so does the
size estimate of :mod:`agents.oracle.sizing.size`, before anything big is built.

Example:
    >>> from digital_twin import EpisodeSettings, JobSpec, TwinSpec, Telemetry, default_fleet
    >>> jobs = (JobSpec("cpu", 0.0, 60.0, "batch", 4, 8), JobSpec("gpu", 0.0, 60.0, "batch", 4, 8, gpu_count=2))
    >>> spec = TwinSpec(default_fleet(), jobs, Telemetry.constant(5, 30, 40, 3600, 300), EpisodeSettings(3600))
    >>> shapes = node_shapes(spec.fleet, spec.jobs)
    >>> [len(m) for m in shapes.members], shapes.n_candidates.tolist()
    ([1, 1, 1, 2], [5, 2])
    >>> candidates(shapes)
    ((0, 1, 2, 3, 4), (3, 4))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from digital_twin import NodeSpec
from digital_twin.workload import Workload


def millicores(cores: float) -> int:
    """CPU cores to integer millicores, rounded as the twin does."""
    return round(cores * 1000)


def mebibytes(gb: float) -> int:
    """GB to integer MiB, rounded as the twin does."""
    return round(gb * 1024)


@dataclass(frozen=True, eq=False)
class NodeShapes:
    """The fleet's nodes grouped by shape, and which shapes each job fits.

    Attributes:
        members: Per shape ``s``, ``(n_s,)`` int64 ascending node indices (shapes ordered by
            their first node).
        fits: ``(S, J)`` bool, job ``j`` fits an empty, up node of shape ``s`` (arch, GPU
            count, VRAM and model, cpu millicores, MiB), whether or not it is ever submitted.
    """

    members: tuple[np.ndarray, ...]
    fits: np.ndarray  # (S, J)

    @property
    def sizes(self) -> np.ndarray:
        """``(S,)`` int64 number of nodes of each shape."""
        return np.array([len(m) for m in self.members], dtype=np.int64)

    @property
    def n_candidates(self) -> np.ndarray:
        """``(J,)`` int64 number of nodes each job fits."""
        return self.sizes @ self.fits if len(self.members) else np.zeros(self.fits.shape[1], dtype=np.int64)


def node_shapes(fleet: tuple[NodeSpec, ...], jobs: Workload) -> NodeShapes:
    """Group ``fleet`` by shape and test every job of ``jobs`` against each shape."""
    groups: dict[tuple[str, int, float, str | None, int, int], list[int]] = {}
    for i, node in enumerate(fleet):
        key = (node.arch, node.gpu_count, node.gpu_vram_gb, node.gpu_model, millicores(node.cpu_cores),
               mebibytes(node.mem_gb))
        groups.setdefault(key, []).append(i)
    job_cpu_m = np.rint(jobs.cpu_cores * 1000.0).astype(np.int64)  # as millicores(): half to even
    job_mem_mib = np.rint(jobs.mem_gb * 1024.0).astype(np.int64)
    needs_gpu = jobs.gpu_count > 0
    fits = np.zeros((len(groups), len(jobs)), dtype=bool)
    for s, (arch, gpus, vram, model, cpu_m, mem_mib) in enumerate(groups):
        arch_ok = np.array([a is None or a == arch for a in jobs.required_arch], dtype=bool)
        model_ok = np.array([m is None or model in m for m in jobs.allowed_gpu_models], dtype=bool)
        gpu_ok = ~needs_gpu | ((gpus >= jobs.gpu_count) & (vram >= jobs.gpu_vram_gb) & model_ok)
        fits[s] = arch_ok & gpu_ok & (job_cpu_m <= cpu_m) & (job_mem_mib <= mem_mib)
    members = tuple(np.array(g, dtype=np.int64) for g in groups.values())
    return NodeShapes(members, fits.reshape(len(members), len(jobs)))


def candidates(shapes: NodeShapes) -> tuple[tuple[int, ...], ...]:
    """Per job, the ascending indices of the nodes it fits (the twin's static candidates)."""
    out = []
    for column in shapes.fits.T:
        nodes = [shapes.members[s] for s in np.flatnonzero(column)]
        out.append(tuple(np.sort(np.concatenate(nodes)).tolist()) if nodes else ())
    return tuple(out)
