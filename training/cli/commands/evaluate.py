"""Evaluate agents on scenarios over paired seeds: leaderboard, results.json, plots, TensorBoard.

``DIR/results.json`` (one scenario) or ``DIR/<scenario>/results.json`` (several), beside
``provenance.json`` (the command, the commit, the date: what a results page names), holds
``{"scenario", "episodes", "seed", "seeds", "agents": {NAME: {"mean": {METRIC: v},
"ci95": {METRIC: half-width}, "per_episode": [{METRIC: v}, ...]}}}``; metrics include
``objective_usd``, ``cost_usd``, ``sla_violations``, ``qos_compliance``, ``failed_jobs``,
``rejected_jobs``, ``completed_jobs``, ``decision_latency_ms_p50/p99`` and, when ``oracle`` is
evaluated, ``optimality_gap`` (against the oracle's lower bound) and, for the oracle,
``objective_lower_bound_usd`` (:mod:`training.evaluation.results` has the whole format). On a
planted scenario (``planted5``, ``planted50``, ``planted500``) every agent's rows also hold the
episode's proven optimum ``planted_optimum_usd``, the exact gap ``planted_gap`` (objective /
optimum - 1), ``planted_agreement`` (share of decisions whose action is the planted schedule's)
and ``planted_on_trajectory`` (share taken while every earlier decision agreed); the leaderboard
shows them as ``gap/opt``, ``agree`` and ``on-path``. Agreement is a diagnostic, not optimality:
several schedules can be optimal. An oracle too large for its memory budget is left out with a
note (``"skipped"``); raise the budget with ``ACO_ENV_ORACLE_MEMORY_GB``.

Seeds come from the evaluation protocol (:mod:`training.evaluation.protocol`): ``--split test``
plays the test seeds (100000, 100001, ...), the only ones published tables use (with >= 100
episodes); ``--split validation`` plays validation seeds (5000, ...), for anything that chooses
(a recipe, a checkpoint, a "what was tried" row). ``--seed`` sets the first seed by hand instead
(then the split is whatever range the seeds fall in, or none). The split is recorded in
results.json (``"split"``). Every agent is compared with the first one listed (or ``--baseline``)
seed by seed: the mean paired difference of the objective with its 95 % interval and the seeds
won, on the leaderboard, in ``leaderboard.md`` and in results.json (``"paired"``).

Each (agent, seed) episode is a unit of work that ``--backend`` runs: ``serial`` (in this
process), ``processes`` (a pool with one process per core; the default) or ``ray`` (Ray tasks
on a local Ray, or on the cluster at ``--address HOST:PORT``; ``pip install 'aco-env[ray]'``).
Every backend gives the same numbers (only timings differ). An episode that fails is retried
twice; if it still fails, the command names it, writes nothing and exits 1. The files are
written once every scenario is evaluated.

Without ``--out`` the files go to a new folder, ``results/evaluate/<scenario>__<YYYYmmdd-HHMMSS>``
(``-2``, ``-3``, ... when that name is taken): an evaluation never overwrites an earlier one's
files unless ``--out`` names that folder.

Every argument, scenario, agent and output folder is checked before the first episode. The files
of a scenario are written together, each under a temporary name renamed into place once all are
written: a full disk or a missing permission leaves the folder's earlier results as they were,
and the one-line error names the file (exit 1). ``--out`` is locked while the command runs: a
second evaluation into the same folder is refused at once. Ctrl-C or SIGTERM stops every backend
within seconds (exit 130; a second signal stops at once): the scenarios already evaluated are
written, the one in progress is dropped, and the message says how to evaluate the rest.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from training import checks
from training.cli.backend_options import add_backend_arguments, check_backend
from training.errors import CommandError, UsageError
from training.evaluation.protocol import EVALUATION_SPLITS, SeedRangeError, first_seed
from training.execution.backend import Backend, UnitsFailedError
from training.outputs import folder_lock, new_folder, timestamped

if TYPE_CHECKING:  # annotations only: the evaluator's imports wait until a command runs
    from digital_twin.scenario import Scenario
    from training.evaluation.results import Evaluation

HELP = "evaluate agents on scenarios (leaderboard, results.json, plots)"
DEFAULT_OUT_PARENT = Path("results/evaluate")
"""Where a run without ``--out`` makes its own new folder."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options: scenarios, agents, episodes and seeds, outputs, env kind, background override."""
    parser.add_argument("--scenario", action="append", help="bundled name or YAML path (repeatable)")
    parser.add_argument(
        "--agents",
        default="random,first-fit,cheapest,aco,oracle",
        help="comma-separated registry names or sb3:PATH (default: %(default)s)",
    )
    parser.add_argument("--episodes", type=checks.count(1), default=5, help="episodes per agent (default: %(default)s)")
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument(
        "--split",
        choices=EVALUATION_SPLITS,
        help="play the protocol's seeds of this split from its start: validation (5000...) for curves, "
        "selection and what-was-tried rows; test (100000...) for published tables, which use --split test "
        "with --episodes >= 100",
    )
    seeds.add_argument("--seed", type=int, help="first episode seed, set by hand (default: 0)")
    parser.add_argument(
        "--baseline",
        metavar="NAME",
        help="the agent every other is compared with seed by seed (default: the first of --agents)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help=f"output folder (default: a new folder {DEFAULT_OUT_PARENT}/<scenario>__<date-time>, never an old one)",
    )
    parser.add_argument("--tensorboard", type=Path, help="also write eval/<agent>/<metric> scalars here")
    parser.add_argument(
        "--placement",
        action="store_true",
        help="use the one-step placement env: optimality rate and regret (the action's "
        "objective given a cheapest-fit continuation with the true future)",
    )
    parser.add_argument(
        "--stochastic",
        action="store_true",
        help="learned agents sample their actions (seeded per episode) instead of the argmax",
    )
    parser.add_argument(
        "--background-cpu-pct",
        type=checks.percent,
        metavar="PCT",
        help="replace each scenario's background cpu by this constant percent on every node "
        "(the trace's memory and tick are kept): does the replayed load matter?",
    )
    add_backend_arguments(parser, "the episodes")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar or summary line")


