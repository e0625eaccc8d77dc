"""Evaluation on planted scenarios: every row has the proven optimum, the exact gap and per-step agreement."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils import seeding

import scenarios
from aco_env.hindsight import planted_of
from aco_env.registration import PLANTED5_ID
from agents import make_agent
from tests.paths import ROOT
from training.evaluation.agreement import PlantedScore, PlantedTracker
from training.evaluation.evaluator import evaluate
from training.evaluation.leaderboard import LEGEND_HINDSIGHT, LEGEND_PLANTED, print_leaderboard
from training.evaluation.results import AgentEvaluation, EpisodeEvaluation, Evaluation, read_evaluation
from training.evaluation.results_writer import write_json

PLANTED_KEYS = ("planted_optimum_usd", "planted_gap", "planted_agreement", "planted_on_trajectory")


def agreement_by_hand(agent_name: str, seed: int) -> tuple[float, float, int]:
    """Play ``agent_name`` on planted5 and count agreement from ``planted().planted_nodes`` and the job ids.

    Returns the agreement share, the on-trajectory share and the decisions.
    """
    env = gym.make(PLANTED5_ID)
    agent = make_agent(agent_name, env)
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    episode = planted_of(env)
    node_of = {job.job_id: node for job, node in zip(episode.spec.jobs, episode.planted_nodes, strict=True)}
    agreed = on_path = decisions = 0
    on = True
    while True:
        planted = node_of[env.unwrapped.cluster_view().job.job_id]
        action = int(agent.predict(obs)[0])
        obs, _, terminated, truncated, _ = env.step(action)
        decisions += 1
        agreed += action == planted
        on_path += on
        on = on and action == planted  # every action of these agents is valid
        if terminated or truncated:
            return agreed / decisions, on_path / decisions, decisions


def test_evaluate__planted_rows_have_the_optimum_the_exact_gap_and_the_agreement() -> None:
    """The optimum is the scenario's draw per seed; gap = objective / optimum - 1; agreement as counted by hand."""
    evaluation = evaluate("planted5", ["planted", "first-fit"], episodes=3, seed=4, progress=False)
    scenario = scenarios.load("planted5")
    for row in evaluation.rows("planted"):
        assert row["planted_gap"] == pytest.approx(0.0, abs=1e-9)
        assert row["planted_agreement"] == row["planted_on_trajectory"] == 1.0
    for row in evaluation.rows("first-fit"):
        seed = int(row["seed"])
        optimum = scenario.planted_episode(seeding.np_random(seed)[0]).optimum_usd
        assert row["planted_optimum_usd"] == optimum
        assert row["planted_gap"] == pytest.approx(row["objective_usd"] / optimum - 1.0)
        agreement, on_trajectory, decisions = agreement_by_hand("first-fit", seed)
        assert row["decisions"] == decisions
        assert row["planted_agreement"] == pytest.approx(agreement)
        assert row["planted_on_trajectory"] == pytest.approx(on_trajectory)
        assert 0.0 < row["planted_on_trajectory"] < 1.0 and row["planted_agreement"] < 1.0


def test_evaluate__no_planted_keys_off_planted_scenarios() -> None:
    """On toy3 the rows have no planted_* metric."""
    evaluation = evaluate("toy3", ["first-fit"], episodes=1, seed=0, progress=False)
    assert not set(PLANTED_KEYS) & set(evaluation.rows("first-fit")[0])


def test_read_evaluation__planted_rows_read_back(tmp_path: Path) -> None:
    """results.json with planted rows reads back to the same document and the same scores."""
    evaluation = evaluate("planted5", ["cheapest"], episodes=2, seed=0, progress=False)
    again = read_evaluation(write_json(evaluation, tmp_path / "results.json"))
    assert again.to_json() == evaluation.to_json()
    assert again.agents["cheapest"].episodes[1].planted == evaluation.agents["cheapest"].episodes[1].planted


def test_planted_tracker__an_invalid_action_disagrees_but_keeps_the_trajectory() -> None:
    """Agreement counts every decision; the trajectory ends at the first valid disagreement, which is on it."""
    tracker = PlantedTracker(optimum_usd=2.0)
    for action, planted, valid in [(1, 1, True), (3, 2, False), (2, 2, True), (0, 1, True), (1, 1, True)]:
        tracker.record(action, planted, valid)
    assert tracker.score() == PlantedScore(2.0, agreement=3 / 5, on_trajectory=4 / 5)
    assert not tracker.on_trajectory
    assert PlantedTracker(1.0).score() == PlantedScore(1.0, 1.0, 1.0)


def test_leaderboard__planted_columns_optimum_line_and_legend() -> None:
    """gap/opt, agree and on-path columns; the optimum line; the legend; planted named a hindsight reference."""

    def row(seed: int, objective: float, agreement: float) -> EpisodeEvaluation:
        metrics = {"objective_usd": objective, "cost_usd": objective}
        return EpisodeEvaluation(seed, metrics, 0.1, 0.2, planted=PlantedScore(2.0, agreement, agreement / 2))

    agents = {
        "first-fit": AgentEvaluation((row(0, 3.0, 0.5), row(1, 5.0, 0.3))),
        "planted": AgentEvaluation((row(0, 2.0, 1.0), row(1, 2.0, 1.0))),
    }
    out = io.StringIO()
    print_leaderboard(Evaluation("planted-toy", "episode", 0, (0, 1), agents), out)
    lines = out.getvalue().splitlines()
    assert all(column in lines[1] for column in ("gap/opt", "agree", "on-path"))
    assert lines[2].split()[0] == "planted" and "0.0%" in lines[2] and "100%" in lines[2]
    assert "100.0%" in lines[3] and "40%" in lines[3] and "20%" in lines[3]  # gap (4 - 2) / 2; agree 0.4; on-path
    assert "planted optimum (mean): 2.0000 USD, proven by construction" in lines
    assert LEGEND_PLANTED in lines and "several schedules can be optimal" in LEGEND_PLANTED
    assert lines[2].startswith("planted (hindsight)") and LEGEND_HINDSIGHT in lines


@pytest.mark.subprocess
def test_evaluate_cli__planted_scenario_prints_and_writes_the_planted_columns(tmp_path: Path) -> None:
    """`aco-env evaluate --scenario planted5`: the optimum line and columns printed, the keys in results.json."""
    command = ["evaluate", "--scenario", "planted5", "--agents", "planted,cheapest", "--episodes", "2"]
    result = subprocess.run(
        [sys.executable, "-m", "training.cli.main", *command, "--out", str(tmp_path), "--no-progress"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert "planted optimum (mean): 4.4667 USD, proven by construction" in result.stdout
    assert "gap/opt" in result.stdout and "agree" in result.stdout
    document = json.loads((tmp_path / "results.json").read_text())
    for agent in ("planted", "cheapest"):
        assert set(PLANTED_KEYS) <= set(document["agents"][agent]["mean"])
    assert document["agents"]["planted"]["mean"]["planted_agreement"] == 1.0
