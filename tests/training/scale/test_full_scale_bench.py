"""`aco-env bench --only full-scale`: whole episodes in fresh processes, their memory, and the rendered section."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.benchmarks.full_scale import bench_full_scale
from training.benchmarks.report_at_scale import full_scale_section


@pytest.mark.subprocess
def test_full_scale__plays_whole_episodes_in_fresh_processes_and_reports_memory() -> None:
    """On a small bundled scenario: the twin alone and an agent, each with decisions, rates and peak RSS."""
    result = bench_full_scale(scenario_names=("toy3",), agents=("twin", "first-fit"))
    assert result["skipped"] == []
    twin, agent = result["runs"]
    assert (twin["agent"], agent["agent"]) == ("twin", "first-fit")
    for row in (twin, agent):
        assert row["scenario"] == "toy3" and row["nodes"] == 3 and row["jobs"] > 0
        assert row["decisions"] >= 1 and row["decisions_per_s"] == pytest.approx(row["decisions"] / row["wall_s"])
        assert 0 < row["rss_before_mb"] <= row["peak_rss_mb"]
    assert twin["objective_usd"] is None and isinstance(agent["objective_usd"], float)
    lines = full_scale_section(result)
    assert lines[0] == "## The GPU fleets at full scale" and sum(line.startswith("| toy3 |") for line in lines) == 2


def test_full_scale__skips_the_scenarios_whose_data_is_absent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without the traces, both whole-cluster scenarios are named as skipped, and nothing is run."""
    monkeypatch.setenv("ACO_ENV_TRACES", str(tmp_path / "none"))
    result = bench_full_scale()
    assert result == {"runs": [], "skipped": ["openb1523-alibaba2023", "spotgpu4278-alibaba2026"]}
    assert full_scale_section(result)[-2].startswith("Data not present (ACO_ENV_TRACES): openb1523")
