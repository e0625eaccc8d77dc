"""Run agents on the benchmark suite: normalised scores per task, rliable aggregates, a leaderboard.

The suite (``training/suite/suite-v2.yaml``, cited as ``aco-suite v2``; ``--suite
training/suite/suite.yaml`` plays the superseded v1) fixes its tasks, their seed
splits, the weak baseline (score 0) and each task's reference (score 1): the planted optimum or the
oracle's plan. ``aco-env suite --agents aco,first-fit,sb3:PATH`` plays every agent on every task's
test seeds, on ``--backend`` (every backend gives the same numbers), and writes into ``--out``:

* ``suite.json``: per task, every agent's episode objectives and normalised scores, the reference,
  and per group of tasks (held-out, train, all) the aggregates: IQM, median, mean and optimality
  gap with 95 % stratified bootstrap intervals, and performance profiles (:mod:`training.suite.scores`);
* ``leaderboard.md`` (and ``--leaderboard FILE``, e.g. docs/leaderboard.md) with its plots
  ``leaderboard/aggregates.png`` and ``leaderboard/profiles.png`` beside it.

A task's reference is computed once (the weak baseline and the task's oracle on every test seed)
and cached by task and suite version: the repository ships the references the leaderboard was made
with (``training/suite/aco-suite-v2-references.json``, and v1's); others go to ``--cache`` (default
``~/.cache/aco-env``). ``--tasks`` or ``--group`` play part of the suite; ``--add-to DIR`` keeps the
agents of earlier runs' ``suite.json`` (same suite) and adds these, on any tasks, so a
leaderboard can grow one agent at a time; ``--agents none --add-to A B`` only merges runs made
apart (in parallel, or on other machines), on the tasks ``--tasks`` / ``--group`` choose. An
agent that did not play every task of a group has no aggregate over that group (the leaderboard
names the tasks it missed). ``--list`` prints the tasks and their seeds and plays nothing.

suite.json, the leaderboard and its plots are written together, each under a temporary name renamed
into place once all are written (a full disk leaves the earlier files as they were; the one-line
error names the file). ``--out`` is locked while the command runs: a second run into it is refused
at once. The cache is shared safely: runs that share ``--cache`` merge their entries under a file
lock, and an entry that is torn or corrupt is computed again with a warning
(:mod:`training.suite.references`). Ctrl-C or SIGTERM stops every backend within seconds (exit 130;
a second signal stops at once): the tasks finished are written to ``--out`` and the message gives
the command that plays the rest (``--tasks REST --add-to OUT``); references computed are in the cache.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from training import checks
from training.cli.backend_options import add_backend_arguments, check_backend
from training.errors import CommandError, DataError, UsageError
from training.execution.backend import UnitsFailedError
from training.outputs import folder_lock

if TYPE_CHECKING:  # annotations only: the suite's modules load when the command runs
    from training.suite.definition import Suite, SuiteTask
    from training.suite.runner import SuiteRun, TaskRun

HELP = "run agents on the benchmark suite (normalised scores, IQM with intervals, leaderboard)"
DEFAULT_AGENTS = "random,first-fit,cheapest,best-fit,aco"
NO_AGENTS = "none"
"""``--agents none``: play nothing, only merge the ``--add-to`` runs."""
CACHE_ENV = "ACO_ENV_CACHE"
"""Environment variable naming the cache folder (default ``~/.cache/aco-env``)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options: agents, which tasks, outputs, the references' cache, the backend."""
    parser.add_argument(
        "--agents", default=DEFAULT_AGENTS, help="comma-separated registry names or sb3:PATH (default: %(default)s)"
    )
    parser.add_argument("--tasks", help="comma-separated task names (default: every task of --group, or all)")
    parser.add_argument("--group", choices=("train", "held-out"), help="play only this group's tasks")
    parser.add_argument("--suite", type=Path, help="another suite file (default: the repository's)")
    parser.add_argument("--out", type=Path, default=Path("results/suite"), help="output folder (default: %(default)s)")
    parser.add_argument("--leaderboard", type=Path, metavar="FILE", help="also write the leaderboard Markdown here")
    parser.add_argument(
        "--add-to",
        type=Path,
        nargs="+",
        metavar="DIR",
        help="keep the agents of each DIR/suite.json and add these (--agents none: only merge the runs)",
    )
    parser.add_argument(
        "--cache", type=Path, help=f"where computed references go (default: ${CACHE_ENV} or ~/.cache/aco-env)"
    )
    parser.add_argument("--list", action="store_true", help="print the suite's tasks and seeds, play nothing")
    add_backend_arguments(parser, "the episodes")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    """Check everything, play the suite, print the aggregates and write the files."""
    from training.suite.definition import SuiteError, load_suite

    try:
        suite = load_suite(args.suite)
        names = [name.strip() for name in args.tasks.split(",") if name.strip()] if args.tasks else []
        tasks = suite.select(names, args.group)
    except SuiteError as exc:
        raise DataError(str(exc)) from None
    if args.list:
        _print_tasks(suite.label, tasks)
        return 0
    check_backend(args.backend, args.address)
    merge_only = args.agents == NO_AGENTS
    if merge_only and not args.add_to:
        raise UsageError(f"--agents {NO_AGENTS} plays nothing: give the runs to merge with --add-to")
    agents = [] if merge_only else checks.agent_list(args.agents)
    for task in tasks:
        scenario = checks.scenario(task.scenario, f"task {task.name}:")
        checks.agents_fit_scenario(agents, scenario, "--agents")
    earlier = _earlier_run(args.add_to or [], suite, agents, tasks)
    checks.writable_dir(args.out, "--out")
    if args.leaderboard is not None:
        checks.writable_file(args.leaderboard, "--leaderboard")
    with folder_lock(args.out, "--out"):
        if merge_only:  # on the tasks asked for (all by default)
            assert earlier is not None
            chosen = {task.name for task in tasks}
            kept = tuple(run for run in earlier.tasks if run.task.name in chosen)
            _write(dataclasses.replace(earlier, tasks=kept), args)
            return 0
        played = _play(args, suite, agents, tasks)
        _write(earlier.merged(played) if earlier is not None else played, args)
    return 0


