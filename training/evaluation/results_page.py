"""The generated tables of a results page (``docs/results.md``): one per results folder kept in the repository.

``aco-env results`` (``make results``) reads every ``FOLDER/NAME/results.json`` (an evaluation's,
written by ``aco-env evaluate --out FOLDER/NAME``) with the ``provenance.json`` beside it, and
rewrites the page's generated block ``NAME`` (:func:`training.outputs.write_generated`): a header
line naming the command, the commit and the date, then the leaderboard the evaluation printed
(:func:`training.evaluation.leaderboard.leaderboard_markdown`: the same numbers, wins counted for
the agent of the row), without its counts, latencies and legend (:data:`LEFT_OUT`; the page says
what the columns mean, and results.json has the rest). The page's hand-written text is never touched; a folder
without a block yet gets one at the end of the page.

A folder of several scenarios (``aco-env evaluate --scenario A --scenario B --out FOLDER/NAME``
writes ``FOLDER/NAME/A/results.json`` and ``.../B/results.json``) becomes one summary table
(:func:`summary_table`): a row per scenario, each agent's mean objective, and the first agent
listed against each other one, seed by seed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from training.evaluation.leaderboard import leaderboard_markdown
from training.evaluation.paired import PairedDifference
from training.evaluation.results import Evaluation, read_evaluation
from training.evaluation.results_writer import PROVENANCE_JSON, RESULTS_JSON
from training.outputs import generated_names, write_generated

RESULTS_COMMAND = "make results"
"""The command that rebuilds the generated blocks (named in each block's marker)."""
SHORT_COMMIT = 10
"""Hex digits of a commit shown in a table's header."""
LEFT_OUT = frozenset({"SLA viol", "QoS ok", "failed", "rejected", "p50 ms", "p99 ms"})
"""Leaderboard columns a results page leaves out: counts the USD columns price, and machine-bound latencies."""


class ResultsPageError(ValueError):
    """A results folder without its results.json or provenance.json, or a provenance without a command."""


def table_header(record: dict[str, Any]) -> str:
    """The line above a table: its command, commit and date, from a ``provenance.json`` record.

    >>> record = {"command": "aco-env evaluate", "commit": "0123456789012", "started": "2026-12-05T03:00:00Z"}
    >>> table_header(record)
    'Command: `aco-env evaluate` (commit 0123456789, 2026-12-05).'
    """
    commit = (record.get("commit") or "not recorded")[:SHORT_COMMIT]
    date = str(record.get("started") or "date not recorded")[:10]
    return f"Command: `{record['command']}` (commit {commit}, {date})."


def results_blocks(folder: Path) -> dict[str, str]:
    """``{NAME: Markdown}`` for every ``folder/NAME/results.json``, in name order.

    Raises:
        ResultsPageError: A results.json has no provenance.json (or one without a command) beside it.
    """
    blocks = {}
    for results in sorted(folder.glob(f"*/{RESULTS_JSON}")):
        name = results.parent.name
        record = _provenance(results.parent)
        evaluation = read_evaluation(results)
        blocks[name] = f"{table_header(record)}\n\n{page_table(leaderboard_markdown(evaluation))}"
    for run in sorted({path.parent.parent for path in folder.glob(f"*/*/{RESULTS_JSON}")}):
        parts = sorted(run.glob(f"*/{RESULTS_JSON}"))
        commands = dict.fromkeys(table_header(_provenance(path.parent)) for path in parts)
        table = summary_table([(path.parent.name, read_evaluation(path)) for path in parts])
        blocks[run.name] = "\n".join(commands) + f"\n\n{table}"
    return dict(sorted(blocks.items()))


def summary_table(parts: list[tuple[str, Evaluation]]) -> str:
    """Several evaluations by the same agents as one table of mean objectives and paired differences.

    ``parts`` are ``(name, evaluation)``: the scenarios of one ``evaluate --scenario A --scenario
    B`` (named by their folders), or evaluations kept side by side. With at least as many parts as
    agents a row is a part: each agent's mean, then ``REF - X`` for every other agent X, REF being
    the first agent (the mean over seeds of REF's objective minus X's, the half-width of its 95 %
    t-interval, and the seeds REF wins of N; < 0: REF is better). Otherwise a row is an agent: per
    part its mean and ``vs REF`` (the agent's objective minus REF's, and the seeds the agent wins,
    as the leaderboard's columns).

    Raises:
        ResultsPageError: The parts were not played by the same agents.
    """
    agents = list(parts[0][1].agents)
    if any(list(evaluation.agents) != agents for _, evaluation in parts):
        raise ResultsPageError(f"the evaluations of one folder were played by different agents: {', '.join(agents)}")
    header, rows = _rows_by_part(parts, agents) if len(parts) >= len(agents) else _rows_by_agent(parts, agents)
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _rows_by_part(parts: list[tuple[str, Evaluation]], agents: list[str]) -> tuple[list[str], list[list[str]]]:
    """A row per part: every agent's mean, then ``REF - X`` for each other agent."""
    reference = parts[0][1].reference_agent
    others = [name for name in agents if name != reference]
    header = ["scenario (episodes, split)", *(f"{name} $" for name in agents)]
    header += [f"{reference} - {name}" for name in others]
    rows = []
    for name, evaluation in parts:
        paired = evaluation.paired()
        means = [_mean_cell(evaluation, agent) for agent in agents]
        rows.append([_part_label(name, evaluation), *means, *(_reference_cell(paired[agent]) for agent in others)])
    return header, rows


def _rows_by_agent(parts: list[tuple[str, Evaluation]], agents: list[str]) -> tuple[list[str], list[list[str]]]:
    """A row per agent (best first on the first part): per part its mean and ``vs REF``."""
    reference = parts[0][1].reference_agent
    header = ["agent"]
    for name, evaluation in parts:
        header += [f"{_part_label(name, evaluation)} $", f"vs {reference}"]
    first = parts[0][1]
    paired = [evaluation.paired() for _, evaluation in parts]
    rows = []
    for agent in sorted(agents, key=lambda agent: first.summary(agent).mean["objective_usd"]):
        cells = [agent]
        for (_, evaluation), differences in zip(parts, paired, strict=True):
            cells += [_mean_cell(evaluation, agent), _versus_cell(differences.get(agent))]
        rows.append(cells)
    return header, rows


def _part_label(name: str, evaluation: Evaluation) -> str:
    return f"{name} ({evaluation.episodes}, {evaluation.split or 'no split'})"


def _mean_cell(evaluation: Evaluation, agent: str) -> str:
    summary = evaluation.summary(agent)
    half_width = summary.ci95.get("objective_usd")
    return f"{summary.mean['objective_usd']:.3f}" + (f" +- {half_width:.3f}" if half_width is not None else "")


def _difference_cell(mean_usd: float, ci95: float | None, wins: int, episodes: int) -> str:
    """``+0.123 +- 0.045, 12/20``: a paired mean difference, its interval and the seeds won."""
    half_width = f" +- {ci95:.3f}" if ci95 is not None else ""
    return f"{mean_usd:+.3f}{half_width}, {wins}/{episodes}"


def _reference_cell(difference: PairedDifference) -> str:
    """``REF - X`` with its interval and the reference's wins, from X's paired difference with REF."""
    return _difference_cell(-difference.mean_difference, difference.ci95, difference.losses, difference.episodes)


def _versus_cell(difference: PairedDifference | None) -> str:
    """``agent - REF`` with its interval and the agent's wins (``reference`` for REF itself)."""
    if difference is None:
        return "reference"
    return _difference_cell(difference.mean_difference, difference.ci95, difference.wins, difference.episodes)


def page_table(markdown: str) -> str:
    r"""A leaderboard's Markdown as a results page shows it: the title and the table less :data:`LEFT_OUT`.

    >>> page_table("**t**\n\n| agent | objective $ | p50 ms |\n|---|---:|---:|\n| aco | 1.0 | 0.1 |\n\n* legend\n")
    '**t**\n\n| agent | objective $ |\n|---|---:|\n| aco | 1.0 |\n'
    """
    title, _, rest = markdown.partition("\n\n")
    rows = [line for line in rest.splitlines() if line.startswith("|")]
    cells = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in rows]
    keep = [k for k, header in enumerate(cells[0]) if header not in LEFT_OUT]
    kept = ["| " + " | ".join(row[k] for k in keep) + " |" for row in cells]
    kept[1] = "|" + "|".join(cells[1][k] for k in keep) + "|"
    return f"{title}\n\n" + "\n".join(kept) + "\n"


def _provenance(run: Path) -> dict[str, Any]:
    path = run / PROVENANCE_JSON
    if not path.is_file():
        raise ResultsPageError(f"{run}: no {PROVENANCE_JSON} beside {RESULTS_JSON} (evaluate again with --out {run})")
    record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if not record.get("command"):
        raise ResultsPageError(f"{path}: no command recorded")
    return record


def write_results_page(folder: Path, page: Path) -> list[str]:
    """Rewrite ``page``'s generated blocks from the results folders in ``folder``; returns the blocks' names.

    Raises:
        ResultsPageError: A block of the page has no results folder (a table nothing can rebuild).
    """
    blocks = results_blocks(folder)
    if page.exists():
        stale = [name for name in generated_names(page.read_text(encoding="utf-8")) if name not in blocks]
        if stale:
            raise ResultsPageError(
                f"{page}: the table {stale[0]!r} has no results folder {folder / stale[0]} "
                "(restore it or delete the table)"
            )
    write_generated(page, blocks, RESULTS_COMMAND, "Results")
    return list(blocks)