def run(args: argparse.Namespace) -> int:
    """Check everything, evaluate every scenario, then print the leaderboard(s) and write the files."""
    # scipy.stats, matplotlib: loaded when needed, not at every aco-env start
    from training.evaluation.leaderboard import print_leaderboard
    from training.evaluation.results_writer import RESULTS_JSON, write_results
    from training.execution.backend import BackendError
    from training.execution.registry import make_backend
    from training.learning.provenance import command_line, provenance

    agents, loaded = _checked(args)
    record = provenance(command_line(args._argv))  # the commit the evaluation runs, read before any work
    if args.out is None:
        stem = loaded[0].name if len(loaded) == 1 else f"{len(loaded)}-scenarios"
        args.out = new_folder(DEFAULT_OUT_PARENT, timestamped(stem))
    with folder_lock(args.out, "--out"):
        evaluations: list[Evaluation] = []
        try:
            with make_backend(args.backend, args.address) as backend:
                for scenario in loaded:
                    evaluations.append(_evaluate(args, scenario, agents, backend))
        except BackendError as exc:
            raise CommandError(f"--backend {args.backend}: {exc}") from None
        except KeyboardInterrupt:
            raise KeyboardInterrupt(_interrupted(args, loaded, evaluations)) from None
        for evaluation in evaluations:
            out_dir = _out_dir(args, loaded, evaluation.scenario)
            write_results(evaluation, out_dir, args.tensorboard, provenance=record)
            print_leaderboard(evaluation)
            for agent, why in evaluation.skipped.items():
                print(f"note: {agent} was left out: {why}")
            print(f"wrote {out_dir / RESULTS_JSON} and plots")
    return 0


def _checked(args: argparse.Namespace) -> tuple[list[str], list[Scenario]]:
    """Every argument, agent, scenario and output folder checked: the agents and the loaded scenarios."""
    from agents.spec import agent_base_name

    check_backend(args.backend, args.address)
    agents = checks.agent_list(args.agents)
    if "oracle" in map(agent_base_name, agents):
        checks.oracle_budget()
    loaded = [checks.scenario(name) for name in (args.scenario or ["fleet5-synthetic"])]
    if args.background_cpu_pct is not None:
        loaded = [scenario.with_background_cpu(args.background_cpu_pct) for scenario in loaded]
    for scenario in loaded:
        checks.agents_fit_scenario(agents, scenario, "--agents")
    checks.agent_options(agents, loaded[0])
    if args.baseline is not None and args.baseline not in agents:
        raise UsageError(f"--baseline: {args.baseline!r} is not one of --agents ({', '.join(agents)})")
    if args.split is not None:
        try:
            first_seed(args.split, args.episodes)
        except SeedRangeError as exc:
            raise UsageError(f"--split {args.split}: {exc}") from None
    names = [scenario.name for scenario in loaded]
    if len(set(names)) < len(names):
        raise UsageError(f"--scenario: the scenarios are named {', '.join(names)}; each name once")
    if args.out is not None:
        checks.writable_dir(args.out, "--out")
    if args.tensorboard is not None:
        checks.writable_dir(args.tensorboard, "--tensorboard")
    return agents, loaded


def _out_dir(args: argparse.Namespace, loaded: list[Scenario], scenario: str) -> Path:
    """Where a scenario's files go: ``--out`` itself for one scenario, ``--out/<scenario>`` for several."""
    return args.out if len(loaded) == 1 else args.out / scenario


def _interrupted(args: argparse.Namespace, loaded: list[Scenario], finished: list[Evaluation]) -> str:
    """Write the scenarios evaluated before an interrupt; the message: what was kept and how to go on."""
    from training.evaluation.results_writer import write_results

    rest = [scenario.name for scenario in loaded[len(finished) :]]
    if not finished:
        return f"nothing was written (the files in {args.out} are as they were); run the command again to evaluate"
    for evaluation in finished:
        write_results(evaluation, _out_dir(args, loaded, evaluation.scenario), args.tensorboard)
    again = " ".join(f"--scenario {name}" for name in rest)
    folder = args.out / rest[0] if len(rest) == 1 else args.out
    return (
        f"wrote the {len(finished)} scenario(s) evaluated in {args.out} ({', '.join(e.scenario for e in finished)}); "
        f"evaluate the rest with the same options and {again} --out {folder}"
    )


def _evaluate(args: argparse.Namespace, scenario: Scenario, agents: list[str], backend: Backend) -> Evaluation:
    """One scenario's evaluation on the started ``backend``; failed episodes end the command (one line)."""
    import dataclasses

    from training.evaluation.evaluator import EPISODE_ENV, PLACEMENT_ENV, evaluate

    seed = first_seed(args.split, args.episodes) if args.split is not None else (args.seed or 0)
    try:
        evaluation = evaluate(
            scenario,
            agents,
            args.episodes,
            seed,
            progress=not args.no_progress,
            env=PLACEMENT_ENV if args.placement else EPISODE_ENV,
            deterministic=not args.stochastic,
            backend=backend,
        )
    except UnitsFailedError as exc:
        raise CommandError(f"{scenario.name}: {exc.for_user()}") from None
    reference = args.baseline if args.baseline in evaluation.agents else None  # a skipped baseline: the first
    return dataclasses.replace(evaluation, reference=reference)  # evaluate() records the split of the seeds
