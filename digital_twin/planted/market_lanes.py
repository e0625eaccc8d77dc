"""The lanes of a priced planted episode's home nodes: back-to-back runs that keep each node exactly full.

A home node's units (cores, or GPUs on a GPU node) are split into *lanes*, each as wide as a job
class drawn from the mix (a cpu node: cores of the cpu classes until they sum to the node's; a
GPU node: GPUs of the GPU classes, whose cores must fit the node's). Each lane starts at a time
drawn in ``[0, ramp_s)`` and runs jobs of its width back to back, each arriving when the previous
one ends, until ``plant_until_s``: durations are the class's lognormal, so arrivals pooled over
many lanes look like a Poisson stream. A run that would reach a down window of the node is cut
to end just before it, and after the node recovers each lane starts again after a delay drawn
in ``[0, ramp_s)``; every run ends by the horizon (redrawn, else cut).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from digital_twin.errors import SpecError
from digital_twin.fleet import NodeSpec
from digital_twin.planted.market_config import MarketConfig
from digital_twin.workloads.job_mix import JobClass

INTERRUPTION_MARGIN_S = 0.001
"""A run on a spot node ends at least this long before the node's next interruption, seconds."""
REDRAWS = 20
"""Draws of a duration that would pass the horizon before the run is cut to end at it."""


@dataclass(frozen=True, slots=True)
class LaneRun:
    """One run of a lane: a job of ``job_class`` on ``node`` from ``start_s`` for ``duration_s``."""

    node: int
    lane: int
    job_class: JobClass
    start_s: float
    duration_s: float

    @property
    def end_s(self) -> float:
        """When the run ends (seconds)."""
        return self.start_s + self.duration_s


def lane_widths(node: NodeSpec, config: MarketConfig, rng: np.random.Generator) -> list[JobClass]:
    """One class per lane, whose units sum to the node's: cores of cpu classes, or GPUs of GPU classes.

    Raises:
        SpecError: The GPU classes' cores do not fit a GPU node's, or no class fills the remainder.
    """
    out: list[JobClass] = []
    if node.gpu_count:
        left, cores = node.gpu_count, node.cpu_cores
        while left > 0:
            options = [c for c in config.classes("gpu") if c.gpu_count <= left and c.cpu_cores <= cores]
            if not options:
                raise SpecError(f"node {node.node_id!r}: no GPU class fills its {left} free GPUs within its cores")
            weights = np.array([c.weight for c in options])
            chosen = options[int(rng.choice(len(options), p=weights / weights.sum()))]
            out.append(chosen)
            left, cores = left - chosen.gpu_count, cores - chosen.cpu_cores
        return out
    left_cores = float(node.cpu_cores)
    while left_cores > 0:
        chosen_class = config.draw_class("cpu", rng, max_cores=left_cores)
        if chosen_class is None:
            raise SpecError(f"node {node.node_id!r}: no cpu class fills its last {left_cores:g} cores")
        out.append(chosen_class)
        left_cores -= chosen_class.cpu_cores
    return out


def lane_runs(
    node_index: int,
    widths: list[JobClass],
    up_windows: list[tuple[float, float, bool]],
    config: MarketConfig,
    horizon_s: float,
    rng: np.random.Generator,
) -> list[LaneRun]:
    """Every lane's runs on one node within its up windows (``(open, close, closed by an interruption)``).

    A lane's job classes all have its width (the cores and GPUs of its first class); in each up
    window its first run starts ``[0, ramp_s)`` after the window opens.
    """
    runs: list[LaneRun] = []
    for lane, first in enumerate(widths):
        kind = "gpu" if first.gpu_count else "cpu"
        same = [c for c in config.classes(kind) if c.cpu_cores == first.cpu_cores and c.gpu_count == first.gpu_count]
        weights = np.array([c.weight for c in same])
        for open_s, close_s, interrupted in up_windows:
            t = open_s + float(rng.uniform(0.0, config.ramp_s))
            stop = min(close_s, config.plant_until_s)
            while t < stop:
                job_class = same[int(rng.choice(len(same), p=weights / weights.sum()))]
                duration = _duration(job_class, t, horizon_s, config, rng)
                if interrupted:
                    duration = min(duration, close_s - INTERRUPTION_MARGIN_S - t)
                if duration <= 0:
                    break
                runs.append(LaneRun(node_index, lane, job_class, t, duration))
                t += duration
    return runs


def up_windows(
    interruptions_s: tuple[float, ...], recovery_s: float, until_s: float
) -> list[tuple[float, float, bool]]:
    """``[0, until_s)`` less the down windows ``[t, t + recovery_s)``: ``(open, close, closed by an interruption)``.

    An interruption while the node is down has no effect (the twin drops it).
    """
    out, open_s = [], 0.0
    for t in sorted(interruptions_s):
        if t < open_s:
            continue
        if t > open_s:
            out.append((open_s, t, True))
        open_s = t + recovery_s
    if open_s < until_s:
        out.append((open_s, until_s, False))
    return [w for w in out if w[0] < until_s]


def _duration(
    job_class: JobClass, start_s: float, horizon_s: float, config: MarketConfig, rng: np.random.Generator
) -> float:
    """A duration of ``job_class`` that ends by the horizon (redrawn up to :data:`REDRAWS` times, then cut)."""
    duration = config.draw_duration(job_class, rng)
    for _ in range(REDRAWS):
        if start_s + duration <= horizon_s:
            return duration
        duration = config.draw_duration(job_class, rng)
    return min(duration, horizon_s - start_s)


def full_intervals(runs: list[LaneRun], n_lanes: int) -> list[tuple[float, float]]:
    """The maximal intervals where every one of the node's ``n_lanes`` lanes is running, in time order."""
    events = sorted([(r.start_s, 1) for r in runs] + [(r.end_s, -1) for r in runs], key=lambda e: (e[0], e[1]))
    out, busy, since = [], 0, None
    for t, step in events:
        busy += step
        if busy == n_lanes and since is None:
            since = t
        elif busy < n_lanes and since is not None:
            if t > since:
                out.append((since, t))
            since = None
    merged: list[tuple[float, float]] = []
    for start, end in out:  # a lane's run ending where the next begins leaves no gap
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def intersect(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The intersection of two sorted lists of disjoint intervals."""
    out, i, k = [], 0, 0
    while i < len(a) and k < len(b):
        start, end = max(a[i][0], b[k][0]), min(a[i][1], b[k][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[k][1]:
            i += 1
        else:
            k += 1
    return out


def union(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of two lists of intervals, merged and sorted."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted(a + b):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
