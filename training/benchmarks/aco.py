"""ACO decision latency and predictor times (the measurements live in :mod:`agents.aco.bench`)."""

from __future__ import annotations

from typing import Any

from agents.aco.bench import run_benchmarks

REFERENCE_ACO_MS = {
    "5": {"p99": 0.75, "source": "reference T1.3 (p99 < 0.75 ms, 5-node fleet, batch jobs)"},
    "1024": {"p99": 4.32, "source": "reference paper scalability (p99 at 1,024 nodes, batch)"},
}
"""The reference system's published figures, shown beside ours in docs/benchmarks.md."""


def bench_aco(n_decisions: int = 2000) -> dict[str, Any]:
    """``aco_decision_ms`` per node count (5, 32, 1,024), loaded and worst-case variants, predictors."""
    results = run_benchmarks(n_decisions=n_decisions)
    results["reference_ms"] = REFERENCE_ACO_MS
    return results
