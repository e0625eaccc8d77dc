"""The knobs of a priced planted episode (``workload: source: planted-market``, ``options:``).

Job classes, sizes and durations are the synthetic generator's (the default scenario's
``fleet5-synthetic`` values by default): a class drawn from the reference's API simulation mix,
its cores, memory and GPUs, a lognormal duration around its type's median.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from digital_twin.errors import SpecError
from digital_twin.jobs import BATCH, LATENCY_CRITICAL, STREAM
from digital_twin.workloads.job_mix import API_SIMULATION_MIX, JobClass


@dataclass(frozen=True)
class MarketConfig:
    """How a priced planted episode is drawn.

    Attributes:
        plant_until_s: No job arrives at or after this (seconds, at most the horizon); the home
            nodes drain after it. Every planted run ends by the horizon less the queue TTL.
        until_spread: Each episode's arrivals stop at ``plant_until_s x (1 - until_spread x U)``,
            ``U`` uniform in [0, 1) (in [0, 1)): busy periods of different lengths.
        ramp_s: Each lane of a home node starts (its first job arrives) uniformly in ``[0,
            ramp_s)`` (seconds, > 0): the nodes fill up, then stay full until ``plant_until_s``.
        dear_rate_per_s: Poisson rate of other cpu jobs per dear node (jobs/s, >= 0), kept when
            they run wholly while every home node is full (and fit on a dear node).
        lc_rate_per_s: Poisson rate of latency-critical jobs per dear node (jobs/s, >= 0),
            kept when they fit on a dear node.
        load_sigma: Each episode multiplies both rates by a lognormal factor of mean 1 and this
            log-standard-deviation (>= 0): some days are busier than others.
        lc_median_duration_s, batch_median_duration_s, stream_median_duration_s: Median
            duration per workload type (seconds, > 0).
        duration_sigma: Log-standard-deviation of durations (>= 0).
        min_duration_s, max_duration_s: Durations are clipped to this range (``0 < min <= max``).
        lc_deadline_slack_s: A latency-critical job's deadline is its arrival plus this (> 0).
        interruptions_per_spot_node: Spot interruptions per spot node and episode (>= 0),
            uniform in ``[0, plant_until_s)``.
        mix: The job classes (:data:`~digital_twin.workloads.job_mix.API_SIMULATION_MIX`).
    """

    plant_until_s: float
    until_spread: float = 0.3
    ramp_s: float = 1800.0
    dear_rate_per_s: float = 0.0022
    lc_rate_per_s: float = 0.000875
    load_sigma: float = 0.5
    lc_median_duration_s: float = 600.0
    batch_median_duration_s: float = 1800.0
    stream_median_duration_s: float = 2700.0
    duration_sigma: float = 0.6
    min_duration_s: float = 1.0
    max_duration_s: float = 7200.0
    lc_deadline_slack_s: float = 300.0
    interruptions_per_spot_node: int = 1
    mix: tuple[JobClass, ...] = API_SIMULATION_MIX

    def __post_init__(self) -> None:
        for name in (
            "plant_until_s",
            "ramp_s",
            "lc_median_duration_s",
            "batch_median_duration_s",
            "stream_median_duration_s",
            "min_duration_s",
            "max_duration_s",
            "lc_deadline_slack_s",
        ):
            _positive(name, getattr(self, name))
        for name in ("dear_rate_per_s", "lc_rate_per_s", "load_sigma", "duration_sigma"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (math.isfinite(value) and value >= 0)
            ):
                raise SpecError(f"{name} must be a finite number >= 0, got {value!r}")
        if not 0.0 <= self.until_spread < 1.0:
            raise SpecError(f"until_spread must be in [0, 1), got {self.until_spread!r}")
        if self.min_duration_s > self.max_duration_s:
            raise SpecError(f"min_duration_s {self.min_duration_s:g} > max_duration_s {self.max_duration_s:g}")
        count = self.interruptions_per_spot_node
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise SpecError(f"interruptions_per_spot_node must be an integer >= 0, got {count!r}")
        mix = tuple(c if isinstance(c, JobClass) else JobClass(**c) for c in self.mix)
        object.__setattr__(self, "mix", mix)
        for kind, test in (("cpu lanes", _lane_cpu), ("latency-critical", _lc)):
            if not any(test(c) for c in mix):
                raise SpecError(f"mix needs at least one class for the {kind}")

    def classes(self, kind: str) -> tuple[JobClass, ...]:
        """The mix's classes of one kind: ``"cpu"`` (cpu-only, not latency-critical), ``"gpu"``, ``"lc"``."""
        test = {"cpu": _lane_cpu, "gpu": lambda c: c.gpu_count > 0, "lc": _lc}[kind]
        return tuple(c for c in self.mix if test(c))

    def draw_class(self, kind: str, rng: np.random.Generator, max_cores: float = math.inf) -> JobClass | None:
        """A class of ``kind`` drawn by weight among those of at most ``max_cores`` (``None``: none fits)."""
        options = [c for c in self.classes(kind) if c.cpu_cores <= max_cores]
        if not options:
            return None
        weights = np.array([c.weight for c in options], dtype=np.float64)
        return options[int(rng.choice(len(options), p=weights / weights.sum()))]

    def draw_duration(self, job_class: JobClass, rng: np.random.Generator) -> float:
        """A lognormal duration around the class type's median, clipped (seconds)."""
        median = {
            LATENCY_CRITICAL: self.lc_median_duration_s,
            BATCH: self.batch_median_duration_s,
            STREAM: self.stream_median_duration_s,
        }[job_class.workload]
        value = median * math.exp(self.duration_sigma * float(rng.standard_normal()))
        return float(min(max(value, self.min_duration_s), self.max_duration_s))


def _lane_cpu(c: JobClass) -> bool:
    return c.gpu_count == 0 and c.workload != LATENCY_CRITICAL


def _lc(c: JobClass) -> bool:
    return c.gpu_count == 0 and c.workload == LATENCY_CRITICAL


def _positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and value > 0):
        raise SpecError(f"{name} must be a finite number > 0, got {value!r}")
