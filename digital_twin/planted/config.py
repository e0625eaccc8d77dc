"""The knobs of a planted episode (``workload: source: planted``, ``options:``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from digital_twin.errors import SpecError


@dataclass(frozen=True)
class PlantedConfig:
    """How a planted episode is cut from its fleet's cheap capacity.

    Attributes:
        plant_until_s: Planted runs end by this time (seconds, at most the horizon); later, the
            cheap nodes are left idle. Keeps every job's horizon term above its cheapest run.
        epoch_s: Runs start and end on multiples of this (seconds, > 0), except at a spot
            node's down windows; many jobs arrive together, which is what makes packing matter.
        min_duration_s, max_duration_s: Bounds of a run's length (multiples of ``epoch_s``
            are cut; ``min <= max``).
        max_job_cores: Largest cpu request of a cpu job, whole cores (>= 1).
        max_job_gpus: Largest GPU request of a GPU job (>= 1).
        fill: Fraction (0, 1] of each cheap node's room (its cores less its peak background,
            and, where latency-critical jobs run, less the SLA threshold) that is planted;
            lower leaves slack that other policies may use, so the episode gets easier.
        latency_critical_share: Probability (in [0, 1]) that a cpu job on an on-demand node is
            latency-critical.
        preemptible_share: Probability (in [0, 1]) that a job is preemptible (evicted by a
            spot interruption, it is requeued instead of failing; the planted schedule never
            meets one).
        split_cores_prob: Probability (in [0, 1]) that a piece is cut across its cores (or
            GPUs) rather than in time, while both cuts are possible.
        interruptions_per_spot_node: Spot interruptions drawn per spot node and episode (>= 0),
            uniform in ``[0, plant_until_s)``; the planted runs avoid them (and the node's
            recovery), other policies meet them.
    """

    plant_until_s: float
    epoch_s: float = 300.0
    min_duration_s: float = 300.0
    max_duration_s: float = 3600.0
    max_job_cores: int = 8
    max_job_gpus: int = 4
    fill: float = 1.0
    latency_critical_share: float = 0.3
    preemptible_share: float = 0.7
    split_cores_prob: float = 0.5
    interruptions_per_spot_node: int = 1

    def __post_init__(self) -> None:
        for name in ("plant_until_s", "epoch_s", "min_duration_s", "max_duration_s"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (math.isfinite(value) and value > 0)
            ):
                raise SpecError(f"{name} must be a finite number > 0, got {value!r}")
        if self.min_duration_s > self.max_duration_s:
            raise SpecError(f"min_duration_s {self.min_duration_s:g} > max_duration_s {self.max_duration_s:g}")
        if self.min_duration_s < self.epoch_s:
            raise SpecError(f"min_duration_s {self.min_duration_s:g} < epoch_s {self.epoch_s:g}")
        for name in ("max_job_cores", "max_job_gpus"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SpecError(f"{name} must be an integer >= 1, got {value!r}")
        if not 0.0 < self.fill <= 1.0:
            raise SpecError(f"fill must be in (0, 1], got {self.fill!r}")
        for name in ("latency_critical_share", "preemptible_share", "split_cores_prob"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise SpecError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")
        count = self.interruptions_per_spot_node
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise SpecError(f"interruptions_per_spot_node must be an integer >= 0, got {count!r}")
