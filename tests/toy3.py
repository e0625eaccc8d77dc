"""The hand-worked toy instance: 3 nodes, 5 jobs, every objective term exercised once.

Shared by the twin's accounting test (and, as ``scenarios/toy3.yaml``, by the scenario tests).
Prices are chosen for round per-second rates: n0 0.0001 $/s, n1 0.00002 $/s, n2 0.0002 $/s.
"""

from __future__ import annotations

import numpy as np

from digital_twin import EpisodeSettings, JobSpec, NodeSpec, ObjectiveWeights, Telemetry, TwinSpec

TOY3_WEIGHTS = ObjectiveWeights(
    sla_violation_usd=0.1, qos_violation_usd=0.2, eviction_usd=0.3, deadline_miss_usd=0.4, rejection_usd=0.5
)


def toy3_spec(cost_model: str = "prorated") -> TwinSpec:
    """3 nodes, 5 jobs (each declaring its true duration), 600 s ticks over 3600 s, n1 interrupted at 1200 s."""
    fleet = (
        NodeSpec("n0", "x86_64", "on-demand", 4, 16, 0.36),
        NodeSpec("n1", "arm64", "spot", 4, 16, 0.072, interruption_prob_per_hour=0.1),
        NodeSpec("n2", "x86_64", "on-demand", 2, 8, 0.72),
    )
    jobs = (
        JobSpec("A", 0.0, 1800.0, "latency-critical", 2, 4, declared_duration_s=1800.0),
        JobSpec("B", 0.0, 3000.0, "batch", 2, 4, declared_duration_s=3000.0),
        JobSpec("D", 0.0, 600.0, "batch", 4, 8, deadline_s=200.0, declared_duration_s=600.0),
        JobSpec("C", 300.0, 600.0, "latency-critical", 1, 2, declared_duration_s=600.0),
        JobSpec("E", 600.0, 600.0, "batch", 4, 16, declared_duration_s=600.0),
    )
    background = np.zeros((6, 3, 2))
    background[:, :, 0] = [50.0, 10.0, 80.0]  # cpu % per node
    background[:, :, 1] = 30.0
    return TwinSpec(
        fleet,
        jobs,
        Telemetry(background, 600.0, source="toy3"),
        EpisodeSettings(
            3600.0,
            queue_ttl_s=900.0,
            sla_threshold_pct=90.0,
            spot_recovery_s=600.0,
            cost_model=cost_model,
            weights=TOY3_WEIGHTS,
        ),
        fixed_interruptions_s=((), (1200.0,), ()),
    )


# Decisions in order (node index, or None = defer); see test_twin_toy for the walk-through.
TOY3_ACTIONS = (2, 1, None, 0, 1, None, None)
