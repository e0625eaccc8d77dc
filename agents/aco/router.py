"""The intent router: six placement strategies and the deadline override.

A re-implementation of the reference system's router (``docs/reference.md``, "Intent
router"). Stateless: :func:`route` maps a job (and the simulated time, for the deadline
override) to a :class:`Strategy`. Rules are tried in order; the first match wins:

1. latency-critical with GPUs -> ``GPU_INFERENCE``
2. latency-critical without GPUs -> ``CPU_SERVING``
3. batch with GPUs, not preemptible -> ``GPU_TRAINING``
4. preemptible (any type not caught above) -> ``PREEMPTIBLE_ACTOR``
5. stream, not preemptible -> ``STATEFUL_STREAM``
6. anything else (e.g. non-preemptible CPU batch) -> ``GENERIC``

Deadline override (on top of any strategy): when the job has a deadline and ``deadline_s -
now_s < 60`` (already missed deadlines included), the fast path is forced, the SLA threshold
becomes ``min(threshold + 0.10, 0.90)`` and batch and stream are added to the workload types to
avoid co-locating with.

Example:
    >>> from digital_twin import JobSpec
    >>> job = JobSpec("j", 0.0, 60.0, "batch", 0.1, 0.2, preemptible=True)
    >>> route(job, now_s=0.0).name
    'preemptible-actor'
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from agents.aco.cost_engine import SLA_STRICT_THRESHOLD, SPIKE_PENALTY_WEIGHT, SPOT_PENALTY_THRESHOLD
from digital_twin import JobSpec
from digital_twin.jobs import BATCH, LATENCY_CRITICAL, STREAM

DEADLINE_URGENT_WINDOW_S = 60.0
"""A deadline closer than this (seconds of simulated time) triggers the override."""
SLA_DEADLINE_BOOST = 0.10
"""Added to the SLA headroom threshold by the deadline override ..."""
SLA_DEADLINE_CAP = 0.90
"""... capped at this."""


@dataclass(frozen=True, slots=True)
class Strategy:
    """How the scheduler treats one job (the reference's ``PlacementStrategy``).

    Attributes:
        name: Lower-case strategy name, e.g. ``"cpu-serving"``.
        required_arch: Node arches allowed (``None`` = any).
        required_instance: Instance types allowed, ``"on-demand"`` / ``"spot"`` (``None`` = any).
        use_fast_path: Deterministic argmax of eta instead of the colony.
        allow_spot: Carried for fidelity; the reference scheduler never reads it (spot nodes are
            excluded only through ``required_instance``), and neither do we.
        sla_threshold: Headroom threshold (fraction) of the cost engine's SLA gate (LC jobs only).
        spike_weight: Weight of the predicted spike in the prediction factor.
        spot_threshold: Interruption-probability gate for spot nodes (LC jobs only).
        avoid_workload_types: Workload types whose presence on a node sets its eta to 0.
    """

    name: str
    required_arch: tuple[str, ...] | None
    required_instance: tuple[str, ...] | None
    use_fast_path: bool
    allow_spot: bool
    sla_threshold: float
    spike_weight: float
    spot_threshold: float
    avoid_workload_types: tuple[str, ...] = ()


_CPU_ARCHES = ("x86_64", "arm64")
_ON_DEMAND = ("on-demand",)

GPU_INFERENCE = Strategy(
    "gpu-inference", ("gpu-node",), _ON_DEMAND, True, False, 0.30, 1.00, 0.0, (BATCH,)
)
CPU_SERVING = Strategy("cpu-serving", _CPU_ARCHES, _ON_DEMAND, True, False, 0.25, 0.80, 0.0)
GPU_TRAINING = Strategy("gpu-training", ("gpu-node",), None, False, True, 0.05, 0.20, 0.50)
PREEMPTIBLE_ACTOR = Strategy("preemptible-actor", _CPU_ARCHES, None, False, True, 0.05, 0.10, 0.70)
STATEFUL_STREAM = Strategy("stateful-stream", None, _ON_DEMAND, False, False, 0.15, 0.40, 0.0)
GENERIC = Strategy("generic", None, None, False, True, 0.20, 0.50, 0.30)
STRATEGIES = (GPU_INFERENCE, CPU_SERVING, GPU_TRAINING, PREEMPTIBLE_ACTOR, STATEFUL_STREAM, GENERIC)
"""The six strategies in rule order."""

COST_ONLY = Strategy(
    "cost-only", None, None, False, True,
    SLA_STRICT_THRESHOLD, SPIKE_PENALTY_WEIGHT, SPOT_PENALTY_THRESHOLD,
)
"""No router: what the reference's ``aco_schedule`` does when called without a strategy (its
T1.1 "ACO-only" and T4.1 "ACO-cost" rows): every node the job fits on is a candidate, the cost
engine uses its module defaults, latency-critical jobs take the fast path, others the colony,
and no deadline override applies (the router is never consulted). Not one of the router's
:data:`STRATEGIES` (its values happen to equal ``GENERIC``'s)."""


def base_strategy(job: JobSpec) -> Strategy:
    """The strategy of the first matching rule (no deadline override)."""
    gpu = job.gpu_count > 0
    if job.workload == LATENCY_CRITICAL:
        return GPU_INFERENCE if gpu else CPU_SERVING
    if job.workload == BATCH and gpu and not job.preemptible:
        return GPU_TRAINING
    if job.preemptible:
        return PREEMPTIBLE_ACTOR
    if job.workload == STREAM:
        return STATEFUL_STREAM
    return GENERIC


def deadline_is_urgent(job: JobSpec, now_s: float) -> bool:
    """True when the job has a deadline less than 60 s away (or already past) at ``now_s``."""
    return job.deadline_s is not None and job.deadline_s - now_s < DEADLINE_URGENT_WINDOW_S


def with_deadline_override(strategy: Strategy) -> Strategy:
    """``strategy`` with the deadline override applied (a new object; strategies are frozen)."""
    avoid = strategy.avoid_workload_types + tuple(
        t for t in (BATCH, STREAM) if t not in strategy.avoid_workload_types
    )
    return dataclasses.replace(
        strategy,
        use_fast_path=True,
        sla_threshold=min(strategy.sla_threshold + SLA_DEADLINE_BOOST, SLA_DEADLINE_CAP),
        avoid_workload_types=avoid,
    )


def route(job: JobSpec, now_s: float) -> Strategy:
    """The strategy for ``job`` at simulated time ``now_s`` (seconds, the twin's clock)."""
    strategy = base_strategy(job)
    return with_deadline_override(strategy) if deadline_is_urgent(job, now_s) else strategy
