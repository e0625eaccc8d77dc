"""The printed leaderboard of an evaluation: agents as rows, sorted by mean objective, and a legend.

Hindsight agents (the oracle, ``lookahead-clairvoyant``: they read the episode's future) are
marked ``(hindsight)`` after their name. Beside the objective, each agent is compared with the
reference agent (the first agent, or ``Evaluation.reference``) on the same seeds: the mean of
the per-seed differences with its 95 % interval, and the seeds it wins
(:mod:`training.evaluation.paired`). :func:`leaderboard_markdown` gives the same table as
Markdown (an evaluation's ``leaderboard.md``).
"""

from __future__ import annotations

from typing import TextIO

from rich.table import Table

from agents import is_hindsight_agent
from digital_twin.objective import PENALTIES
from training.evaluation.paired import PairedDifference
from training.evaluation.protocol import split_of
from training.evaluation.results import EPISODE_ENV_NAME, ORACLE, SAMPLED_SUFFIX, Evaluation, Summary
from training.evaluation.tables import new_table, print_table, render_markdown

EPISODE_COLUMNS = (
    ("objective_usd", "objective $", "{:.3f}"),
    ("cost_usd", "cost $", "{:.3f}"),
    *((term.usd_key, f"{term.name} $", "{:.2f}") for term in PENALTIES),
    ("sla_violations", "SLA viol", "{:.1f}"),
    ("qos_compliance", "QoS ok", "{:.0%}"),
    ("failed_jobs", "failed", "{:.1f}"),
    ("rejected_jobs", "rejected", "{:.1f}"),
    ("optimality_gap", "gap/bound", "{:.1%}"),
    ("optimality_gap_vs_plan", "gap/plan", "{:.1%}"),
    ("planted_gap", "gap/opt", "{:.1%}"),
    ("planted_agreement", "agree", "{:.0%}"),
    ("planted_on_trajectory", "on-path", "{:.0%}"),
    ("decision_latency_ms_p50", "p50 ms", "{:.3f}"),
    ("decision_latency_ms_p99", "p99 ms", "{:.3f}"),
)
PLACEMENT_COLUMNS = (
    ("optimal", "optimality rate", "{:.1%}"),
    ("regret_usd", "mean regret $", "{:.4f}"),
    ("decision_latency_ms_p50", "p50 ms", "{:.3f}"),
    ("decision_latency_ms_p99", "p99 ms", "{:.3f}"),
)

_TERM_KEYS = frozenset(term.usd_key for term in PENALTIES)
"""The penalty terms' USD columns: shown only when some agent's mean is not 0 (see :func:`_present`)."""

LEGEND_CI = "+-: half-width of the 95 % t-interval of the mean over episodes"
LEGEND_PAIRED = (
    "vs {reference}: mean over seeds of (agent - {reference}) objective USD, +- the 95 % t-interval's half-width "
    "of those paired differences (< 0: the agent is better); wins: seeds where the agent's objective is strictly "
    "lower than {reference}'s, of N (ties in brackets)"
)
REFERENCE_CELL = "reference"
"""The reference agent's cell in the paired columns."""
LEGEND_GAPS = "gap/bound: (objective - oracle lower bound) / bound; gap/plan: (objective - oracle plan) / plan"
LEGEND_PLANTED = (
    "gap/opt: objective / planted optimum - 1 (exact); agree: share of decisions whose action is the planted "
    "schedule's; on-path: share taken while every earlier decision agreed. Agreement is a diagnostic, not "
    "optimality: several schedules can be optimal (identical nodes, equal-cost swaps)"
)
LEGEND_SAMPLED = f"{SAMPLED_SUFFIX}: the trained policy sampling its actions rather than taking the most likely one"
HINDSIGHT_MARK = " (hindsight)"
"""After the name of an agent that reads the episode's future (``AgentEntry.hindsight``)."""
LEGEND_HINDSIGHT = "(hindsight): the agent reads the episode's future; a reference, not an online policy"
LEGEND_PLACEMENT = (
    "optimality rate: share of decisions whose action is optimal given a cheapest-fit continuation with the "
    "true future; regret: that continuation's objective minus the best action's (USD)"
)


def print_leaderboard(evaluation: Evaluation, file: TextIO | None = None) -> None:
    """Print the title, the table (the first column with its 95 % CI half-width, the paired columns) and the legend."""
    title, table, notes = _leaderboard(evaluation)
    print(title, file=file, flush=True)
    print_table(table, notes, file)


def leaderboard_markdown(evaluation: Evaluation) -> str:
    """The leaderboard as Markdown: the title in bold, the table, the legend as a list (ends in a newline)."""
    title, table, notes = _leaderboard(evaluation)
    return f"**{title}**\n\n" + render_markdown(table, notes)


