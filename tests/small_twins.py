"""Small hand-checkable twins for the objective's known-answer tests: a node or two, a few jobs, a plan.

Prices are chosen so that costs are round: :data:`TWO_CORES` costs 0.72 USD/h, so a 1-core job
on it costs 0.0001 USD per second (prorated: half the node).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from digital_twin import DigitalTwin, EpisodeSettings, JobSpec, NodeSpec, Telemetry, TwinSpec

TWO_CORES = NodeSpec("n0", "x86_64", "on-demand", 2, 8, 0.72)
"""On-demand, 2 cores: a 1-core job costs 0.0001 USD/s; our load alone never passes the SLA threshold."""
SPOT_TWO_CORES = NodeSpec("s0", "x86_64", "spot", 2, 8, 0.72, interruption_prob_per_hour=0.5)
"""As :data:`TWO_CORES`, but a spot node (interruptions are given per test)."""
ONE_CORE = NodeSpec("c0", "x86_64", "on-demand", 1, 8, 0.36)
"""On-demand, 1 core (0.36 USD/h: 0.0001 USD/s for a 1-core job); with a 100 % background a
1-core job runs at half speed under processor sharing."""

Plan = Mapping[str, tuple[int, float]]
"""``job_id -> (node, start_s)``: start the job on the node once it is asked at or after ``start_s``."""


def spec_of(
    jobs: tuple[JobSpec, ...],
    fleet: tuple[NodeSpec, ...] = (TWO_CORES,),
    horizon_s: float = 3600.0,
    cpu_pct: float | tuple[float, ...] = 20.0,
    **settings: Any,
) -> TwinSpec:
    """A spec with 300 s ticks, a flat background (one cpu % for all nodes, or one per node) and ``settings``.

    ``settings`` are :class:`EpisodeSettings` fields, and ``fixed_interruptions_s``.
    """
    n_ticks = int(np.ceil(horizon_s / 300.0))
    background = np.full((n_ticks, len(fleet), 2), 30.0)
    background[:, :, 0] = cpu_pct
    fixed = settings.pop("fixed_interruptions_s", None)
    return TwinSpec(fleet, jobs, Telemetry(background, 300.0), EpisodeSettings(horizon_s, **settings), fixed)


def play(spec: TwinSpec, plan: Plan) -> tuple[DigitalTwin, list[float]]:
    """Play ``plan`` (jobs not in it are deferred until they leave); the ended twin and its objective trajectory.

    Returns:
        ``(twin, objectives)``: ``objectives`` is the objective (USD) at reset and after each
        decision; an env's rewards are minus its successive differences.
    """
    twin = DigitalTwin(spec)
    twin.reset(np.random.default_rng(0))
    objectives = [twin.objective_usd()]
    while not twin.done:
        job = twin.current_job
        assert job is not None
        planned = plan.get(job.job_id)
        if planned is not None and twin.time_s >= planned[1] and twin.can_place(planned[0]):
            twin.place(planned[0])
        else:
            twin.defer()
        objectives.append(twin.objective_usd())
    return twin, objectives


def lc(job_id: str, arrival_s: float, duration_s: float, **fields: Any) -> JobSpec:
    """A 1-core latency-critical job (2 GB)."""
    return JobSpec(job_id, arrival_s, duration_s, "latency-critical", 1, 2, **fields)


def batch(job_id: str, arrival_s: float, duration_s: float, cores: float = 1, **fields: Any) -> JobSpec:
    """A batch job (1 core, 2 GB unless ``cores`` says otherwise)."""
    return JobSpec(job_id, arrival_s, duration_s, "batch", cores, 2, **fields)


def stream(job_id: str, arrival_s: float, duration_s: float, **fields: Any) -> JobSpec:
    """A 1-core stream job (2 GB)."""
    return JobSpec(job_id, arrival_s, duration_s, "stream", 1, 2, **fields)
