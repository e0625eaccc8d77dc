"""The evaluation harness: results.json format, paired seeds, CIs, plots, TensorBoard, placement mode."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from training.evaluation import evaluate

REQUIRED = ("objective_usd", "cost_usd", "sla_violations", "qos_compliance", "failed_jobs", "rejected_jobs",
            "completed_jobs", "decision_latency_ms_p50", "decision_latency_ms_p99")


def test_evaluate__paired_seeds_means_and_confidence_intervals() -> None:
    """Every agent plays the same seeds; mean and ci95 agree with the per-episode values."""
    document = evaluate("fleet5-synthetic", ["first-fit", "cheapest"], episodes=3, seed=5, progress=False)
    assert document["seeds"] == [5, 6, 7] and document["episodes"] == 3
    for summary in document["agents"].values():
        episodes = summary["per_episode"]
        assert [e["seed"] for e in episodes] == [5, 6, 7]
        for metric in REQUIRED:
            values = np.array([e[metric] for e in episodes])
            assert summary["mean"][metric] == pytest.approx(values.mean())
            assert summary["ci95"][metric] == pytest.approx(4.302653 * values.std(ddof=1) / np.sqrt(3), rel=1e-5)


def test_evaluate__same_agent_same_seed_same_numbers() -> None:
    """Evaluation is deterministic: two runs give identical per-episode objectives."""
    one = evaluate("toy3", ["aco", "random"], episodes=2, seed=0, progress=False)
    two = evaluate("toy3", ["aco", "random"], episodes=2, seed=0, progress=False)
    for name in ("aco", "random"):
        assert [e["objective_usd"] for e in one["agents"][name]["per_episode"]] == [
            e["objective_usd"] for e in two["agents"][name]["per_episode"]]


def test_evaluate_cli__writes_results_plots_and_tensorboard(tmp_path: Path) -> None:
    """`aco-env evaluate` prints a leaderboard and writes results.json, three PNGs and eval/ scalars."""
    out, board = tmp_path / "out", tmp_path / "tb"
    result = subprocess.run(
        [sys.executable, "-m", "training.cli", "evaluate", "--scenario", "fleet5-synthetic", "--agents",
         "first-fit,aco", "--episodes", "2", "--seed", "1", "--out", str(out), "--tensorboard", str(board),
         "--no-progress"], capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    assert result.returncode == 0, result.stderr
    assert "first-fit" in result.stdout and "objective $" in result.stdout
    document = json.loads((out / "results.json").read_text())
    assert set(document) >= {"scenario", "episodes", "seed", "agents"}
    assert set(document["agents"]["aco"]) == {"mean", "ci95", "per_episode"}
    for png in ("objective_by_agent.png", "objective_terms.png", "decision_latency_cdf.png"):
        assert (out / png).stat().st_size > 1000
    accumulator = EventAccumulator(str(board))
    accumulator.Reload()
    assert "eval/aco/objective_usd" in accumulator.Tags()["scalars"]


def test_evaluate__placement_mode_reports_optimality_rate_and_regret() -> None:
    """On the one-step env each agent gets an optimality rate in [0, 1] and a regret >= 0."""
    document = evaluate("fleet5-synthetic", ["cheapest", "first-fit"], episodes=4, seed=0, progress=False,
                        placement=True)
    assert document["env"] == "placement"
    for summary in document["agents"].values():
        assert 0.0 <= summary["mean"]["optimal"] <= 1.0 and summary["mean"]["regret_usd"] >= 0.0