def _play(args: argparse.Namespace, suite: Suite, agents: list[str], tasks: Sequence[SuiteTask]) -> SuiteRun:
    """Every agent on every task on the backend; on an interrupt, the tasks finished are written first."""
    from training.execution.backend import BackendError
    from training.execution.registry import make_backend
    from training.suite.definition import SuiteError
    from training.suite.references import ReferenceStore
    from training.suite.runner import SuiteRun, run_suite

    store = ReferenceStore(suite, args.cache or Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "aco-env")))
    command = f"{datetime.date.today().isoformat()} {_command(args)}"
    finished: list[TaskRun] = []

    def done(task_run: TaskRun) -> None:
        finished.append(task_run)
        _report(task_run)

    try:
        with make_backend(args.backend, args.address) as backend:
            return run_suite(
                suite, agents, tasks, store, backend, progress=not args.no_progress, on_task=done, command=command
            )
    except BackendError as exc:
        raise CommandError(f"--backend {args.backend}: {exc}") from None
    except UnitsFailedError as exc:
        raise CommandError(exc.for_user()) from None
    except SuiteError as exc:
        raise DataError(str(exc)) from None
    except KeyboardInterrupt:
        partial = SuiteRun(suite, tuple(agents), tuple(finished), (command,)) if finished else None
        raise KeyboardInterrupt(_interrupted(args, partial, tasks)) from None


