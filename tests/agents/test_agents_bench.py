"""The benchmark functions return the documented structure (small sizes; no timing asserted)."""

from __future__ import annotations

import pytest

from agents.aco.bench import bench_fleet, run_benchmarks


@pytest.mark.training
def test_bench__returns_latency_percentiles_per_fleet_size_and_predictor_times() -> None:
    """run_benchmarks: p50 <= p99 per size, all decisions by the colony, and predictor times."""
    result = run_benchmarks(
        sizes=(5, 32),
        n_decisions=30,
        predictor_options={"trace_ticks": 25, "history": 30, "repeats": 1},
    )
    for key in ("aco_decision_ms", "aco_decision_ms_loaded"):
        assert set(result[key]) == {"5", "32"}
        for stats in result[key].values():
            assert (
                0 < stats["p50"] <= stats["p99"]
                and stats["n"] == 30
                and stats["colony_share"] == 1.0
            )
    predictors = result["predictor_ms"]
    assert set(predictors) == {"persistence", "ema", "lstm"}
    assert predictors["lstm"]["refit"]["p50"] > 0 and predictors["lstm"]["predict"]["p50"] > 0
    assert all(p["trace"]["p50"] > 0 for p in predictors.values())


def test_bench_fleet__has_the_requested_size_and_unique_nodes() -> None:
    """The default fleet at 5 nodes; its five types repeated (seeded) at other sizes."""
    assert [n.node_id for n in bench_fleet(5)][:2] == ["node-cpu-01", "node-arm-02"]
    fleet = bench_fleet(1024)
    assert len(fleet) == 1024 and len({n.node_id for n in fleet}) == 1024
    assert bench_fleet(32, seed=1) == bench_fleet(32, seed=1)
