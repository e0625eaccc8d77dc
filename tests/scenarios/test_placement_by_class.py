"""examples/placement_by_class.py and the scenarios it was written for (fleet5-azure-llm, fleet5-synthetic-varied)."""

from __future__ import annotations

import importlib.util
from types import ModuleType
from unittest import mock

import numpy as np
import pytest

import scenarios
from aco_env.observation import JOB_FEATURES
from digital_twin.jobs import LATENCY_CRITICAL
from tests.paths import ROOT


def _example() -> ModuleType:
    """The example script as a module."""
    path = ROOT / "examples" / "placement_by_class.py"
    module_spec = importlib.util.spec_from_file_location("placement_by_class", path)
    assert module_spec is not None and module_spec.loader is not None
    example = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(example)
    return example


def test_example_placement_by_class__every_decision_lands_in_one_column(capsys: pytest.CaptureFixture[str]) -> None:
    """On fleet5-synthetic each row's on-demand + spot + defer is its decisions, and ACO keeps LC jobs off spot."""
    with mock.patch("sys.argv", ["placement_by_class.py", "--agents", "aco,first-fit", "--seeds", "0"]):
        _example().main()
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if line.startswith("| fleet5")]
    counts = [row for row in rows if len(row) == 9]
    assert {row[1] for row in counts} == {"aco", "first-fit"}
    for row in counts:
        decisions, on_demand, spot, defer, avoidable = (int(cell) for cell in row[3:8])
        assert on_demand + spot + defer == decisions and avoidable <= spot
        if row[1] == "aco" and row[2].startswith("latency-critical"):
            assert spot == 0


def test_example_placement_by_class__a_probe_edits_only_its_job_features() -> None:
    """edited() sets the named job columns of a copy and leaves the observation alone."""
    example = _example()
    obs = {"job": np.zeros(len(JOB_FEATURES), dtype=np.float32), "nodes": np.ones((2, 3), dtype=np.float32)}
    changed = example.edited(obs, example.PROBES["as training LC"])
    assert not obs["job"].any() and changed["nodes"] is obs["nodes"]
    assert changed["job"][JOB_FEATURES.index("has_deadline")] == 1.0
    assert changed["job"][JOB_FEATURES.index("duration_h")] == pytest.approx(600 / 3600)
    relabelled = example.edited(obs, example.PROBES["type=batch"])
    assert example.job_class(relabelled) == "batch/cpu"


def test_fleet5_azure_llm__latency_critical_gpu_requests_without_deadlines() -> None:
    """300 one-GPU latency-critical requests of seconds, no deadline, arriving well inside the horizon."""
    scenario = scenarios.load("fleet5-azure-llm")
    if scenario.missing_data():
        pytest.skip(f"data not present: {scenario.missing_data()[0]}")
    jobs = scenario.make_spec(np.random.default_rng(0)).jobs
    assert len(jobs) == 300
    assert all(j.workload == LATENCY_CRITICAL and j.gpu_count == 1 and j.deadline_s is None for j in jobs)
    assert max(j.duration_s for j in jobs) < 30.0
    assert max(j.arrival_s for j in jobs) < 0.75 * scenario.settings.horizon_s


def test_fleet5_synthetic_varied__breaks_the_default_mix_confounds() -> None:
    """Its LC jobs include GPU requests, seconds-long ones, and ones with and without a deadline."""
    scenario = scenarios.load("fleet5-synthetic-varied")
    jobs = [j for seed in range(8) for j in scenario.make_spec(np.random.default_rng(seed)).jobs]
    lc = [j for j in jobs if j.workload == LATENCY_CRITICAL]
    assert any(j.gpu_count for j in lc) and min(j.duration_s for j in lc) < 30.0
    assert 0.3 < np.mean([j.deadline_s is not None for j in lc]) < 0.7
    assert all(j.deadline_s is None for j in jobs if j.workload != LATENCY_CRITICAL)