def _interrupted(args: argparse.Namespace, partial: SuiteRun | None, tasks: Sequence[SuiteTask]) -> str:
    """Write the tasks finished before an interrupt (with the ``--add-to`` runs); what was kept and how to go on."""
    if partial is None:
        return (
            f"no task was finished, nothing was written (the files in {args.out} are as they were); "
            "the references computed so far are cached"
        )
    earlier = _earlier_run(args.add_to or [], partial.suite, [], tasks)
    _write(earlier.merged(partial) if earlier is not None else partial, args)
    done = {run.task.name for run in partial.tasks}
    rest = ",".join(task.name for task in tasks if task.name not in done)
    out = shlex.quote(str(args.out))
    options = f"--agents {shlex.quote(args.agents)} --backend {args.backend}"
    if args.suite is not None:
        options += f" --suite {shlex.quote(str(args.suite))}"
    return (
        f"wrote the {len(done)} task(s) finished to {args.out / 'suite.json'}; play the rest with: "
        f"aco-env suite {options} --tasks {rest} --add-to {out} --out {out}"
    )


def _report(task_run: TaskRun) -> None:
    """One line as each task is done: its agents' mean scores and the time they took."""
    scores = ", ".join(f"{agent} {task_run.scores(agent).mean():.3f}" for agent in task_run.agents)
    seconds = sum(played.seconds for played in task_run.agents.values())
    print(f"{task_run.task.name}: {scores} ({seconds:.0f} s)", flush=True)


def _command(args: argparse.Namespace) -> str:
    """The command line that asks for this run (the options that change what is played or written)."""
    options = {
        "--suite": args.suite, "--agents": args.agents, "--tasks": args.tasks, "--group": args.group,
        "--backend": args.backend, "--out": args.out, "--leaderboard": args.leaderboard,
    }  # fmt: skip
    given = [f"{name} {shlex.quote(str(value))}" for name, value in options.items() if value is not None]
    added = [f"--add-to {' '.join(shlex.quote(str(folder)) for folder in args.add_to)}"] if args.add_to else []
    return " ".join(["aco-env suite", *given, *added])


def _earlier_run(
    add_to: Sequence[Path], suite: Suite, agents: Sequence[str], tasks: Sequence[SuiteTask]
) -> SuiteRun | None:
    """The runs in ``--add-to``, merged, or ``None``.

    Checked: the same suite, no agent on a task twice, none of ``agents`` already on one of ``tasks``.
    """
    if not add_to:
        return None
    from training.suite.definition import SuiteError
    from training.suite.results_file import SUITE_JSON, read_suite_run

    try:
        runs = [read_suite_run(folder / SUITE_JSON, suite) for folder in add_to]
        earlier = runs[0]
        for other in runs[1:]:
            earlier = earlier.merged(other)
    except SuiteError as exc:
        raise DataError(f"--add-to: {exc}") from None
    chosen = {task.name for task in tasks}
    again = sorted({agent for run in earlier.tasks if run.task.name in chosen for agent in run.agents} & set(agents))
    if again:
        raise UsageError(f"--add-to: the runs already have {', '.join(again)} on some of these tasks")
    return earlier


def _write(played: SuiteRun, args: argparse.Namespace) -> None:
    """suite.json, the plots and the leaderboard(s), all renamed into place together; then the aggregates."""
    from digital_twin.atomic_files import AtomicBatch
    from training.suite.leaderboard import leaderboard_markdown, print_suite_leaderboard
    from training.suite.plots import write_suite_plots
    from training.suite.results_file import write_suite_run

    markdown = leaderboard_markdown(played)
    targets = [args.out / "leaderboard.md", *([args.leaderboard] if args.leaderboard is not None else [])]
    with AtomicBatch() as batch:
        path = write_suite_run(played, args.out, batch)
        for target in targets:
            batch.write_text(target, markdown)
            write_suite_plots(played, target.parent / "leaderboard", batch)
    print_suite_leaderboard(played)
    print(f"wrote {path}, {', '.join(map(str, targets))} and plots")


def _print_tasks(label: str, tasks: Sequence[SuiteTask]) -> None:
    """One line per task: name, group, scenario, reference, test seeds."""
    from training.evaluation.tables import new_table, print_table

    table = new_table(["task", "group", "scenario", "1 =", "train", "validation", "test", "about"], 9)
    for task in tasks:
        seeds = [f"{r.start}..{r.stop - 1}" for r in task.seeds.ranges()]
        table.add_row(task.name, task.group, task.scenario, task.reference.describe(), *seeds, task.about)
    print(label)
    print_table(table)
