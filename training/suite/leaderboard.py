"""The suite's leaderboard: aggregates per group, normalised and raw scores per task, in Markdown.

:func:`leaderboard_tables` builds the tables (rich, as every table of the CLI:
:mod:`training.evaluation.tables`); :func:`print_suite_leaderboard` prints the aggregates to the
terminal; :func:`leaderboard_markdown` writes the whole page (``leaderboard.md``, and
docs/leaderboard.md when asked), with the command that made it and the suite's version.
"""

from __future__ import annotations

import numpy as np
from rich.table import Table

from training.evaluation.tables import new_table, print_table, render_markdown
from training.suite.runner import AGGREGATE_GROUPS, SuiteRun
from training.suite.scores import AGGREGATES

GROUP_TITLES = {
    "held-out": "Held-out tasks (never trained or tuned on)",
    "train": "Training tasks",
    "all": "All tasks",
}
PAGE_GROUPS = ("held-out", "train")
"""The groups the Markdown page aggregates (results.json and the terminal have ``"all"`` too: the
page judges agents on the held-out tasks and shows the training tasks beside, not a mix of both)."""
NOT_PLAYED = "-"
PER_TASK_USD_NOTE = (
    "Each task's 0, 1 and bound in USD, every agent's objective per episode and the times: the run's "
    "`suite.json` (`tasks.NAME.reference`, `tasks.NAME.agents`)."
)
"""A table's cell where the agent did not play the task."""
AGGREGATE_NOTE = (
    "normalised score per test episode: (weak baseline's mean objective - objective) / (weak baseline's mean - "
    "reference's mean, or the oracle bound's where the task's \"1 =\" says so), per task; higher is better; "
    "IQM (25 % trimmed mean) and optimality gap "
    "(mean shortfall below 1) over every episode's score, median and mean over the task means (rliable's); "
    "[low, high] = 95 % stratified bootstrap interval (rliable, 2,000 replications, episodes resampled within tasks)"
)


def aggregate_table(run: SuiteRun, group: str) -> Table | None:
    """Agents (best IQM first) x IQM, median, mean, optimality gap over a group; ``None`` without tasks.

    An agent that did not play every task of the group has a row saying which it missed.
    """
    results = run.aggregates(group)
    if not run.tasks_of(group):
        return None
    table = new_table(["agent", *AGGREGATES])
    for agent in sorted(results, key=lambda name: -results[name].intervals["IQM"].point):
        table.add_row(agent, *(str(results[agent].intervals[metric]) for metric in AGGREGATES))
    for agent in run.agents:
        if agent not in results:
            missed = f"did not play {', '.join(run.missing(agent, group))}"
            table.add_row(agent, missed, *([""] * (len(AGGREGATES) - 1)))
    return table


def task_score_table(run: SuiteRun) -> Table:
    """Tasks x agents: each agent's mean normalised score, beside the bound's score and the reference."""
    table = new_table(["task", "group", "1 =", "bound", *run.agents], right_aligned_from=3)
    for task_run in run.tasks:
        scores = [
            f"{task_run.scores(agent).mean():.3f}" if agent in task_run.agents else NOT_PLAYED for agent in run.agents
        ]
        one = task_run.task.reference.describe()
        if task_run.reference.normalised_by == "bound":
            one = f"oracle bound (reference within {task_run.reference.margin:.0%} of {run.suite.weak_baseline})"
        table.add_row(
            task_run.task.name, task_run.task.group, one, f"{task_run.bound_score():.3f}", *scores,
        )  # fmt: skip
    return table


def task_objective_table(run: SuiteRun) -> Table:
    """Tasks x agents: each agent's mean objective (USD), beside the task's 0, 1 and bound."""
    weak = run.suite.weak_baseline
    table = new_table(["task", f"0 = {weak}", "1 = reference", "bound", *run.agents])
    for task_run in run.tasks:
        reference = task_run.reference
        means = [
            f"{np.mean(task_run.agents[agent].objectives_usd):.3f}" if agent in task_run.agents else NOT_PLAYED
            for agent in run.agents
        ]
        table.add_row(
            task_run.task.name, f"{reference.baseline_mean:.3f}", f"{reference.reference_mean:.3f}",
            f"{reference.bound_mean:.3f}", *means,
        )  # fmt: skip
    return table


def print_suite_leaderboard(run: SuiteRun) -> None:
    """The aggregate tables of every group played, then each task's mean objectives (USD), to the terminal."""
    for group in AGGREGATE_GROUPS:
        table = aggregate_table(run, group)
        if table is not None:
            print(f"{run.suite.label}: {GROUP_TITLES[group]}, {len(run.tasks_of(group))} tasks")
            print_table(table)
    print(AGGREGATE_NOTE)
    print(f"{run.suite.label}: mean objective per task (USD, lower is better)")
    print_table(task_objective_table(run))


def leaderboard_markdown(run: SuiteRun) -> str:
    """The whole leaderboard page: how it was made, aggregates per group and per-task scores.

    The objectives in USD (:func:`task_objective_table`, printed by ``aco-env suite``) and the
    times (machine-bound) are in the run's suite.json, not on the page.
    """
    episodes = {len(task_run.task.test_seeds) for task_run in run.tasks}
    lines = [
        f"# Leaderboard: {run.suite.label}",
        "",
        f"Environment `{run.suite.env}`, {len(run.tasks)} tasks, {'/'.join(map(str, sorted(episodes)))} test "
        f"episodes per agent and task (the suite: `training/suite/{run.suite.path.name}`; what the tasks are: "
        "docs/suite.md). "
        "Every number is fixed by the suite's version and the agents. "
        "Made by:",
        "",
        *(_command_item(command) for command in run.commands),
        "",
        f"Scores are normalised per task: the weak baseline `{run.suite.weak_baseline}` scores 0 and the task's "
        "reference 1 (the planted optimum, or the plan of the oracle named, or its bound where the task's "
        '"1 =" says so); scores above 1 beat the reference. '
        "`bound` is the oracle's lower bound normalised the same way: no policy's mean can exceed it.",
        "",
    ]
    for group in PAGE_GROUPS:
        table = aggregate_table(run, group)
        if table is not None:
            names = ", ".join(task_run.task.name for task_run in run.tasks_of(group))
            lines += [f"## {GROUP_TITLES[group]}", "", f"{len(run.tasks_of(group))} tasks: {names}.", ""]
            lines += [render_markdown(table).rstrip("\n"), ""]
    lines += [f"* {AGGREGATE_NOTE}", "", "![aggregates](leaderboard/aggregates.png)", ""]
    lines += ["![performance profiles](leaderboard/profiles.png)", ""]
    lines += ["## Per task: mean normalised score", "", render_markdown(task_score_table(run)).rstrip("\n"), ""]
    lines += [PER_TASK_USD_NOTE, ""]
    return "\n".join(lines)


def _command_item(command: str) -> str:
    """A Markdown list item of one ``"DATE aco-env ..."`` entry of a run's commands."""
    date, _, line = command.partition(" ")
    return f"* {date}: `{line}`" if line.startswith("aco-env") else f"* `{command}`"
