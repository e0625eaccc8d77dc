"""Hypothesis strategies for random fleets, workloads and twin specs."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from digital_twin import EpisodeSettings, JobSpec, NodeSpec, ObjectiveWeights, Telemetry, TwinSpec

GPU_MODELS = ("A100", "T4")


@st.composite
def nodes(draw: st.DrawFn, index: int) -> NodeSpec:
    arch = draw(st.sampled_from(("x86_64", "arm64", "gpu-node")))
    spot = draw(st.booleans())
    gpus = draw(st.integers(1, 4)) if arch == "gpu-node" else 0
    return NodeSpec(
        node_id=f"n{index}",
        arch=arch,
        instance="spot" if spot else "on-demand",
        cpu_cores=draw(st.sampled_from((2, 4, 8, 16))),
        mem_gb=draw(st.sampled_from((4, 8, 16, 64))),
        price_per_hour_usd=draw(st.sampled_from((0.0, 0.1, 0.5, 3.2))),
        gpu_count=gpus,
        gpu_model=draw(st.sampled_from(GPU_MODELS)) if gpus else None,
        gpu_vram_gb=draw(st.sampled_from((16.0, 80.0))) if gpus else 0.0,
        interruption_prob_per_hour=draw(st.sampled_from((0.3, 0.9))) if spot else 0.0,
    )


@st.composite
def jobs(draw: st.DrawFn, index: int, horizon_s: float) -> JobSpec:
    gpus = draw(st.sampled_from((0, 0, 0, 1, 2)))
    return JobSpec(
        job_id=f"j{index}",
        arrival_s=float(draw(st.integers(0, int(horizon_s)))),
        duration_s=float(draw(st.integers(1, int(horizon_s)))),
        workload=draw(st.sampled_from(("latency-critical", "batch", "stream"))),
        cpu_cores=draw(st.sampled_from((0.5, 1, 2, 4, 8))),
        mem_gb=draw(st.sampled_from((0.5, 2, 8, 32))),
        gpu_count=gpus,
        gpu_vram_gb=draw(st.sampled_from((0.0, 40.0))) if gpus else 0.0,
        allowed_gpu_models=draw(st.sampled_from((None, ("A100",)))) if gpus else None,
        required_arch=draw(st.sampled_from((None, None, "x86_64", "arm64", "gpu-node"))),
        priority=draw(st.integers(1, 100)),
        preemptible=draw(st.booleans()),
        deadline_s=draw(st.one_of(st.none(), st.floats(0, horizon_s))),
    )


@st.composite
def twin_specs(draw: st.DrawFn, max_nodes: int = 5, max_jobs: int = 25) -> TwinSpec:
    """A random but valid episode: fleet, jobs, random telemetry, settings and cost model."""
    horizon_s = float(draw(st.sampled_from((1800, 3600, 7200))))
    tick_s = float(draw(st.sampled_from((60, 300, 600))))
    n_nodes = draw(st.integers(1, max_nodes))
    fleet = tuple(draw(nodes(i)) for i in range(n_nodes))
    workload = tuple(draw(jobs(k, horizon_s)) for k in range(draw(st.integers(1, max_jobs))))
    n_ticks = int(np.ceil(horizon_s / tick_s))
    seed = draw(st.integers(0, 2**32 - 1))
    background = np.random.default_rng(seed).uniform(0.0, 100.0, (n_ticks, n_nodes, 2))
    return TwinSpec(
        fleet,
        workload,
        Telemetry(background, tick_s),
        EpisodeSettings(
            horizon_s,
            queue_ttl_s=draw(st.sampled_from((None, 120.0, 900.0))),
            sla_threshold_pct=draw(st.sampled_from((50.0, 90.0))),
            spot_recovery_s=draw(st.sampled_from((60.0, 600.0))),
            cost_model=draw(st.sampled_from(("prorated", "active-nodes"))),
            weights=ObjectiveWeights(),
        ),
    )
