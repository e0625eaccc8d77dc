"""The main job (``make run``): train MaskablePPO on the default scenario and compare it.

The recipe: the permutation-equivariant policy (:mod:`agents.set_policy`), warm-started by DAgger
imitation of the online ``lookahead`` agent (:mod:`training.learning.imitation`, 6 iterations of 16
episodes), then MaskablePPO, collecting from 16 envs in this process (their actions chosen in one
batch; :data:`RUN_ROLLOUT`). On the default scenario it trains on a task distribution: the default
scenario and :data:`RUN_TRAIN_SCENARIOS`, every other env and DAgger episode (why: the constant's
docstring), every episode at a random hour of day (:data:`RUN_RANDOM_START_HOUR`). It evaluates the
trained agent (argmax and sampled) beside first-fit, cheapest, ACO and random on 100 test seeds of
the evaluation protocol (100000 + seed, ...: :mod:`training.evaluation.protocol`;
:data:`RUN_EVAL_EPISODES`, :data:`RUN_EVAL_AGENTS`) and prints the leaderboard, each agent compared
with the trained one seed by seed (mean paired difference with its 95 % interval, seeds won). The
oracle is not among them: at ~26 s a solve, its 100 test episodes would not fit the ten minutes; its
numbers, and the lookahead agents', are in docs/results.md (``aco-env evaluate --split test --agents
oracle,...`` measures them). On a planted scenario (``--scenario planted5``) the leaderboard also
shows the proven optimum, each agent's exact gap to it and its agreement with the planted schedule.

The default budget (DAgger, then RUN_TIMESTEPS steps of RL, then the evaluation) fits in ten minutes on a
2-core machine; the run
directory holds the model, TensorBoard events and ``eval.json`` (see ``aco-env train --help``).
``--episodes 0`` trains only (no evaluation, no leaderboard). Ctrl-C or SIGTERM saves the model
and a checkpoint, says where, and exits 130; ``aco-env train --resume RUN_DIR`` continues it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import scenarios
from digital_twin.objective import OBJECTIVE_KEY, USD_KEYS
from training import checks
from training.execution.interrupts import SAVE_FIRST
from training.learning.config import TrainConfig
from training.learning.main_job import (
    RUN_DAGGER_ITERATIONS,
    RUN_EVAL_AGENTS,
    RUN_EVAL_EPISODES,
    RUN_RANDOM_START_HOUR,
    RUN_ROLLOUT,
    RUN_TIMESTEPS,
    RUN_TRAIN_SCENARIOS,
)

if TYPE_CHECKING:
    from training.evaluation.results import Evaluation

HELP = "the main job: train MaskablePPO on the default scenario and compare it with the baselines"
STOP_POLICY = SAVE_FIRST
"""Interrupts (the first Ctrl-C or SIGTERM stops training at the next step and saves; a third stops at once)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--scenario, --timesteps, --episodes, --seed, --logdir."""
    parser.add_argument("--scenario", default=scenarios.DEFAULT, help="bundled name or YAML path")
    parser.add_argument(
        "--timesteps", type=checks.count(0), default=RUN_TIMESTEPS, help="training steps (default: %(default)s)"
    )
    parser.add_argument(
        "--episodes",
        type=checks.count(0),
        default=RUN_EVAL_EPISODES,
        help="evaluation episodes per agent, on the protocol's test seeds 100000 + seed ..., 0 = train only "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--dagger-iterations",
        type=checks.count(0),
        default=RUN_DAGGER_ITERATIONS,
        help="DAgger iterations imitating the lookahead agent before RL, 0 = none (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed (default: %(default)s)")
    parser.add_argument("--logdir", type=Path, default=Path("runs"), help="where runs go (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    """Check, train, evaluate, print the leaderboard, one objective breakdown and the TensorBoard command."""
    from training.learning.train_checks import check_train_config

    checked = check_train_config(
        TrainConfig(
            scenario=args.scenario,
            timesteps=args.timesteps,
            seed=args.seed,
            logdir=args.logdir,
            eval_episodes=args.episodes,
            eval_agents=RUN_EVAL_AGENTS,
            train_scenarios=RUN_TRAIN_SCENARIOS if args.scenario == scenarios.DEFAULT else (),
            dagger_iterations=args.dagger_iterations,
            random_start_hour=RUN_RANDOM_START_HOUR,
            **RUN_ROLLOUT,
        )
    )
    from training.evaluation.results import read_evaluation
    from training.learning.provenance import command_line
    from training.learning.run_dir import EVAL_JSON
    from training.learning.train import train  # torch and SB3: after the checks, so a mistake is reported at once

    config = checked.config
    print(f"training {config.algo} on {config.scenario} for {config.timesteps:,} steps (seed {config.seed})")
    # Ctrl-C: saves, then raises TrainingInterrupted (exit 130 in training.cli.main)
    run_dir = train(
        config,
        scenario=checked.scenario,
        train_scenarios=checked.train_scenarios,
        command=command_line(),
    )
    if config.eval_episodes == 0:
        print("\nno evaluation (--episodes 0)")
    else:
        print_results(read_evaluation(run_dir / EVAL_JSON))
    print(f"\nrun directory: {run_dir}")
    print(f"look at it:    tensorboard --logdir {args.logdir}")
    return 0


def print_results(evaluation: Evaluation) -> None:
    """The leaderboard of the run's evaluation and the objective breakdown of the best agent's first episode."""
    from training.evaluation.leaderboard import print_leaderboard

    print()
    print_leaderboard(evaluation)
    best = min(evaluation.agents, key=lambda name: evaluation.summary(name).mean["objective_usd"] or 0.0)
    episode = evaluation.rows(best)[0]
    print(f"\nobjective breakdown of {best}, seed {episode['seed']:.0f}:")
    for term in (*USD_KEYS, OBJECTIVE_KEY):
        print(f"  {term:<15} {episode[term]:>10.4f}")
    print(
        f"  jobs: {episode['completed_jobs']:.0f} completed, {episode['failed_jobs']:.0f} failed, "
        f"{episode['rejected_jobs']:.0f} rejected, {episode['running_jobs']:.0f} still running at the horizon"
    )
