"""The main job (``make run``): train MaskablePPO on the default scenario and compare it.

It evaluates the trained agent beside first-fit, cheapest, ACO and the oracle on the same
seeds and prints the leaderboard.

The default budget (300,000 steps) trains in about four minutes on a 2-core machine; the run
directory holds the model, TensorBoard events and ``eval.json`` (see ``aco-env train --help``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import scenarios
from training.config import TrainConfig

HELP = "the main job: train MaskablePPO on the default scenario and compare it with the baselines"
RUN_TIMESTEPS = 300_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--scenario, --timesteps, --episodes, --seed, --logdir."""
    parser.add_argument("--scenario", default=scenarios.DEFAULT, help="bundled name or YAML path")
    parser.add_argument("--timesteps", type=int, default=RUN_TIMESTEPS, help="training steps (default: %(default)s)")
    parser.add_argument("--episodes", type=int, default=5, help="evaluation episodes per agent (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed (default: %(default)s)")
    parser.add_argument("--logdir", type=Path, default=Path("runs"), help="where runs go (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    """Train, evaluate, print the leaderboard, one objective breakdown and the TensorBoard command."""
    from training.leaderboard import format_leaderboard
    from training.train import train

    config = TrainConfig(
        scenario=args.scenario,
        timesteps=args.timesteps,
        seed=args.seed,
        logdir=args.logdir,
        eval_episodes=args.episodes,
    )
    print(f"training {config.algo} on {config.scenario} for {config.timesteps:,} steps (seed {config.seed})")
    run_dir = train(config)
    document = json.loads((run_dir / "eval.json").read_text())
    print()
    print(format_leaderboard(document))
    best = min(document["agents"], key=lambda name: document["agents"][name]["mean"]["objective_usd"])
    episode = document["agents"][best]["per_episode"][0]
    print(f"\nobjective breakdown of {best}, seed {episode['seed']:.0f}:")
    for term in ("cost_usd", "sla_usd", "qos_usd", "eviction_usd", "deadline_usd", "rejection_usd", "objective_usd"):
        print(f"  {term:<15} {episode[term]:>10.4f}")
    print(
        f"  jobs: {episode['completed_jobs']:.0f} completed, {episode['failed_jobs']:.0f} failed, "
        f"{episode['rejected_jobs']:.0f} rejected, {episode['running_jobs']:.0f} still running at the horizon"
    )
    print(f"\nrun directory: {run_dir}")
    print(f"look at it:    tensorboard --logdir {args.logdir}")
    return 0