def _leaderboard(evaluation: Evaluation) -> tuple[str, Table, list[str]]:
    """The title, the table (agents sorted by their mean objective, or regret) and the notes."""
    placement = evaluation.env != EPISODE_ENV_NAME
    columns = PLACEMENT_COLUMNS if placement else EPISODE_COLUMNS
    summaries = {name: evaluation.summary(name) for name in evaluation.agents}
    paired = evaluation.paired()
    reference = evaluation.reference_agent if paired else None
    sort_key = "regret_usd" if placement else "objective_usd"
    shown = [column for column in columns if _present(summaries, column[0])]
    headers = [title for _, title, _ in shown]
    if reference is not None:
        headers[1:1] = [f"vs {reference} $", "wins"]  # beside the objective
    table = new_table(["agent", *headers])
    for name in sorted(summaries, key=lambda name: summaries[name].mean.get(sort_key) or 0.0):
        label = name + (HINDSIGHT_MARK if is_hindsight_agent(name) else "")
        cells = [_cell(summaries[name], key, fmt, key == columns[0][0]) for key, _, fmt in shown]
        if reference is not None:
            cells[1:1] = _paired_cells(paired.get(name))
        table.add_row(label, *cells)
    split = evaluation.split or split_of(evaluation.seeds)
    title = (
        f"{evaluation.scenario}: {evaluation.episodes} episode(s) per agent, seeds "
        f"{evaluation.seeds[0]}..{evaluation.seeds[-1]}"
        + (f" ({split} seeds)" if split is not None else "")
        + (" (one-step placement env)" if placement else "")
    )
    notes = _notes(evaluation, summaries, shown, placement)
    if reference is not None:
        notes.append(LEGEND_PAIRED.format(reference=reference))
    return title, table, notes


def _paired_cells(difference: PairedDifference | None) -> list[str]:
    """The two paired cells of an agent: ``mean +- half-width`` and ``wins/N (ties)``; the reference's say so."""
    if difference is None:
        return [REFERENCE_CELL, "-"]
    mean = f"{difference.mean_difference:+.3f}"
    if mean.lstrip("+-") == "0.000":
        mean = "0.000"
    half_width = f" +- {difference.ci95:.3f}" if difference.ci95 is not None else ""
    return [mean + half_width, f"{difference.wins}/{difference.episodes} ({difference.ties})"]


def _cell(summary: Summary, key: str, fmt: str, with_ci: bool) -> str:
    """The mean of ``key`` formatted, ``-`` when absent, ``+- half-width`` appended for the first column."""
    value = summary.mean.get(key)
    if value is None:
        return "-"
    cell = fmt.format(value)
    if cell.startswith("-") and not cell.strip("-0.%"):  # float noise below zero: "-0.0%" reads as 0
        cell = cell[1:]
    half_width = summary.ci95.get(key)
    if with_ci and half_width is not None:
        cell += " +- " + fmt.format(half_width).lstrip()
    return cell


def _notes(
    evaluation: Evaluation, summaries: dict[str, Summary], shown: list[tuple[str, str, str]], placement: bool
) -> list[str]:
    """The oracle's bound line (episode env) and the legend of what the table shows."""
    notes = []
    if not placement and ORACLE in summaries:
        bound = summaries[ORACLE].mean.get("objective_lower_bound_usd")
        proven = summaries[ORACLE].mean.get("oracle_proven_optimal")
        if bound is not None and proven is not None:
            notes.append(f"oracle lower bound (mean): {bound:.4f} USD; proven optimal in {proven:.0%} of episodes")
    optima = [summary.mean.get("planted_optimum_usd") for summary in summaries.values()]
    optimum = next((value for value in optima if value is not None), None)  # the same seeds for every agent
    if not placement and optimum is not None:
        notes.append(f"planted optimum (mean): {optimum:.4f} USD, proven by construction")
    keys = {key for key, _, _ in shown}
    if evaluation.episodes > 1:
        notes.append(LEGEND_CI)
    if "optimality_gap" in keys:
        notes.append(LEGEND_GAPS)
    if "planted_gap" in keys:
        notes.append(LEGEND_PLANTED)
    if any(name.endswith(SAMPLED_SUFFIX) for name in summaries):
        notes.append(LEGEND_SAMPLED)
    if any(is_hindsight_agent(name) for name in summaries):
        notes.append(LEGEND_HINDSIGHT)
    if placement:
        notes.append(LEGEND_PLACEMENT)
    return notes


def _present(summaries: dict[str, Summary], key: str) -> bool:
    """Whether some agent has ``key``; for a penalty term's USD, whether some agent's mean is not 0.

    A term whose weight is 0 in the scenario (or that no episode triggered) would be a column
    of zeros; it is left out of the printed table (``results.json`` keeps every term).
    """
    values = [summary.mean.get(key) for summary in summaries.values()]
    if key in _TERM_KEYS:
        return any(value for value in values)
    return any(value is not None for value in values)
