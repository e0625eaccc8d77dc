"""Placement policies for GPU sharing at milli-GPU granularity (FGD's setting, ATC'23).

:func:`make_policy` builds one of :data:`POLICIES` by name with a seed. They place pods on a
:class:`~digital_twin.gpu_sharing.ClusterState`; see :mod:`.heuristics` for the five
baselines and :mod:`.fgd` for Fragmentation Gradient Descent.
"""

from __future__ import annotations

import numpy as np

from agents.gpu_sharing.base import TIE_RULES, Placement, SharingPolicy
from agents.gpu_sharing.fgd import FgdBestFitTiesPolicy, FgdKubernetesScorePolicy, FgdPolicy
from agents.gpu_sharing.heuristics import (
    BestFitPolicy,
    DotProductPolicy,
    GpuClusteringPolicy,
    GpuPackingPolicy,
    RandomPolicy,
)
from digital_twin.errors import SpecError

PAPER_POLICIES: tuple[str, ...] = ("random", "dotproduct", "gpu-clustering", "gpu-packing", "best-fit", "fgd")
"""The six policies of FGD's evaluation, in the paper's order."""
POLICIES: dict[str, type[SharingPolicy]] = {
    cls.name: cls
    for cls in (
        RandomPolicy,
        DotProductPolicy,
        GpuClusteringPolicy,
        GpuPackingPolicy,
        BestFitPolicy,
        FgdPolicy,
        FgdBestFitTiesPolicy,
        FgdKubernetesScorePolicy,
    )
}
"""Policy name -> class: :data:`PAPER_POLICIES`, then ``fgd-bestfit-ties`` (FGD, ties by best-fit) and
``fgd-k8s`` (FGD scored and chosen as the artifact's Kubernetes plugin does)."""


def make_policy(name: str, seed: int | np.random.Generator = 0, ties: str = "random") -> SharingPolicy:
    """A fresh policy ``name`` (one of :data:`POLICIES`) seeded with ``seed``, breaking ties by ``ties``.

    Raises:
        SpecError: Unknown name or tie rule (the message lists the known ones; :data:`TIE_RULES`).
    """
    if name not in POLICIES:
        raise SpecError(f"unknown GPU-sharing policy {name!r}; known: {', '.join(POLICIES)}")
    return POLICIES[name](seed, ties)


__all__ = ["PAPER_POLICIES", "POLICIES", "TIE_RULES", "Placement", "SharingPolicy", "make_policy"]
