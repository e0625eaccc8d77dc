"""Paired comparisons: the mean of per-seed differences with its t interval, wins and ties, unpaired seeds refused."""

from __future__ import annotations

import dataclasses
import io
import json

import numpy as np
import pytest
from scipy import stats

from training.evaluation.leaderboard import leaderboard_markdown, print_leaderboard
from training.evaluation.paired import UnpairedError, paired_difference, paired_differences
from training.evaluation.results import AgentEvaluation, EpisodeEvaluation, Evaluation


def agent(objectives: list[float], first_seed: int = 0) -> AgentEvaluation:
    """An agent's episodes with these objectives on seeds first_seed, first_seed + 1, ..."""
    return AgentEvaluation(
        tuple(
            EpisodeEvaluation(first_seed + k, {"objective_usd": value, "cost_usd": value}, 0.1, 0.2)
            for k, value in enumerate(objectives)
        )
    )


def test_paired_difference__known_differences_give_the_known_interval_and_wins() -> None:
    """Differences -1, -2, 0, +1 (USD): mean -0.5, half-width t(0.975, 3) * sd / 2, 2 wins, 1 tie, 1 loss."""
    reference = [5.0, 6.0, 7.0, 8.0]
    values = [4.0, 4.0, 7.0, 9.0]
    result = paired_difference("a", values, "ref", reference, seeds=(10, 11, 12, 13))
    differences = np.array([-1.0, -2.0, 0.0, 1.0])
    assert result.mean_difference == pytest.approx(-0.5)
    assert result.ci95 == pytest.approx(stats.t.ppf(0.975, 3) * differences.std(ddof=1) / 2.0)
    assert (result.wins, result.ties, result.losses, result.episodes) == (2, 1, 1, 4)


def test_paired_difference__a_constant_shift_has_no_spread() -> None:
    """Every seed 0.25 USD better: the mean is -0.25 with a zero-width interval, and every seed is a win."""
    result = paired_difference("a", [0.75, 1.75, 2.75], "ref", [1.0, 2.0, 3.0], seeds=(0, 1, 2))
    assert result.mean_difference == pytest.approx(-0.25) and result.ci95 == pytest.approx(0.0, abs=1e-12)
    assert (result.wins, result.ties, result.losses) == (3, 0, 0)


def test_paired_differences__identical_agents_give_zero_and_all_ties() -> None:
    """An agent against a copy of itself: difference 0, interval 0, N ties, no wins."""
    evaluation = Evaluation("toy", "episode", 0, (0, 1, 2), {"a": agent([1.0, 3.0, 2.0]), "b": agent([1.0, 3.0, 2.0])})
    result = evaluation.paired()["b"]
    assert (result.reference, result.mean_difference, result.ci95) == ("a", 0.0, 0.0)
    assert (result.wins, result.ties, result.losses) == (0, 3, 0)


def test_paired_differences__mismatched_seeds_or_an_unknown_reference_are_refused() -> None:
    """Seeds that differ, in value or count, are not compared; nor is a reference that was not evaluated."""
    rows = {"a": [{"seed": 0, "objective_usd": 1.0}, {"seed": 1, "objective_usd": 2.0}]}
    with pytest.raises(UnpairedError, match=r"b played seeds 5..6 and a played 0..1: .*same seeds"):
        paired_differences({**rows, "b": [{"seed": 5, "objective_usd": 1.0}, {"seed": 6, "objective_usd": 1.0}]})
    with pytest.raises(UnpairedError, match="same seeds"):
        paired_differences({**rows, "b": [{"seed": 0, "objective_usd": 1.0}]})
    with pytest.raises(UnpairedError, match="reference agent 'c' was not evaluated"):
        paired_differences(rows, reference="c")
    assert paired_differences({"a": [{"seed": 0, "regret_usd": 0.1}], "b": [{"seed": 0, "regret_usd": 0.2}]}) == {}


def test_evaluation__paired_in_results_json_the_leaderboard_and_markdown() -> None:
    """results.json holds the paired block (read back with its reference); both tables show the columns."""
    agents = {"first-fit": agent([3.0, 5.0]), "aco": agent([2.0, 5.5]), "random": agent([4.0, 6.0])}
    evaluation = Evaluation("toy", "episode", 100_000, (100_000, 100_001), agents, split="test", reference="aco")
    document = json.loads(json.dumps(evaluation.to_json()))
    assert document["split"] == "test"
    assert document["paired"]["reference"] == "aco" and set(document["paired"]["agents"]) == {"first-fit", "random"}
    half_width = stats.t.ppf(0.975, 1) * np.std([2.0, 0.5], ddof=1) / np.sqrt(2)  # differences +2, +0.5
    assert document["paired"]["agents"]["random"] == {
        "episodes": 2, "mean_difference": 1.25, "ci95": pytest.approx(half_width), "wins": 0, "ties": 0, "losses": 2,
    }
    assert Evaluation.from_json(document).to_json() == document
    out = io.StringIO()
    print_leaderboard(evaluation, out)
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("seeds 100000..100001 (test seeds)") and "vs aco $" in lines[1] and "wins" in lines[1]
    row = next(line for line in lines if line.startswith("first-fit"))
    assert "+0.250 +- " in row and "1/2 (0)" in row  # differences +1, -0.5
    assert "reference" in next(line for line in lines if line.startswith("aco"))
    markdown = leaderboard_markdown(dataclasses.replace(evaluation, reference=None))  # the first agent
    assert "| agent | objective $ | vs first-fit $ | wins |" in markdown
    assert "| aco | 3.750 +- " in markdown and "| -0.250 +- " in markdown and "| 1/2 (0) |" in markdown
