"""The printed leaderboard: rows sorted by objective, the CI on the first column, a legend of what it shows."""

from __future__ import annotations

import io

from training.evaluation.leaderboard import (
    LEGEND_CI,
    LEGEND_GAPS,
    LEGEND_HINDSIGHT,
    LEGEND_PLACEMENT,
    LEGEND_SAMPLED,
    print_leaderboard,
)
from training.evaluation.results import AgentEvaluation, EpisodeEvaluation, Evaluation, OracleEpisode


def episode(seed: int, objective_usd: float, oracle: OracleEpisode | None = None) -> EpisodeEvaluation:
    return EpisodeEvaluation(seed, {"objective_usd": objective_usd, "cost_usd": objective_usd}, 0.1, 0.2, oracle)


def printed(evaluation: Evaluation) -> str:
    out = io.StringIO()  # not a terminal: plain columns
    print_leaderboard(evaluation, out)
    return out.getvalue()


def test_leaderboard__sorted_by_objective_with_gaps_ci_and_legend() -> None:
    """Best agent first; objective as mean +- half-width; the legend explains +-, the gaps and -sampled."""
    bound = OracleEpisode(lower_bound_usd=1.0, plan_objective_usd=1.0, solve_time_s=0.5, proven_optimal=True)
    agents = {
        "first-fit": AgentEvaluation((episode(0, 3.0), episode(1, 5.0))),
        "oracle": AgentEvaluation((episode(0, 1.0, bound), episode(1, 1.0, bound))),
        "ppo-sampled": AgentEvaluation((episode(0, 2.0), episode(1, 2.0))),
    }
    text = printed(Evaluation("toy", "episode", 0, (0, 1), agents))
    lines = text.splitlines()
    assert lines[0] == "toy: 2 episode(s) per agent, seeds 0..1 (training seeds)"
    assert [line.split()[0] for line in lines[2:5]] == ["oracle", "ppo-sampled", "first-fit"]
    assert "4.000 +- 12.706" in lines[4] and "300.0%" in lines[4]  # mean 4, t(0.975, 1) * 1.414 / 1.414; gap 3x
    assert "oracle lower bound (mean): 1.0000 USD; proven optimal in 100% of episodes" in lines
    assert {LEGEND_CI, LEGEND_GAPS, LEGEND_SAMPLED, LEGEND_HINDSIGHT} <= set(lines)
    assert lines[2].startswith("oracle (hindsight) ") and "(hindsight)" not in lines[3] + lines[4]
    assert "\x1b" not in text and all(line == line.rstrip() for line in lines)


def test_leaderboard__one_episode_placement_env_has_no_ci_and_explains_its_labels() -> None:
    """One-step env: optimality rate and regret columns, the label's meaning, and no +- with one episode."""
    rows = {"optimal": 1.0, "regret_usd": 0.0}
    agents = {"cheapest": AgentEvaluation((EpisodeEvaluation(0, rows, 0.1, 0.1),))}
    text = printed(Evaluation("toy", "placement", 0, (0,), agents))
    assert "optimality rate" in text and "100.0%" in text and "+-" not in text.splitlines()[2]
    assert LEGEND_PLACEMENT in text.splitlines() and LEGEND_CI not in text.splitlines()
    assert LEGEND_HINDSIGHT not in text.splitlines()  # no hindsight agent here


def test_leaderboard__penalty_columns_of_zeros_are_left_out() -> None:
    """A term no agent paid (weight 0, or never triggered) has no column; one some agent paid has."""
    rows = {"objective_usd": 2.0, "cost_usd": 1.5, "sla_usd": 0.5, "utility_usd": 0.0, "unfairness_usd": 0.0}
    agents = {
        "first-fit": AgentEvaluation((EpisodeEvaluation(0, rows, 0.1, 0.2),)),
        "cheapest": AgentEvaluation((EpisodeEvaluation(0, {**rows, "sla_usd": 0.0}, 0.1, 0.2),)),
    }
    header = printed(Evaluation("toy", "episode", 0, (0,), agents)).splitlines()[1]
    assert "sla $" in header and "cost $" in header
    assert "utility $" not in header and "unfairness $" not in header
