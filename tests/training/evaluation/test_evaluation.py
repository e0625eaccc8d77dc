"""The evaluation harness: results.json format, paired seeds, CIs, gaps, plots, TensorBoard, placement env."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.paths import ROOT
from tests.train_helpers import count_scenario_loads
from training.evaluation.evaluator import PLACEMENT_ENV, evaluate
from training.evaluation.results import Evaluation, read_evaluation

REQUIRED = (
    "objective_usd",
    "cost_usd",
    "sla_violations",
    "qos_compliance",
    "failed_jobs",
    "rejected_jobs",
    "completed_jobs",
    "decision_latency_ms_p50",
    "decision_latency_ms_p99",
)


def test_evaluate__paired_seeds_means_and_confidence_intervals() -> None:
    """Every agent plays the same seeds; mean and ci95 agree with the per-episode values."""
    evaluation = evaluate("fleet5-synthetic", ["first-fit", "cheapest"], episodes=3, seed=5, progress=False)
    document = evaluation.to_json()
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
        assert [e.metrics["objective_usd"] for e in one.agents[name].episodes] == [
            e.metrics["objective_usd"] for e in two.agents[name].episodes
        ]


@pytest.mark.subprocess
def test_evaluate_cli__writes_results_plots_and_tensorboard(tmp_path: Path) -> None:
    """`aco-env evaluate` prints a leaderboard and writes results.json, three PNGs and eval/ scalars."""
    out, board = tmp_path / "out", tmp_path / "tb"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "training.cli.main",
            "evaluate",
            "--scenario",
            "fleet5-synthetic",
            "--agents",
            "first-fit,aco",
            "--episodes",
            "2",
            "--seed",
            "1",
            "--out",
            str(out),
            "--tensorboard",
            str(board),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert "first-fit" in result.stdout and "objective $" in result.stdout
    document = json.loads((out / "results.json").read_text())
    assert set(document) == {"scenario", "env", "episodes", "seed", "seeds", "split", "deterministic", "agents",
                             "paired"}
    assert document["split"] == "training" and document["paired"]["reference"] == "first-fit"  # seeds 1, 2
    assert set(document["agents"]["aco"]) == {"mean", "ci95", "per_episode"}
    assert Evaluation.from_json(document).to_json() == document  # the file reads back to the same results
    for png in ("objective_by_agent.png", "objective_terms.png", "decision_latency_cdf.png"):
        assert (out / png).stat().st_size > 1000
    accumulator = EventAccumulator(str(board))
    accumulator.Reload()
    assert "eval/aco/objective_usd" in accumulator.Tags()["scalars"]


@pytest.mark.subprocess
def test_evaluate_cli__split_test_plays_the_test_seeds_against_the_baseline(tmp_path: Path) -> None:
    """`--split test` plays seeds 100000...; results.json records the split and the paired block vs --baseline."""
    command = ["evaluate", "--agents", "first-fit,random", "--baseline", "random", "--split", "test", "--episodes", "2"]
    result = subprocess.run(
        [sys.executable, "-m", "training.cli.main", *command, "--backend", "serial", "--out", str(tmp_path),
         "--no-progress"],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "results.json").read_text())
    assert document["seeds"] == [100_000, 100_001] and document["split"] == "test"
    assert document["paired"]["reference"] == "random" and list(document["paired"]["agents"]) == ["first-fit"]
    assert "(test seeds)" in result.stdout and "vs random $" in result.stdout
    assert "| vs random $ | wins |" in (tmp_path / "leaderboard.md").read_text()


def test_evaluate__placement_env_reports_optimality_rate_and_regret() -> None:
    """On the one-step env each agent gets an optimality rate in [0, 1] and a regret >= 0."""
    evaluation = evaluate(
        "fleet5-synthetic", ["cheapest", "first-fit"], episodes=4, seed=0, progress=False, env=PLACEMENT_ENV
    )
    assert evaluation.env == "placement" and evaluation.oracle_references() is None
    for name in evaluation.agents:
        summary = evaluation.summary(name)
        assert 0.0 <= summary.mean["optimal"] <= 1.0 and summary.mean["regret_usd"] >= 0.0


def test_evaluate__oracle_gives_every_agent_its_gaps_and_a_renamed_agent_keeps_them() -> None:
    """With the oracle, each row has gap = (objective - bound) / bound; renaming and adding agents re-derives it."""
    evaluation = evaluate("toy3", ["first-fit", "oracle"], episodes=2, seed=0, progress=False)
    references = evaluation.oracle_references()
    assert references is not None and len(references) == 2
    for row, reference in zip(evaluation.rows("first-fit"), references, strict=True):
        assert row["optimality_gap"] == pytest.approx(
            (row["objective_usd"] - reference.lower_bound_usd) / reference.lower_bound_usd
        )
        assert row["objective_usd"] >= reference.lower_bound_usd - 1e-9  # no policy beats the bound
    extra = evaluate("toy3", ["cheapest"], episodes=2, seed=0, progress=False)
    combined = evaluation.renamed({"first-fit": "ff"}).with_agents({"cheapest-again": extra.agents["cheapest"]})
    assert list(combined.agents) == ["ff", "oracle", "cheapest-again"]
    assert "optimality_gap" in combined.summary("cheapest-again").mean
    assert combined.rows("ff") == evaluation.rows("first-fit")
    other_seeds = evaluate("toy3", ["cheapest"], episodes=2, seed=1, progress=False)
    with pytest.raises(ValueError, match="paired"):
        evaluation.with_agents({"unpaired": other_seeds.agents["cheapest"]})


def test_read_evaluation__reads_back_what_was_written(tmp_path: Path) -> None:
    """results.json written by the writer reads back to the same document (oracle rows and gaps included)."""
    from training.evaluation.results_writer import write_json

    evaluation = evaluate("toy3", ["first-fit", "oracle"], episodes=2, seed=0, progress=False)
    path = write_json(evaluation, tmp_path / "results.json")
    again = read_evaluation(path)
    assert again.to_json() == evaluation.to_json()
    assert again.agents["oracle"].episodes[0].oracle == evaluation.agents["oracle"].episodes[0].oracle


@pytest.mark.subprocess
def test_evaluate_command__reads_each_scenario_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two scenarios, three agents each: each scenario file is parsed once (not once per agent)."""
    from training.cli.main import main

    loads = count_scenario_loads(monkeypatch)
    status = main(
        [
            "evaluate",
            "--scenario",
            "toy3",
            "--scenario",
            "fleet5-synthetic",
            "--agents",
            "first-fit,cheapest,aco",
            "--episodes",
            "1",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert status == 0
    assert sorted(Path(path).stem for path in loads) == ["fleet5-synthetic", "toy3"]
    assert (tmp_path / "toy3" / "results.json").is_file()


def test_bench_scale__reads_each_scenario_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several runs on one scenario share it: one parse."""
    from training.benchmarks.scale import bench_scale

    loads = count_scenario_loads(monkeypatch)
    result = bench_scale(runs=(("toy3", "first-fit", None), ("toy3", "aco", None)), real_trace=False)
    assert [row["agent"] for row in result["runs"]] == ["first-fit", "aco"] and len(loads) == 1
